//! Gaps between consecutive slots: the shortest (for warnings about retries
//! and triggers) and the longest (for the default staleness bound).
//!
//! Core has no clock, so the warnings measure the schedule from a fixed
//! reference instant (or the job's `start_at`). Cron patterns repeat with
//! the calendar, so any year shows the same gaps, up to DST details.

use std::time::Duration;

use jiff::Timestamp;

use crate::schedule::Schedule;

/// 2026-01-01T00:00:00Z: where the warnings start measuring.
#[cfg(feature = "toml")]
pub(super) const REFERENCE_SECOND: i64 = 1_767_225_600;

const YEAR: i64 = 365 * 86_400;
const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

/// Slots looked at for the shortest gap, unless a year passes first: a
/// day of a five-minute schedule, years of a weekly one. Denser schedules
/// stop at their first one-minute gap.
#[cfg(feature = "toml")]
const SHORTEST_GAP_SLOTS: usize = 512;

fn at(second: i64) -> Option<Timestamp> {
    Timestamp::from_second(second).ok()
}

#[cfg(feature = "toml")]
fn secs(from: Timestamp, to: Timestamp) -> u64 {
    u64::try_from(to.as_second().saturating_sub(from.as_second())).unwrap_or(0)
}

/// The reference instant for warnings: `start_at`, else 2026-01-01.
#[cfg(feature = "toml")]
pub(super) fn reference(start_at: Option<Timestamp>) -> Timestamp {
    start_at
        .or_else(|| at(REFERENCE_SECOND))
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The shortest gap between consecutive slots after `from`, over at most
/// [`SHORTEST_GAP_SLOTS`] slots or a year. `None` with fewer than two slots.
#[cfg(feature = "toml")]
pub(super) fn shortest_gap(schedule: &Schedule, from: Timestamp) -> Option<Duration> {
    let limit = from.as_second().saturating_add(YEAR);
    let mut previous = schedule.next_after(from)?;
    let mut shortest: Option<u64> = None;
    for _ in 0..SHORTEST_GAP_SLOTS {
        let Some(next) = schedule.next_after(previous) else {
            break;
        };
        let gap = secs(previous, next);
        shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
        // Minute granularity: nothing is shorter than a minute.
        if gap <= 60 || next.as_second() > limit {
            break;
        }
        previous = next;
    }
    shortest.map(Duration::from_secs)
}

/// Whether the schedule has a slot in `[start, end)`.
#[cfg(feature = "toml")]
pub(super) fn fires_within(schedule: &Schedule, start: Timestamp, end: Timestamp) -> bool {
    start
        .checked_sub(jiff::SignedDuration::from_nanos(1))
        .ok()
        .and_then(|before| schedule.next_after(before))
        .is_some_and(|first| first < end)
}

/// The longest gap between consecutive slots of the window
/// `[start_at, end_at)` in the year after `now`; see
/// [`super::JobSpec::default_stale_after`].
pub(super) fn longest_gap(
    schedule: &Schedule,
    now: Timestamp,
    start_at: Option<Timestamp>,
    end_at: Option<Timestamp>,
) -> Option<Duration> {
    let in_end = |t: Timestamp| end_at.is_none_or(|e| t < e);
    // The first slot at or after start_at, or after now.
    let lower = match start_at {
        Some(s) if s > now => s.checked_sub(jiff::SignedDuration::from_nanos(1)).ok()?,
        _ => now,
    };
    let lower_second = start_at.map_or(i64::MIN, |s| s.as_second());
    let next = |t: Timestamp| schedule.next_after(t).filter(|n| in_end(*n));
    // The last slot at or before `t` (and not before start_at).
    let last_at_or_before = |t: Timestamp| {
        at(t.as_second().saturating_add(1))
            .and_then(|u| schedule.prev_before(u))
            .filter(|p| p.as_second() >= lower_second)
    };

    let first = next(lower)?;
    let horizon = now.as_second().saturating_add(YEAR);
    let exact_until = first.as_second().saturating_add(DAY);
    let mut cur = first;
    let mut longest: i64 = 0;
    loop {
        if cur.as_second() >= horizon && longest > 0 {
            break;
        }
        if cur.as_second() >= exact_until {
            // Skip over a window holding slots: every gap inside it is at
            // most its width, which is not longer than the longest so far
            // once that is an hour or more.
            let width = longest.max(HOUR);
            if let Some(q) = at(cur.as_second().saturating_add(width)).and_then(last_at_or_before) {
                if q > cur && in_end(q) {
                    cur = q;
                    continue;
                }
            }
        }
        let Some(n) = next(cur) else {
            break;
        };
        longest = longest.max(n.as_second().saturating_sub(cur.as_second()));
        cur = n;
    }
    (longest > 0).then(|| Duration::from_secs(longest.unsigned_abs()))
}
