//! One vocabulary for how a run ended and why a claim ran nothing: every
//! log line, metric and summary on every platform uses these names.

use cronslot_core::coord::{Idle, format_instant};
use jiff::Timestamp;
use serde_json::{Value, json};

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

/// Why a claim ran nothing, as a name and its details, for log lines and
/// summaries: `nothing_due`, `busy`, `paused`, `already_resolved`,
/// `in_progress`, `retry_later` or `not_yet_due` (`other`, with the
/// reason's debug text, for a reason newer than this crate).
pub fn idle_reason(idle: &Idle) -> (&'static str, Value) {
    let at = |t: &Timestamp| Value::from(format_instant(*t));
    match idle {
        Idle::NothingDue {
            next_slot,
            next_retry,
        } => (
            "nothing_due",
            json!({"next_slot": next_slot.as_ref().map(at), "next_retry": next_retry.as_ref().map(at)}),
        ),
        Idle::Busy { live } => ("busy", json!({"live": live})),
        Idle::Paused => ("paused", Value::Null),
        Idle::AlreadyResolved { slot } => ("already_resolved", json!({"slot": at(slot)})),
        Idle::InProgress { slot, fence } => {
            ("in_progress", json!({"slot": at(slot), "fence": fence}))
        }
        Idle::RetryLater { slot, not_before } => (
            "retry_later",
            json!({"slot": at(slot), "not_before": at(not_before)}),
        ),
        Idle::NotYetDue { slot } => ("not_yet_due", json!({"slot": at(slot)})),
        // A reason added to the core after this was written: named
        // generically, its details kept as text.
        other => ("other", json!({"idle": format!("{other:?}")})),
    }
}
