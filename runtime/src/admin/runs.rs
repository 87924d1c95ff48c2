//! The routes of a dynamic job's keyed runs (feature `schedules`;
//! docs/design.md §12): `PUT {p}/runs/{job}/{key}` enqueues a one-off run
//! under a business key, `GET {p}/runs/{job}/{key}` answers its status,
//! and `GET {p}/runs/{job}` a page of the job's runs in key order (the
//! dashboard's list of a job's runs, and its dead ones to redrive).
//!
//! The pattern they serve is "202 + run id, then its status": a request
//! that cannot finish its work answers at once with the run, and the
//! client polls it. The key is claimed by the store's compare-and-set, so
//! a retried request, a double click or a second instance enqueueing the
//! same key meets the run the first one created (200, `"created": false`)
//! and never makes a second; the same key with another payload is a
//! conflict (409), whose body names the fields that differ and carries
//! the run the key names. [`recognise`] reads the request before anything
//! touches the store; [`execute_run`] runs it over any coordinator that
//! keeps keyed runs ([`Runs`]).

use cronslot_core::coord::decide::{Enqueued, RunRefusal};
use cronslot_core::coord::{MAX_RUN_PAGE, RunError, RunQuery, Runs};
use cronslot_core::manifest::{JobName, JobTemplate, Manifest};
use cronslot_core::schedules::{RunRequest, RunStatus, RunView, ScheduleKey, SpecProblem};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::execute::coord_reply;
use super::query::{bad_parameter, parse_query, percent_decode, printable};
use super::route::allow;
use super::schedules::{DEFAULT_PAGE, dynamic_job, list_query};
use super::{
    AdminRequest, AdminRoute, DEAD_RUNS_LISTED, DlqDoc, DlqEntry, ErrorDoc, ErrorKind, Reply,
};

/// The document of `GET {p}/runs/{job}`: a page of a dynamic job's keyed
/// runs, in key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunPageDoc {
    /// The dynamic job.
    pub job: String,
    /// The instant the page was read at (the server's clock): a run whose
    /// key's retention has passed by then is left out.
    #[serde(with = "cronslot_core::instant::text")]
    pub now: Timestamp,
    /// The runs of the page (at most the `limit` asked for), each as
    /// `GET {p}/runs/{job}/{key}` answers it.
    pub runs: Vec<RunView>,
    /// Where the next page starts: send it back as `cursor`. `null`: this
    /// is the last page. A page may be short, even empty, and still have
    /// a cursor (the job's schedules share its keys, and a status filter
    /// reads a bounded part of the store per page).
    pub cursor: Option<String>,
}

/// The methods of `{p}/runs/{job}/{key}`, as `Allow` lists them.
const METHODS: &str = "GET, PUT";

/// Recognises `{p}/runs/{job}/{key}` (the token is checked already):
/// the method, the job (a dynamic one of the manifest), the key, the
/// query (none), the headers (no preconditions: the key is the
/// precondition) and the body of a `PUT`, in that order. `base` is the
/// routes' prefix, for the `Location` of an enqueue's answer.
pub(crate) fn recognise(
    manifest: &Manifest,
    req: &AdminRequest<'_>,
    query: Option<&str>,
    raw_job: &str,
    raw_key: &str,
    base: &str,
) -> Result<AdminRoute, Reply> {
    if !matches!(req.method, "GET" | "PUT") {
        allow(req.method, METHODS)?;
    }
    let job = dynamic_job(manifest, raw_job)?;
    let text = percent_decode(raw_key).unwrap_or_else(|| raw_key.to_string());
    let key = ScheduleKey::new(text).map_err(|e| bad_parameter("key", e.to_string()))?;
    parse_query(query, &[])?;
    for (header, value) in [
        ("If-Match", req.if_match),
        ("If-None-Match", req.if_none_match),
    ] {
        if value.is_some() {
            return Err(bad_parameter(
                header,
                format!(
                    "a keyed run takes no {header}: its key is its precondition (the same \
                     request again answers the run it created; another payload is refused)"
                ),
            ));
        }
    }
    if req.method == "GET" {
        return Ok(AdminRoute::GetRun { job, key });
    }
    // No body: a run without a payload, due now.
    let body = req.body.filter(|b| !b.trim().is_empty()).unwrap_or("{}");
    let request = RunRequest::from_json(body).map_err(|problems| {
        let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
        spec_refused(
            format!("the run request is refused: {}", listed.join("; ")),
            problems,
        )
    })?;
    let location = format!("{base}/runs/{}/{}", job.as_str(), key.as_str());
    Ok(AdminRoute::EnqueueRun {
        job,
        key,
        request,
        location,
    })
}

/// Recognises `GET {p}/runs/{job}` and its query: `prefix` (keys that
/// start with it), `status` (one of a run's statuses), `cursor` (the page
/// after this key), `limit` (1 to 1,000).
pub(crate) fn recognise_list(
    manifest: &Manifest,
    req: &AdminRequest<'_>,
    query: Option<&str>,
    raw_job: &str,
) -> Result<AdminRoute, Reply> {
    allow(req.method, "GET")?;
    let job = dynamic_job(manifest, raw_job)?;
    let params = parse_query(query, &["prefix", "status", "cursor", "limit"])?;
    let param = |name: &str| params.get(name).map(String::as_str);
    let query = run_query(
        param("prefix"),
        param("status"),
        param("cursor"),
        param("limit"),
    )
    .map_err(|(parameter, message)| bad_parameter(parameter, message))?;
    Ok(AdminRoute::ListRuns { job, query })
}

/// A listing's query from its parameters as text, each checked: `prefix`
/// and `cursor` as a schedules' listing reads them ([`list_query`]),
/// `status` (`pending`, `running`, `retrying`, `succeeded` or `dead`),
/// `limit` (1 to 1,000; [`DEFAULT_PAGE`] when absent). A refusal names
/// the parameter and says what is wrong. The route and the CLI's
/// `cronslot runs ls` both read their input with it.
pub fn run_query(
    prefix: Option<&str>,
    status: Option<&str>,
    cursor: Option<&str>,
    limit: Option<&str>,
) -> Result<RunQuery, (&'static str, String)> {
    let keys = list_query(prefix, None, cursor, None)?;
    let status = match status {
        None => None,
        Some(text) => Some(RunStatus::parse(text).ok_or_else(|| {
            let words: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
            (
                "status",
                format!(
                    "status {:?} is not a run's status: write one of {}",
                    printable(text),
                    words.join(", ")
                ),
            )
        })?),
    };
    let limit = match limit {
        None => DEFAULT_PAGE,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_RUN_PAGE).contains(&n) && !text.starts_with('+') => n,
            _ => {
                return Err((
                    "limit",
                    format!(
                        "limit {:?}: a page holds 1 to {MAX_RUN_PAGE} runs",
                        printable(text)
                    ),
                ));
            }
        },
    };
    Ok(RunQuery {
        prefix: keys.prefix,
        status,
        after: keys.after,
        limit,
    })
}

/// Runs a keyed run's route ([`AdminRoute::is_run`]) over `coord` at
/// `now` (the host's clock; the store judges by its own where it has
/// one): 202 with the run and `Location` when the enqueue created it, 200
/// with it when the key named it already, 409 when the key names a run of
/// another request or a schedule, 200 or 404 for a status read, 200 with
/// a page for a listing. Any other route answers 500 and touches nothing.
pub async fn execute_run<C: Runs>(
    route: &AdminRoute,
    manifest: &Manifest,
    coord: &C,
    now: Timestamp,
) -> Reply {
    match route {
        AdminRoute::EnqueueRun {
            job,
            key,
            request,
            location,
        } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            match coord.enqueue_run(template, key, request, now).await {
                Ok(Enqueued::Created(view)) => {
                    Reply::json(202, &view).with_header("Location", location.clone())
                }
                Ok(Enqueued::Existing(view)) => {
                    Reply::json(200, &view).with_header("Location", location.clone())
                }
                Err(e) => run_error(job, key, "enqueueing", &e),
            }
        }
        AdminRoute::GetRun { job, key } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            match coord.run_status(template, key, now).await {
                Ok(Some(view)) => Reply::json(200, &view),
                Ok(None) => Reply::error(
                    404,
                    ErrorKind::NotFound,
                    format!(
                        "no {}: never enqueued, or forgotten (a key is remembered for the \
                         job's key_retention after its run ends, {} days here)",
                        name(job, key),
                        template.key_retention.as_secs() / 86_400
                    ),
                ),
                Err(e) => run_error(job, key, "reading", &e),
            }
        }
        AdminRoute::ListRuns { job, query } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            match coord.list_runs(template, query, now).await {
                Ok(page) => Reply::json(
                    200,
                    &RunPageDoc {
                        job: job.as_str().to_string(),
                        now,
                        runs: page.runs,
                        cursor: page.cursor,
                    },
                ),
                Err(e) => listing_error(job.as_str(), &e),
            }
        }
        other => Reply::error(
            500,
            ErrorKind::Internal,
            format!(
                "{} {} is not a keyed run's route (admin::dispatch serves it)",
                other.template().0,
                other.template().1
            ),
        ),
    }
}

/// A failed listing of a job's keyed runs as a reply.
fn listing_error(job: &str, e: &RunError) -> Reply {
    let doing = format!("listing the keyed runs of job {job:?}");
    match e {
        RunError::Coord(c) => coord_reply(format!("{doing}: {c}"), c),
        // A stored run that no longer reads here.
        e => Reply::error(500, ErrorKind::Internal, format!("{doing}: {e}")),
    }
}

/// The job's template; 404 when the manifest no longer has it.
fn template<'m>(manifest: &'m Manifest, job: &JobName) -> Result<&'m JobTemplate, Reply> {
    manifest.template(job.as_str()).ok_or_else(|| {
        Reply::error(
            404,
            ErrorKind::NotFound,
            format!("no dynamic job {:?} in the manifest", job.as_str()),
        )
    })
}

fn name(job: &JobName, key: &ScheduleKey) -> String {
    format!("run {:?} of job {:?}", key.as_str(), job.as_str())
}

/// A refused or failed operation on a keyed run as a reply.
fn run_error(job: &JobName, key: &ScheduleKey, doing: &str, e: &RunError) -> Reply {
    let what = name(job, key);
    let refusal = match e {
        RunError::Coord(c) => return coord_reply(format!("{doing} {what}: {c}"), c),
        RunError::Refused(r) => r,
    };
    match refusal {
        RunRefusal::Differs { fields, existing } => {
            let mut doc = ErrorDoc::new(
                409,
                ErrorKind::Differs,
                format!(
                    "{doing} {what}: the key names the run {} enqueued with another {}; nothing \
                     was written (a key is one run: send the same request to read it, or \
                     enqueue under another key)",
                    existing.run,
                    fields.join(" and ")
                ),
            );
            doc.differs = Some(fields.clone());
            doc.run = Some(existing.clone());
            Reply::error_doc(doc)
        }
        RunRefusal::Schedule { version } => {
            let mut doc = ErrorDoc::new(
                409,
                ErrorKind::Exists,
                format!(
                    "{doing} {what}: the key names a schedule of the job (version {version}), \
                     not a keyed run; nothing was written"
                ),
            );
            doc.version = Some(*version);
            Reply::error_doc(doc)
        }
        // A stored record this server cannot read: not the client's fault.
        RunRefusal::Spec(problem) if problem.field.is_empty() || problem.field == "spec_json" => {
            Reply::error(
                500,
                ErrorKind::Internal,
                format!("{doing} {what}: {problem}"),
            )
        }
        RunRefusal::Spec(problem) => spec_refused(
            format!("{doing} {what}: the run cannot be enqueued: {problem}"),
            vec![problem.clone()],
        ),
    }
}

fn spec_refused(message: String, problems: Vec<SpecProblem>) -> Reply {
    let mut doc = ErrorDoc::new(400, ErrorKind::Spec, message);
    doc.problems = Some(problems);
    Reply::error_doc(doc)
}

/// Adds the dead keyed runs of `templates` (dynamic jobs) to a
/// dead-letter list: the first [`DEAD_RUNS_LISTED`] of each job in key
/// order (one [`Runs::list_runs`] call: at most ten store pages), each as
/// a dead letter with its key; a job with more gets its cursor in
/// [`DlqDoc::more_dead_runs`]. Sort the list after.
///
/// # Errors
///
/// The store's failure, as the route's reply.
pub async fn add_dead_runs<R: Runs>(
    doc: &mut DlqDoc,
    runs: &R,
    templates: &[&JobTemplate],
    now: Timestamp,
) -> Result<(), Reply> {
    for template in templates {
        let query = RunQuery {
            status: Some(RunStatus::Dead),
            limit: DEAD_RUNS_LISTED,
            ..RunQuery::default()
        };
        let page = runs
            .list_runs(template, &query, now)
            .await
            .map_err(|e| listing_error(template.name.as_str(), &e))?;
        doc.dead_letters
            .extend(page.runs.into_iter().map(|view| DlqEntry {
                job: view.job,
                slot_id: view.run,
                key: Some(view.key),
                letter: cronslot_core::coord::DeadLetter {
                    slot: view.at,
                    attempts: view.attempts,
                    last_error: view.last_error.unwrap_or_default(),
                    fence: view.fence,
                    died_at: view.finished.unwrap_or(view.at),
                    checkpoint: None,
                },
            }));
        if let Some(cursor) = page.cursor {
            doc.more_dead_runs
                .insert(template.name.as_str().to_string(), cursor);
        }
    }
    Ok(())
}
