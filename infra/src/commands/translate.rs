//! `cronslot translate`: an expression in a platform's cron dialect,
//! exactly or not at all (exit 3, with the reasons).

use std::fmt::Write as _;

use clap::{Args, ValueEnum};
use cronslot_core::translate::{Platform, translate as translate_schedule};
use serde::Serialize;

use crate::cli::{Format, ZoneArgs};
use crate::exit::Failure;
use crate::parse::build_schedule;

#[derive(Debug, Args)]
pub struct TranslateArgs {
    /// Cron expression (five fields, Sunday = 0).
    #[arg(value_name = "EXPR")]
    pub expr: String,
    /// Target dialect.
    #[arg(long, value_enum)]
    pub to: PlatformArg,
    #[command(flatten)]
    pub zone: ZoneArgs,
    /// Output format: text, or json (expression, timezone, platform, exact,
    /// translation, reasons), printed for an inexact expression too (exit 3).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformArg {
    Eventbridge,
    Cloudflare,
}

/// `--format json`: printed whether or not an exact translation exists.
#[derive(Serialize)]
struct TranslateDoc<'a> {
    expression: &'a str,
    /// The zone the expression is read in.
    timezone: &'a str,
    /// `eventbridge` or `cloudflare`.
    platform: &'a str,
    exact: bool,
    /// The translation, when exact; null otherwise.
    translation: Option<TranslationDoc>,
    /// Why no exact translation exists; empty when exact.
    reasons: Vec<String>,
}

#[derive(Serialize)]
struct TranslationDoc {
    /// EventBridge: `cron(m h dom mon dow *)`; Cloudflare: five fields.
    expression: String,
    /// The zone to declare on the platform (EventBridge's
    /// `ScheduleExpressionTimezone`); `UTC` for Cloudflare.
    timezone: String,
}

pub fn exec(args: TranslateArgs) -> Result<(), Failure> {
    let schedule = build_schedule(&args.expr, &args.zone)?;
    let (platform, platform_id, platform_name) = match args.to {
        PlatformArg::Eventbridge => (Platform::EventBridge, "eventbridge", "EventBridge"),
        PlatformArg::Cloudflare => (Platform::Cloudflare, "cloudflare", "Cloudflare"),
    };
    let result = translate_schedule(&schedule, platform);
    if args.format == Format::Json {
        let doc = TranslateDoc {
            expression: &args.expr,
            timezone: schedule.zone().name(),
            platform: platform_id,
            exact: result.is_ok(),
            translation: result.as_ref().ok().map(|t| TranslationDoc {
                expression: t.expression.clone(),
                timezone: t.timezone.clone(),
            }),
            reasons: match &result {
                Ok(_) => Vec::new(),
                Err(reasons) => reasons.iter().map(ToString::to_string).collect(),
            },
        };
        println!("{}", crate::format::to_json(&doc)?);
    }
    match result {
        Ok(t) => {
            if args.format == Format::Text {
                if platform == Platform::EventBridge {
                    println!("ScheduleExpressionTimezone: {}", t.timezone);
                }
                println!("{}", t.expression);
            }
            Ok(())
        }
        Err(reasons) => {
            let mut message = format!(
                "error: {:?} in {} has no exact {platform_name} translation:",
                args.expr,
                schedule.zone().name(),
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
