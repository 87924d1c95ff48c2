//! A manual run: the Worker claims the job's current slot, runs it and
//! records the outcome; the admin route reports what happened.

use std::rc::Rc;

use crate::{Jobs, Outcome, Platform, RunReport, run_lease};
use cronslot_core::coord::{
    Claim, CoordError, Coordinator, FailOutcome, Idle, Lease, SlotId, Trigger,
};
use cronslot_core::manifest::JobSpec;

use super::execute::coord_error;
use super::{Reply, TriggerDoc, TriggerKind};

/// What a manual run did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TriggerOutcome {
    /// The Worker cannot run this job (a `command` job, a function it does
    /// not have); nothing was claimed.
    CannotRun {
        /// Why, in a sentence.
        reason: String,
    },
    /// Nothing to run: paused, already ran, running, waiting for a retry…
    NotClaimed(Idle),
    /// The claim failed.
    ClaimFailed(CoordError),
    /// Ran, succeeded, recorded.
    Succeeded {
        /// The lease the run held.
        lease: Lease,
    },
    /// Ran, failed, recorded: retried later or dead.
    Failed {
        /// The lease the run held.
        lease: Lease,
        /// The job's error.
        error: String,
        /// Whether the error was permanent.
        permanent: bool,
        /// Retried at an instant, or dead.
        fate: FailOutcome,
    },
    /// Ran, but the outcome could not be recorded (the lease was
    /// superseded or expired, or the store failed).
    NotRecorded {
        /// The lease the run held.
        lease: Lease,
        /// Whether the job itself succeeded.
        succeeded: bool,
        /// Why the outcome was not recorded.
        error: String,
        /// Whether a later attempt to reach the store may work.
        transient: bool,
    },
}

/// Claims the job's current slot with `Trigger::Manual` as `owner` and runs
/// it with the runtime's run loop ([`run_lease`]): the same context, time
/// limit and recording as a scheduled run.
pub async fn trigger_run<C: Coordinator + 'static>(
    spec: &Rc<JobSpec>,
    coord: &Rc<C>,
    owner: &str,
    jobs: &Jobs,
    platform: &Rc<dyn Platform>,
) -> TriggerOutcome {
    let lease = match coord
        .claim(spec, platform.now(), Trigger::Manual, owner)
        .await
    {
        Ok(Claim::Claimed(lease)) => lease,
        Ok(Claim::Idle(idle)) => return TriggerOutcome::NotClaimed(idle),
        Err(e) => return TriggerOutcome::ClaimFailed(e),
    };
    let report = run_lease(coord, spec, lease.clone(), jobs, platform).await;
    trigger_outcome(lease, report)
}

/// What a manual run's report says, for the admin reply.
pub fn trigger_outcome(lease: Lease, report: RunReport) -> TriggerOutcome {
    let error = report
        .job_error
        .as_ref()
        .map(|e| e.message().to_string())
        .unwrap_or_default();
    let permanent = report.job_error.as_ref().is_some_and(|e| e.is_permanent());
    match report.outcome {
        Outcome::Succeeded => TriggerOutcome::Succeeded { lease },
        Outcome::Retrying { at } => TriggerOutcome::Failed {
            lease,
            error,
            permanent,
            fate: FailOutcome::RetryAt(at),
        },
        Outcome::Dead => TriggerOutcome::Failed {
            lease,
            error,
            permanent,
            fate: FailOutcome::Dead,
        },
        _ => TriggerOutcome::NotRecorded {
            lease,
            succeeded: report.job_error.is_none(),
            transient: report
                .store_error
                .as_ref()
                .is_some_and(CoordError::is_transient),
            error: report.record_error.unwrap_or_default(),
        },
    }
}

/// The reply to `POST {p}/jobs/{job}/trigger` (a [`TriggerDoc`]): 200 when
/// the run succeeded, 500 when it failed (recorded: retried or dead), 409
/// when nothing was claimed, 422 when the Worker cannot run the job, 503
/// (transient) or 500 when the store failed.
pub fn trigger_reply(spec: &JobSpec, outcome: &TriggerOutcome) -> Reply {
    let status = match outcome {
        TriggerOutcome::CannotRun { .. } => 422,
        TriggerOutcome::NotClaimed(_) => 409,
        TriggerOutcome::ClaimFailed(e) => store_status(spec, e),
        TriggerOutcome::Succeeded { .. } => 200,
        TriggerOutcome::Failed { .. } => 500,
        TriggerOutcome::NotRecorded { transient, .. } => {
            if *transient {
                503
            } else {
                500
            }
        }
    };
    Reply::json(status, &trigger_doc(spec, outcome))
}

/// What a manual run did as the admin route's [`TriggerDoc`] (also what
/// `cronslot trigger --format json` prints, for a run made anywhere).
pub fn trigger_doc(spec: &JobSpec, outcome: &TriggerOutcome) -> TriggerDoc {
    let job = spec.name.as_str();
    let mut doc = TriggerDoc {
        job: job.to_string(),
        outcome: TriggerKind::Succeeded,
        message: String::new(),
        slot: None,
        slot_id: None,
        attempt: None,
        fence: None,
        duration_ms: None,
        error: None,
        permanent: None,
        fate: None,
        idle: None,
    };
    let with_lease = |doc: &mut TriggerDoc, lease: &Lease| {
        doc.slot = Some(lease.slot);
        doc.slot_id = Some(SlotId::new(spec, lease.slot).to_string());
        doc.attempt = Some(lease.attempt);
        doc.fence = Some(lease.fence);
    };
    match outcome {
        TriggerOutcome::CannotRun { reason } => {
            doc.outcome = TriggerKind::CannotRun;
            doc.message =
                format!("job {job} cannot be triggered here: {reason}; nothing was claimed");
        }
        TriggerOutcome::NotClaimed(idle) => {
            doc.outcome = TriggerKind::NotClaimed;
            doc.message = idle_text(spec, idle);
            doc.idle = Some(idle.clone());
        }
        TriggerOutcome::ClaimFailed(e) => {
            doc.outcome = TriggerKind::ClaimFailed;
            doc.message = format!("claiming a slot of job {job} failed: {e}; nothing ran");
            doc.error = Some(e.to_string());
        }
        TriggerOutcome::Succeeded { lease } => {
            with_lease(&mut doc, lease);
            doc.message = format!(
                "{} succeeded (attempt {}, fence {})",
                SlotId::new(spec, lease.slot),
                lease.attempt,
                lease.fence
            );
        }
        TriggerOutcome::Failed {
            lease,
            error,
            permanent,
            fate,
        } => {
            with_lease(&mut doc, lease);
            doc.outcome = TriggerKind::Failed;
            let kind = if *permanent { "permanent" } else { "transient" };
            let next = match fate {
                FailOutcome::RetryAt(at) => {
                    format!("attempt {} is due at {at}", lease.attempt + 1)
                }
                FailOutcome::Dead => "the slot is now a dead letter".to_string(),
            };
            doc.message = format!(
                "{} failed ({kind}): {error}; {next}",
                SlotId::new(spec, lease.slot)
            );
            doc.error = Some(error.clone());
            doc.permanent = Some(*permanent);
            doc.fate = Some(fate.clone());
        }
        TriggerOutcome::NotRecorded {
            lease,
            succeeded,
            error,
            ..
        } => {
            with_lease(&mut doc, lease);
            doc.outcome = TriggerKind::NotRecorded;
            let how = if *succeeded { "succeeded" } else { "failed" };
            doc.message = format!(
                "{} {how}, but its outcome could not be recorded: {error}",
                SlotId::new(spec, lease.slot)
            );
            doc.error = Some(error.clone());
        }
    }
    doc
}

fn store_status(spec: &JobSpec, e: &CoordError) -> u16 {
    match coord_error(spec, "", e).status {
        503 => 503,
        _ => 500,
    }
}

fn idle_text(spec: &JobSpec, idle: &Idle) -> String {
    let job = spec.name.as_str();
    let id = |slot| SlotId::new(spec, slot);
    match idle {
        Idle::Paused => format!("job {job} is paused; nothing ran (resume it first)"),
        Idle::Busy { live } => format!(
            "job {job} already has {live} run{} in progress and its overlap policy ({}) allows no more; nothing ran",
            if *live == 1 { "" } else { "s" },
            spec.overlap
        ),
        Idle::InProgress { slot, fence } => {
            format!(
                "the current slot {} is running now (fence {fence}); nothing ran",
                id(*slot)
            )
        }
        Idle::RetryLater { slot, not_before } => format!(
            "the current slot {} waits for its retry at {not_before}; nothing ran",
            id(*slot)
        ),
        Idle::NotYetDue { slot } => format!("slot {} is not due yet; nothing ran", id(*slot)),
        Idle::NothingDue { next_slot, .. } => match next_slot {
            Some(t) => {
                format!("job {job} has no slot at or before now to run; its next slot is {t}")
            }
            None => format!("job {job} has no slot to run: its schedule has none left"),
        },
        Idle::AlreadyResolved { slot } => format!(
            "the current slot {} is already resolved (it ran, or was missed or skipped); nothing ran",
            id(*slot)
        ),
        // A reason newer than this crate.
        other => format!("job {job} has nothing to run now ({other:?}); nothing ran"),
    }
}
