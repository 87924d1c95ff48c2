//! Bringing a record up to `now` ([`advance`]): the cursor, the fates of
//! the slots it passes (missed, skipped, with their reasons and spans),
//! leases that expired and retry windows that closed. Every other
//! transition starts here, so that what it decides sees the present.

use std::time::Duration;

use jiff::Timestamp;

use super::outcome::{bury, record_history, retry_or_bury};
use super::{add, add_nanos, before, lease_expired, sub};
use crate::coord::rng::RandomSource;
use crate::coord::state::{
    DeadLetter, JobState, Lease, MAX_ERROR_BYTES, MissReason, PendingRun, RunOutcome, RunRecord,
    ScheduleChange, SkipReason, truncate,
};
use crate::manifest::{CatchUp, JobSpec, Overlap};

/// How far after its time a slot still counts as on time under
/// `catch_up = "none"`: one tick (a minute) plus the skew margin.
const ON_TIME: Duration = Duration::from_secs(60);

/// Moves the cursor forward to `to`, counting the slots passed that a gap
/// skipped (DST under `dst_gap = "skip"`, or a clock change).
pub(super) fn move_cursor(spec: &JobSpec, state: &mut JobState, to: Timestamp) {
    if to <= state.cursor {
        return;
    }
    for skip in spec.schedule.gap_skips(state.cursor, to) {
        let reason: MissReason = skip.cause.into();
        state.counters.add_missed(reason, 1);
        note_fate(
            spec,
            state,
            MISSED,
            reason.as_str(),
            (skip.transition, skip.transition),
            1,
        );
    }
    state.cursor = to;
}

/// [`FateSpan::fate`](crate::coord::FateSpan) of a slot that did not run.
const MISSED: &str = "missed";
/// [`FateSpan::fate`](crate::coord::FateSpan) of a slot that was not due to run.
const SKIPPED: &str = "skipped";

/// Notes the `n` slots in `(after, until]` as one span of `fate` for
/// `reason` (`n` counted by the caller; nothing when it is 0).
fn note_span(
    spec: &JobSpec,
    state: &mut JobState,
    fate: &str,
    reason: &str,
    after: Timestamp,
    until: Timestamp,
    n: u64,
) {
    if n == 0 {
        return;
    }
    let schedule = &spec.schedule;
    let (Some(first), Some(last)) = (
        schedule.next_after(after),
        schedule.prev_before(add_nanos(until)),
    ) else {
        return;
    };
    note_fate(spec, state, fate, reason, (first, last), n);
}

/// Notes a span of `n` slots, joined to the newest span when no slot of
/// the schedule lies between them (so runs in between keep spans apart).
fn note_fate(
    spec: &JobSpec,
    state: &mut JobState,
    fate: &str,
    reason: &str,
    (first, last): (Timestamp, Timestamp),
    n: u64,
) {
    let joins = state.fates.last().is_some_and(|newest| {
        spec.schedule
            .next_after(newest.last)
            .is_none_or(|s| s >= first)
    });
    state.note_fate(fate, reason, (first, last), n, joins);
}

/// Notes the `n` slots after the cursor up to `until` as skipped.
fn note_skipped(
    spec: &JobSpec,
    state: &mut JobState,
    reason: SkipReason,
    until: Timestamp,
    n: u64,
) {
    let after = state.cursor;
    note_span(spec, state, SKIPPED, reason.as_str(), after, until, n);
}

/// Brings a state up to `now`: notes a schedule change, expires leases,
/// closes retry windows, and gives every due slot that will not run its fate.
/// Slots that may still run stay after the cursor, to be claimed.
///
/// `keep_newest` keeps the newest due slot runnable whatever the catch-up
/// policy says (an operator's manual trigger).
pub fn advance(
    spec: &JobSpec,
    state: &mut JobState,
    now: Timestamp,
    rng: &mut dyn RandomSource,
    keep_newest: bool,
) {
    let hash = spec.spec_hash();
    if state.spec_hash != hash {
        // The cursor stays: slots up to it are resolved under the old
        // schedule, slots after it are computed from the new one.
        state.last_schedule_change = Some(ScheduleChange {
            at: now,
            from_hash: std::mem::take(&mut state.spec_hash),
            to_hash: hash.clone(),
        });
        state.spec_hash = hash;
    }

    expire_leases(spec, state, now, rng);
    close_retry_windows(state, now);

    // The slots that have reached their start (all of those at or before
    // `now` without jitter): a slot still waiting for its jittered start
    // stays after the cursor, undecided.
    let started = spec.due_until(now);
    if state.paused {
        let n = spec.schedule.count_between(state.cursor, started);
        state.counters.add_skipped(SkipReason::Paused, n);
        note_skipped(spec, state, SkipReason::Paused, started, n);
        move_cursor(spec, state, started);
        return;
    }
    skip_before_window(spec, state, started);
    match spec.end_at {
        Some(end) if end <= started => {
            // Due slots inside the window first; once none is left waiting,
            // everything after the window up to now is skipped in one step.
            let last_inside = before(end);
            fate_late_slots(spec, state, now, last_inside, keep_newest);
            let waiting = spec
                .schedule
                .next_after(state.cursor)
                .is_some_and(|s| s <= last_inside);
            if !waiting {
                let from = last_inside.max(state.cursor);
                let n = spec.schedule.count_between(from, started);
                state.counters.add_skipped(SkipReason::OutsideWindow, n);
                note_span(
                    spec,
                    state,
                    SKIPPED,
                    SkipReason::OutsideWindow.as_str(),
                    from,
                    started,
                    n,
                );
                move_cursor(spec, state, started);
            }
        }
        _ => fate_late_slots(spec, state, now, started, keep_newest),
    }
}

fn expire_leases(spec: &JobSpec, state: &mut JobState, now: Timestamp, rng: &mut dyn RandomSource) {
    let (expired, live): (Vec<Lease>, Vec<Lease>) = std::mem::take(&mut state.leases)
        .into_iter()
        .partition(|l| lease_expired(spec, l, now));
    state.leases = live;
    for lease in expired {
        state.counters.failed += 1;
        record_history(
            spec,
            state,
            RunRecord {
                slot: lease.slot,
                attempt: lease.attempt,
                fence: lease.fence,
                owner: lease.owner.clone(),
                started_at: lease.claimed_at,
                finished_at: now,
                outcome: RunOutcome::LeaseExpired,
            },
        );
        let error = format!(
            "lease of {} expired at {} (fence {}): the run crashed, hung or lost its store",
            lease.owner, lease.expires_at, lease.fence
        );
        retry_or_bury(spec, state, &lease, &error, false, false, now, rng);
    }
}

fn close_retry_windows(state: &mut JobState, now: Timestamp) {
    let (closed, open): (Vec<PendingRun>, Vec<PendingRun>) = std::mem::take(&mut state.pending)
        .into_iter()
        .partition(|p| p.retry_until.is_some_and(|until| now >= until));
    state.pending = open;
    for p in closed {
        let error = format!(
            "{} (retry window closed: the next slot came due at {})",
            p.last_error.as_deref().unwrap_or("failed"),
            p.retry_until.map(|t| t.to_string()).unwrap_or_default()
        );
        bury(
            state,
            DeadLetter {
                slot: p.slot,
                attempts: p.attempt.saturating_sub(1),
                last_error: truncate(&error, MAX_ERROR_BYTES),
                fence: state.fence,
                died_at: now,
                checkpoint: p.checkpoint,
            },
        );
    }
}

/// Counts due slots before `start_at` as skipped and moves the cursor past
/// them (those that have started by `started`, [`JobSpec::due_until`]).
fn skip_before_window(spec: &JobSpec, state: &mut JobState, started: Timestamp) {
    if let Some(start) = spec.start_at {
        let until = before(start).min(started);
        if until > state.cursor {
            let n = spec.schedule.count_between(state.cursor, until);
            state.counters.add_skipped(SkipReason::OutsideWindow, n);
            note_skipped(spec, state, SkipReason::OutsideWindow, until, n);
            move_cursor(spec, state, until);
        }
    }
}

/// Gives every due slot in `(cursor, due_until]` that the catch-up policy
/// will not run its fate, and moves the cursor past them. The newest `k`
/// (those that may run) stay after the cursor.
fn fate_late_slots(
    spec: &JobSpec,
    state: &mut JobState,
    now: Timestamp,
    due_until: Timestamp,
    keep_newest: bool,
) {
    if due_until <= state.cursor {
        return;
    }
    let schedule = &spec.schedule;
    let due = schedule.count_between(state.cursor, due_until);
    if due == 0 {
        return;
    }
    let deadline = sub(now, spec.starting_deadline);
    let fresh = schedule.count_between(before(deadline).max(state.cursor), due_until);
    let newest = schedule.prev_before(add_nanos(due_until));
    let mut keep = match spec.catch_up {
        CatchUp::Latest => fresh.min(1),
        CatchUp::All => fresh.min(u64::from(spec.max_catch_up)),
        CatchUp::None => {
            // On time: within a tick of its start (its nominal instant, or
            // its jittered start).
            let on_time = newest
                .is_some_and(|s| now <= add(add(spec.start_of(s), ON_TIME), spec.skew_margin));
            u64::from(on_time && fresh > 0)
        }
    };
    if keep_newest {
        keep = keep.max(1);
    }
    let fated = due - keep;
    if fated == 0 {
        return;
    }
    let Some(boundary) = last_fated(spec, state.cursor, due_until, newest, keep) else {
        return;
    };
    // Of the fated slots, those within the deadline are the fresh ones not
    // kept; the rest are stale. Arithmetic, not another count over the
    // outage.
    let stale = fated - fresh.saturating_sub(keep);
    let busy = !state.leases.is_empty() && spec.overlap == Overlap::Forbid;
    let late_reason = if busy {
        MissReason::Overlap
    } else {
        MissReason::Downtime
    };
    state.counters.add_missed(late_reason, stale);
    state
        .counters
        .add_missed(MissReason::CatchUp, fated.saturating_sub(stale));
    // The stale slots are the oldest, before the deadline; the rest of the
    // fated ones are fresh slots the policy does not keep.
    let stale_until = before(deadline).min(boundary);
    note_span(
        spec,
        state,
        MISSED,
        late_reason.as_str(),
        state.cursor,
        stale_until,
        stale,
    );
    note_span(
        spec,
        state,
        MISSED,
        MissReason::CatchUp.as_str(),
        stale_until.max(state.cursor),
        boundary,
        fated.saturating_sub(stale),
    );
    move_cursor(spec, state, boundary);
}

/// The last fated slot of `(cursor, due_until]`: the one before the `keep`
/// newest, which stay. A few steps back from the newest when `keep` is small;
/// otherwise a search over time with `count_between` (about 40 counts),
/// because `max_catch_up` may be large enough for a walk to take minutes.
fn last_fated(
    spec: &JobSpec,
    cursor: Timestamp,
    due_until: Timestamp,
    newest: Option<Timestamp>,
    keep: u64,
) -> Option<Timestamp> {
    const WALK: u64 = 64;
    let schedule = &spec.schedule;
    if keep <= WALK {
        let mut boundary = newest;
        for _ in 0..keep {
            boundary = boundary.and_then(|s| schedule.prev_before(s));
        }
        return boundary;
    }
    last_fated_by_search(spec, cursor, due_until, keep)
}

pub(super) fn last_fated_by_search(
    spec: &JobSpec,
    cursor: Timestamp,
    due_until: Timestamp,
    keep: u64,
) -> Option<Timestamp> {
    let schedule = &spec.schedule;
    // The smallest whole second t with at most `keep` slots in
    // (t, due_until] is that slot (slots are whole seconds). The callers
    // know more than `keep` lie after the cursor, so the search starts at or
    // before it (floor) with more than `keep` and ends at `due_until` with
    // none.
    let mut lo = cursor.as_second();
    if Timestamp::from_second(lo).is_ok_and(|t| t > cursor) {
        lo -= 1;
    }
    let mut hi = due_until.as_second();
    let count = |second: i64| {
        Timestamp::from_second(second).map_or(0, |t| schedule.count_between(t, due_until))
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if count(mid) <= keep {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    schedule.prev_before(add_nanos(Timestamp::from_second(hi).ok()?))
}
