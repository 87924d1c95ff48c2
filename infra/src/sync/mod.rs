//! Making the EventBridge Scheduler schedules of a group match the
//! manifest, for users who manage schedules by API rather than templates:
//! what `cronslot sync aws` does (the command is `commands/sync.rs`).
//!
//! What each job gets is `render`'s plan ([`crate::render::plan`]): a
//! dedicated job with an exact translation gets its own schedule, every
//! other job runs on one tick; the expression, zone, Input and retry policy
//! are the ones `render sam` writes.
//!
//! Ownership: sync works in one schedule group (default `cronslot`) and,
//! optionally, under a name prefix. A job's schedule is `PREFIX+JOB`, the
//! tick `PREFIX+_tick` (a job name cannot start with `_`). It deletes only
//! schedules of that group and prefix whose Input is a cronslot one;
//! anything else there is reported and left alone.
//!
//! Targets: `--target-arn`, `--role-arn` and `--dead-letter-arn` when
//! given; otherwise a schedule keeps its own and a new one takes those of
//! the group's first cronslot schedule (see [`TargetFlags`]).
//!
//! Two syncs at once: names are deterministic, so a create that meets
//! `ConflictException` (the other sync created it) re-reads the schedule
//! and updates it only if it differs; an update starts from what it read
//! (and keeps what sync does not manage: the KMS key); a delete of a
//! schedule that is already gone is done. Neither a duplicate nor a lost
//! schedule can result.
//!
//! [`plan`] computes what the manifest wants ([`desired`]), compares it with
//! what is deployed and lists the steps (the document `--format json`
//! prints); [`apply`] makes the calls that carry them out, with their
//! outcomes and counts. [`run`] reads the group and does the one, then
//! (unless `--dry-run`) the other.

mod apply;
mod plan;
pub mod scheduler;

use std::path::Path;

use aws_sdk_scheduler::Client;

use crate::cli::Format;
use crate::commands::sync::SyncArgs;
use crate::exit::Failure;
use crate::format::to_json;

use apply::{Counts, apply_steps, create_group};
use plan::{Desired, ScheduleDoc, SyncDoc, base, plan_steps, print_plan};

pub use plan::{TargetFlags, desired};

/// Reads the group, plans and prints the steps, and (unless `--dry-run`)
/// applies them: exit 1 when any schedule failed. With `--format json`
/// the same as one [`SyncDoc`].
pub async fn run(
    client: &Client,
    args: &SyncArgs,
    want: &[Desired],
    flags: &TargetFlags,
) -> Result<(), Failure> {
    let text = args.format == Format::Text;
    let group = args.group.as_str();
    let exists = scheduler::group_exists(client, group).await?;
    let have = if exists {
        scheduler::read_group(client, group, &args.prefix).await?
    } else {
        Vec::new()
    };
    let steps = plan_steps(want, &have, flags)?;
    let base = base(&have);
    let prefix = if args.prefix.is_empty() {
        String::new()
    } else {
        format!(", prefix {:?}", args.prefix)
    };
    let mut doc = SyncDoc {
        group: group.to_string(),
        prefix: args.prefix.clone(),
        manifest: display(&args.manifest.path()),
        dry_run: args.dry_run,
        group_created: !exists,
        deployed: have.len(),
        in_sync: false,
        schedules: steps.iter().map(ScheduleDoc::of).collect(),
        counts: Counts::default(),
    };
    let print_doc = |doc: &SyncDoc| -> Result<(), Failure> {
        println!("{}", to_json(doc)?);
        Ok(())
    };
    if text {
        println!(
            "sync aws: schedule group {group}{prefix}: {} schedule{} from {}, {} deployed",
            want.len(),
            if want.len() == 1 { "" } else { "s" },
            display(&args.manifest.path()),
            have.len()
        );
    }
    if args.dry_run {
        let counts = Counts::of_plan(&steps);
        if !text {
            doc.in_sync = counts.changes() == 0 && exists;
            doc.counts = counts;
            return print_doc(&doc);
        }
        if !exists {
            println!("create     schedule group {group}");
        }
        print_plan(&steps);
        if counts.changes() == 0 && exists {
            println!("dry run: in sync, nothing to do ({})", counts.summary());
        } else {
            println!(
                "dry run: would create {}, update {}, delete {}; {} unchanged; nothing was changed",
                counts.created, counts.updated, counts.deleted, counts.unchanged
            );
        }
        return Ok(());
    }
    if !exists {
        create_group(client, group).await?;
        if text {
            println!("created    schedule group {group}");
        }
    }
    let (counts, errors) =
        apply_steps(client, group, &steps, flags, base, &mut doc.schedules, text).await;
    let in_sync = counts.changes() == 0 && exists;
    let summary = counts.summary();
    if !text {
        doc.in_sync = in_sync && errors.is_empty();
        doc.counts = counts;
        print_doc(&doc)?;
    }
    if !errors.is_empty() {
        return Err(Failure {
            code: Failure::PROBLEM,
            message: format!(
                "{}\nsync aws: {} of {} schedules failed ({summary} done)",
                errors.join("\n"),
                errors.len(),
                steps.len(),
            ),
        });
    }
    if text {
        if in_sync {
            println!("in sync: nothing to do ({summary})");
        } else {
            println!("synced: {summary}");
        }
    }
    Ok(())
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
