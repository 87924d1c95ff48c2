//! The pure transitions: every policy of docs/design.md §5 as functions from
//! (spec, state, now, input) to a new state. No I/O, no clock: the caller
//! passes `now` and a random source, and a store writes the result
//! atomically (or the caller re-plans on conflict).
//!
//! The cursor is the heart of it: every slot at or before it has been taken
//! (claimed or given a fate), so due slots are simply those after it. Late
//! slots are never enumerated: they are counted (`Schedule::count_between`),
//! and only the few that may still run are found by walking back from now.

use std::fmt;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::rng::RandomSource;
use super::state::{
    DeadLetter, JobState, Lease, MAX_CHECKPOINT_BYTES, MAX_DEAD_LETTERS, MAX_ERROR_BYTES,
    MAX_RECORD_BYTES, MAX_RESULT_BYTES, MissReason, Origin, PendingRun, RunOutcome, RunRecord,
    ScheduleChange, SkipReason, encode_state, truncate,
};
use crate::manifest::{CatchUp, Delivery, JobSpec, Overlap};

/// How far after its time a slot still counts as on time under
/// `catch_up = "none"`: one tick (a minute) plus the skew margin.
const ON_TIME: Duration = Duration::from_secs(60);

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

/// Moves the cursor forward to `to`, counting the slots passed that a gap
/// skipped (DST under `dst_gap = "skip"`, or a clock change).
fn move_cursor(spec: &JobSpec, state: &mut JobState, to: Timestamp) {
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

/// [`FateSpan::fate`](super::FateSpan) of a slot that did not run.
const MISSED: &str = "missed";
/// [`FateSpan::fate`](super::FateSpan) of a slot that was not due to run.
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

fn record_history(spec: &JobSpec, state: &mut JobState, record: RunRecord) {
    state.history.push(record);
    let keep_ok = spec.history.succeeded as usize;
    let keep_bad = spec.history.failed as usize;
    let mut ok = 0;
    let mut bad = 0;
    // Walk newest first, keep the allowed number of each kind.
    let mut keep = vec![false; state.history.len()];
    for (i, r) in state.history.iter().enumerate().rev() {
        if r.outcome.succeeded() {
            ok += 1;
            keep[i] = ok <= keep_ok;
        } else {
            bad += 1;
            keep[i] = bad <= keep_bad;
        }
    }
    let mut i = 0;
    state.history.retain(|_| {
        let k = keep[i];
        i += 1;
        k
    });
}

fn bury(state: &mut JobState, letter: DeadLetter) {
    state.counters.dead += 1;
    state.dead.push(letter);
    if state.dead.len() > MAX_DEAD_LETTERS {
        state.dead.remove(0);
        state.counters.dead_dropped += 1;
    }
}

/// Schedules another attempt of a slot, or buries it when no attempt is left
/// (or none could start before the next slot).
/// `backoff: false` makes the retry eligible at once: a lease that expired
/// has already waited its whole duration, which is backoff enough.
#[allow(clippy::too_many_arguments)]
fn retry_or_bury(
    spec: &JobSpec,
    state: &mut JobState,
    lease: &Lease,
    error: &str,
    permanent: bool,
    backoff: bool,
    now: Timestamp,
    rng: &mut dyn RandomSource,
) -> FailOutcome {
    let error = truncate(error, MAX_ERROR_BYTES);
    let bury_now = |state: &mut JobState, error: String| {
        bury(
            state,
            DeadLetter {
                slot: lease.slot,
                attempts: lease.attempt,
                last_error: error,
                fence: lease.fence,
                died_at: now,
                checkpoint: lease.checkpoint.clone(),
            },
        );
        FailOutcome::Dead
    };
    if spec.delivery == Delivery::AtMostOnce {
        return bury_now(
            state,
            format!("{error} (at-most-once delivery: not retried)"),
        );
    }
    if permanent {
        return bury_now(state, error);
    }
    if lease.attempt >= spec.retry.max_attempts {
        return bury_now(
            state,
            format!(
                "{error} (attempt {} of {})",
                lease.attempt, spec.retry.max_attempts
            ),
        );
    }
    let cap = spec.retry.delay_cap(lease.attempt);
    let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
    let delay = if backoff {
        Duration::from_millis(rng.below_or_equal(cap_ms))
    } else {
        Duration::ZERO
    };
    let not_before = add(now, delay);
    if let Some(until) = lease.retry_until {
        if not_before >= until {
            return bury_now(
                state,
                format!("{error} (no retry could start before the next slot at {until})"),
            );
        }
    }
    if state.pending.len() >= MAX_PENDING {
        return bury_now(state, format!("{error} (too many pending runs)"));
    }
    state.pending.push(PendingRun {
        slot: lease.slot,
        attempt: lease.attempt + 1,
        not_before,
        retry_until: lease.retry_until,
        last_error: Some(error),
        checkpoint: lease.checkpoint.clone(),
        origin: lease.origin,
    });
    FailOutcome::RetryAt(not_before)
}

fn lease_expired(spec: &JobSpec, lease: &Lease, now: Timestamp) -> bool {
    now > add(lease.expires_at, spec.skew_margin)
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

    if state.paused {
        let n = spec.schedule.count_between(state.cursor, now);
        state.counters.add_skipped(SkipReason::Paused, n);
        note_skipped(spec, state, SkipReason::Paused, now, n);
        move_cursor(spec, state, now);
        return;
    }
    skip_before_window(spec, state, now);
    match spec.end_at {
        Some(end) if end <= now => {
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
                let n = spec.schedule.count_between(from, now);
                state.counters.add_skipped(SkipReason::OutsideWindow, n);
                note_span(
                    spec,
                    state,
                    SKIPPED,
                    SkipReason::OutsideWindow.as_str(),
                    from,
                    now,
                    n,
                );
                move_cursor(spec, state, now);
            }
        }
        _ => fate_late_slots(spec, state, now, now, keep_newest),
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
/// them.
fn skip_before_window(spec: &JobSpec, state: &mut JobState, now: Timestamp) {
    if let Some(start) = spec.start_at {
        let until = before(start).min(now);
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
            let on_time = newest.is_some_and(|s| now <= add(add(s, ON_TIME), spec.skew_margin));
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

fn last_fated_by_search(
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

fn add_nanos(t: Timestamp) -> Timestamp {
    t.checked_add(SignedDuration::from_nanos(1))
        .unwrap_or(Timestamp::MAX)
}

/// Claims the next slot to run, if the policies allow one.
pub fn claim(
    spec: &JobSpec,
    state: &mut JobState,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
    rng: &mut dyn RandomSource,
) -> Result<Claim, TriggerError> {
    let mut effective_now = now;
    let mut wanted: Option<Timestamp> = None;
    match trigger {
        Trigger::Tick | Trigger::Planned(_) => {}
        Trigger::Slot(slot) => {
            if !spec.schedule.is_slot(slot) {
                return Err(TriggerError::NotASlot { slot });
            }
            if slot > add(now, spec.skew_margin) {
                return Ok(Claim::Idle(Idle::NotYetDue { slot }));
            }
            // Duplicates are answered before anything else, and without a
            // write: a redelivery must not even touch the record.
            if let Some(idle) = duplicate(spec, state, slot, now) {
                return Ok(Claim::Idle(idle));
            }
            effective_now = now.max(slot);
            wanted = Some(slot);
        }
        Trigger::Manual => {
            let Some(slot) = spec.schedule.prev_before(add_nanos(now)) else {
                return Ok(Claim::Idle(nothing_due(spec, state)));
            };
            match duplicate(spec, state, slot, now) {
                Some(Idle::AlreadyResolved { .. })
                    if state.fence == 0 && state.dead.is_empty() && slot <= state.created_at =>
                {
                    // A job that never ran: its current slot predates the
                    // record (created just now), yet it certainly did not
                    // run. The operator asked for it: queue it like a
                    // one-slot backfill. A slot after the record's creation
                    // that is resolved already has its fate (missed,
                    // skipped): running it would give it a second one.
                    state.pending.push(PendingRun {
                        slot,
                        attempt: 1,
                        not_before: now,
                        retry_until: None,
                        last_error: None,
                        checkpoint: None,
                        origin: Origin::Manual,
                    });
                }
                Some(Idle::RetryLater { .. }) | None => {}
                Some(idle) => return Ok(Claim::Idle(idle)),
            }
            wanted = Some(slot);
        }
    }

    advance(spec, state, effective_now, rng, trigger == Trigger::Manual);
    if state.paused {
        return Ok(Claim::Idle(Idle::Paused));
    }

    let manual = trigger == Trigger::Manual;
    let retry = state
        .pending
        .iter()
        .enumerate()
        .filter(|(_, p)| p.not_before <= effective_now || (manual && Some(p.slot) == wanted))
        .min_by_key(|(_, p)| p.slot)
        .map(|(i, p)| (i, p.slot));
    let fresh = spec
        .schedule
        .next_after(state.cursor)
        .filter(|s| *s <= effective_now && spec.in_window(*s));
    let pick_retry = match (retry, fresh) {
        (Some((_, r)), Some(f)) => r <= f,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if retry.is_none() && fresh.is_none() {
        return Ok(Claim::Idle(nothing_due(spec, state)));
    }

    let live = state.leases.len();
    match spec.overlap {
        Overlap::Forbid if live >= 1 => return Ok(Claim::Idle(Idle::Busy { live })),
        Overlap::Allow { max_concurrency } if live >= max_concurrency as usize => {
            return Ok(Claim::Idle(Idle::Busy { live }));
        }
        Overlap::Replace => supersede_all(spec, state, now),
        _ => {}
    }

    state.fence += 1;
    state.counters.runs += 1;
    let fence = state.fence;
    let lease_for = |slot, attempt, checkpoint, origin, retry_until| Lease {
        owner: owner.to_string(),
        slot,
        fence,
        attempt,
        claimed_at: now,
        expires_at: add(now, spec.lease),
        checkpoint,
        origin,
        retry_until,
    };
    let lease = match (pick_retry, retry, fresh) {
        (true, Some((index, _)), _) => {
            let p = state.pending.remove(index);
            lease_for(p.slot, p.attempt, p.checkpoint, p.origin, p.retry_until)
        }
        (_, _, Some(slot)) => {
            move_cursor(spec, state, slot);
            let retry_until = if spec.retry.past_next_slot {
                None
            } else {
                spec.schedule.next_after(slot)
            };
            let origin = if manual && Some(slot) == wanted {
                Origin::Manual
            } else {
                Origin::Schedule
            };
            lease_for(slot, 1, None, origin, retry_until)
        }
        _ => return Ok(Claim::Idle(nothing_due(spec, state))),
    };
    state.leases.push(lease.clone());
    Ok(Claim::Claimed(lease))
}

/// The answer to a redelivered slot, if it is one.
/// A delivery of `slot` that must not run it: the slot is running under a
/// live lease, waits for its retry, or is resolved. A lease past its expiry
/// does not count: its run crashed or stalled, and the claim that follows
/// (after `advance` expires it) retries the slot with a higher fence.
fn duplicate(spec: &JobSpec, state: &JobState, slot: Timestamp, now: Timestamp) -> Option<Idle> {
    if let Some(l) = state
        .leases
        .iter()
        .find(|l| l.slot == slot && !lease_expired(spec, l, now))
    {
        return Some(Idle::InProgress {
            slot,
            fence: l.fence,
        });
    }
    if let Some(p) = state.pending.iter().find(|p| p.slot == slot) {
        return (p.not_before > now).then_some(Idle::RetryLater {
            slot,
            not_before: p.not_before,
        });
    }
    state
        .slot_resolved(slot)
        .then_some(Idle::AlreadyResolved { slot })
}

fn nothing_due(spec: &JobSpec, state: &JobState) -> Idle {
    Idle::NothingDue {
        next_slot: spec
            .schedule
            .next_after(state.cursor)
            .filter(|s| spec.end_at.is_none_or(|e| *s < e)),
        next_retry: state.pending.iter().map(|p| p.not_before).min(),
    }
}

/// `overlap = "replace"`: a new claim supersedes every live lease; their
/// slots are missed (reason: overlap) and their completions will be refused.
fn supersede_all(spec: &JobSpec, state: &mut JobState, now: Timestamp) {
    for lease in std::mem::take(&mut state.leases) {
        // Counted as missed; the timeline shows it from the history.
        state.counters.add_missed(MissReason::Overlap, 1);
        record_history(
            spec,
            state,
            RunRecord {
                slot: lease.slot,
                attempt: lease.attempt,
                fence: lease.fence,
                owner: lease.owner,
                started_at: lease.claimed_at,
                finished_at: now,
                outcome: RunOutcome::Superseded,
            },
        );
    }
}

fn take_lease(state: &mut JobState, fence: u64) -> Result<Lease, Refusal> {
    match state.leases.iter().position(|l| l.fence == fence) {
        Some(i) => Ok(state.leases.remove(i)),
        None => Err(Refusal::Superseded {
            fence,
            latest: state.fence,
        }),
    }
}

/// Records a successful run. A superseded fence is refused; an expired lease
/// that nobody has taken over is still accepted (the work is done, and
/// running it again would be the duplicate cronslot exists to prevent).
pub fn complete(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    result: Option<&str>,
    now: Timestamp,
) -> Result<(), Refusal> {
    if let Some(r) = result {
        if r.len() > MAX_RESULT_BYTES {
            return Err(Refusal::TooLarge {
                what: "the result",
                bytes: r.len(),
                max: MAX_RESULT_BYTES,
            });
        }
    }
    if !state.leases.iter().any(|l| l.fence == fence) && succeeded_with(state, fence) {
        // This fence's completion is recorded already: its answer was lost
        // and the run asks again. Completion is idempotent per fence; the
        // record is left as it is.
        return Ok(());
    }
    let lease = take_lease(state, fence)?;
    state.counters.succeeded += 1;
    let record = RunRecord {
        slot: lease.slot,
        attempt: lease.attempt,
        fence,
        owner: lease.owner,
        started_at: lease.claimed_at,
        finished_at: now,
        outcome: RunOutcome::Succeeded {
            result: result.map(str::to_string),
        },
    };
    state.last_success = Some(record.clone());
    record_history(spec, state, record);
    Ok(())
}

/// True when a run with this fence is recorded as succeeded.
fn succeeded_with(state: &JobState, fence: u64) -> bool {
    state
        .last_success
        .iter()
        .chain(state.history.iter())
        .any(|r| r.fence == fence && r.outcome.succeeded())
}

/// Records a failed run: a retry of the same slot, or a dead letter.
pub fn fail(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    error: &str,
    permanent: bool,
    now: Timestamp,
    rng: &mut dyn RandomSource,
) -> Result<FailOutcome, Refusal> {
    let lease = take_lease(state, fence)?;
    state.counters.failed += 1;
    record_history(
        spec,
        state,
        RunRecord {
            slot: lease.slot,
            attempt: lease.attempt,
            fence,
            owner: lease.owner.clone(),
            started_at: lease.claimed_at,
            finished_at: now,
            outcome: RunOutcome::Failed {
                error: truncate(error, MAX_ERROR_BYTES),
                permanent,
            },
        },
    );
    Ok(retry_or_bury(
        spec, state, &lease, error, permanent, true, now, rng,
    ))
}

fn live_lease<'s>(
    spec: &JobSpec,
    state: &'s mut JobState,
    fence: u64,
    now: Timestamp,
) -> Result<&'s mut Lease, Refusal> {
    let latest = state.fence;
    let lease = state
        .leases
        .iter_mut()
        .find(|l| l.fence == fence)
        .ok_or(Refusal::Superseded { fence, latest })?;
    if lease_expired(spec, lease, now) {
        return Err(Refusal::Expired {
            fence,
            expired_at: lease.expires_at,
        });
    }
    Ok(lease)
}

/// Extends a live lease by the job's lease duration from `now`.
pub fn heartbeat(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    now: Timestamp,
) -> Result<Timestamp, Refusal> {
    let lease = live_lease(spec, state, fence, now)?;
    lease.expires_at = add(now, spec.lease);
    Ok(lease.expires_at)
}

/// Saves a small checkpoint with a live lease; a retry of the slot gets it.
pub fn checkpoint(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    value: &str,
    now: Timestamp,
) -> Result<(), Refusal> {
    if value.len() > MAX_CHECKPOINT_BYTES {
        return Err(Refusal::TooLarge {
            what: "the checkpoint",
            bytes: value.len(),
            max: MAX_CHECKPOINT_BYTES,
        });
    }
    let lease = live_lease(spec, state, fence, now)?;
    lease.checkpoint = Some(value.to_string());
    Ok(())
}

/// Sends dead letters back to run (one slot, or all when `slot` is `None`).
/// Each gets a fresh attempt budget; returns the slots redriven.
pub fn redrive(state: &mut JobState, slot: Option<Timestamp>, now: Timestamp) -> Vec<Timestamp> {
    let (chosen, kept): (Vec<DeadLetter>, Vec<DeadLetter>) = std::mem::take(&mut state.dead)
        .into_iter()
        .partition(|d| slot.is_none_or(|s| s == d.slot));
    state.dead = kept;
    let mut out = Vec::new();
    for d in chosen {
        if state.pending.len() >= MAX_PENDING || state.slot_in_flight(d.slot) {
            state.dead.push(d);
            continue;
        }
        out.push(d.slot);
        state.pending.push(PendingRun {
            slot: d.slot,
            attempt: 1,
            not_before: now,
            retry_until: None,
            last_error: Some(d.last_error),
            checkpoint: d.checkpoint,
            origin: Origin::Redrive,
        });
    }
    state.dead.sort_by_key(|d| d.slot);
    state.counters.redriven += out.len() as u64;
    out
}

/// Pauses a job: slots due from now on are skipped (reason: paused).
pub fn pause(spec: &JobSpec, state: &mut JobState, now: Timestamp, rng: &mut dyn RandomSource) {
    advance(spec, state, now, rng, false);
    state.paused = true;
}

/// Resumes a job: slots that came due while it was paused are skipped, the
/// next ones run.
pub fn resume(spec: &JobSpec, state: &mut JobState, now: Timestamp, rng: &mut dyn RandomSource) {
    advance(spec, state, now, rng, false);
    state.paused = false;
    state.paused_reason = None;
}

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
        .filter(|_| !state.paused)
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
    let expiries = state
        .leases
        .iter()
        .map(|l| add(add(l.expires_at, spec.skew_margin), WAKE_AFTER_EXPIRY));
    let waiting = state
        .pending
        .iter()
        .filter(|_| !state.paused)
        .map(|p| p.not_before);
    let held_back = spec
        .schedule
        .next_after(state.cursor)
        .filter(|s| !state.leases.is_empty() || *s <= add(now, spec.skew_margin))
        .filter(|s| spec.end_at.is_none_or(|e| *s < e));
    let wake = expiries.chain(waiting).chain(held_back).min()?;
    let planned_first = spec
        .schedule
        .next_after(add(now, spec.skew_margin))
        .filter(|s| spec.in_window(*s))
        .is_some_and(|s| s <= wake);
    (!planned_first).then_some(wake)
}

/// The wake to write, given the one stored (`stored`) and the one
/// [`next_wake`] computed for the record about to be written. A stored wake
/// at a slot the record has not taken yet is kept (unless an earlier one
/// replaces it): it was written by a claim that found the job busy at that
/// slot, after which the tick's mark moved on. The write that ends the
/// lease judges "is the next slot due" by its own clock reading, which may
/// be from before the slot though the write lands after it; dropping the
/// wake then would leave the slot to nothing. Once the slot is taken (the
/// cursor passes it), the wake goes.
pub fn carry_wake(
    spec: &JobSpec,
    stored: Option<Timestamp>,
    next: &JobState,
    computed: Option<Timestamp>,
) -> Option<Timestamp> {
    match stored {
        Some(s)
            if s > next.cursor && spec.schedule.is_slot(s) && computed.is_none_or(|c| c > s) =>
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
        .is_some_and(|s| s <= now && spec.in_window(s));
    retry || slot
}

/// A lease counts as expired strictly after its expiry plus the skew
/// margin; its wake comes this much later, so that a claim at the wake
/// instant finds it expired.
const WAKE_AFTER_EXPIRY: Duration = Duration::from_millis(1);

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
pub fn fit_record(state: &mut JobState) -> bool {
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

/// A backfill request that cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BackfillError {
    /// `from` is after `to`.
    EmptyRange,
    /// `to` is after now: only past slots can be backfilled.
    InFuture {
        /// The requested end of the range.
        #[serde(with = "crate::instant::text")]
        to: Timestamp,
    },
    /// The range holds more slots than may be queued at once.
    TooMany {
        /// Slots found before giving up (more may follow).
        count: usize,
        /// The most that may be queued now ([`MAX_BACKFILL`], less when
        /// runs are already pending).
        max: usize,
    },
}

impl fmt::Display for BackfillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackfillError::EmptyRange => write!(f, "--from must be before --to"),
            BackfillError::InFuture { to } => {
                write!(
                    f,
                    "--to {to} is in the future: only past slots can be backfilled"
                )
            }
            BackfillError::TooMany { count, max } => write!(
                f,
                "the range holds more than {max} slots (found {count}+): backfill it in parts"
            ),
        }
    }
}

impl std::error::Error for BackfillError {}

/// Queues the past slots in `[from, to]` to run (oldest first). Slots that
/// are running, waiting or dead are left alone (redrive dead ones), and so
/// are slots after the cursor (they are still due on the schedule).
/// With `dry_run`, only lists them.
pub fn backfill(
    spec: &JobSpec,
    state: &mut JobState,
    from: Timestamp,
    to: Timestamp,
    now: Timestamp,
    dry_run: bool,
) -> Result<Vec<Timestamp>, BackfillError> {
    if from > to {
        return Err(BackfillError::EmptyRange);
    }
    if to > now {
        return Err(BackfillError::InFuture { to });
    }
    let room = MAX_BACKFILL.min(MAX_PENDING.saturating_sub(state.pending.len()));
    let mut slots = Vec::new();
    for o in spec.schedule.iter_after(before(from)) {
        if o.instant > to {
            break;
        }
        let s = o.instant;
        // Slots come in order: none after the cursor is a backfill's (they
        // are still to be planned), so stop there rather than walk to `to`,
        // which may be centuries of slots away.
        if s > state.cursor {
            break;
        }
        if state.slot_in_flight(s) || state.dead.iter().any(|d| d.slot == s) {
            continue;
        }
        if slots.len() >= room {
            return Err(BackfillError::TooMany {
                count: slots.len() + 1,
                max: room,
            });
        }
        slots.push(s);
    }
    if !dry_run {
        for &slot in &slots {
            state.pending.push(PendingRun {
                slot,
                attempt: 1,
                not_before: now,
                retry_until: None,
                last_error: None,
                checkpoint: None,
                origin: Origin::Backfill,
            });
        }
        state.counters.backfilled += slots.len() as u64;
    }
    Ok(slots)
}

#[cfg(all(test, feature = "toml"))]
mod tests {
    use super::*;
    use crate::coord::SplitMix64;
    use crate::manifest::parse_manifest;

    /// The search over time finds the slot the walk back finds.
    #[test]
    fn last_fated_by_search_agrees_with_the_walk() {
        let mut rng = SplitMix64::new(7);
        for (schedule, zone) in [
            ("* * * * *", "UTC"),
            ("*/7 * * * *", "UTC"),
            ("30 2 * * *", "America/New_York"),
            ("0 9 * * MON-FRI", "Europe/Berlin"),
        ] {
            let text = format!(
                "[[job]]\nname = \"j\"\nschedule = \"{schedule}\"\ntimezone = \"{zone}\"\n"
            );
            let spec = parse_manifest(&text, "t.toml")
                .expect("valid")
                .jobs
                .remove(0);
            for _ in 0..40 {
                let cursor = Timestamp::from_second(
                    1_700_000_000 + i64::try_from(rng.next_u64() % 200_000_000).expect("small"),
                )
                .expect("in range");
                let due_until = Timestamp::from_second(
                    cursor.as_second()
                        + 1
                        + i64::try_from(rng.next_u64() % 100_000_000).expect("small"),
                )
                .expect("in range");
                let due = spec.schedule.count_between(cursor, due_until);
                let newest = spec.schedule.prev_before(add_nanos(due_until));
                for keep in [0, 1, 2, 65, 500] {
                    if keep >= due {
                        continue;
                    }
                    let mut walked = newest;
                    for _ in 0..keep {
                        walked = walked.and_then(|s| spec.schedule.prev_before(s));
                    }
                    assert_eq!(
                        last_fated_by_search(&spec, cursor, due_until, keep),
                        walked,
                        "{schedule} {zone}: ({cursor}, {due_until}], keep {keep}"
                    );
                }
            }
        }
    }
}
