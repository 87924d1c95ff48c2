//! `cronslot pause` and `cronslot resume`: one function, that sets or
//! clears a job's paused flag. A paused job's slots are skipped (and
//! counted) until it is resumed; runs in progress are not stopped.
//!
//! Exit codes: 0 done (pausing a paused job too: nothing to do); 1 the
//! store failed or refused the write; 2 bad input.

use clap::Args;
use cronslot_core::coord::{CoordError, SkipReason};
use cronslot_core::health;
use cronslot_core::manifest::JobSpec;
use cronslot_runtime::admin::PauseDoc;

use crate::cli::{Format, JobArgs};
use crate::exit::{Failure, coord_failure};
use crate::format::{instant_text, slot_id, to_json};
use crate::store::{Session, wait, with_backend};
use cronslot_core::coord::Operator;

/// `pause` and `resume`: the job, and how to say what changed.
#[derive(Debug, Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Output format: text, or json (the admin API's pause document).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn pause(args: PauseArgs) -> Result<(), Failure> {
    set_paused(&args, true)
}

pub fn resume(args: PauseArgs) -> Result<(), Failure> {
    set_paused(&args, false)
}

fn set_paused(pause_args: &PauseArgs, paused: bool) -> Result<(), Failure> {
    let args = &pause_args.job;
    // `--format json`: the document the admin route answers with.
    let json = |changed: bool| -> Result<(), Failure> {
        let doc = PauseDoc {
            job: args.job.clone(),
            key: args.key.clone(),
            paused,
            changed,
        };
        println!("{}", to_json(&doc)?);
        Ok(())
    };
    let (session, key) = Session::open_operand(&args.store, &args.job, args.key.as_deref())?;
    let spec = session.operand(&args.job, key.as_ref())?;
    let spec: &JobSpec = &spec;
    // A schedule's record is `job/key`: messages name it.
    let record = spec.record_name();
    let job = &*record;
    let now = session.now;
    let fail = |doing: &str, e: CoordError| coord_failure(&session.store, doing, job, &e);
    let before = with_backend!(&session.backend, c => wait(c.status(spec, now)))
        .map_err(|e| fail("reading", e))?;
    let zone = spec.schedule.zone();
    if before.paused == paused {
        if pause_args.format == Format::Json {
            return json(false);
        }
        let state = if paused { "paused" } else { "not paused" };
        println!("job {job} is already {state}; nothing changed");
        return Ok(());
    }
    let doing = if paused { "pausing" } else { "resuming" };
    let changed = if paused {
        with_backend!(&session.backend, c => wait(c.pause(spec, now)))
    } else {
        with_backend!(&session.backend, c => wait(c.resume(spec, now)))
    };
    changed.map_err(|e| fail(doing, e))?;
    if pause_args.format == Format::Json {
        return json(true);
    }
    let after = with_backend!(&session.backend, c => wait(c.status(spec, now)))
        .map_err(|e| fail("reading", e))?;
    if paused {
        println!(
            "paused job {job} in store {}: its slots are skipped (and counted) until `cronslot resume {}{}`",
            session.store,
            args.job,
            args.key
                .as_ref()
                .map_or(String::new(), |k| format!(" --key {k}"))
        );
        if !after.leases.is_empty() {
            println!(
                "{} run{} in progress {} not stopped:",
                after.leases.len(),
                if after.leases.len() == 1 { "" } else { "s" },
                if after.leases.len() == 1 { "is" } else { "are" }
            );
            for l in &after.leases {
                println!(
                    "  {}  owner {}  fence {}",
                    slot_id(spec, l.slot),
                    l.owner,
                    l.fence
                );
            }
        }
    } else {
        let skipped = after
            .counters
            .skipped
            .get(&SkipReason::Paused)
            .copied()
            .unwrap_or(0);
        println!(
            "resumed job {job} in store {}; slots skipped while paused, over all pauses: {skipped}",
            session.store
        );
        match health::next_slot(spec, now) {
            Some(t) => println!("next slot {}", instant_text(t, zone)),
            None => println!("no slot left in the job's active window"),
        }
    }
    Ok(())
}
