//! `cronslot schedule put|get|ls|rm`: the schedules of a dynamic job
//! (`dynamic = true`), written and read in the store as the admin routes
//! `PUT`, `GET` and `DELETE {p}/schedules/{job}/{key}` and
//! `GET {p}/schedules/{job}` (a page of the listing) do: the same code
//! (`cronslot_runtime::admin::execute_schedule`) runs here, so `--format
//! json` prints the route's document.
//!
//! The job, the key and the spec are checked before the store is opened.
//! Exit codes: 0 done (an unchanged `put` too: nothing to write); 1 the
//! operation could not be done as asked (no such schedule, `--if-match` of
//! another version, `--create-only` over an existing schedule, the store
//! failed); 2 bad input (a job that is not dynamic, a bad key or spec, a
//! store that does not exist).

use std::io::Read as _;
use std::path::Path;

use clap::{Args, Subcommand};
use cronslot_core::coord::MAX_SCHEDULE_BATCH;
use cronslot_core::coord::decide::Precondition;
use cronslot_core::manifest::{JobName, Manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_runtime::admin::{
    self, AdminRoute, ErrorDoc, ErrorKind, Reply, ScheduleBulkDoc, ScheduleDeleteDoc, ScheduleDoc,
    SchedulePageDoc, ScheduleWriteDoc,
};
use serde::de::DeserializeOwned;

use crate::cli::{Format, StoreArgs};
use crate::exit::Failure;
use crate::format::utc;
use crate::manifest::find_template;
use crate::store::{Backend, Session, wait};

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    #[command(subcommand)]
    pub action: ScheduleAction,
}

#[derive(Debug, Subcommand)]
pub enum ScheduleAction {
    /// Create or replace a schedule (a full replace: a field the spec does
    /// not give takes its default, never the previous version's value),
    /// or many from a file (--from).
    Put {
        /// The dynamic job.
        #[arg(value_name = "JOB")]
        job: String,
        /// The schedule's key: 1 to 200 ASCII letters, digits and - _ . :
        #[arg(value_name = "KEY", required_unless_present = "from")]
        key: Option<String>,
        /// Many schedules, one JSON object per line (NDJSON), from a file
        /// or `-` for stdin: {"key": "acme", "spec": {"cron": "0 9 * * *"}},
        /// with "if_match": VERSION or "create_only": true for a condition.
        /// Every line is checked before anything is written; they go to
        /// the store 1,000 at a time, each with its own answer.
        #[arg(
            long,
            value_name = "FILE|-",
            conflicts_with_all = [
                "key", "spec", "cron", "at", "timezone", "start", "end", "payload", "labels",
                "paused", "if_match", "create_only"
            ]
        )]
        from: Option<String>,
        #[command(flatten)]
        spec: SpecFlags,
        /// Write only over this version of the schedule (as `GET` shows it).
        #[arg(long, value_name = "VERSION", conflicts_with = "create_only")]
        if_match: Option<u64>,
        /// Create only: refuse when the schedule exists.
        #[arg(long)]
        create_only: bool,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: text, or json (the admin route's write document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Show a schedule: its spec and version, its next slots, its status.
    Get {
        /// The dynamic job.
        #[arg(value_name = "JOB")]
        job: String,
        /// The schedule's key.
        #[arg(value_name = "KEY")]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: text, or json (the admin route's schedule document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// List a dynamic job's schedules in key order, a page at a time (each
    /// page one consistent read of the store).
    Ls {
        /// The dynamic job.
        #[arg(value_name = "JOB")]
        job: String,
        /// Only keys that start with this.
        #[arg(long, value_name = "PREFIX")]
        prefix: Option<String>,
        /// Only schedules with this label, as NAME:VALUE.
        #[arg(long, value_name = "NAME:VALUE")]
        label: Option<String>,
        /// The most schedules on the page: 1 to 1000 (default 100).
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
    /// Delete a schedule: no slot after now starts; a tombstone keeps its
    /// version, so a re-create continues it.
    Rm {
        /// The dynamic job.
        #[arg(value_name = "JOB")]
        job: String,
        /// The schedule's key.
        #[arg(value_name = "KEY")]
        key: String,
        /// Delete only this version of the schedule.
        #[arg(long, value_name = "VERSION")]
        if_match: Option<u64>,
        #[command(flatten)]
        store: StoreArgs,
        /// Output format: text, or json (the admin route's delete document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

/// The spec of a `put`: as JSON (`--spec`), or field by field. Each flag
/// is the JSON field of its name; a field not given takes its default (a
/// full replace), as in the JSON.
#[derive(Debug, Args)]
pub struct SpecFlags {
    /// The spec as JSON, from a file or `-` for stdin: {"cron": "0 9 * * *",
    /// "timezone": "Europe/Berlin", "payload": {...}, "labels": {...}},
    /// or {"at": "2027-01-05T09:00:00Z"} for a one-off.
    #[arg(
        long,
        value_name = "FILE|-",
        conflicts_with_all = ["cron", "at", "timezone", "start", "end", "payload", "labels", "paused"]
    )]
    spec: Option<String>,
    /// The slots, as a cron expression (the manifest's grammar).
    #[arg(long, value_name = "EXPR", conflicts_with = "at")]
    cron: Option<String>,
    /// One slot, a one-off: an RFC 3339 instant on a whole minute.
    #[arg(long, value_name = "RFC3339")]
    at: Option<String>,
    /// The IANA zone the cron expression is read in (default UTC).
    #[arg(long, value_name = "ZONE")]
    timezone: Option<String>,
    /// Slots before this instant do not run.
    #[arg(long, value_name = "RFC3339")]
    start: Option<String>,
    /// Slots at or after this instant do not run.
    #[arg(long, value_name = "RFC3339")]
    end: Option<String>,
    /// The payload every run gets, as JSON (at most 16 KiB).
    #[arg(long, value_name = "JSON")]
    payload: Option<String>,
    /// A label, NAME=VALUE (repeat for more; at most 10).
    #[arg(long = "label", value_name = "NAME=VALUE")]
    labels: Vec<String>,
    /// Skip the schedule's slots until a put without it.
    #[arg(long)]
    paused: bool,
}

pub fn exec(args: ScheduleArgs) -> Result<(), Failure> {
    match args.action {
        ScheduleAction::Put {
            job,
            from: Some(from),
            store,
            format,
            ..
        } => put_from(&job, &from, &store, format),
        ScheduleAction::Put {
            job,
            key,
            spec,
            if_match,
            create_only,
            store,
            format,
            from: None,
        } => {
            let Some(key) = key else {
                return Err(Failure::bad_input(
                    "error: give the schedule's KEY, or --from FILE for many",
                ));
            };
            let key = parse_key(&key)?;
            let spec = spec_of(&spec)?;
            let precondition = match (if_match, create_only) {
                (Some(v), _) => Precondition::Version(v),
                (None, true) => Precondition::Absent,
                (None, false) => Precondition::None,
            };
            let session = open(&store, &job)?;
            let job = template_name(&session, &job)?;
            let route = AdminRoute::PutSchedule {
                job,
                key,
                spec,
                precondition,
            };
            let reply = run(&session, &route)?;
            if format == Format::Json {
                println!("{}", reply.body);
                return Ok(());
            }
            let doc: ScheduleWriteDoc = decode(&reply)?;
            let what = format!("schedule {} of job {}", doc.key, doc.job);
            let store = &session.store;
            match (reply.status, doc.changed) {
                (201, _) => println!("created {what} at version {} in store {store}", doc.version),
                (_, true) => println!(
                    "changed {what} in store {store}: now version {}",
                    doc.version
                ),
                (_, false) => println!(
                    "{what} is unchanged at version {} in store {store}: the spec is the one in \
                     force; nothing written",
                    doc.version
                ),
            }
            Ok(())
        }
        ScheduleAction::Get {
            job,
            key,
            store,
            format,
        } => {
            let key = parse_key(&key)?;
            let session = open(&store, &job)?;
            let job = template_name(&session, &job)?;
            let reply = run(&session, &AdminRoute::GetSchedule { job, key })?;
            if format == Format::Json {
                println!("{}", reply.body);
                return Ok(());
            }
            let doc: ScheduleDoc = decode(&reply)?;
            print!("{}", get_text(&doc, &session.store));
            Ok(())
        }
        ScheduleAction::Ls {
            job,
            prefix,
            label,
            limit,
            cursor,
            store,
            format,
        } => {
            let query = admin::list_query(
                prefix.as_deref(),
                label.as_deref(),
                cursor.as_deref(),
                limit.as_deref(),
            )
            .map_err(|(flag, message)| Failure::bad_input(format!("error: --{flag}: {message}")))?;
            let session = open(&store, &job)?;
            let job = template_name(&session, &job)?;
            let reply = run(&session, &AdminRoute::ListSchedules { job, query })?;
            if format == Format::Json {
                println!("{}", reply.body);
                return Ok(());
            }
            let doc: SchedulePageDoc = decode(&reply)?;
            print!("{}", ls_text(&doc, &session.store));
            Ok(())
        }
        ScheduleAction::Rm {
            job,
            key,
            if_match,
            store,
            format,
        } => {
            let key = parse_key(&key)?;
            let session = open(&store, &job)?;
            let job = template_name(&session, &job)?;
            let precondition = if_match.map_or(Precondition::None, Precondition::Version);
            let route = AdminRoute::DeleteSchedule {
                job,
                key,
                precondition,
            };
            let reply = run(&session, &route)?;
            if format == Format::Json {
                println!("{}", reply.body);
                return Ok(());
            }
            let doc: ScheduleDeleteDoc = decode(&reply)?;
            println!(
                "deleted schedule {} of job {} in store {}: no slot after now starts; its \
                 tombstone is version {} (a put re-creates it at version {})",
                doc.key,
                doc.job,
                session.store,
                doc.version,
                doc.version.saturating_add(1)
            );
            Ok(())
        }
    }
}

/// `put --from FILE`: every line checked first (a bad one is named by its
/// line and nothing is written), then the schedules written
/// [`MAX_SCHEDULE_BATCH`] at a time as the bulk route writes them, each
/// with its own answer. Exit 0 when every one was written or unchanged, 1
/// when any was refused or failed (each named by its line).
fn put_from(job: &str, from: &str, store: &StoreArgs, format: Format) -> Result<(), Failure> {
    let text = read_source(from, "--from")?;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
        .collect();
    if lines.is_empty() {
        return Err(Failure::bad_input(format!(
            "error: --from {from}: no schedule in it: write one JSON object per line,              {{\"key\": \"acme\", \"spec\": {{\"cron\": \"0 9 * * *\"}}}}"
        )));
    }
    // Every line is read twice: here, keeping only what is wrong, and
    // again a part at a time as it is sent; so a file of a million lines
    // never has a million specs in memory at once, only its text.
    let mut bad = Vec::new();
    for &(n, line) in &lines {
        if let Err(doc) = admin::bulk_entry(&format!("line {n}"), line).put {
            bad.push(doc.message);
            if bad.len() == 20 {
                bad.push("(and maybe more; fix these first)".to_string());
                break;
            }
        }
    }
    if !bad.is_empty() {
        return Err(Failure::bad_input(format!(
            "error: --from {from}: nothing was written; these lines are not schedules:\n  {}",
            bad.join("\n  ")
        )));
    }
    let session = open(store, job)?;
    let job = template_name(&session, job)?;
    let mut total = ScheduleBulkDoc::new(job.as_str());
    for part in lines.chunks(MAX_SCHEDULE_BATCH) {
        let entries = part
            .iter()
            .map(|&(n, line)| admin::bulk_entry(&format!("line {n}"), line))
            .collect();
        let route = AdminRoute::PutSchedules {
            job: job.clone(),
            entries,
        };
        total.append(decode(&run(&session, &route)?)?);
    }
    if format == Format::Json {
        println!(
            "{}",
            serde_json::to_string(&total)
                .map_err(|e| Failure::problem(format!("error: cannot print the answer: {e}")))?
        );
    } else {
        println!(
            "wrote {} schedules of job {} in store {}: {} created, {} changed, {} unchanged, \
             {} not written",
            lines.len(),
            total.job,
            session.store,
            total.created,
            total.changed,
            total.unchanged,
            total.failed
        );
        for (&(n, _), result) in lines.iter().zip(&total.results) {
            if let Some(error) = &result.error {
                println!("  line {n}: {} ({})", error.message, result.status);
            }
        }
    }
    if total.failed > 0 {
        return Err(Failure::problem(format!(
            "error: {} of {} schedules were not written (store {})",
            total.failed,
            lines.len(),
            session.store
        )));
    }
    Ok(())
}

pub(crate) fn parse_key(key: &str) -> Result<ScheduleKey, Failure> {
    ScheduleKey::new(key).map_err(|e| Failure::bad_input(format!("error: KEY: {e}")))
}

/// The spec from `--spec`, or from the field flags: the same checks as a
/// `PUT`'s body, every problem named by its flag.
fn spec_of(flags: &SpecFlags) -> Result<ScheduleSpec, Failure> {
    if let Some(source) = &flags.spec {
        return read_spec(source);
    }
    if flags.cron.is_none() && flags.at.is_none() {
        return Err(Failure::bad_input(
            "error: give the spec: --cron EXPR (or --at RFC3339 for a one-off) with its other \
             flags, or --spec FILE|- as JSON",
        ));
    }
    let mut body = serde_json::Map::new();
    let fields = [
        ("cron", &flags.cron),
        ("at", &flags.at),
        ("timezone", &flags.timezone),
        ("start", &flags.start),
        ("end", &flags.end),
    ];
    for (field, value) in fields {
        if let Some(v) = value {
            body.insert(field.to_string(), serde_json::Value::String(v.clone()));
        }
    }
    let mut labels = serde_json::Map::new();
    for label in &flags.labels {
        let Some((name, value)) = label.split_once('=') else {
            return Err(Failure::bad_input(format!(
                "error: --label {label:?}: write a label as NAME=VALUE, e.g. --label plan=pro"
            )));
        };
        if labels
            .insert(
                name.to_string(),
                serde_json::Value::String(value.to_string()),
            )
            .is_some()
        {
            return Err(Failure::bad_input(format!(
                "error: --label: the label {name:?} is given twice"
            )));
        }
    }
    if !labels.is_empty() {
        body.insert("labels".to_string(), serde_json::Value::Object(labels));
    }
    if flags.paused {
        body.insert("paused".to_string(), serde_json::Value::Bool(true));
    }
    let mut text = serde_json::Value::Object(body).to_string();
    if let Some(payload) = &flags.payload {
        // Kept as given, as a body's payload is: the text, not a reading.
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(payload)
            .map_err(|e| Failure::bad_input(format!("error: --payload: not JSON: {e}")))?;
        text.pop();
        let sep = if text.len() > 1 { "," } else { "" };
        text.push_str(&format!("{sep}\"payload\":{}}}", raw.get()));
    }
    ScheduleSpec::from_json(&text).map_err(|problems| {
        let mut message = "error: the schedule's spec is refused:".to_string();
        for p in &problems {
            let flag = match (p.field.as_str(), p.field.split_once('.')) {
                (_, Some(("labels", name))) => format!("--label {name}: "),
                ("labels", _) => "--label: ".to_string(),
                ("", _) => String::new(),
                (field, _) => format!("--{field}: "),
            };
            message.push_str(&format!("\n  {flag}{}", p.message));
        }
        Failure::bad_input(message)
    })
}

/// The text of a file, or of stdin for `-`, read for `flag`.
fn read_source(source: &str, flag: &str) -> Result<String, Failure> {
    if source == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::bad_input(format!("error: {flag} -: cannot read stdin: {e}")))?;
        return Ok(text);
    }
    let path = Path::new(source);
    std::fs::read_to_string(path).map_err(|e| {
        Failure::bad_input(format!(
            "error: {flag} {}: cannot read it: {e}",
            path.display()
        ))
    })
}

/// The spec from `--spec FILE` (or `-`: stdin), every problem named by
/// its field.
fn read_spec(source: &str) -> Result<ScheduleSpec, Failure> {
    let text = read_source(source, "--spec")?;
    let from = if source == "-" {
        "stdin".to_string()
    } else {
        Path::new(source).display().to_string()
    };
    ScheduleSpec::from_json(&text).map_err(|problems| {
        let mut message = format!("error: --spec {from}: the schedule's spec is refused:");
        for p in &problems {
            message.push_str(&format!("\n  {p}"));
        }
        Failure::bad_input(message)
    })
}

/// The session, once the job is known to be a dynamic one of the
/// manifest: bad input never touches the store.
fn open(store: &StoreArgs, job: &str) -> Result<Session, Failure> {
    open_dynamic(
        store,
        job,
        "`cronslot schedule` writes schedules",
        &format!("PUT, GET or DELETE {{}}/schedules/{job}/KEY"),
    )
}

/// The session of a command on a dynamic job's records (`schedule`,
/// `runs`), once the job is known to be a dynamic one of the manifest:
/// bad input never touches the store. `what` says what the command does
/// and `routes` which routes of an admin URL do it instead (`{}`: the URL).
pub(crate) fn open_dynamic(
    store: &StoreArgs,
    job: &str,
    what: &str,
    routes: &str,
) -> Result<Session, Failure> {
    let session = Session::open_checked(store, |manifest, path| {
        dynamic_job(manifest, path, job).map(|_| ())
    })?;
    if let Backend::Admin(_) = session.backend {
        return Err(Failure::bad_input(format!(
            "error: store {}: {what} in a store this process opens (sqlite:, postgres://, \
             redis://, dynamodb://); over an admin URL, send its routes {}",
            session.store,
            routes.replace("{}", &session.store)
        )));
    }
    Ok(session)
}

pub(crate) fn template_name(session: &Session, job: &str) -> Result<JobName, Failure> {
    dynamic_job(&session.manifest, &session.manifest_path, job)
}

fn dynamic_job(manifest: &Manifest, path: &Path, job: &str) -> Result<JobName, Failure> {
    find_template(manifest, path, job).map(|t| t.name.clone())
}

/// Runs the route (a schedule's or a keyed run's) on the session's store;
/// a refusal or a failure is the route's error document, as a failure with
/// the exit code it calls for.
pub(crate) fn run(session: &Session, route: &AdminRoute) -> Result<Reply, Failure> {
    let Backend::Store(coordinator) = &session.backend else {
        return Err(Failure::problem(format!(
            "error: store {}: not a store this process opened",
            session.store
        )));
    };
    let reply = if route.is_run() {
        wait(admin::execute_run(
            route,
            &session.manifest,
            &**coordinator,
            session.now,
        ))
    } else {
        wait(admin::execute_schedule(
            route,
            &session.manifest,
            &**coordinator,
            session.now,
        ))
    };
    if (200..300).contains(&reply.status) {
        return Ok(reply);
    }
    let doc: ErrorDoc = decode(&reply)?;
    // The route's words name its headers; say it with the flags here.
    let said = match (route, doc.error, doc.version) {
        (
            AdminRoute::PutSchedule {
                precondition: Precondition::Version(v),
                job,
                key,
                ..
            }
            | AdminRoute::DeleteSchedule {
                precondition: Precondition::Version(v),
                job,
                key,
            },
            ErrorKind::PreconditionFailed,
            now,
        ) => {
            let now = now.map_or("there is no live schedule".to_string(), |n| {
                format!("it is at version {n}")
            });
            format!(
                "--if-match {v}: schedule {:?} of job {:?} is not at version {v}: {now}; \
                 nothing was written (read it with `cronslot schedule get {} {}`)",
                key.as_str(),
                job.as_str(),
                job.as_str(),
                key.as_str()
            )
        }
        (AdminRoute::PutSchedule { job, key, .. }, ErrorKind::Exists, Some(v)) => format!(
            "--create-only: schedule {:?} of job {:?} exists (version {v}); nothing was written",
            key.as_str(),
            job.as_str()
        ),
        _ => doc.message.clone(),
    };
    let mut message = format!("error: {said} (store {})", session.store);
    if let Some(problems) = &doc.problems {
        for p in problems {
            message.push_str(&format!("\n  {p}"));
        }
    }
    Err(match doc.status {
        400..=499 if doc.status != 404 && doc.status != 409 && doc.status != 412 => {
            Failure::bad_input(message)
        }
        _ => Failure::problem(message),
    })
}

pub(crate) fn decode<T: DeserializeOwned>(reply: &Reply) -> Result<T, Failure> {
    serde_json::from_str(&reply.body).map_err(|e| {
        Failure::problem(format!(
            "error: cannot read the answer ({} bytes): {e}",
            reply.body.len()
        ))
    })
}

fn get_text(doc: &ScheduleDoc, store: &str) -> String {
    use std::fmt::Write as _;
    let s = &doc.status;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "schedule {} of job {} in store {store}: version {}, written {}",
        doc.key,
        doc.job,
        doc.version,
        utc(doc.changed_at)
    );
    let _ = writeln!(out, "spec: {}", doc.spec.to_json());
    let last_success = s.last_success.map_or("never".to_string(), utc);
    let _ = writeln!(
        out,
        "health: {}; last success: {last_success}",
        s.health.as_str()
    );
    let _ = writeln!(
        out,
        "runs: {} ({} succeeded, {} failed); live leases: {}; waiting: {}; dead letters: {}; fence: {}",
        s.runs, s.succeeded, s.failed, s.live_leases, s.pending, s.dead_letters, s.fence
    );
    let _ = writeln!(
        out,
        "last claimed slot: {}",
        doc.last_claimed.map_or("none yet".to_string(), utc)
    );
    if doc.next.is_empty() {
        let why = if s.paused {
            "it is paused"
        } else {
            "none left in its window"
        };
        let _ = writeln!(out, "next slots: none ({why})");
    } else {
        let _ = writeln!(out, "next slots ({}):", doc.spec.timezone);
        for slot in &doc.next {
            let _ = writeln!(out, "  {}  {}", utc(slot.slot), slot.local);
        }
    }
    out
}

fn ls_text(doc: &SchedulePageDoc, store: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if doc.schedules.is_empty() {
        let _ = writeln!(
            out,
            "no schedules of job {} on this page (store {store})",
            doc.job
        );
    } else {
        let width = doc
            .schedules
            .iter()
            .map(|s| s.key.len())
            .max()
            .unwrap_or(0)
            .max("KEY".len());
        let _ = writeln!(out, "{:<width$}  VERSION  NEXT", "KEY");
        for s in &doc.schedules {
            let next = match s.next {
                Some(at) => utc(at),
                None if s.spec.paused => "paused".to_string(),
                None => "none left".to_string(),
            };
            let _ = writeln!(out, "{:<width$}  {:>7}  {next}", s.key, s.version);
        }
    }
    if let Some(cursor) = &doc.cursor {
        let _ = writeln!(
            out,
            "more: cronslot schedule ls {} --cursor {cursor} (with the same filters)",
            doc.job
        );
    }
    out
}
