//! The plan: the schedules the manifest wants (`render`'s plan for
//! EventBridge), what differs from the deployed ones, the steps that make
//! them match (create, update, delete, unchanged, or leave a foreign one
//! alone), and the document `sync aws --format json` prints of them.

use cronslot_core::manifest::Manifest;
use cronslot_core::translate::Platform;
use serde::Serialize;

use crate::exit::Failure;
use crate::render::aws::{job_input, tick_input};
use crate::render::plan::{self, EVENTBRIDGE_TICK, Plan};

use super::apply::Counts;
use super::scheduler::{self, Deployed, valid_name};

/// The tick's name after the prefix. Job names start with a letter or a
/// digit, so no job's schedule can have it.
pub const TICK_NAME: &str = "_tick";

/// A schedule as the manifest wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    pub name: String,
    /// The job, or `None` for the tick.
    pub job: Option<String>,
    pub expression: String,
    /// `None`: UTC (the tick).
    pub timezone: Option<String>,
    pub input: String,
    pub max_event_age: u64,
    pub max_attempts: u32,
    pub description: String,
}

/// What a schedule invokes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    pub target_arn: String,
    pub role_arn: String,
    pub dead_letter_arn: Option<String>,
}

/// The target flags as given. What is not given is kept: a deployed
/// schedule keeps its own, a new one takes those of the group's (first)
/// cronslot schedule, so after the first sync the manifest alone suffices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetFlags {
    pub target_arn: Option<String>,
    pub role_arn: Option<String>,
    pub dead_letter_arn: Option<String>,
}

impl TargetFlags {
    /// The targets of a schedule that is `have` (or new), where `base` is
    /// the group's cronslot schedule to take what is missing from.
    pub(super) fn resolve(
        &self,
        have: Option<&Deployed>,
        base: Option<&Deployed>,
    ) -> Result<Targets, Failure> {
        let pick = |flag: &Option<String>, field: fn(&Deployed) -> &Option<String>| {
            flag.clone()
                .or_else(|| have.and_then(|h| field(h).clone()))
                .or_else(|| base.and_then(|b| field(b).clone()))
        };
        let missing = |flag: &str| {
            Failure::bad_input(format!(
                "error: {flag} is needed: the group has no cronslot schedule to take it from (the first sync needs --target-arn and --role-arn)"
            ))
        };
        let dead_letter_arn = match have {
            // A schedule keeps its own dead-letter queue, or its lack of one.
            Some(h) => self
                .dead_letter_arn
                .clone()
                .or_else(|| h.dead_letter_arn.clone()),
            None => pick(&self.dead_letter_arn, |d| &d.dead_letter_arn),
        };
        Ok(Targets {
            target_arn: pick(&self.target_arn, |d| &d.target_arn)
                .ok_or_else(|| missing("--target-arn"))?,
            role_arn: pick(&self.role_arn, |d| &d.role_arn).ok_or_else(|| missing("--role-arn"))?,
            dead_letter_arn,
        })
    }
}

/// The schedules the manifest wants, in manifest order (the tick last),
/// with `render`'s notes (dedicated jobs that run on the tick).
pub fn desired(manifest: &Manifest, prefix: &str) -> Result<(Vec<Desired>, Vec<String>), Failure> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let mut tick_jobs = Vec::new();
    for spec in &manifest.jobs {
        let job = spec.name.as_str();
        match plan::plan(spec, Platform::EventBridge) {
            Plan::Dedicated {
                expression,
                timezone,
            } => {
                let retry = plan::scheduler_retry(spec);
                out.push(Desired {
                    name: schedule_name(prefix, job)?,
                    job: Some(job.to_string()),
                    expression,
                    timezone: Some(timezone),
                    input: job_input(job),
                    max_event_age: retry.max_event_age,
                    max_attempts: retry.max_attempts,
                    description: format!("cronslot job {job}"),
                });
            }
            Plan::Tick { note } => {
                notes.extend(note);
                tick_jobs.push(job);
            }
        }
    }
    if !tick_jobs.is_empty() {
        out.push(Desired {
            name: schedule_name(prefix, TICK_NAME)?,
            job: None,
            expression: EVENTBRIDGE_TICK.to_string(),
            timezone: None,
            input: tick_input(),
            max_event_age: plan::MIN_EVENT_AGE,
            max_attempts: plan::MAX_RETRY_ATTEMPTS,
            description: "cronslot tick".to_string(),
        });
    }
    Ok((out, notes))
}

fn schedule_name(prefix: &str, job: &str) -> Result<String, Failure> {
    let name = format!("{prefix}{job}");
    if !valid_name(&name) {
        return Err(Failure::bad_input(format!(
            "error: schedule name {name:?} (--prefix {prefix:?} + {job:?}) is longer than EventBridge Scheduler's {} characters; use a shorter --prefix",
            scheduler::MAX_NAME
        )));
    }
    Ok(name)
}

/// A value for a diff line.
fn shown<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "(none)".to_string(), |v| v.to_string())
}

/// Inputs are compared as JSON (a reformatted Input is the same Input).
fn same_input(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<serde_json::Value>(a),
        serde_json::from_str::<serde_json::Value>(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// What differs between the deployed schedule and the wanted one, one
/// `Field: deployed → wanted` line each; empty when they match.
pub fn differences(want: &Desired, targets: &Targets, have: &Deployed) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut field = |name: &str, have: String, want: String| {
        if have != want {
            diffs.push(format!("{name}: {have} → {want}"));
        }
    };
    field(
        "ScheduleExpression",
        shown(have.expression.as_deref()),
        want.expression.clone(),
    );
    field(
        "ScheduleExpressionTimezone",
        have.zone().to_string(),
        want.timezone.as_deref().unwrap_or("UTC").to_string(),
    );
    field(
        "FlexibleTimeWindow",
        have.flexible_mode().unwrap_or("OFF").to_string(),
        "OFF".to_string(),
    );
    // Scheduler's default state is ENABLED.
    field(
        "State",
        have.state.as_deref().unwrap_or("ENABLED").to_string(),
        "ENABLED".to_string(),
    );
    field(
        "Description",
        shown(have.description.as_deref()),
        want.description.clone(),
    );
    field(
        "Target.Arn",
        shown(have.target_arn.as_deref()),
        targets.target_arn.clone(),
    );
    field(
        "Target.RoleArn",
        shown(have.role_arn.as_deref()),
        targets.role_arn.clone(),
    );
    if !have
        .input
        .as_deref()
        .is_some_and(|i| same_input(i, &want.input))
    {
        field(
            "Target.Input",
            shown(have.input.as_deref()),
            want.input.clone(),
        );
    }
    field(
        "Target.RetryPolicy.MaximumEventAgeInSeconds",
        shown(have.max_event_age),
        want.max_event_age.to_string(),
    );
    field(
        "Target.RetryPolicy.MaximumRetryAttempts",
        shown(have.max_attempts),
        want.max_attempts.to_string(),
    );
    field(
        "Target.DeadLetterConfig.Arn",
        shown(have.dead_letter_arn.as_deref()),
        shown(targets.dead_letter_arn.as_deref()),
    );
    field(
        "StartDate",
        shown(have.start_date.as_deref()),
        "(none)".to_string(),
    );
    field(
        "EndDate",
        shown(have.end_date.as_deref()),
        "(none)".to_string(),
    );
    diffs
}

/// Whether a deployed schedule is a cronslot one (its Input names a job or
/// the tick), so that sync may delete it.
fn is_cronslot(have: &Deployed) -> bool {
    let Some(input) = have.input.as_deref() else {
        return false;
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(input) else {
        return false;
    };
    let Some(c) = value.get("cronslot") else {
        return false;
    };
    c.get("job").is_some_and(serde_json::Value::is_string)
        || c.get("tick") == Some(&serde_json::Value::Bool(true))
}

/// One line of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    Create(Desired),
    Update(Desired, Deployed, Vec<String>),
    Unchanged(Desired),
    Delete(Deployed),
    /// In the group and prefix, but not a cronslot schedule.
    Foreign(Deployed),
}

/// The group's first cronslot schedule: where a new schedule takes the
/// targets not given on the command line.
pub(super) fn base(have: &[Deployed]) -> Option<&Deployed> {
    have.iter().find(|h| is_cronslot(h))
}

pub(super) fn plan_steps(
    want: &[Desired],
    have: &[Deployed],
    flags: &TargetFlags,
) -> Result<Vec<Step>, Failure> {
    let base = base(have);
    let mut steps = Vec::new();
    for w in want {
        match have.iter().find(|h| h.name == w.name) {
            None => {
                // Refused before anything changes when a target is unknown.
                flags.resolve(None, base)?;
                steps.push(Step::Create(w.clone()));
            }
            Some(h) => {
                let diffs = differences(w, &flags.resolve(Some(h), base)?, h);
                if diffs.is_empty() {
                    steps.push(Step::Unchanged(w.clone()));
                } else {
                    steps.push(Step::Update(w.clone(), h.clone(), diffs));
                }
            }
        }
    }
    for h in have {
        if want.iter().any(|w| w.name == h.name) {
            continue;
        }
        if is_cronslot(h) {
            steps.push(Step::Delete(h.clone()));
        } else {
            steps.push(Step::Foreign(h.clone()));
        }
    }
    Ok(steps)
}

pub(super) fn what(w: &Desired) -> String {
    match &w.timezone {
        Some(tz) => format!("{} in {tz}", w.expression),
        None => w.expression.clone(),
    }
}

pub(super) fn whose(w: &Desired) -> String {
    match &w.job {
        Some(job) => format!("job {job:?}"),
        None => "the tick".to_string(),
    }
}

/// `cronslot sync aws --format json`: what sync did (or, with `dry_run`,
/// would do) to each schedule, printed also when some failed (exit 1).
#[derive(Debug, Serialize)]
pub(super) struct SyncDoc {
    pub(super) group: String,
    /// The name prefix (empty: none).
    pub(super) prefix: String,
    /// The manifest's path.
    pub(super) manifest: String,
    /// True when nothing was changed: `schedules` say what would be.
    pub(super) dry_run: bool,
    /// The group did not exist and was created (with `dry_run`: would be).
    pub(super) group_created: bool,
    /// Schedules of the group and prefix read before syncing.
    pub(super) deployed: usize,
    /// Nothing had to change (the group existed and every schedule was as
    /// wanted).
    pub(super) in_sync: bool,
    /// One entry per schedule wanted or found, in the text output's order.
    pub(super) schedules: Vec<ScheduleDoc>,
    /// The entries by action (with `dry_run`: what would be), and `failed`.
    pub(super) counts: Counts,
}

/// One schedule in a [`SyncDoc`].
#[derive(Debug, Serialize)]
pub(super) struct ScheduleDoc {
    name: String,
    /// `create`, `update`, `delete`, `unchanged`, or `foreign` (in the
    /// group and prefix but not a cronslot schedule: left alone).
    pub(super) action: &'static str,
    /// The job it triggers; null for the tick and for a foreign schedule.
    job: Option<String>,
    /// True for the tick.
    tick: bool,
    /// The schedule expression (the wanted one; the deployed one for
    /// `delete` and `foreign`).
    expression: Option<String>,
    /// Its zone (null: UTC).
    timezone: Option<String>,
    /// `update`: what differs, one line each as in the text output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) differences: Vec<String>,
    /// What else happened: another sync got there first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) note: Option<String>,
    /// Why this schedule's step failed (it is not counted as done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<String>,
}

impl ScheduleDoc {
    pub(super) fn of(step: &Step) -> ScheduleDoc {
        let wanted = |action, w: &Desired| ScheduleDoc {
            name: w.name.clone(),
            action,
            job: w.job.clone(),
            tick: w.job.is_none(),
            expression: Some(w.expression.clone()),
            timezone: w.timezone.clone(),
            differences: Vec::new(),
            note: None,
            error: None,
        };
        let found = |action, h: &Deployed| {
            let (job, tick) = cronslot_input(h);
            ScheduleDoc {
                name: h.name.clone(),
                action,
                job,
                tick,
                expression: h.expression.clone(),
                timezone: h.timezone.clone(),
                differences: Vec::new(),
                note: None,
                error: None,
            }
        };
        match step {
            Step::Create(w) => wanted("create", w),
            Step::Update(w, _, diffs) => ScheduleDoc {
                differences: diffs.clone(),
                ..wanted("update", w)
            },
            Step::Unchanged(w) => wanted("unchanged", w),
            Step::Delete(h) => found("delete", h),
            Step::Foreign(h) => found("foreign", h),
        }
    }
}

/// The job a deployed schedule's Input names, and whether it is the tick.
fn cronslot_input(h: &Deployed) -> (Option<String>, bool) {
    let value = h
        .input
        .as_deref()
        .and_then(|i| serde_json::from_str::<serde_json::Value>(i).ok());
    let c = value.as_ref().and_then(|v| v.get("cronslot"));
    let job = c
        .and_then(|c| c.get("job"))
        .and_then(|j| j.as_str().map(str::to_string));
    let tick = c.and_then(|c| c.get("tick")) == Some(&serde_json::Value::Bool(true));
    (job, tick)
}

pub(super) fn step_name(step: &Step) -> &str {
    match step {
        Step::Create(w) | Step::Update(w, _, _) | Step::Unchanged(w) => &w.name,
        Step::Delete(h) | Step::Foreign(h) => &h.name,
    }
}

pub(super) fn why_delete(h: &Deployed) -> String {
    match cronslot_input(h).0 {
        Some(job) => format!("job {job:?} is not in the manifest"),
        None => "the tick: no job of the manifest runs on it".to_string(),
    }
}

pub(super) fn print_plan(steps: &[Step]) {
    for step in steps {
        match step {
            Step::Create(w) => println!("create     {}  {}  ({})", w.name, what(w), whose(w)),
            Step::Update(w, _, diffs) => {
                println!("update     {}  ({})", w.name, whose(w));
                for d in diffs {
                    println!("    {d}");
                }
            }
            Step::Unchanged(w) => println!("unchanged  {}  {}", w.name, what(w)),
            Step::Delete(h) => println!("delete     {}  ({})", h.name, why_delete(h)),
            Step::Foreign(h) => println!(
                "left       {}  not a cronslot schedule (its Input names no cronslot job): not touched",
                h.name
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::manifest::parse_manifest;

    fn manifest(text: &str) -> Manifest {
        parse_manifest(text, "t.toml").expect("manifest")
    }

    fn targets() -> Targets {
        Targets {
            target_arn: "arn:aws:lambda:us-east-1:123456789012:function:f".into(),
            role_arn: "arn:aws:iam::123456789012:role/r".into(),
            dead_letter_arn: None,
        }
    }

    fn deployed(w: &Desired, t: &Targets) -> Deployed {
        Deployed {
            name: w.name.clone(),
            expression: Some(w.expression.clone()),
            timezone: w.timezone.clone(),
            flexible: Some(("OFF".into(), None)),
            state: Some("ENABLED".into()),
            description: Some(w.description.clone()),
            target_arn: Some(t.target_arn.clone()),
            role_arn: Some(t.role_arn.clone()),
            input: Some(w.input.clone()),
            max_event_age: Some(i32::try_from(w.max_event_age).expect("age")),
            max_attempts: Some(i32::try_from(w.max_attempts).expect("attempts")),
            dead_letter_arn: None,
            start_date: None,
            end_date: None,
            kms_key_arn: None,
            action_after_completion: None,
        }
    }

    #[test]
    fn desired_follows_render_plan() {
        let m = manifest(
            r#"
            [defaults]
            trigger = "dedicated"
            [[job]]
            name = "nightly"
            schedule = "0 2 * * *"
            timezone = "Europe/Berlin"
            dst_gap = "skip"
            [[job]]
            name = "ticked"
            schedule = "*/5 * * * *"
            trigger = "tick"
            [[job]]
            name = "shifted"
            schedule = "30 2 * * *"
            timezone = "Europe/Berlin"
            "#,
        );
        let (want, notes) = desired(&m, "p-").expect("desired");
        // Scheduler skips gap times; cronslot's default shifts them, so
        // that job has no exact translation and runs on the tick.
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("\"shifted\""), "{notes:?}");
        assert_eq!(want.len(), 2);
        assert_eq!(want[0].name, "p-nightly");
        assert_eq!(want[0].expression, "cron(0 2 * * ? *)");
        assert_eq!(want[0].timezone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(want[0].input, job_input("nightly"));
        assert_eq!(
            want[0].max_event_age,
            plan::scheduler_retry(&m.jobs[0]).max_event_age
        );
        assert_eq!(want[1].name, "p-_tick");
        assert_eq!(want[1].expression, EVENTBRIDGE_TICK);
        assert_eq!(want[1].input, tick_input());
    }

    #[test]
    fn differences_and_ownership() {
        let m = manifest(
            r#"
            [[job]]
            name = "a"
            schedule = "0 2 * * *"
            trigger = "dedicated"
            "#,
        );
        let t = targets();
        let (want, _) = desired(&m, "").expect("desired");
        let mut have = deployed(&want[0], &t);
        assert!(differences(&want[0], &t, &have).is_empty());
        // UTC given or left out is the same zone.
        have.timezone = None;
        assert!(differences(&want[0], &t, &have).is_empty());
        have.input = Some(want[0].input.replace(",", ", "));
        assert!(differences(&want[0], &t, &have).is_empty(), "JSON compared");
        have.expression = Some("cron(0 3 * * ? *)".into());
        have.flexible = Some(("FLEXIBLE".into(), Some(5)));
        let diffs = differences(&want[0], &t, &have);
        assert_eq!(diffs.len(), 2, "{diffs:?}");
        assert!(diffs[0].contains("cron(0 3 * * ? *) → cron(0 2 * * ? *)"));
        assert!(is_cronslot(&have));
        have.input = Some("{\"other\":1}".into());
        assert!(!is_cronslot(&have));
        have.input = Some(tick_input());
        assert!(is_cronslot(&have));
    }

    #[test]
    fn targets_not_given_are_kept() {
        let m = manifest(
            r#"
            [[job]]
            name = "a"
            schedule = "0 2 * * *"
            trigger = "dedicated"
            "#,
        );
        let t = Targets {
            dead_letter_arn: Some("arn:aws:sqs:us-east-1:123456789012:q".into()),
            ..targets()
        };
        let (want, _) = desired(&m, "").expect("desired");
        let mut have = deployed(&want[0], &t);
        have.dead_letter_arn = t.dead_letter_arn.clone();
        let none = TargetFlags::default();
        assert_eq!(none.resolve(Some(&have), None).expect("kept"), t);
        assert_eq!(none.resolve(None, Some(&have)).expect("from base"), t);
        let err = none.resolve(None, None).expect_err("nothing to take");
        assert_eq!(err.code, Failure::BAD_INPUT);
        let role = TargetFlags {
            role_arn: Some("arn:aws:iam::123456789012:role/other".into()),
            ..TargetFlags::default()
        };
        let r = role.resolve(Some(&have), None).expect("resolved");
        assert_eq!(r.role_arn, "arn:aws:iam::123456789012:role/other");
        assert_eq!(r.target_arn, t.target_arn);
        assert!(!differences(&want[0], &r, &have).is_empty());
        // A schedule without a dead-letter queue keeps having none.
        have.dead_letter_arn = None;
        assert_eq!(
            none.resolve(Some(&have), None)
                .expect("kept")
                .dead_letter_arn,
            None
        );
    }

    #[test]
    fn long_names_are_bad_input() {
        let m = manifest(&format!(
            "[[job]]\nname = \"{}\"\nschedule = \"@daily\"\ntrigger = \"dedicated\"\n",
            "a".repeat(60)
        ));
        assert!(desired(&m, "").is_ok());
        let err = desired(&m, "cronslot-").expect_err("too long");
        assert_eq!(err.code, Failure::BAD_INPUT);
    }
}
