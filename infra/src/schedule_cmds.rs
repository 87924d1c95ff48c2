//! `next`, `explain` and `translate`: the schedule commands.

use std::fmt::Write as _;

use cronslot_core::explain::{explain as explain_schedule, explain_dst};
use cronslot_core::translate::{Platform, translate as translate_schedule};
use cronslot_core::{CronError, CronExpr, DstGap, DstOverlap, DstPolicy, Schedule, SlotKind, Zone};
use jiff::Timestamp;

use crate::Failure;
use crate::cli::{
    ExplainArgs, Format, GapArg, NextArgs, OverlapArg, PlatformArg, TranslateArgs, ZoneArgs,
};
use crate::validate::load_manifest;

/// An invalid expression, with the expression echoed and a caret under the
/// offending column.
pub fn cron_failure(expr: &str, err: &CronError) -> Failure {
    let mut message = format!("error: invalid cron expression: {err}\n  {expr}\n  ");
    let caret_at = err.column.saturating_sub(1).min(expr.chars().count());
    message.push_str(&" ".repeat(caret_at));
    message.push('^');
    Failure::bad_input(message)
}

pub fn parse_zone(name: &str) -> Result<Zone, Failure> {
    Zone::get(name).map_err(|e| Failure::bad_input(format!("error: --tz: {e}")))
}

fn build_schedule(expr: &str, args: &ZoneArgs) -> Result<Schedule, Failure> {
    let cron = CronExpr::parse(expr).map_err(|e| cron_failure(expr, &e))?;
    let zone = parse_zone(&args.tz)?;
    let policy = DstPolicy {
        gap: match args.dst_gap {
            GapArg::Shift => DstGap::Shift,
            GapArg::Skip => DstGap::Skip,
        },
        overlap: match args.dst_overlap {
            OverlapArg::Once => DstOverlap::Once,
            OverlapArg::Twice => DstOverlap::Twice,
        },
    };
    Ok(Schedule::new(cron, zone, policy))
}

pub fn parse_instant(flag: &str, value: Option<&str>) -> Result<Timestamp, Failure> {
    match value {
        None => Ok(Timestamp::now()),
        Some(text) => text.parse::<Timestamp>().map_err(|e| {
            Failure::bad_input(format!(
                "error: {flag} {text:?} is not an RFC 3339 instant (write 2026-03-08T07:00:00Z): {e}"
            ))
        }),
    }
}

/// RFC 3339, UTC, seconds precision, `Z` suffix: the form scripts rely on.
pub fn utc(instant: Timestamp) -> String {
    instant.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// "2026-03-08 03:00 EDT (-04:00)".
pub fn local(instant: Timestamp, zone: &Zone) -> String {
    instant
        .to_zoned_datetime(zone.time_zone().clone())
        .strftime("%Y-%m-%d %H:%M %Z (%:z)")
        .to_string()
}

/// The JSON form of `next`: keys in this order, instants in UTC.
#[derive(serde::Serialize)]
struct NextJson<'a> {
    expression: &'a str,
    timezone: &'a str,
    next: Vec<String>,
}

pub fn next(args: NextArgs) -> Result<(), Failure> {
    let (schedule, expression) = match (&args.job, &args.expr) {
        (Some(name), _) => {
            let manifest = load_manifest(&args.manifest)?;
            let job = manifest
                .jobs
                .into_iter()
                .find(|j| j.name.as_str() == name)
                .ok_or_else(|| {
                    Failure::bad_input(format!(
                        "error: no job named {name:?} in {}",
                        args.manifest.display()
                    ))
                })?;
            let text = job.schedule_text.clone();
            (job.schedule, text)
        }
        (None, Some(expr)) => (build_schedule(expr, &args.zone)?, expr.clone()),
        (None, None) => {
            return Err(Failure::bad_input(
                "error: give an expression or --job NAME",
            ));
        }
    };
    let after = parse_instant("--after", args.after.as_deref())?;
    let slots: Vec<_> = schedule
        .iter_after(after)
        .take(args.count as usize)
        .collect();

    match args.format {
        Format::Json => {
            let value = NextJson {
                expression: &expression,
                timezone: schedule.zone().name(),
                next: slots.iter().map(|o| utc(o.instant)).collect(),
            };
            let line = serde_json::to_string(&value)
                .map_err(|e| Failure::bad_input(format!("error: cannot encode JSON: {e}")))?;
            println!("{line}");
        }
        Format::Text => {
            if slots.is_empty() {
                println!("{expression} never fires: no date matches it.");
                return Ok(());
            }
            let mut out = String::new();
            for o in &slots {
                let note = match o.kind {
                    SlotKind::Regular => String::new(),
                    SlotKind::ShiftedFromGap => format!(
                        "  shifted from {:02}:{:02} (DST gap)",
                        o.local.hour, o.local.minute
                    ),
                    SlotKind::SecondPass => "  second pass (DST overlap)".to_string(),
                };
                let _ = writeln!(
                    out,
                    "{}  {}{note}",
                    utc(o.instant),
                    local(o.instant, schedule.zone())
                );
            }
            print!("{out}");
        }
    }
    Ok(())
}

pub fn explain(args: ExplainArgs) -> Result<(), Failure> {
    let schedule = build_schedule(&args.expr, &args.zone)?;
    println!("{}", explain_schedule(&schedule));
    if let Some(dst) = explain_dst(&schedule) {
        println!("{dst}");
    }
    Ok(())
}

pub fn translate(args: TranslateArgs) -> Result<(), Failure> {
    let schedule = build_schedule(&args.expr, &args.zone)?;
    let platform = match args.to {
        PlatformArg::Eventbridge => Platform::EventBridge,
        PlatformArg::Cloudflare => Platform::Cloudflare,
    };
    match translate_schedule(&schedule, platform) {
        Ok(t) => {
            if platform == Platform::EventBridge {
                println!("ScheduleExpressionTimezone: {}", t.timezone);
            }
            println!("{}", t.expression);
            Ok(())
        }
        Err(reasons) => {
            let mut message = format!(
                "error: {:?} in {} has no exact {} translation:",
                args.expr,
                schedule.zone().name(),
                match platform {
                    Platform::EventBridge => "EventBridge",
                    Platform::Cloudflare => "Cloudflare",
                }
            );
            for reason in reasons {
                let _ = write!(message, "\n  - {reason}");
            }
            message.push_str("\n(in a manifest, such a job falls back to tick mode)");
            Err(Failure {
                code: Failure::INEXACT,
                message,
            })
        }
    }
}
