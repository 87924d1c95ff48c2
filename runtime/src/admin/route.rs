//! Request → [`AdminRoute`]: prefix, token, path, method, job, query.

use std::collections::BTreeMap;

use cronslot_core::coord::{BackfillError, SlotId};
use cronslot_core::instant::parse_instant;
use cronslot_core::manifest::{JobName, Manifest};
use jiff::Timestamp;

use super::auth::authorize;
use super::dashboard::Asset;
use super::query::{bad_parameter, parse_query, percent_decode, printable};
use super::{
    AdminRequest, AdminRoute, DEFAULT_JOB_PAGE, DEFAULT_NEXT, ErrorDoc, ErrorKind, JobPage,
    MAX_JOB_PAGE, MAX_NEXT, Reply, StatusFormat,
};

/// Recognises an admin request.
///
/// `None`: the path is not under `prefix`, the request is not the admin
/// routes' (the Worker serves it otherwise). `Some(Err(reply))`: refused,
/// send the reply. `Some(Ok(route))`: authorised and well-formed; run it
/// with [`execute`](super::execute) (or, for a trigger, run the job and
/// answer with [`trigger_reply`](super::trigger_reply)).
///
/// `prefix` is a path such as `/cronslot` (a missing leading `/` is added,
/// a trailing one ignored; `""` or `/` puts the routes at the root).
/// `token` is the configured admin token: `None` or blank refuses every
/// route but health (fail closed). The token is checked before the rest of
/// the path, so an unauthorised caller learns nothing about routes or jobs.
pub fn route(
    prefix: &str,
    manifest: &Manifest,
    req: &AdminRequest<'_>,
    token: Option<&str>,
) -> Option<Result<AdminRoute, Reply>> {
    let (path, inline_query) = match req.path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (req.path, None),
    };
    let query = req.query.or(inline_query);
    let segments = segments_below(prefix, path)?;
    let prefix = prefix.trim().trim_end_matches('/');
    let base = if prefix.is_empty() || prefix.starts_with('/') {
        prefix.to_string()
    } else {
        format!("/{prefix}")
    };
    Some(recognise(manifest, req, &segments, query, token, &base))
}

/// The segments of `path` below `prefix` (`[]` for the prefix itself);
/// `None` when the path is not under it. The router reads the path with
/// it, and so do the hosts that must know a route before they read its
/// body ([`body_limit`](super::body_limit)).
pub(crate) fn segments_below<'p>(prefix: &str, path: &'p str) -> Option<Vec<&'p str>> {
    let prefix = prefix.trim().trim_end_matches('/');
    let rest = if prefix.is_empty() {
        path
    } else if prefix.starts_with('/') {
        path.strip_prefix(prefix)?
    } else {
        path.strip_prefix('/')?.strip_prefix(prefix)?
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        // `/cronslotx`: not under the prefix.
        return None;
    }
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    Some(if rest.is_empty() {
        Vec::new()
    } else {
        rest.split('/').collect()
    })
}

/// Every route the router knows, as `(method, path template)` with the
/// path below the prefix (`{job}` stands for a job's name): what
/// `docs/openapi.json` describes, in its order. The router's tests check
/// this list against [`route`] both ways (each entry routes to itself, and
/// every [`AdminRoute`] names an entry through
/// [`AdminRoute::template`]), so a route cannot be added without it; the
/// CLI's tests check it against the document.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("GET", "/dashboard.js"),
    ("GET", "/dashboard.css"),
    ("GET", "/openapi.json"),
    ("GET", "/health"),
    ("GET", "/status"),
    ("GET", "/metrics"),
    ("GET", "/dlq"),
    ("GET", "/jobs/{job}/next"),
    ("POST", "/jobs/{job}/redrive"),
    ("POST", "/jobs/{job}/pause"),
    ("POST", "/jobs/{job}/resume"),
    ("POST", "/jobs/{job}/backfill"),
    ("POST", "/jobs/{job}/trigger"),
    ("POST", "/repair"),
    #[cfg(feature = "schedules")]
    ("GET", "/schedules/{job}/{key}"),
    #[cfg(feature = "schedules")]
    ("PUT", "/schedules/{job}/{key}"),
    #[cfg(feature = "schedules")]
    ("DELETE", "/schedules/{job}/{key}"),
    #[cfg(feature = "schedules")]
    ("GET", "/schedules/{job}"),
    #[cfg(feature = "schedules")]
    ("POST", "/schedules/{job}"),
    #[cfg(feature = "schedules")]
    ("GET", "/runs/{job}/{key}"),
    #[cfg(feature = "schedules")]
    ("PUT", "/runs/{job}/{key}"),
    #[cfg(feature = "schedules")]
    ("GET", "/runs/{job}"),
];

/// The routes' paths, for 404 messages.
#[cfg(not(feature = "schedules"))]
const ROUTE_LIST: &str = "GET / (the dashboard), GET openapi.json, GET health, GET status, \
                          GET metrics, GET dlq, GET jobs/{job}/next, \
                          POST jobs/{job}/redrive|pause|resume|backfill|trigger, POST repair";
#[cfg(feature = "schedules")]
const ROUTE_LIST: &str = "GET / (the dashboard), GET openapi.json, GET health, GET status, \
                          GET metrics, GET dlq, GET jobs/{job}/next, \
                          POST jobs/{job}/redrive|pause|resume|backfill|trigger, POST repair, \
                          PUT|GET|DELETE schedules/{job}/{key}, GET|POST schedules/{job}, \
                          PUT|GET runs/{job}/{key}, GET runs/{job}";

fn recognise(
    manifest: &Manifest,
    req: &AdminRequest<'_>,
    segments: &[&str],
    query: Option<&str>,
    token: Option<&str>,
    base: &str,
) -> Result<AdminRoute, Reply> {
    if segments == ["health"] {
        allow(req.method, "GET")?;
        parse_query(query, &[])?;
        return Ok(AdminRoute::Health);
    }
    if segments == ["openapi.json"] {
        // The document describes the routes and holds no data: served
        // without a token, as client generators fetch it.
        allow(req.method, "GET")?;
        return Ok(AdminRoute::OpenApi);
    }
    if let Some(asset) = Asset::named(segments, base) {
        // The dashboard's files hold no data: served without a token.
        allow(req.method, "GET")?;
        return Ok(AdminRoute::Dashboard(asset));
    }
    authorize(req.authorization, token)?;
    match segments {
        ["jobs", raw_job, "next"] => {
            allow(req.method, "GET")?;
            let job = job_segment(manifest, raw_job)?;
            let params = parse_query(query, &["count"])?;
            let count = match params.get("count") {
                None => DEFAULT_NEXT,
                Some(raw) => match raw.parse::<usize>() {
                    Ok(n) if (1..=MAX_NEXT).contains(&n) => n,
                    _ => {
                        return Err(bad_parameter(
                            "count",
                            format!(
                                "count {:?} is not a whole number from 1 to {MAX_NEXT}",
                                printable(raw)
                            ),
                        ));
                    }
                },
            };
            Ok(AdminRoute::Next { job, count })
        }
        ["metrics"] => {
            allow(req.method, "GET")?;
            let params = parse_query(query, &["job"])?;
            Ok(AdminRoute::Status {
                job: job_param(manifest, &params)?,
                format: StatusFormat::Prometheus,
                page: None,
            })
        }
        ["status"] => {
            allow(req.method, "GET")?;
            let params = parse_query(query, &["job", "search", "after", "limit"])?;
            Ok(AdminRoute::Status {
                job: job_param(manifest, &params)?,
                format: StatusFormat::Json,
                page: Some(job_page(manifest, &params)?),
            })
        }
        ["dlq"] => {
            allow(req.method, "GET")?;
            let params = parse_query(query, &["job"])?;
            // A dynamic job's dead letters are its keyed runs' (the
            // host lists them: admin::dispatch).
            #[cfg(feature = "schedules")]
            if let Some(template) = params.get("job").and_then(|name| manifest.template(name)) {
                return Ok(AdminRoute::Dlq {
                    job: Some(template.name.clone()),
                });
            }
            Ok(AdminRoute::Dlq {
                job: job_param(manifest, &params)?,
            })
        }
        ["repair"] => {
            allow(req.method, "POST")?;
            let params = parse_query(query, &["after"])?;
            Ok(AdminRoute::Repair {
                after: params.get("after").map(|a| a.to_string()),
            })
        }
        ["jobs", raw_job, action] => {
            let allowed: &[&str] = match *action {
                "redrive" => REDRIVE_PARAMS,
                "backfill" => BACKFILL_PARAMS,
                "pause" | "resume" | "trigger" => OPERATION_PARAMS,
                _ => return Err(not_found_route(segments)),
            };
            allow(req.method, "POST")?;
            let params = parse_query(query, allowed)?;
            // `key`: the operation acts on that schedule of a dynamic job.
            #[cfg(feature = "schedules")]
            let (job, key) = match params.get("key") {
                None => (job_segment(manifest, raw_job)?, None),
                Some(raw) => schedule_of(manifest, raw_job, raw)?,
            };
            #[cfg(not(feature = "schedules"))]
            let job = job_segment(manifest, raw_job)?;
            // A slot id names the record's job: `job/key@…` for a schedule.
            #[cfg(feature = "schedules")]
            let keyed_name;
            #[cfg(feature = "schedules")]
            let record: &str = match &key {
                None => job.as_str(),
                Some(key) => {
                    keyed_name = cronslot_core::schedules::record_name(&job, key);
                    &keyed_name
                }
            };
            #[cfg(not(feature = "schedules"))]
            let record = job.as_str();
            let route = match *action {
                "redrive" => AdminRoute::Redrive {
                    slot: params
                        .get("slot")
                        .map(|s| slot_param(record, s))
                        .transpose()?,
                    job,
                },
                "pause" => AdminRoute::Pause { job },
                "resume" => AdminRoute::Resume { job },
                "trigger" => AdminRoute::Trigger { job },
                _ => {
                    let from = required_instant(&params, "from")?;
                    let to = required_instant(&params, "to")?;
                    if from > to {
                        // The core's refusal rides along, so that a client
                        // tells it apart from a malformed request.
                        let mut doc = ErrorDoc::new(
                            400,
                            ErrorKind::BadRequest,
                            format!(
                                "from ({from}) is after to ({to}): the range is empty; \
                                 from must be at or before to"
                            ),
                        );
                        doc.parameter = Some("from".to_string());
                        doc.backfill = Some(BackfillError::EmptyRange);
                        return Err(Reply::error_doc(doc));
                    }
                    let dry_run = match params.get("dry_run") {
                        None => false,
                        Some(v) => bool_param("dry_run", v)?,
                    };
                    AdminRoute::Backfill {
                        job,
                        from,
                        to,
                        dry_run,
                    }
                }
            };
            #[cfg(feature = "schedules")]
            if let Some(key) = key {
                return Ok(AdminRoute::OfSchedule {
                    key,
                    action: Box::new(route),
                });
            }
            Ok(route)
        }
        #[cfg(feature = "schedules")]
        ["schedules", raw_job, raw_key] => {
            super::schedules::recognise(manifest, req, query, raw_job, raw_key)
        }
        #[cfg(feature = "schedules")]
        ["schedules", raw_job] => super::schedules::recognise_list(manifest, req, query, raw_job),
        #[cfg(feature = "schedules")]
        ["runs", raw_job, raw_key] => {
            super::runs::recognise(manifest, req, query, raw_job, raw_key, base)
        }
        #[cfg(feature = "schedules")]
        ["runs", raw_job] => super::runs::recognise_list(manifest, req, query, raw_job),
        // Said in so many words, so that a client is not sent looking for
        // a typo: this build has no schedules to serve.
        #[cfg(not(feature = "schedules"))]
        ["schedules", ..] | ["runs", ..] => Err(Reply::error(
            404,
            ErrorKind::NotFound,
            "this build serves no schedules: it is built without the feature `schedules`              (a Worker: cronslot-cf's)",
        )),
        _ => Err(not_found_route(segments)),
    }
}

/// 405 with `Allow` unless the method is the route's.
pub(super) fn allow(method: &str, expected: &'static str) -> Result<(), Reply> {
    if method == expected {
        return Ok(());
    }
    let mut doc = ErrorDoc::new(
        405,
        ErrorKind::MethodNotAllowed,
        format!(
            "method {:?} is not allowed here; this route takes {expected}",
            printable(method)
        ),
    );
    doc.allow = Some(expected.to_string());
    Err(Reply::error_doc(doc).with_header("Allow", expected))
}

fn not_found_route(segments: &[&str]) -> Reply {
    let path = printable(&segments.join("/"));
    Reply::error(
        404,
        ErrorKind::NotFound,
        format!("no admin route {path:?}; the routes are: {ROUTE_LIST}"),
    )
}

/// How many close names a 404 for an unknown job suggests, at most: the
/// answer never lists every job (a manifest may have thousands).
const SUGGESTED: usize = 3;

fn unknown_job(manifest: &Manifest, name: &str) -> Reply {
    let names = manifest
        .jobs
        .iter()
        .map(|j| j.name.as_str())
        .chain(manifest.templates.iter().map(|t| t.name.as_str()));
    let close = cronslot_core::suggest::close_names(name, names, SUGGESTED);
    let known = match (
        manifest.jobs.len() + manifest.templates.len(),
        close.as_slice(),
    ) {
        (0, _) => "the manifest defines no jobs".to_string(),
        (n, []) => format!("no job of the {n} is named like it (GET status lists them)"),
        (_, close) => format!("did you mean {}?", close.join(", ")),
    };
    Reply::error(
        404,
        ErrorKind::NotFound,
        format!("no job {:?} in the manifest; {known}", printable(name)),
    )
}

/// The page of `GET {p}/status`: `search` (text a name holds), `after`
/// (a job of the manifest: the page starts after it), `limit` (1 to
/// [`MAX_JOB_PAGE`], [`DEFAULT_JOB_PAGE`] when absent).
fn job_page(
    manifest: &Manifest,
    params: &std::collections::BTreeMap<String, String>,
) -> Result<JobPage, Reply> {
    let limit = match params.get("limit") {
        None => DEFAULT_JOB_PAGE,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_JOB_PAGE).contains(&n) && !text.starts_with('+') => n,
            _ => {
                return Err(bad_parameter(
                    "limit",
                    format!(
                        "limit {:?}: a page holds 1 to {MAX_JOB_PAGE} jobs",
                        printable(text)
                    ),
                ));
            }
        },
    };
    let after = params.get("after").cloned();
    if let Some(name) = &after
        && manifest.job(name).is_none()
    {
        return Err(bad_parameter(
            "after",
            format!(
                "after {:?}: the cursor names no job of the manifest (it changed since the page \
                 before: start again without it)",
                printable(name)
            ),
        ));
    }
    let search = params
        .get("search")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Ok(JobPage {
        search,
        after,
        limit,
    })
}

fn find_job(manifest: &Manifest, name: &str) -> Result<JobName, Reply> {
    manifest
        .job(name)
        .map(|spec| spec.name.clone())
        .ok_or_else(|| unknown_job(manifest, name))
}

fn job_segment(manifest: &Manifest, raw: &str) -> Result<JobName, Reply> {
    match percent_decode(raw) {
        Some(name) => find_job(manifest, &name),
        None => Err(unknown_job(manifest, raw)),
    }
}

fn job_param(
    manifest: &Manifest,
    params: &BTreeMap<String, String>,
) -> Result<Option<JobName>, Reply> {
    params
        .get("job")
        .map(|name| find_job(manifest, name))
        .transpose()
}

fn instant(parameter: &str, text: &str) -> Result<Timestamp, Reply> {
    parse_instant(text.trim()).map_err(|e| {
        bad_parameter(
            parameter,
            format!("parameter {parameter:?}: {e} (percent-encoded in a URL)"),
        )
    })
}

fn required_instant(
    params: &BTreeMap<String, String>,
    parameter: &str,
) -> Result<Timestamp, Reply> {
    match params.get(parameter) {
        Some(text) => instant(parameter, text),
        None => Err(bad_parameter(
            parameter,
            format!("parameter {parameter:?} is required (an RFC 3339 instant)"),
        )),
    }
}

/// RFC 3339, or a slot id `job@RFC3339` of this job.
/// The query parameters of a job's operations; with schedules, each also
/// takes `key` (the operation then acts on that schedule).
#[cfg(feature = "schedules")]
const REDRIVE_PARAMS: &[&str] = &["slot", "key"];
#[cfg(feature = "schedules")]
const BACKFILL_PARAMS: &[&str] = &["from", "to", "dry_run", "key"];
#[cfg(feature = "schedules")]
const OPERATION_PARAMS: &[&str] = &["key"];
#[cfg(not(feature = "schedules"))]
const REDRIVE_PARAMS: &[&str] = &["slot"];
#[cfg(not(feature = "schedules"))]
const BACKFILL_PARAMS: &[&str] = &["from", "to", "dry_run"];
#[cfg(not(feature = "schedules"))]
const OPERATION_PARAMS: &[&str] = &[];

/// The dynamic job of the path and the schedule `key` names, each checked.
#[cfg(feature = "schedules")]
fn schedule_of(
    manifest: &Manifest,
    raw_job: &str,
    raw_key: &str,
) -> Result<(JobName, Option<cronslot_core::schedules::ScheduleKey>), Reply> {
    let job = super::schedules::dynamic_job(manifest, raw_job)?;
    let key = cronslot_core::schedules::ScheduleKey::new(raw_key)
        .map_err(|e| bad_parameter("key", e.to_string()))?;
    Ok((job, Some(key)))
}

fn slot_param(job: &str, text: &str) -> Result<Timestamp, Reply> {
    if !text.contains('@') {
        return instant("slot", text);
    }
    let id: SlotId = text.trim().parse().map_err(|e| {
        bad_parameter(
            "slot",
            format!(
                "parameter \"slot\": {:?} is not a slot id: {e}",
                printable(text)
            ),
        )
    })?;
    if id.job() != job {
        return Err(bad_parameter(
            "slot",
            format!(
                "parameter \"slot\": {:?} is a slot of job {:?}, not of {:?}",
                printable(text),
                id.job(),
                job
            ),
        ));
    }
    Ok(id.at())
}

fn bool_param(parameter: &str, text: &str) -> Result<bool, Reply> {
    match text.trim() {
        "" | "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        other => Err(bad_parameter(
            parameter,
            format!(
                "parameter {parameter:?}: {:?} is not a boolean (write true or false)",
                printable(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use cronslot_core::manifest::parse_manifest;

    use super::*;

    const TOKEN: &str = "t0ken";

    fn manifest() -> Manifest {
        parse_manifest(
            "[[job]]\nname = \"report\"\nschedule = \"* * * * *\"\n\
             [[job]]\nname = \"invoice\"\ndynamic = true\n",
            "cronslot.toml",
        )
        .expect("manifest")
    }

    fn ask(
        m: &Manifest,
        method: &str,
        path: &str,
        query: Option<&str>,
    ) -> Result<AdminRoute, Reply> {
        let req = AdminRequest {
            method,
            path,
            query,
            authorization: Some("Bearer t0ken"),
            #[cfg(feature = "schedules")]
            if_match: None,
            #[cfg(feature = "schedules")]
            if_none_match: None,
            // A schedule's spec, a bulk write's list, or a keyed run's
            // request.
            #[cfg(feature = "schedules")]
            body: Some(if path.contains("/runs/") {
                r#"{"payload": {"order": 1}}"#
            } else if method == "POST" && path.ends_with("/schedules/invoice") {
                r#"{"schedules": [{"key": "k", "spec": {"cron": "0 9 * * *"}}]}"#
            } else {
                r#"{"cron": "0 9 * * *"}"#
            }),
        };
        route("/cronslot", m, &req, Some(TOKEN)).expect("under the prefix")
    }

    /// Each entry of [`ROUTES`] is a route of its own, with its method
    /// alone (every method no entry of its path lists is 405).
    #[test]
    fn every_listed_route_routes_to_itself() {
        let m = manifest();
        let mut listed = BTreeSet::new();
        for &(method, template) in ROUTES {
            assert!(
                listed.insert((method, template)),
                "{method} {template} listed twice"
            );
            // A schedule's and a keyed run's routes are a dynamic job's.
            let job = if template.starts_with("/schedules/") || template.starts_with("/runs/") {
                "invoice"
            } else {
                "report"
            };
            let path = format!(
                "/cronslot{}",
                template.replace("{job}", job).replace("{key}", "tenant-1")
            );
            let query = (template == "/jobs/{job}/backfill")
                .then_some("from=2026-03-08T11:00:00Z&to=2026-03-08T11:05:00Z");
            let got = ask(&m, method, &path, query)
                .unwrap_or_else(|r| panic!("{method} {template}: {} {}", r.status, r.body));
            assert_eq!(got.template(), (method, template), "{got:?}");
            let methods: Vec<&str> = ROUTES
                .iter()
                .filter(|(_, t)| *t == template)
                .map(|(m, _)| *m)
                .collect();
            for other in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
                if !methods.contains(&other) {
                    let refused = ask(&m, other, &path, query).expect_err("another method");
                    assert_eq!(refused.status, 405, "{other} {template}: {}", refused.body);
                    assert_eq!(refused.header("allow"), Some(methods.join(", ").as_str()));
                }
            }
        }
    }

    /// Every route the router can answer is in [`ROUTES`]: one value of
    /// each variant (the `match` has no wildcard, so a new variant does
    /// not compile until it is listed here, and a new variant's template
    /// must then be listed in `ROUTES`).
    #[test]
    fn every_route_is_listed() {
        let job = || JobName::new("report").expect("a name");
        #[cfg(feature = "schedules")]
        let key = || cronslot_core::schedules::ScheduleKey::new("k").expect("a key");
        let at = Timestamp::UNIX_EPOCH;
        let every = [
            AdminRoute::Dashboard(Asset::Page {
                base: "/cronslot".into(),
            }),
            AdminRoute::Dashboard(Asset::Script),
            AdminRoute::Dashboard(Asset::Style),
            AdminRoute::OpenApi,
            AdminRoute::Health,
            AdminRoute::Status {
                job: None,
                format: StatusFormat::Json,
                page: None,
            },
            AdminRoute::Status {
                job: None,
                format: StatusFormat::Prometheus,
                page: None,
            },
            AdminRoute::Dlq { job: None },
            AdminRoute::Next {
                job: job(),
                count: 1,
            },
            AdminRoute::Redrive {
                job: job(),
                slot: None,
            },
            AdminRoute::Pause { job: job() },
            AdminRoute::Resume { job: job() },
            AdminRoute::Backfill {
                job: job(),
                from: at,
                to: at,
                dry_run: false,
            },
            AdminRoute::Trigger { job: job() },
            AdminRoute::Repair { after: None },
            #[cfg(feature = "schedules")]
            AdminRoute::PutSchedule {
                job: job(),
                key: key(),
                spec: cronslot_core::schedules::ScheduleSpec::from_json(r#"{"cron":"0 9 * * *"}"#)
                    .expect("a spec"),
                precondition: cronslot_core::coord::decide::Precondition::None,
            },
            #[cfg(feature = "schedules")]
            AdminRoute::PutSchedules {
                job: job(),
                entries: Vec::new(),
            },
            #[cfg(feature = "schedules")]
            AdminRoute::GetSchedule {
                job: job(),
                key: key(),
            },
            #[cfg(feature = "schedules")]
            AdminRoute::DeleteSchedule {
                job: job(),
                key: key(),
                precondition: cronslot_core::coord::decide::Precondition::None,
            },
            #[cfg(feature = "schedules")]
            AdminRoute::ListSchedules {
                job: job(),
                query: cronslot_core::coord::ScheduleQuery::default(),
            },
            #[cfg(feature = "schedules")]
            AdminRoute::OfSchedule {
                key: key(),
                action: Box::new(AdminRoute::Pause { job: job() }),
            },
            #[cfg(feature = "schedules")]
            AdminRoute::EnqueueRun {
                job: job(),
                key: key(),
                request: cronslot_core::schedules::RunRequest::from_json("{}").expect("a request"),
                location: "/cronslot/runs/a/k".to_string(),
            },
            #[cfg(feature = "schedules")]
            AdminRoute::GetRun {
                job: job(),
                key: key(),
            },
            #[cfg(feature = "schedules")]
            AdminRoute::ListRuns {
                job: job(),
                query: cronslot_core::coord::RunQuery::default(),
            },
        ];
        let mut templates = BTreeSet::new();
        for r in &every {
            match r {
                AdminRoute::Dashboard(Asset::Page { .. } | Asset::Script | Asset::Style)
                | AdminRoute::OpenApi
                | AdminRoute::Health
                | AdminRoute::Status { .. }
                | AdminRoute::Dlq { .. }
                | AdminRoute::Next { .. }
                | AdminRoute::Redrive { .. }
                | AdminRoute::Pause { .. }
                | AdminRoute::Resume { .. }
                | AdminRoute::Backfill { .. }
                | AdminRoute::Trigger { .. }
                | AdminRoute::Repair { .. } => {}
                #[cfg(feature = "schedules")]
                AdminRoute::PutSchedule { .. }
                | AdminRoute::PutSchedules { .. }
                | AdminRoute::GetSchedule { .. }
                | AdminRoute::DeleteSchedule { .. }
                | AdminRoute::ListSchedules { .. }
                | AdminRoute::OfSchedule { .. }
                | AdminRoute::EnqueueRun { .. }
                | AdminRoute::GetRun { .. }
                | AdminRoute::ListRuns { .. } => {}
            }
            assert!(ROUTES.contains(&r.template()), "{r:?} is not in ROUTES");
            templates.insert(r.template());
        }
        let listed: BTreeSet<_> = ROUTES.iter().copied().collect();
        assert_eq!(templates, listed);
    }

    /// The document needs no token; the data routes do.
    #[test]
    fn the_document_is_open() {
        let m = manifest();
        let req = AdminRequest {
            method: "GET",
            path: "/cronslot/openapi.json",
            query: None,
            authorization: None,
            #[cfg(feature = "schedules")]
            if_match: None,
            #[cfg(feature = "schedules")]
            if_none_match: None,
            #[cfg(feature = "schedules")]
            body: None,
        };
        assert_eq!(
            route("/cronslot", &m, &req, None),
            Some(Ok(AdminRoute::OpenApi))
        );
        let req = AdminRequest {
            path: "/cronslot/status",
            ..req
        };
        assert_eq!(
            route("/cronslot", &m, &req, Some(TOKEN))
                .expect("ours")
                .expect_err("no token")
                .status,
            401
        );
    }
}
