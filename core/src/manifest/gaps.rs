//! Gaps between consecutive slots: the shortest (for warnings about retries
//! and triggers) and the longest (for the default staleness bound).
//!
//! Core has no clock, so the warnings measure the schedule from a fixed
//! reference instant (or the job's `start_at`). Cron patterns repeat with
//! the calendar, so any year shows the same gaps, up to DST details.

use std::time::Duration;

use jiff::Timestamp;

#[cfg(feature = "toml")]
use crate::schedule::DstOverlap;
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

/// A lower bound, in seconds, of every gap [`shortest_gap`] (from the same
/// `from`) can find, when one follows from the expression and the zone's
/// offsets; `None` when only walking the slots tells.
///
/// The walk costs hundreds of slot computations per job, which made it most
/// of the cost of loading a manifest of thousands of jobs; the warnings it
/// feeds only need to know whether some gap is as short as a minute or as a
/// job's retry window, and for most schedules this bound already says no.
///
/// Why it holds: the walk looks at the slots from the first after `from` to
/// the first after `from` plus a year, and each of them is its wall-clock
/// minute minus an offset between the least and the greatest offset in
/// force over that stretch (a slot shifted out of a DST gap runs at the
/// transition, whose offset is between the two around it). Where every
/// wall-clock time runs at most once, in increasing order (a fixed-time
/// expression under `dst_overlap = "once"`), two consecutive slots are
/// therefore at least the shortest distance between two matching wall-clock
/// minutes apart, less the spread of those offsets. An interval-like
/// expression runs in real time in both passes of an overlap and skips
/// what a gap skips: when it matches some minutes of every hour of every
/// day and every offset of the stretch is a whole number of hours from the
/// others, its slots are those minutes of every real hour, the same gaps as
/// on the wall clock.
#[cfg(feature = "toml")]
pub(super) fn gap_lower_bound(
    schedule: &Schedule,
    from: Timestamp,
    offsets: &mut ZoneOffsets,
) -> Option<i64> {
    let cron = schedule.cron();
    let wall = wall_gap_lower_bound(cron.minutes(), cron.hours())?;
    let zone = schedule.zone();
    if zone.is_fixed() {
        return Some(wall);
    }
    let end = schedule
        .next_after(at(from.as_second().saturating_add(YEAR))?)?
        .as_second();
    let (least, greatest, whole_hours) = offsets.spread(zone, from.as_second(), end);
    if schedule.follows_real_time() {
        let every_hour = cron.hours() == (1 << 24) - 1
            && cron.months() == 0x1ffe
            && cron.years().is_none()
            && cron.dom_is_full()
            && cron.dow_is_full();
        return (every_hour && whole_hours).then_some(wall);
    }
    if schedule.policy().overlap != DstOverlap::Once {
        return None;
    }
    Some(wall - i64::from(greatest - least))
}

/// How far ahead of its reference instant a zone's offset changes are
/// kept: past the year the warnings look at, and the slot after it.
#[cfg(feature = "toml")]
const OFFSETS_AHEAD: i64 = 2 * YEAR;

/// Each zone's offset changes from a reference instant on, walked once per
/// manifest rather than once per job (walking them computes each change
/// from the zone's rules, which was a tenth of loading thousands of jobs).
#[cfg(feature = "toml")]
#[derive(Default)]
pub(super) struct ZoneOffsets(
    std::collections::BTreeMap<String, std::collections::BTreeMap<i64, Vec<(i64, i32)>>>,
);

#[cfg(feature = "toml")]
impl ZoneOffsets {
    /// The least and greatest offset in force from `from` to `end`, and
    /// whether each is a whole number of hours from the first.
    fn spread(&mut self, zone: &crate::schedule::Zone, from: i64, end: i64) -> (i32, i32, bool) {
        let ahead = from.saturating_add(OFFSETS_AHEAD);
        if !self.0.contains_key(zone.name()) {
            self.0.insert(zone.name().to_string(), Default::default());
        }
        let changes = self
            .0
            .get_mut(zone.name())
            .map(|by_from| {
                by_from
                    .entry(from)
                    .or_insert_with(|| offset_changes(zone, from, ahead))
                    .as_slice()
            })
            .unwrap_or_default();
        let first = zone.offset_at(from);
        let (mut least, mut greatest, mut whole_hours) = (first, first, true);
        let mut note = |offset: i32| {
            least = least.min(offset);
            greatest = greatest.max(offset);
            whole_hours &= (offset - first) % 3_600 == 0;
        };
        for &(_, offset) in changes.iter().take_while(|(t, _)| *t <= end) {
            note(offset);
        }
        if end > ahead {
            for (_, offset) in offset_changes(zone, ahead, end) {
                note(offset);
            }
        }
        (least, greatest, whole_hours)
    }
}

/// The zone's offset changes after `from` and up to `until`.
#[cfg(feature = "toml")]
fn offset_changes(zone: &crate::schedule::Zone, from: i64, until: i64) -> Vec<(i64, i32)> {
    let mut changes = Vec::new();
    let mut cursor = from;
    while let Some((transition, offset)) = zone.next_transition(cursor) {
        if transition > until {
            break;
        }
        changes.push((transition, offset));
        cursor = transition;
    }
    changes
}

/// The shortest distance, in seconds, between two different wall-clock
/// minutes that match the minute set `minutes` (bit m for minute m) and
/// the hour set `hours` (bit h for hour h), on whatever days: within an
/// hour, from one hour to a later one the same day, or to another day.
/// `None` when a set is empty.
#[cfg(feature = "toml")]
fn wall_gap_lower_bound(minutes: u64, hours: u32) -> Option<i64> {
    /// The least distance between two set bits, the largest minus the
    /// smallest set bit; `None` for an empty set.
    fn spread(bits: u64) -> Option<(Option<i64>, i64)> {
        if bits == 0 {
            return None;
        }
        let (mut closest, mut previous) = (None, None::<i64>);
        for bit in 0..64 {
            if bits & (1 << bit) != 0 {
                if let Some(p) = previous {
                    closest = Some(closest.map_or(bit - p, |c: i64| c.min(bit - p)));
                }
                previous = Some(bit);
            }
        }
        let low = i64::from(bits.trailing_zeros());
        let high = 63 - i64::from(bits.leading_zeros());
        Some((closest, high - low))
    }
    let (minute_step, minute_span) = spread(minutes)?;
    let (hour_step, hour_span) = spread(u64::from(hours))?;
    let same_hour = minute_step.unwrap_or(i64::MAX);
    let later_hour = hour_step.map_or(i64::MAX, |h| 60 * h - minute_span);
    let later_day = 60 * (24 - hour_span) - minute_span;
    Some(60 * same_hour.min(later_hour).min(later_day))
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

#[cfg(all(test, feature = "toml"))]
mod tests {
    use super::*;
    use crate::cron::CronExpr;
    use crate::schedule::{DstGap, DstPolicy, Zone};

    /// The bound never exceeds a gap the walk finds: for each expression,
    /// zone (with DST, half-hour DST, a two-hour one, a day-long clock
    /// change, local mean time), policy and starting instant.
    #[test]
    fn the_lower_bound_never_exceeds_the_shortest_gap_walked() {
        let expressions = [
            "* * * * *",
            "0 * * * *",
            "17 * * * *",
            "3-59/5 * * * *",
            "15,45 * * * *",
            "0,59 * * * *",
            "*/20 * * * *",
            "0 */2 * * *",
            "30 2 * * *",
            "0,59 1 * * *",
            "30 1,2 * * *",
            "0 9 * * MON-FRI",
            "45 23 L * *",
            "0 0 29 2 *",
            "59 0-23 * * *",
            "0 12 * 3 *",
        ];
        let zones = [
            "UTC",
            "America/New_York",
            "Europe/Berlin",
            "Australia/Lord_Howe",
            "Pacific/Apia",
            "Antarctica/Troll",
            "America/St_Johns",
            "Asia/Kolkata",
            "America/Sao_Paulo",
        ];
        let policies = [
            DstPolicy::default(),
            DstPolicy {
                gap: DstGap::Skip,
                overlap: DstOverlap::Twice,
            },
            DstPolicy {
                gap: DstGap::ShiftAlways,
                overlap: DstOverlap::Once,
            },
        ];
        let froms = [
            "2026-01-01T00:00:00Z",
            "2011-06-01T00:00:00Z",
            "1883-06-01T00:00:00Z",
            "2026-10-25T00:30:00Z",
        ];
        let mut bounded = 0;
        // One cache for all: what one expression walked serves the next.
        let mut offsets = ZoneOffsets::default();
        for text in expressions {
            let cron = CronExpr::parse(text).expect("expression");
            for name in zones {
                let zone = Zone::get(name).expect("zone");
                for policy in policies {
                    let schedule = Schedule::new(cron.clone(), zone.clone(), policy);
                    for from in froms {
                        let from: Timestamp = from.parse().expect("instant");
                        let Some(bound) = gap_lower_bound(&schedule, from, &mut offsets) else {
                            continue;
                        };
                        bounded += 1;
                        if let Some(gap) = shortest_gap(&schedule, from) {
                            assert!(
                                i64::try_from(gap.as_secs()).expect("secs") >= bound,
                                "{text} in {name}, {policy:?}, from {from}: bound {bound} s, gap {gap:?}"
                            );
                        }
                    }
                }
            }
        }
        // The bound applies to most of these, not just to UTC.
        assert!(bounded > 600, "{bounded}");
    }

    #[test]
    fn the_bound_is_the_wall_clock_distance_where_offsets_do_not_spread() {
        let bound = |text: &str, zone: &str| {
            let schedule = Schedule::new(
                CronExpr::parse(text).expect("expression"),
                Zone::get(zone).expect("zone"),
                DstPolicy::default(),
            );
            gap_lower_bound(
                &schedule,
                at(REFERENCE_SECOND).expect("instant"),
                &mut ZoneOffsets::default(),
            )
        };
        assert_eq!(bound("3-59/5 * * * *", "UTC"), Some(300));
        assert_eq!(bound("3-59/5 * * * *", "America/New_York"), Some(300));
        assert_eq!(bound("17 * * * *", "Europe/Berlin"), Some(3_600));
        assert_eq!(bound("0,59 * * * *", "UTC"), Some(60));
        assert_eq!(bound("0 9 * * MON-FRI", "UTC"), Some(86_400));
        // A daily time in New York: a day less the hour DST moves it.
        assert_eq!(bound("30 2 * * *", "America/New_York"), Some(82_800));
        // Lord Howe moves its clocks by half an hour: every hour's slots
        // are not those of every real hour.
        assert_eq!(bound("17 * * * *", "Australia/Lord_Howe"), None);
    }
}
