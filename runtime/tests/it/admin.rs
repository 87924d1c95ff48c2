//! The admin routes end to end over the core's memory store: routing,
//! authentication, every route's reply, the Prometheus text, and a
//! property test that no request makes them panic.

use std::rc::Rc;
use std::sync::{Arc, Mutex};

use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, FailOutcome, Idle, JobError, MemoryStore, Trigger,
};
use cronslot_core::health::Health;
use cronslot_core::manifest::{JobSpec, Manifest, parse_manifest};
use cronslot_runtime::admin::{
    self, AdminRequest, AdminRoute, BackfillDoc, DlqDoc, ErrorDoc, ErrorKind, HealthDoc,
    HealthState, PROMETHEUS, PauseDoc, RedriveDoc, Reply, StatusDoc, StatusFormat, TriggerDoc,
    TriggerKind, TriggerOutcome,
};
use cronslot_runtime::{Jobs, Platform, VirtualPlatform};
use jiff::Timestamp;
use proptest::prelude::*;
use serde::de::DeserializeOwned;

const MANIFEST: &str = r#"
[defaults]
lease = "2m"
starting_deadline = "5m"

[[job]]
name = "every"
schedule = "* * * * *"
stale_after = "10m"

[[job]]
name = "broken"
schedule = "* * * * *"
retry = { max_attempts = 1 }
stale_after = "1h"

[[job]]
name = "daily"
schedule = "0 9 * * *"
timezone = "America/New_York"

[[job]]
name = "sleepy"
schedule = "*/5 * * * *"
paused = true
"#;

const TOKEN: &str = "s3cret-token";
const P: &str = "/cronslot";

type Coord = CasCoordinator<MemoryStore>;

fn manifest() -> Manifest {
    parse_manifest(MANIFEST, "cronslot.toml").unwrap()
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn spec<'m>(m: &'m Manifest, job: &str) -> &'m JobSpec {
    m.job(job).unwrap()
}

fn coord() -> Coord {
    CasCoordinator::new(MemoryStore::new(), 7)
}

/// `every` succeeded for its 12:00 slot (finished 12:00:20); `broken`'s
/// 12:00 slot failed permanently (a dead letter); `sleepy` has a record;
/// `daily` has none.
fn seeded(m: &Manifest) -> Coord {
    let c = coord();
    for job in ["every", "broken", "sleepy"] {
        let claim = block_on(c.claim(spec(m, job), at("2026-03-08T11:59:30Z"), Trigger::Tick, "w"))
            .unwrap();
        assert!(matches!(claim, Claim::Idle(_)), "{claim:?}");
    }
    let every = spec(m, "every");
    let Claim::Claimed(lease) =
        block_on(c.claim(every, at("2026-03-08T12:00:05Z"), Trigger::Tick, "w")).unwrap()
    else {
        panic!("every: nothing claimed")
    };
    block_on(c.complete(every, lease.fence, None, at("2026-03-08T12:00:20Z"))).unwrap();
    let broken = spec(m, "broken");
    let Claim::Claimed(lease) =
        block_on(c.claim(broken, at("2026-03-08T12:00:05Z"), Trigger::Tick, "w")).unwrap()
    else {
        panic!("broken: nothing claimed")
    };
    let fate = block_on(c.fail(
        broken,
        lease.fence,
        "boom \"quoted\"",
        true,
        at("2026-03-08T12:00:10Z"),
    ))
    .unwrap();
    assert_eq!(fate, FailOutcome::Dead);
    c
}

const NOW: &str = "2026-03-08T12:00:30Z";

fn req<'a>(
    method: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    auth: Option<&'a str>,
) -> AdminRequest<'a> {
    AdminRequest {
        method,
        path,
        query,
        authorization: auth,
        if_match: None,
        if_none_match: None,
        body: None,
    }
}

const AUTH: Option<&str> = Some("Bearer s3cret-token");

/// Routes and runs a request with the right token at `now`.
fn call(
    c: &Coord,
    m: &Manifest,
    method: &str,
    path: &str,
    query: Option<&str>,
    now: &str,
) -> Reply {
    match admin::route(P, m, &req(method, path, query, AUTH), Some(TOKEN)) {
        None => panic!("{path} is not an admin route"),
        Some(Err(reply)) => reply,
        Some(Ok(route)) => block_on(admin::execute(&route, m, c, at(now))),
    }
}

fn refused(m: &Manifest, r: AdminRequest<'_>, token: Option<&str>) -> Reply {
    match admin::route(P, m, &r, token) {
        Some(Err(reply)) => reply,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn body<T: DeserializeOwned>(reply: &Reply) -> T {
    serde_json::from_str(&reply.body).unwrap_or_else(|e| panic!("{e}: {}", reply.body))
}

fn error(reply: &Reply) -> ErrorDoc {
    assert_eq!(reply.content_type, admin::JSON);
    body(reply)
}

// ------------------------------------------------------------- routing

#[test]
fn paths_outside_the_prefix_are_not_ours() {
    let m = manifest();
    for path in [
        "/",
        "/other",
        "/cronslotx/status",
        "/cron",
        "cronslot/status",
        "",
    ] {
        assert!(
            admin::route(P, &m, &req("GET", path, None, AUTH), Some(TOKEN)).is_none(),
            "{path}"
        );
    }
}

#[test]
fn prefixes_are_normalised() {
    let m = manifest();
    for prefix in ["/cronslot", "/cronslot/", "cronslot", " /cronslot "] {
        let r = admin::route(
            prefix,
            &m,
            &req("GET", "/cronslot/status", None, AUTH),
            Some(TOKEN),
        );
        assert!(
            matches!(r, Some(Ok(AdminRoute::Status { .. }))),
            "{prefix}: {r:?}"
        );
    }
    let r = admin::route(
        "/ops/cron",
        &m,
        &req("GET", "/ops/cron/health", None, None),
        None,
    );
    assert_eq!(r, Some(Ok(AdminRoute::Health)));
    let r = admin::route("", &m, &req("GET", "/dlq/", None, AUTH), Some(TOKEN));
    assert_eq!(r, Some(Ok(AdminRoute::Dlq { job: None })));
    let r = admin::route("/", &m, &req("GET", "/health?x=1", None, None), None);
    assert_eq!(
        r.unwrap().unwrap_err().status,
        400,
        "a query left on the path is parsed"
    );
}

#[test]
fn every_route_is_recognised() {
    let m = manifest();
    let job = |n: &str| spec(&m, n).name.clone();
    let cases: Vec<(&str, &str, Option<&str>, AdminRoute)> = vec![
        ("GET", "/cronslot/health", None, AdminRoute::Health),
        (
            "GET",
            "/cronslot/status",
            None,
            AdminRoute::Status {
                job: None,
                format: StatusFormat::Json,
                page: Some(admin::JobPage {
                    search: None,
                    after: None,
                    limit: admin::DEFAULT_JOB_PAGE,
                }),
            },
        ),
        (
            "GET",
            "/cronslot/status",
            Some("job=every"),
            AdminRoute::Status {
                job: Some(job("every")),
                format: StatusFormat::Json,
                page: Some(admin::JobPage {
                    search: None,
                    after: None,
                    limit: admin::DEFAULT_JOB_PAGE,
                }),
            },
        ),
        (
            "GET",
            "/cronslot/metrics",
            None,
            AdminRoute::Status {
                job: None,
                format: StatusFormat::Prometheus,
                page: None,
            },
        ),
        (
            "GET",
            "/cronslot/dlq",
            Some("job=broken"),
            AdminRoute::Dlq {
                job: Some(job("broken")),
            },
        ),
        (
            "POST",
            "/cronslot/jobs/broken/redrive",
            None,
            AdminRoute::Redrive {
                job: job("broken"),
                slot: None,
            },
        ),
        (
            "POST",
            "/cronslot/jobs/broken/redrive",
            Some("slot=2026-03-08T13%3A00%3A00%2B01%3A00"),
            AdminRoute::Redrive {
                job: job("broken"),
                slot: Some(at("2026-03-08T12:00:00Z")),
            },
        ),
        (
            "POST",
            "/cronslot/jobs/broken/redrive",
            Some("slot=broken@2026-03-08T12:00:00Z"),
            AdminRoute::Redrive {
                job: job("broken"),
                slot: Some(at("2026-03-08T12:00:00Z")),
            },
        ),
        (
            "POST",
            "/cronslot/jobs/every/pause",
            None,
            AdminRoute::Pause { job: job("every") },
        ),
        (
            "POST",
            "/cronslot/jobs/every/resume",
            None,
            AdminRoute::Resume { job: job("every") },
        ),
        (
            "POST",
            "/cronslot/jobs/every/trigger",
            None,
            AdminRoute::Trigger { job: job("every") },
        ),
        (
            "POST",
            "/cronslot/jobs/every/backfill",
            Some("from=2026-03-08T11:00:00Z&to=2026-03-08T11:05:00Z&dry_run"),
            AdminRoute::Backfill {
                job: job("every"),
                from: at("2026-03-08T11:00:00Z"),
                to: at("2026-03-08T11:05:00Z"),
                dry_run: true,
            },
        ),
        (
            "POST",
            "/cronslot/jobs/every/backfill",
            Some("to=2026-03-08T11:05:00Z&from=2026-03-08T11:05:00Z&dry_run=false"),
            AdminRoute::Backfill {
                job: job("every"),
                from: at("2026-03-08T11:05:00Z"),
                to: at("2026-03-08T11:05:00Z"),
                dry_run: false,
            },
        ),
        (
            "POST",
            "/cronslot/repair",
            None,
            AdminRoute::Repair { after: None },
        ),
        (
            "POST",
            "/cronslot/repair",
            Some("after=job%2D7"),
            AdminRoute::Repair {
                after: Some("job-7".to_string()),
            },
        ),
    ];
    for (method, path, query, expected) in cases {
        let got = admin::route(P, &m, &req(method, path, query, AUTH), Some(TOKEN));
        assert_eq!(got, Some(Ok(expected)), "{method} {path} {query:?}");
    }
}

#[test]
fn wrong_methods_are_405_with_allow() {
    let m = manifest();
    for (method, path, allow) in [
        ("POST", "/cronslot/health", "GET"),
        ("POST", "/cronslot/status", "GET"),
        ("DELETE", "/cronslot/metrics", "GET"),
        ("PUT", "/cronslot/dlq", "GET"),
        ("GET", "/cronslot/jobs/every/pause", "POST"),
        ("GET", "/cronslot/jobs/every/trigger", "POST"),
        ("GET", "/cronslot/repair", "POST"),
        ("get", "/cronslot/status", "GET"),
    ] {
        let reply = refused(&m, req(method, path, None, AUTH), Some(TOKEN));
        assert_eq!(reply.status, 405, "{method} {path}");
        assert_eq!(reply.header("allow"), Some(allow));
        let e = error(&reply);
        assert_eq!(e.error, ErrorKind::MethodNotAllowed);
        assert_eq!(e.allow.as_deref(), Some(allow));
    }
}

#[test]
fn unknown_routes_and_jobs_are_404() {
    let m = manifest();
    for (method, path, query) in [
        ("GET", "/cronslot/nope", None),
        ("GET", "/cronslot/dashboard.js/x", None),
        ("GET", "/cronslot/jobs/nope/next", None),
        ("POST", "/cronslot/jobs/every", None),
        ("POST", "/cronslot/jobs/every/explode", None),
        ("POST", "/cronslot/jobs/nope/pause", None),
        ("POST", "/cronslot/jobs/%zz/pause", None),
        ("GET", "/cronslot/status", Some("job=nope")),
        ("GET", "/cronslot/dlq", Some("job=Every")),
    ] {
        let reply = refused(&m, req(method, path, query, AUTH), Some(TOKEN));
        assert_eq!(
            reply.status, 404,
            "{method} {path} {query:?}: {}",
            reply.body
        );
        assert_eq!(error(&reply).error, ErrorKind::NotFound);
    }
    // A few close names, never the list of every job.
    let reply = refused(
        &m,
        req("POST", "/cronslot/jobs/dialy/pause", None, AUTH),
        Some(TOKEN),
    );
    assert!(reply.body.contains("did you mean daily?"), "{}", reply.body);
    let reply = refused(
        &m,
        req("POST", "/cronslot/jobs/nope/pause", None, AUTH),
        Some(TOKEN),
    );
    assert!(
        reply.body.contains("no job of the 4 is named like it") && !reply.body.contains("sleepy"),
        "{}",
        reply.body
    );
}

#[test]
fn bad_queries_are_400_naming_the_parameter() {
    let m = manifest();
    for (path, query, parameter, says) in [
        (
            "/cronslot/status",
            "jobs=every",
            "jobs",
            "unknown query parameter",
        ),
        (
            "/cronslot/status",
            "job=every&job=broken",
            "job",
            "more than once",
        ),
        (
            "/cronslot/health",
            "verbose=1",
            "verbose",
            "takes no query parameters",
        ),
        (
            "/cronslot/jobs/broken/redrive",
            "slot=yesterday",
            "slot",
            "not an RFC 3339 instant",
        ),
        (
            "/cronslot/jobs/broken/redrive",
            "slot=every@2026-03-08T12:00:00Z",
            "slot",
            "slot of job \"every\"",
        ),
        (
            "/cronslot/jobs/broken/redrive",
            "slot=%E2%28",
            "slot",
            "malformed percent-escape",
        ),
        (
            "/cronslot/jobs/every/backfill",
            "to=2026-03-08T11:00:00Z",
            "from",
            "required",
        ),
        (
            "/cronslot/jobs/every/backfill",
            "from=2026-03-08T11:00:00Z",
            "to",
            "required",
        ),
        (
            "/cronslot/jobs/every/backfill",
            "from=2026-03-08T11:00:00Z&to=2026-03-08T10:00:00Z",
            "from",
            "is after to",
        ),
        (
            "/cronslot/jobs/every/backfill",
            "from=2026-03-08&to=2026-03-08T10:00:00Z",
            "from",
            "RFC 3339",
        ),
        (
            "/cronslot/jobs/every/backfill",
            "from=2026-03-08T10:00:00Z&to=2026-03-08T10:00:00Z&dry_run=maybe",
            "dry_run",
            "not a boolean",
        ),
        (
            "/cronslot/jobs/every/pause",
            "now=1",
            "now",
            "this route takes: key",
        ),
    ] {
        let method = if path.contains("/jobs/") {
            "POST"
        } else {
            "GET"
        };
        let reply = refused(&m, req(method, path, Some(query), AUTH), Some(TOKEN));
        assert_eq!(reply.status, 400, "{path}?{query}: {}", reply.body);
        let e = error(&reply);
        assert_eq!(e.error, ErrorKind::BadRequest);
        assert_eq!(e.parameter.as_deref(), Some(parameter), "{query}");
        assert!(e.message.contains(says), "{query}: {}", e.message);
    }
}

// -------------------------------------------------------------- tokens

#[test]
fn protected_routes_need_the_token() {
    let m = manifest();
    let protected = [
        ("GET", "/cronslot/status"),
        ("GET", "/cronslot/metrics"),
        ("GET", "/cronslot/dlq"),
        ("POST", "/cronslot/jobs/every/pause"),
        ("POST", "/cronslot/jobs/every/trigger"),
        ("GET", "/cronslot/jobs/every/next"),
        // Unknown routes and jobs too: nothing is revealed without it.
        ("GET", "/cronslot/nope"),
        ("POST", "/cronslot/jobs/nope/pause"),
    ];
    for (method, path) in protected {
        for (auth, error_param) in [
            (None, None),
            (Some("Bearer wrong"), Some("invalid_token")),
            (Some("Bearer s3cret-toke"), Some("invalid_token")),
            (Some("Bearer s3cret-token-and-more"), Some("invalid_token")),
            (Some("Basic s3cret-token"), Some("invalid_request")),
            (Some("s3cret-token"), Some("invalid_request")),
        ] {
            let reply = refused(&m, req(method, path, None, auth), Some(TOKEN));
            assert_eq!(reply.status, 401, "{method} {path} {auth:?}");
            let challenge = reply.header("WWW-Authenticate").unwrap();
            assert!(
                challenge.starts_with("Bearer realm=\"cronslot\""),
                "{challenge}"
            );
            if let Some(p) = error_param {
                assert!(challenge.contains(&format!("error=\"{p}\"")), "{challenge}");
            }
            assert_eq!(error(&reply).error, ErrorKind::Unauthorized);
            assert!(!reply.body.contains(TOKEN));
        }
        // Not configured: refused whatever is sent (fail closed).
        for token in [None, Some(""), Some("  \n")] {
            for auth in [None, Some("Bearer "), Some("Bearer s3cret-token")] {
                let reply = refused(&m, req(method, path, None, auth), token);
                assert_eq!(reply.status, 503, "{method} {path}");
                let e = error(&reply);
                assert_eq!(e.error, ErrorKind::NotConfigured);
                assert!(e.message.contains("CRONSLOT_ADMIN_TOKEN"), "{}", e.message);
            }
        }
    }
    // The right token, in any case of the scheme, with padding.
    for auth in [
        "Bearer s3cret-token",
        "bearer s3cret-token",
        "BEARER   s3cret-token  ",
    ] {
        let r = admin::route(
            P,
            &m,
            &req("GET", "/cronslot/status", None, Some(auth)),
            Some(TOKEN),
        );
        assert!(matches!(r, Some(Ok(_))), "{auth}");
    }
    // A secret stored with a trailing newline still matches.
    let r = admin::route(
        P,
        &m,
        &req("GET", "/cronslot/status", None, AUTH),
        Some("s3cret-token\n"),
    );
    assert!(matches!(r, Some(Ok(_))));
}

#[test]
fn health_needs_no_token() {
    let m = manifest();
    for token in [None, Some(TOKEN)] {
        for auth in [None, Some("Bearer wrong")] {
            let r = admin::route(P, &m, &req("GET", "/cronslot/health", None, auth), token);
            assert_eq!(r, Some(Ok(AdminRoute::Health)));
        }
    }
}

// -------------------------------------------------------------- health

#[test]
fn health_is_200_when_every_checked_job_succeeded_recently() {
    let m = manifest();
    let c = seeded(&m);
    let reply = call(&c, &m, "GET", "/cronslot/health", None, NOW);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("Cache-Control"), Some("no-store"));
    let doc: HealthDoc = body(&reply);
    assert_eq!(doc.status, HealthState::Ok);
    // every (ok) and broken (never succeeded, within its first hour).
    assert_eq!(doc.checked, 2);
    let unchecked: Vec<(&str, &str)> = doc
        .unchecked
        .iter()
        .map(|u| (u.job.as_str(), u.reason.as_str()))
        .collect();
    assert_eq!(unchecked, [("daily", "not_recorded"), ("sleepy", "paused")]);
    // A fresh store: nothing recorded, nothing stale.
    let reply = call(&coord(), &m, "GET", "/cronslot/health", None, NOW);
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[test]
fn health_is_503_with_the_stale_jobs() {
    let m = manifest();
    let c = seeded(&m);
    // 20 minutes without a success: `every` (bound 10m) is stale;
    // `broken` (bound 1h from its first slot) is not yet.
    let reply = call(
        &c,
        &m,
        "GET",
        "/cronslot/health",
        None,
        "2026-03-08T12:20:30Z",
    );
    assert_eq!(reply.status, 503, "{}", reply.body);
    let doc: HealthDoc = body(&reply);
    assert_eq!(doc.status, HealthState::Stale);
    assert_eq!(doc.stale.len(), 1);
    let s = &doc.stale[0];
    assert_eq!(s.job, "every");
    assert_eq!(s.last_success, Some(at("2026-03-08T12:00:20Z")));
    assert_eq!(s.stale_after_seconds, Some(600));
    assert_eq!(s.stale_at, Some(at("2026-03-08T12:10:20Z")));
    // Two hours on, `broken` (never succeeded) is stale too.
    let doc: HealthDoc = body(&call(
        &c,
        &m,
        "GET",
        "/cronslot/health",
        None,
        "2026-03-08T14:00:30Z",
    ));
    let stale: Vec<&str> = doc.stale.iter().map(|s| s.job.as_str()).collect();
    assert_eq!(stale, ["every", "broken"]);
    assert_eq!(doc.stale[1].last_success, None);
}

#[test]
fn health_is_503_when_a_store_fails() {
    let m = manifest();
    let store = MemoryStore::new();
    let c = CasCoordinator::new(store.clone(), 1);
    store.inject(&[cronslot_core::coord::Fault::Unavailable]);
    let reply = call(&c, &m, "GET", "/cronslot/health", None, NOW);
    assert_eq!(reply.status, 503);
    let doc: HealthDoc = body(&reply);
    assert_eq!(doc.status, HealthState::Unknown);
    assert_eq!(doc.errors.len(), 1);
    assert_eq!(doc.errors[0].job, "every");
}

// -------------------------------------------------------------- status

#[test]
fn status_reports_every_job_with_its_record() {
    let m = manifest();
    let c = seeded(&m);
    let reply = call(&c, &m, "GET", "/cronslot/status", None, NOW);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.content_type, "application/json");
    let doc: StatusDoc = body(&reply);
    assert_eq!(doc.now, at(NOW));
    let names: Vec<&str> = doc.jobs.iter().map(|j| j.job.as_str()).collect();
    assert_eq!(names, ["every", "broken", "daily", "sleepy"]);

    let every = &doc.jobs[0];
    assert!(every.recorded);
    assert_eq!(every.health, Health::Ok);
    assert!(!every.stale);
    assert_eq!(every.last_success, Some(at("2026-03-08T12:00:20Z")));
    assert_eq!(every.last_success_slot, Some(at("2026-03-08T12:00:00Z")));
    assert_eq!(every.next_slot, Some(at("2026-03-08T12:01:00Z")));
    assert_eq!((every.runs, every.succeeded, every.failed), (1, 1, 0));
    assert_eq!(every.fence, 1);
    assert_eq!(every.live_leases, 0);
    assert_eq!(every.stale_after_seconds, Some(600));
    assert_eq!(
        every.missed.len(),
        cronslot_core::coord::MissReason::ALL.len(),
        "every reason is present: {:?}",
        every.missed
    );
    assert_eq!(every.missed.get("clock_change"), Some(&0));
    assert_eq!(every.skipped.len(), 2);
    // The record is the coordinator's, exactly.
    assert_eq!(
        every.record,
        block_on(c.status(spec(&m, "every"), at(NOW))).unwrap()
    );

    let broken = &doc.jobs[1];
    assert_eq!(broken.dead_letters, 1);
    assert_eq!(broken.health, Health::NeverSucceeded);
    assert_eq!(broken.record.dead[0].last_error, "boom \"quoted\"");

    let daily = &doc.jobs[2];
    assert!(!daily.recorded);
    assert_eq!(
        daily.next_slot,
        Some(at("2026-03-08T13:00:00Z")),
        "09:00 EDT"
    );

    let sleepy = &doc.jobs[3];
    assert!(sleepy.recorded && sleepy.paused);
    assert_eq!(sleepy.health, Health::Paused);

    // One job.
    let doc: StatusDoc = body(&call(
        &c,
        &m,
        "GET",
        "/cronslot/status",
        Some("job=broken"),
        NOW,
    ));
    assert_eq!(doc.jobs.len(), 1);
    assert_eq!(doc.jobs[0].job, "broken");

    // The raw JSON has the documented field names.
    let v: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    let job = &v["jobs"][0];
    for field in [
        "job",
        "recorded",
        "paused",
        "health",
        "stale",
        "stale_after_seconds",
        "stale_at",
        "last_success",
        "next_slot",
        "live_leases",
        "fence",
        "pending",
        "runs",
        "succeeded",
        "failed",
        "missed",
        "skipped",
        "dead_letters",
        "record",
    ] {
        assert!(job.get(field).is_some(), "missing {field}: {job}");
    }
    assert_eq!(job["health"], "ok");
    assert_eq!(job["missed"]["downtime"], 0);
    assert_eq!(job["record"]["job"], "every");
}

#[test]
fn status_of_a_failing_store_is_503() {
    let m = manifest();
    let store = MemoryStore::new();
    let c = CasCoordinator::new(store.clone(), 1);
    store.inject(&[cronslot_core::coord::Fault::Unavailable]);
    let reply = call(&c, &m, "GET", "/cronslot/status", Some("job=every"), NOW);
    assert_eq!(reply.status, 503);
    assert_eq!(reply.header("Retry-After"), Some("5"));
    assert_eq!(error(&reply).error, ErrorKind::Unavailable);
}

#[test]
fn metrics_are_prometheus_text() {
    let m = manifest();
    let c = seeded(&m);
    let reply = call(&c, &m, "GET", "/cronslot/metrics", None, NOW);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, PROMETHEUS);
    assert!(reply.content_type.starts_with("text/plain; version=0.0.4"));
    let text = &reply.body;
    let lines: Vec<&str> = text.lines().collect();
    for expected in [
        "# HELP cronslot_runs_total Runs started (claims), retries included.",
        "# TYPE cronslot_runs_total counter",
        "cronslot_runs_total{job=\"every\"} 1",
        "cronslot_succeeded_total{job=\"every\"} 1",
        "cronslot_failed_total{job=\"broken\"} 1",
        "# TYPE cronslot_dead_letters gauge",
        "cronslot_dead_letters{job=\"broken\"} 1",
        "cronslot_dead_letters{job=\"every\"} 0",
        "# TYPE cronslot_missed_total counter",
        "cronslot_missed_total{job=\"every\",reason=\"downtime\"} 0",
        "cronslot_missed_total{job=\"daily\",reason=\"catch_up\"} 0",
        "cronslot_skipped_total{job=\"sleepy\",reason=\"paused\"} 1",
        "cronslot_last_success_timestamp_seconds{job=\"every\"} 1772971220",
        "cronslot_fence{job=\"every\"} 1",
        "cronslot_paused{job=\"sleepy\"} 1",
        "cronslot_paused{job=\"every\"} 0",
        "cronslot_stale{job=\"every\"} 0",
        "cronslot_stale_after_seconds{job=\"every\"} 600",
    ] {
        assert!(
            lines.contains(&expected),
            "missing {expected:?} in:\n{text}"
        );
    }
    // No success yet: no sample, not a zero.
    assert!(!text.contains("cronslot_last_success_timestamp_seconds{job=\"broken\"}"));
    // Every family has HELP and TYPE before its samples; every sample line
    // is `name{labels} value`.
    let mut declared = std::collections::BTreeSet::new();
    for line in &lines {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(["counter", "gauge"].contains(&kind));
            declared.insert(name.to_string());
        } else if !line.starts_with("# HELP ") {
            let (name, rest) = line.split_once('{').unwrap();
            assert!(declared.contains(name), "{line}");
            let (_, value) = rest.rsplit_once("} ").unwrap();
            value.parse::<f64>().unwrap();
        }
    }
    // Stale, later on.
    let later = call(
        &c,
        &m,
        "GET",
        "/cronslot/metrics",
        Some("job=every"),
        "2026-03-08T12:20:30Z",
    );
    assert!(
        later
            .body
            .lines()
            .any(|l| l == "cronslot_stale{job=\"every\"} 1"),
        "{}",
        later.body
    );
    assert!(!later.body.contains("job=\"broken\""));
}

// ----------------------------------------------------------------- dlq

#[test]
fn dlq_lists_and_redrive_sends_back() {
    let m = manifest();
    let c = seeded(&m);
    let doc: DlqDoc = body(&call(&c, &m, "GET", "/cronslot/dlq", None, NOW));
    assert_eq!(doc.dead_letters.len(), 1);
    let d = &doc.dead_letters[0];
    assert_eq!(d.job, "broken");
    assert_eq!(d.slot_id, "broken@2026-03-08T12:00:00Z");
    assert_eq!(d.letter.attempts, 1);
    assert_eq!(d.letter.last_error, "boom \"quoted\"");
    let doc: DlqDoc = body(&call(
        &c,
        &m,
        "GET",
        "/cronslot/dlq",
        Some("job=every"),
        NOW,
    ));
    assert!(doc.dead_letters.is_empty());

    // A slot that is not a dead letter: nothing redriven.
    let r = call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/broken/redrive",
        Some("slot=2026-03-08T11:00:00Z"),
        NOW,
    );
    assert_eq!(r.status, 200);
    assert_eq!(body::<RedriveDoc>(&r).redriven, Vec::<Timestamp>::new());
    let r = call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/broken/redrive",
        Some("slot=2026-03-08T12:00:00Z"),
        NOW,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let doc: RedriveDoc = body(&r);
    assert_eq!(doc.job, "broken");
    assert_eq!(doc.redriven, [at("2026-03-08T12:00:00Z")]);
    let doc: DlqDoc = body(&call(&c, &m, "GET", "/cronslot/dlq", None, NOW));
    assert!(doc.dead_letters.is_empty());
    let state = block_on(c.status(spec(&m, "broken"), at(NOW))).unwrap();
    assert_eq!(state.pending.len(), 1);
}

// -------------------------------------------------------- pause, resume

#[test]
fn pause_and_resume() {
    let m = manifest();
    let c = seeded(&m);
    let r = call(&c, &m, "POST", "/cronslot/jobs/every/pause", None, NOW);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        body::<PauseDoc>(&r),
        PauseDoc {
            job: "every".into(),
            key: None,
            paused: true,
            changed: true
        }
    );
    let again: PauseDoc = body(&call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/every/pause",
        None,
        NOW,
    ));
    assert!(again.paused && !again.changed);
    let doc: StatusDoc = body(&call(
        &c,
        &m,
        "GET",
        "/cronslot/status",
        Some("job=every"),
        NOW,
    ));
    assert!(doc.jobs[0].paused);
    let r: PauseDoc = body(&call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/every/resume",
        None,
        NOW,
    ));
    assert_eq!(
        r,
        PauseDoc {
            job: "every".into(),
            key: None,
            paused: false,
            changed: true
        }
    );
    assert!(
        !block_on(c.status(spec(&m, "every"), at(NOW)))
            .unwrap()
            .paused
    );
    // A job without a record can be paused (the record is created).
    let r: PauseDoc = body(&call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/daily/pause",
        None,
        NOW,
    ));
    assert!(r.changed);
}

// ------------------------------------------------------------ backfill

#[test]
fn backfill_queues_past_slots() {
    let m = manifest();
    let c = seeded(&m);
    let every = spec(&m, "every");
    // Move the cursor past the range first (a tick at 12:10 gives the
    // slots between their fates).
    let _ = block_on(c.claim(every, at("2026-03-08T12:10:05Z"), Trigger::Tick, "w")).unwrap();
    let q = "from=2026-03-08T12:02:00Z&to=2026-03-08T12:04:00Z";
    let dry: BackfillDoc = body(&call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/every/backfill",
        Some(&format!("{q}&dry_run=true")),
        "2026-03-08T12:10:30Z",
    ));
    let slots = vec![
        at("2026-03-08T12:02:00Z"),
        at("2026-03-08T12:03:00Z"),
        at("2026-03-08T12:04:00Z"),
    ];
    assert_eq!(
        dry,
        BackfillDoc {
            job: "every".into(),
            key: None,
            dry_run: true,
            slots: slots.clone()
        }
    );
    let r = call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/every/backfill",
        Some(q),
        "2026-03-08T12:10:30Z",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(body::<BackfillDoc>(&r).slots, slots);
    let state = block_on(c.status(every, at("2026-03-08T12:10:30Z"))).unwrap();
    assert_eq!(state.counters.backfilled, 3);

    // In the future: the core refuses, with its reason.
    let r = call(
        &c,
        &m,
        "POST",
        "/cronslot/jobs/every/backfill",
        Some("from=2026-03-08T12:00:00Z&to=2026-03-08T13:00:00Z"),
        "2026-03-08T12:10:30Z",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let e = error(&r);
    assert_eq!(e.error, ErrorKind::Backfill);
    assert!(matches!(
        e.backfill,
        Some(cronslot_core::coord::BackfillError::InFuture { .. })
    ));
    assert!(e.message.contains("in the future"), "{}", e.message);
}

// ------------------------------------------------------------- trigger

#[test]
fn triggers_are_run_by_the_worker() {
    let m = manifest();
    let c = Rc::new(seeded(&m));
    let route = match admin::route(
        P,
        &m,
        &req("POST", "/cronslot/jobs/every/trigger", None, AUTH),
        Some(TOKEN),
    ) {
        Some(Ok(route)) => route,
        other => panic!("{other:?}"),
    };
    // `execute` does not run jobs.
    let r = block_on(admin::execute(&route, &m, &*c, at(NOW)));
    assert_eq!(r.status, 500);
    assert_eq!(error(&r).error, ErrorKind::Internal);

    let every = Rc::new(spec(&m, route.job().unwrap().as_str()).clone());
    let broken = Rc::new(spec(&m, "broken").clone());
    let platform = VirtualPlatform::new(at("2026-03-08T12:01:10Z"));
    let dyn_platform: Rc<dyn Platform> = Rc::new(platform.clone());
    let slots = Arc::new(Mutex::new(Vec::new()));
    let jobs = {
        let slots = Arc::clone(&slots);
        Jobs::new()
            .register("every", move |ctx| {
                slots.lock().unwrap().push(ctx.scheduled_at());
                async { Ok(()) }
            })
            .register("broken", |_| async { Err(JobError::transient("flaky")) })
    };
    let outcome = block_on(admin::trigger_run(
        &every,
        &c,
        "admin",
        &jobs,
        &dyn_platform,
    ));
    assert_eq!(*slots.lock().unwrap(), [at("2026-03-08T12:01:00Z")]);
    assert!(
        matches!(outcome, TriggerOutcome::Succeeded { .. }),
        "{outcome:?}"
    );
    let r = admin::trigger_reply(&every, &outcome);
    assert_eq!(r.status, 200);
    let doc: TriggerDoc = body(&r);
    assert_eq!(doc.outcome, TriggerKind::Succeeded);
    assert_eq!(doc.slot_id.as_deref(), Some("every@2026-03-08T12:01:00Z"));
    assert_eq!(doc.fence, Some(2));
    assert_eq!(doc.attempt, Some(1));

    // Again: the slot already ran.
    let outcome = block_on(admin::trigger_run(
        &every,
        &c,
        "admin",
        &jobs,
        &dyn_platform,
    ));
    assert!(
        matches!(
            outcome,
            TriggerOutcome::NotClaimed(Idle::AlreadyResolved { .. })
        ),
        "{outcome:?}"
    );
    let r = admin::trigger_reply(&every, &outcome);
    assert_eq!(r.status, 409);
    let doc: TriggerDoc = body(&r);
    assert_eq!(doc.outcome, TriggerKind::NotClaimed);
    assert!(doc.message.contains("already resolved"), "{}", doc.message);

    // A failing run is recorded and reported.
    let outcome = block_on(admin::trigger_run(
        &broken,
        &c,
        "admin",
        &jobs,
        &dyn_platform,
    ));
    let r = admin::trigger_reply(&broken, &outcome);
    assert_eq!(r.status, 500, "{}", r.body);
    let doc: TriggerDoc = body(&r);
    assert_eq!(doc.outcome, TriggerKind::Failed);
    assert_eq!(doc.error.as_deref(), Some("flaky"));
    assert_eq!(doc.fate, Some(FailOutcome::Dead), "max_attempts = 1");

    let r = admin::trigger_reply(
        &every,
        &TriggerOutcome::CannotRun {
            reason: "a command job".into(),
        },
    );
    assert_eq!(r.status, 422);
    assert_eq!(body::<TriggerDoc>(&r).outcome, TriggerKind::CannotRun);
}

// ----------------------------------------------------- nothing panics

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("GET".to_string()),
        Just("POST".to_string()),
        Just("PUT".to_string()),
        Just("HEAD".to_string()),
        "[A-Za-z]{0,8}",
        any::<String>(),
    ]
}

fn path() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        Just("cronslot".to_string()),
        Just("health".to_string()),
        Just("status".to_string()),
        Just("metrics".to_string()),
        Just("dlq".to_string()),
        Just("jobs".to_string()),
        Just("every".to_string()),
        Just("broken".to_string()),
        Just("redrive".to_string()),
        Just("pause".to_string()),
        Just("resume".to_string()),
        Just("backfill".to_string()),
        Just("trigger".to_string()),
        Just("next".to_string()),
        Just("dashboard.js".to_string()),
        Just("dashboard.css".to_string()),
        Just("".to_string()),
        Just("%".to_string()),
        "[a-z%0-9]{0,6}",
        any::<String>(),
    ];
    prop_oneof![
        prop::collection::vec(segment.clone(), 0..6)
            .prop_map(|s| format!("/cronslot/{}", s.join("/"))),
        prop::collection::vec(segment, 0..6).prop_map(|s| s.join("/")),
        any::<String>(),
    ]
}

fn query() -> impl Strategy<Value = Option<String>> {
    let key = prop_oneof![
        Just("job"),
        Just("slot"),
        Just("from"),
        Just("to"),
        Just("dry_run"),
        Just("x"),
    ];
    let value = prop_oneof![
        Just("every".to_string()),
        Just("2026-03-08T12:00:00Z".to_string()),
        Just("2026-03-08T11:00:00Z".to_string()),
        Just("9999-12-31T23:59:59Z".to_string()),
        Just("-009999-01-01T00:00:00Z".to_string()),
        Just("every@2026-03-08T12:00:00Z".to_string()),
        Just("true".to_string()),
        Just("%E2%28".to_string()),
        any::<String>(),
    ];
    prop_oneof![
        Just(None),
        prop::collection::vec((key, value), 0..5).prop_map(|pairs| {
            Some(
                pairs
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("&"),
            )
        }),
        any::<String>().prop_map(Some),
    ]
}

fn authorization() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("Bearer s3cret-token".to_string())),
        any::<String>().prop_map(Some),
        any::<String>().prop_map(|t| Some(format!("Bearer {t}"))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_request_makes_the_routes_panic(
        method in method(),
        path in path(),
        query in query(),
        authorization in authorization(),
        token in prop_oneof![Just(None), Just(Some(TOKEN.to_string())), any::<String>().prop_map(Some)],
        prefix in prop_oneof![Just("/cronslot".to_string()), Just("".to_string()), any::<String>()],
    ) {
        let m = manifest();
        let c = seeded(&m);
        let r = AdminRequest {
            method: &method,
            path: &path,
            query: query.as_deref(),
            authorization: authorization.as_deref(),
            if_match: None,
            if_none_match: None,
            body: None,
        };
        match admin::route(&prefix, &m, &r, token.as_deref()) {
            None => {}
            Some(Err(reply)) => {
                prop_assert!((400..600).contains(&reply.status));
                prop_assert!(serde_json::from_str::<ErrorDoc>(&reply.body).is_ok(), "{}", reply.body);
            }
            Some(Ok(route)) => {
                let reply = block_on(admin::execute(&route, &m, &c, at(NOW)));
                prop_assert!((200..600).contains(&reply.status));
            }
        }
    }
}

/// `POST {p}/repair` pages through the jobs in name order, `REPAIR_PAGE`
/// at a time; each page says where the next starts, the last says none.
/// A store error ends the page with its reply; an unreadable record is
/// listed and passed over.
#[test]
fn repair_pages_through_the_jobs_in_name_order() {
    let mut text = String::new();
    // Written out of order: pages follow names, not the manifest.
    for i in (0..95).rev() {
        text.push_str(&format!(
            "[[job]]\nname = \"job-{i:03}\"\nschedule = \"0 * * * *\"\n"
        ));
    }
    let m = parse_manifest(&text, "cronslot.toml").unwrap();
    let page = |after: Option<&str>, fail: Option<&str>| {
        let mut asked = Vec::new();
        let reply = block_on(admin::repair_page(&m, after, |spec| {
            let name = spec.name.as_str().to_string();
            asked.push(name.clone());
            let fail = fail.map(str::to_string);
            async move {
                match fail.as_deref() {
                    Some(f) if f == name => Err(cronslot_core::coord::CoordError::Store(
                        cronslot_core::coord::StoreError::unavailable("the object is away"),
                    )),
                    Some("corrupt") if name == "job-041" => {
                        Err(cronslot_core::coord::CoordError::Store(
                            cronslot_core::coord::StoreError::new(
                                cronslot_core::coord::StoreErrorKind::Corrupt,
                                "not JSON",
                            ),
                        ))
                    }
                    _ if name == "job-044" => Ok(Some(at("2026-03-08T12:00:00Z"))),
                    _ => Ok(None),
                }
            }
        }));
        (reply, asked)
    };
    let names = |from: usize, to: usize| -> Vec<String> {
        (from..to).map(|i| format!("job-{i:03}")).collect()
    };
    let (reply, asked) = page(None, None);
    assert_eq!(reply.status, 200);
    let doc: admin::RepairDoc = body(&reply);
    assert_eq!(asked, names(0, admin::REPAIR_PAGE));
    assert_eq!(doc.checked, 40);
    assert!(doc.repaired.is_empty());
    assert_eq!(doc.next.as_deref(), Some("job-039"));
    let (reply, asked) = page(Some("job-039"), Some("corrupt"));
    let doc: admin::RepairDoc = body(&reply);
    assert_eq!(asked, names(40, 80));
    assert_eq!(
        doc.repaired,
        [admin::RepairedJob {
            job: "job-044".into(),
            wake: at("2026-03-08T12:00:00Z")
        }]
    );
    assert_eq!(doc.unreadable.len(), 1);
    assert_eq!(doc.unreadable[0].job, "job-041");
    assert_eq!(doc.next.as_deref(), Some("job-079"));
    // The last page: fewer than a page left, no next.
    let (reply, asked) = page(Some("job-079"), None);
    let doc: admin::RepairDoc = body(&reply);
    assert_eq!(asked, names(80, 95));
    assert_eq!((doc.checked, doc.next), (15, None));
    // Any text is a cursor: a job removed meanwhile, or none left.
    let (_, asked) = page(Some("job-0395"), None);
    assert_eq!(asked[0], "job-040");
    let (reply, asked) = page(Some("zzz"), None);
    let doc: admin::RepairDoc = body(&reply);
    assert!(asked.is_empty());
    assert_eq!((doc.checked, doc.next), (0, None));
    // An unavailable object ends the page: 503, naming the job.
    let (reply, asked) = page(None, Some("job-005"));
    assert_eq!(reply.status, 503);
    assert_eq!(asked, names(0, 6));
    let e = error(&reply);
    assert!(
        e.message.contains("job-005") && e.message.contains("the object is away"),
        "{}",
        e.message
    );
}

// ------------------------------------------------------------- dashboard

/// The dashboard's files need no token (they hold no data) and come with
/// a policy that allows only their own script and style; the data they
/// show still needs it.
#[test]
fn the_dashboard_is_served_without_a_token_under_a_strict_policy() {
    let m = manifest();
    let c = coord();
    for (path, kind) in [
        ("/cronslot", admin::HTML),
        ("/cronslot/", admin::HTML),
        ("/cronslot/dashboard.js", admin::JAVASCRIPT),
        ("/cronslot/dashboard.css", admin::CSS),
    ] {
        for token in [None, Some(TOKEN)] {
            let route = match admin::route(P, &m, &req("GET", path, None, None), token) {
                Some(Ok(route)) => route,
                other => panic!("{path}: {other:?}"),
            };
            let reply = block_on(admin::execute(&route, &m, &c, at(NOW)));
            assert_eq!(reply.status, 200, "{path}");
            assert_eq!(reply.content_type, kind, "{path}");
            assert_eq!(
                reply.header("Content-Security-Policy"),
                Some(admin::CONTENT_SECURITY_POLICY)
            );
            assert_eq!(reply.header("X-Content-Type-Options"), Some("nosniff"));
            assert_eq!(reply.header("X-Frame-Options"), Some("DENY"));
            assert!(!reply.body.contains(TOKEN));
        }
    }
    let policy = admin::CONTENT_SECURITY_POLICY;
    assert!(policy.contains("script-src 'self';") && policy.contains("style-src 'self';"));
    assert!(
        !policy.contains("unsafe") && !policy.contains("http"),
        "{policy}"
    );
    // The page loads its files from the prefix it is served under, and
    // has no inline script or style (the policy would refuse them).
    let page = |prefix: &str, path: &str| match admin::route(
        prefix,
        &m,
        &req("GET", path, None, None),
        None,
    ) {
        Some(Ok(route)) => block_on(admin::execute(&route, &m, &c, at(NOW))).body,
        other => panic!("{prefix} {path}: {other:?}"),
    };
    let html = page("ops/cron", "/ops/cron/");
    assert!(html.contains(r#"src="/ops/cron/dashboard.js""#), "{html}");
    assert!(html.contains(r#"href="/ops/cron/dashboard.css""#), "{html}");
    assert!(html.contains(r#"data-base="/ops/cron""#), "{html}");
    assert!(!html.contains("<script>") && !html.contains("<style") && !html.contains("style="));
    let html = page("", "/");
    assert!(html.contains(r#"src="/dashboard.js""#), "{html}");
    // A prefix with markup in it is escaped, not injected.
    let html = page("/a\"<b>", "/a\"<b>/");
    assert!(html.contains("/a&quot;&lt;b&gt;/dashboard.js"), "{html}");
    // Only GET.
    let reply = refused(&m, req("POST", "/cronslot/", None, None), None);
    assert_eq!(reply.status, 405);
    // The script keeps the token in sessionStorage and never in a URL.
    let script = page(P, "/cronslot/dashboard.js");
    assert!(script.contains("sessionStorage"));
    assert!(!script.contains("localStorage") && !script.contains("innerHTML"));
    assert!(!script.contains("?token") && !script.contains("&token"));
}

/// `GET {p}/jobs/{job}/next`: the next slots from the manifest, with the
/// DST marks of a zone's transitions.
#[test]
fn next_lists_slots_with_their_dst_marks() {
    let m = parse_manifest(
        r#"
[[job]]
name = "nightly"
schedule = "30 2 * * *"
timezone = "America/New_York"

[[job]]
name = "utc"
schedule = "0 * * * *"
"#,
        "cronslot.toml",
    )
    .unwrap();
    let c = coord();
    // 2026-03-08 is New York's spring-forward day: 02:30 does not exist.
    let reply = call(
        &c,
        &m,
        "GET",
        "/cronslot/jobs/nightly/next",
        Some("count=3"),
        "2026-03-07T06:00:00Z",
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let doc: admin::NextDoc = body(&reply);
    assert_eq!(doc.timezone, "America/New_York");
    assert!(
        doc.dst.as_deref().is_some_and(|d| d.contains("gap")),
        "{doc:?}"
    );
    let kinds: Vec<(&str, &str, i32)> = doc
        .slots
        .iter()
        .map(|s| (s.local.as_str(), s.kind.as_str(), s.offset_seconds))
        .collect();
    assert_eq!(
        kinds,
        [
            ("2026-03-07T02:30", "regular", -5 * 3600),
            ("2026-03-08T02:30", "shifted_from_gap", -4 * 3600),
            ("2026-03-09T02:30", "regular", -4 * 3600),
        ]
    );
    assert_eq!(doc.slots[0].slot, at("2026-03-07T07:30:00Z"));
    assert_eq!(doc.slots[1].slot, at("2026-03-08T07:00:00Z"));
    // UTC: no DST sentence; the default count.
    let doc: admin::NextDoc = body(&call(&c, &m, "GET", "/cronslot/jobs/utc/next", None, NOW));
    assert_eq!(doc.dst, None);
    assert_eq!(doc.slots.len(), admin::DEFAULT_NEXT);
    // A count out of range names the parameter.
    for bad in ["count=0", "count=51", "count=many", "count=-1"] {
        let reply = call(&c, &m, "GET", "/cronslot/jobs/utc/next", Some(bad), NOW);
        assert_eq!(reply.status, 400, "{bad}");
        assert_eq!(error(&reply).parameter.as_deref(), Some("count"), "{bad}");
    }
}

/// Status names each job's schedule in words, and a job whose due slot
/// nobody claimed is late (the scheduler is down), until a claim takes it.
#[test]
fn status_explains_schedules_and_shows_late_jobs() {
    let m = manifest();
    let c = seeded(&m);
    let doc: StatusDoc = body(&call(&c, &m, "GET", "/cronslot/status", None, NOW));
    let daily = doc.jobs.iter().find(|j| j.job == "daily").unwrap();
    assert_eq!(daily.schedule, "0 9 * * *");
    assert_eq!(daily.timezone, "America/New_York");
    assert!(
        daily.explanation.starts_with("At 09:00"),
        "{}",
        daily.explanation
    );
    assert!(doc.jobs.iter().all(|j| j.late_since.is_none()), "{doc:?}");
    // Three minutes on and nothing has claimed `every`'s 12:01 slot.
    let late = "2026-03-08T12:03:30Z";
    let doc: StatusDoc = body(&call(
        &c,
        &m,
        "GET",
        "/cronslot/status",
        Some("job=every"),
        late,
    ));
    assert_eq!(
        doc.jobs[0].late_since,
        Some(at("2026-03-08T12:01:00Z")),
        "{doc:?}"
    );
    // Paused jobs are never late.
    let doc: StatusDoc = body(&call(
        &c,
        &m,
        "GET",
        "/cronslot/status",
        Some("job=sleepy"),
        late,
    ));
    assert_eq!(doc.jobs[0].late_since, None);
    // A claim takes the slot: not late any more.
    let every = spec(&m, "every");
    let claim = block_on(c.claim(every, at(late), Trigger::Tick, "w")).unwrap();
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    let doc: StatusDoc = body(&call(
        &c,
        &m,
        "GET",
        "/cronslot/status",
        Some("job=every"),
        late,
    ));
    assert_eq!(doc.jobs[0].late_since, None, "{doc:?}");
}

/// `GET {p}/status` pages the manifest's jobs (its order, the cursor the
/// last job's name) and reads only the page's records; `search` keeps the
/// jobs whose name holds it and says how many match.
#[test]
fn the_status_document_pages_and_searches_the_jobs() {
    let m = manifest();
    let store = MemoryStore::new();
    let c = CasCoordinator::new(store.clone(), 1);
    let now = "2026-03-08T12:00:30Z";
    let mut seen = Vec::new();
    let mut query = "limit=3".to_string();
    loop {
        let reads = store.reads();
        let reply = call(&c, &m, "GET", "/cronslot/status", Some(&query), now);
        assert_eq!(reply.status, 200, "{}", reply.body);
        let doc: StatusDoc = body(&reply);
        assert!(doc.jobs.len() <= 3);
        assert_eq!(doc.matched, Some(4));
        assert_eq!(
            store.reads() - reads,
            doc.jobs.len() as u64,
            "only the page's records are read"
        );
        seen.extend(doc.jobs.iter().map(|j| j.job.clone()));
        match doc.cursor {
            Some(cursor) => query = format!("limit=3&after={cursor}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["every", "broken", "daily", "sleepy"],
        "manifest order, each once"
    );

    let reply = call(&c, &m, "GET", "/cronslot/status", Some("search=E"), now);
    let doc: StatusDoc = body(&reply);
    let names: Vec<&str> = doc.jobs.iter().map(|j| j.job.as_str()).collect();
    assert_eq!(
        (names, doc.matched, doc.cursor),
        (vec!["every", "broken", "sleepy"], Some(3), None)
    );

    for (query, parameter) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("after=gone", "after"),
        ("page=2", "page"),
    ] {
        let reply = call(&c, &m, "GET", "/cronslot/status", Some(query), now);
        assert_eq!(reply.status, 400, "{query}: {}", reply.body);
        assert_eq!(
            error(&reply).parameter.as_deref(),
            Some(parameter),
            "{query}"
        );
    }
}
