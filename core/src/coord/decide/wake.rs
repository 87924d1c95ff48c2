//! A record's wake ([`JobState::wake_at`]): when a job next needs a claim
//! its schedule would not bring, which stores index so that a tick need
//! not read every record. Apart from the transitions because stores and
//! ticks read it; nothing is decided on it.

use std::time::Duration;

use jiff::Timestamp;

use super::add;
use crate::coord::state::JobState;
use crate::manifest::JobSpec;

/// A wake for a record written before stores kept wakes, given by the
/// store's migration (its bounded repair: only records with waiting runs or
/// live leases are looked at, once). Without the job's spec it takes the
/// earliest time either could need: a waiting run's `not_before` (none
/// while paused) and a lease's expiry. That is never later than
/// [`next_wake`]; the claim at it writes the exact wake.
pub fn migrated_wake(state: &JobState) -> Option<Timestamp> {
    let leases = state.leases.iter().map(|l| l.expires_at);
    let waiting = state
        .pending
        .iter()
        // Paused, only the runs of a version before the pause wait (they
        // run: `claim`).
        .filter(|p| !state.paused || p.version.is_some())
        .map(|p| p.not_before);
    leases.chain(waiting).min()
}

/// When the job next needs a claim that its schedule alone would not bring
/// ([`JobState::wake_at`]). A tick finds the schedule's slots from the
/// manifest, without reading records; everything else that makes a job
/// due lives in its record and is summed up here, so that stores can index
/// it. The earliest of:
/// - a live lease's expiry, once the skew margin has passed too: the run
///   crashed or hung, and its slot is retried;
/// - a waiting run's `not_before` (not while paused): a retry, a backfill,
///   a redrive, a manual trigger of a past slot;
/// - the next slot after the cursor, when it is already due (the caller's
///   `now`, plus the skew margin, as another server's clock may be ahead)
///   or a lease is live: a slot that overlap or catch-up held back.
///
/// Waking early is harmless (a claim that finds nothing costs a read);
/// waking late is not, so every bound errs early.
///
/// A wake after the job's next scheduled slot is dropped: the tick plans
/// that slot from the manifest anyway, and the claim there judges the
/// record afresh (a record it changes gets a new wake; one it leaves alone
/// is planned again at the following slot). So a job whose period is
/// shorter than its lease never touches the index, and the index costs
/// nothing for frequent jobs. The slot must be beyond the skew margin:
/// another server's tick, its clock that far ahead, may have planned past
/// it already.
pub fn next_wake(spec: &JobSpec, state: &JobState, now: Timestamp) -> Option<Timestamp> {
    // A build without schedules creates no schedule's record
    // (`CoordError::NoSchedule`), so it never computes one's wake.
    #[cfg(feature = "schedules")]
    if spec.key.is_some() {
        return schedule_wake(spec, state);
    }
    // A slot's wake is its start: its instant, or its jittered start.
    let held_back = spec
        .schedule
        .next_after(state.cursor)
        .filter(|s| spec.end_at.is_none_or(|e| *s < e))
        .map(|s| spec.start_of(s))
        .filter(|start| !state.leases.is_empty() || *start <= add(now, spec.skew_margin));
    let wake = owed(spec, state).chain(held_back).min()?;
    let planned_first = spec
        .next_start_after(add(now, spec.skew_margin))
        .filter(|(s, _)| spec.in_window(*s))
        .is_some_and(|(_, start)| start <= wake);
    (!planned_first).then_some(wake)
}

/// The wake of a schedule's record (a dynamic job's, `job/key`): no
/// manifest plans its slots, so its next slot is its wake too, and a tick
/// finds it through the index alone. The earliest of a live lease's expiry
/// (past the skew margin), a waiting run's `not_before` and the next slot
/// after the cursor inside the window (none while paused). A tombstone
/// starts nothing and has none: a run still in flight finishes without
/// a tick.
#[cfg(feature = "schedules")]
fn schedule_wake(spec: &JobSpec, state: &JobState) -> Option<Timestamp> {
    if !state.schedule.as_ref().is_some_and(|d| d.is_live()) {
        return None;
    }
    let from = match spec.start_at {
        Some(start) => state.cursor.max(
            start
                .checked_sub(jiff::SignedDuration::from_nanos(1))
                .unwrap_or(start),
        ),
        None => state.cursor,
    };
    let next = spec
        .schedule
        .next_after(from)
        .filter(|s| !state.paused && spec.end_at.is_none_or(|e| *s < e))
        .map(|s| spec.start_of(s));
    // A keyed run that ended wakes once more, when its key is forgotten:
    // the tick's read of it then deletes it (`Schedules::schedule_for_claim`),
    // so the store's wake index is what sweeps keys, in the tick's batches.
    owed(spec, state)
        .chain(next)
        .min()
        .or_else(|| super::forget_at(state))
}

/// What a record owes whatever its schedule: each live lease's expiry once
/// the skew margin has passed (the run crashed or hung, and its slot is
/// retried), and each waiting run's `not_before` (not while paused, but
/// for the runs of a version before the pause: they run, `claim`).
fn owed<'a>(spec: &'a JobSpec, state: &'a JobState) -> impl Iterator<Item = Timestamp> + 'a {
    let expiries = state
        .leases
        .iter()
        .map(|l| add(add(l.expires_at, spec.skew_margin), WAKE_AFTER_EXPIRY));
    let waiting = state
        .pending
        .iter()
        .filter(|p| !state.paused || p.version.is_some())
        .map(|p| p.not_before);
    expiries.chain(waiting)
}

/// The wake to write, given the one stored (`stored`) and the one
/// [`next_wake`] computed for the record about to be written. A stored wake
/// at a slot the record has not taken yet is kept (unless an earlier one
/// replaces it): it was written by a claim that found the job busy at that
/// slot, after which the tick's mark moved on. The write that ends the
/// lease judges "is the next slot due" by its own clock reading, which may
/// be from before the slot though the write lands after it; dropping the
/// wake then would leave the slot to nothing. Once the slot is taken (the
/// cursor passes it), the wake goes, and so it does when the job is
/// paused: a paused job's slots start nothing, so a tick woken for one
/// would find only that (what a paused record still owes, `computed`
/// holds).
pub fn carry_wake(
    spec: &JobSpec,
    stored: Option<Timestamp>,
    next: &JobState,
    computed: Option<Timestamp>,
) -> Option<Timestamp> {
    match stored {
        Some(s)
            if !next.paused
                && spec
                    .slot_starting_at(s)
                    .is_some_and(|slot| slot > next.cursor)
                && computed.is_none_or(|c| c > s) =>
        {
            Some(s)
        }
        _ => computed,
    }
}

/// Whether another claim of the job may find something to run at `now`,
/// judged from the record the last claim or outcome wrote: a waiting run
/// whose time has come, or a slot due after the cursor. Lets a caller that
/// remembers its last write skip the claim that would only find nothing.
pub fn more_due(spec: &JobSpec, state: &JobState, now: Timestamp) -> bool {
    if state.paused {
        return false;
    }
    let retry = state.pending.iter().any(|p| p.not_before <= now);
    let slot = spec
        .schedule
        .next_after(state.cursor)
        .is_some_and(|s| spec.start_of(s) <= now && spec.in_window(s));
    retry || slot
}

/// A lease counts as expired strictly after its expiry plus the skew
/// margin; its wake comes this much later, so that a claim at the wake
/// instant finds it expired.
const WAKE_AFTER_EXPIRY: Duration = Duration::from_millis(1);
