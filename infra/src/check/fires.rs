//! Comparing two schedules by the instants they fire at: the template's
//! (evaluated as its platform does) and the manifest's (as cronslot does).

use cronslot_core::schedule::{DstPolicy, Schedule, Zone};
use cronslot_core::{CronExpr, Dialect};
use jiff::Timestamp;

use crate::format::{local, utc};

/// A span of time to compare over: `[from, until)`.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub from: Timestamp,
    pub until: Timestamp,
}

impl Span {
    /// The year after `from`.
    pub fn year_after(from: Timestamp) -> Span {
        let until = Timestamp::from_second(from.as_second().saturating_add(365 * 86_400))
            .unwrap_or(Timestamp::MAX);
        Span { from, until }
    }
}

/// How two schedules differ over a span.
#[derive(Debug, Clone, Default)]
pub struct Diff {
    /// The first instants only the template fires at.
    pub only_template: Vec<Timestamp>,
    pub only_template_count: u64,
    /// The first instants only the manifest has slots at.
    pub only_manifest: Vec<Timestamp>,
    pub only_manifest_count: u64,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.only_template_count == 0 && self.only_manifest_count == 0
    }

    /// Indented lines: the first differing instants on each side.
    pub fn describe(&self, zone: &Zone) -> Vec<String> {
        let mut lines = Vec::new();
        let list = |instants: &[Timestamp]| {
            instants
                .iter()
                .map(|t| format!("{} ({})", utc(*t), local(*t, zone)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.only_template_count > 0 {
            lines.push(format!(
                "fires where the manifest has no slot ({} in the year): {}{}",
                self.only_template_count,
                list(&self.only_template),
                if self.only_template_count > self.only_template.len() as u64 {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        if self.only_manifest_count > 0 {
            lines.push(format!(
                "does not fire at these slots of the manifest ({} in the year): {}{}",
                self.only_manifest_count,
                list(&self.only_manifest),
                if self.only_manifest_count > self.only_manifest.len() as u64 {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        lines
    }
}

/// How many differing instants of each side a diff keeps.
const KEEP: usize = 3;

fn next_within(s: &Schedule, t: Timestamp, span: Span) -> Option<Timestamp> {
    s.next_after(t).filter(|n| *n < span.until)
}

/// The first instant in the span: `next_after` is strict, so start a
/// nanosecond before.
fn first_within(s: &Schedule, span: Span) -> Option<Timestamp> {
    let before = span
        .from
        .checked_sub(jiff::SignedDuration::from_nanos(1))
        .unwrap_or(span.from);
    next_within(s, before, span)
}

/// Walks both schedules in step; stops at the first difference when
/// `first_only`.
fn walk(template: &Schedule, manifest: &Schedule, span: Span, first_only: bool) -> Diff {
    let mut diff = Diff::default();
    let mut a = first_within(template, span);
    let mut b = first_within(manifest, span);
    loop {
        match (a, b) {
            (None, None) => break,
            (Some(x), Some(y)) if x == y => {
                a = next_within(template, x, span);
                b = next_within(manifest, y, span);
                continue;
            }
            (Some(x), Some(y)) if x < y => {
                diff.only_template_count += 1;
                if diff.only_template.len() < KEEP {
                    diff.only_template.push(x);
                }
                a = next_within(template, x, span);
            }
            (Some(x), None) => {
                diff.only_template_count += 1;
                if diff.only_template.len() < KEEP {
                    diff.only_template.push(x);
                }
                a = next_within(template, x, span);
            }
            (_, Some(y)) => {
                diff.only_manifest_count += 1;
                if diff.only_manifest.len() < KEEP {
                    diff.only_manifest.push(y);
                }
                b = next_within(manifest, y, span);
            }
        }
        if first_only {
            break;
        }
    }
    diff
}

/// Whether the two fire at exactly the same instants over the span.
pub fn same(template: &Schedule, manifest: &Schedule, span: Span) -> bool {
    walk(template, manifest, span, true).is_empty()
}

/// Every difference over the span (the first few instants kept).
pub fn compare(template: &Schedule, manifest: &Schedule, span: Span) -> Diff {
    walk(template, manifest, span, false)
}

/// A platform expression evaluated as the platform does: on the zone's
/// wall clock, skipping gap times and firing once in overlaps.
pub fn platform_schedule(cron: CronExpr, zone: Zone) -> Schedule {
    Schedule::wall_clock(cron, zone, DstPolicy::SKIP_ONCE)
}

/// Every minute, in UTC: what a tick must fire at.
pub fn every_minute() -> Option<Schedule> {
    CronExpr::parse_dialect("* * * * *", Dialect::Standard)
        .ok()
        .map(Schedule::utc)
}

/// Whether the schedule fires at every minute of the span. Answered from
/// the fields when they are all full in UTC (the usual tick, without
/// walking half a million minutes); otherwise by comparison, which stops
/// at the first minute missed.
pub fn is_every_minute(schedule: &Schedule, span: Span) -> bool {
    let cron = schedule.cron();
    let full = cron.minutes() == (1u64 << 60) - 1
        && cron.hours() == (1u32 << 24) - 1
        && cron.months() & 0x1ffe == 0x1ffe
        && cron.years().is_none_or(|y| y.is_full())
        && cron.dom_is_full()
        && cron.dow_is_full();
    if full && schedule.zone().is_utc() {
        return true;
    }
    every_minute().is_some_and(|m| same(schedule, &m, span))
}

/// A platform expression read with POSIX weekday numbers (Sunday = 0):
/// the mistake of writing a crontab line into a platform that counts from
/// Sunday = 1. `None` when the expression has no day-of-week numbers, or
/// does not read as a crontab line.
pub fn posix_reading(text: &str, dialect: Dialect) -> Option<CronExpr> {
    let body = match dialect {
        Dialect::EventBridge => {
            let inner = text.trim().strip_prefix("cron(")?.strip_suffix(')')?;
            let fields: Vec<&str> = inner.split_whitespace().collect();
            if fields.len() != 6 || fields[5] != "*" {
                return None;
            }
            fields[..5].join(" ")
        }
        _ => text.trim().to_string(),
    };
    let dow = body.split_whitespace().nth(4)?;
    if !dow.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    CronExpr::parse_dialect(&body, Dialect::Standard).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("instant")
    }

    #[test]
    fn eventbridge_weekdays_match_the_standard_ones() {
        let span = Span::year_after(at("2026-01-01T00:00:00Z"));
        let job = Schedule::utc(CronExpr::parse("0 9 * * MON-FRI").expect("cron"));
        let eb = platform_schedule(
            CronExpr::parse_dialect("cron(0 9 ? * 2-6 *)", Dialect::EventBridge).expect("cron"),
            Zone::utc(),
        );
        assert!(same(&eb, &job, span));
        let posix = platform_schedule(
            CronExpr::parse_dialect("cron(0 9 ? * 1-5 *)", Dialect::EventBridge).expect("cron"),
            Zone::utc(),
        );
        let diff = compare(&posix, &job, span);
        assert!(!diff.is_empty());
        assert_eq!(diff.only_template_count, 52, "Sundays");
        assert_eq!(diff.only_manifest_count, 52, "Fridays");
        let reread = posix_reading("cron(0 9 ? * 1-5 *)", Dialect::EventBridge).expect("posix");
        assert!(same(&Schedule::utc(reread), &job, span));
    }

    #[test]
    fn every_minute_fast_and_slow() {
        let span = Span::year_after(at("2026-01-01T00:00:00Z"));
        let cf = |t: &str| {
            platform_schedule(
                CronExpr::parse_dialect(t, Dialect::Cloudflare).expect("cron"),
                Zone::utc(),
            )
        };
        assert!(is_every_minute(&cf("* * * * *"), span));
        assert!(!is_every_minute(&cf("*/2 * * * *"), span));
        assert!(!is_every_minute(&cf("* * * * 2-6"), span));
        // A wall-clock minute schedule in a DST zone misses the repeated hour.
        let ny = platform_schedule(
            CronExpr::parse_dialect("cron(* * * * ? *)", Dialect::EventBridge).expect("cron"),
            Zone::get("America/New_York").expect("zone"),
        );
        assert!(!is_every_minute(&ny, span));
    }

    #[test]
    fn posix_reading_needs_weekday_numbers() {
        assert!(posix_reading("0 9 * * *", Dialect::Cloudflare).is_none());
        assert!(posix_reading("0 9 * * MON", Dialect::Cloudflare).is_none());
        assert!(posix_reading("0 9 * * 1", Dialect::Cloudflare).is_some());
    }
}
