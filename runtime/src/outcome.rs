//! One vocabulary for how a run ended and why a claim ran nothing: every
//! log line, metric and summary on every platform uses these names.

use cronslot_core::coord::{Idle, format_instant};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

/// How one run ended, as far as the store is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The job succeeded and its success was recorded: the slot is done.
    Succeeded,
    /// The job failed and its retry was recorded: another attempt of the
    /// same slot may start at `at`.
    Retrying {
        /// The retry's not-before instant.
        at: Timestamp,
    },
    /// The job failed for good (a permanent error, or its last attempt):
    /// the slot is a dead letter.
    Dead,
    /// The run no longer held its slot (superseded by a newer claim, or
    /// its lease expired and the store refused it): nothing was recorded,
    /// and whoever holds the slot now decides its fate.
    LeaseLost,
    /// The outcome could not be written: the store failed until the lease
    /// (or the platform's deadline) ran out. The lease's expiry makes the
    /// attempt a failure, retried like any other.
    Unrecorded,
}

impl Outcome {
    /// The outcome's name in logs, metrics and summaries: `succeeded`,
    /// `retrying`, `dead`, `lease_lost` or `unrecorded`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Retrying { .. } => "retrying",
            Outcome::Dead => "dead",
            Outcome::LeaseLost => "lease_lost",
            Outcome::Unrecorded => "unrecorded",
        }
    }

    /// Every name [`Outcome::as_str`] can return.
    pub const NAMES: [&'static str; 5] =
        ["succeeded", "retrying", "dead", "lease_lost", "unrecorded"];
}

/// The details of why a claim ran nothing, as log lines and summaries
/// write them (see [`idle_detail`]): the instants as text
/// ([`format_instant`]), `null` for [`Idle::Paused`].
///
/// Each variant's fields are in alphabetical order, the order of the keys
/// of the JSON object these details were first built as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum IdleDetail {
    /// `nothing_due`.
    NothingDue {
        /// The earliest instant a waiting retry may start, if one waits.
        next_retry: Option<String>,
        /// The job's next slot, if it has one.
        next_slot: Option<String>,
    },
    /// `busy`.
    Busy {
        /// The live leases now.
        live: usize,
    },
    /// `paused`: no details (`null`).
    Paused,
    /// `already_resolved` and `not_yet_due`.
    Slot {
        /// The slot delivered.
        slot: String,
    },
    /// `in_progress`.
    InProgress {
        /// The fence of the run holding the slot.
        fence: u64,
        /// The slot delivered.
        slot: String,
    },
    /// `retry_later`.
    RetryLater {
        /// When the slot's retry may start.
        not_before: String,
        /// The slot delivered.
        slot: String,
    },
    /// `schedule_changed`: the schedule's version in force (`null`: no
    /// record).
    #[cfg(feature = "schedules")]
    ScheduleChanged {
        /// The version in force.
        current: Option<u64>,
    },
    /// `other`: a reason newer than this crate, as its debug text.
    Other {
        /// The reason's debug text.
        idle: String,
    },
}

/// Why a claim ran nothing, as a name and its details, for log lines and
/// summaries: `nothing_due`, `busy`, `paused`, `already_resolved`,
/// `in_progress`, `retry_later`, `not_yet_due` or `schedule_changed`
/// (`other`, with the
/// reason's debug text, for a reason newer than this crate).
pub fn idle_detail(idle: &Idle) -> (&'static str, IdleDetail) {
    let at = |t: &Timestamp| format_instant(*t);
    match idle {
        Idle::NothingDue {
            next_slot,
            next_retry,
        } => (
            "nothing_due",
            IdleDetail::NothingDue {
                next_retry: next_retry.as_ref().map(at),
                next_slot: next_slot.as_ref().map(at),
            },
        ),
        Idle::Busy { live } => ("busy", IdleDetail::Busy { live: *live }),
        Idle::Paused => ("paused", IdleDetail::Paused),
        Idle::AlreadyResolved { slot } => ("already_resolved", IdleDetail::Slot { slot: at(slot) }),
        Idle::InProgress { slot, fence } => (
            "in_progress",
            IdleDetail::InProgress {
                fence: *fence,
                slot: at(slot),
            },
        ),
        Idle::RetryLater { slot, not_before } => (
            "retry_later",
            IdleDetail::RetryLater {
                not_before: at(not_before),
                slot: at(slot),
            },
        ),
        Idle::NotYetDue { slot } => ("not_yet_due", IdleDetail::Slot { slot: at(slot) }),
        // Only where schedules are served (a Worker, which serves none,
        // names it `other`).
        #[cfg(feature = "schedules")]
        Idle::ScheduleChanged { current } => (
            "schedule_changed",
            IdleDetail::ScheduleChanged { current: *current },
        ),
        // A reason added to the core after this was written: named
        // generically, its details kept as text.
        other => (
            "other",
            IdleDetail::Other {
                idle: format!("{other:?}"),
            },
        ),
    }
}

/// [`idle_detail`] with the details as a JSON value.
pub fn idle_reason(idle: &Idle) -> (&'static str, Value) {
    let (reason, detail) = idle_detail(idle);
    (reason, serde_json::to_value(detail).unwrap_or(Value::Null))
}
