//! Why a translation is not exact: [`Inexact`], the constructs a dialect
//! lacks and the DST mismatches, with the messages that say so. Apart
//! because every step of a translation reports in these terms, and the
//! manifest and the CLI show them.

use super::*;

/// A construct of cronslot's dialect that the target dialect cannot write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Construct {
    /// `nW` next to other days, or several `nW`.
    NearestWeekdayInList,
    /// `L` (last day of the month) next to other days.
    LastDayInList,
    /// `LW` (last weekday of the month), which EventBridge does not document.
    LastWeekday,
    /// `LW` next to other days.
    LastWeekdayInList,
    /// `#` (n-th weekday of the month) next to other weekdays, or several `#`.
    NthWeekdayInList,
    /// `nL` (last given weekday of the month) next to other weekdays, or
    /// several `nL`.
    LastOfWeekdayInList,
    /// A year field that is not `*` (only EventBridge input has one).
    RestrictedYears,
}

impl Construct {
    fn describe(self) -> &'static str {
        match self {
            Construct::NearestWeekdayInList => {
                "W combined with other days (W takes a single day and stands alone)"
            }
            Construct::LastDayInList => "L combined with other days (L stands alone)",
            Construct::LastWeekday => "LW (the last weekday of the month)",
            Construct::LastWeekdayInList => "LW combined with other days (LW stands alone)",
            Construct::NthWeekdayInList => {
                "# combined with other weekdays or another # (a single # stands alone)"
            }
            Construct::LastOfWeekdayInList => {
                "nL (the last given weekday of the month) combined with other weekdays \
                 (nL stands alone)"
            }
            Construct::RestrictedYears => "a restricted year field",
        }
    }
}

/// How cronslot and the platform treat a slot at a DST transition differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DstMismatch {
    /// A fixed-time slot in a DST gap: cronslot runs it when the gap ends
    /// (`dst_gap = "shift"` or `"shift_always"`), the platform skips it.
    GapShifted,
    /// A fixed-time slot skipped by a clock change (a forward jump of three
    /// hours or more): cronslot runs it when the jump ends
    /// (`dst_gap = "shift_always"`), the platform skips it.
    ClockChangeShifted,
    /// A slot in an overlap of an interval-like schedule: cronslot follows
    /// real time and fires in both passes, the platform fires once.
    OverlapIntervalLike,
    /// A fixed-time slot in an overlap under `dst_overlap = "twice"`: cronslot
    /// fires in both passes, the platform once.
    OverlapTwice,
}

/// A reason a translation cannot be exact.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Inexact {
    /// Both day fields restrict days and a day matches if either does
    /// (Vixie's rule).
    DaysEither {
        /// The platform translated to.
        platform: Platform,
    },
    /// Both day fields restrict days and a day must match both (`+`, or a
    /// field beginning with `*` that is not full, such as `*/2`).
    DaysBoth {
        /// The platform translated to.
        platform: Platform,
    },
    /// A construct the target dialect lacks.
    Construct {
        /// The platform translated to.
        platform: Platform,
        /// The field that uses the construct.
        field: Field,
        /// The field as written, when the source has separate fields.
        text: Option<String>,
        /// What the platform cannot write.
        construct: Construct,
    },
    /// A zone other than UTC on a platform that knows only UTC.
    UtcOnly {
        /// The platform translated to.
        platform: Platform,
        /// The schedule's zone.
        zone: String,
    },
    /// The DST policy differs from the platform's at a transition; `local`
    /// and `transition` are the first example from 1970 on.
    Dst {
        /// The platform translated to.
        platform: Platform,
        /// The schedule's zone.
        zone: String,
        /// What cronslot and the platform do differently.
        mismatch: DstMismatch,
        /// The first matching wall-clock minute in a gap or overlap.
        local: Civil,
        /// The instant of the transition that makes the gap or overlap.
        transition: Timestamp,
    },
    /// No date ever matches, so there is nothing to deploy.
    NeverFires {
        /// The platform translated to.
        platform: Platform,
    },
}

impl fmt::Display for Inexact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inexact::DaysEither { platform } => write!(
                f,
                "day-of-month and day-of-week both restrict days, so cronslot fires on days \
                 matching either (Vixie cron), which {platform} cannot express; restrict only \
                 one of the two fields"
            ),
            Inexact::DaysBoth { platform } => write!(
                f,
                "the schedule fires only on days matching both day-of-month and day-of-week, \
                 which {platform} cannot express{}; restrict only one of the two fields",
                if *platform == Platform::Cloudflare {
                    " (it matches a day if either field matches whenever neither is a bare `*`, \
                     and counts a field such as `*/2` as restricting days)"
                } else {
                    ""
                }
            ),
            Inexact::Construct {
                platform,
                field,
                text,
                construct,
            } => {
                write!(f, "{}", field.name())?;
                if let Some(text) = text {
                    write!(f, " {text:?}")?;
                }
                write!(
                    f,
                    " uses {}, which {platform} does not accept",
                    construct.describe()
                )
            }
            Inexact::UtcOnly { platform, zone } => write!(
                f,
                "{platform} runs in UTC only, and this schedule's wall-clock times in {zone} \
                 are not the same times in UTC"
            ),
            Inexact::Dst {
                platform,
                zone,
                mismatch,
                local,
                transition,
            } => {
                let local = format_civil(*local);
                match mismatch {
                    DstMismatch::GapShifted => write!(
                        f,
                        "in {zone}, {local} falls in the DST gap of the transition at \
                         {transition}: cronslot runs such a slot when the gap ends \
                         (dst_gap = \"shift\") but {platform} skips it; dst_gap = \"skip\" \
                         would translate"
                    ),
                    DstMismatch::ClockChangeShifted => write!(
                        f,
                        "in {zone}, {local} is skipped by the clock change at {transition} \
                         (a jump of 3 hours or more): cronslot runs such a slot when the jump \
                         ends (dst_gap = \"shift_always\") but {platform} skips it; \
                         dst_gap = \"shift\" or \"skip\" would translate"
                    ),
                    DstMismatch::OverlapIntervalLike => write!(
                        f,
                        "in {zone}, {local} occurs twice at the transition at {transition}: \
                         this interval-like schedule (minute or hour field beginning with *) \
                         follows real time and fires in both passes, but {platform} fires once"
                    ),
                    DstMismatch::OverlapTwice => write!(
                        f,
                        "in {zone}, {local} occurs twice at the transition at {transition}: \
                         cronslot runs such a slot in both passes (dst_overlap = \"twice\") but \
                         {platform} runs it once; dst_overlap = \"once\" would translate"
                    ),
                }
            }
            Inexact::NeverFires { platform } => write!(
                f,
                "the expression never fires (no date matches it), so there is nothing to \
                 schedule on {platform}"
            ),
        }
    }
}

impl std::error::Error for Inexact {}

fn format_civil(c: Civil) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        c.year, c.month, c.day, c.hour, c.minute
    )
}
