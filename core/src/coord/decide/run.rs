//! Keyed runs ([`enqueue_run`], [`run_view`], [`forget_at`]): the
//! business key claimed once, the status a client polls, and when the key
//! is forgotten (docs/design.md, "Keyed runs").
//!
//! A keyed run's record is a one-off schedule's (`job/key`, its spec `at`
//! the run's slot) whose one slot is enqueued as a waiting run at once: a
//! waiting run has no catch-up and no starting deadline, so an accepted
//! run is never dropped for being late, whatever the job's policies say
//! about scheduled slots. Its cursor is at or past the slot, so the
//! schedule itself plans nothing: the slot runs once, from the queue.

use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::add;
use crate::coord::slot::format_instant;
use crate::coord::state::{JobState, KeyedRun, Origin, PendingRun, RunOutcome, ScheduleData};
use crate::manifest::JobTemplate;
use crate::schedules::{
    RunRequest, RunStatus, RunView, ScheduleKey, ScheduleSpec, SpecProblem, When, same_payload,
    slot_of_now,
};

/// What an enqueue did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enqueued {
    /// The key was new (or forgotten): the run is created.
    Created(RunView),
    /// The key names a run with the same request: that run, unchanged.
    Existing(RunView),
}

impl Enqueued {
    /// The run, created or found.
    pub fn view(&self) -> &RunView {
        match self {
            Enqueued::Created(v) | Enqueued::Existing(v) => v,
        }
    }
}

/// Why an enqueue was refused; nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunRefusal {
    /// The key names a run enqueued with another request (409): the
    /// fields that differ (`payload`, `at`) and the run.
    Differs {
        /// The request's fields that differ from the run's.
        fields: Vec<String>,
        /// The run the key names (boxed: a refusal is the rare path).
        existing: Box<RunView>,
    },
    /// The key names a live schedule of the job, not a run (409).
    Schedule {
        /// The schedule's version.
        version: u64,
    },
    /// The request cannot run here (its `at` is outside the job's window,
    /// a record that is no schedule's).
    Spec(SpecProblem),
}

/// Enqueues `request` as the run `key` of `template`, over `current` (the
/// record as read) at the store's instant `now`: the record to write with
/// what was done, `None` to write nothing (the key names the same run).
pub fn enqueue_run(
    template: &JobTemplate,
    key: &ScheduleKey,
    current: Option<JobState>,
    request: &RunRequest,
    now: Timestamp,
) -> Result<(Enqueued, Option<JobState>), RunRefusal> {
    let before = match current {
        None => None,
        Some(state) => {
            let Some(data) = &state.schedule else {
                return Err(RunRefusal::Spec(SpecProblem {
                    field: String::new(),
                    message: format!("the record {:?} is not a schedule's", state.job),
                }));
            };
            if data.run.is_some() {
                let existing = run_view(&state).map_err(RunRefusal::Spec)?;
                if forget_at(&state).is_none_or(|t| t > now) {
                    let fields = differences(request, &existing, data);
                    return if fields.is_empty() {
                        let mut existing = existing;
                        existing.created = Some(false);
                        Ok((Enqueued::Existing(existing), None))
                    } else {
                        Err(RunRefusal::Differs {
                            fields,
                            existing: Box::new(existing),
                        })
                    };
                }
                // Past its retention, not yet swept: the key is free.
            } else if data.is_live() {
                return Err(RunRefusal::Schedule {
                    version: data.version,
                });
            }
            Some(state)
        }
    };
    let slot = request.at.unwrap_or_else(|| slot_of_now(now));
    let spec = ScheduleSpec {
        when: When::At(slot),
        timezone: "UTC".to_string(),
        start: None,
        end: None,
        payload: request.payload.clone(),
        labels: Default::default(),
        paused: false,
        // A keyed run is a waiting run from the start (its `at`, or now):
        // no jitter moves it, the template's or none.
        jitter: None,
    };
    let job = template
        .for_schedule(key, &spec)
        .map_err(RunRefusal::Spec)?;
    if !job.in_window(slot) {
        return Err(RunRefusal::Spec(SpecProblem {
            field: "at".to_string(),
            message: format!(
                "{slot} is outside the window of job {:?} (its start_at and end_at)",
                template.name.as_str()
            ),
        }));
    }
    let mut state = JobState::new(&job.record_name(), &job.spec_hash(), now, job.paused);
    // Every slot up to the cursor is taken: the schedule plans nothing,
    // and the waiting run below holds the slot.
    state.cursor = now.max(slot);
    let version = match &before {
        // The fence and the version go on from the run forgotten (or the
        // schedule deleted), so nothing from before is taken for this run.
        Some(old) => {
            state.fence = old.fence;
            old.schedule.as_ref().map_or(0, |d| d.version) + 1
        }
        None => 1,
    };
    state.pending.push(PendingRun {
        slot,
        attempt: 1,
        not_before: slot,
        retry_until: None,
        last_error: None,
        checkpoint: None,
        origin: Origin::Schedule,
        version: None,
    });
    let mut data = ScheduleData::live(version, &spec, now);
    data.run = Some(KeyedRun {
        retention_secs: template.key_retention.as_secs(),
    });
    state.schedule = Some(data);
    let mut view = run_view(&state).map_err(RunRefusal::Spec)?;
    view.created = Some(true);
    Ok((Enqueued::Created(view), Some(state)))
}

/// [`enqueue_run`], with the record to write made ready to store
/// ([`seal_keyed`](super::seal_keyed): its wake set): what a store's own
/// write of an enqueue calls, such as one inside an application's
/// transaction (`PgStore::enqueue_run_in`, `SqliteStore::enqueue_run_in`).
pub fn enqueue_sealed(
    template: &JobTemplate,
    key: &ScheduleKey,
    current: Option<JobState>,
    request: &RunRequest,
    now: Timestamp,
) -> Result<(Enqueued, Option<JobState>), RunRefusal> {
    let (enqueued, next) = enqueue_run(template, key, current, request, now)?;
    let Some(mut next) = next else {
        return Ok((enqueued, None));
    };
    super::seal_keyed(template, key, &mut next, now).map_err(RunRefusal::Spec)?;
    Ok((enqueued, Some(next)))
}

/// The fields of `request` that differ from the run's: the payload, and
/// the `at` when the request names one (a request without one means "now",
/// whenever it is sent again).
fn differences(request: &RunRequest, existing: &RunView, data: &ScheduleData) -> Vec<String> {
    let mut fields = Vec::new();
    let payload = data.payload(None);
    let stored = payload
        .as_deref()
        .and_then(|p| serde_json::value::RawValue::from_string(p.to_string()).ok());
    if !same_payload(request.payload.as_deref(), stored.as_deref()) {
        fields.push("payload".to_string());
    }
    if request.at.is_some_and(|at| at != existing.at) {
        fields.push("at".to_string());
    }
    fields
}

/// The run a keyed run's record holds, as a client polls it. An error for
/// a record that is not a keyed run's (or whose spec no longer reads).
pub fn run_view(state: &JobState) -> Result<RunView, SpecProblem> {
    let not_a_run = || SpecProblem {
        field: String::new(),
        message: format!("the record {:?} is not a keyed run's", state.job),
    };
    let data = state.schedule.as_ref().ok_or_else(not_a_run)?;
    data.run.as_ref().ok_or_else(not_a_run)?;
    let spec = data.spec()?.ok_or_else(not_a_run)?;
    let When::At(slot) = spec.when else {
        return Err(not_a_run());
    };
    let (job, key) = state.job.split_once('/').ok_or_else(not_a_run)?;
    // The slot id, as a run of the slot's spec names it (`SlotId::new`).
    let run = format!("{}@{}", state.job, format_instant(slot));
    let mut view = RunView {
        job: job.to_string(),
        key: key.to_string(),
        run,
        created: None,
        status: RunStatus::Pending,
        attempts: 0,
        last_error: None,
        enqueued: data.changed_at,
        at: slot,
        started: None,
        finished: None,
        next_attempt: None,
        fence: state.fence,
        remembered_until: forget_at(state),
        payload: spec.payload,
    };
    let last = state.history.iter().rev().find(|r| r.slot == slot);
    if let Some(lease) = state.leases.iter().find(|l| l.slot == slot) {
        view.status = RunStatus::Running;
        view.attempts = lease.attempt;
        view.started = Some(lease.claimed_at);
        view.fence = lease.fence;
        view.last_error = last.and_then(|r| failure(&r.outcome));
    } else if let Some(waiting) = state.pending.iter().find(|p| p.slot == slot) {
        let retried = waiting.attempt > 1 || waiting.origin == Origin::Redrive;
        view.status = if retried {
            RunStatus::Retrying
        } else {
            RunStatus::Pending
        };
        // A redrive starts the count again; the attempts made are the
        // history's.
        view.attempts = if waiting.origin == Origin::Redrive {
            last.map_or(0, |r| r.attempt)
        } else {
            waiting.attempt - 1
        };
        view.last_error = waiting.last_error.clone();
        view.next_attempt = Some(waiting.not_before);
        view.started = last.map(|r| r.started_at);
    } else if let Some(dead) = state.dead.iter().find(|d| d.slot == slot) {
        view.status = RunStatus::Dead;
        view.attempts = dead.attempts;
        view.last_error = Some(dead.last_error.clone());
        view.finished = Some(dead.died_at);
        view.fence = dead.fence;
        view.started = last.map(|r| r.started_at);
    } else if let Some(done) = state
        .history
        .iter()
        .chain(state.last_success.as_ref())
        .rev()
        .find(|r| r.slot == slot && r.outcome.succeeded())
    {
        view.status = RunStatus::Succeeded;
        view.attempts = done.attempt;
        view.started = Some(done.started_at);
        view.finished = Some(done.finished_at);
        view.fence = done.fence;
    }
    Ok(view)
}

fn failure(outcome: &RunOutcome) -> Option<String> {
    match outcome {
        RunOutcome::Failed { error, .. } => Some(error.clone()),
        RunOutcome::LeaseExpired => Some("the lease expired before the run reported".to_string()),
        RunOutcome::Superseded => Some("a newer claim superseded the run".to_string()),
        RunOutcome::Succeeded { .. } => None,
    }
}

/// When a keyed run's record may be forgotten: its retention after the run
/// ended. `None` while it has not ended (a lease or a waiting run holds
/// it), and for every record that is not a keyed run's.
pub fn forget_at(state: &JobState) -> Option<Timestamp> {
    let retention = state.schedule.as_ref()?.run.as_ref()?.retention_secs;
    if !state.leases.is_empty() || !state.pending.is_empty() {
        return None;
    }
    let data = state.schedule.as_ref()?;
    let ended = state
        .history
        .iter()
        .chain(state.last_success.as_ref())
        .map(|r| r.finished_at)
        .chain(state.dead.iter().map(|d| d.died_at))
        .fold(data.changed_at, Timestamp::max);
    Some(add(ended, Duration::from_secs(retention)))
}
