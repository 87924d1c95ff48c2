//! The pure transitions: every policy of docs/design.md §5 as functions from
//! (spec, state, now, input) to a new state. No I/O, no clock: the caller
//! passes `now` and a random source, and a store writes the result
//! atomically (or the caller re-plans on conflict).
//!
//! The cursor is the heart of it: every slot at or before it has been taken
//! (claimed or given a fate), so due slots are simply those after it. Late
//! slots are never enumerated: they are counted (`Schedule::count_between`),
//! and only the few that may still run are found by walking back from now.

//!
//! The transitions are split by what starts them: `advance.rs` brings a
//! record up to now (every other transition starts with it), `claim.rs`
//! hands out a slot, `outcome.rs` takes what a run reports, `operator.rs`
//! serves an operator's requests, `schedule.rs` writes a dynamic job's
//! schedules, `wake.rs` says when a record next needs
//! a claim, and `record.rs` keeps the record itself in bounds. The answers
//! they give are here.

mod advance;
mod claim;
mod operator;
mod outcome;
mod record;
#[cfg(feature = "schedules")]
mod run;
#[cfg(feature = "schedules")]
mod schedule;
#[cfg(all(test, feature = "toml"))]
mod tests;
mod wake;

use std::fmt;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::state::Lease;
use crate::manifest::JobSpec;

pub use advance::advance;
pub use claim::claim;
pub use operator::{BackfillError, backfill, pause, redrive, resume};
pub use outcome::{checkpoint, complete, fail, heartbeat};
pub use record::{creation_instant, fit_record};
#[cfg(feature = "schedules")]
pub use run::{Enqueued, RunRefusal, enqueue_run, enqueue_sealed, forget_at, run_view};
#[cfg(feature = "schedules")]
pub use schedule::{
    Precondition, ScheduleRefusal, ScheduleWrite, delete_schedule, put_schedule, seal_keyed,
};
pub use wake::{carry_wake, migrated_wake, more_due, next_wake};

/// Most slots one backfill may queue (pending runs live in the state record).
pub const MAX_BACKFILL: usize = 1000;

/// Most pending runs a record holds.
pub const MAX_PENDING: usize = 1000;

/// What started a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Trigger {
    /// A frequent trigger serving every tick-mode job: run what is due.
    Tick,
    /// A dedicated trigger carrying its slot's scheduled time.
    Slot(#[serde(with = "crate::instant::text")] Timestamp),
    /// An operator's `trigger`: run the current slot now, even if late, once.
    Manual,
    /// A tick that planned the job from the manifest, due at this slot
    /// (its first in the tick's window): served like [`Trigger::Tick`].
    /// A job without a record yet gets one created just before the slot,
    /// since ticks create records only when a job first comes due.
    Planned(#[serde(with = "crate::instant::text")] Timestamp),
}

/// Why a claim found nothing to run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Idle {
    /// Nothing due; the next slot (if any) and the next retry (if any).
    NothingDue {
        /// The job's next slot, if it has one before its `end_at`.
        #[serde(with = "crate::instant::text::option")]
        next_slot: Option<Timestamp>,
        /// The earliest instant a waiting retry may start, if one waits.
        #[serde(with = "crate::instant::text::option")]
        next_retry: Option<Timestamp>,
    },
    /// The overlap policy allows no more live leases.
    Busy {
        /// The live leases now.
        live: usize,
    },
    /// The job is paused.
    Paused,
    /// A duplicate delivery of a slot that is already resolved.
    AlreadyResolved {
        /// The slot delivered.
        #[serde(with = "crate::instant::text")]
        slot: Timestamp,
    },
    /// A duplicate delivery of a slot that is running now.
    InProgress {
        /// The slot delivered.
        #[serde(with = "crate::instant::text")]
        slot: Timestamp,
        /// The fence of the run holding it.
        fence: u64,
    },
    /// The slot failed and waits for its retry time.
    RetryLater {
        /// The slot delivered.
        #[serde(with = "crate::instant::text")]
        slot: Timestamp,
        /// When its retry may start.
        #[serde(with = "crate::instant::text")]
        not_before: Timestamp,
    },
    /// A dedicated trigger for a slot that is not due yet.
    NotYetDue {
        /// The slot delivered.
        #[serde(with = "crate::instant::text")]
        slot: Timestamp,
    },
    /// The claim's spec is of another version of the schedule than the one
    /// in force (a change or a delete landed after it was read): nothing
    /// started. Read the schedule again; its record's wake already names
    /// what the new version has due. (Feature `schedules`: no other build
    /// holds schedules.)
    #[cfg(feature = "schedules")]
    ScheduleChanged {
        /// The version in force (a tombstone's, once deleted); `None`: the
        /// schedule has no record.
        current: Option<u64>,
    },
}

/// A trigger that cannot be honoured at all (not a transient condition).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum TriggerError {
    /// The time is not a slot of the job's schedule.
    NotASlot {
        /// The instant the trigger carried.
        #[serde(with = "crate::instant::text")]
        slot: Timestamp,
    },
}

impl fmt::Display for TriggerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TriggerError::NotASlot { slot } => {
                write!(f, "{slot} is not a slot of the job's schedule")
            }
        }
    }
}

impl std::error::Error for TriggerError {}

/// The result of a claim.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Claim {
    /// A slot to run now: run it, then complete or fail it with the lease's
    /// fence.
    Claimed(Lease),
    /// Nothing to run now, and why.
    Idle(Idle),
}

/// Why a completion, failure, heartbeat or checkpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No live lease carries this fence: a newer claim superseded it, or it
    /// expired and its slot was handed on.
    Superseded {
        /// The fence the caller gave.
        fence: u64,
        /// The job's latest fence.
        latest: u64,
    },
    /// The lease is past its expiry (plus skew): the run must stop.
    Expired {
        /// The fence the caller gave.
        fence: u64,
        /// When its lease expired.
        expired_at: Timestamp,
    },
    /// A result or checkpoint larger than the record allows.
    TooLarge {
        /// What was too large (`"the result"`, `"the checkpoint"`).
        what: &'static str,
        /// Its size.
        bytes: usize,
        /// The most allowed.
        max: usize,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Superseded { fence, latest } => write!(
                f,
                "fence {fence} is superseded (latest fence {latest}): this run no longer holds its slot"
            ),
            Refusal::Expired { fence, expired_at } => {
                write!(f, "the lease of fence {fence} expired at {expired_at}")
            }
            Refusal::TooLarge { what, bytes, max } => {
                write!(f, "{what} is {bytes} bytes, more than the {max} allowed")
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// What happened to a failed run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FailOutcome {
    /// The slot will be retried, not before this instant.
    RetryAt(#[serde(with = "crate::instant::text")] Timestamp),
    /// The slot is a dead letter (permanent error, attempts used up,
    /// at-most-once delivery, no retry could start before the next slot, or
    /// too many runs pending).
    Dead,
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    let d = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

fn sub(t: Timestamp, d: Duration) -> Timestamp {
    let d = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    t.checked_sub(d).unwrap_or(Timestamp::MIN)
}

/// The instant just before `t`, so that `(.., before(t)]` excludes `t`.
fn before(t: Timestamp) -> Timestamp {
    t.checked_sub(SignedDuration::from_nanos(1))
        .unwrap_or(Timestamp::MIN)
}

fn lease_expired(spec: &JobSpec, lease: &Lease, now: Timestamp) -> bool {
    now > add(lease.expires_at, spec.skew_margin)
}

fn add_nanos(t: Timestamp) -> Timestamp {
    t.checked_add(SignedDuration::from_nanos(1))
        .unwrap_or(Timestamp::MAX)
}
