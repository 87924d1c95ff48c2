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

mod days;
mod reasons;
mod render;
mod zone;

use std::fmt;

use jiff::Timestamp;

use crate::cron::{Civil, CronExpr, DayOfMonth, DayOfWeek, Dialect, Field};
use crate::schedule::{DstGap, DstOverlap, Schedule, Zone, is_clock_change};

pub use reasons::{Construct, DstMismatch, Inexact};

use days::{DayPlan, EVERY_MONTH, render_days};
use render::render_set;
use zone::zone_for;

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
