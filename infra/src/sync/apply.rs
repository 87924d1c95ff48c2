//! The apply: the EventBridge Scheduler calls that carry out the plan's
//! steps (creating the group, creating, updating and deleting schedules,
//! each retried when another sync got there first), what each one came to,
//! and the counts of them.

use aws_sdk_scheduler::Client;
use aws_sdk_scheduler::operation::create_schedule::CreateScheduleError;
use aws_sdk_scheduler::operation::create_schedule_group::CreateScheduleGroupError;
use aws_sdk_scheduler::operation::delete_schedule::DeleteScheduleError;
use aws_sdk_scheduler::operation::update_schedule::UpdateScheduleError;
use aws_sdk_scheduler::types::{
    DeadLetterConfig, FlexibleTimeWindow, FlexibleTimeWindowMode, RetryPolicy, ScheduleState, Tag,
    Target,
};
use serde::Serialize;

use crate::exit::Failure;

use super::plan::{
    Desired, ScheduleDoc, Step, TargetFlags, Targets, differences, step_name, what, whose,
    why_delete,
};
use super::scheduler::{self, Deployed, aws_failure};

/// The tag sync puts on a schedule group it creates.
const GROUP_TAG: (&str, &str) = ("managed-by", "cronslot");

/// How many times one schedule is re-read and retried when another writer
/// changes it under us.
const ATTEMPTS: usize = 5;

/// Carries out the steps in order, each schedule on its own (one that fails
/// does not stop the others): prints each outcome in the text output, sets
/// its entry of the document, and returns the counts with every failure's
/// message.
pub(super) async fn apply_steps(
    client: &Client,
    group: &str,
    steps: &[Step],
    flags: &TargetFlags,
    base: Option<&Deployed>,
    entries: &mut [ScheduleDoc],
    text: bool,
) -> (Counts, Vec<String>) {
    let mut counts = Counts::default();
    let mut errors = Vec::new();
    for (step, entry) in steps.iter().zip(entries.iter_mut()) {
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
    (counts, errors)
}

#[derive(Debug, Default, Serialize)]
pub(super) struct Counts {
    pub(super) created: usize,
    pub(super) updated: usize,
    pub(super) deleted: usize,
    pub(super) unchanged: usize,
    /// Not cronslot's: left alone.
    pub(super) foreign: usize,
    /// Steps that failed (not in the counts above).
    pub(super) failed: usize,
}

impl Counts {
    pub(super) fn of_plan(steps: &[Step]) -> Counts {
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

    pub(super) fn changes(&self) -> usize {
        self.created + self.updated + self.deleted
    }

    pub(super) fn summary(&self) -> String {
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

pub(super) async fn create_group(client: &Client, group: &str) -> Result<(), Failure> {
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
