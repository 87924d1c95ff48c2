//! Plain-English descriptions of schedules: "At 09:00, Monday through
//! Friday, America/New_York".
//!
//! Descriptions are built from the parsed bit sets, not from the source text,
//! so two spellings of one schedule read the same, and what is described is
//! exactly what runs.

use crate::cron::{CronExpr, DayOfMonth, DayOfWeek};
use crate::schedule::{DstGap, DstOverlap, Schedule};

const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 13] = [
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const ORDINALS: [&str; 6] = ["", "first", "second", "third", "fourth", "fifth"];

/// "At 09:00, Monday through Friday, America/New_York".
pub fn explain(schedule: &Schedule) -> String {
    let mut text = explain_cron(schedule.cron());
    text.push_str(", ");
    text.push_str(schedule.zone().name());
    text
}

/// What a job's jitter does, in one sentence; `None` without jitter.
pub fn explain_jitter(spec: &crate::manifest::JobSpec) -> Option<String> {
    (!spec.jitter.is_zero()).then(|| {
        format!(
            "Each slot starts up to {} after its time (jitter), at a point fixed by the slot, \
             the same on every node; its id stays its time.",
            crate::manifest::format_duration(spec.jitter)
        )
    })
}

/// How a schedule behaves at DST transitions, in one sentence; `None` in
/// zones without DST.
pub fn explain_dst(schedule: &Schedule) -> Option<String> {
    if schedule.zone().is_fixed() || schedule.never_fires() {
        return None;
    }
    if schedule.follows_real_time() {
        return Some(
            "Interval-like: follows real time across DST (times in a spring-forward gap do not \
             exist; times repeated in a fall-back hour run in both passes)."
                .into(),
        );
    }
    let policy = schedule.policy();
    let gap = match policy.gap {
        DstGap::Shift => {
            "a time in a spring-forward gap runs at the first instant after the gap \
             (a time skipped by a clock change of 3 hours or more is missed)"
        }
        DstGap::Skip => "a time in a spring-forward gap is skipped and recorded as missed",
        DstGap::ShiftAlways => {
            "a time in a spring-forward gap, or skipped by a clock change of any size, \
             runs at the first instant after the gap"
        }
    };
    let overlap = match policy.overlap {
        DstOverlap::Once => "a repeated time runs once, in the first pass",
        DstOverlap::Twice => "a repeated time runs in both passes",
    };
    Some(format!("Fixed-time: {gap}; {overlap}."))
}

/// The description without the zone.
pub fn explain_cron(cron: &CronExpr) -> String {
    if cron.never_fires() {
        return "Never (no date matches this expression)".into();
    }
    let mut parts = vec![describe_time(cron.minutes(), cron.hours())];
    if let Some(days) = describe_days(cron) {
        parts.push(days);
    }
    if let Some(months) = describe_months(cron.months()) {
        parts.push(months);
    }
    if let Some(years) = cron.years().filter(|y| !y.is_full()) {
        let list: Vec<i32> = (crate::cron::YearSet::MIN..=crate::cron::YearSet::MAX)
            .filter(|y| years.contains(*y))
            .collect();
        parts.push(format!("in {}", describe_numbers(&list, |y| y.to_string())));
    }
    parts.join(", ")
}

fn bits(mask: u64, min: u32, max: u32) -> Vec<u32> {
    (min..=max).filter(|i| mask & (1 << i) != 0).collect()
}

/// `[0, 15, 30, 45]` over `0..=59` is "every 15 minutes": the step, when the
/// set is an arithmetic progression from the field's start to its end.
fn full_step(values: &[u32], min: u32, max: u32) -> Option<u32> {
    if values.len() < 2 || values[0] != min {
        return None;
    }
    let step = values[1] - values[0];
    let regular = values.windows(2).all(|w| w[1] - w[0] == step);
    let reaches_end = values.last().is_some_and(|last| last + step > max);
    (regular && reaches_end).then_some(step)
}

fn describe_time(minutes: u64, hours: u32) -> String {
    let ms = bits(minutes, 0, 59);
    let hs = bits(u64::from(hours), 0, 23);
    let all_minutes = ms.len() == 60;
    let all_hours = hs.len() == 24;
    let minute_step = full_step(&ms, 0, 59);
    let hour_step = full_step(&hs, 0, 23);

    if all_minutes {
        return if all_hours {
            "Every minute".into()
        } else {
            format!("Every minute {}", during_hours(&hs))
        };
    }
    if ms.len() * hs.len() <= 6 {
        let mut times = Vec::new();
        for h in &hs {
            for m in &ms {
                times.push(format!("{h:02}:{m:02}"));
            }
        }
        return format!("At {}", join_and(&times));
    }
    let minute_part = match minute_step {
        Some(step) => format!("Every {step} minutes"),
        None if ms.len() == 1 => format!("At minute {}", ms[0]),
        None => format!("At minutes {}", describe_numbers(&ms, |m| m.to_string())),
    };
    if all_hours {
        return if minute_step.is_some() {
            minute_part
        } else {
            format!("{minute_part} past every hour")
        };
    }
    match hour_step {
        Some(step) if minute_step.is_none() => {
            format!("{minute_part} past every {step} hours")
        }
        _ => format!("{minute_part} {}", during_hours(&hs)),
    }
}

fn during_hours(hours: &[u32]) -> String {
    let runs = runs(hours);
    let spans: Vec<String> = runs
        .iter()
        .map(|(a, b)| {
            if a == b {
                format!("{a:02}:00-{a:02}:59")
            } else {
                format!("{a:02}:00-{b:02}:59")
            }
        })
        .collect();
    format!("between {}", join_and(&spans))
}

fn describe_days(cron: &CronExpr) -> Option<String> {
    let dom_full = cron.dom_is_full();
    let dow_full = cron.dow_is_full();
    let dom = (!dom_full).then(|| describe_dom(cron.day_of_month()));
    let dow = (!dow_full).then(|| describe_dow(cron.day_of_week()));
    match (dom, dow) {
        (None, None) => None,
        (Some(d), None) => Some(d),
        (None, Some(w)) => Some(w),
        (Some(d), Some(w)) if cron.days_are_either() => Some(format!("{d} or {}", strip_on(&w))),
        (Some(d), Some(w)) => Some(format!("{d}, if it is {}", strip_on(&w))),
    }
}

fn strip_on(s: &str) -> &str {
    s.strip_prefix("on ").unwrap_or(s)
}

fn describe_dom(dom: &DayOfMonth) -> String {
    let mut items = Vec::new();
    let days = bits(u64::from(dom.days), 1, 31);
    if let Some(step) = full_step(&days, 1, 31).filter(|s| *s > 1) {
        items.push(format!(
            "every {step} days of the month starting on the 1st"
        ));
    } else if !days.is_empty() {
        let word = if days.len() == 1 { "day" } else { "days" };
        items.push(format!(
            "{word} {}",
            describe_numbers(&days, |d| d.to_string())
        ));
    }
    for d in bits(u64::from(dom.nearest_weekday), 1, 31) {
        items.push(format!("the weekday nearest day {d}"));
    }
    if dom.last {
        items.push("the last day".into());
    }
    if dom.last_weekday {
        items.push("the last weekday".into());
    }
    format!("on {} of the month", join_and(&items))
}

fn describe_dow(dow: &DayOfWeek) -> String {
    let mut items = Vec::new();
    let days = bits(u64::from(dow.days), 0, 6);
    if !days.is_empty() {
        // Monday-first reading: "Monday through Friday", "Saturday and Sunday".
        let mut sorted: Vec<u32> = days.iter().map(|d| (d + 6) % 7).collect();
        sorted.sort_unstable();
        let text = describe_numbers(&sorted, |d| WEEKDAYS[((d + 1) % 7) as usize].to_string());
        items.push(text);
    }
    for (w, nth) in dow.nth.iter().enumerate() {
        for (n, ordinal) in ORDINALS.iter().enumerate().skip(1) {
            if nth & (1 << n) != 0 {
                items.push(format!("on the {ordinal} {}", WEEKDAYS[w]));
            }
        }
    }
    for (w, name) in WEEKDAYS.iter().enumerate() {
        if dow.last & (1 << w) != 0 {
            items.push(format!("on the last {name} of the month"));
        }
    }
    join_and(&items)
}

fn describe_months(months: u16) -> Option<String> {
    let ms = bits(u64::from(months), 1, 12);
    if ms.len() == 12 {
        return None;
    }
    if let Some(step) = full_step(&ms, 1, 12) {
        return Some(format!("every {step} months starting in January"));
    }
    let text = describe_numbers(&ms, |m| MONTHS[m as usize].to_string());
    Some(if ms.len() == 1 || !text.contains(" through ") {
        format!("in {text}")
    } else {
        text
    })
}

/// Consecutive runs of sorted values: `[1,2,3,5]` → `[(1,3),(5,5)]`.
fn runs(values: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &v in values {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == v => *end = v,
            _ => out.push((v, v)),
        }
    }
    out
}

/// "1, 5 through 9 and 15": runs of three or more read as ranges.
fn describe_numbers(values: &[impl Copy + Into<i64>], name: impl Fn(u32) -> String) -> String {
    let as_u32: Vec<u32> = values
        .iter()
        .map(|v| {
            let x: i64 = (*v).into();
            u32::try_from(x).unwrap_or(0)
        })
        .collect();
    let mut items = Vec::new();
    for (a, b) in runs(&as_u32) {
        if b >= a + 2 {
            items.push(format!("{} through {}", name(a), name(b)));
        } else {
            for v in a..=b {
                items.push(name(v));
            }
        }
    }
    join_and(&items)
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{DstPolicy, Zone};

    fn ex(expr: &str, zone: &str) -> String {
        let cron = CronExpr::parse(expr).expect("valid");
        explain(&Schedule::new(
            cron,
            Zone::get(zone).expect("zone"),
            DstPolicy::default(),
        ))
    }

    #[test]
    fn reads_like_the_issue() {
        assert_eq!(
            ex("0 9 * * MON-FRI", "America/New_York"),
            "At 09:00, Monday through Friday, America/New_York"
        );
    }

    #[test]
    fn common_shapes() {
        assert_eq!(ex("* * * * *", "UTC"), "Every minute, UTC");
        assert_eq!(ex("*/5 * * * *", "UTC"), "Every 5 minutes, UTC");
        assert_eq!(ex("0 * * * *", "UTC"), "At minute 0 past every hour, UTC");
        assert_eq!(ex("30 9,17 * * *", "UTC"), "At 09:30 and 17:30, UTC");
        assert_eq!(
            ex("*/10 9-17 * * 1-5", "UTC"),
            "Every 10 minutes between 09:00-17:59, Monday through Friday, UTC"
        );
        assert_eq!(
            ex("0 0 L * *", "UTC"),
            "At 00:00, on the last day of the month, UTC"
        );
        assert_eq!(
            ex("0 18 * * 5L", "UTC"),
            "At 18:00, on the last Friday of the month, UTC"
        );
        assert_eq!(
            ex("0 10 * * MON#2", "UTC"),
            "At 10:00, on the second Monday, UTC"
        );
        assert_eq!(
            ex("0 0 1 * MON", "UTC"),
            "At 00:00, on day 1 of the month or Monday, UTC"
        );
        assert_eq!(
            ex("0 0 1 * +MON", "UTC"),
            "At 00:00, on day 1 of the month, if it is Monday, UTC"
        );
        assert_eq!(
            ex("0 0 1 1 *", "UTC"),
            "At 00:00, on day 1 of the month, in January, UTC"
        );
        assert_eq!(
            ex("0 12 * * SAT,SUN", "UTC"),
            "At 12:00, Saturday and Sunday, UTC"
        );
        assert_eq!(
            ex("0 0 31 2 *", "UTC"),
            "Never (no date matches this expression), UTC"
        );
    }

    #[test]
    fn dst_sentence_depends_on_kind() {
        let fixed = Schedule::new(
            CronExpr::parse("30 2 * * *").expect("valid"),
            Zone::get("America/New_York").expect("zone"),
            DstPolicy::default(),
        );
        let text = explain_dst(&fixed).expect("has DST");
        assert!(text.contains("first instant after the gap"), "{text}");
        assert!(
            text.contains("clock change of 3 hours or more is missed"),
            "{text}"
        );
        let always = Schedule::new(
            CronExpr::parse("30 2 * * *").expect("valid"),
            Zone::get("America/New_York").expect("zone"),
            DstPolicy {
                gap: crate::DstGap::ShiftAlways,
                overlap: crate::DstOverlap::Once,
            },
        );
        let text = explain_dst(&always).expect("has DST");
        assert!(
            text.contains("or skipped by a clock change of any size, runs at the first instant"),
            "{text}"
        );
        let interval = Schedule::new(
            CronExpr::parse("*/5 * * * *").expect("valid"),
            Zone::get("America/New_York").expect("zone"),
            DstPolicy::default(),
        );
        assert!(
            explain_dst(&interval)
                .expect("has DST")
                .contains("real time")
        );
        assert!(
            explain_dst(&Schedule::utc(CronExpr::parse("0 0 * * *").expect("valid"))).is_none()
        );
    }
}
