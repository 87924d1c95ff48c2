//! `cronslot backfill`: queue past slots of a job to run again, oldest
//! first, or list them with `--dry-run`.
//!
//! Exit codes: 0 done (nothing to queue too); 1 the store failed or
//! refused the write; 2 bad input (instants, a range the core refuses).

use clap::Args;
use cronslot_core::coord::CoordError;
use cronslot_core::manifest::JobSpec;
use cronslot_runtime::admin::BackfillDoc;

use crate::cli::{Format, StoreArgs};
use crate::exit::{Failure, coord_failure};
use crate::format::{local, slot_id, to_json, utc};
use crate::parse::parse_rfc3339;
use crate::store::{Records, Session, wait, with_backend};
use cronslot_core::coord::Operator;

#[derive(Debug, Args)]
pub struct BackfillArgs {
    /// The job's name.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// First slot instant to include (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    pub from: String,
    /// Last slot instant to include (RFC 3339, not in the future).
    #[arg(long, value_name = "RFC3339")]
    pub to: String,
    /// List the slots that would be queued, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Backfill this schedule of the dynamic job JOB instead.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Output format: text, or json (the admin API's backfill document).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub fn exec(args: BackfillArgs) -> Result<(), Failure> {
    let from = parse_rfc3339("--from", &args.from)?;
    let to = parse_rfc3339("--to", &args.to)?;
    let (session, key) = Session::open_operand(&args.store, &args.job, args.key.as_deref())?;
    let spec = session.operand(&args.job, key.as_ref())?;
    let spec: &JobSpec = &spec;
    // A schedule's record is `job/key`: messages name it, and it is read.
    let record = spec.record_name();
    let job = &*record;
    let fail = |doing: &str, e: CoordError| coord_failure(&session.store, doing, job, &e);
    let slots = with_backend!(&session.backend, c => wait(c.backfill(spec, from, to, session.now, args.dry_run)))
        .map_err(|e| fail("backfilling", e))?;
    if args.format == Format::Json {
        // The document the admin route answers with, for the same request.
        let doc = BackfillDoc {
            job: args.job.clone(),
            key: args.key.clone(),
            dry_run: args.dry_run,
            slots,
        };
        println!("{}", to_json(&doc)?);
        return Ok(());
    }
    // Backfill takes only slots the stored cursor has passed; later ones
    // are still due on the schedule. Say so when the range reaches them.
    let cursor = with_backend!(&session.backend, c => wait(c.record(job)))
        .map_err(|e| fail("reading", e))?
        .map(|state| state.cursor);
    let zone = spec.schedule.zone();
    let n = slots.len();
    let plural = if n == 1 { "" } else { "s" };
    if n == 0 {
        println!(
            "no slot of job {job} to queue in [{}, {}]: slots that are running, waiting for a retry \
             or dead (use `cronslot dlq redrive`) are left alone",
            utc(from),
            utc(to)
        );
    } else {
        if args.dry_run {
            println!("would queue {n} slot{plural} of job {job} (dry run: nothing changed):");
        } else {
            println!(
                "queued {n} slot{plural} of job {job}; a runner on store {} runs {} oldest first:",
                session.store,
                if n == 1 { "it" } else { "them" }
            );
        }
        for s in slots {
            if zone.is_utc() {
                println!("  {}", slot_id(spec, s));
            } else {
                println!("  {}  {}", slot_id(spec, s), local(s, zone));
            }
        }
    }
    if let Some(cursor) = cursor.filter(|c| to > *c) {
        println!(
            "note: slots after {} (where runners have planned job {job} up to) are left alone: \
             they are still due on the schedule and get their fate (run, or missed per catch_up) \
             when a runner next plans the job",
            utc(cursor)
        );
    }
    Ok(())
}
