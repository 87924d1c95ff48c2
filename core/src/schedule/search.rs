//! The next and previous slots: the walk over the zone's segments between
//! transitions, each searched on the wall clock by the cron expression,
//! up to a horizon of 401 years. Apart from the count, which walks the
//! same segments without visiting slots.

use super::*;

/// How far a search looks before it gives up (years of wall-clock time). The
/// Gregorian calendar repeats every 400 years, so an expression that has not
/// fired by then never will under the zone's current rules.
const HORIZON_YEARS: i32 = 401;

impl Schedule {
    /// The first slot strictly after `t`; `None` when there is none: the
    /// schedule never fires, or its next slot lies past the search horizon
    /// (401 years) or the range of `Timestamp`.
    ///
    /// # Examples
    ///
    /// `30 2 * * *` in New York across the spring-forward of 2026-03-08,
    /// when 02:00 EST jumps to 03:00 EDT and 02:30 does not exist. Under
    /// the default policy (`dst_gap = "shift"`) that day's slot runs at the
    /// first instant after the gap, 03:00 EDT:
    ///
    /// ```
    /// use cronslot_core::{CronExpr, DstPolicy, Schedule, Zone};
    /// use jiff::Timestamp;
    ///
    /// let schedule = Schedule::new(
    ///     CronExpr::parse("30 2 * * *")?,
    ///     Zone::get("America/New_York")?,
    ///     DstPolicy::default(),
    /// );
    /// let after: Timestamp = "2026-03-07T00:00:00Z".parse()?;
    ///
    /// let first = schedule.next_after(after).unwrap();
    /// assert_eq!(first.to_string(), "2026-03-07T07:30:00Z"); // 02:30 EST
    /// let second = schedule.next_after(first).unwrap();
    /// assert_eq!(second.to_string(), "2026-03-08T07:00:00Z"); // 03:00 EDT, shifted
    /// let third = schedule.next_after(second).unwrap();
    /// assert_eq!(third.to_string(), "2026-03-09T06:30:00Z"); // 02:30 EDT
    ///
    /// // Under `dst_gap = "skip"` the slot in the gap does not exist.
    /// let skipping = Schedule::new(
    ///     CronExpr::parse("30 2 * * *")?,
    ///     Zone::get("America/New_York")?,
    ///     DstPolicy::SKIP_ONCE,
    /// );
    /// assert_eq!(skipping.next_after(first), Some(third));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        self.next_occurrence(t).map(|o| o.instant)
    }

    /// The last slot strictly before `t`.
    pub fn prev_before(&self, t: Timestamp) -> Option<Timestamp> {
        self.prev_occurrence(t).map(|o| o.instant)
    }

    /// Is `t` exactly one of this schedule's slots?
    pub fn is_slot(&self, t: Timestamp) -> bool {
        let (s, frac) = floor_second(t);
        !frac && self.next_after(ts(s - 1)).map(|n| n.as_second()) == Some(s)
    }

    /// Slots strictly after `t`, in order.
    pub fn iter_after(&self, t: Timestamp) -> impl Iterator<Item = Occurrence> + '_ {
        let mut cursor = t;
        std::iter::from_fn(move || {
            let next = self.next_occurrence(cursor)?;
            cursor = next.instant;
            Some(next)
        })
    }

    /// The slot at wall-clock `minute` under `offset`; `None` when that
    /// instant is outside `Timestamp`'s range (the civil search spans years
    /// -9999..=9999, slightly more than instants do), rather than clamping it
    /// to an instant that is not a slot.
    fn occurrence(&self, minute: i64, offset: i32, kind: SlotKind) -> Option<Occurrence> {
        let instant = Timestamp::from_second(minute * 60 - i64::from(offset)).ok()?;
        Some(Occurrence {
            instant,
            local: Civil::from_minutes(minute),
            kind,
        })
    }

    /// The first slot strictly after `t`, with its wall-clock time and kind.
    pub fn next_occurrence(&self, t: Timestamp) -> Option<Occurrence> {
        if self.cron.never_fires() {
            return None;
        }
        let (cur, _) = floor_second(t);
        let mut offset = self.zone.offset_at(cur);
        let mut lower = (cur + i64::from(offset)).div_euclid(60) + 1;
        // Wall-clock minutes below this were already passed once (they belong
        // to the first pass of an overlap that began this segment).
        let mut repeated_below = i64::MIN;
        if let Some((start, before)) = self.zone.prev_transition(cur) {
            if before > offset {
                repeated_below = ceil_div(start + i64::from(before), 60);
                if self.once() {
                    lower = lower.max(repeated_below);
                }
            }
        }
        let horizon = Civil::from_minutes(lower)
            .year
            .saturating_add(HORIZON_YEARS);
        let mut segment_end = self.zone.next_transition(cur);
        loop {
            let upper = match segment_end {
                Some((end, _)) => ceil_div(end + i64::from(offset), 60),
                None => Civil::MAX.to_minutes() + 1,
            };
            let from = Civil::from_minutes(lower);
            if from.year > horizon {
                return None;
            }
            if lower < upper {
                let until = if upper > Civil::MAX.to_minutes() {
                    Civil::MAX
                } else {
                    Civil::from_minutes(upper)
                };
                let found = if upper > Civil::MAX.to_minutes() {
                    self.cron
                        .next_civil(from, until)
                        .or_else(|| (self.cron.matches(until)).then_some(until))
                } else {
                    self.cron.next_civil(from, until)
                };
                if let Some(c) = found {
                    let minute = c.to_minutes();
                    let kind = if minute < repeated_below {
                        SlotKind::SecondPass
                    } else {
                        SlotKind::Regular
                    };
                    return self.occurrence(minute, offset, kind);
                }
            }
            let (start, after) = segment_end?;
            let before = offset;
            offset = after;
            repeated_below = i64::MIN;
            lower = ceil_div(start + i64::from(after), 60);
            if after > before && self.shifts(before, after) {
                if let Some(local) = self.gap_match(start, before, after) {
                    return Some(Occurrence {
                        instant: ts(start),
                        local,
                        kind: SlotKind::ShiftedFromGap,
                    });
                }
            } else if after < before {
                repeated_below = ceil_div(start + i64::from(before), 60);
                if self.once() {
                    lower = lower.max(repeated_below);
                }
            }
            segment_end = self.zone.next_transition(start);
        }
    }

    /// The last slot strictly before `t`.
    pub fn prev_occurrence(&self, t: Timestamp) -> Option<Occurrence> {
        if self.cron.never_fires() {
            return None;
        }
        let (floor, frac) = floor_second(t);
        let mut hi = if frac { floor } else { floor - 1 };
        let mut offset = self.zone.offset_at(hi);
        let mut upper = (hi + i64::from(offset)).div_euclid(60);
        let horizon = Civil::from_minutes(upper)
            .year
            .saturating_sub(HORIZON_YEARS);
        let mut segment_start = self.zone.prev_transition(hi);
        loop {
            let mut repeated_below = i64::MIN;
            let lower = match segment_start {
                Some((start, before)) => {
                    let mut l = ceil_div(start + i64::from(offset), 60);
                    if before > offset {
                        repeated_below = ceil_div(start + i64::from(before), 60);
                        if self.once() {
                            l = l.max(repeated_below);
                        }
                    }
                    l
                }
                None => Civil::MIN.to_minutes(),
            };
            let at = Civil::from_minutes(upper);
            if at.year < horizon {
                return None;
            }
            if lower <= upper {
                if let Some(c) = self.cron.prev_civil(at, Civil::from_minutes(lower)) {
                    let minute = c.to_minutes();
                    let kind = if minute < repeated_below {
                        SlotKind::SecondPass
                    } else {
                        SlotKind::Regular
                    };
                    return self.occurrence(minute, offset, kind);
                }
            }
            let (start, before) = segment_start?;
            if offset > before && self.shifts(before, offset) {
                if let Some(local) = self.gap_match(start, before, offset) {
                    return Some(Occurrence {
                        instant: ts(start),
                        local,
                        kind: SlotKind::ShiftedFromGap,
                    });
                }
            }
            hi = start - 1;
            offset = before;
            upper = (hi + i64::from(offset)).div_euclid(60);
            segment_start = self.zone.prev_transition(hi);
        }
    }
}
