//! SAM and plain CloudFormation: the table, the function, its role, the
//! Scheduler schedules (one per dedicated job, one tick), a dead-letter
//! queue and the staleness alarms.

use std::collections::BTreeMap;
use std::time::Duration;

use cronslot_aws::lambda::TABLE_ENV;
use cronslot_aws::lambda::metrics::{DIMENSION, NAMESPACE, RUN_SUCCEEDED};
use cronslot_core::manifest::{JobSpec, format_duration};
use cronslot_core::translate::Platform;
use cronslot_dynamodb::{MARK, NAME_SPACE, NAMES_INDEX, WAKE, WAKE_INDEX, WAKE_SHARD};

use super::plan::{self, AlarmPlan, EVENTBRIDGE_TICK, Plan};
use super::yaml::{Map, Node, get_att, r#ref, sub, write_document};
use super::{Rendered, Source, comment_lines};

/// The partition key and TTL attribute of the adapter's table
/// (`cronslot_dynamodb`).
const PARTITION_KEY: &str = "pk";

pub struct Options {
    /// SAM (the serverless transform) or plain CloudFormation.
    pub sam: bool,
    /// SAM: the function's CodeUri.
    pub code_uri: String,
    /// The binary cargo-lambda builds, if known.
    pub binary: Option<String>,
}

/// The Scheduler target input the adapter decodes for a job's slot
/// (`cronslot_aws::lambda::event`).
pub fn job_input(job: &str) -> String {
    let name = serde_json::to_string(job).unwrap_or_else(|_| format!("\"{job}\""));
    format!(
        "{{\"cronslot\":{{\"job\":{name},\"scheduled_time\":\"<aws.scheduler.scheduled-time>\",\"execution_id\":\"<aws.scheduler.execution-id>\",\"attempt\":\"<aws.scheduler.attempt-number>\"}}}}"
    )
}

/// The tick's input: every tick-mode job is planned.
pub fn tick_input() -> String {
    "{\"cronslot\":{\"tick\":true,\"scheduled_time\":\"<aws.scheduler.scheduled-time>\",\"execution_id\":\"<aws.scheduler.execution-id>\",\"attempt\":\"<aws.scheduler.attempt-number>\"}}".to_string()
}

/// CloudFormation logical ids, one per job: the name in CamelCase
/// (`nightly-report` → `NightlyReport`), with a hash suffix where two
/// names would give the same id.
pub fn logical_ids(jobs: &[JobSpec]) -> BTreeMap<String, String> {
    let camel = |name: &str| -> String {
        name.split(['-', '_'])
            .map(|part| {
                let mut chars = part.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            })
            .collect()
    };
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for job in jobs {
        *count.entry(camel(job.name.as_str())).or_default() += 1;
    }
    jobs.iter()
        .map(|job| {
            let name = job.name.as_str();
            let base = camel(name);
            let id = if count.get(&base).copied().unwrap_or(0) > 1 {
                format!("{base}{}", &plan::manifest_hash(name)[..8])
            } else {
                base
            };
            (name.to_string(), id)
        })
        .collect()
}

/// An attribute of the table's `AttributeDefinitions`.
fn attribute(name: &str, kind: &str) -> Node {
    Map::new()
        .put("AttributeName", name)
        .put("AttributeType", kind)
        .into()
}

/// An element of a `KeySchema`.
fn key(name: &str, kind: &str) -> Node {
    Map::new()
        .put("AttributeName", name)
        .put("KeyType", kind)
        .into()
}

fn statement(actions: &[&str], resource: Node) -> Node {
    Map::new()
        .put("Effect", "Allow")
        .put(
            "Action",
            actions.iter().map(|a| Node::from(*a)).collect::<Vec<_>>(),
        )
        .put("Resource", resource)
        .into()
}

fn policy(name: &str, statements: Vec<Node>) -> Node {
    Map::new()
        .put("PolicyName", name)
        .put(
            "PolicyDocument",
            Map::new()
                .put("Version", "2012-10-17")
                .put("Statement", statements),
        )
        .into()
}

fn assume_role(service: &str, source_account: bool) -> Node {
    let mut statement = Map::new()
        .put("Effect", "Allow")
        .put("Principal", Map::new().put("Service", service))
        .put("Action", "sts:AssumeRole");
    if source_account {
        statement.push(
            "Condition",
            Map::new().put(
                "StringEquals",
                Map::new().put("aws:SourceAccount", r#ref("AWS::AccountId")),
            ),
        );
    }
    Map::new()
        .put("Version", "2012-10-17")
        .put("Statement", vec![Node::from(statement)])
        .into()
}

fn resource(kind: &str, properties: Map) -> Map {
    Map::new().put("Type", kind).put("Properties", properties)
}

pub fn render(source: &Source<'_>, options: &Options) -> Rendered {
    let manifest = source.manifest;
    let ids = logical_ids(&manifest.jobs);
    let mut notes = Vec::new();
    let plans: Vec<(&JobSpec, Plan)> = manifest
        .jobs
        .iter()
        .map(|j| (j, plan::plan(j, Platform::EventBridge)))
        .collect();
    for (_, p) in &plans {
        if let Plan::Tick { note: Some(note) } = p {
            notes.push(note.clone());
        }
    }
    let tick_jobs: Vec<&str> = plans
        .iter()
        .filter(|(_, p)| !p.is_dedicated())
        .map(|(j, _)| j.name.as_str())
        .collect();
    // Dynamic jobs' schedules run from the tick alone (the wake index
    // names the due ones): no schedule of their own.
    let dynamic: Vec<&str> = manifest.templates.iter().map(|t| t.name.as_str()).collect();
    let timeout = plan::function_timeout(manifest);

    let mut resources = Map::new();

    // The table: the adapter's layout (string partition key `pk`, TTL on
    // the effect ledger's `ttl`, the wake index over `wk` and `wake`).
    resources.push_commented(
        vec![
            "Job state and the effect ledger: one item per job (`job#<name>`), one per".into(),
            "effect (`effect#<key>`, expired through TTL). Kept when the stack is deleted.".into(),
            "The wake index holds the jobs the store must wake (a retry, an expiring".into(),
            "lease) and the tick mark, so that a tick reads what is due in one query.".into(),
            "The names index holds each dynamic job's schedules and keyed runs in name".into(),
            "order, so that a listing's page is one query.".into(),
        ],
        "JobsTable",
        Map::new()
            .put("Type", "AWS::DynamoDB::Table")
            .put("DeletionPolicy", "Retain")
            .put("UpdateReplacePolicy", "Retain")
            .put(
                "Properties",
                Map::new()
                    .put("BillingMode", "PAY_PER_REQUEST")
                    .put(
                        "AttributeDefinitions",
                        vec![
                            attribute(PARTITION_KEY, "S"),
                            attribute(WAKE_SHARD, "S"),
                            attribute(WAKE, "N"),
                            attribute(NAME_SPACE, "S"),
                        ],
                    )
                    .put("KeySchema", vec![key(PARTITION_KEY, "HASH")])
                    .put(
                        "GlobalSecondaryIndexes",
                        vec![
                            Node::from(
                                Map::new()
                                    .put("IndexName", WAKE_INDEX)
                                    .put(
                                        "KeySchema",
                                        vec![key(WAKE_SHARD, "HASH"), key(WAKE, "RANGE")],
                                    )
                                    .put(
                                        "Projection",
                                        Map::new()
                                            .put("ProjectionType", "INCLUDE")
                                            .put("NonKeyAttributes", vec![Node::from(MARK)]),
                                    ),
                            ),
                            Node::from(
                                Map::new()
                                    .put("IndexName", NAMES_INDEX)
                                    .put(
                                        "KeySchema",
                                        vec![key(NAME_SPACE, "HASH"), key(PARTITION_KEY, "RANGE")],
                                    )
                                    .put(
                                        "Projection",
                                        Map::new().put("ProjectionType", "KEYS_ONLY"),
                                    ),
                            ),
                        ],
                    )
                    .put(
                        "TimeToLiveSpecification",
                        Map::new()
                            .put("AttributeName", cronslot_dynamodb::TTL_ATTRIBUTE)
                            .put("Enabled", true),
                    )
                    .put(
                        "PointInTimeRecoverySpecification",
                        Map::new().put("PointInTimeRecoveryEnabled", true),
                    )
                    .put("SSESpecification", Map::new().put("SSEEnabled", true)),
            ),
    );

    resources.push_commented(
        vec![
            "Events that could not be delivered: Scheduler's after its retries, the".into(),
            "function's asynchronous invocations after Lambda's two retries.".into(),
        ],
        "DeadLetterQueue",
        resource(
            "AWS::SQS::Queue",
            Map::new()
                .put("MessageRetentionPeriod", 1_209_600u64)
                .put("SqsManagedSseEnabled", true),
        ),
    );

    resources.push(
        "FunctionLogGroup",
        resource(
            "AWS::Logs::LogGroup",
            Map::new().put("RetentionInDays", 30u32),
        ),
    );

    resources.push_commented(
        vec![
            "Only what the adapter calls: GetItem, PutItem and DeleteItem (conditional) on".into(),
            "this table, Query on its wake index (the tick), its own log group, and the".into(),
            "dead-letter queue.".into(),
        ],
        "FunctionRole",
        resource(
            "AWS::IAM::Role",
            Map::new()
                .put(
                    "AssumeRolePolicyDocument",
                    assume_role("lambda.amazonaws.com", false),
                )
                .put(
                    "Policies",
                    vec![
                        policy(
                            "cronslot-table",
                            vec![
                                statement(
                                    &[
                                        "dynamodb:GetItem",
                                        "dynamodb:PutItem",
                                        "dynamodb:DeleteItem",
                                    ],
                                    get_att("JobsTable", "Arn"),
                                ),
                                statement(
                                    &["dynamodb:Query"],
                                    sub(&format!("${{JobsTable.Arn}}/index/{WAKE_INDEX}")),
                                ),
                            ],
                        ),
                        policy(
                            "cronslot-logs",
                            vec![statement(
                                &["logs:CreateLogStream", "logs:PutLogEvents"],
                                get_att("FunctionLogGroup", "Arn"),
                            )],
                        ),
                        policy(
                            "cronslot-dead-letters",
                            vec![statement(
                                &["sqs:SendMessage"],
                                get_att("DeadLetterQueue", "Arn"),
                            )],
                        ),
                    ],
                ),
        ),
    );

    resources.push_commented(
        function_comment(manifest, timeout),
        "Function",
        function(source, options, timeout),
    );

    resources.push_commented(
        vec![
            "EventBridge Scheduler's role: invoke the function, dead-letter undeliverable events."
                .into(),
        ],
        "SchedulerRole",
        resource(
            "AWS::IAM::Role",
            Map::new()
                .put(
                    "AssumeRolePolicyDocument",
                    assume_role("scheduler.amazonaws.com", true),
                )
                .put(
                    "Policies",
                    vec![policy(
                        "cronslot-scheduler",
                        vec![
                            statement(&["lambda:InvokeFunction"], get_att("Function", "Arn")),
                            statement(&["sqs:SendMessage"], get_att("DeadLetterQueue", "Arn")),
                        ],
                    )],
                ),
        ),
    );

    for (spec, p) in &plans {
        if let Plan::Dedicated {
            expression,
            timezone,
        } = p
        {
            let retry = plan::scheduler_retry(spec);
            let id = &ids[spec.name.as_str()];
            let mut comment = vec![format!(
                "Job {}: {:?} in {}.",
                spec.name.as_str(),
                spec.schedule_text,
                spec.timezone
            )];
            comment.extend(comment_lines(
                &format!(
                    "Deliveries are retried for at most {} s: {}.",
                    retry.max_event_age, retry.reason
                ),
                "",
                0,
            ));
            resources.push_commented(
                comment,
                &format!("Schedule{id}"),
                schedule(
                    &format!("cronslot job {}", spec.name.as_str()),
                    expression,
                    Some(timezone),
                    &job_input(spec.name.as_str()),
                    retry.max_event_age,
                    retry.max_attempts,
                ),
            );
        }
    }
    if !tick_jobs.is_empty() || !dynamic.is_empty() {
        let mut serves = Vec::new();
        if !tick_jobs.is_empty() {
            serves.push(format!(
                "plans the tick-mode jobs ({})",
                tick_jobs.join(", ")
            ));
        }
        if !dynamic.is_empty() {
            serves.push(format!(
                "serves the due schedules of the dynamic jobs ({})",
                dynamic.join(", ")
            ));
        }
        let mut comment = comment_lines(
            &format!(
                "The tick: every minute, the function {}.",
                serves.join(" and ")
            ),
            "",
            0,
        );
        comment.push("A late tick delivery is useless once the next tick has come: 60 s.".into());
        resources.push_commented(
            comment,
            "TickSchedule",
            schedule(
                "cronslot tick",
                EVENTBRIDGE_TICK,
                None,
                &tick_input(),
                plan::MIN_EVENT_AGE,
                plan::MAX_RETRY_ATTEMPTS,
            ),
        );
    }

    for spec in &manifest.jobs {
        let id = &ids[spec.name.as_str()];
        match plan::alarm_plan(spec) {
            AlarmPlan::Alarm { period } => {
                if spec.paused {
                    notes.push(format!(
                        "job {:?} is paused in the manifest: its staleness alarm is rendered with actions disabled",
                        spec.name.as_str()
                    ));
                }
                resources.push(&format!("StaleAlarm{id}"), alarm(spec, period));
            }
            AlarmPlan::None { reason } => notes.push(reason),
        }
    }

    resources.push_commented(
        vec!["Anything in the dead-letter queue needs a look.".into()],
        "DeadLetterQueueAlarm",
        resource(
            "AWS::CloudWatch::Alarm",
            Map::new()
                .put(
                    "AlarmDescription",
                    "cronslot: events in the dead-letter queue (undeliverable schedules or failed invocations)",
                )
                .put("Namespace", "AWS/SQS")
                .put("MetricName", "ApproximateNumberOfMessagesVisible")
                .put(
                    "Dimensions",
                    vec![Node::from(
                        Map::new()
                            .put("Name", "QueueName")
                            .put("Value", get_att("DeadLetterQueue", "QueueName")),
                    )],
                )
                .put("Statistic", "Maximum")
                .put("Period", 300u32)
                .put("EvaluationPeriods", 1u32)
                .put("Threshold", 0u32)
                .put("ComparisonOperator", "GreaterThanThreshold")
                .put("TreatMissingData", "notBreaching")
                .put("AlarmActions", vec![r#ref("AlarmTopicArn")]),
        ),
    );

    let mut parameters = Map::new().put(
        "AlarmTopicArn",
        Map::new()
            .put("Type", "String")
            .put(
                "Description",
                "The SNS topic the staleness and dead-letter alarms notify",
            )
            .put(
                "AllowedPattern",
                "^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$",
            ),
    );
    if !options.sam {
        parameters.push(
            "CodeS3Bucket",
            Map::new()
                .put("Type", "String")
                .put("Description", "The S3 bucket holding the function's zip"),
        );
        parameters.push(
            "CodeS3Key",
            Map::new().put("Type", "String").put(
                "Description",
                "The key of the zip (cargo lambda build --release --arm64 --output-format zip)",
            ),
        );
    }

    let mut root = Map::new().put("AWSTemplateFormatVersion", "2010-09-09");
    if options.sam {
        root.push("Transform", "AWS::Serverless-2016-10-31");
    }
    root.push(
        "Description",
        format!("cronslot jobs of {}", source.path.display()),
    );
    root.push(
        "Metadata",
        Map::new().put(
            "cronslot",
            Map::new()
                .put("manifest", source.path.display().to_string())
                .put("manifest_fnv1a64", source.hash.clone()),
        ),
    );
    root.push("Parameters", parameters);
    root.push("Resources", resources);
    root.push(
        "Outputs",
        Map::new()
            .put(
                "TableName",
                Map::new()
                    .put(
                        "Description",
                        "The jobs' state (cronslot status --store dynamodb://TABLE)",
                    )
                    .put("Value", r#ref("JobsTable")),
            )
            .put("FunctionName", Map::new().put("Value", r#ref("Function")))
            .put(
                "DeadLetterQueueUrl",
                Map::new().put("Value", r#ref("DeadLetterQueue")),
            ),
    );

    let mut text = String::new();
    for line in header(source, options, &plans, &notes) {
        if line.is_empty() {
            text.push_str("#\n");
        } else {
            text.push_str("# ");
            text.push_str(&line);
            text.push('\n');
        }
    }
    write_document(&mut text, &root.into());
    Rendered { text, notes }
}

fn function_comment(manifest: &cronslot_core::manifest::Manifest, timeout: u64) -> Vec<String> {
    let tightest = manifest
        .jobs
        .iter()
        .min_by_key(|j| j.lease.saturating_sub(j.skew_margin))
        .map(|j| {
            format!(
                " (job {}: lease {} minus skew margin {})",
                j.name.as_str(),
                format_duration(j.lease),
                format_duration(j.skew_margin)
            )
        })
        .unwrap_or_default();
    comment_lines(
        &format!(
            "The Lambda: every job's lease must cover an invocation, so the timeout is {timeout} s{tightest}."
        ),
        "",
        0,
    )
}

fn function(source: &Source<'_>, options: &Options, timeout: u64) -> Map {
    let mut metadata = Map::new().put("BuildMethod", "rust-cargolambda");
    if let Some(binary) = &options.binary {
        metadata.push("BuildProperties", Map::new().put("Binary", binary.as_str()));
    }
    let description = format!("cronslot jobs of {}", source.path.display());
    let environment = Map::new().put("Variables", Map::new().put(TABLE_ENV, r#ref("JobsTable")));
    let logging = Map::new()
        .put("LogGroup", r#ref("FunctionLogGroup"))
        .put("LogFormat", "Text");
    let mut properties = Map::new().put("Description", description);
    if options.sam {
        properties.push("CodeUri", options.code_uri.as_str());
    } else {
        properties.push(
            "Code",
            Map::new()
                .put("S3Bucket", r#ref("CodeS3Bucket"))
                .put("S3Key", r#ref("CodeS3Key")),
        );
    }
    properties.push("Handler", "bootstrap");
    properties.push("Runtime", "provided.al2023");
    properties.push("Architectures", vec![Node::from("arm64")]);
    properties.push("MemorySize", 128u32);
    properties.push("Timeout", timeout);
    properties.push("Role", get_att("FunctionRole", "Arn"));
    properties.push("Environment", environment);
    properties.push("LoggingConfig", logging);
    if options.sam {
        properties.push(
            "DeadLetterQueue",
            Map::new()
                .put("Type", "SQS")
                .put("TargetArn", get_att("DeadLetterQueue", "Arn")),
        );
    } else {
        properties.push(
            "DeadLetterConfig",
            Map::new().put("TargetArn", get_att("DeadLetterQueue", "Arn")),
        );
    }
    let kind = if options.sam {
        "AWS::Serverless::Function"
    } else {
        "AWS::Lambda::Function"
    };
    Map::new()
        .put("Type", kind)
        .put("Metadata", metadata)
        .put("Properties", properties)
}

fn schedule(
    description: &str,
    expression: &str,
    timezone: Option<&str>,
    input: &str,
    max_event_age: u64,
    max_attempts: u32,
) -> Map {
    let properties = Map::new()
        .put("Description", description)
        .put("ScheduleExpression", expression)
        .put_opt("ScheduleExpressionTimezone", timezone)
        .put("FlexibleTimeWindow", Map::new().put("Mode", "OFF"))
        .put("State", "ENABLED")
        .put(
            "Target",
            Map::new()
                .put("Arn", get_att("Function", "Arn"))
                .put("RoleArn", get_att("SchedulerRole", "Arn"))
                .put("Input", input)
                .put(
                    "RetryPolicy",
                    Map::new()
                        .put("MaximumEventAgeInSeconds", max_event_age)
                        .put("MaximumRetryAttempts", max_attempts),
                )
                .put(
                    "DeadLetterConfig",
                    Map::new().put("Arn", get_att("DeadLetterQueue", "Arn")),
                ),
        );
    resource("AWS::Scheduler::Schedule", properties)
}

fn alarm(spec: &JobSpec, period: u64) -> Map {
    let name = spec.name.as_str();
    let window = format_duration(Duration::from_secs(period));
    let why = if spec.stale_after.is_some() {
        "its stale_after".to_string()
    } else {
        "the longest gap between its slots + lease + starting deadline".to_string()
    };
    resource(
        "AWS::CloudWatch::Alarm",
        Map::new()
            .put("AlarmName", sub(&format!("${{AWS::StackName}}-{name}-stale")))
            .put(
                "AlarmDescription",
                format!(
                    "cronslot job {name}: no successful run within {window} ({why}); missing data counts as breaching"
                ),
            )
            .put_opt("ActionsEnabled", spec.paused.then_some(false))
            .put("Namespace", NAMESPACE)
            .put("MetricName", RUN_SUCCEEDED)
            .put(
                "Dimensions",
                vec![Node::from(
                    Map::new().put("Name", DIMENSION).put("Value", name),
                )],
            )
            .put("Statistic", "Sum")
            .put("Period", period)
            .put("EvaluationPeriods", 1u32)
            .put("DatapointsToAlarm", 1u32)
            .put("Threshold", 1u32)
            .put("ComparisonOperator", "LessThanThreshold")
            .put("TreatMissingData", "breaching")
            .put("AlarmActions", vec![r#ref("AlarmTopicArn")])
            .put("OKActions", vec![r#ref("AlarmTopicArn")]),
    )
}

fn header(
    source: &Source<'_>,
    options: &Options,
    plans: &[(&JobSpec, Plan)],
    notes: &[String],
) -> Vec<String> {
    let format = if options.sam { "sam" } else { "cloudformation" };
    let path = source.path.display();
    let mut lines = comment_lines(
        &format!(
            "Generated by `cronslot render {format}` from {path} (manifest fnv1a64 {}). Do not edit: change the manifest and render again; `cronslot check THIS_FILE --manifest {path}` compares a template with the manifest.",
            source.hash
        ),
        "",
        0,
    );
    lines.push(String::new());
    if options.sam {
        lines.extend(comment_lines(
            "Build and deploy: `sam build` (cargo-lambda, arm64) then `sam deploy --guided`. Parameter AlarmTopicArn: the SNS topic the alarms notify.",
            "",
            0,
        ));
    } else {
        lines.extend(comment_lines(
            "Build the function with `cargo lambda build --release --arm64 --output-format zip`, upload the zip and pass its place as CodeS3Bucket and CodeS3Key. Parameter AlarmTopicArn: the SNS topic the alarms notify.",
            "",
            0,
        ));
    }
    lines.push(String::new());
    lines.push(
        "Jobs (EventBridge Scheduler: weekdays count 1-7 from Sunday; one day field is ?):".into(),
    );
    let width = plans
        .iter()
        .map(|(j, _)| j.name.as_str().len())
        .max()
        .unwrap_or(0);
    for (spec, p) in plans {
        let what = match p {
            Plan::Dedicated {
                expression,
                timezone,
            } => format!(
                "{expression} in {timezone}, deliveries retried for {} s",
                plan::scheduler_retry(spec).max_event_age
            ),
            Plan::Tick { .. } => format!("on the tick ({EVENTBRIDGE_TICK})"),
        };
        lines.push(format!(
            "  {:width$}  {:?} in {}: {what}",
            spec.name.as_str(),
            spec.schedule_text,
            spec.timezone
        ));
    }
    if !notes.is_empty() {
        lines.push(String::new());
        lines.push("Notes:".into());
        for note in notes {
            lines.extend(comment_lines(note, "  - ", 4));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_aws::lambda::event::{Target, decode};

    #[test]
    fn inputs_decode_as_the_adapter_expects() {
        let fill = |s: String| {
            s.replace("<aws.scheduler.scheduled-time>", "2026-03-08T07:00:00Z")
                .replace("<aws.scheduler.execution-id>", "e-1")
                .replace("<aws.scheduler.attempt-number>", "1")
        };
        let job: serde_json::Value =
            serde_json::from_str(&fill(job_input("nightly-report"))).expect("json");
        let event = decode(&job).expect("a job event");
        assert_eq!(event.target, Target::Job("nightly-report".into()));
        let tick: serde_json::Value = serde_json::from_str(&fill(tick_input())).expect("json");
        assert_eq!(decode(&tick).expect("a tick").target, Target::Tick);
    }

    #[test]
    fn logical_ids_are_camel_case_and_unique() {
        let m = cronslot_core::manifest::parse_manifest(
            r#"
            [[job]]
            name = "nightly-report"
            schedule = "@daily"
            [[job]]
            name = "a-b"
            schedule = "@daily"
            [[job]]
            name = "a_b"
            schedule = "@daily"
            "#,
            "t.toml",
        )
        .expect("manifest");
        let ids = logical_ids(&m.jobs);
        assert_eq!(ids["nightly-report"], "NightlyReport");
        assert_ne!(ids["a-b"], ids["a_b"]);
        assert!(ids["a-b"].starts_with("AB"));
    }
}
