//! Cron expressions: the parsed form shared by every dialect, and the civil
//! (zone-free) calendar search over it.
//!
//! An expression is kept as bit sets, one per field, plus the day-field
//! specials (`L`, `W`, `#`). Matching a minute is then a few bit tests, and
//! the search for the next match skips whole months, days and hours at once.

mod calendar;
mod count;
mod error;
mod parse;

pub use calendar::Civil;
#[allow(unused_imports)]
pub(crate) use calendar::{days_from_civil, days_in_month, weekday_of};
pub use error::{CronError, CronErrorKind};

use std::fmt;

/// The dialect a cron string is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// cronslot's input dialect: five fields, Sunday = 0 (or 7), Vixie's
    /// day-of-month/day-of-week rule, OCPS extensions (`L`, `W`, `#`, `?`, `+`).
    Standard,
    /// EventBridge `cron(m h dom mon dow year)`: Sunday = 1, exactly one of the
    /// day fields is `?`.
    EventBridge,
    /// Cloudflare Cron Triggers: five fields, UTC, Sunday = 1.
    Cloudflare,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Standard => "cron",
            Dialect::EventBridge => "EventBridge",
            Dialect::Cloudflare => "Cloudflare",
        }
    }
}

/// The fields of a cron expression, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
    Year,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
            Field::Year => "year",
        }
    }
}

/// The day-of-month field: plain days plus `L`, `LW` and `nW`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DayOfMonth {
    /// Bit `d` set: day `d` (1..=31).
    pub days: u32,
    /// `L`: the last day of the month.
    pub last: bool,
    /// `LW`: the last weekday (Monday–Friday) of the month.
    pub last_weekday: bool,
    /// Bit `d` set: `dW`, the weekday nearest day `d`, within the month.
    pub nearest_weekday: u32,
}

impl DayOfMonth {
    pub fn has_specials(&self) -> bool {
        self.last || self.last_weekday || self.nearest_weekday != 0
    }
}

/// The day-of-week field: plain weekdays plus `#n` and `#L`/`nL`.
/// Weekdays are numbered 0 (Sunday) to 6 (Saturday) whatever the dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DayOfWeek {
    /// Bit `w` set: every weekday `w`.
    pub days: u8,
    /// `nth[w]` bit `n` set (1..=5): the n-th weekday `w` of the month.
    pub nth: [u8; 7],
    /// Bit `w` set: the last weekday `w` of the month.
    pub last: u8,
}

impl DayOfWeek {
    pub fn has_specials(&self) -> bool {
        self.last != 0 || self.nth.iter().any(|n| *n != 0)
    }
}

/// Years an EventBridge expression is limited to (1970..=2199); `None` on
/// dialects without a year field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct YearSet {
    bits: [u64; 4],
}

impl YearSet {
    pub const MIN: i32 = 1970;
    pub const MAX: i32 = 2199;

    pub(crate) fn empty() -> Self {
        YearSet { bits: [0; 4] }
    }

    pub(crate) fn insert(&mut self, year: i32) {
        if (Self::MIN..=Self::MAX).contains(&year) {
            let i = (year - Self::MIN) as usize;
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }

    pub fn contains(&self, year: i32) -> bool {
        if !(Self::MIN..=Self::MAX).contains(&year) {
            return false;
        }
        let i = (year - Self::MIN) as usize;
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn is_full(&self) -> bool {
        (Self::MIN..=Self::MAX).all(|y| self.contains(y))
    }

    pub fn last(&self) -> Option<i32> {
        (Self::MIN..=Self::MAX).rev().find(|y| self.contains(*y))
    }
}

/// A parsed cron expression (any dialect), normalised to one meaning.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CronExpr {
    source: String,
    dialect: Dialect,
    /// Bit `m` set: minute `m` (0..=59).
    pub(crate) minutes: u64,
    /// Bit `h` set: hour `h` (0..=23).
    pub(crate) hours: u32,
    pub(crate) dom: DayOfMonth,
    /// Bit `m` set: month `m` (1..=12).
    pub(crate) months: u16,
    pub(crate) dow: DayOfWeek,
    /// The field's text began with `*` (or was `?`): it does not restrict
    /// days in Vixie's sense.
    pub(crate) dom_star: bool,
    pub(crate) dow_star: bool,
    /// The minute or hour field began with `*`: the expression is
    /// interval-like and follows real time across DST changes.
    pub(crate) minute_star: bool,
    pub(crate) hour_star: bool,
    /// `+` before day-of-week: both day fields must match.
    pub(crate) dom_and_dow: bool,
    pub(crate) years: Option<YearSet>,
    /// Precomputed: no minute of the 400-year Gregorian cycle matches.
    never: bool,
}

impl CronExpr {
    /// Parses cronslot's input dialect (five fields, Sunday = 0 or 7).
    pub fn parse(text: &str) -> Result<CronExpr, CronError> {
        Self::parse_dialect(text, Dialect::Standard)
    }

    /// Parses a cron string written in the given dialect.
    pub fn parse_dialect(text: &str, dialect: Dialect) -> Result<CronExpr, CronError> {
        let mut expr = parse::parse(text, dialect)?;
        expr.never = !calendar::fires_within_cycle(&expr);
        Ok(expr)
    }

    /// The text this expression was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// True when no minute in any year can match (`0 0 31 2 *`).
    pub fn never_fires(&self) -> bool {
        self.never
    }

    /// Interval-like expressions (minute or hour field beginning with `*`)
    /// follow real time across DST changes; the others are fixed-time.
    pub fn is_interval_like(&self) -> bool {
        self.minute_star || self.hour_star
    }

    /// True when both day fields restrict days and a day matches if either
    /// matches (Vixie's rule).
    pub fn days_are_either(&self) -> bool {
        !self.dom_star && !self.dow_star && !self.dom_and_dow
    }

    pub fn minutes(&self) -> u64 {
        self.minutes
    }
    pub fn hours(&self) -> u32 {
        self.hours
    }
    pub fn months(&self) -> u16 {
        self.months
    }
    pub fn day_of_month(&self) -> &DayOfMonth {
        &self.dom
    }
    pub fn day_of_week(&self) -> &DayOfWeek {
        &self.dow
    }
    pub fn dom_is_star(&self) -> bool {
        self.dom_star
    }
    pub fn dow_is_star(&self) -> bool {
        self.dow_star
    }
    pub fn dom_and_dow(&self) -> bool {
        self.dom_and_dow
    }
    pub fn years(&self) -> Option<&YearSet> {
        self.years.as_ref()
    }

    /// True when the day-of-month field matches every day of every month.
    pub fn dom_is_full(&self) -> bool {
        self.dom.days == calendar::ALL_DAYS && !self.dom.has_specials()
    }

    /// True when the day-of-week field matches every day.
    pub fn dow_is_full(&self) -> bool {
        self.dow.days == 0x7f && !self.dow.has_specials()
    }

    /// Does this civil minute match?
    pub fn matches(&self, at: Civil) -> bool {
        at.is_valid()
            && self.minutes & (1 << at.minute) != 0
            && self.hours & (1 << at.hour) != 0
            && self.months & (1 << at.month) != 0
            && self.year_allowed(at.year)
            && calendar::day_mask(self, at.year, at.month) & (1 << at.day) != 0
    }

    pub(crate) fn year_allowed(&self, year: i32) -> bool {
        match &self.years {
            None => true,
            Some(set) => set.contains(year),
        }
    }

    /// The first matching civil minute at or after `from` and before `until`.
    pub fn next_civil(&self, from: Civil, until: Civil) -> Option<Civil> {
        if self.never {
            return None;
        }
        calendar::next_match(self, from, until)
    }

    /// The last matching civil minute at or before `from` and at or after `floor`.
    pub fn prev_civil(&self, from: Civil, floor: Civil) -> Option<Civil> {
        if self.never {
            return None;
        }
        calendar::prev_match(self, from, floor)
    }
}

impl fmt::Display for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for CronExpr {
    type Err = CronError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CronExpr::parse(s)
    }
}

#[cfg(test)]
mod tests;
