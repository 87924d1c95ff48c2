//! A job's health: has it succeeded within its staleness bound?
//!
//! One rule for every place that answers the question: `cronslot status`,
//! the Cloudflare Worker's `health` route and its Prometheus `stale` gauge.
//! Pure: the record, the spec and `now` come in, a verdict goes out.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::coord::JobState;
use crate::manifest::JobSpec;

/// A job's health at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Health {
    /// A success within the staleness bound.
    Ok,
    /// No success within the bound (since the last one, or since the first
    /// slot for a job that never succeeded).
    Stale,
    /// No success yet, and its first slot plus the bound has not passed.
    NeverSucceeded,
    /// Paused jobs are not checked: their silence is intended.
    Paused,
    /// No bound: fewer than two slots remain (the job ended or never fires).
    NoBound,
}

impl Health {
    /// The verdict as written in machine-readable output (`"ok"`,
    /// `"stale"`, `"never_succeeded"`, `"paused"`, `"no_bound"`), the same
    /// as its serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Ok => "ok",
            Health::Stale => "stale",
            Health::NeverSucceeded => "never_succeeded",
            Health::Paused => "paused",
            Health::NoBound => "no_bound",
        }
    }
}

/// The verdict with what it was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staleness {
    /// The verdict.
    pub health: Health,
    /// The bound ([`JobSpec::stale_after_at`]); `None`: the job has none.
    pub bound: Option<Duration>,
    /// When the job is (or was) stale without a success; `None`: never.
    pub stale_at: Option<Timestamp>,
}

impl Staleness {
    /// True when the verdict is [`Health::Stale`].
    pub fn is_stale(&self) -> bool {
        self.health == Health::Stale
    }
}

/// The job's next slot strictly after `after` inside its active window.
pub fn next_slot(spec: &JobSpec, after: Timestamp) -> Option<Timestamp> {
    let mut from = after;
    if let Some(start) = spec.start_at {
        if start > after {
            from = start
                .checked_sub(SignedDuration::from_nanos(1))
                .unwrap_or(start);
        }
    }
    spec.schedule
        .next_after(from)
        .filter(|s| spec.end_at.is_none_or(|end| *s < end))
}

/// How long a slot may wait to be taken before its job counts as late:
/// a minute's tick, plus the job's skew margin.
pub const LATE_AFTER: Duration = Duration::from_secs(60);

/// Since when the job is late: a slot of it is due and unclaimed, and no
/// slot has been claimed since the first one after its newest claimed (or
/// dead, or waiting) slot came due, [`LATE_AFTER`] plus the skew margin
/// ago. `None` when the job is paused or not late.
///
/// `state` is the record as `Coordinator::status` returns it, brought up
/// to `now`: under `catch_up = "latest"` or `"all"` a due slot stays to be
/// taken, so an untaken slot at or before `now` means nothing is claiming
/// (the scheduler, the tick or every runner is down). Staleness says a job
/// has not *succeeded* for too long; lateness says nothing has *claimed*
/// its slots. Under `catch_up = "none"`, or past `starting_deadline`, the
/// status has already given such slots their fate (missed), and the job
/// shows stale in time instead.
pub fn late_since(spec: &JobSpec, state: &JobState, now: Timestamp) -> Option<Timestamp> {
    if state.paused {
        return None;
    }
    let untaken = next_slot(spec, state.cursor)?;
    // Not yet at its start (its instant, or its jittered start).
    if spec.start_of(untaken) > now {
        return None;
    }
    let newest_taken = state
        .history
        .iter()
        .map(|r| r.slot)
        .chain(state.leases.iter().map(|l| l.slot))
        .chain(state.pending.iter().map(|p| p.slot))
        .chain(state.dead.iter().map(|d| d.slot))
        .max()
        .unwrap_or(state.created_at)
        .max(state.created_at);
    let since = next_slot(spec, newest_taken)?.min(untaken);
    let grace = LATE_AFTER.saturating_add(spec.skew_margin);
    (add_std(spec.start_of(since), grace) <= now).then_some(since)
}

fn add_std(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// The job's health at `now` from its record (as `Coordinator::status`
/// returns it). Stale means: not paused, a bound exists, and `now` is past
/// the last success plus the bound — or, for a job that never succeeded,
/// past its first slot after its creation plus the bound (so a new job is
/// "never succeeded", not stale, until that slot has had its chance).
pub fn assess(spec: &JobSpec, state: &JobState, now: Timestamp) -> Staleness {
    let bound = spec.stale_after_at(now);
    let since = match &state.last_success {
        Some(s) => Some(s.finished_at),
        None => next_slot(spec, state.created_at),
    };
    let stale_at = match (bound, since) {
        (Some(b), Some(since)) => Some(add_std(since, b)),
        _ => None,
    };
    let health = if state.paused {
        Health::Paused
    } else if bound.is_none() {
        Health::NoBound
    } else if stale_at.is_some_and(|at| now > at) {
        Health::Stale
    } else if state.last_success.is_none() {
        Health::NeverSucceeded
    } else {
        Health::Ok
    };
    Staleness {
        health,
        bound,
        stale_at,
    }
}
