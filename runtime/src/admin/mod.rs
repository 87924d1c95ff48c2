//! The admin routes, written once for the Cloudflare Worker and for
//! `cronslot serve` (any store), platform-neutral: [`route`] turns a request
//! into an [`AdminRoute`] (or an error [`Reply`]), [`execute`] runs it
//! against any [`Coordinator`](cronslot_core::coord::Coordinator), and
//! [`trigger_run`] + [`trigger_reply`] serve a manual run, which the Worker
//! (or `serve`) performs itself. Nothing here touches `worker`, a clock or a runtime, so
//! every route is tested natively over the core's memory store.
//!
//! # Routes
//!
//! Under a configurable prefix `{p}` ([`DEFAULT_PREFIX`]: `/cronslot`):
//!
//! | method | path | query | reply |
//! |---|---|---|---|
//! | GET | `{p}/` | — | 200 the dashboard's page ([`HTML`]; also `dashboard.js`, `dashboard.css`; no token needed) |
//! | GET | `{p}/openapi.json` | — | 200 the OpenAPI document, when the host has it ([`AdminHost::openapi`]), else 404 (no token needed) |
//! | GET | `{p}/health` | — | 200 / 503 [`HealthDoc`] (no token needed) |
//! | GET | `{p}/status` | `job` | 200 [`StatusDoc`] |
//! | GET | `{p}/metrics` | `job` | 200 Prometheus text ([`PROMETHEUS`]) |
//! | GET | `{p}/dlq` | `job` | 200 [`DlqDoc`] |
//! | POST | `{p}/jobs/{job}/redrive` | `slot` | 200 [`RedriveDoc`] |
//! | POST | `{p}/jobs/{job}/pause` | — | 200 [`PauseDoc`] |
//! | POST | `{p}/jobs/{job}/resume` | — | 200 [`PauseDoc`] |
//! | POST | `{p}/jobs/{job}/backfill` | `from`, `to`, `dry_run` | 200 [`BackfillDoc`] |
//! | POST | `{p}/jobs/{job}/trigger` | — | [`TriggerDoc`] (see [`trigger_reply`]) |
//! | POST | `{p}/repair` | `after` | 200 [`RepairDoc`] (see [`repair_page`]) |
//! | PUT | `{p}/schedules/{job}/{key}` | — | 201 / 200 `ScheduleWriteDoc`, `ETag` (feature `schedules`) |
//! | GET | `{p}/schedules/{job}/{key}` | — | 200 `ScheduleDoc`, `ETag` (feature `schedules`) |
//! | DELETE | `{p}/schedules/{job}/{key}` | — | 200 `ScheduleDeleteDoc` (feature `schedules`) |
//! | GET | `{p}/schedules/{job}` | `prefix`, `label`, `cursor`, `limit` | 200 `SchedulePageDoc` (feature `schedules`) |
//! | PUT | `{p}/runs/{job}/{key}` | — | 202 / 200 `RunView`, `Location` (feature `schedules`) |
//! | GET | `{p}/runs/{job}/{key}` | — | 200 `RunView` (feature `schedules`) |
//! | GET | `{p}/runs/{job}` | `prefix`, `status`, `cursor`, `limit` | 200 `RunPageDoc` (feature `schedules`) |
//!
//! The schedule routes (a dynamic job's schedules, docs/design.md §12) are
//! built with the feature `schedules` and served by hosts whose coordinator
//! writes schedules ([`AdminHost::schedule_route`]): `cronslot serve`,
//! and a Worker built with cronslot-cf's feature `schedules`. A build
//! without it answers them 404, saying it serves no schedules. The keyed
//! runs' routes (a one-off run under a business key, enqueued once) are
//! served likewise by hosts whose coordinator keeps them
//! ([`AdminHost::run_route`]).
//!
//! [`ROUTES`] lists them for programs; `docs/openapi.json` in the
//! repository describes each (parameters, bodies, every status), and
//! `cronslot serve` serves it at `{p}/openapi.json`.
//!
//! Instants (`slot`, `from`, `to`) are RFC 3339 (`2026-03-08T07:00:00Z`);
//! `slot` may also be a slot id of the job (`job@2026-03-08T07:00:00Z`).
//! `dry_run` is `true`/`false` (`1`/`0`, or bare `dry_run` for true).
//! Query values are percent-decoded; `+` stays a plus sign (it is part of
//! offsets such as `+01:00`, not a space).
//!
//! # Errors
//!
//! Every error is JSON ([`ErrorDoc`]): `401` without a matching
//! `Authorization: Bearer` token (with `WWW-Authenticate: Bearer`), `503`
//! when the Worker has no token configured (secret [`TOKEN_SECRET`]: every
//! route but health is refused, fail closed), `404` for an unknown route or
//! job, `405` with `Allow` for a wrong method, `400` naming the parameter
//! for a bad query (an unparseable instant, `from` after `to`, an unknown
//! or repeated parameter), `409` when the store refused a write, `503` when
//! the store is unavailable. A schedule's routes add `412` (`If-Match`
//! named another version) and `409` (`If-None-Match: *` met a live
//! schedule), each with the schedule's `version`, `400` with every
//! `problems` entry of a refused spec, and `413` for a body over
//! `MAX_BODY_BYTES` (the host's). The token is checked before the path is
//! looked at: without it nothing, not even which jobs exist, is revealed.
//! Nothing panics on any input.

mod auth;
pub(crate) mod dashboard;
mod docs;
mod execute;
mod host;
mod metrics;
mod query;
mod repair;
mod route;
#[cfg(feature = "schedules")]
mod runs;
#[cfg(feature = "schedules")]
mod schedules;
mod trigger;

#[cfg(feature = "schedules")]
use cronslot_core::coord::decide::Precondition;
#[cfg(feature = "schedules")]
use cronslot_core::coord::{RunQuery, ScheduleQuery};
use cronslot_core::manifest::JobName;
#[cfg(feature = "schedules")]
use cronslot_core::schedules::{RunRequest, ScheduleKey, ScheduleSpec};
use jiff::Timestamp;
use serde::Serialize;

pub use auth::{ADMIN, BearerSecret, TICK, TICK_SECRET, authorize_bearer, token_matches};
pub use dashboard::{Asset, CONTENT_SECURITY_POLICY, CSS, HTML, JAVASCRIPT};
pub use docs::{
    BackfillDoc, DEAD_RUNS_LISTED, DlqDoc, DlqEntry, Due, ErrorDoc, ErrorKind, HealthDoc,
    HealthState, JobErrorDoc, JobReport, NextDoc, NextSlot, PauseDoc, RedriveDoc, RepairDoc,
    RepairedJob, StaleJob, StatusDoc, TriggerDoc, TriggerKind, UncheckedJob,
};
pub use execute::{dynamic_jobs, execute, job_report};
pub use host::{AdminHost, dispatch};
pub use metrics::prometheus_text;
pub use repair::{REPAIR_PAGE, repair_page};
pub use route::{ROUTES, route};
#[cfg(feature = "schedules")]
pub use runs::{RunPageDoc, add_dead_runs, execute_run, run_query};
#[cfg(feature = "schedules")]
pub use schedules::{
    BulkEntry, DEFAULT_PAGE, ListedScheduleDoc, MAX_BODY_BYTES, MAX_BULK_BODY_BYTES,
    ScheduleBulkDoc, ScheduleBulkResult, ScheduleDeleteDoc, ScheduleDoc, SchedulePageDoc,
    ScheduleWriteDoc, body_limit, body_limit_for, body_text, body_text_within, body_too_large,
    body_too_large_for, bulk_entries, bulk_entry, etag, execute_schedule, list_query,
    schedule_job_spec,
};
pub use trigger::{TriggerOutcome, trigger_doc, trigger_outcome, trigger_reply, trigger_run};

/// Where the routes live unless the Worker says otherwise.
pub const DEFAULT_PREFIX: &str = "/cronslot";

/// Slots `GET {p}/jobs/{job}/next` lists unless `count` says otherwise.
pub const DEFAULT_NEXT: usize = 10;

/// The most slots `GET {p}/jobs/{job}/next` lists.
pub const MAX_NEXT: usize = 50;

/// The tick route that `cronslot serve` adds beside [`ROUTES`] (a Worker
/// ticks on its Cron Triggers instead): its path below the prefix.
pub const TICK_PATH: &str = "/tick";

/// The methods the tick route takes (`GET` for schedulers that send
/// nothing else).
pub const TICK_METHODS: &[&str] = &["GET", "POST"];

/// The Worker secret holding the admin token.
pub const TOKEN_SECRET: &str = "CRONSLOT_ADMIN_TOKEN";

/// Content type of every JSON reply.
pub const JSON: &str = "application/json";

/// Content type of the Prometheus text exposition format.
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Content type of a reply without a meaningful body.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// What the routes need of an HTTP request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminRequest<'a> {
    /// As sent; methods are case-sensitive (`GET`, `POST`).
    pub method: &'a str,
    /// The URL's path, not decoded (a `?query` left on it is split off).
    pub path: &'a str,
    /// The URL's query without the `?`, not decoded.
    pub query: Option<&'a str>,
    /// The `Authorization` header's value.
    pub authorization: Option<&'a str>,
    /// The `If-Match` header's value (a schedule's `PUT` and `DELETE`).
    #[cfg(feature = "schedules")]
    pub if_match: Option<&'a str>,
    /// The `If-None-Match` header's value (a schedule's `PUT`).
    #[cfg(feature = "schedules")]
    pub if_none_match: Option<&'a str>,
    /// The body, as text (a schedule's `PUT`: its spec); `None` when the
    /// request has none. Hosts read at most [`MAX_BODY_BYTES`].
    #[cfg(feature = "schedules")]
    pub body: Option<&'a str>,
}

/// An HTTP reply for the Worker to send as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header's value ([`JSON`], [`PROMETHEUS`] or
    /// [`TEXT`]).
    pub content_type: &'static str,
    /// Headers besides `Content-Type` (`Allow`, `WWW-Authenticate`,
    /// `Cache-Control`).
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

impl Reply {
    /// The first header of that name (case-insensitive), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A JSON reply. Admin answers are live state: never cached.
    pub fn json<T: Serialize>(status: u16, value: &T) -> Reply {
        match serde_json::to_string(value) {
            Ok(body) => Reply {
                status,
                content_type: JSON,
                headers: vec![no_store()],
                body,
            },
            // Plain data with string keys always serialises; never panic
            // if serde ever says otherwise.
            Err(e) => Reply::error(
                500,
                ErrorKind::Internal,
                format!("cannot encode the reply as JSON: {e}"),
            ),
        }
    }

    /// An error reply ([`ErrorDoc`]) with its status and message.
    pub fn error(status: u16, error: ErrorKind, message: impl Into<String>) -> Reply {
        Reply::error_doc(ErrorDoc::new(status, error, message))
    }

    /// An error reply from its document.
    pub fn error_doc(doc: ErrorDoc) -> Reply {
        let body = serde_json::to_string(&doc).unwrap_or_else(|_| {
            format!(
                "{{\"status\":{},\"error\":\"internal\",\"message\":\"cannot encode the error\"}}",
                doc.status
            )
        });
        Reply {
            status: doc.status,
            content_type: JSON,
            headers: vec![no_store()],
            body,
        }
    }

    /// The reply with one more header.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.to_string(), value.into()));
        self
    }
}

fn no_store() -> (String, String) {
    ("Cache-Control".to_string(), "no-store".to_string())
}

/// The body format of the status routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatusFormat {
    /// `{p}/status`: [`StatusDoc`].
    Json,
    /// `{p}/metrics`: the Prometheus text exposition format.
    Prometheus,
}

/// A recognised, authorised, well-formed admin request. Jobs are known to
/// the manifest [`route`] was given.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AdminRoute {
    /// `GET {p}/health`.
    Health,
    /// `GET {p}/status` and `GET {p}/metrics`.
    Status {
        /// The one job asked for; `None`: every job.
        job: Option<JobName>,
        /// Which of the two routes.
        format: StatusFormat,
        /// The page of jobs `GET {p}/status` asks for (every job of the
        /// page is read); `None`: every job (the metrics route, which a
        /// scraper reads whole).
        page: Option<JobPage>,
    },
    /// `GET {p}/dlq`.
    Dlq {
        /// The one job asked for; `None`: every job.
        job: Option<JobName>,
    },
    /// `POST {p}/jobs/{job}/redrive`.
    Redrive {
        /// The job.
        job: JobName,
        /// The one dead letter to send back; `None`: all of them.
        slot: Option<Timestamp>,
    },
    /// `POST {p}/jobs/{job}/pause`.
    Pause {
        /// The job.
        job: JobName,
    },
    /// `POST {p}/jobs/{job}/resume`.
    Resume {
        /// The job.
        job: JobName,
    },
    /// `POST {p}/jobs/{job}/backfill`.
    Backfill {
        /// The job.
        job: JobName,
        /// Where the range of slots starts (inclusive).
        from: Timestamp,
        /// Where it ends (inclusive).
        to: Timestamp,
        /// Report the slots without queueing them.
        dry_run: bool,
    },
    /// Run the job's current slot now: the Worker claims it with
    /// `Trigger::Manual`, runs it and records the outcome ([`trigger_run`]),
    /// then answers with [`trigger_reply`]. [`execute`] does not run jobs.
    Trigger {
        /// The job.
        job: JobName,
    },
    /// `GET {p}/jobs/{job}/next`: the job's next slots with their DST
    /// marks, from the manifest alone.
    Next {
        /// The job.
        job: JobName,
        /// How many slots (1..=[`MAX_NEXT`]).
        count: usize,
    },
    /// `GET {p}/openapi.json`: the OpenAPI document of these routes, which
    /// [`dispatch`] asks the host for ([`AdminHost::openapi`]). No token:
    /// it describes the routes and holds no data.
    OpenApi,
    /// `GET {p}/` and its assets: the dashboard. No token: the page holds
    /// no data (it asks for the token and sends it with each request to
    /// the data routes).
    Dashboard(Asset),
    /// `POST {p}/repair`: one page of the repair sweep; the Worker serves
    /// it with [`repair_page`] over its objects. [`execute`] does not.
    Repair {
        /// Where the page starts: the jobs named after this one (any text;
        /// `None`: from the first job).
        after: Option<String>,
    },
    /// `PUT {p}/schedules/{job}/{key}`: writes the schedule `key` of the
    /// dynamic job `job` (a full replace), served by
    /// [`execute_schedule`] through [`AdminHost::schedule_route`].
    #[cfg(feature = "schedules")]
    PutSchedule {
        /// The dynamic job.
        job: JobName,
        /// The schedule's key.
        key: ScheduleKey,
        /// The spec the body sent, checked.
        spec: ScheduleSpec,
        /// From `If-Match` or `If-None-Match: *`.
        precondition: Precondition,
    },
    /// `POST {p}/schedules/{job}`: writes many schedules of the dynamic
    /// job `job`, each a `PUT` of its own with its own answer.
    #[cfg(feature = "schedules")]
    PutSchedules {
        /// The dynamic job.
        job: JobName,
        /// The entries of the body, each read and checked on its own.
        entries: Vec<BulkEntry>,
    },
    /// `GET {p}/schedules/{job}/{key}`: the schedule and its status.
    #[cfg(feature = "schedules")]
    GetSchedule {
        /// The dynamic job.
        job: JobName,
        /// The schedule's key.
        key: ScheduleKey,
    },
    /// `DELETE {p}/schedules/{job}/{key}`: deletes the schedule, leaving
    /// a tombstone.
    #[cfg(feature = "schedules")]
    DeleteSchedule {
        /// The dynamic job.
        job: JobName,
        /// The schedule's key.
        key: ScheduleKey,
        /// From `If-Match`.
        precondition: Precondition,
    },
    /// A job's operation (`redrive`, `pause`, `resume`, `backfill`,
    /// `trigger`) with `?key=`: `action` (whose job is the dynamic job)
    /// acts on that schedule's record, with the schedule's spec as the
    /// store holds it. [`dispatch`] reads the spec through
    /// [`AdminHost::schedule_spec`], then runs the action as for a job.
    #[cfg(feature = "schedules")]
    OfSchedule {
        /// The schedule.
        key: ScheduleKey,
        /// The operation, as on a job.
        action: Box<AdminRoute>,
    },
    /// `GET {p}/schedules/{job}`: a page of the job's schedules in key
    /// order.
    #[cfg(feature = "schedules")]
    ListSchedules {
        /// The dynamic job.
        job: JobName,
        /// The prefix, the label, the cursor and the limit asked for.
        query: ScheduleQuery,
    },
    /// `PUT {p}/runs/{job}/{key}`: enqueues the keyed run `key` of the
    /// dynamic job `job`, once; served by [`execute_run`] through
    /// [`AdminHost::run_route`].
    #[cfg(feature = "schedules")]
    EnqueueRun {
        /// The dynamic job.
        job: JobName,
        /// The business key.
        key: ScheduleKey,
        /// The payload and the instant the body sent, checked.
        request: RunRequest,
        /// The run's path under the routes' prefix, for `Location`.
        location: String,
    },
    /// `GET {p}/runs/{job}/{key}`: the keyed run's status.
    #[cfg(feature = "schedules")]
    GetRun {
        /// The dynamic job.
        job: JobName,
        /// The business key.
        key: ScheduleKey,
    },
    /// `GET {p}/runs/{job}`: a page of the job's keyed runs in key order.
    #[cfg(feature = "schedules")]
    ListRuns {
        /// The dynamic job.
        job: JobName,
        /// The prefix, the status, the cursor and the limit asked for.
        query: RunQuery,
    },
}

/// A page of the manifest's jobs: `GET {p}/status?search=&after=&limit=`.
/// The jobs go in manifest order; the cursor is the last job's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPage {
    /// Only jobs whose name holds this text (letter case aside).
    pub search: Option<String>,
    /// Only jobs after this one in the manifest.
    pub after: Option<String>,
    /// At most this many jobs (1 to [`MAX_JOB_PAGE`]).
    pub limit: usize,
}

/// The jobs a page of `GET {p}/status` holds when `limit` is not given.
pub const DEFAULT_JOB_PAGE: usize = 100;

/// The most jobs one page of `GET {p}/status` holds.
pub const MAX_JOB_PAGE: usize = 1000;

impl AdminRoute {
    /// The job the route is about, if it names one.
    pub fn job(&self) -> Option<&JobName> {
        match self {
            AdminRoute::Health
            | AdminRoute::Repair { .. }
            | AdminRoute::Dashboard(_)
            | AdminRoute::OpenApi => None,
            AdminRoute::Status { job, .. } | AdminRoute::Dlq { job } => job.as_ref(),
            AdminRoute::Redrive { job, .. }
            | AdminRoute::Pause { job }
            | AdminRoute::Resume { job }
            | AdminRoute::Backfill { job, .. }
            | AdminRoute::Next { job, .. }
            | AdminRoute::Trigger { job } => Some(job),
            #[cfg(feature = "schedules")]
            AdminRoute::PutSchedule { job, .. }
            | AdminRoute::PutSchedules { job, .. }
            | AdminRoute::GetSchedule { job, .. }
            | AdminRoute::DeleteSchedule { job, .. }
            | AdminRoute::ListSchedules { job, .. }
            | AdminRoute::EnqueueRun { job, .. }
            | AdminRoute::GetRun { job, .. }
            | AdminRoute::ListRuns { job, .. } => Some(job),
            #[cfg(feature = "schedules")]
            AdminRoute::OfSchedule { action, .. } => action.job(),
        }
    }

    /// Whether the route is one of a dynamic job's schedules (served by
    /// [`AdminHost::schedule_route`]).
    #[cfg(feature = "schedules")]
    pub fn is_schedule(&self) -> bool {
        matches!(
            self,
            AdminRoute::PutSchedule { .. }
                | AdminRoute::PutSchedules { .. }
                | AdminRoute::GetSchedule { .. }
                | AdminRoute::DeleteSchedule { .. }
                | AdminRoute::ListSchedules { .. }
        )
    }

    /// Whether the route is one of a dynamic job's keyed runs (served by
    /// [`AdminHost::run_route`]).
    #[cfg(feature = "schedules")]
    pub fn is_run(&self) -> bool {
        matches!(
            self,
            AdminRoute::EnqueueRun { .. } | AdminRoute::GetRun { .. } | AdminRoute::ListRuns { .. }
        )
    }

    /// The route's entry in [`ROUTES`]: its method and path template.
    pub fn template(&self) -> (&'static str, &'static str) {
        match self {
            AdminRoute::Dashboard(Asset::Page { .. }) => ("GET", "/"),
            AdminRoute::Dashboard(Asset::Script) => ("GET", "/dashboard.js"),
            AdminRoute::Dashboard(Asset::Style) => ("GET", "/dashboard.css"),
            AdminRoute::OpenApi => ("GET", "/openapi.json"),
            AdminRoute::Health => ("GET", "/health"),
            AdminRoute::Status {
                format: StatusFormat::Json,
                ..
            } => ("GET", "/status"),
            AdminRoute::Status {
                format: StatusFormat::Prometheus,
                ..
            } => ("GET", "/metrics"),
            AdminRoute::Dlq { .. } => ("GET", "/dlq"),
            AdminRoute::Next { .. } => ("GET", "/jobs/{job}/next"),
            AdminRoute::Redrive { .. } => ("POST", "/jobs/{job}/redrive"),
            AdminRoute::Pause { .. } => ("POST", "/jobs/{job}/pause"),
            AdminRoute::Resume { .. } => ("POST", "/jobs/{job}/resume"),
            AdminRoute::Backfill { .. } => ("POST", "/jobs/{job}/backfill"),
            AdminRoute::Trigger { .. } => ("POST", "/jobs/{job}/trigger"),
            AdminRoute::Repair { .. } => ("POST", "/repair"),
            #[cfg(feature = "schedules")]
            AdminRoute::PutSchedule { .. } => ("PUT", "/schedules/{job}/{key}"),
            #[cfg(feature = "schedules")]
            AdminRoute::PutSchedules { .. } => ("POST", "/schedules/{job}"),
            #[cfg(feature = "schedules")]
            AdminRoute::GetSchedule { .. } => ("GET", "/schedules/{job}/{key}"),
            #[cfg(feature = "schedules")]
            AdminRoute::DeleteSchedule { .. } => ("DELETE", "/schedules/{job}/{key}"),
            #[cfg(feature = "schedules")]
            AdminRoute::ListSchedules { .. } => ("GET", "/schedules/{job}"),
            #[cfg(feature = "schedules")]
            AdminRoute::OfSchedule { action, .. } => action.template(),
            #[cfg(feature = "schedules")]
            AdminRoute::EnqueueRun { .. } => ("PUT", "/runs/{job}/{key}"),
            #[cfg(feature = "schedules")]
            AdminRoute::GetRun { .. } => ("GET", "/runs/{job}/{key}"),
            #[cfg(feature = "schedules")]
            AdminRoute::ListRuns { .. } => ("GET", "/runs/{job}"),
        }
    }
}
