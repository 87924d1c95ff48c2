//! Translation of schedules to platform cron dialects.
//!
//! A translation is either exact — the platform fires at exactly the instants
//! cronslot computes — or refused with every reason it cannot be, so that the
//! manifest can fall back to tick mode. Exactness is decided analytically, in
//! two independent parts:
//!
//! - *Days and syntax*: the day fields must select the same days in the
//!   target syntax, using only constructs the dialect documents.
//! - *Zone and DST*: outside DST gaps and overlaps, cronslot and a platform
//!   that evaluates the same expression on the same wall clock agree minute
//!   for minute. So only the zone's transitions (1970–2200) can make them
//!   differ, and only where a matching wall-clock minute falls inside one.
//!   EventBridge skips gap minutes and runs overlap minutes once; cronslot
//!   differs only where it shifts a gap slot (fixed-time: a DST gap under
//!   `dst_gap = "shift"`, any gap under `"shift_always"`; a clock change, a
//!   jump of three hours or more, skips its slots under `"shift"` too) or
//!   runs an overlap slot twice (interval-like, or `dst_overlap = "twice"`).
//!
//! When the days are unrestricted and the minutes of the day look the same at
//! every offset the zone uses (`*/5 * * * *` in New York), a schedule that
//! follows real time at its transitions does not depend on the zone at all
//! and translates to UTC. A fixed-time `0 0-23 * * *` under shift/once does
//! not: its single overlap pass drops an hour that UTC would run.

use std::fmt;

use jiff::Timestamp;

use crate::cron::{Civil, CronExpr, DayOfMonth, DayOfWeek, Dialect, Field};
use crate::schedule::{DstGap, DstOverlap, Schedule, Zone, is_clock_change};

/// A platform whose native cron trigger a schedule can be translated to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Amazon EventBridge Scheduler: `cron(m h dom mon dow year)` in an IANA
    /// zone, evaluated on the zone's wall clock (skip in gaps, once in
    /// overlaps).
    EventBridge,
    /// Cloudflare Cron Triggers: five fields, UTC only.
    Cloudflare,
}

impl Platform {
    /// The cron dialect the platform reads.
    pub fn dialect(self) -> Dialect {
        match self {
            Platform::EventBridge => Dialect::EventBridge,
            Platform::Cloudflare => Dialect::Cloudflare,
        }
    }

    /// The product name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Platform::EventBridge => "EventBridge Scheduler",
            Platform::Cloudflare => "Cloudflare Cron Triggers",
        }
    }

    /// What the platform writes in a day field that does not restrict days.
    fn any_day(self) -> &'static str {
        match self {
            Platform::EventBridge => "?",
            Platform::Cloudflare => "*",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An exact translation: deployed as is, the platform fires at exactly the
/// schedule's slots.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Translation {
    /// The platform the expression is written for.
    pub platform: Platform,
    /// EventBridge: `cron(m h dom mon dow *)`; Cloudflare: five fields.
    pub expression: String,
    /// The zone to declare on the platform (EventBridge
    /// `ScheduleExpressionTimezone`); always `UTC` for Cloudflare.
    pub timezone: String,
}

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

/// Translates `schedule` to `platform`'s dialect, exactly, or returns every
/// reason it cannot.
///
/// Exact means the platform, given [`Translation::expression`] and
/// [`Translation::timezone`], fires at exactly the schedule's slots,
/// DST transitions included. The expression is rebuilt from the parsed
/// fields in the platform's own syntax (weekdays 1-7 from Sunday, `?` in
/// EventBridge's unused day field), not copied from the source text.
///
/// # Errors
///
/// Every [`Inexact`] reason, not just the first, so that a user can fix them
/// all at once (or a manifest can fall back to tick mode).
///
/// # Examples
///
/// ```
/// use cronslot_core::translate::{Inexact, Platform, translate};
/// use cronslot_core::{CronExpr, DstPolicy, Schedule, Zone};
///
/// let weekdays = Schedule::utc(CronExpr::parse("0 9 * * MON-FRI")?);
///
/// let eb = translate(&weekdays, Platform::EventBridge).unwrap();
/// assert_eq!(eb.expression, "cron(0 9 ? * 2-6 *)");
/// assert_eq!(eb.timezone, "UTC");
///
/// let cf = translate(&weekdays, Platform::Cloudflare).unwrap();
/// assert_eq!(cf.expression, "0 9 * * 2-6");
/// assert_eq!(cf.timezone, "UTC");
///
/// // In New York: EventBridge takes the zone; Cloudflare knows only UTC.
/// let new_york = Schedule::new(
///     CronExpr::parse("0 9 * * MON-FRI")?,
///     Zone::get("America/New_York")?,
///     DstPolicy::default(),
/// );
/// let eb = translate(&new_york, Platform::EventBridge).unwrap();
/// assert_eq!(eb.timezone, "America/New_York");
/// let reasons = translate(&new_york, Platform::Cloudflare).unwrap_err();
/// assert!(matches!(reasons.as_slice(), [Inexact::UtcOnly { .. }]));
/// assert_eq!(
///     reasons[0].to_string(),
///     "Cloudflare Cron Triggers runs in UTC only, and this schedule's \
///      wall-clock times in America/New_York are not the same times in UTC",
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn translate(schedule: &Schedule, platform: Platform) -> Result<Translation, Vec<Inexact>> {
    let cron = schedule.cron();
    let mut reasons = Vec::new();
    if cron.never_fires() {
        reasons.push(Inexact::NeverFires { platform });
    }
    if cron.years().is_some_and(|years| !years.is_full()) {
        reasons.push(Inexact::Construct {
            platform,
            field: Field::Year,
            text: None,
            construct: Construct::RestrictedYears,
        });
    }
    let days = DayPlan::of(cron);
    let day_fields = render_days(cron, &days, platform).map_err(|r| reasons.extend(r));
    let timezone = zone_for(schedule, &days, platform).map_err(|r| reasons.extend(r));
    match (day_fields, timezone) {
        (Ok((dom, dow)), Ok(timezone)) if reasons.is_empty() => Ok(Translation {
            platform,
            expression: assemble(cron, &dom, &dow, platform),
            timezone,
        }),
        _ => Err(reasons),
    }
}

fn assemble(cron: &CronExpr, dom: &str, dow: &str, platform: Platform) -> String {
    let minute = render_set(cron.minutes(), 0, 59, true);
    let hour = render_set(u64::from(cron.hours()), 0, 23, true);
    let month = render_set(u64::from(cron.months()), 1, 12, true);
    match platform {
        Platform::EventBridge => format!("cron({minute} {hour} {dom} {month} {dow} *)"),
        Platform::Cloudflare => format!("{minute} {hour} {dom} {month} {dow}"),
    }
}

// ---------------------------------------------------------------------------
// Day fields

/// Bits 1..=31.
const EVERY_MONTH_DAY: u32 = 0xffff_fffe;
/// Bits 0..=6 (Sunday..Saturday).
const EVERY_WEEKDAY: u8 = 0x7f;
/// `nth` bits 1..=5: every occurrence of the weekday in any month.
const EVERY_NTH: u8 = 0b11_1110;
/// Bits 1..=12.
const EVERY_MONTH: u16 = 0x1ffe;

/// The days a schedule selects, reduced to what a platform can be told.
enum DayPlan {
    Every,
    /// Only day-of-month restricts days.
    MonthDays(DayOfMonth),
    /// Only day-of-week restricts days.
    WeekDays(DayOfWeek),
    /// Both restrict; a day matching either one matches (Vixie).
    Either(DayOfMonth, DayOfWeek),
    /// Both restrict; a day must match both.
    Both(DayOfMonth, DayOfWeek),
}

impl DayPlan {
    fn of(cron: &CronExpr) -> DayPlan {
        let dom = simplify_dom(*cron.day_of_month());
        let dow = simplify_dow(*cron.day_of_week());
        let dom_full = dom.days == EVERY_MONTH_DAY && !dom.has_specials();
        let dow_full = dow.days == EVERY_WEEKDAY && !dow.has_specials();
        if cron.days_are_either() {
            // A full field under OR selects every day, whatever the other says.
            if dom_full || dow_full {
                DayPlan::Every
            } else {
                DayPlan::Either(dom, dow)
            }
        } else {
            match (dom_full, dow_full) {
                (true, true) => DayPlan::Every,
                (true, false) => DayPlan::WeekDays(dow),
                (false, true) => DayPlan::MonthDays(dom),
                (false, false) => DayPlan::Both(dom, dow),
            }
        }
    }
}

/// Drops specials that add no day (`1-31,L` is every day), so they cannot
/// make an expressible field look inexpressible.
fn simplify_dom(mut dom: DayOfMonth) -> DayOfMonth {
    if dom.days == EVERY_MONTH_DAY {
        dom = DayOfMonth {
            days: EVERY_MONTH_DAY,
            ..DayOfMonth::default()
        };
    }
    dom
}

/// Drops `#`/`nL` items for weekdays already listed whole, and turns
/// `w#1,…,w#5` into `w`.
fn simplify_dow(mut dow: DayOfWeek) -> DayOfWeek {
    for w in 0..7 {
        let bit = 1u8 << w;
        if dow.nth[w] & EVERY_NTH == EVERY_NTH {
            dow.days |= bit;
        }
        if dow.days & bit != 0 {
            dow.nth[w] = 0;
            dow.last &= !bit;
        }
    }
    dow
}

/// The day-of-month and day-of-week fields in the platform's syntax.
fn render_days(
    cron: &CronExpr,
    days: &DayPlan,
    platform: Platform,
) -> Result<(String, String), Vec<Inexact>> {
    let any = platform.any_day().to_string();
    match days {
        DayPlan::Every => Ok(("*".to_string(), any)),
        DayPlan::MonthDays(dom) => Ok((render_dom(cron, dom, platform)?, any)),
        DayPlan::WeekDays(dow) => Ok((any, render_dow(cron, dow, platform)?)),
        // Cloudflare's parser (saffron) matches a day if either day field
        // matches whenever neither is a bare `*`: Vixie's OR, exactly.
        DayPlan::Either(dom, dow) if platform == Platform::Cloudflare => {
            match (
                render_dom(cron, dom, platform),
                render_dow(cron, dow, platform),
            ) {
                (Ok(dom), Ok(dow)) => Ok((dom, dow)),
                (dom, dow) => Err(dom.err().into_iter().chain(dow.err()).flatten().collect()),
            }
        }
        DayPlan::Either(dom, dow) => Err(both_fields_reasons(
            cron,
            dom,
            dow,
            Inexact::DaysEither { platform },
            platform,
        )),
        DayPlan::Both(dom, dow) => Err(both_fields_reasons(
            cron,
            dom,
            dow,
            Inexact::DaysBoth { platform },
            platform,
        )),
    }
}

/// The combination reason, plus whatever each field lacks on its own (the
/// user will keep one of them).
fn both_fields_reasons(
    cron: &CronExpr,
    dom: &DayOfMonth,
    dow: &DayOfWeek,
    combination: Inexact,
    platform: Platform,
) -> Vec<Inexact> {
    let mut reasons = vec![combination];
    if let Err(r) = render_dom(cron, dom, platform) {
        reasons.extend(r);
    }
    if let Err(r) = render_dow(cron, dow, platform) {
        reasons.extend(r);
    }
    reasons
}

fn render_dom(
    cron: &CronExpr,
    dom: &DayOfMonth,
    platform: Platform,
) -> Result<String, Vec<Inexact>> {
    let items = u32::from(dom.days != 0)
        + u32::from(dom.last)
        + u32::from(dom.last_weekday)
        + dom.nearest_weekday.count_ones();
    let mut lacks = Vec::new();
    if dom.last_weekday && platform == Platform::EventBridge {
        lacks.push(Construct::LastWeekday);
    }
    if items > 1 {
        if dom.nearest_weekday != 0 {
            lacks.push(Construct::NearestWeekdayInList);
        }
        if dom.last {
            lacks.push(Construct::LastDayInList);
        }
        if dom.last_weekday && platform == Platform::Cloudflare {
            lacks.push(Construct::LastWeekdayInList);
        }
    }
    if !lacks.is_empty() {
        return Err(construct_reasons(cron, Field::DayOfMonth, lacks, platform));
    }
    Ok(if dom.last {
        "L".to_string()
    } else if dom.last_weekday {
        "LW".to_string()
    } else if dom.nearest_weekday != 0 {
        format!("{}W", dom.nearest_weekday.trailing_zeros())
    } else {
        render_set(u64::from(dom.days), 1, 31, true)
    })
}

fn render_dow(
    cron: &CronExpr,
    dow: &DayOfWeek,
    platform: Platform,
) -> Result<String, Vec<Inexact>> {
    let nth_items: u32 = dow.nth.iter().map(|n| n.count_ones()).sum();
    let last_items = dow.last.count_ones();
    let items = u32::from(dow.days != 0) + nth_items + last_items;
    let mut lacks = Vec::new();
    if items > 1 {
        if nth_items > 0 {
            lacks.push(Construct::NthWeekdayInList);
        }
        if last_items > 0 {
            lacks.push(Construct::LastOfWeekdayInList);
        }
    }
    if !lacks.is_empty() {
        return Err(construct_reasons(cron, Field::DayOfWeek, lacks, platform));
    }
    // Both platforms number weekdays 1 (Sunday) to 7; cronslot's bits are
    // 0 (Sunday) to 6.
    if let Some((w, nth)) = dow.nth.iter().enumerate().find(|(_, n)| **n != 0) {
        return Ok(format!("{}#{}", w + 1, nth.trailing_zeros()));
    }
    if dow.last != 0 {
        return Ok(format!("{}L", dow.last.trailing_zeros() + 1));
    }
    // No steps: EventBridge refuses `/` here, and a 7-value list is short
    // anyway, so neither platform has to agree with us on where a step starts.
    Ok(render_set(u64::from(dow.days) << 1, 1, 7, false))
}

fn construct_reasons(
    cron: &CronExpr,
    field: Field,
    lacks: Vec<Construct>,
    platform: Platform,
) -> Vec<Inexact> {
    let text = field_text(cron, field);
    lacks
        .into_iter()
        .map(|construct| Inexact::Construct {
            platform,
            field,
            text: text.clone(),
            construct,
        })
        .collect()
}

/// The text of a day field as written, for messages; `None` for macros.
fn field_text(cron: &CronExpr, field: Field) -> Option<String> {
    let index = match field {
        Field::DayOfMonth => 2,
        Field::DayOfWeek => 4,
        _ => return None,
    };
    let source = cron.source();
    let body = source
        .strip_prefix("cron(")
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(source);
    let fields: Vec<&str> = body.split_whitespace().collect();
    if fields.len() < 5 {
        return None;
    }
    fields.get(index).map(|s| s.to_string())
}

// ---------------------------------------------------------------------------
// Field rendering

/// Renders the values `lo..=hi` set in `bits` in the shortest form every
/// dialect reads alike: `*` when full, `*/s` or `a/s` for a progression that
/// runs to the end of the field (if `steps`), else values and ranges.
fn render_set(bits: u64, lo: u32, hi: u32, steps: bool) -> String {
    let values: Vec<u32> = (lo..=hi).filter(|v| bits & (1u64 << v) != 0).collect();
    if values.len() == (lo..=hi).count() {
        return "*".to_string();
    }
    let list = render_list(&values);
    match steps.then(|| render_progression(&values, lo, hi)).flatten() {
        Some(progression) if progression.len() < list.len() => progression,
        _ => list,
    }
}

fn render_list(values: &[u32]) -> String {
    values
        .chunk_by(|a, b| *b == a + 1)
        .map(|run| match run {
            [only] => only.to_string(),
            [first, second] => format!("{first},{second}"),
            [first, .., last] => format!("{first}-{last}"),
            [] => String::new(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `*/s` or `a/s`, when `values` (ascending) are `a, a+s, …` up to the last
/// one before `hi` is passed. A step of 1 is left to the range form.
fn render_progression(values: &[u32], lo: u32, hi: u32) -> Option<String> {
    let (&first, rest) = values.split_first()?;
    let step = rest.first()?.checked_sub(first)?;
    let last = *values.last()?;
    let regular = values
        .windows(2)
        .all(|pair| matches!(pair, [a, b] if b - a == step));
    if step < 2 || !regular || last + step <= hi {
        return None;
    }
    Some(if first == lo {
        format!("*/{step}")
    } else {
        format!("{first}/{step}")
    })
}

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
fn zone_for(
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

/// The one rule of every adapter and template for how a job is triggered
/// on `platform`: `None` for a tick-mode job; for a dedicated job, its exact
/// translation (`Ok`: it gets a platform trigger of its own), or why there
/// is none (`Err`: it falls back to the tick, which must then serve it).
pub fn dedicated(
    spec: &crate::manifest::JobSpec,
    platform: Platform,
) -> Option<Result<Translation, Vec<Inexact>>> {
    (spec.trigger == crate::manifest::Trigger::Dedicated)
        .then(|| translate(&spec.schedule, platform))
}
