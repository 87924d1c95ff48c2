//! The zone and DST: what the zone's transitions from 1970 to 2200 do to
//! the expression, whether the schedule is the same in UTC, and where a
//! platform's wall-clock evaluation (skip in gaps, once in overlaps)
//! differs from the schedule. Apart from the day fields: the two parts
//! of exactness are decided independently (see the module doc of
//! translate.rs).

use super::*;

// ---------------------------------------------------------------------------
// Zone and DST

/// 1970-01-01T00:00:00Z and 2200-01-01T00:00:00Z: the span of transitions
/// examined (EventBridge's year field ends in 2199).
const SCAN_FROM: i64 = 0;
const SCAN_UNTIL: i64 = 7_258_118_400;

/// A matching wall-clock minute inside a gap or an overlap.
#[derive(Clone, Copy)]
struct DstHit {
    local: Civil,
    /// Unix seconds of the transition.
    transition: i64,
}

/// What the zone's transitions do to a cron expression.
struct Exposure {
    /// Every offset (seconds) in force from 1970 to 2200.
    offsets: Vec<i32>,
    /// The first matching minute in a DST gap (a forward jump of less than
    /// three hours), if any.
    gap: Option<DstHit>,
    /// The first matching minute a clock change skips (a forward jump of
    /// three hours or more), if any.
    clock_change: Option<DstHit>,
    /// The first matching minute in an overlap, if any.
    overlap: Option<DstHit>,
}

impl Exposure {
    fn of(cron: &CronExpr, zone: &Zone) -> Exposure {
        let mut offset = zone.offset_at(SCAN_FROM);
        let mut exposure = Exposure {
            offsets: vec![offset],
            gap: None,
            clock_change: None,
            overlap: None,
        };
        let mut cursor = SCAN_FROM - 1;
        while let Some((at, after)) = zone.next_transition(cursor) {
            // `at <= cursor` cannot happen; the check guarantees the loop ends.
            if at >= SCAN_UNTIL || at <= cursor {
                break;
            }
            if !exposure.offsets.contains(&after) {
                exposure.offsets.push(after);
            }
            // One example of each kind is enough; later ones are not searched.
            if after > offset {
                let first = if is_clock_change(offset, after) {
                    &mut exposure.clock_change
                } else {
                    &mut exposure.gap
                };
                if first.is_none() {
                    *first = first_match_between(cron, at, offset, after);
                }
            } else if after < offset && exposure.overlap.is_none() {
                exposure.overlap = first_match_between(cron, at, offset, after);
            }
            offset = after;
            cursor = at;
        }
        exposure
    }
}

/// The first matching wall-clock minute among those a transition at `at`
/// from offset `before` to `after` skips (gap) or repeats (overlap): the
/// minutes in `[at + min offset, at + max offset)`, rounded up to whole
/// minutes as the schedule search does.
fn first_match_between(cron: &CronExpr, at: i64, before: i32, after: i32) -> Option<DstHit> {
    let low = ceil_minutes(at + i64::from(before.min(after)));
    let high = ceil_minutes(at + i64::from(before.max(after)));
    if low >= high {
        return None;
    }
    cron.next_civil(Civil::from_minutes(low), Civil::from_minutes(high))
        .map(|local| DstHit {
            local,
            transition: at,
        })
}

fn ceil_minutes(seconds: i64) -> i64 {
    -((-seconds).div_euclid(60))
}

/// How the schedule treats slots at transitions, reduced to the questions
/// that separate it from the platforms' wall-clock evaluation.
struct DstBehaviour {
    /// A fixed-time slot in a DST gap runs when the gap ends.
    shifts: bool,
    /// A fixed-time slot skipped by a clock change runs when the jump ends.
    shifts_clock_change: bool,
    /// A slot in an overlap runs in both passes.
    twice: bool,
    interval_like: bool,
}

impl DstBehaviour {
    fn of(schedule: &Schedule) -> DstBehaviour {
        // Real time (interval-like) means: gap times do not exist, overlap
        // times fire in both passes, whatever the policy says.
        let real_time = schedule.follows_real_time();
        let policy = schedule.policy();
        DstBehaviour {
            shifts: !real_time && matches!(policy.gap, DstGap::Shift | DstGap::ShiftAlways),
            shifts_clock_change: !real_time && policy.gap == DstGap::ShiftAlways,
            twice: real_time || policy.overlap == DstOverlap::Twice,
            interval_like: real_time,
        }
    }
}

/// The zone to declare on the platform, or why no zone gives exact slots.
pub(super) fn zone_for(
    schedule: &Schedule,
    days: &DayPlan,
    platform: Platform,
) -> Result<String, Vec<Inexact>> {
    let cron = schedule.cron();
    let zone = schedule.zone();
    if zone.is_utc() {
        return Ok("UTC".to_string());
    }
    let exposure = Exposure::of(cron, zone);
    // `Etc/UTC`, `Etc/GMT` or `Africa/Abidjan` are UTC in effect, though
    // `Zone::is_utc` only recognises the name `UTC`.
    if exposure.offsets == [0] {
        return Ok("UTC".to_string());
    }
    let behaviour = DstBehaviour::of(schedule);
    if matches!(days, DayPlan::Every)
        && months_and_years_full(cron)
        && is_zone_free(cron, &exposure, &behaviour)
    {
        return Ok("UTC".to_string());
    }
    match platform {
        Platform::Cloudflare => Err(vec![utc_only(zone, platform)]),
        Platform::EventBridge => {
            let mismatches = wall_clock_mismatches(zone, &exposure, &behaviour, platform);
            if mismatches.is_empty() {
                Ok(zone.name().to_string())
            } else {
                Err(mismatches)
            }
        }
    }
}

fn utc_only(zone: &Zone, platform: Platform) -> Inexact {
    Inexact::UtcOnly {
        platform,
        zone: zone.name().to_string(),
    }
}

fn months_and_years_full(cron: &CronExpr) -> bool {
    cron.months() & EVERY_MONTH == EVERY_MONTH && cron.years().is_none_or(|y| y.is_full())
}

/// Whether the schedule's slots are the same instants as the expression's in
/// UTC. With every day selected, a minute matches by its minute of the day
/// alone; if that set is unchanged by every offset, a real-time schedule
/// (nothing skipped, overlaps in both passes) is the UTC one. A shifted gap
/// slot adds an instant and a single overlap pass drops some, so those must
/// not occur.
fn is_zone_free(cron: &CronExpr, exposure: &Exposure, behaviour: &DstBehaviour) -> bool {
    let drops_second_pass = exposure.overlap.is_some() && !behaviour.twice;
    let adds_shifted = (exposure.gap.is_some() && behaviour.shifts)
        || (exposure.clock_change.is_some() && behaviour.shifts_clock_change);
    !drops_second_pass
        && !adds_shifted
        && exposure
            .offsets
            .iter()
            .all(|offset| day_minutes_invariant(cron, *offset))
}

/// Whether rotating the matching minutes of the day by `offset` (seconds)
/// leaves them unchanged. Offsets with seconds never qualify.
fn day_minutes_invariant(cron: &CronExpr, offset: i32) -> bool {
    if offset % 60 != 0 {
        return false;
    }
    let shift = i64::from(offset / 60);
    let matches = |minute_of_day: i64| {
        let hour = minute_of_day / 60;
        let minute = minute_of_day % 60;
        cron.hours() & (1 << hour) != 0 && cron.minutes() & (1 << minute) != 0
    };
    (0..1440i64).all(|m| matches(m) == matches((m + shift).rem_euclid(1440)))
}

/// Where evaluating the expression on the zone's wall clock with skip/once
/// (EventBridge) differs from the schedule.
fn wall_clock_mismatches(
    zone: &Zone,
    exposure: &Exposure,
    behaviour: &DstBehaviour,
    platform: Platform,
) -> Vec<Inexact> {
    let mut reasons = Vec::new();
    let mut push = |hit: DstHit, mismatch| {
        reasons.push(Inexact::Dst {
            platform,
            zone: zone.name().to_string(),
            mismatch,
            local: hit.local,
            // The second came from a jiff timestamp, so it converts back.
            transition: Timestamp::from_second(hit.transition).unwrap_or(Timestamp::UNIX_EPOCH),
        });
    };
    if let Some(hit) = exposure.gap.filter(|_| behaviour.shifts) {
        push(hit, DstMismatch::GapShifted);
    }
    if let Some(hit) = exposure
        .clock_change
        .filter(|_| behaviour.shifts_clock_change)
    {
        push(hit, DstMismatch::ClockChangeShifted);
    }
    if let Some(hit) = exposure.overlap.filter(|_| behaviour.twice) {
        let mismatch = if behaviour.interval_like {
            DstMismatch::OverlapIntervalLike
        } else {
            DstMismatch::OverlapTwice
        };
        push(hit, mismatch);
    }
    reasons
}
