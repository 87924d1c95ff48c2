//! Making the EventBridge Scheduler schedules of a group match the
//! manifest, for users who manage schedules by API rather than templates:
//! what `cronslot sync aws` does (the command is `commands/sync.rs`).
//!
//! What each job gets is `render`'s plan ([`crate::render::plan`]): a
//! dedicated job with an exact translation gets its own schedule, every
//! other job runs on one tick; the expression, zone, Input and retry policy
//! are the ones `render sam` writes.
//!
//! Ownership: sync works in one schedule group (default `cronslot`) and,
//! optionally, under a name prefix. A job's schedule is `PREFIX+JOB`, the
//! tick `PREFIX+_tick` (a job name cannot start with `_`). It deletes only
//! schedules of that group and prefix whose Input is a cronslot one;
//! anything else there is reported and left alone.
//!
//! Targets: `--target-arn`, `--role-arn` and `--dead-letter-arn` when
//! given; otherwise a schedule keeps its own and a new one takes those of
//! the group's first cronslot schedule (see [`TargetFlags`]).
//!
//! Two syncs at once: names are deterministic, so a create that meets
//! `ConflictException` (the other sync created it) re-reads the schedule
//! and updates it only if it differs; an update starts from what it read
//! (and keeps what sync does not manage: the KMS key); a delete of a
//! schedule that is already gone is done. Neither a duplicate nor a lost
//! schedule can result.

pub mod scheduler;

use std::path::Path;

use aws_sdk_scheduler::Client;
use aws_sdk_scheduler::operation::create_schedule::CreateScheduleError;
use aws_sdk_scheduler::operation::create_schedule_group::CreateScheduleGroupError;
use aws_sdk_scheduler::operation::delete_schedule::DeleteScheduleError;
use aws_sdk_scheduler::operation::update_schedule::UpdateScheduleError;
use aws_sdk_scheduler::types::{
    DeadLetterConfig, FlexibleTimeWindow, FlexibleTimeWindowMode, RetryPolicy, ScheduleState, Tag,
    Target,
};
use cronslot_core::manifest::Manifest;
use cronslot_core::translate::Platform;
use serde::Serialize;

use crate::cli::Format;
use crate::commands::sync::SyncArgs;
use crate::exit::Failure;
use crate::format::to_json;
use crate::render::aws::{job_input, tick_input};
use crate::render::plan::{self, EVENTBRIDGE_TICK, Plan};

use scheduler::{Deployed, aws_failure, valid_name};

/// The tick's name after the prefix. Job names start with a letter or a
/// digit, so no job's schedule can have it.
pub const TICK_NAME: &str = "_tick";

/// The tag sync puts on a schedule group it creates.
const GROUP_TAG: (&str, &str) = ("managed-by", "cronslot");

/// How many times one schedule is re-read and retried when another writer
/// changes it under us.
const ATTEMPTS: usize = 5;

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
    fn resolve(
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
enum Step {
    Create(Desired),
    Update(Desired, Deployed, Vec<String>),
    Unchanged(Desired),
    Delete(Deployed),
    /// In the group and prefix, but not a cronslot schedule.
    Foreign(Deployed),
}

/// The group's first cronslot schedule: where a new schedule takes the
/// targets not given on the command line.
fn base(have: &[Deployed]) -> Option<&Deployed> {
    have.iter().find(|h| is_cronslot(h))
}

fn plan_steps(
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

fn what(w: &Desired) -> String {
    match &w.timezone {
        Some(tz) => format!("{} in {tz}", w.expression),
        None => w.expression.clone(),
    }
}

fn whose(w: &Desired) -> String {
    match &w.job {
        Some(job) => format!("job {job:?}"),
        None => "the tick".to_string(),
    }
}

/// `cronslot sync aws --format json`: what sync did (or, with `dry_run`,
/// would do) to each schedule, printed also when some failed (exit 1).
#[derive(Debug, Serialize)]
struct SyncDoc {
    group: String,
    /// The name prefix (empty: none).
    prefix: String,
    /// The manifest's path.
    manifest: String,
    /// True when nothing was changed: `schedules` say what would be.
    dry_run: bool,
    /// The group did not exist and was created (with `dry_run`: would be).
    group_created: bool,
    /// Schedules of the group and prefix read before syncing.
    deployed: usize,
    /// Nothing had to change (the group existed and every schedule was as
    /// wanted).
    in_sync: bool,
    /// One entry per schedule wanted or found, in the text output's order.
    schedules: Vec<ScheduleDoc>,
    /// The entries by action (with `dry_run`: what would be), and `failed`.
    counts: Counts,
}

/// One schedule in a [`SyncDoc`].
#[derive(Debug, Serialize)]
struct ScheduleDoc {
    name: String,
    /// `create`, `update`, `delete`, `unchanged`, or `foreign` (in the
    /// group and prefix but not a cronslot schedule: left alone).
    action: &'static str,
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
    differences: Vec<String>,
    /// What else happened: another sync got there first.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    /// Why this schedule's step failed (it is not counted as done).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl ScheduleDoc {
    fn of(step: &Step) -> ScheduleDoc {
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

/// Reads the group, plans and prints the steps, and (unless `--dry-run`)
/// applies them: exit 1 when any schedule failed. With `--format json`
/// the same as one [`SyncDoc`].
pub async fn run(
    client: &Client,
    args: &SyncArgs,
    want: &[Desired],
    flags: &TargetFlags,
) -> Result<(), Failure> {
    let text = args.format == Format::Text;
    let group = args.group.as_str();
    let exists = scheduler::group_exists(client, group).await?;
    let have = if exists {
        scheduler::read_group(client, group, &args.prefix).await?
    } else {
        Vec::new()
    };
    let steps = plan_steps(want, &have, flags)?;
    let base = base(&have);
    let prefix = if args.prefix.is_empty() {
        String::new()
    } else {
        format!(", prefix {:?}", args.prefix)
    };
    let mut doc = SyncDoc {
        group: group.to_string(),
        prefix: args.prefix.clone(),
        manifest: display(&args.manifest.path()),
        dry_run: args.dry_run,
        group_created: !exists,
        deployed: have.len(),
        in_sync: false,
        schedules: steps.iter().map(ScheduleDoc::of).collect(),
        counts: Counts::default(),
    };
    let print_doc = |doc: &SyncDoc| -> Result<(), Failure> {
        println!("{}", to_json(doc)?);
        Ok(())
    };
    if text {
        println!(
            "sync aws: schedule group {group}{prefix}: {} schedule{} from {}, {} deployed",
            want.len(),
            if want.len() == 1 { "" } else { "s" },
            display(&args.manifest.path()),
            have.len()
        );
    }
    if args.dry_run {
        let counts = Counts::of_plan(&steps);
        if !text {
            doc.in_sync = counts.changes() == 0 && exists;
            doc.counts = counts;
            return print_doc(&doc);
        }
        if !exists {
            println!("create     schedule group {group}");
        }
        print_plan(&steps);
        if counts.changes() == 0 && exists {
            println!("dry run: in sync, nothing to do ({})", counts.summary());
        } else {
            println!(
                "dry run: would create {}, update {}, delete {}; {} unchanged; nothing was changed",
                counts.created, counts.updated, counts.deleted, counts.unchanged
            );
        }
        return Ok(());
    }
    if !exists {
        create_group(client, group).await?;
        if text {
            println!("created    schedule group {group}");
        }
    }
    let mut counts = Counts::default();
    let mut errors = Vec::new();
    for (step, entry) in steps.iter().zip(doc.schedules.iter_mut()) {
        let result = match step {
            Step::Unchanged(w) => {
                if text {
                    println!("unchanged  {}  {}", w.name, what(w));
                }
                counts.unchanged += 1;
                Ok(())
            }
            Step::Create(w) => apply(client, group, w, flags, base, None)
                .await
                .map(|outcome| outcome.report(w, &mut counts, entry, text)),
            Step::Update(w, h, _) => apply(client, group, w, flags, base, Some(h.clone()))
                .await
                .map(|outcome| outcome.report(w, &mut counts, entry, text)),
            Step::Delete(h) => delete(client, group, h).await.map(|gone| {
                let job = why_delete(h);
                if gone {
                    if text {
                        println!("deleted    {}  ({job})", h.name);
                    }
                } else {
                    if text {
                        println!(
                            "deleted    {}  (already gone: another sync deleted it; {job})",
                            h.name
                        );
                    }
                    entry.note = Some("already gone: another sync deleted it".to_string());
                }
                counts.deleted += 1;
            }),
            Step::Foreign(h) => {
                if text {
                    println!(
                        "left       {}  not a cronslot schedule (its Input names no cronslot job): not touched",
                        h.name
                    );
                }
                counts.foreign += 1;
                Ok(())
            }
        };
        if let Err(failure) = result {
            if text {
                println!("FAILED     {}", step_name(step));
            }
            entry.error = Some(
                failure
                    .message
                    .strip_prefix("error: ")
                    .unwrap_or(&failure.message)
                    .to_string(),
            );
            counts.failed += 1;
            errors.push(failure.message);
        }
    }
    let in_sync = counts.changes() == 0 && exists;
    let summary = counts.summary();
    if !text {
        doc.in_sync = in_sync && errors.is_empty();
        doc.counts = counts;
        print_doc(&doc)?;
    }
    if !errors.is_empty() {
        return Err(Failure {
            code: Failure::PROBLEM,
            message: format!(
                "{}\nsync aws: {} of {} schedules failed ({summary} done)",
                errors.join("\n"),
                errors.len(),
                steps.len(),
            ),
        });
    }
    if text {
        if in_sync {
            println!("in sync: nothing to do ({summary})");
        } else {
            println!("synced: {summary}");
        }
    }
    Ok(())
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

fn step_name(step: &Step) -> &str {
    match step {
        Step::Create(w) | Step::Update(w, _, _) | Step::Unchanged(w) => &w.name,
        Step::Delete(h) | Step::Foreign(h) => &h.name,
    }
}

fn why_delete(h: &Deployed) -> String {
    match cronslot_input(h).0 {
        Some(job) => format!("job {job:?} is not in the manifest"),
        None => "the tick: no job of the manifest runs on it".to_string(),
    }
}

fn print_plan(steps: &[Step]) {
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

#[derive(Debug, Default, Serialize)]
struct Counts {
    created: usize,
    updated: usize,
    deleted: usize,
    unchanged: usize,
    /// Not cronslot's: left alone.
    foreign: usize,
    /// Steps that failed (not in the counts above).
    failed: usize,
}

impl Counts {
    fn of_plan(steps: &[Step]) -> Counts {
        let mut c = Counts::default();
        for step in steps {
            match step {
                Step::Create(_) => c.created += 1,
                Step::Update(..) => c.updated += 1,
                Step::Unchanged(_) => c.unchanged += 1,
                Step::Delete(_) => c.deleted += 1,
                Step::Foreign(_) => c.foreign += 1,
            }
        }
        c
    }

    fn changes(&self) -> usize {
        self.created + self.updated + self.deleted
    }

    fn summary(&self) -> String {
        let mut parts = vec![
            format!("{} created", self.created),
            format!("{} updated", self.updated),
            format!("{} deleted", self.deleted),
            format!("{} unchanged", self.unchanged),
        ];
        if self.foreign > 0 {
            parts.push(format!("{} not cronslot's, left alone", self.foreign));
        }
        parts.join(", ")
    }
}

/// What happened to one wanted schedule.
enum Outcome {
    Created,
    Updated(Vec<String>),
    /// Another writer had already made it as wanted.
    AlreadyDone,
}

impl Outcome {
    /// Counts it, says so in the text output, and sets its entry's action
    /// to what was done.
    fn report(self, w: &Desired, counts: &mut Counts, entry: &mut ScheduleDoc, text: bool) {
        match self {
            Outcome::Created => {
                if text {
                    println!("created    {}  {}  ({})", w.name, what(w), whose(w));
                }
                entry.action = "create";
                entry.differences.clear();
                counts.created += 1;
            }
            Outcome::Updated(diffs) => {
                if text {
                    println!("updated    {}  ({})", w.name, whose(w));
                    for d in &diffs {
                        println!("    {d}");
                    }
                }
                entry.action = "update";
                entry.differences = diffs;
                counts.updated += 1;
            }
            Outcome::AlreadyDone => {
                if text {
                    println!(
                        "unchanged  {}  {}  (another sync made it so meanwhile)",
                        w.name,
                        what(w)
                    );
                }
                entry.action = "unchanged";
                entry.differences.clear();
                entry.note = Some("another sync made it so meanwhile".to_string());
                counts.unchanged += 1;
            }
        }
    }
}

fn target(w: &Desired, targets: &Targets) -> Result<Target, Failure> {
    let retry = RetryPolicy::builder()
        .maximum_event_age_in_seconds(i32::try_from(w.max_event_age).unwrap_or(i32::MAX))
        .maximum_retry_attempts(i32::try_from(w.max_attempts).unwrap_or(i32::MAX))
        .build();
    Target::builder()
        .arn(&targets.target_arn)
        .role_arn(&targets.role_arn)
        .input(&w.input)
        .retry_policy(retry)
        .set_dead_letter_config(
            targets
                .dead_letter_arn
                .as_ref()
                .map(|arn| DeadLetterConfig::builder().arn(arn).build()),
        )
        .build()
        .map_err(|e| aws_failure(&format!("building the target of {}", w.name), e))
}

fn off() -> Result<FlexibleTimeWindow, Failure> {
    FlexibleTimeWindow::builder()
        .mode(FlexibleTimeWindowMode::Off)
        .build()
        .map_err(|e| aws_failure("building FlexibleTimeWindow", e))
}

/// Creates or updates one schedule until it is as wanted, re-reading it
/// whenever another writer got there first.
async fn apply(
    client: &Client,
    group: &str,
    w: &Desired,
    flags: &TargetFlags,
    base: Option<&Deployed>,
    mut current: Option<Deployed>,
) -> Result<Outcome, Failure> {
    let mut raced = false;
    for _ in 0..ATTEMPTS {
        match current {
            None => {
                let result = client
                    .create_schedule()
                    .group_name(group)
                    .name(&w.name)
                    .description(&w.description)
                    .schedule_expression(&w.expression)
                    .set_schedule_expression_timezone(w.timezone.clone())
                    .flexible_time_window(off()?)
                    .state(ScheduleState::Enabled)
                    .target(target(w, &flags.resolve(None, base)?)?)
                    .send()
                    .await;
                match result {
                    Ok(_) => return Ok(Outcome::Created),
                    Err(e) => match e.as_service_error() {
                        Some(CreateScheduleError::ConflictException(_)) => {
                            raced = true;
                            current = scheduler::get(client, group, &w.name).await?;
                        }
                        _ => {
                            return Err(aws_failure(
                                &format!("creating schedule {} in group {group}", w.name),
                                e,
                            ));
                        }
                    },
                }
            }
            Some(have) => {
                let targets = flags.resolve(Some(&have), base)?;
                let diffs = differences(w, &targets, &have);
                if diffs.is_empty() {
                    return Ok(Outcome::AlreadyDone);
                }
                // UpdateSchedule replaces the whole schedule: start from
                // what was read, so what sync does not manage stays.
                let result = client
                    .update_schedule()
                    .group_name(group)
                    .name(&w.name)
                    .description(&w.description)
                    .schedule_expression(&w.expression)
                    .set_schedule_expression_timezone(w.timezone.clone())
                    .flexible_time_window(off()?)
                    .state(ScheduleState::Enabled)
                    .target(target(w, &targets)?)
                    .set_kms_key_arn(have.kms_key_arn.clone())
                    .set_action_after_completion(have.action_after_completion.clone())
                    .send()
                    .await;
                match result {
                    Ok(_) => return Ok(Outcome::Updated(diffs)),
                    Err(e) => match e.as_service_error() {
                        // Deleted meanwhile: create it again.
                        Some(UpdateScheduleError::ResourceNotFoundException(_)) => {
                            raced = true;
                            current = None;
                        }
                        // Being changed by someone else: read it again.
                        Some(UpdateScheduleError::ConflictException(_)) => {
                            raced = true;
                            current = scheduler::get(client, group, &w.name).await?;
                        }
                        _ => {
                            return Err(aws_failure(
                                &format!("updating schedule {} in group {group}", w.name),
                                e,
                            ));
                        }
                    },
                }
            }
        }
    }
    Err(Failure {
        code: Failure::PROBLEM,
        message: format!(
            "error: schedule {} in group {group} kept changing under this sync ({ATTEMPTS} attempts{}); run it again",
            w.name,
            if raced {
                ", each lost to another writer"
            } else {
                ""
            }
        ),
    })
}

/// Deletes an owned schedule; `false` when it was already gone.
async fn delete(client: &Client, group: &str, h: &Deployed) -> Result<bool, Failure> {
    for _ in 0..ATTEMPTS {
        match client
            .delete_schedule()
            .group_name(group)
            .name(&h.name)
            .send()
            .await
        {
            Ok(_) => return Ok(true),
            Err(e) => match e.as_service_error() {
                Some(DeleteScheduleError::ResourceNotFoundException(_)) => return Ok(false),
                Some(DeleteScheduleError::ConflictException(_)) => {
                    if scheduler::get(client, group, &h.name).await?.is_none() {
                        return Ok(false);
                    }
                }
                _ => {
                    return Err(aws_failure(
                        &format!("deleting schedule {} in group {group}", h.name),
                        e,
                    ));
                }
            },
        }
    }
    Err(Failure {
        code: Failure::PROBLEM,
        message: format!(
            "error: schedule {} in group {group} kept changing under this sync ({ATTEMPTS} attempts); run it again",
            h.name
        ),
    })
}

async fn create_group(client: &Client, group: &str) -> Result<(), Failure> {
    let tag = Tag::builder()
        .key(GROUP_TAG.0)
        .value(GROUP_TAG.1)
        .build()
        .map_err(|e| aws_failure("building the group's tag", e))?;
    match client
        .create_schedule_group()
        .name(group)
        .tags(tag)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => match e.as_service_error() {
            // Another sync created it.
            Some(CreateScheduleGroupError::ConflictException(_)) => Ok(()),
            _ => Err(aws_failure(&format!("creating schedule group {group}"), e)),
        },
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
