//! `cronslot validate`: read a manifest, report every error, or print every
//! job with its next three slots.

use std::fmt::Write as _;

use cronslot_core::explain::explain;

use crate::cli::ValidateArgs;
use crate::exit::Failure;
use crate::format::{local, utc};
use crate::manifest::load_manifest;
use crate::parse::parse_instant;

pub fn exec(args: ValidateArgs) -> Result<(), Failure> {
    let manifest = load_manifest(&args.manifest.path())?;
    let after = parse_instant("--after", args.after.as_deref())?;
    let mut out = String::new();
    let count = manifest.jobs.len();
    let _ = writeln!(
        out,
        "{}: {count} job{} OK",
        args.manifest.path().display(),
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
