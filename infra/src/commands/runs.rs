//! `cronslot runs put|get|ls`: the keyed runs of a dynamic job (a one-off
//! run under a business key, enqueued once), enqueued, read and listed in
//! the store as the admin routes `PUT` and `GET {p}/runs/{job}/{key}` and
//! `GET {p}/runs/{job}` do: the same code
//! (`cronslot_runtime::admin::execute_run`) runs here, so `--format json`
//! prints the route's document.
//!
//! The job, the key and the request are checked before the store is
//! opened. Exit codes: 0 the run is enqueued (created now, or the key named
//! it already), read or listed; 1 it could not be done as asked (the key names a
//! run of another payload or a schedule, no such run, the store failed);
//! 2 bad input (a job that is not dynamic, a bad key, payload or instant).

use std::fmt::Write as _;
use std::io::Read as _;

use clap::{Args, Subcommand};
use cronslot_core::schedules::{RunRequest, RunView};
use cronslot_runtime::admin::{self, AdminRoute, DEFAULT_PREFIX, RunPageDoc};

use super::schedule::{decode, open_dynamic, parse_key, run, template_name};
use crate::cli::{Format, StoreArgs};
use crate::exit::Failure;
use crate::format::{ERROR_CELL_CHARS, one_line, utc};

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub action: RunsAction,
}

#[derive(Debug, Subcommand)]
pub enum RunsAction {
    /// Enqueue a run under a business key, once: the same key with the
    /// same payload answers the run it names (a retried request, a second
    /// instance), another payload is refused.
    Put {
        /// The dynamic job.
        #[arg(value_name = "JOB")]
        job: String,
        /// The business key: 1 to 200 ASCII letters, digits and - _ . :
        #[arg(value_name = "KEY")]
        key: String,
        /// The payload the run gets, as JSON (at most 16 KiB); `-` reads
        /// it from stdin.
        #[arg(long, value_name = "JSON|-")]
        payload: Option<String>,
        /// When the run may start: an RFC 3339 instant on a whole minute
        /// (default: now).
        #[arg(long, value_name = "RFC3339")]
        at: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: text, or json (the admin route's run document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Show a keyed run: its status, attempts, last error, instants and fence.
    Get {
        /// The dynamic job.
        #[arg(value_name = "JOB")]
        job: String,
        /// The business key.
        #[arg(value_name = "KEY")]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: text, or json (the admin route's run document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// List a page of the job's keyed runs in key order, each with its
    /// status, attempts, last error and instants.
    Ls {
        /// The dynamic job.
        #[arg(value_name = "JOB")]
        job: String,
        /// Only keys that start with this.
        #[arg(long, value_name = "PREFIX")]
        prefix: Option<String>,
        /// Only runs with this status: pending, running, retrying,
        /// succeeded or dead.
        #[arg(long, value_name = "STATUS")]
        status: Option<String>,
        /// The most runs on the page: 1 to 1000 (default 100).
        #[arg(long, value_name = "N")]
        limit: Option<String>,
        /// Start after this key: the cursor the page before printed.
        #[arg(long, value_name = "KEY")]
        cursor: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: text, or json (the admin route's page document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

pub fn exec(args: RunsArgs) -> Result<(), Failure> {
    match args.action {
        RunsAction::Put {
            job,
            key,
            payload,
            at,
            store,
            format,
        } => {
            let key = parse_key(&key)?;
            let request = request_of(payload.as_deref(), at.as_deref())?;
            let session = open(&store, &job)?;
            let job = template_name(&session, &job)?;
            let location = format!("{DEFAULT_PREFIX}/runs/{}/{}", job.as_str(), key.as_str());
            let route = AdminRoute::EnqueueRun {
                job,
                key,
                request,
                location,
            };
            let reply = run(&session, &route)?;
            if format == Format::Json {
                println!("{}", reply.body);
                return Ok(());
            }
            let doc: RunView = decode(&reply)?;
            let said = if doc.created == Some(true) {
                "enqueued"
            } else {
                "the key names it already:"
            };
            println!("{said} run {} in store {}", doc.run, session.store);
            print!("{}", run_text(&doc));
            Ok(())
        }
        RunsAction::Get {
            job,
            key,
            store,
            format,
        } => {
            let key = parse_key(&key)?;
            let session = open(&store, &job)?;
            let job = template_name(&session, &job)?;
            let reply = run(&session, &AdminRoute::GetRun { job, key })?;
            if format == Format::Json {
                println!("{}", reply.body);
                return Ok(());
            }
            let doc: RunView = decode(&reply)?;
            println!("run {} in store {}", doc.run, session.store);
            print!("{}", run_text(&doc));
            Ok(())
        }
        RunsAction::Ls {
            job,
            prefix,
            status,
            limit,
            cursor,
            store,
            format,
        } => {
            let query = admin::run_query(
                prefix.as_deref(),
                status.as_deref(),
                cursor.as_deref(),
                limit.as_deref(),
            )
            .map_err(|(flag, message)| Failure::bad_input(format!("error: --{flag}: {message}")))?;
            let session = open(&store, &job)?;
            let job = template_name(&session, &job)?;
            let reply = run(&session, &AdminRoute::ListRuns { job, query })?;
            if format == Format::Json {
                println!("{}", reply.body);
                return Ok(());
            }
            let doc: RunPageDoc = decode(&reply)?;
            print!("{}", ls_text(&doc, &session.store));
            Ok(())
        }
    }
}

/// A page of runs as a table: one run a line, in key order, then how to
/// go on.
fn ls_text(doc: &RunPageDoc, store: &str) -> String {
    let mut out = String::new();
    if doc.runs.is_empty() {
        let _ = writeln!(
            out,
            "no keyed runs of job {} on this page (store {store})",
            doc.job
        );
    } else {
        let width = doc
            .runs
            .iter()
            .map(|r| r.key.len())
            .max()
            .unwrap_or(0)
            .max("KEY".len());
        let _ = writeln!(
            out,
            "{:<width$}  {:<9}  ATTEMPTS  {:<20}  {:<20}  LAST ERROR",
            "KEY", "STATUS", "ENQUEUED", "FINISHED"
        );
        for r in &doc.runs {
            let finished = r.finished.map_or_else(|| "-".to_string(), utc);
            let _ = writeln!(
                out,
                "{:<width$}  {:<9}  {:>8}  {:<20}  {:<20}  {}",
                r.key,
                r.status.as_str(),
                r.attempts,
                utc(r.enqueued),
                finished,
                r.last_error
                    .as_deref()
                    .map_or_else(|| "-".to_string(), |e| one_line(e, ERROR_CELL_CHARS))
            );
        }
    }
    if let Some(cursor) = &doc.cursor {
        let _ = writeln!(
            out,
            "more: cronslot runs ls {} --cursor {cursor} (with the same filters)",
            doc.job
        );
    }
    out
}

fn open(store: &StoreArgs, job: &str) -> Result<crate::store::Session, Failure> {
    open_dynamic(
        store,
        job,
        "`cronslot runs` enqueues, reads and lists keyed runs",
        &format!("PUT or GET {{}}/runs/{job}/KEY, GET {{}}/runs/{job}"),
    )
}

/// The request from the flags, through the same checks as a `PUT`'s body,
/// each problem named by its flag.
fn request_of(payload: Option<&str>, at: Option<&str>) -> Result<RunRequest, Failure> {
    let payload = match payload {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| {
                Failure::bad_input(format!("error: --payload -: cannot read stdin: {e}"))
            })?;
            Some(text)
        }
        other => other.map(str::to_string),
    };
    let mut body = String::from("{");
    if let Some(payload) = &payload {
        // Kept as given, as a body's payload is: the text, not a reading.
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(payload.trim())
            .map_err(|e| Failure::bad_input(format!("error: --payload: not JSON: {e}")))?;
        let _ = write!(body, "\"payload\":{}", raw.get());
    }
    if let Some(at) = at {
        let sep = if body.len() > 1 { "," } else { "" };
        let _ = write!(body, "{sep}\"at\":{}", serde_json::Value::from(at));
    }
    body.push('}');
    RunRequest::from_json(&body).map_err(|problems| {
        let mut message = "error: the run request is refused:".to_string();
        for p in &problems {
            let flag = if p.field.is_empty() {
                String::new()
            } else {
                format!("--{}: ", p.field)
            };
            let _ = write!(message, "\n  {flag}{}", p.message);
        }
        Failure::bad_input(message)
    })
}

/// The run as text: one fact a line.
fn run_text(doc: &RunView) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "status: {}", doc.status.as_str());
    let _ = writeln!(
        out,
        "attempts: {}; fence: {}{}",
        doc.attempts,
        doc.fence,
        doc.last_error
            .as_ref()
            .map_or(String::new(), |e| format!("; last error: {e}"))
    );
    let _ = writeln!(out, "enqueued: {}; at: {}", utc(doc.enqueued), utc(doc.at));
    for (what, when) in [
        ("started", doc.started),
        ("next attempt", doc.next_attempt),
        ("finished", doc.finished),
        ("key remembered until", doc.remembered_until),
    ] {
        if let Some(when) = when {
            let _ = writeln!(out, "{what}: {}", utc(when));
        }
    }
    if let Some(payload) = &doc.payload {
        let _ = writeln!(out, "payload: {}", payload.get());
    }
    out
}
