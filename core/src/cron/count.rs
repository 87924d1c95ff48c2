//! Counting the matching minutes of a civil (wall-clock) range by
//! arithmetic, never one step per minute.
//!
//! A range splits into a partial first day, whole days and a partial last
//! day. Every matching day holds `popcount(hours) × popcount(minutes)`
//! matches; the partial days count their hours and minutes with masks. Whole
//! days are counted per month as the popcount of [`day_mask`] (a partial
//! first and last month are masked to their days), or, when only the weekday
//! decides whether a day matches, by whole weeks. Whole 400-year Gregorian
//! cycles (after which weekdays and leap years repeat) are counted once and
//! multiplied, so even the whole ±9999-year range costs a few thousand
//! month masks.

use super::CronExpr;
use super::calendar::{ALL_DAYS, Civil, civil_from_days, day_mask};

const MINUTES_PER_DAY: i64 = 1440;
/// Bits 1..=12.
const ALL_MONTHS: u16 = 0x1ffe;
/// Bits 0..=6 (Sunday = 0).
const ALL_WEEKDAYS: u8 = 0x7f;
/// Bits 0..=23.
const ALL_HOURS: u32 = 0x00ff_ffff;
/// Bits 0..=59.
const ALL_MINUTES: u64 = (1 << 60) - 1;
/// The Gregorian calendar repeats every 400 years.
const CYCLE_YEARS: i32 = 400;

/// Bits `lo..hi` of a `u64` (`0 <= lo`, `hi <= 64`; empty when `lo >= hi`).
fn bits64(lo: i64, hi: i64) -> u64 {
    if lo >= hi || lo >= 64 || hi <= 0 {
        return 0;
    }
    let below_hi = if hi >= 64 { !0 } else { (1u64 << hi) - 1 };
    let below_lo = if lo <= 0 { 0 } else { (1u64 << lo) - 1 };
    below_hi & !below_lo
}

/// Bits `lo..hi` of a `u32`, as [`bits64`].
fn bits32(lo: i64, hi: i64) -> u32 {
    (bits64(lo, hi.min(32)) & u64::from(u32::MAX)) as u32
}

fn next_month(year: i32, month: u8) -> (i32, u8) {
    if month >= 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    }
}

impl CronExpr {
    /// The number of matching wall-clock minutes `m` with `from <= m < until`
    /// (minutes as in [`Civil::to_minutes`]), counting only the supported
    /// years ([`Civil::MIN`]..=[`Civil::MAX`]) and, for EventBridge, the
    /// allowed years.
    pub(crate) fn count_civil(&self, from: i64, until: i64) -> u64 {
        let from = from.max(Civil::MIN.to_minutes());
        let until = until.min(Civil::MAX.to_minutes().saturating_add(1));
        if from >= until || self.never {
            return 0;
        }
        let (first_day, first_minute) = (
            from.div_euclid(MINUTES_PER_DAY),
            from.rem_euclid(MINUTES_PER_DAY),
        );
        let (last_day, last_minute) = (
            until.div_euclid(MINUTES_PER_DAY),
            until.rem_euclid(MINUTES_PER_DAY),
        );
        if first_day == last_day {
            return if self.day_matches(first_day) {
                self.minutes_of_day(first_minute, last_minute)
            } else {
                0
            };
        }
        let mut total = 0u64;
        let mut whole_from = first_day;
        if first_minute > 0 {
            if self.day_matches(first_day) {
                total = self.minutes_of_day(first_minute, MINUTES_PER_DAY);
            }
            whole_from = first_day + 1;
        }
        let per_day = u64::from((self.hours & ALL_HOURS).count_ones())
            * u64::from((self.minutes & ALL_MINUTES).count_ones());
        total = total.saturating_add(
            self.count_days(whole_from, last_day)
                .saturating_mul(per_day),
        );
        if last_minute > 0 && self.day_matches(last_day) {
            total = total.saturating_add(self.minutes_of_day(0, last_minute));
        }
        total
    }

    /// Matching minutes of one matching day whose minute of the day is in
    /// `from..until` (`0 <= from <= until <= 1440`).
    fn minutes_of_day(&self, from: i64, until: i64) -> u64 {
        if from >= until {
            return 0;
        }
        let hours = self.hours & ALL_HOURS;
        let minutes = self.minutes & ALL_MINUTES;
        let (from_hour, from_minute) = (from / 60, from % 60);
        let (until_hour, until_minute) = (until / 60, until % 60);
        let hour_set = |h: i64| (0..24).contains(&h) && hours & (1 << h) != 0;
        let in_hour = |lo: i64, hi: i64| u64::from((minutes & bits64(lo, hi)).count_ones());
        if from_hour == until_hour {
            return if hour_set(from_hour) {
                in_hour(from_minute, until_minute)
            } else {
                0
            };
        }
        let first = if hour_set(from_hour) {
            in_hour(from_minute, 60)
        } else {
            0
        };
        let whole_hours = u64::from((hours & bits32(from_hour + 1, until_hour)).count_ones());
        let last = if hour_set(until_hour) {
            in_hour(0, until_minute)
        } else {
            0
        };
        first + whole_hours * u64::from(minutes.count_ones()) + last
    }

    /// When whether a day matches depends on its weekday alone (every month
    /// and year allowed, no day-of-month restriction that survives Vixie's
    /// rule, no `#`/`L` in day-of-week): the matching weekdays.
    fn weekday_only(&self) -> Option<u8> {
        if self.years.is_some() || self.months & ALL_MONTHS != ALL_MONTHS {
            return None;
        }
        let dom_full = self.dom.days & ALL_DAYS == ALL_DAYS && !self.dom.has_specials();
        let dow_full = self.dow.days & ALL_WEEKDAYS == ALL_WEEKDAYS && !self.dow.has_specials();
        if self.days_are_either() {
            (dom_full || dow_full).then_some(ALL_WEEKDAYS)
        } else {
            (dom_full && !self.dow.has_specials()).then_some(self.dow.days & ALL_WEEKDAYS)
        }
    }

    /// The matching days of `year-month` (bits 1..=31), zero when the month
    /// or year is not allowed.
    fn month_days(&self, year: i32, month: u8) -> u32 {
        if self.months & (1 << month) == 0 || !self.year_allowed(year) {
            return 0;
        }
        day_mask(self, year, month)
    }

    /// Does the day (days since 1970-01-01) match?
    fn day_matches(&self, day: i64) -> bool {
        if let Some(weekdays) = self.weekday_only() {
            return weekdays & (1 << (day + 4).rem_euclid(7)) != 0;
        }
        let (year, month, d) = civil_from_days(day);
        self.month_days(year, month) & (1 << d) != 0
    }

    /// The number of matching days in `from..until` (days since 1970-01-01).
    fn count_days(&self, from: i64, until: i64) -> u64 {
        if from >= until {
            return 0;
        }
        if let Some(weekdays) = self.weekday_only() {
            let days = (until - from) as u64;
            let mut total = days / 7 * u64::from(weekdays.count_ones());
            let first = (from + 4).rem_euclid(7);
            for i in 0..(days % 7) as i64 {
                if weekdays & (1 << ((first + i) % 7)) != 0 {
                    total += 1;
                }
            }
            return total;
        }
        let (y1, m1, d1) = civil_from_days(from);
        let (y2, m2, d2) = civil_from_days(until);
        let in_month = |y: i32, m: u8, lo: u8, hi: u8| {
            u64::from((self.month_days(y, m) & bits32(i64::from(lo), i64::from(hi))).count_ones())
        };
        if (y1, m1) == (y2, m2) {
            return in_month(y1, m1, d1, d2);
        }
        // `until` is exclusive: its month contributes the days before it.
        let first = in_month(y1, m1, d1, 32);
        let last = in_month(y2, m2, 1, d2);
        first
            .saturating_add(self.count_months(next_month(y1, m1), (y2, m2)))
            .saturating_add(last)
    }

    /// The number of matching days in the whole months from `from` up to,
    /// not including, `until` (as `(year, month)`).
    fn count_months(&self, from: (i32, u8), until: (i32, u8)) -> u64 {
        let (mut year, mut month) = from;
        let mut total = 0u64;
        while (year, month) < until && month != 1 {
            total += u64::from(self.month_days(year, month).count_ones());
            (year, month) = next_month(year, month);
        }
        if year < until.0 {
            total = total.saturating_add(self.count_years(year, until.0));
            (year, month) = (until.0, 1);
        }
        while (year, month) < until {
            total += u64::from(self.month_days(year, month).count_ones());
            (year, month) = next_month(year, month);
        }
        total
    }

    /// The number of matching days in the whole years `from..until`.
    fn count_years(&self, from: i32, until: i32) -> u64 {
        let mut total = 0u64;
        let mut year = from;
        if self.years.is_none() && until.saturating_sub(from) >= 2 * CYCLE_YEARS {
            let cycles = (until - from) / CYCLE_YEARS;
            let per_cycle: u64 = (from..from + CYCLE_YEARS).map(|y| self.count_year(y)).sum();
            total = per_cycle.saturating_mul(cycles as u64);
            year = from + cycles * CYCLE_YEARS;
        }
        for y in year..until {
            total = total.saturating_add(self.count_year(y));
        }
        total
    }

    /// The number of matching days in one year.
    fn count_year(&self, year: i32) -> u64 {
        if !self.year_allowed(year) {
            return 0;
        }
        (1..=12u8)
            .map(|m| u64::from(self.month_days(year, m).count_ones()))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(expr: &CronExpr, from: i64, until: i64) -> u64 {
        (from..until)
            .filter(|m| expr.matches(Civil::from_minutes(*m)))
            .count() as u64
    }

    #[test]
    fn small_ranges_match_brute_force() {
        let exprs = [
            "* * * * *",
            "*/7 3-5,22 * * *",
            "0 0 L * *",
            "15 10 LW * *",
            "0 12 15W * *",
            "0 9 1,15 * MON",
            "0 9 13 * +FRI",
            "0 0 * * 5L",
            "0 0 * * MON#2",
            "0 0 29 2 *",
            "59 23 31 */2 *",
            "0 * * * 1-5",
        ];
        let starts = [
            Civil::new(2024, 2, 27, 23, 58),
            Civil::new(2026, 12, 30, 1, 1),
            Civil::new(1999, 6, 30, 0, 0),
        ];
        for text in exprs {
            let expr = CronExpr::parse(text).unwrap();
            for start in starts {
                let from = start.to_minutes();
                for len in [
                    0,
                    1,
                    59,
                    61,
                    1439,
                    1440,
                    1441,
                    3000,
                    40 * 1440 + 17,
                    100 * 1440 + 3,
                ] {
                    assert_eq!(
                        expr.count_civil(from, from + len),
                        brute(&expr, from, from + len),
                        "{text} from {start:?} for {len} minutes"
                    );
                }
            }
        }
    }

    #[test]
    fn whole_range_does_not_overflow() {
        let expr = CronExpr::parse("* * * * *").unwrap();
        let days = Civil::MAX.to_minutes() / 1440 - Civil::MIN.to_minutes() / 1440 + 1;
        assert_eq!(expr.count_civil(i64::MIN, i64::MAX), days as u64 * 1440);
        let leap = CronExpr::parse("0 0 29 2 *").unwrap();
        // 2000..=2100: 25 leap years (2100 is not one).
        assert_eq!(
            leap.count_civil(
                Civil::new(2000, 1, 1, 0, 0).to_minutes(),
                Civil::new(2101, 1, 1, 0, 0).to_minutes()
            ),
            25
        );
        // Cycles: 97 leap years per 400; -9999..=9999 is 19,999 years.
        let all = leap.count_civil(i64::MIN, i64::MAX);
        let by_year = (-9999..=9999)
            .filter(|y: &i32| y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
            .count() as u64;
        assert_eq!(all, by_year);
    }
}
