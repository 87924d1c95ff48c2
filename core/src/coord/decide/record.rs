//! The record itself: the instant it is created at, and keeping it within
//! [`MAX_RECORD_BYTES`] whatever its runs leave in it.

use jiff::Timestamp;

use super::{Trigger, before};
use crate::coord::state::{JobState, MAX_RECORD_BYTES, encode_state, truncate};

/// When a job's record is first written because of a dedicated trigger for
/// `slot`, or a tick that planned it due at `slot`, it is created just
/// before that slot: the trigger is evidence that the job existed then, and
/// the slot must not be mistaken for one from before the job's creation.
/// Otherwise a record starts at `now`.
pub fn creation_instant(now: Timestamp, trigger: Trigger) -> Timestamp {
    match trigger {
        Trigger::Slot(slot) | Trigger::Planned(slot) if slot <= now => before(slot),
        _ => now,
    }
}

/// Keeps an encoded record within [`MAX_RECORD_BYTES`], shedding what can be
/// shed, oldest first: dead letters' checkpoints and long errors, then
/// pending runs' checkpoints, then the oldest dead letters (still counted).
/// If it still does not fit, the job is paused with a reason for `status` to
/// report: a store never fails to write a record because it grew.
/// Returns whether anything was shed.
///
/// First, a dynamic job's schedule forgets the payloads of earlier
/// versions that no lease or waiting run belongs to any more.
pub fn fit_record(state: &mut JobState) -> bool {
    #[cfg(feature = "schedules")]
    super::schedule::forget_finished_versions(state);
    let mut size = encode_state(state).len();
    if size <= MAX_RECORD_BYTES {
        return false;
    }
    // Sizes are tracked by subtracting what is removed (raw lengths: never
    // more than what the encoding saves), and checked exactly at the end.
    for d in &mut state.dead {
        size -= d.checkpoint.take().map_or(0, |c| c.len());
        let short = truncate(&d.last_error, 200);
        size -= d.last_error.len().saturating_sub(short.len());
        d.last_error = short;
    }
    for p in &mut state.pending {
        if size <= MAX_RECORD_BYTES {
            break;
        }
        size -= p.checkpoint.take().map_or(0, |c| c.len());
    }
    let mut dropped = 0;
    for d in &state.dead {
        if size <= MAX_RECORD_BYTES {
            break;
        }
        size -= d.last_error.len() + d.checkpoint.as_ref().map_or(0, String::len);
        dropped += 1;
    }
    state.dead.drain(..dropped);
    state.counters.dead_dropped += dropped as u64;
    if encode_state(state).len() > MAX_RECORD_BYTES {
        state.history.clear();
        for p in &mut state.pending {
            p.last_error = None;
        }
    }
    if encode_state(state).len() > MAX_RECORD_BYTES && !state.paused {
        state.paused = true;
        state.paused_reason = Some(format!(
            "paused by cronslot: the job's record outgrew {MAX_RECORD_BYTES} bytes \
             ({} pending runs, {} live leases); resolve them, then resume",
            state.pending.len(),
            state.leases.len()
        ));
    }
    true
}
