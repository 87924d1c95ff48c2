//! Flag values into the core's types: instants (`--after`, `--from`,
//! `--to`), cron expressions and zones. Every failure is bad input (exit
//! 2) and names the flag.

use cronslot_core::{CronError, CronExpr, DstGap, DstOverlap, DstPolicy, Schedule, Zone};
use jiff::Timestamp;

use crate::cli::{GapArg, OverlapArg, ZoneArgs};
use crate::exit::Failure;

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

/// An expression with `--tz`, `--dst-gap` and `--dst-overlap`.
pub fn build_schedule(expr: &str, args: &ZoneArgs) -> Result<Schedule, Failure> {
    let cron = CronExpr::parse(expr).map_err(|e| cron_failure(expr, &e))?;
    let zone = parse_zone(&args.tz)?;
    let policy = DstPolicy {
        gap: match args.dst_gap {
            GapArg::Shift => DstGap::Shift,
            GapArg::Skip => DstGap::Skip,
            GapArg::ShiftAlways => DstGap::ShiftAlways,
        },
        overlap: match args.dst_overlap {
            OverlapArg::Once => DstOverlap::Once,
            OverlapArg::Twice => DstOverlap::Twice,
        },
    };
    Ok(Schedule::new(cron, zone, policy))
}

/// An optional instant flag such as `--after`: now when not given.
pub fn parse_instant(flag: &str, value: Option<&str>) -> Result<Timestamp, Failure> {
    match value {
        None => Ok(Timestamp::now()),
        Some(text) => parse_rfc3339(flag, text),
    }
}

/// A required instant flag such as `--from` (surrounding blanks ignored).
pub fn parse_rfc3339(flag: &str, text: &str) -> Result<Timestamp, Failure> {
    cronslot_core::instant::parse_instant(text.trim())
        .map_err(|e| Failure::bad_input(format!("error: {flag} {e}")))
}
