//! Civil (wall-clock, zone-free) calendar arithmetic and the bit-set search
//! for the next and previous matching minute.
//!
//! The search works month by month: the days of a month that match are one
//! 32-bit mask, computed once per month, and hours and minutes are found with
//! `trailing_zeros`/`leading_zeros`. A search therefore costs a few dozen
//! instructions per month it crosses, never one step per minute.

use super::CronExpr;

/// Bits 1..=31.
pub(crate) const ALL_DAYS: u32 = 0xffff_fffe;

/// The range of years the search covers (that of `jiff`).
pub(crate) const MIN_YEAR: i32 = -9999;
pub(crate) const MAX_YEAR: i32 = 9999;

/// A wall-clock minute: no zone, no seconds. Ordered chronologically.
///
/// Fields are public and unchecked: [`Civil::is_valid`] tells whether they
/// name a real minute of the proleptic Gregorian calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Civil {
    /// The year, -9999..=9999 (the range the search covers).
    pub year: i32,
    /// The month, 1..=12.
    pub month: u8,
    /// The day of the month, 1..=31 (up to the month's length).
    pub day: u8,
    /// The hour, 0..=23.
    pub hour: u8,
    /// The minute, 0..=59.
    pub minute: u8,
}

impl Civil {
    /// The first minute the calendar search covers: -9999-01-01 00:00.
    pub const MIN: Civil = Civil {
        year: MIN_YEAR,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
    };
    /// The last minute the calendar search covers: 9999-12-31 23:59.
    pub const MAX: Civil = Civil {
        year: MAX_YEAR,
        month: 12,
        day: 31,
        hour: 23,
        minute: 59,
    };

    /// The minute `year-month-day hour:minute`, taken as given (not checked;
    /// see [`Civil::is_valid`]).
    pub fn new(year: i32, month: u8, day: u8, hour: u8, minute: u8) -> Civil {
        Civil {
            year,
            month,
            day,
            hour,
            minute,
        }
    }

    /// True when the fields name a real minute within [`Civil::MIN`]..=
    /// [`Civil::MAX`] (no 30 February, no hour 24).
    pub fn is_valid(&self) -> bool {
        (MIN_YEAR..=MAX_YEAR).contains(&self.year)
            && (1..=12).contains(&self.month)
            && self.day >= 1
            && self.day <= days_in_month(self.year, self.month)
            && self.hour < 24
            && self.minute < 60
    }

    /// Minutes since 1970-01-01 00:00 on the same wall clock.
    pub fn to_minutes(self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * 1440
            + i64::from(self.hour) * 60
            + i64::from(self.minute)
    }

    /// The inverse of [`Civil::to_minutes`]; clamps to the supported years.
    pub fn from_minutes(minutes: i64) -> Civil {
        let min = Civil::MIN.to_minutes();
        let max = Civil::MAX.to_minutes();
        let minutes = minutes.clamp(min, max);
        let days = minutes.div_euclid(1440);
        let rest = minutes.rem_euclid(1440);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: (rest / 60) as u8,
            minute: (rest % 60) as u8,
        }
    }

    /// The day of the week: 0 = Sunday … 6 = Saturday.
    pub fn weekday(&self) -> u8 {
        weekday_of(self.year, self.month, self.day)
    }
}

pub(crate) fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

pub(crate) fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 in the proleptic Gregorian calendar
/// (the well-known era-based algorithm: 400-year eras of 146,097 days).
pub(crate) fn days_from_civil(year: i32, month: u8, day: u8) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let m = i64::from(month);
    let month_from_march = (m + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

pub(crate) fn civil_from_days(days: i64) -> (i32, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year as i32, month as u8, day as u8)
}

/// 0 = Sunday … 6 = Saturday (1970-01-01 was a Thursday).
pub(crate) fn weekday_of(year: i32, month: u8, day: u8) -> u8 {
    (days_from_civil(year, month, day) + 4).rem_euclid(7) as u8
}

/// The days (bits 1..=31) of `year-month` on which `expr` matches.
pub(crate) fn day_mask(expr: &CronExpr, year: i32, month: u8) -> u32 {
    let dim = u32::from(days_in_month(year, month));
    let valid = ((1u64 << (dim + 1)) - 2) as u32;
    let first = u32::from(weekday_of(year, month, 1));

    let mut dom = expr.dom.days & valid;
    let spec = &expr.dom;
    if spec.last {
        dom |= 1 << dim;
    }
    if spec.last_weekday {
        let last_wd = (first + dim - 1) % 7;
        let day = match last_wd {
            6 => dim - 1,
            0 => dim - 2,
            _ => dim,
        };
        dom |= 1 << day;
    }
    let mut nearest = spec.nearest_weekday & valid;
    while nearest != 0 {
        let day = nearest.trailing_zeros();
        nearest &= nearest - 1;
        let wd = (first + day - 1) % 7;
        // Nearest weekday, never leaving the month: a Saturday moves back to
        // Friday unless it is the 1st (then Monday the 3rd); a Sunday moves on
        // to Monday unless it is the last day (then Friday).
        let target = match wd {
            6 if day == 1 => 3,
            6 => day - 1,
            0 if day == dim => day - 2,
            0 => day + 1,
            _ => day,
        };
        dom |= 1 << target;
    }

    let week = &expr.dow;
    // Bits 1..=7 for the first seven days, then repeated every seven days.
    let mut weekly: u32 = 0;
    for d in 1..=7u32 {
        if week.days & (1 << ((first + d - 1) % 7)) != 0 {
            weekly |= 1 << d;
        }
    }
    let mut dow = (weekly | weekly << 7 | weekly << 14 | weekly << 21 | weekly << 28) & valid;
    if week.has_specials() {
        for w in 0..7u32 {
            let first_w = 1 + (w + 7 - first) % 7;
            let nth = u32::from(week.nth[w as usize]);
            if nth != 0 {
                for n in 1..=5u32 {
                    let day = first_w + 7 * (n - 1);
                    if nth & (1 << n) != 0 && day <= dim {
                        dow |= 1 << day;
                    }
                }
            }
            if week.last & (1 << w) != 0 {
                dow |= 1 << (first_w + 7 * ((dim - first_w) / 7));
            }
        }
    }

    if expr.days_are_either() {
        dom | dow
    } else {
        dom & dow
    }
}

fn next_month(year: i32, month: u8) -> (i32, u8) {
    if month >= 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    }
}

fn prev_month(year: i32, month: u8) -> (i32, u8) {
    if month <= 1 {
        (year - 1, 12)
    } else {
        (year, month - 1)
    }
}

/// The first matching minute `>= from` and `< until`.
pub(crate) fn next_match(expr: &CronExpr, from: Civil, until: Civil) -> Option<Civil> {
    if from >= until || !from.is_valid() {
        return None;
    }
    let Civil {
        mut year,
        mut month,
        ..
    } = from;
    let mut d = u32::from(from.day);
    let mut h = u32::from(from.hour);
    let mut mi = u32::from(from.minute);
    loop {
        if (year, month) > (until.year, until.month) || year > MAX_YEAR {
            return None;
        }
        if !expr.year_allowed(year) {
            year += 1;
            (month, d, h, mi) = (1, 1, 0, 0);
            continue;
        }
        if expr.months & (1 << month) == 0 {
            let later = expr.months & (!0u16 << month) & 0x1ffe;
            if later == 0 {
                year += 1;
                month = 1;
            } else {
                month = later.trailing_zeros() as u8;
            }
            (d, h, mi) = (1, 0, 0);
            continue;
        }
        let mask = day_mask(expr, year, month);
        while d <= 31 {
            let days = mask & (!0u32 << d);
            if days == 0 {
                break;
            }
            let nd = days.trailing_zeros();
            if nd != d {
                (d, h, mi) = (nd, 0, 0);
            }
            let hours = expr.hours & (!0u32 << h);
            if hours == 0 || h > 23 {
                (d, h, mi) = (d + 1, 0, 0);
                continue;
            }
            let nh = hours.trailing_zeros();
            if nh != h {
                (h, mi) = (nh, 0);
            }
            let minutes = if mi > 59 {
                0
            } else {
                expr.minutes & (!0u64 << mi)
            };
            if minutes == 0 {
                (h, mi) = (h + 1, 0);
                if h > 23 {
                    (d, h) = (d + 1, 0);
                }
                continue;
            }
            mi = minutes.trailing_zeros();
            let found = Civil::new(year, month, d as u8, h as u8, mi as u8);
            return (found < until).then_some(found);
        }
        (year, month) = next_month(year, month);
        (d, h, mi) = (1, 0, 0);
    }
}

/// The last matching minute `<= from` and `>= floor`.
pub(crate) fn prev_match(expr: &CronExpr, from: Civil, floor: Civil) -> Option<Civil> {
    if from < floor || !from.is_valid() {
        return None;
    }
    let Civil {
        mut year,
        mut month,
        ..
    } = from;
    let mut d = u32::from(from.day);
    let mut h = u32::from(from.hour);
    let mut mi = u32::from(from.minute);
    loop {
        if (year, month) < (floor.year, floor.month) || year < MIN_YEAR {
            return None;
        }
        if !expr.year_allowed(year) {
            year -= 1;
            (month, d, h, mi) = (12, 31, 23, 59);
            continue;
        }
        if expr.months & (1 << month) == 0 {
            let earlier = expr.months & ((1u16 << month) - 1) & 0x1ffe;
            if earlier == 0 {
                year -= 1;
                month = 12;
            } else {
                month = (15 - earlier.leading_zeros()) as u8;
            }
            (d, h, mi) = (31, 23, 59);
            continue;
        }
        let mask = day_mask(expr, year, month);
        d = d.min(u32::from(days_in_month(year, month)));
        while d >= 1 {
            let days = mask & ((2u64 << d) - 1) as u32;
            if days == 0 {
                break;
            }
            let nd = 31 - days.leading_zeros();
            if nd != d {
                (d, h, mi) = (nd, 23, 59);
            }
            let hours = expr.hours & ((2u32 << h) - 1);
            if hours == 0 {
                (d, h, mi) = (d - 1, 23, 59);
                continue;
            }
            let nh = 31 - hours.leading_zeros();
            if nh != h {
                (h, mi) = (nh, 59);
            }
            let minutes = expr.minutes & ((2u64 << mi) - 1);
            if minutes == 0 {
                if h == 0 {
                    (d, h, mi) = (d - 1, 23, 59);
                } else {
                    (h, mi) = (h - 1, 59);
                }
                continue;
            }
            mi = 63 - minutes.leading_zeros();
            let found = Civil::new(year, month, d as u8, h as u8, mi as u8);
            return (found >= floor).then_some(found);
        }
        (year, month) = prev_month(year, month);
        (d, h, mi) = (31, 23, 59);
    }
}

/// Whether any day of a full 400-year Gregorian cycle (after which weekdays
/// and leap years repeat exactly) matches; with a year field, whether any
/// allowed year does.
pub(crate) fn fires_within_cycle(expr: &CronExpr) -> bool {
    if expr.minutes == 0 || expr.hours == 0 || expr.months & 0x1ffe == 0 {
        return false;
    }
    let years: Box<dyn Iterator<Item = i32>> = match &expr.years {
        Some(_) => Box::new(super::YearSet::MIN..=super::YearSet::MAX),
        None => Box::new(2000..2400),
    };
    for year in years {
        if !expr.year_allowed(year) {
            continue;
        }
        for month in 1..=12u8 {
            if expr.months & (1 << month) != 0 && day_mask(expr, year, month) != 0 {
                return true;
            }
        }
    }
    false
}
