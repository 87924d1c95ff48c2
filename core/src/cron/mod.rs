//! Cron expressions: the parsed form shared by every dialect, and the civil
//! (zone-free) calendar search over it.
//!
//! An expression is kept as bit sets, one per field, plus the day-field
//! specials (`L`, `W`, `#`). Matching a minute is then a few bit tests, and
//! the search for the next match skips whole months, days and hours at once.
//!
//! Start with [`CronExpr::parse`]; a [`CronExpr`] only knows wall-clock
//! ([`Civil`]) minutes. To get instants, put it in a zone with
//! [`Schedule`](crate::Schedule).

pub(crate) mod calendar;
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
    /// The dialect's name as messages use it: `cron`, `EventBridge` or
    /// `Cloudflare` (as in "is ?, which Cloudflare cron does not accept").
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
    /// Minutes, 0-59.
    Minute,
    /// Hours, 0-23.
    Hour,
    /// Days of the month, 1-31, with `L`, `LW` and `nW`.
    DayOfMonth,
    /// Months, 1-12 or `JAN`-`DEC`.
    Month,
    /// Weekdays, numbered as the dialect does (0-7 in cronslot's dialect,
    /// 1-7 in EventBridge and Cloudflare) or `SUN`-`SAT`, with `#` and `L`.
    DayOfWeek,
    /// Years, 1970-2199: the sixth field, EventBridge only.
    Year,
}

impl Field {
    /// The field's name as messages use it: `minute`, `hour`,
    /// `day-of-month`, `month`, `day-of-week` or `year`.
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
    /// True when the field holds `L`, `LW` or an `nW` item, beyond plain
    /// days.
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
    /// True when the field holds an `n#k` or `nL` item, beyond plain
    /// weekdays.
    pub fn has_specials(&self) -> bool {
        self.last != 0 || self.nth.iter().any(|n| *n != 0)
    }
}

/// The years an EventBridge expression's year field allows, within
/// 1970..=2199 (what EventBridge accepts). Expressions of dialects without a
/// year field have none ([`CronExpr::years`] is `None`) and match every year.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct YearSet {
    bits: [u64; 4],
}

impl YearSet {
    /// The first year a year field can name.
    pub const MIN: i32 = 1970;
    /// The last year a year field can name.
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

    /// Whether `year` is allowed; false for any year outside
    /// [`YearSet::MIN`]..=[`YearSet::MAX`].
    pub fn contains(&self, year: i32) -> bool {
        if !(Self::MIN..=Self::MAX).contains(&year) {
            return false;
        }
        let i = (year - Self::MIN) as usize;
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    /// True when every year from [`YearSet::MIN`] to [`YearSet::MAX`] is
    /// allowed (a year field of `*`, or one that lists them all).
    pub fn is_full(&self) -> bool {
        (Self::MIN..=Self::MAX).all(|y| self.contains(y))
    }

    /// The latest allowed year; `None` only for an empty set.
    pub fn last(&self) -> Option<i32> {
        (Self::MIN..=Self::MAX).rev().find(|y| self.contains(*y))
    }
}

/// A parsed cron expression (any dialect), normalised to one meaning.
///
/// Parse one with [`CronExpr::parse`] (cronslot's five-field dialect, also
/// through [`str::parse`]) or [`CronExpr::parse_dialect`]. The expression is
/// zone-free: it matches wall-clock minutes ([`Civil`]). Put it in a
/// [`Schedule`](crate::Schedule) to get the instants it fires at.
///
/// Two spellings of the same schedule (`0 9 * * 1-5` and `0 9 * * MON-FRI`)
/// give the same fields, but compare unequal: [`CronExpr::source`] is part
/// of the value.
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
    /// Boxed: only EventBridge's six-field expressions have one, and a
    /// manifest of thousands of jobs keeps an expression per job.
    pub(crate) years: Option<Box<YearSet>>,
    /// Precomputed: no minute of the 400-year Gregorian cycle matches.
    never: bool,
}

impl CronExpr {
    /// Parses cronslot's input dialect (five fields, Sunday = 0 or 7).
    ///
    /// Besides lists, ranges and steps, it accepts month and weekday names
    /// (any letter case), the macros `@yearly`, `@annually`, `@monthly`,
    /// `@weekly`, `@daily`, `@midnight` and `@hourly`, `L`, `LW`, `nW`,
    /// `n#k`, `nL` and `?` in the day fields, and `+` before the day-of-week
    /// field to require both day fields to match. There is no seconds field:
    /// every target platform fires by the minute.
    ///
    /// # Errors
    ///
    /// A [`CronError`] naming the field, the token and the 1-based column,
    /// usually with a hint; its `Display` is one line ready to show a user.
    ///
    /// # Examples
    ///
    /// ```
    /// use cronslot_core::{Civil, CronExpr};
    ///
    /// let expr = CronExpr::parse("0 9 * * MON-FRI")?;
    /// assert_eq!(expr.source(), "0 9 * * MON-FRI");
    /// // Fixed-time (not interval-like): a DST policy decides what it does
    /// // at a transition.
    /// assert!(!expr.is_interval_like());
    ///
    /// // 2026-03-06 is a Friday, 2026-03-07 a Saturday.
    /// assert!(expr.matches(Civil::new(2026, 3, 6, 9, 0)));
    /// assert!(!expr.matches(Civil::new(2026, 3, 7, 9, 0)));
    /// assert_eq!(
    ///     expr.next_civil(Civil::new(2026, 3, 6, 9, 1), Civil::MAX),
    ///     Some(Civil::new(2026, 3, 9, 9, 0)),
    /// );
    ///
    /// // `str::parse` does the same.
    /// let hourly: CronExpr = "@hourly".parse()?;
    /// assert_eq!(hourly.minutes(), 1); // bit 0: minute 0 only
    /// # Ok::<(), cronslot_core::CronError>(())
    /// ```
    ///
    /// A bad expression says what is wrong, where, and how to fix it:
    ///
    /// ```
    /// use cronslot_core::cron::CronErrorKind;
    /// use cronslot_core::{CronExpr, Field};
    ///
    /// let err = CronExpr::parse("0 9 * * 8").unwrap_err();
    /// assert_eq!(err.kind, CronErrorKind::OutOfRange { value: 8, min: 0, max: 7 });
    /// assert_eq!(err.field, Some(Field::DayOfWeek));
    /// assert_eq!(err.column, 9);
    /// assert_eq!(
    ///     err.to_string(),
    ///     "\"8\" in day-of-week (column 9) is out of range 0-7; \
    ///      weekdays are 0-7 (0 and 7 are Sunday) or SUN-SAT",
    /// );
    ///
    /// // Six fields (a seconds field, as Quartz writes) are refused.
    /// let err = CronExpr::parse("0 0 9 * * *").unwrap_err();
    /// assert_eq!(err.kind, CronErrorKind::FieldCount { found: 6, expected: 5 });
    /// assert!(err.to_string().starts_with("\"*\" (column 11) has 6 fields, not 5; \
    ///     cronslot does not support seconds"));
    /// ```
    pub fn parse(text: &str) -> Result<CronExpr, CronError> {
        Self::parse_dialect(text, Dialect::Standard)
    }

    /// Parses a cron string written in the given dialect: an EventBridge
    /// `cron(...)` expression (or its six fields without `cron(`), or a
    /// Cloudflare Cron Trigger. Weekdays are renumbered, so the result means
    /// the same whatever the dialect.
    ///
    /// # Errors
    ///
    /// As [`CronExpr::parse`], plus what the dialect forbids: an EventBridge
    /// expression needs `?` in exactly one day field and takes no step in
    /// day-of-week; neither platform dialect accepts macros or `+`, and
    /// Cloudflare accepts no `?`.
    ///
    /// # Examples
    ///
    /// ```
    /// use cronslot_core::{CronExpr, Dialect};
    ///
    /// // EventBridge numbers weekdays 1 (Sunday) to 7: 2-6 is Monday to Friday.
    /// let eb = CronExpr::parse_dialect("cron(0 9 ? * 2-6 *)", Dialect::EventBridge)?;
    /// let std = CronExpr::parse("0 9 * * MON-FRI")?;
    /// assert_eq!(eb.day_of_week(), std.day_of_week());
    /// assert_eq!(eb.dialect(), Dialect::EventBridge);
    ///
    /// assert!(CronExpr::parse_dialect("0 9 * * ?", Dialect::Cloudflare).is_err());
    /// # Ok::<(), cronslot_core::CronError>(())
    /// ```
    pub fn parse_dialect(text: &str, dialect: Dialect) -> Result<CronExpr, CronError> {
        let mut expr = parse::parse(text, dialect)?;
        expr.never = !calendar::fires_within_cycle(&expr);
        Ok(expr)
    }

    /// The text this expression was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The dialect the expression was parsed in.
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

    /// The matching minutes as a bit set: bit `m` set for minute `m`
    /// (0..=59).
    pub fn minutes(&self) -> u64 {
        self.minutes
    }
    /// The matching hours as a bit set: bit `h` set for hour `h` (0..=23).
    pub fn hours(&self) -> u32 {
        self.hours
    }
    /// The matching months as a bit set: bit `m` set for month `m`
    /// (1..=12; bit 0 is never set).
    pub fn months(&self) -> u16 {
        self.months
    }
    /// The day-of-month field as parsed. Whether it restricts days also
    /// depends on [`CronExpr::dom_is_star`] and the day-of-week field (see
    /// [`CronExpr::days_are_either`]).
    pub fn day_of_month(&self) -> &DayOfMonth {
        &self.dom
    }
    /// The day-of-week field as parsed, weekdays numbered 0 (Sunday) to 6
    /// whatever the dialect.
    pub fn day_of_week(&self) -> &DayOfWeek {
        &self.dow
    }
    /// True when the day-of-month field began with `*` (even `*/2`) or was
    /// `?`: then it does not count as restricting days, and a day must
    /// match both day fields.
    pub fn dom_is_star(&self) -> bool {
        self.dom_star
    }
    /// True when the day-of-week field began with `*` or was `?` (as
    /// [`CronExpr::dom_is_star`] for day-of-month).
    pub fn dow_is_star(&self) -> bool {
        self.dow_star
    }
    /// True when the day-of-week field began with `+`: a day must match
    /// both day fields, even when both restrict days.
    pub fn dom_and_dow(&self) -> bool {
        self.dom_and_dow
    }
    /// The year field of an EventBridge expression; `None` for dialects
    /// without one (every year matches).
    pub fn years(&self) -> Option<&YearSet> {
        self.years.as_deref()
    }

    /// True when the day-of-month field matches every day of every month.
    pub fn dom_is_full(&self) -> bool {
        self.dom.days == calendar::ALL_DAYS && !self.dom.has_specials()
    }

    /// True when the day-of-week field matches every day.
    pub fn dow_is_full(&self) -> bool {
        self.dow.days == 0x7f && !self.dow.has_specials()
    }

    /// Does this civil minute match? An invalid [`Civil`] (a 30 February)
    /// never does.
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

    /// The first matching civil minute at or after `from` and before
    /// `until`; `None` when there is none in that range. Zone-free: for
    /// instants, use [`Schedule::next_after`](crate::Schedule::next_after).
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
