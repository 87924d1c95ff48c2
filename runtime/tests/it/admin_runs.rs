//! The keyed runs' routes (`PUT`, `GET {p}/runs/{job}/{key}`) end to end
//! over the core's memory store: the router, the executor and a host's
//! dispatch, with the store's reads and writes counted.

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, Claim, Coordinator, MemoryStore, Schedules, Trigger};
use cronslot_core::manifest::{Manifest, parse_manifest};
use cronslot_core::schedules::{RunStatus, RunView, ScheduleKey};
use cronslot_runtime::admin::{self, AdminRequest, ErrorDoc, ErrorKind, Reply};
use jiff::Timestamp;
use serde::de::DeserializeOwned;

const MANIFEST: &str = r#"
[[job]]
name = "report"
schedule = "* * * * *"

[[job]]
name = "mail"
dynamic = true
command = ["true"]
key_retention = "90d"
"#;

const TOKEN: &str = "s3cret-token";
const NOW: &str = "2026-03-08T12:00:30Z";
const PATH: &str = "/cronslot/runs/mail/order-123";

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn manifest() -> Manifest {
    parse_manifest(MANIFEST, "cronslot.toml").unwrap()
}

fn world() -> (MemoryStore, CasCoordinator<MemoryStore>) {
    let store = MemoryStore::new();
    (store.clone(), CasCoordinator::new(store, 7))
}

/// Sends a request through the router and, when it routes, the runs'
/// executor at `now`.
fn send_at(
    c: &CasCoordinator<MemoryStore>,
    method: &str,
    path: &str,
    headers: (Option<&str>, Option<&str>),
    body: Option<&str>,
    now: &str,
) -> Reply {
    let m = manifest();
    let req = AdminRequest {
        method,
        path,
        query: None,
        authorization: Some("Bearer s3cret-token"),
        if_match: headers.0,
        if_none_match: headers.1,
        body,
    };
    match admin::route("/cronslot", &m, &req, Some(TOKEN)) {
        None => panic!("{path} is not an admin route"),
        Some(Err(reply)) => reply,
        Some(Ok(route)) => {
            assert!(route.is_run(), "{route:?}");
            block_on(admin::execute_run(&route, &m, c, at(now)))
        }
    }
}

fn enqueue(c: &CasCoordinator<MemoryStore>, body: &str) -> Reply {
    send_at(c, "PUT", PATH, (None, None), Some(body), NOW)
}

fn body<T: DeserializeOwned>(reply: &Reply) -> T {
    assert_eq!(reply.content_type, admin::JSON);
    serde_json::from_str(&reply.body).unwrap_or_else(|e| panic!("{e}: {}", reply.body))
}

/// A new key: 202 with the run id, pending, created, and where to poll it;
/// the same request again (a retry, a double click): 200 with the same run,
/// not created; a different payload: 409 naming the field and carrying the
/// run. The enqueue cost one read and one write, the duplicates one read
/// each and no write.
#[test]
fn the_first_enqueue_is_202_and_the_same_key_answers_its_run() {
    let (store, c) = world();
    let payload = r#"{"payload": {"order": 123, "to": "a@example.com"}}"#;
    let first = enqueue(&c, payload);
    assert_eq!(first.status, 202, "{}", first.body);
    assert_eq!(first.header("Location"), Some(PATH));
    let run: RunView = body(&first);
    assert_eq!(run.run, "mail/order-123@2026-03-08T12:00:00Z");
    assert_eq!((run.job.as_str(), run.key.as_str()), ("mail", "order-123"));
    assert_eq!(run.status, RunStatus::Pending);
    assert_eq!(run.created, Some(true));
    assert_eq!(run.enqueued, at(NOW));
    assert_eq!(
        (store.reads(), store.writes()),
        (1, 1),
        "an enqueue costs one read and one write"
    );
    let raw: serde_json::Value = serde_json::from_str(&first.body).unwrap();
    assert_eq!(raw["status"], "pending");
    assert_eq!(raw["created"], true);

    let again = enqueue(&c, r#"{"payload": {"to": "a@example.com", "order": 123}}"#);
    assert_eq!(again.status, 200, "{}", again.body);
    let same: RunView = body(&again);
    assert_eq!(
        (same.run.as_str(), same.created),
        (run.run.as_str(), Some(false))
    );
    assert_eq!(
        (store.reads(), store.writes()),
        (2, 1),
        "a duplicate enqueue costs one read and no write"
    );

    let other = enqueue(&c, r#"{"payload": {"order": 124}}"#);
    assert_eq!(other.status, 409, "{}", other.body);
    let doc: ErrorDoc = body(&other);
    assert_eq!(doc.error, ErrorKind::Differs);
    assert_eq!(doc.differs.as_deref(), Some(&["payload".to_string()][..]));
    assert_eq!(doc.run.map(|r| r.run), Some(run.run.clone()));
    assert!(doc.message.contains("another payload"), "{}", doc.message);
    assert_eq!(store.writes(), 1, "a conflict writes nothing");
}

/// The status through the run's life: pending, running with its fence,
/// succeeded with its instants and when the key is forgotten; an unknown
/// key is 404.
#[test]
fn the_status_follows_the_run() {
    let (_, c) = world();
    let m = manifest();
    assert_eq!(enqueue(&c, r#"{"payload": 1}"#).status, 202);
    let get = |now: &str| send_at(&c, "GET", PATH, (None, None), None, now);
    let pending: RunView = body(&get(NOW));
    assert_eq!(pending.status, RunStatus::Pending);
    assert_eq!(
        pending.created, None,
        "a status read says nothing of creation"
    );

    let template = m.template("mail").unwrap();
    let key = ScheduleKey::new("order-123").unwrap();
    let spec = block_on(c.schedule_for_claim(template, &key, at("2026-03-08T12:00:40Z")))
        .unwrap()
        .unwrap();
    let lease = match block_on(c.claim(&spec, at("2026-03-08T12:00:40Z"), Trigger::Tick, "w")) {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("the run is due at once: {other:?}"),
    };
    let running: RunView = body(&get("2026-03-08T12:00:41Z"));
    assert_eq!(
        (running.status, running.attempts, running.fence),
        (RunStatus::Running, 1, lease.fence)
    );
    block_on(c.complete(&spec, lease.fence, None, at("2026-03-08T12:00:50Z"))).unwrap();
    let done: RunView = body(&get("2026-03-08T12:01:00Z"));
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(done.finished, Some(at("2026-03-08T12:00:50Z")));
    assert_eq!(
        done.remembered_until,
        Some(at("2026-06-06T12:00:50Z")),
        "the job's key_retention, 90 days after the run ended"
    );

    let unknown = send_at(
        &c,
        "GET",
        "/cronslot/runs/mail/order-9",
        (None, None),
        None,
        NOW,
    );
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let doc: ErrorDoc = body(&unknown);
    assert!(doc.message.contains("90 days"), "{}", doc.message);
}

/// A request (method, path, `If-Match` and `If-None-Match`, body) and what
/// it must answer (status, a phrase of the body).
type Case<'a> = (
    &'a str,
    &'a str,
    (Option<&'a str>, Option<&'a str>),
    Option<&'a str>,
    u16,
    &'a str,
);

/// What a client gets wrong is refused before the store, naming it.
#[test]
fn bad_requests_are_refused_naming_what_is_wrong() {
    let (store, c) = world();
    let cases: &[Case<'_>] = &[
        (
            "PUT",
            PATH,
            (None, None),
            Some(r#"{"paylaod": 1}"#),
            400,
            "paylaod",
        ),
        (
            "PUT",
            PATH,
            (None, None),
            Some(r#"{"at": "2026-03-08T12:00:30Z"}"#),
            400,
            "whole minute",
        ),
        (
            "PUT",
            PATH,
            (Some("\"1\""), None),
            Some("{}"),
            400,
            "If-Match",
        ),
        (
            "PUT",
            PATH,
            (None, Some("*")),
            Some("{}"),
            400,
            "If-None-Match",
        ),
        (
            "PUT",
            "/cronslot/runs/mail/order%2F1",
            (None, None),
            Some("{}"),
            400,
            "key",
        ),
        (
            "PUT",
            "/cronslot/runs/report/k",
            (None, None),
            Some("{}"),
            404,
            "not dynamic",
        ),
        (
            "PUT",
            "/cronslot/runs/nope/k",
            (None, None),
            Some("{}"),
            404,
            "no job",
        ),
        ("DELETE", PATH, (None, None), None, 405, "GET, PUT"),
        ("GET", PATH, (None, None), None, 404, "never enqueued"),
    ];
    for &(method, path, headers, body_text, status, says) in cases {
        let reply = send_at(&c, method, path, headers, body_text, NOW);
        assert_eq!(reply.status, status, "{method} {path}: {}", reply.body);
        assert!(reply.body.contains(says), "{method} {path}: {}", reply.body);
    }
    assert_eq!(store.writes(), 0, "nothing refused was written");
    // An empty body is a run without a payload, due now.
    let empty = send_at(&c, "PUT", PATH, (None, None), None, NOW);
    assert_eq!(empty.status, 202, "{}", empty.body);
    let run: RunView = body(&empty);
    assert!(run.payload.is_none());
}

/// A key that names a schedule of the job is not a run: 409 with the
/// schedule's version, and the schedule is untouched.
#[test]
fn a_key_naming_a_schedule_is_refused() {
    let (_, c) = world();
    let m = manifest();
    let template = m.template("mail").unwrap();
    let key = ScheduleKey::new("order-123").unwrap();
    let spec =
        cronslot_core::schedules::ScheduleSpec::from_json(r#"{"cron": "0 9 * * *"}"#).unwrap();
    block_on(c.put_schedule(
        template,
        &key,
        spec,
        cronslot_core::coord::decide::Precondition::None,
        at(NOW),
    ))
    .unwrap();
    let reply = enqueue(&c, "{}");
    assert_eq!(reply.status, 409, "{}", reply.body);
    let doc: ErrorDoc = body(&reply);
    assert_eq!((doc.error, doc.version), (ErrorKind::Exists, Some(1)));
}

/// `GET {p}/runs/{job}`: the job's runs in key order, each as its status
/// read answers it, filtered by prefix and status, paged with a cursor;
/// a page of a few runs costs one read of the store. Bad parameters are
/// refused naming the parameter, before the store.
#[test]
fn a_jobs_runs_are_listed_a_page_at_a_time() {
    let (store, c) = world();
    for key in ["order-2", "order-1", "mail-1"] {
        let path = format!("/cronslot/runs/mail/{key}");
        let reply = send_at(&c, "PUT", &path, (None, None), Some("{}"), NOW);
        assert_eq!(reply.status, 202, "{}", reply.body);
    }
    let list = |path: &str| send_at(&c, "GET", path, (None, None), None, NOW);
    let reads = store.reads();
    let reply = list("/cronslot/runs/mail");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(store.reads() - reads, 1, "one page, one read");
    let page: admin::RunPageDoc = body(&reply);
    assert_eq!((page.job.as_str(), page.now), ("mail", at(NOW)));
    let keys = |page: &admin::RunPageDoc| -> Vec<String> {
        page.runs.iter().map(|r| r.key.clone()).collect()
    };
    assert_eq!(keys(&page), ["mail-1", "order-1", "order-2"]);
    assert_eq!(page.cursor, None);
    let status: RunView = body(&list("/cronslot/runs/mail/order-1"));
    assert_eq!(page.runs[1], status, "a listed run is its status read");

    let page: admin::RunPageDoc = body(&list("/cronslot/runs/mail?prefix=order-&limit=1"));
    assert_eq!(
        (keys(&page), page.cursor.as_deref()),
        (vec!["order-1".to_string()], Some("order-1"))
    );
    let page: admin::RunPageDoc = body(&list(
        "/cronslot/runs/mail?prefix=order-&limit=1&cursor=order-1",
    ));
    assert_eq!(keys(&page), ["order-2"]);
    let page: admin::RunPageDoc = body(&list("/cronslot/runs/mail?status=pending"));
    assert_eq!(page.runs.len(), 3);
    let page: admin::RunPageDoc = body(&list("/cronslot/runs/mail?status=dead"));
    assert_eq!((page.runs.len(), page.cursor), (0, None));

    let reads = store.reads();
    for (path, status, says) in [
        ("/cronslot/runs/mail?status=done", 400, "pending, running"),
        ("/cronslot/runs/mail?limit=1001", 400, "1 to 1000 runs"),
        ("/cronslot/runs/mail?cursor=a%2Fb", 400, "cursor"),
        ("/cronslot/runs/mail?prefix=a%20b", 400, "prefix"),
        ("/cronslot/runs/mail?label=a:b", 400, "label"),
        ("/cronslot/runs/report", 404, "not dynamic"),
    ] {
        let reply = list(path);
        assert_eq!(reply.status, status, "{path}: {}", reply.body);
        assert!(reply.body.contains(says), "{path}: {}", reply.body);
    }
    let post = send_at(&c, "POST", "/cronslot/runs/mail", (None, None), None, NOW);
    assert_eq!(
        (post.status, post.header("Allow")),
        (405, Some("GET")),
        "{}",
        post.body
    );
    assert_eq!(store.reads(), reads, "a refused listing reads nothing");
}

/// A dead keyed run is in the dead-letter list (`admin::add_dead_runs`,
/// which `GET {p}/dlq` runs on a host that keeps keyed runs): its job,
/// key, run id as slot id, attempts and last error; the list is sorted
/// with the manifest jobs' letters; a job with more dead runs than the
/// list holds says where they go on.
#[test]
fn dead_keyed_runs_are_in_the_dead_letter_list() {
    let (_, c) = world();
    let m = manifest();
    let template = m.template("mail").unwrap();
    let mut dead = Vec::new();
    for key in ["order-2", "order-1"] {
        let path = format!("/cronslot/runs/mail/{key}");
        let reply = send_at(&c, "PUT", &path, (None, None), Some("{}"), NOW);
        assert_eq!(reply.status, 202, "{}", reply.body);
        let key = ScheduleKey::new(key).unwrap();
        let now = at("2026-03-08T12:00:40Z");
        let spec = block_on(c.schedule_for_claim(template, &key, now))
            .unwrap()
            .unwrap();
        let Ok(Claim::Claimed(lease)) = block_on(c.claim(&spec, now, Trigger::Tick, "w")) else {
            panic!("the run is due at once")
        };
        let outcome = block_on(c.fail(&spec, lease.fence, "partner said 400", true, now));
        assert!(outcome.is_ok(), "{outcome:?}");
        dead.push((key.as_str().to_string(), lease.fence));
    }
    let mut doc = admin::DlqDoc::new(at(NOW), None);
    block_on(admin::add_dead_runs(
        &mut doc,
        &c,
        &[template],
        at("2026-03-08T12:01:00Z"),
    ))
    .unwrap();
    doc.sort();
    let listed: Vec<(String, Option<String>, String, u32, String)> = doc
        .dead_letters
        .iter()
        .map(|e| {
            (
                e.job.clone(),
                e.key.clone(),
                e.slot_id.clone(),
                e.letter.attempts,
                e.letter.last_error.clone(),
            )
        })
        .collect();
    let run = |key: &str| {
        let view: RunView = body(&send_at(
            &c,
            "GET",
            &format!("/cronslot/runs/mail/{key}"),
            (None, None),
            None,
            "2026-03-08T12:01:00Z",
        ));
        assert_eq!(view.status, RunStatus::Dead);
        view.run
    };
    assert_eq!(listed.len(), 2, "{listed:?}");
    for (entry, key) in listed.iter().zip(["order-1", "order-2"]) {
        assert_eq!(entry.0, "mail");
        assert_eq!(entry.1.as_deref(), Some(key));
        assert_eq!(entry.2, run(key), "the run id is the slot id");
        assert_eq!(entry.3, 1);
        assert!(entry.4.contains("partner said 400"), "{}", entry.4);
    }
    assert!(doc.more_dead_runs.is_empty());
    let json = serde_json::to_value(&doc).unwrap();
    assert_eq!(json["dead_letters"][0]["key"], "order-1");
    assert!(json.get("more_dead_runs").is_none(), "{json}");
}
