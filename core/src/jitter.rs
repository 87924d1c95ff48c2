//! Deterministic jitter (docs/design.md §13): a job or a schedule with
//! `jitter = "10m"` starts each slot at a point within the window after its
//! nominal instant, chosen by a hash of the slot's identity, so that the
//! 09:00 of a hundred thousand tenants is spread over ten minutes instead
//! of landing in one.
//!
//! The slot stays what it was: its id is its nominal instant, and every
//! rule stated on slots (which exist, DST, catch-up, the starting
//! deadline, retries before the next slot) is stated on nominal instants.
//! Only *when a slot may start* moves: [`JobSpec::start_of`]. Every node,
//! every restart and every platform computes the same point: it is a pure
//! function of the record's name, the nominal instant and the schedule.
//!
//! The window of a slot is the jitter, cut to the time until the next
//! nominal slot, so that slots still start in their order: a slot's start
//! is before the next slot's instant, which is no later than that slot's
//! start. Two things follow that keep the decisions cheap: of the slots at
//! or before an instant, only the newest can have not yet started
//! ([`JobSpec::due_until`]), and the slot that starts at an instant is the
//! newest at or before it ([`JobSpec::slot_starting_at`]).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::manifest::JobSpec;
use crate::manifest::hash::fnv1a64;

/// The longest jitter a job or a schedule may declare.
pub const MAX_JITTER: Duration = Duration::from_secs(24 * 3600);

/// Where in a window of `window` (whole seconds) the slot of record
/// `record` at `slot` starts: FNV-1a 64 of `"{record}@{unix seconds}"`,
/// modulo the window's seconds. Whole seconds, as every slot is.
pub fn jitter_offset(record: &str, slot: Timestamp, window: Duration) -> Duration {
    let seconds = window.as_secs();
    if seconds == 0 {
        return Duration::ZERO;
    }
    let identity = format!("{record}@{}", slot.as_second());
    Duration::from_secs(fnv1a64(identity.as_bytes()) % seconds)
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

impl JobSpec {
    /// The window the slot at `slot` may start in: the jitter, cut to the
    /// time until the next nominal slot. Zero without jitter.
    pub fn jitter_window(&self, slot: Timestamp) -> Duration {
        if self.jitter.is_zero() {
            return Duration::ZERO;
        }
        match self.schedule.next_after(slot) {
            Some(next) => {
                let gap = next.duration_since(slot).unsigned_abs();
                self.jitter.min(gap)
            }
            None => self.jitter,
        }
    }

    /// When the slot at `slot` (a nominal instant) may start: `slot`
    /// itself without jitter, else a point of its window chosen by the hash
    /// of its identity ([`jitter_offset`]).
    pub fn start_of(&self, slot: Timestamp) -> Timestamp {
        if self.jitter.is_zero() {
            return slot;
        }
        let window = self.jitter_window(slot);
        plus(slot, jitter_offset(&self.record_name(), slot, window))
    }

    /// The instant up to which the slots have started at `now`: every
    /// nominal slot at or before it has reached its start, none after it
    /// that is at or before `now` has. `now` without jitter. Only the
    /// newest slot at or before `now` can be waiting for its start (the
    /// window ends before the next slot), so this is one search.
    pub fn due_until(&self, now: Timestamp) -> Timestamp {
        if self.jitter.is_zero() {
            return now;
        }
        match self.newest_at_or_before(now) {
            Some(newest) if self.start_of(newest) > now => newest
                .checked_sub(SignedDuration::from_nanos(1))
                .unwrap_or(newest),
            _ => now,
        }
    }

    /// The nominal slot that starts at `t`, if one does: `t` itself when it
    /// is a slot and the job has no jitter.
    pub fn slot_starting_at(&self, t: Timestamp) -> Option<Timestamp> {
        if self.jitter.is_zero() {
            return self.schedule.is_slot(t).then_some(t);
        }
        let newest = self.newest_at_or_before(t)?;
        (self.start_of(newest) == t).then_some(newest)
    }

    /// The newest slot at or before `t`: the only one that can be
    /// waiting for its start at `t` (its window ends before the next).
    fn newest_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        t.checked_add(SignedDuration::from_nanos(1))
            .ok()
            .and_then(|after| self.schedule.prev_before(after))
    }

    /// The first slot that starts after `t`, with its start: the newest
    /// slot at or before `t` when it has not started yet, else the next
    /// one.
    pub fn next_start_after(&self, t: Timestamp) -> Option<(Timestamp, Timestamp)> {
        if !self.jitter.is_zero() {
            if let Some(slot) = self.newest_at_or_before(t) {
                let start = self.start_of(slot);
                if start > t {
                    return Some((slot, start));
                }
            }
        }
        let slot = self.schedule.next_after(t)?;
        Some((slot, self.start_of(slot)))
    }
}
