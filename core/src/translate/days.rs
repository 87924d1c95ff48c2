//! The day fields: what days a schedule selects, reduced to what a
//! platform can be told, and day-of-month and day-of-week written in the
//! platform's syntax, or the constructs it lacks. The dialects differ
//! here only in a few `match` arms (EventBridge's `?` and `LW`,
//! Cloudflare's OR of the day fields), so they share one module.

use super::*;

// ---------------------------------------------------------------------------
// Day fields

/// Bits 1..=31.
const EVERY_MONTH_DAY: u32 = 0xffff_fffe;
/// Bits 0..=6 (Sunday..Saturday).
const EVERY_WEEKDAY: u8 = 0x7f;
/// `nth` bits 1..=5: every occurrence of the weekday in any month.
const EVERY_NTH: u8 = 0b11_1110;
/// Bits 1..=12.
pub(super) const EVERY_MONTH: u16 = 0x1ffe;

/// The days a schedule selects, reduced to what a platform can be told.
pub(super) enum DayPlan {
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
    pub(super) fn of(cron: &CronExpr) -> DayPlan {
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
pub(super) fn render_days(
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
