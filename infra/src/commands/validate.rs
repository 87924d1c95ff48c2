//! `cronslot validate`: read a manifest, report every error, or print every
//! job with its next three slots.

use std::fmt::Write as _;
use std::path::Path;

use clap::Args;
use cronslot_core::explain::{explain, explain_dst};
use cronslot_core::manifest::Manifest;
use jiff::Timestamp;
use serde::Serialize;

use crate::cli::{Format, ManifestInput};
use crate::exit::Failure;
use crate::format::{Ts, local, to_json, utc};
use crate::manifest::load_manifest;
use crate::parse::parse_instant;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// Print the next slots after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// Output format: text, or json for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn exec(args: ValidateArgs) -> Result<(), Failure> {
    let path = args.manifest.path();
    let manifest = load_manifest(&path)?;
    let after = parse_instant("--after", args.after.as_deref())?;
    if args.format == Format::Json {
        let doc = document(&path, &manifest, after);
        println!("{}", to_json(&doc)?);
        return Ok(());
    }
    let mut out = String::new();
    let count = manifest.jobs.len();
    let _ = writeln!(
        out,
        "{}: {count} job{} OK",
        path.display(),
        if count == 1 { "" } else { "s" }
    );
    for job in &manifest.jobs {
        let _ = writeln!(
            out,
            "\n{}  ({}, {}, trigger {})",
            job.name.as_str(),
            job.schedule_text,
            job.schedule.zone().name(),
            job.trigger,
        );
        let _ = writeln!(out, "  {}", explain(&job.schedule));
        let slots: Vec<_> = job.schedule.iter_after(after).take(3).collect();
        if slots.is_empty() {
            let _ = writeln!(out, "  never fires");
        }
        for o in slots {
            let _ = writeln!(
                out,
                "  next  {}  {}",
                utc(o.instant),
                local(o.instant, job.schedule.zone())
            );
        }
    }
    for warning in &manifest.warnings {
        let _ = writeln!(out, "\n{warning}");
    }
    print!("{out}");
    Ok(())
}

/// `--format json`: the manifest's jobs with their next three slots, and
/// its warnings.
#[derive(Serialize)]
struct Validated {
    manifest: String,
    jobs: Vec<ValidatedJob>,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct ValidatedJob {
    job: String,
    schedule: String,
    timezone: String,
    trigger: String,
    explanation: String,
    /// How the schedule behaves at DST transitions; null without DST.
    dst: Option<String>,
    /// The next three slots after `--after` (empty: it never fires).
    next: Vec<Ts>,
}

fn document(path: &Path, manifest: &Manifest, after: Timestamp) -> Validated {
    Validated {
        manifest: path.display().to_string(),
        jobs: manifest
            .jobs
            .iter()
            .map(|job| ValidatedJob {
                job: job.name.as_str().to_string(),
                schedule: job.schedule_text.clone(),
                timezone: job.schedule.zone().name().to_string(),
                trigger: job.trigger.to_string(),
                explanation: explain(&job.schedule),
                dst: explain_dst(&job.schedule),
                next: job
                    .schedule
                    .iter_after(after)
                    .take(3)
                    .map(|o| Ts(o.instant))
                    .collect(),
            })
            .collect(),
        warnings: manifest.warnings.iter().map(ToString::to_string).collect(),
    }
}
