//! `cronslot translate`: an expression in a platform's cron dialect,
//! exactly or not at all (exit 3, with the reasons).

use std::fmt::Write as _;

use cronslot_core::translate::{Platform, translate as translate_schedule};

use crate::cli::{PlatformArg, TranslateArgs};
use crate::exit::Failure;
use crate::parse::build_schedule;

pub fn exec(args: TranslateArgs) -> Result<(), Failure> {
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
