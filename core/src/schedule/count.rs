//! Counting slots in a span ([`Schedule::count_between`]) by arithmetic
//! per segment, never one step per slot. Apart from the searches because
//! it must agree with them slot for slot while sharing none of their
//! loop.

use super::*;

impl Schedule {
    /// The number of slots in `(after, until]` — exactly the instants
    /// [`Schedule::iter_after`]`(after)` yields up to `until` — in time
    /// O(months + transitions) in the span, never one step per slot.
    ///
    /// It walks the zone's segments like [`Schedule::next_occurrence`]: each
    /// segment maps its civil range one-to-one onto instants, so its slots
    /// are the civil matches in that range (minus, for fixed-time `once`
    /// schedules, the minutes a backward transition repeats), counted by
    /// arithmetic. A forward transition whose gap the schedule shifts (a
    /// DST gap under `shift`, any gap under `shift_always`) adds one slot at
    /// its instant when the gap holds a match — unless the first minute
    /// after the gap is a match at that very instant (slots are instants:
    /// one slot, not two).
    ///
    /// Unlike [`Schedule::next_occurrence`], it has no 401-year search
    /// horizon: it also counts slots that follow a longer stretch without
    /// any (only possible with an EventBridge year set far from `after`).
    pub fn count_between(&self, after: Timestamp, until: Timestamp) -> u64 {
        if until <= after || self.cron.never_fires() {
            return 0;
        }
        // Slots are whole seconds, so `(after, until]` holds those of
        // `(a, b]`. In a segment of offset `o`, the minute `m` is the instant
        // `60 m - o`, inside `(a, b]` iff `first(o) <= m < end(o)`.
        let (a, _) = floor_second(after);
        let (b, _) = floor_second(until);
        if b <= a {
            return 0;
        }
        let first = |o: i32| (a + i64::from(o)).div_euclid(60) + 1;
        let end = |o: i32| (b + i64::from(o)).div_euclid(60) + 1;
        let mut offset = self.zone.offset_at(a);
        let mut lower = first(offset);
        if self.once() {
            if let Some((start, before)) = self.zone.prev_transition(a) {
                if before > offset {
                    lower = lower.max(ceil_div(start + i64::from(before), 60));
                }
            }
        }
        let mut segment_end = self.zone.next_transition(a);
        let mut total = 0u64;
        loop {
            let upper = match segment_end {
                Some((at, _)) => ceil_div(at + i64::from(offset), 60).min(end(offset)),
                None => end(offset),
            };
            total = total.saturating_add(self.cron.count_civil(lower, upper));
            let Some((start, after_offset)) = segment_end else {
                break;
            };
            if start > b {
                break;
            }
            let before = offset;
            offset = after_offset;
            lower = ceil_div(start + i64::from(offset), 60);
            if after_offset > before && self.shifts(before, after_offset) {
                if self.gap_match(start, before, after_offset).is_some() {
                    // The minute right after the gap is the instant `start`
                    // itself when the offset is whole minutes; if it matches,
                    // the segment has counted that instant already.
                    let same_instant = (start + i64::from(offset)).rem_euclid(60) == 0
                        && lower <= Civil::MAX.to_minutes()
                        && self.cron.matches(Civil::from_minutes(lower));
                    if !same_instant {
                        total = total.saturating_add(1);
                    }
                }
            } else if after_offset < before && self.once() {
                lower = lower.max(ceil_div(start + i64::from(before), 60));
            }
            segment_end = self.zone.next_transition(start);
        }
        total
    }
}
