//! `cronslot explain`: a schedule in plain English, with its DST behaviour.

use clap::Args;
use cronslot_core::explain::{explain as explain_schedule, explain_dst};
use serde::Serialize;

use crate::cli::{Format, ZoneArgs};
use crate::exit::Failure;
use crate::parse::build_schedule;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Cron expression (five fields).
    #[arg(value_name = "EXPR")]
    pub expr: String,
    #[command(flatten)]
    pub zone: ZoneArgs,
    /// Output format: text, or json for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// `--format json`.
#[derive(Serialize)]
struct Explained<'a> {
    expression: &'a str,
    timezone: &'a str,
    /// "At 09:00, Monday through Friday, America/New_York".
    explanation: String,
    /// How the schedule behaves at DST transitions; null in zones without DST.
    dst: Option<String>,
}

pub fn exec(args: ExplainArgs) -> Result<(), Failure> {
    let schedule = build_schedule(&args.expr, &args.zone)?;
    let explanation = explain_schedule(&schedule);
    let dst = explain_dst(&schedule);
    match args.format {
        Format::Text => {
            println!("{explanation}");
            if let Some(dst) = dst {
                println!("{dst}");
            }
        }
        Format::Json => {
            let doc = Explained {
                expression: &args.expr,
                timezone: schedule.zone().name(),
                explanation,
                dst,
            };
            println!("{}", crate::format::to_json(&doc)?);
        }
    }
    Ok(())
}
