//! The schedule routes (`PUT`, `GET`, `DELETE {p}/schedules/{job}/{key}`)
//! end to end over the core's memory store: the router, the executor and
//! a host's dispatch, with the store's writes counted.

use std::rc::Rc;

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, Fault, MemoryStore, Schedules, Trigger,
};
use cronslot_core::manifest::{Manifest, parse_manifest};
use cronslot_core::schedules::ScheduleKey;
use cronslot_runtime::admin::{
    self, AdminHost, AdminRequest, BackfillDoc, ErrorDoc, ErrorKind, PauseDoc, RedriveDoc, Reply,
    ScheduleBulkDoc, ScheduleDeleteDoc, ScheduleDoc, SchedulePageDoc, ScheduleWriteDoc, TriggerDoc,
};
use cronslot_runtime::{Jobs, Platform, VirtualPlatform};
use jiff::Timestamp;
use proptest::prelude::*;
use serde::de::DeserializeOwned;

const MANIFEST: &str = r#"
[[job]]
name = "report"
schedule = "* * * * *"

[[job]]
name = "invoice"
dynamic = true
command = ["true"]
"#;

const TOKEN: &str = "s3cret-token";
const AUTH: Option<&str> = Some("Bearer s3cret-token");
const NOW: &str = "2026-03-08T12:00:30Z";
const PATH: &str = "/cronslot/schedules/invoice/tenant-1";

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn manifest() -> Manifest {
    parse_manifest(MANIFEST, "cronslot.toml").unwrap()
}

/// The memory store and a coordinator over it (clones share the data).
fn world() -> (MemoryStore, CasCoordinator<MemoryStore>) {
    let store = MemoryStore::new();
    (store.clone(), CasCoordinator::new(store, 7))
}

/// A request with its headers and body.
#[derive(Default, Clone, Copy)]
struct Ask<'a> {
    if_match: Option<&'a str>,
    if_none_match: Option<&'a str>,
    body: Option<&'a str>,
}

fn send(
    c: &CasCoordinator<MemoryStore>,
    m: &Manifest,
    method: &str,
    path: &str,
    ask: Ask<'_>,
) -> Reply {
    let (path, query) = match path.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path, None),
    };
    let req = AdminRequest {
        method,
        path,
        query,
        authorization: AUTH,
        if_match: ask.if_match,
        if_none_match: ask.if_none_match,
        body: ask.body,
    };
    match admin::route("/cronslot", m, &req, Some(TOKEN)) {
        None => panic!("{path} is not an admin route"),
        Some(Err(reply)) => reply,
        Some(Ok(route)) => {
            assert!(route.is_schedule(), "{route:?}");
            block_on(admin::execute_schedule(&route, m, c, at(NOW)))
        }
    }
}

fn put(c: &CasCoordinator<MemoryStore>, m: &Manifest, body: &str) -> Reply {
    send(
        c,
        m,
        "PUT",
        PATH,
        Ask {
            body: Some(body),
            ..Ask::default()
        },
    )
}

fn get(c: &CasCoordinator<MemoryStore>, m: &Manifest) -> Reply {
    send(c, m, "GET", PATH, Ask::default())
}

fn body<T: DeserializeOwned>(reply: &Reply) -> T {
    assert_eq!(reply.content_type, admin::JSON);
    serde_json::from_str(&reply.body).unwrap_or_else(|e| panic!("{e}: {}", reply.body))
}

fn error(reply: &Reply) -> ErrorDoc {
    body(reply)
}

fn written(reply: &Reply) -> ScheduleWriteDoc {
    body(reply)
}

#[test]
fn a_put_creates_then_changes_and_an_equal_put_writes_nothing() {
    let m = manifest();
    let (store, c) = world();
    let r = put(&c, &m, r#"{"cron": "0 9 * * *"}"#);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.header("etag"), Some("\"1\""));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(
        written(&r),
        ScheduleWriteDoc {
            job: "invoice".into(),
            key: "tenant-1".into(),
            version: 1,
            changed: true,
        }
    );
    assert_eq!(store.writes(), 1);

    // The same spec again (with its defaults spelt out): nothing written.
    let r = put(&c, &m, r#"{"cron": "0 9 * * *", "timezone": "UTC"}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("etag"), Some("\"1\""));
    let doc = written(&r);
    assert_eq!((doc.version, doc.changed), (1, false));
    assert_eq!(store.writes(), 1, "an unchanged PUT writes nothing");

    let r = put(&c, &m, r#"{"cron": "0 10 * * *"}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("etag"), Some("\"2\""));
    let doc = written(&r);
    assert_eq!((doc.version, doc.changed), (2, true));
    assert_eq!(store.writes(), 2);
}

#[test]
fn a_put_replaces_the_whole_spec() {
    let m = manifest();
    let (_, c) = world();
    let full = r#"{"cron":"0 9 * * *","timezone":"Europe/Berlin","payload":{"tenant":1},"labels":{"plan":"pro"},"paused":true}"#;
    assert_eq!(put(&c, &m, full).status, 201);
    let doc: ScheduleDoc = body(&get(&c, &m));
    assert_eq!(doc.spec.timezone, "Europe/Berlin");
    assert!(
        doc.spec.paused && doc.next.is_empty(),
        "paused: no next slots"
    );
    assert_eq!(doc.spec.labels.get("plan").map(String::as_str), Some("pro"));

    let r = put(&c, &m, r#"{"cron":"0 9 * * *"}"#);
    assert_eq!((r.status, written(&r).version), (200, 2));
    let r = get(&c, &m);
    let doc: ScheduleDoc = body(&r);
    assert_eq!(doc.spec.timezone, "UTC", "a field not sent is not kept");
    assert!(doc.spec.labels.is_empty() && doc.spec.payload.is_none());
    assert!(!doc.spec.paused);
    let raw: serde_json::Value = body(&r);
    assert_eq!(
        raw["spec"],
        serde_json::json!({"cron": "0 9 * * *", "timezone": "UTC", "paused": false})
    );
}

#[test]
fn if_match_writes_only_over_its_version() {
    let m = manifest();
    let (store, c) = world();
    put(&c, &m, r#"{"cron":"0 9 * * *"}"#);
    put(&c, &m, r#"{"cron":"0 10 * * *"}"#);
    let writes = store.writes();
    let stale = Ask {
        if_match: Some("\"1\""),
        body: Some(r#"{"cron":"0 11 * * *"}"#),
        ..Ask::default()
    };
    let r = send(&c, &m, "PUT", PATH, stale);
    assert_eq!(r.status, 412, "{}", r.body);
    assert_eq!(r.header("etag"), Some("\"2\""));
    let e = error(&r);
    assert_eq!(
        (e.error, e.version),
        (ErrorKind::PreconditionFailed, Some(2))
    );
    assert!(e.message.contains("version 1") && e.message.contains("version 2"));
    assert_eq!(store.writes(), writes, "a refused write writes nothing");

    let r = send(
        &c,
        &m,
        "PUT",
        PATH,
        Ask {
            if_match: Some("\"2\""),
            ..stale
        },
    );
    assert_eq!((r.status, written(&r).version), (200, 3), "{}", r.body);

    for bad in ["*", "\"1\", \"2\"", "W/\"3\"", "three", "+3"] {
        let r = send(
            &c,
            &m,
            "PUT",
            PATH,
            Ask {
                if_match: Some(bad),
                ..stale
            },
        );
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(error(&r).parameter.as_deref(), Some("If-Match"));
    }
}

#[test]
fn if_none_match_creates_only() {
    let m = manifest();
    let (store, c) = world();
    let create = Ask {
        if_none_match: Some("*"),
        body: Some(r#"{"cron":"0 9 * * *"}"#),
        ..Ask::default()
    };
    let r = send(&c, &m, "PUT", PATH, create);
    assert_eq!(r.status, 201, "{}", r.body);
    let r = send(&c, &m, "PUT", PATH, create);
    assert_eq!(r.status, 409, "{}", r.body);
    let e = error(&r);
    assert_eq!((e.error, e.version), (ErrorKind::Exists, Some(1)));
    assert_eq!(r.header("etag"), Some("\"1\""));
    assert_eq!(store.writes(), 1);

    let both = Ask {
        if_match: Some("\"1\""),
        ..create
    };
    assert_eq!(send(&c, &m, "PUT", PATH, both).status, 400);
    let tagged = Ask {
        if_none_match: Some("\"1\""),
        ..create
    };
    assert_eq!(send(&c, &m, "PUT", PATH, tagged).status, 400);
}

#[test]
fn jobs_keys_and_specs_are_checked_before_the_store() {
    let m = manifest();
    let (store, c) = world();
    let spec = Ask {
        body: Some(r#"{"cron":"0 9 * * *"}"#),
        ..Ask::default()
    };
    let r = send(&c, &m, "PUT", "/cronslot/schedules/nope/k", spec);
    assert_eq!(r.status, 404, "{}", r.body);
    let e = error(&r);
    assert!(e.message.contains("\"nope\"") && e.message.contains("invoice"));
    let r = send(&c, &m, "PUT", "/cronslot/schedules/report/k", spec);
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(error(&r).message.contains("job \"report\" is not dynamic"));

    for bad in ["a@b", "tenant%2F1", &"k".repeat(201)] {
        let path = format!("/cronslot/schedules/invoice/{bad}");
        let r = send(&c, &m, "PUT", &path, spec);
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        let e = error(&r);
        assert_eq!(e.parameter.as_deref(), Some("key"));
        assert!(
            e.message.contains("letters, digits and - _ . :"),
            "{}",
            e.message
        );
    }

    let r = put(&c, &m, r#"{"cron":"0 9 * *","timezone":"Mars/Olympus"}"#);
    assert_eq!(r.status, 400, "{}", r.body);
    let e = error(&r);
    assert_eq!(e.error, ErrorKind::Spec);
    let fields: Vec<String> = e
        .problems
        .unwrap_or_default()
        .into_iter()
        .map(|p| p.field)
        .collect();
    assert_eq!(fields, ["timezone", "cron"]);
    assert!(e.message.contains("Mars/Olympus"));

    let r = put(&c, &m, r#"{"cron":"0 9 * * *","timezon":"UTC"}"#);
    assert_eq!(r.status, 400);
    assert!(error(&r).message.contains("timezon"));
    for empty in [None, Some(""), Some("  ")] {
        let r = send(
            &c,
            &m,
            "PUT",
            PATH,
            Ask {
                body: empty,
                ..Ask::default()
            },
        );
        assert_eq!(r.status, 400, "{empty:?}");
        assert_eq!(error(&r).problems.map(|p| p.len()), Some(1));
    }

    let r = send(&c, &m, "POST", PATH, spec);
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("GET, PUT, DELETE"))
    );
    // The listing's query, checked before the store: each bad parameter
    // named.
    for (query, parameter) in [
        ("/cronslot/schedules/invoice?limit=0", "limit"),
        ("/cronslot/schedules/invoice?limit=1001", "limit"),
        ("/cronslot/schedules/invoice?limit=ten", "limit"),
        ("/cronslot/schedules/invoice?prefix=a%2Fb", "prefix"),
        ("/cronslot/schedules/invoice?label=plan", "label"),
        ("/cronslot/schedules/invoice?label=%3Apro", "label"),
        ("/cronslot/schedules/invoice?cursor=a%40b", "cursor"),
        ("/cronslot/schedules/invoice?sort=key", "sort"),
    ] {
        let r = send(&c, &m, "GET", query, Ask::default());
        assert_eq!(r.status, 400, "{query}: {}", r.body);
        assert_eq!(error(&r).parameter.as_deref(), Some(parameter), "{query}");
    }
    let r = send(
        &c,
        &m,
        "DELETE",
        "/cronslot/schedules/invoice",
        Ask::default(),
    );
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, POST")));
    let r = send(&c, &m, "GET", "/cronslot/schedules/report", Ask::default());
    assert_eq!(r.status, 404, "not dynamic: {}", r.body);
    assert_eq!(store.writes(), 0, "nothing refused reached the store");
}

#[test]
fn a_get_shows_the_spec_next_slots_and_status() {
    let m = manifest();
    let (store, c) = world();
    let r = get(&c, &m);
    assert_eq!(r.status, 404, "never created: {}", r.body);
    assert_eq!(error(&r).version, None);

    put(
        &c,
        &m,
        r#"{"cron":"0 9 * * *","timezone":"America/New_York","payload":{"t":1}}"#,
    );
    let r = get(&c, &m);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("etag"), Some("\"1\""));
    let doc: ScheduleDoc = body(&r);
    assert_eq!(
        (doc.job.as_str(), doc.key.as_str()),
        ("invoice", "tenant-1")
    );
    assert_eq!((doc.version, doc.changed_at), (1, at(NOW)));
    assert_eq!(
        doc.spec.payload.as_ref().map(|p| p.get()),
        Some(r#"{"t":1}"#)
    );
    // 09:00 in New York: 13:00 UTC under DST (from 2026-03-08), 14:00 before.
    assert_eq!(doc.next.len(), 10);
    assert_eq!(doc.next[0].slot, at("2026-03-08T13:00:00Z"));
    assert_eq!(doc.next[9].slot, at("2026-03-17T13:00:00Z"));
    assert_eq!(doc.last_claimed, None);
    assert_eq!(doc.status.live_leases, 0);
    assert_eq!(doc.status.timezone, "America/New_York");
    assert!(doc.status.recorded);
    assert_eq!(doc.status.record.job, "invoice/tenant-1");

    // A run claims its slot: the lease and the claimed slot show.
    let template = m.template("invoice").unwrap();
    let key = ScheduleKey::new("tenant-1").unwrap();
    let spec = block_on(c.schedule_for_claim(template, &key, at("2026-03-08T13:00:05Z")))
        .unwrap()
        .unwrap();
    let claim = block_on(c.claim(&spec, at("2026-03-08T13:00:05Z"), Trigger::Tick, "w")).unwrap();
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    let reads = store.reads();
    let writes = store.writes();
    let doc: ScheduleDoc = body(&send(&c, &m, "GET", PATH, Ask::default()));
    assert_eq!(doc.last_claimed, Some(at("2026-03-08T13:00:00Z")));
    assert_eq!((doc.status.live_leases, doc.status.fence), (1, 1));
    assert_eq!(
        (store.reads() - reads, store.writes() - writes),
        (1, 0),
        "a GET is one read"
    );
}

/// A page shows each live schedule with its version and next slot
/// (none while paused), in key order, with the cursor of the next page.
#[test]
fn a_listing_pages_with_next_slots() {
    let (_, c) = world();
    let m = manifest();
    for (key, body) in [
        ("b", r#"{"cron":"0 9 * * *","paused":true}"#),
        ("a", r#"{"cron":"0 9 * * *","timezone":"Europe/Berlin"}"#),
        ("c", r#"{"at":"2026-03-09T00:00:00Z"}"#),
    ] {
        let path = format!("/cronslot/schedules/invoice/{key}");
        let ask = Ask {
            body: Some(body),
            ..Ask::default()
        };
        assert_eq!(send(&c, &m, "PUT", &path, ask).status, 201);
    }
    let r = send(
        &c,
        &m,
        "GET",
        "/cronslot/schedules/invoice?limit=2",
        Ask::default(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let page: SchedulePageDoc = body(&r);
    let shown: Vec<(&str, u64, Option<Timestamp>)> = page
        .schedules
        .iter()
        .map(|s| (s.key.as_str(), s.version, s.next))
        .collect();
    // 09:00 in Berlin is 08:00 UTC on 2026-03-09.
    assert_eq!(
        shown,
        [("a", 1, Some(at("2026-03-09T08:00:00Z"))), ("b", 1, None)]
    );
    assert_eq!(page.cursor.as_deref(), Some("b"));
    let r = send(
        &c,
        &m,
        "GET",
        "/cronslot/schedules/invoice?cursor=b",
        Ask::default(),
    );
    let page: SchedulePageDoc = body(&r);
    assert_eq!(page.schedules.len(), 1);
    assert_eq!(page.schedules[0].key, "c");
    assert_eq!(page.schedules[0].next, Some(at("2026-03-09T00:00:00Z")));
    assert_eq!(page.cursor, None);
}

#[test]
fn a_delete_leaves_a_tombstone_and_a_re_create_continues_its_version() {
    let m = manifest();
    let (store, c) = world();
    let r = send(&c, &m, "DELETE", PATH, Ask::default());
    assert_eq!(r.status, 404, "nothing to delete: {}", r.body);

    put(&c, &m, r#"{"cron":"0 9 * * *"}"#);
    let wrong = Ask {
        if_match: Some("\"7\""),
        ..Ask::default()
    };
    let r = send(&c, &m, "DELETE", PATH, wrong);
    assert_eq!(r.status, 412, "{}", r.body);
    assert_eq!(error(&r).version, Some(1));
    assert_eq!(store.writes(), 1);

    let r = send(
        &c,
        &m,
        "DELETE",
        PATH,
        Ask {
            if_match: Some("\"1\""),
            ..Ask::default()
        },
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let doc: ScheduleDeleteDoc = body(&r);
    assert_eq!(doc.version, 2);

    let r = get(&c, &m);
    assert_eq!(r.status, 404, "a tombstone is not found: {}", r.body);
    let e = error(&r);
    assert_eq!(e.version, Some(2));
    assert!(e.message.contains("deleted"), "{}", e.message);
    assert_eq!(send(&c, &m, "DELETE", PATH, Ask::default()).status, 404);

    // A version from before the delete matches nothing.
    let r = send(
        &c,
        &m,
        "PUT",
        PATH,
        Ask {
            if_match: Some("\"1\""),
            body: Some(r#"{"cron":"0 9 * * *"}"#),
            ..Ask::default()
        },
    );
    assert_eq!(r.status, 412, "{}", r.body);
    let r = put(&c, &m, r#"{"cron":"0 9 * * *"}"#);
    assert_eq!((r.status, written(&r).version), (201, 3), "{}", r.body);
}

#[test]
fn a_store_failure_is_503_with_retry_after() {
    let m = manifest();
    let (store, c) = world();
    store.inject(&[Fault::Unavailable]);
    let r = put(&c, &m, r#"{"cron":"0 9 * * *"}"#);
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("5"));
    let e = error(&r);
    assert_eq!(e.error, ErrorKind::Unavailable);
    assert!(
        e.message
            .contains("schedule \"tenant-1\" of job \"invoice\"")
    );
}

/// A host over the memory store; `serves` says whether it answers the
/// schedule routes (a host that does not keeps the trait's default).
struct Host {
    coordinator: Rc<CasCoordinator<MemoryStore>>,
    jobs: Jobs,
}

struct Bare(Host);

macro_rules! host_basics {
    () => {
        type Coordinator = CasCoordinator<MemoryStore>;
        fn coordinator(&self) -> &Rc<CasCoordinator<MemoryStore>> {
            &self.host().coordinator
        }
        fn trigger_owner(&self) -> String {
            "test".into()
        }
        fn jobs(&self) -> &Jobs {
            &self.host().jobs
        }
        fn platform(&self) -> Rc<dyn Platform> {
            Rc::new(VirtualPlatform::new(at(NOW)))
        }
        fn openapi(&self) -> Option<&'static str> {
            None
        }
        async fn repair_wake(&self, _job: &str) -> Result<Option<Timestamp>, CoordError> {
            Ok(None)
        }
    };
}

impl Host {
    fn host(&self) -> &Host {
        self
    }
}

impl Bare {
    fn host(&self) -> &Host {
        &self.0
    }
}

impl AdminHost for Host {
    host_basics!();
    async fn schedule_route(
        &self,
        route: &admin::AdminRoute,
        manifest: &Manifest,
        now: Timestamp,
    ) -> Reply {
        admin::execute_schedule(route, manifest, &*self.coordinator, now).await
    }
    async fn schedule_spec(
        &self,
        manifest: &Manifest,
        job: &cronslot_core::manifest::JobName,
        key: &ScheduleKey,
    ) -> Result<cronslot_core::manifest::JobSpec, Reply> {
        admin::schedule_job_spec(&*self.coordinator, manifest, job, key).await
    }
    async fn dead_runs(
        &self,
        doc: &mut admin::DlqDoc,
        templates: &[&cronslot_core::manifest::JobTemplate],
        now: Timestamp,
    ) -> Result<(), Reply> {
        admin::add_dead_runs(doc, &*self.coordinator, templates, now).await
    }
}

impl AdminHost for Bare {
    host_basics!();
}

#[test]
fn dispatch_sends_schedule_routes_to_the_host() {
    let m = manifest();
    let new_host = || Host {
        coordinator: Rc::new(CasCoordinator::new(MemoryStore::new(), 1)),
        jobs: Jobs::new(),
    };
    let req = AdminRequest {
        method: "PUT",
        path: PATH,
        query: None,
        authorization: AUTH,
        if_match: None,
        if_none_match: None,
        body: Some(r#"{"cron":"0 9 * * *"}"#),
    };
    let route = admin::route("/cronslot", &m, &req, Some(TOKEN))
        .unwrap()
        .unwrap();
    let host = new_host();
    let r = block_on(admin::dispatch(&route, &m, &host, at(NOW)));
    assert_eq!(r.status, 201, "{}", r.body);

    let bare = Bare(new_host());
    let r = block_on(admin::dispatch(&route, &m, &bare, at(NOW)));
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(error(&r).message.contains("does not serve the schedules"));
    let key = ScheduleKey::new("tenant-1").unwrap();
    let stored = block_on(
        bare.0
            .coordinator
            .schedule(m.template("invoice").unwrap(), &key),
    )
    .unwrap();
    assert!(
        stored.is_none(),
        "a host that serves no schedules writes none"
    );
}

/// Sends `POST path?query` through the router and [`admin::dispatch`].
fn post(host: &impl AdminHost, m: &Manifest, path: &str, query: &str) -> Reply {
    let req = AdminRequest {
        method: "POST",
        path,
        query: Some(query),
        authorization: AUTH,
        if_match: None,
        if_none_match: None,
        body: None,
    };
    match admin::route("/cronslot", m, &req, Some(TOKEN)) {
        None => panic!("{path} is not an admin route"),
        Some(Err(reply)) => reply,
        Some(Ok(route)) => block_on(admin::dispatch(&route, m, host, at(NOW))),
    }
}

/// A job's operations with `?key=` act on that schedule's record alone,
/// with the schedule's spec: pause and resume, trigger, backfill and
/// redrive; a key of a static job, of no schedule, or not a key is
/// refused, and a host without schedules says so.
#[test]
fn a_jobs_operations_take_a_schedules_key() {
    let m = manifest();
    let host = Host {
        coordinator: Rc::new(CasCoordinator::new(MemoryStore::new(), 1)),
        jobs: Jobs::new(),
    };
    let c = &*host.coordinator;
    for key in ["tenant-1", "tenant-2"] {
        let path = format!("/cronslot/schedules/invoice/{key}");
        let ask = Ask {
            body: Some(r#"{"cron":"0 * * * *","payload":{"n":1}}"#),
            ..Ask::default()
        };
        assert_eq!(send(c, &m, "PUT", &path, ask).status, 201);
    }

    let r = post(&host, &m, "/cronslot/jobs/invoice/pause", "key=tenant-1");
    assert_eq!(r.status, 200, "{}", r.body);
    let doc: PauseDoc = body(&r);
    assert_eq!(
        (
            doc.job.as_str(),
            doc.key.as_deref(),
            doc.paused,
            doc.changed
        ),
        ("invoice", Some("tenant-1"), true, true)
    );
    let paused = |key: &str| -> bool {
        let path = format!("/cronslot/schedules/invoice/{key}");
        let doc: ScheduleDoc = body(&send(c, &m, "GET", &path, Ask::default()));
        doc.status.paused
    };
    assert!(paused("tenant-1"));
    assert!(!paused("tenant-2"), "the other schedule is not paused");
    let r = post(&host, &m, "/cronslot/jobs/invoice/resume", "key=tenant-1");
    assert!(body::<PauseDoc>(&r).changed);
    assert!(!paused("tenant-1"));

    let r = post(
        &host,
        &m,
        "/cronslot/jobs/invoice/backfill",
        "key=tenant-2&from=2026-03-08T09:00:00Z&to=2026-03-08T11:00:00Z&dry_run=true",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let doc: BackfillDoc = body(&r);
    assert_eq!(doc.key.as_deref(), Some("tenant-2"));
    assert_eq!(doc.slots.len(), 3, "09:00, 10:00, 11:00");

    let r = post(&host, &m, "/cronslot/jobs/invoice/trigger", "key=tenant-2");
    let doc: TriggerDoc = body(&r);
    assert!(
        doc.slot_id
            .as_deref()
            .is_some_and(|id| id.starts_with("invoice/tenant-2@")),
        "{}",
        r.body
    );

    let r = post(&host, &m, "/cronslot/jobs/invoice/redrive", "key=tenant-2");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(body::<RedriveDoc>(&r).key.as_deref(), Some("tenant-2"));
    let r = post(
        &host,
        &m,
        "/cronslot/jobs/invoice/redrive",
        "key=tenant-2&slot=invoice/tenant-1@2026-03-08T11:00:00Z",
    );
    assert_eq!(
        (r.status, error(&r).parameter.as_deref()),
        (400, Some("slot"))
    );

    let r = post(&host, &m, "/cronslot/jobs/report/pause", "key=tenant-1");
    assert_eq!(r.status, 404, "a static job has no schedules: {}", r.body);
    let r = post(&host, &m, "/cronslot/jobs/invoice/pause", "key=nobody");
    assert_eq!(r.status, 404, "{}", r.body);
    let r = post(&host, &m, "/cronslot/jobs/invoice/pause", "key=a%2Fb");
    assert_eq!(
        (r.status, error(&r).parameter.as_deref()),
        (400, Some("key"))
    );
    let r = post(&host, &m, "/cronslot/jobs/invoice/pause", "");
    assert_eq!(
        r.status, 404,
        "a dynamic job has no record of its own: {}",
        r.body
    );
    let bare = Bare(host);
    let r = post(&bare, &m, "/cronslot/jobs/invoice/pause", "key=tenant-1");
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(error(&r).message.contains("does not serve the schedules"));
}

/// `POST {p}/schedules/{job}`: each entry answered as its own `PUT`,
/// in order, the bad ones 400 without stopping the others; the store is
/// read once per record and written once per changed schedule.
#[test]
fn a_bulk_post_answers_each_entry_in_order() {
    let m = manifest();
    let (store, c) = world();
    assert_eq!(put(&c, &m, r#"{"cron":"0 9 * * *"}"#).status, 201);
    let (reads, writes) = (store.reads(), store.writes());
    let body = r#"{"schedules": [
        {"key": "tenant-1", "spec": {"cron": "0 9 * * *"}},
        {"key": "tenant-2", "spec": {"cron": "0 9 * * *", "timezone": "Europe/Berlin"}},
        {"key": "tenant-3", "spec": {"cron": "0 9 * * *"}, "if_match": 2},
        {"key": "tenant-1", "spec": {"cron": "0 10 * * *"}, "if_match": 1},
        {"key": "bad key", "spec": {"cron": "0 9 * * *"}},
        {"key": "tenant-4", "spec": {"cron": "0 9 * * *", "timezon": "UTC"}},
        {"key": "tenant-5", "spec": {"at": "2027-01-05T09:00:00Z"}, "create_only": true}
    ]}"#;
    let r = send(
        &c,
        &m,
        "POST",
        "/cronslot/schedules/invoice",
        Ask {
            body: Some(body),
            ..Ask::default()
        },
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let doc: ScheduleBulkDoc = self::body(&r);
    let statuses: Vec<(Option<&str>, u16, Option<u64>)> = doc
        .results
        .iter()
        .map(|r| (r.key.as_deref(), r.status, r.version))
        .collect();
    assert_eq!(
        statuses,
        [
            (Some("tenant-1"), 200, Some(1)),
            (Some("tenant-2"), 201, Some(1)),
            (Some("tenant-3"), 412, None),
            (Some("tenant-1"), 200, Some(2)),
            (Some("bad key"), 400, None),
            (Some("tenant-4"), 400, None),
            (Some("tenant-5"), 201, Some(1)),
        ]
    );
    assert_eq!(
        (doc.created, doc.changed, doc.unchanged, doc.failed),
        (2, 1, 1, 3)
    );
    let misspelt = doc.results[5].error.as_ref().expect("refused");
    assert_eq!(misspelt.parameter.as_deref(), Some("schedules[5].spec"));
    assert!(misspelt.message.contains("timezon"), "{}", misspelt.message);
    // One read of the four keys of the bulk and one write each of the two
    // it created; the second write of tenant-1 went alone after it (a read
    // and a write).
    assert_eq!(store.reads() - reads, 4 + 1);
    assert_eq!(store.writes() - writes, 2 + 1);
}

/// A bulk body that is not a list of 1 to 1,000 entries is refused
/// whole, and so are headers the entries carry themselves.
#[test]
fn a_bulk_post_that_is_not_a_list_is_refused_whole() {
    let m = manifest();
    let (store, c) = world();
    let post = |body: &str, if_match: Option<&str>| {
        send(
            &c,
            &m,
            "POST",
            "/cronslot/schedules/invoice",
            Ask {
                body: Some(body),
                if_match,
                ..Ask::default()
            },
        )
    };
    for body in ["", "[]", r#"{"schedules": []}"#, r#"{"schedules": 3}"#] {
        let r = post(body, None);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    let one = r#"{"schedules": [{"key": "a", "spec": {"cron": "0 9 * * *"}}]}"#;
    let r = post(one, Some("\"1\""));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(error(&r).parameter.as_deref(), Some("If-Match"));
    let r = send(
        &c,
        &m,
        "POST",
        "/cronslot/schedules/report",
        Ask {
            body: Some(one),
            ..Ask::default()
        },
    );
    assert_eq!(r.status, 404, "a static job has no schedules: {}", r.body);
    let r = send(
        &c,
        &m,
        "PATCH",
        "/cronslot/schedules/invoice",
        Ask::default(),
    );
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(store.writes(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// No header or body makes the schedule routes panic; every refusal
    /// is an error document.
    #[test]
    fn no_schedule_request_panics(
        method in prop_oneof![Just("GET"), Just("PUT"), Just("DELETE"), Just("POST")],
        key in prop_oneof![Just("tenant-1".to_string()), "[a-z%@/.:0-9]{0,8}", any::<String>()],
        if_match in proptest::option::of(prop_oneof![Just("\"1\"".to_string()), any::<String>()]),
        if_none_match in proptest::option::of(prop_oneof![Just("*".to_string()), any::<String>()]),
        body in proptest::option::of(prop_oneof![
            Just(r#"{"cron":"0 9 * * *"}"#.to_string()),
            Just(r#"{"at":"2027-01-01T00:00:00Z","payload":[1,2]}"#.to_string()),
            any::<String>(),
        ]),
    ) {
        let m = manifest();
        let (_, c) = world();
        let path = format!("/cronslot/schedules/invoice/{key}");
        let req = AdminRequest {
            method,
            path: &path,
            query: None,
            authorization: AUTH,
            if_match: if_match.as_deref(),
            if_none_match: if_none_match.as_deref(),
            body: body.as_deref(),
        };
        match admin::route("/cronslot", &m, &req, Some(TOKEN)) {
            None => {}
            Some(Err(reply)) => {
                prop_assert!((400..600).contains(&reply.status));
                prop_assert!(serde_json::from_str::<ErrorDoc>(&reply.body).is_ok(), "{}", reply.body);
            }
            Some(Ok(route)) => {
                let reply = block_on(admin::execute_schedule(&route, &m, &c, at(NOW)));
                prop_assert!((200..600).contains(&reply.status));
            }
        }
    }
}

/// `GET {p}/dlq` through a host's dispatch: a host that keeps keyed runs
/// lists a dynamic job's dead run (with its key) beside the manifest
/// jobs' letters, `?job=` takes the dynamic job, and a host that does not
/// (the trait's default, the Worker's) lists the manifest jobs' alone.
#[test]
fn the_dead_letter_list_holds_dead_keyed_runs_on_a_host_that_keeps_them() {
    use cronslot_core::schedules::RunRequest;

    let m = manifest();
    let host = Host {
        coordinator: Rc::new(CasCoordinator::new(MemoryStore::new(), 1)),
        jobs: Jobs::new(),
    };
    let c = &host.coordinator;
    let template = m.template("invoice").unwrap();
    let key = ScheduleKey::new("order-5").unwrap();
    let now = at(NOW);
    let request = RunRequest {
        payload: None,
        at: None,
    };
    block_on(cronslot_core::coord::Runs::enqueue_run(
        &**c, template, &key, &request, now,
    ))
    .unwrap();
    let spec = block_on(c.schedule_for_claim(template, &key, now))
        .unwrap()
        .unwrap();
    let Ok(Claim::Claimed(lease)) = block_on(c.claim(&spec, now, Trigger::Tick, "w")) else {
        panic!("the run is due at once")
    };
    block_on(c.fail(&spec, lease.fence, "refused", true, now)).unwrap();
    let dlq = |host: &dyn Fn(&admin::AdminRoute) -> Reply, query: Option<&str>| {
        let req = AdminRequest {
            method: "GET",
            path: "/cronslot/dlq",
            query,
            authorization: AUTH,
            if_match: None,
            if_none_match: None,
            body: None,
        };
        let route = admin::route("/cronslot", &m, &req, Some(TOKEN))
            .unwrap()
            .unwrap();
        let reply = host(&route);
        assert_eq!(reply.status, 200, "{}", reply.body);
        body::<admin::DlqDoc>(&reply)
    };
    let keeps = |route: &admin::AdminRoute| block_on(admin::dispatch(route, &m, &host, now));
    let doc = dlq(&keeps, None);
    assert_eq!(doc.dead_letters.len(), 1, "{doc:?}");
    let entry = &doc.dead_letters[0];
    assert_eq!(
        (entry.job.as_str(), entry.key.as_deref()),
        ("invoice", Some("order-5"))
    );
    assert!(
        entry.slot_id.starts_with("invoice/order-5@"),
        "{}",
        entry.slot_id
    );
    assert_eq!(dlq(&keeps, Some("job=invoice")).dead_letters.len(), 1);
    assert!(dlq(&keeps, Some("job=report")).dead_letters.is_empty());
    let bare = Bare(Host {
        coordinator: Rc::clone(&host.coordinator),
        jobs: Jobs::new(),
    });
    let plain = |route: &admin::AdminRoute| block_on(admin::dispatch(route, &m, &bare, now));
    assert!(dlq(&plain, None).dead_letters.is_empty());
}
