//! `cronslot dlq list|redrive`: the dead letters (slots whose retries are
//! exhausted), listed as a table or JSON, or sent back to run with a fresh
//! attempt budget.
//!
//! Exit codes: 0 done (an empty list, or a job without dead letters to
//! redrive); 1 nothing could be redriven, or the store failed; 2 bad input
//! (a `--slot` that is not a dead letter of the job).

use std::fmt::Write as _;

use clap::{Args, Subcommand};
use cronslot_core::coord::{CoordError, SlotId};
use cronslot_core::manifest::{JobSpec, JobTemplate};
use cronslot_runtime::admin::{self, DlqDoc, ErrorDoc, RedriveDoc};
use jiff::Timestamp;

use crate::cli::{Format, StoreArgs};
use crate::exit::{Failure, coord_failure};
use crate::format::{ERROR_CELL_CHARS, one_line, slot_id, to_json, utc};
use crate::manifest::find_job;
use crate::parse::parse_rfc3339;
use crate::store::{Backend, Session, wait, with_backend};

use super::schedule::decode;
use cronslot_core::coord::Operator;

#[derive(Debug, Args)]
pub struct DlqArgs {
    #[command(subcommand)]
    pub action: DlqAction,
}

#[derive(Debug, Subcommand)]
pub enum DlqAction {
    /// List dead letters: slot, attempts, last error, fence.
    List {
        #[command(flatten)]
        store: StoreArgs,
        /// Only this job.
        #[arg(long, value_name = "NAME")]
        job: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Send dead letters back to run, with a fresh attempt budget.
    Redrive {
        #[command(flatten)]
        store: StoreArgs,
        /// The job whose dead letters to redrive.
        #[arg(value_name = "JOB")]
        job: String,
        /// Only this slot (RFC 3339); default: every dead letter of the job.
        #[arg(long, value_name = "RFC3339")]
        slot: Option<String>,
        /// Redrive the dead letters of this schedule of the dynamic job JOB.
        #[arg(long, value_name = "KEY")]
        key: Option<String>,
        /// Output format: text, or json (the admin API's redrive document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

pub fn exec(args: DlqArgs) -> Result<(), Failure> {
    match args.action {
        DlqAction::List { store, job, format } => dlq_list(&store, job.as_deref(), format),
        DlqAction::Redrive {
            store,
            job,
            slot,
            key,
            format,
        } => dlq_redrive(&store, &job, key.as_deref(), slot.as_deref(), format),
    }
}

/// `cronslot dlq list --format json` prints the admin route's document
/// ([`DlqDoc`]) with the store's name.
fn dlq_list(args: &StoreArgs, job: Option<&str>, format: Format) -> Result<(), Failure> {
    let session = Session::open_checked(args, |manifest, path| match job {
        Some(name) if manifest.template(name).is_none() => {
            find_job(manifest, path, name).map(|_| ())
        }
        _ => Ok(()),
    })?;
    // A dynamic job's dead letters are its keyed runs'.
    let templates: Vec<&JobTemplate> = match job {
        Some(name) => session.manifest.template(name).into_iter().collect(),
        None => session.manifest.templates.iter().collect(),
    };
    let specs: Vec<&JobSpec> = match job {
        Some(name) => session.manifest.job(name).into_iter().collect(),
        None => session.manifest.jobs.iter().collect(),
    };
    let mut doc = DlqDoc::new(session.now, Some(session.store.clone()));
    let mut unlisted = false;
    for spec in specs {
        let name = spec.name.as_str();
        let state = with_backend!(&session.backend, c => wait(c.status(spec, session.now)))
            .map_err(|e| coord_failure(&session.store, "reading", name, &e))?;
        doc.add_job(spec, state);
    }
    if !templates.is_empty() {
        match &session.backend {
            Backend::Store(coordinator) => {
                wait(admin::add_dead_runs(
                    &mut doc,
                    &**coordinator,
                    &templates,
                    session.now,
                ))
                .map_err(|reply| match decode::<ErrorDoc>(&reply) {
                    Ok(doc) => {
                        Failure::problem(format!("error: store {}: {}", session.store, doc.message))
                    }
                    Err(failure) => failure,
                })?;
            }
            // The admin routes list a job's runs apart (`GET
            // {p}/runs/JOB?status=dead`): this list over them holds the
            // manifest jobs' dead letters, and says so.
            Backend::Admin(_) => unlisted = true,
        }
    }
    doc.sort();
    match format {
        Format::Json => println!("{}", to_json(&doc)?),
        Format::Text => print!("{}", dlq_text(&doc, &session.store)),
    }
    if unlisted {
        eprintln!(
            "note: the dead keyed runs of dynamic jobs are not in this list over an admin URL: \
             GET {}/runs/JOB?status=dead lists them",
            session.store
        );
    }
    Ok(())
}

fn dlq_text(report: &DlqDoc, store: &str) -> String {
    let mut out = String::new();
    if report.dead_letters.is_empty() {
        let _ = writeln!(out, "no dead letters in store {store}");
    } else {
        let rows: Vec<[String; 6]> = report
            .dead_letters
            .iter()
            .map(|e| {
                [
                    // A keyed run: `job/key`, as its redrive names it.
                    e.key
                        .as_ref()
                        .map_or_else(|| e.job.clone(), |key| format!("{}/{key}", e.job)),
                    utc(e.letter.slot),
                    e.letter.attempts.to_string(),
                    e.letter.fence.to_string(),
                    utc(e.letter.died_at),
                    one_line(&e.letter.last_error, ERROR_CELL_CHARS),
                ]
            })
            .collect();
        let header = ["JOB", "SLOT", "ATTEMPTS", "FENCE", "DIED AT", "LAST ERROR"];
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut print_row = |cells: [&str; 6]| {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i + 1 == cells.len() {
                    line.push_str(cell);
                } else {
                    let _ = write!(line, "{cell:<w$}  ", w = widths[i]);
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        };
        print_row(header);
        for row in &rows {
            print_row([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]]);
        }
        let n = report.dead_letters.len();
        let _ = writeln!(
            out,
            "\n{n} dead letter{}; send them back to run with: cronslot dlq redrive JOB [--slot RFC3339] \
             (a keyed run JOB/KEY: cronslot dlq redrive JOB --key KEY)",
            if n == 1 { "" } else { "s" }
        );
    }
    for (job, n) in &report.dropped {
        let _ = writeln!(
            out,
            "{job}: {n} older dead letter{} dropped from the capped list (counted in status)",
            if *n == 1 { " was" } else { "s were" }
        );
    }
    out
}

fn dlq_redrive(
    args: &StoreArgs,
    job_arg: &str,
    key_arg: Option<&str>,
    slot: Option<&str>,
    format: Format,
) -> Result<(), Failure> {
    let (session, key) = Session::open_operand(args, job_arg, key_arg)?;
    let spec = session.operand(job_arg, key.as_ref())?;
    let spec: &JobSpec = &spec;
    // A schedule's record is `job/key`: messages name it.
    let record = spec.record_name();
    let job = &*record;
    let slot = slot
        .map(|s| parse_slot_flag("--slot", s, spec))
        .transpose()?;
    let now = session.now;
    let fail = |doing: &str, e: CoordError| coord_failure(&session.store, doing, job, &e);
    let redriven = with_backend!(&session.backend, c => wait(c.redrive(spec, slot, now)))
        .map_err(|e| fail("redriving", e))?;
    // `--format json`: the document the admin route answers with.
    let json = |redriven: Vec<Timestamp>| -> Result<(), Failure> {
        let doc = RedriveDoc {
            job: job_arg.to_string(),
            key: key_arg.map(str::to_string),
            redriven,
        };
        println!("{}", to_json(&doc)?);
        Ok(())
    };
    if redriven.is_empty() {
        let state = with_backend!(&session.backend, c => wait(c.status(spec, now)))
            .map_err(|e| fail("reading", e))?;
        return match slot {
            None if state.dead.is_empty() => match format {
                Format::Json => json(Vec::new()),
                Format::Text => {
                    println!("job {job} has no dead letters; nothing redriven");
                    Ok(())
                }
            },
            None => Err(Failure::problem(format!(
                "error: none of the {} dead letters of job {job} could be redriven: each is running or waiting already, or the job has too many pending runs",
                state.dead.len()
            ))),
            Some(s) if state.slot_in_flight(s) => Err(Failure::bad_input(format!(
                "error: {} is not a dead letter: it is running or waiting for a retry now (cronslot status --job {job})",
                slot_id(spec, s)
            ))),
            Some(s) => {
                let known: Vec<String> = state.dead.iter().map(|d| utc(d.slot)).collect();
                let known = if known.is_empty() {
                    "the job has no dead letters".to_string()
                } else {
                    format!("its dead letters: {}", known.join(", "))
                };
                Err(Failure::bad_input(format!(
                    "error: {} is not a dead letter of job {job}; {known}",
                    slot_id(spec, s)
                )))
            }
        };
    }
    if format == Format::Json {
        return json(redriven);
    }
    let n = redriven.len();
    println!(
        "redrove {n} dead letter{} of job {job} with a fresh attempt budget; a runner on store {} claims {} next:",
        if n == 1 { "" } else { "s" },
        session.store,
        if n == 1 { "it" } else { "them" }
    );
    for s in redriven {
        println!("  {}", slot_id(spec, s));
    }
    Ok(())
}

/// Parses an instant flag: RFC 3339, or a slot id `job@RFC3339` of `job`.
fn parse_slot_flag(flag: &str, text: &str, spec: &JobSpec) -> Result<Timestamp, Failure> {
    if text.contains('@') {
        let id: SlotId = text
            .parse()
            .map_err(|e| Failure::bad_input(format!("error: {flag}: {e}")))?;
        if id.job() != spec.name.as_str() {
            return Err(Failure::bad_input(format!(
                "error: {flag} {text:?} is a slot of job {:?}, not of {:?}",
                id.job(),
                spec.name.as_str()
            )));
        }
        return Ok(id.at());
    }
    parse_rfc3339(flag, text)
}
