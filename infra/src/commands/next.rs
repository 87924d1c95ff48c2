//! `cronslot next`: the next fire instants of an expression (with `--tz`
//! and the DST policy) or of a manifest's job, as text or JSON.

use std::fmt::Write as _;

use cronslot_core::SlotKind;

use crate::cli::{Format, NextArgs};
use crate::exit::Failure;
use crate::format::{local, utc};
use crate::manifest::load_manifest;
use crate::parse::{build_schedule, parse_instant};

/// The JSON form of `next`: keys in this order, instants in UTC.
#[derive(serde::Serialize)]
struct NextJson<'a> {
    expression: &'a str,
    timezone: &'a str,
    next: Vec<String>,
}

pub fn exec(args: NextArgs) -> Result<(), Failure> {
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
