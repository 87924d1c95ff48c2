//! The admin API's OpenAPI document (`docs/openapi.json`, linked as the
//! crate's `openapi.json`) against the router and a running `cronslot
//! serve`: every route the router knows is in the document and nothing
//! else is, and every answer's status is one the document lists for its
//! route, with a body its schema accepts.
//!
//! The schemas are checked by the small walker below, stricter than JSON
//! Schema in two ways: a keyword it does not implement is an error (so no
//! part of the document goes unchecked), and an object may hold only the
//! properties its schema names unless it gives `additionalProperties` (so
//! the document names every field the server sends; clients are still
//! told to ignore fields they do not know).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cronslot_runtime::admin;
use cronslot_tests::http::{Answer, request_with};
use serde_json::Value;

use crate::serve::{ADMIN_TOKEN, TICK_SECRET, call, json, serve, stop};
use crate::tick::{due_store, with_room_in_the_minute};

/// The document as the repository keeps it.
fn document_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn document() -> Value {
    serde_json::from_str(&document_text()).expect("docs/openapi.json is JSON")
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Every `(METHOD, path)` the document describes.
fn described(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (key, _) in item.as_object().expect("a path item") {
            assert!(
                METHODS.contains(&key.as_str()) || key == "parameters" || key == "summary",
                "{path}: unexpected key {key:?}"
            );
            if METHODS.contains(&key.as_str()) {
                out.insert((key.to_ascii_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// What `cronslot serve` answers: the router's routes and the tick.
fn served() -> BTreeSet<(String, String)> {
    let mut out: BTreeSet<(String, String)> = admin::ROUTES
        .iter()
        .map(|&(m, p)| (m.to_string(), p.to_string()))
        .collect();
    for m in admin::TICK_METHODS {
        out.insert((m.to_string(), admin::TICK_PATH.to_string()));
    }
    out
}

#[test]
fn openapi_describes_every_route_and_no_other() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let described = described(&doc);
    let served = served();
    let missing: Vec<_> = served.difference(&described).collect();
    assert!(
        missing.is_empty(),
        "routes not in docs/openapi.json: {missing:?}"
    );
    let unknown: Vec<_> = described.difference(&served).collect();
    assert!(
        unknown.is_empty(),
        "docs/openapi.json describes routes the router does not know: {unknown:?}"
    );
    // Every schema the document refers to exists, and the walker
    // implements every keyword it uses.
    let walker = Walker { doc: &doc };
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        walker.vet(schema, &format!("#/components/schemas/{name}"));
    }
}

/// The walker fails a body when the document is wrong: a real answer of
/// the pause route passes, and fails once `changed` is documented as a
/// string, or a required field it lacks is added.
#[test]
fn the_schema_walker_refuses_what_the_document_does_not_say() {
    let doc = document();
    let answer: Value = serde_json::json!({"job": "report", "paused": true, "changed": false});
    let pause = serde_json::json!({"$ref": "#/components/schemas/PauseDoc"});
    assert_eq!(
        Walker { doc: &doc }.errors(&pause, &answer),
        Vec::<String>::new()
    );

    let mut wrong = doc.clone();
    wrong["components"]["schemas"]["PauseDoc"]["properties"]["changed"]["type"] = "string".into();
    assert!(!Walker { doc: &wrong }.errors(&pause, &answer).is_empty());

    let mut wrong = doc.clone();
    wrong["components"]["schemas"]["PauseDoc"]["required"]
        .as_array_mut()
        .expect("required")
        .push("version".into());
    assert!(!Walker { doc: &wrong }.errors(&pause, &answer).is_empty());

    // An undocumented field, a bad instant, a job name out of its pattern.
    let walker = Walker { doc: &doc };
    let extra = serde_json::json!({"job": "report", "paused": true, "changed": false, "x": 1});
    assert!(!walker.errors(&pause, &extra).is_empty());
    let redrive = serde_json::json!({"$ref": "#/components/schemas/RedriveDoc"});
    let bad_instant = serde_json::json!({"job": "report", "redriven": ["yesterday"]});
    assert!(!walker.errors(&redrive, &bad_instant).is_empty());
    let bad_name = serde_json::json!({"job": "Report", "redriven": []});
    assert!(!walker.errors(&redrive, &bad_name).is_empty());
}

/// Two jobs due every minute (one succeeds, one fails and is dead), and
/// two that the ticks never reach, for manual triggers (one runs long
/// enough to be seen running).
const JOBS: &str = r#"
[[job]]
name = "report"
schedule = "* * * * *"
timeout = "20s"
command = ["sh", "-c", "echo \"$CRONSLOT_SLOT\" >> ran.log"]

[[job]]
name = "export"
schedule = "* * * * *"
timeout = "20s"
retry = { max_attempts = 1 }
command = ["sh", "-c", "echo broken >&2; exit 3"]

[[job]]
name = "slow"
schedule = "0 0 1 1 *"
timeout = "20s"
command = ["sleep", "2"]

[[job]]
name = "yearly"
schedule = "0 0 1 1 *"
timezone = "Europe/Berlin"
timeout = "20s"
command = ["true"]

[[job]]
name = "invoice"
dynamic = true
timeout = "20s"
command = ["true"]
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("openapi")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// One request, checked against the document; answers the answer.
struct Checker<'d> {
    doc: &'d Value,
    port: u16,
    /// `(METHOD, template, status)` seen, for the coverage check.
    seen: BTreeSet<(String, String, u16)>,
}

impl Checker<'_> {
    /// `path` is below the prefix, with its query; `template` is its
    /// route's path in the document.
    fn check(&mut self, method: &str, template: &str, path: &str, token: Option<&str>) -> Answer {
        let full = format!("{}{path}", admin::DEFAULT_PREFIX);
        let a = call(self.port, method, &full, token);
        self.verify(method, template, path, a)
    }

    /// [`check`](Checker::check) with more headers and a body.
    fn check_with(
        &mut self,
        method: &str,
        template: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let full = format!("{}{path}", admin::DEFAULT_PREFIX);
        let a = request_with(self.port, method, &full, Some(ADMIN_TOKEN), headers, body)
            .unwrap_or_else(|| panic!("no answer to {method} {full}"));
        assert!(
            !a.body.contains(ADMIN_TOKEN) && !a.headers.iter().any(|h| h.contains(ADMIN_TOKEN)),
            "{method} {path} shows the token: {a:?}"
        );
        self.verify(method, template, path, a)
    }

    /// Checks an answer to `method path` (below the prefix) of the
    /// route `template`.
    fn verify(&mut self, method: &str, template: &str, path: &str, a: Answer) -> Answer {
        let at = format!("{method} {path} → {}", a.status);
        let item = &self.doc["paths"][template];
        assert!(item.is_object(), "{at}: no path {template} in the document");
        let response = match item.get(method.to_ascii_lowercase()) {
            Some(operation) => operation["responses"].get(a.status.to_string()),
            // A method the route does not take: the 405 its operations
            // document.
            None => {
                assert_eq!(a.status, 405, "{at}: {}", a.body);
                METHODS
                    .iter()
                    .find_map(|m| item.get(*m)?["responses"].get("405"))
            }
        };
        let Some(response) = response else {
            panic!(
                "{at}: the document lists no {} for {method} {template}: {}",
                a.status, a.body
            );
        };
        let walker = Walker { doc: self.doc };
        let response = walker.resolve(response);
        if let Some(headers) = response["headers"].as_object() {
            for (name, header) in headers {
                if header["required"] == true {
                    assert!(
                        a.header(&name.to_ascii_lowercase()).is_some(),
                        "{at}: no {name} header: {a:?}"
                    );
                }
            }
        }
        let content_type = a
            .header("content-type")
            .unwrap_or_else(|| panic!("{at}: no content type"));
        let Some(media) = response["content"].get(content_type) else {
            panic!("{at}: the document lists no content {content_type:?} for it");
        };
        let schema = &media["schema"];
        let body = if content_type == admin::JSON {
            serde_json::from_str(&a.body)
                .unwrap_or_else(|e| panic!("{at}: not JSON ({e}): {}", a.body))
        } else {
            Value::String(a.body.clone())
        };
        let errors = walker.errors(schema, &body);
        assert!(
            errors.is_empty(),
            "{at}: the body does not match the document:\n{}\n{}",
            errors.join("\n"),
            a.body
        );
        self.seen
            .insert((method.to_string(), template.to_string(), a.status));
        a
    }
}

#[test]
fn serve_answers_every_route_as_the_document_says() {
    let doc = document();
    let dir = scratch("routes");
    let store = due_store(&dir, JOBS);
    with_room_in_the_minute(Duration::from_secs(40));
    let (child, port) = serve(
        &dir,
        &store,
        &[],
        &[
            ("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN),
            ("CRONSLOT_TICK_SECRET", TICK_SECRET),
        ],
    );
    let mut c = Checker {
        doc: &doc,
        port,
        seen: BTreeSet::new(),
    };
    let t = Some(ADMIN_TOKEN);

    // The documents need no token; the served one is the repository's.
    c.check("GET", "/", "/", None);
    c.check("GET", "/dashboard.js", "/dashboard.js", None);
    c.check("GET", "/dashboard.css", "/dashboard.css", None);
    let answer = c.check("GET", "/openapi.json", "/openapi.json", None);
    assert_eq!(
        answer.body,
        document_text(),
        "the served document is docs/openapi.json"
    );
    c.check("POST", "/openapi.json", "/openapi.json", None);
    c.check("GET", "/health", "/health", None);
    c.check("GET", "/health", "/health?verbose=1", None);

    // Without the token, or with another: 401.
    c.check("GET", "/status", "/status", None);
    c.check("GET", "/status", "/status", Some("wrong"));
    c.check("POST", "/tick", "/tick", Some(ADMIN_TOKEN));

    // A tick: `report` succeeds, `export` is dead at once (500), then the
    // next ones in the minute run nothing (200).
    c.check("POST", "/tick", "/tick", Some(TICK_SECRET));
    c.check("GET", "/tick", "/tick", Some(TICK_SECRET));
    c.check("POST", "/tick", "/tick", Some(TICK_SECRET));

    c.check("GET", "/status", "/status", t);
    c.check("GET", "/status", "/status?job=export", t);
    c.check("GET", "/status", "/status?job=nope", t);
    c.check("GET", "/status", "/status?jobs=report", t);
    c.check("POST", "/status", "/status", t);
    c.check("GET", "/metrics", "/metrics", t);
    c.check("GET", "/metrics", "/metrics?job=report", t);
    c.check("GET", "/dlq", "/dlq", t);
    c.check("GET", "/dlq", "/dlq?job=nope", t);
    c.check("GET", "/jobs/{job}/next", "/jobs/yearly/next?count=3", t);
    c.check("GET", "/jobs/{job}/next", "/jobs/report/next", t);
    c.check("GET", "/jobs/{job}/next", "/jobs/report/next?count=0", t);
    c.check("GET", "/jobs/{job}/next", "/jobs/nope/next", t);

    // Backfill: a dry run, a range the wrong way round, one in the future.
    c.check(
        "POST",
        "/jobs/{job}/backfill",
        "/jobs/report/backfill?from=2020-01-01T00:00:00Z&to=2020-01-01T00:05:00Z&dry_run",
        t,
    );
    c.check(
        "POST",
        "/jobs/{job}/backfill",
        "/jobs/report/backfill?from=2020-01-01T00:05:00Z&to=2020-01-01T00:00:00Z",
        t,
    );
    c.check(
        "POST",
        "/jobs/{job}/backfill",
        "/jobs/report/backfill?from=2020-01-01T00:00:00Z&to=2999-01-01T00:00:00Z",
        t,
    );
    c.check(
        "POST",
        "/jobs/{job}/backfill",
        "/jobs/report/backfill?to=2020-01-01T00:00:00Z",
        t,
    );

    // Redrive the dead letter; a bad slot is 400.
    c.check(
        "POST",
        "/jobs/{job}/redrive",
        "/jobs/export/redrive?slot=soon",
        t,
    );
    c.check("POST", "/jobs/{job}/redrive", "/jobs/export/redrive", t);
    c.check("POST", "/jobs/{job}/redrive", "/jobs/export/redrive", t);
    // The redriven slot waits in the record's `pending`.
    let status = c.check("GET", "/status", "/status?job=export", t);
    assert_eq!(json(&status)["jobs"][0]["pending"], 1, "{status:?}");
    c.check("GET", "/jobs/{job}/redrive", "/jobs/export/redrive", t);

    // Pause twice (the second changes nothing), then resume.
    c.check("POST", "/jobs/{job}/pause", "/jobs/yearly/pause", t);
    c.check("POST", "/jobs/{job}/pause", "/jobs/yearly/pause", t);
    c.check("POST", "/jobs/{job}/trigger", "/jobs/yearly/trigger", t);
    c.check("POST", "/jobs/{job}/resume", "/jobs/yearly/resume", t);
    c.check("POST", "/jobs/{job}/pause", "/jobs/nope/pause", t);

    // Triggers: `report`'s slot ran already (409); the others run now.
    c.check("POST", "/jobs/{job}/trigger", "/jobs/report/trigger", t);
    c.check("POST", "/jobs/{job}/trigger", "/jobs/yearly/trigger", t);
    c.check("POST", "/jobs/{job}/trigger", "/jobs/export/trigger", t);

    // A run in flight: its lease is in the record while it runs.
    let port = c.port;
    let slow = std::thread::spawn(move || {
        call(
            port,
            "POST",
            "/cronslot/jobs/slow/trigger",
            Some(ADMIN_TOKEN),
        )
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = c.check("GET", "/status", "/status?job=slow", t);
        if json(&status)["jobs"][0]["live_leases"] == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no lease while slow runs: {status:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let a = slow.join().expect("the trigger");
    c.verify("POST", "/jobs/{job}/trigger", "/jobs/slow/trigger", a);

    c.check("POST", "/repair", "/repair", t);
    c.check("POST", "/repair", "/repair?after=export", t);

    schedules(&mut c);
    runs(&mut c);

    // After the runs: the records hold history, leases' traces, pending
    // runs, the dead letter again.
    c.check("GET", "/status", "/status", t);
    c.check("GET", "/dlq", "/dlq", t);
    c.check("GET", "/health", "/health", None);

    // Every route was called, and answered at least one success.
    for (method, template) in served() {
        assert!(
            c.seen
                .iter()
                .any(|(m, p, s)| *m == method && *p == template && (200..300).contains(s)),
            "{method} {template} was not called with success: {:?}",
            c.seen
        );
    }
    stop(child);

    // Without the secrets: every route but the open ones answers 503.
    let closed = scratch("closed");
    let store = due_store(&closed, JOBS);
    let (child, port) = serve(&closed, &store, &[], &[]);
    let mut c = Checker {
        doc: &doc,
        port,
        seen: BTreeSet::new(),
    };
    c.check("GET", "/status", "/status", t);
    c.check("POST", "/jobs/{job}/trigger", "/jobs/report/trigger", t);
    c.check("POST", "/tick", "/tick", Some(TICK_SECRET));
    c.check("GET", "/openapi.json", "/openapi.json", None);
    c.check("GET", "/health", "/health", None);
    stop(child);
}

/// The keyed runs' routes of the dynamic job `invoice`, each answer
/// checked against the document, and what the answers say.
fn runs(c: &mut Checker<'_>) {
    const T: &str = "/runs/{job}/{key}";
    const PATH: &str = "/runs/invoice/order-123";
    let body = r#"{"payload":{"order":123}}"#;
    let a = c.check_with("PUT", T, PATH, &[], body);
    assert_eq!(a.status, 202, "{a:?}");
    assert_eq!(
        a.header("location"),
        Some("/cronslot/runs/invoice/order-123")
    );
    let run = json(&a);
    assert_eq!(
        (run["status"].as_str(), run["created"].as_bool()),
        (Some("pending"), Some(true))
    );
    let id = run["run"].as_str().expect("a run id").to_string();
    assert!(id.starts_with("invoice/order-123@"), "{id}");
    let a = c.check_with("PUT", T, PATH, &[], r#"{ "payload": { "order": 123 } }"#);
    assert_eq!(a.status, 200, "the same request: {a:?}");
    assert_eq!(
        (json(&a)["run"].as_str(), json(&a)["created"].as_bool()),
        (Some(id.as_str()), Some(false))
    );
    let a = c.check_with("PUT", T, PATH, &[], r#"{"payload":{"order":124}}"#);
    assert_eq!(a.status, 409, "{a:?}");
    let doc = json(&a);
    assert_eq!(
        (doc["error"].as_str(), doc["run"]["run"].as_str()),
        (Some("differs"), Some(id.as_str()))
    );
    assert_eq!(doc["differs"], serde_json::json!(["payload"]));
    // A key naming a schedule is not a run.
    let spec = r#"{"cron":"0 0 1 1 *"}"#;
    let a = c.check_with(
        "PUT",
        "/schedules/{job}/{key}",
        "/schedules/invoice/s-1",
        &[],
        spec,
    );
    assert_eq!(a.status, 201, "{a:?}");
    let a = c.check_with("PUT", T, "/runs/invoice/s-1", &[], body);
    assert_eq!(
        (a.status, json(&a)["error"].as_str()),
        (409, Some("exists")),
        "{a:?}"
    );
    let a = c.check_with("PUT", T, PATH, &[], r#"{"paylaod":1}"#);
    assert_eq!(
        (a.status, json(&a)["error"].as_str()),
        (400, Some("spec")),
        "{a:?}"
    );
    let a = c.check_with("PUT", T, PATH, &[("If-Match", "\"1\"")], body);
    assert_eq!(
        (a.status, json(&a)["parameter"].as_str()),
        (400, Some("If-Match"))
    );
    let a = c.check_with("PUT", T, "/runs/report/k", &[], body);
    assert_eq!(a.status, 404, "a static job has no keyed runs: {a:?}");
    let big = format!(r#"{{"payload":"{}"}}"#, "x".repeat(70 * 1024));
    let a = c.check_with("PUT", T, PATH, &[], &big);
    assert_eq!(a.status, 413, "{a:?}");

    let a = c.check("GET", T, PATH, Some(ADMIN_TOKEN));
    assert_eq!(a.status, 200, "{a:?}");
    let doc = json(&a);
    assert_eq!(
        (doc["run"].as_str(), doc["payload"]["order"].as_u64()),
        (Some(id.as_str()), Some(123))
    );
    assert!(doc.get("created").is_none(), "{doc}");
    let a = c.check("GET", T, "/runs/invoice/never", Some(ADMIN_TOKEN));
    assert_eq!(a.status, 404, "{a:?}");
    c.check("DELETE", T, PATH, Some(ADMIN_TOKEN));

    // The job's runs, in key order: the schedule s-1 is no run.
    const L: &str = "/runs/{job}";
    let t = Some(ADMIN_TOKEN);
    let keys = |a: &Answer| -> Vec<String> {
        json(a)["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| r["key"].as_str().expect("a key").to_string())
            .collect()
    };
    let a = c.check("GET", L, "/runs/invoice", t);
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(keys(&a), ["order-123"], "{a:?}");
    let doc = json(&a);
    assert_eq!(
        (
            doc["runs"][0]["run"].as_str(),
            doc["runs"][0]["status"].as_str()
        ),
        (Some(id.as_str()), Some("pending"))
    );
    assert!(doc["cursor"].is_null(), "{doc}");
    let a = c.check("GET", L, "/runs/invoice?prefix=order-&limit=1", t);
    assert_eq!(json(&a)["cursor"].as_str(), Some("order-123"), "{a:?}");
    let a = c.check("GET", L, "/runs/invoice?prefix=order-&cursor=order-123", t);
    assert_eq!((keys(&a).len(), json(&a)["cursor"].is_null()), (0, true));
    let a = c.check("GET", L, "/runs/invoice?status=dead", t);
    assert_eq!(keys(&a).len(), 0, "no run is dead: {a:?}");
    let a = c.check("GET", L, "/runs/invoice?status=done", t);
    assert_eq!(
        (a.status, json(&a)["parameter"].as_str()),
        (400, Some("status"))
    );
    let a = c.check("GET", L, "/runs/invoice?limit=0", t);
    assert_eq!(a.status, 400, "{a:?}");
    let a = c.check("GET", L, "/runs/report", t);
    assert_eq!(a.status, 404, "a static job has no keyed runs: {a:?}");
    c.check("POST", L, "/runs/invoice", t);
}

/// The schedule routes of the dynamic job `invoice`, each answer checked
/// against the document, and what the answers say.
fn schedules(c: &mut Checker<'_>) {
    const T: &str = "/schedules/{job}/{key}";
    const PATH: &str = "/schedules/invoice/tenant-1";
    let spec = r#"{"cron":"0 0 1 1 *","timezone":"Europe/Berlin","payload":{"tenant":1},"labels":{"plan":"pro"}}"#;
    let a = c.check_with("PUT", T, PATH, &[], spec);
    assert_eq!((a.status, a.header("etag")), (201, Some("\"1\"")), "{a:?}");
    assert_eq!(json(&a)["version"], 1);
    let a = c.check_with("PUT", T, PATH, &[], spec);
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(json(&a)["changed"], false, "the same spec writes nothing");

    // A full replace over version 1: labels and payload are not kept.
    let changed = r#"{"cron":"0 0 1 1 *","timezone":"Europe/Berlin"}"#;
    let a = c.check_with("PUT", T, PATH, &[("If-Match", "\"1\"")], changed);
    assert_eq!((a.status, a.header("etag")), (200, Some("\"2\"")), "{a:?}");
    let a = c.check_with("PUT", T, PATH, &[("If-Match", "\"1\"")], spec);
    assert_eq!((a.status, a.header("etag")), (412, Some("\"2\"")), "{a:?}");
    assert_eq!(json(&a)["version"], 2);
    let a = c.check_with("PUT", T, PATH, &[("If-None-Match", "*")], spec);
    assert_eq!(a.status, 409, "{a:?}");
    assert_eq!(json(&a)["error"], "exists");
    let a = c.check_with("PUT", T, PATH, &[("If-Match", "two")], spec);
    assert_eq!(a.status, 400, "{a:?}");
    let a = c.check_with("PUT", T, "/schedules/invoice/a@b", &[], spec);
    assert_eq!(
        (a.status, json(&a)["parameter"].as_str()),
        (400, Some("key"))
    );
    let a = c.check_with(
        "PUT",
        T,
        PATH,
        &[],
        r#"{"cron":"0 0 1 1 *","timezone":"Nowhere/City"}"#,
    );
    assert_eq!(a.status, 400, "{a:?}");
    assert_eq!(json(&a)["problems"][0]["field"], "timezone");
    let a = c.check_with("PUT", T, "/schedules/report/k", &[], spec);
    assert_eq!(a.status, 404, "a static job has no schedules: {a:?}");
    c.check_with("PUT", T, "/schedules/nope/k", &[], spec);
    let big = format!(
        r#"{{"cron":"0 0 1 1 *","payload":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    let a = c.check_with("PUT", T, PATH, &[], &big);
    assert_eq!(a.status, 413, "{a:?}");

    let a = c.check("GET", T, PATH, Some(ADMIN_TOKEN));
    assert_eq!((a.status, a.header("etag")), (200, Some("\"2\"")), "{a:?}");
    let doc = json(&a);
    assert_eq!(
        doc["spec"],
        serde_json::json!({"cron": "0 0 1 1 *", "timezone": "Europe/Berlin", "paused": false})
    );
    assert_eq!(doc["next"].as_array().map(Vec::len), Some(10));
    assert_eq!(doc["status"]["record"]["job"], "invoice/tenant-1");
    assert_eq!(doc["status"]["health"], "never_succeeded");
    c.check("GET", T, "/schedules/invoice/never", Some(ADMIN_TOKEN));
    c.check("POST", T, PATH, Some(ADMIN_TOKEN));

    // The listing: tenant-1, then tenant-2 labelled, paged one at a time.
    const L: &str = "/schedules/{job}";
    // A bulk write: each entry its own answer, a bad one among them.
    let bulk = r#"{"schedules": [
        {"key": "bulk-1", "spec": {"cron": "0 0 1 1 *"}},
        {"key": "bulk-2", "spec": {"cron": "0 0 1 1 *"}, "create_only": true},
        {"key": "bulk/3", "spec": {"cron": "0 0 1 1 *"}}
    ]}"#;
    let a = c.check_with("POST", L, "/schedules/invoice", &[], bulk);
    assert_eq!(a.status, 200, "{a:?}");
    let doc = json(&a);
    assert_eq!(
        (doc["created"].as_u64(), doc["failed"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(doc["results"][2]["status"], 400);
    let a = c.check_with("POST", L, "/schedules/invoice", &[], r#"{"schedules": []}"#);
    assert_eq!(a.status, 400, "{a:?}");
    let huge = format!(
        r#"{{"schedules": [{{"key": "k", "spec": {{"cron": "0 0 1 1 *", "payload": "{}"}}}}]}}"#,
        "x".repeat(9 * 1024 * 1024)
    );
    let a = c.check_with("POST", L, "/schedules/invoice", &[], &huge);
    assert_eq!(a.status, 413, "{a:?}");
    for key in ["bulk-1", "bulk-2"] {
        let path = format!("/schedules/invoice/{key}");
        let a = c.check("DELETE", T, &path, Some(ADMIN_TOKEN));
        assert_eq!(a.status, 200, "{a:?}");
    }
    let labelled = r#"{"cron":"0 0 1 1 *","labels":{"plan":"pro:yearly"}}"#;
    let a = c.check_with("PUT", T, "/schedules/invoice/tenant-2", &[], labelled);
    assert_eq!(a.status, 201, "{a:?}");
    let a = c.check("GET", L, "/schedules/invoice?limit=1", Some(ADMIN_TOKEN));
    assert_eq!(a.status, 200, "{a:?}");
    let page = json(&a);
    assert_eq!(page["schedules"][0]["key"], "tenant-1");
    assert_eq!(page["schedules"][0]["version"], 2);
    assert!(page["schedules"][0]["next"].is_string(), "{page}");
    assert_eq!(page["cursor"], "tenant-1");
    let a = c.check(
        "GET",
        L,
        "/schedules/invoice?limit=1&cursor=tenant-1",
        Some(ADMIN_TOKEN),
    );
    let page = json(&a);
    assert_eq!(page["schedules"][0]["key"], "tenant-2", "{page}");
    let a = c.check(
        "GET",
        L,
        "/schedules/invoice?limit=1&cursor=tenant-2",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(json(&a)["schedules"], serde_json::json!([]));
    assert_eq!(json(&a)["cursor"], Value::Null, "the last page");
    let a = c.check(
        "GET",
        L,
        "/schedules/invoice?label=plan:pro:yearly&prefix=tenant-",
        Some(ADMIN_TOKEN),
    );
    let page = json(&a);
    let keys: Vec<&str> = page["schedules"]
        .as_array()
        .map(|s| s.iter().filter_map(|s| s["key"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(keys, ["tenant-2"], "{a:?}");
    for bad in [
        "limit=0",
        "limit=1001",
        "prefix=a/b",
        "label=plan",
        "cursor=a@b",
    ] {
        let path = format!("/schedules/invoice?{bad}");
        let a = c.check("GET", L, &path, Some(ADMIN_TOKEN));
        assert_eq!(a.status, 400, "{bad}: {a:?}");
    }
    let a = c.check("GET", L, "/schedules/report", Some(ADMIN_TOKEN));
    assert_eq!(a.status, 404, "a static job has no schedules: {a:?}");
    c.check("POST", L, "/schedules/invoice", Some(ADMIN_TOKEN));
    c.check("GET", L, "/schedules/invoice", None);

    // A job's operations on one schedule, with `?key=`.
    let t = Some(ADMIN_TOKEN);
    let a = c.check(
        "POST",
        "/jobs/{job}/pause",
        "/jobs/invoice/pause?key=tenant-2",
        t,
    );
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        (&json(&a)["key"], &json(&a)["paused"]),
        (&Value::from("tenant-2"), &Value::from(true))
    );
    let a = c.check(
        "POST",
        "/jobs/{job}/resume",
        "/jobs/invoice/resume?key=tenant-2",
        t,
    );
    assert_eq!(json(&a)["changed"], true, "{a:?}");
    let a = c.check(
        "POST",
        "/jobs/{job}/backfill",
        "/jobs/invoice/backfill?key=tenant-2&from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&dry_run=true",
        t,
    );
    assert_eq!(json(&a)["key"], "tenant-2", "{a:?}");
    let a = c.check(
        "POST",
        "/jobs/{job}/redrive",
        "/jobs/invoice/redrive?key=tenant-2",
        t,
    );
    assert_eq!(json(&a)["redriven"], serde_json::json!([]), "{a:?}");
    let a = c.check(
        "POST",
        "/jobs/{job}/pause",
        "/jobs/invoice/pause?key=nobody",
        t,
    );
    assert_eq!(a.status, 404, "{a:?}");
    let a = c.check(
        "POST",
        "/jobs/{job}/pause",
        "/jobs/report/pause?key=tenant-2",
        t,
    );
    assert_eq!(a.status, 404, "{a:?}");

    let a = c.check_with("DELETE", T, PATH, &[("If-Match", "\"1\"")], "");
    assert_eq!(a.status, 412, "{a:?}");
    let a = c.check_with("DELETE", T, PATH, &[], "");
    assert_eq!(
        (a.status, &json(&a)["version"]),
        (200, &Value::from(3)),
        "{a:?}"
    );
    let a = c.check("GET", T, PATH, Some(ADMIN_TOKEN));
    assert_eq!(
        (a.status, &json(&a)["version"]),
        (404, &Value::from(3)),
        "{a:?}"
    );
    let a = c.check_with("DELETE", T, PATH, &[], "");
    assert_eq!(a.status, 404, "{a:?}");
}

/// A JSON Schema walker over the document's schemas (see the module's
/// comment for how it is stricter than JSON Schema).
struct Walker<'d> {
    doc: &'d Value,
}

/// The keywords the walker implements (annotations included).
const KEYWORDS: &[&str] = &[
    "$ref",
    "description",
    "type",
    "format",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "propertyNames",
    "items",
    "oneOf",
    "minimum",
    "maximum",
    "pattern",
    "default",
];

impl<'d> Walker<'d> {
    /// What `reference` (`#/components/…`) points at.
    fn pointer(&self, reference: &str) -> &'d Value {
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{reference}: only references into the document"));
        self.doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("{reference}: no such part of the document"))
    }

    /// A response or schema, with its `$ref` followed.
    fn resolve<'v>(&self, value: &'v Value) -> &'v Value
    where
        'd: 'v,
    {
        match value.get("$ref").and_then(Value::as_str) {
            Some(r) => self.resolve(self.pointer(r)),
            None => value,
        }
    }

    /// Panics on a keyword the walker does not implement, anywhere under
    /// `schema`, or a reference to nothing.
    fn vet(&self, schema: &Value, at: &str) {
        let Some(map) = schema.as_object() else {
            panic!("{at}: a schema is an object");
        };
        for (key, value) in map {
            assert!(
                KEYWORDS.contains(&key.as_str()),
                "{at}: the walker does not implement {key:?}"
            );
            match key.as_str() {
                "$ref" => {
                    self.pointer(value.as_str().expect("a reference"));
                }
                "properties" => {
                    for (name, s) in value.as_object().expect("properties") {
                        self.vet(s, &format!("{at}/{name}"));
                    }
                }
                "items" | "propertyNames" => self.vet(value, &format!("{at}/{key}")),
                "additionalProperties" if value.is_object() => {
                    self.vet(value, &format!("{at}/{key}"))
                }
                "oneOf" => {
                    for (i, s) in value.as_array().expect("oneOf").iter().enumerate() {
                        self.vet(s, &format!("{at}/oneOf/{i}"));
                    }
                }
                "required" => {
                    for name in value.as_array().expect("required") {
                        let name = name.as_str().expect("a name");
                        assert!(
                            map.get("properties").is_some_and(|p| p.get(name).is_some()),
                            "{at}: {name:?} is required but not described"
                        );
                    }
                }
                _ => {}
            }
        }
    }

    /// Everything wrong with `value` under `schema`; empty: it matches.
    fn errors(&self, schema: &Value, value: &Value) -> Vec<String> {
        let mut out = Vec::new();
        self.walk(schema, value, "$", &mut out);
        out
    }

    fn walk(&self, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
        let Some(map) = schema.as_object() else {
            out.push(format!("{at}: the schema is not an object"));
            return;
        };
        for (key, rule) in map {
            match key.as_str() {
                "description" | "default" => {}
                "$ref" => self.walk(
                    self.pointer(rule.as_str().unwrap_or_default()),
                    value,
                    at,
                    out,
                ),
                "type" => {
                    let types: Vec<&str> = match rule {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                        _ => vec![],
                    };
                    if !types.iter().any(|t| is_type(t, value)) {
                        out.push(format!("{at}: {value} is not of type {rule}"));
                    }
                }
                "format" => {
                    if let Err(e) = format_ok(rule.as_str().unwrap_or_default(), value) {
                        out.push(format!("{at}: {value}: {e}"));
                    }
                }
                "enum" => {
                    if !rule.as_array().is_some_and(|e| e.contains(value)) {
                        out.push(format!("{at}: {value} is not one of {rule}"));
                    }
                }
                "const" => {
                    if rule != value {
                        out.push(format!("{at}: {value} is not {rule}"));
                    }
                }
                "minimum" => {
                    if let (Some(v), Some(m)) = (value.as_f64(), rule.as_f64()) {
                        if v < m {
                            out.push(format!("{at}: {value} is below {rule}"));
                        }
                    }
                }
                "maximum" => {
                    if let (Some(v), Some(m)) = (value.as_f64(), rule.as_f64()) {
                        if v > m {
                            out.push(format!("{at}: {value} is above {rule}"));
                        }
                    }
                }
                "pattern" => {
                    if let Some(text) = value.as_str() {
                        let re = regex::Regex::new(rule.as_str().unwrap_or_default())
                            .unwrap_or_else(|e| panic!("{at}: pattern {rule}: {e}"));
                        if !re.is_match(text) {
                            out.push(format!("{at}: {value} does not match {rule}"));
                        }
                    }
                }
                "required" => {
                    if let Some(object) = value.as_object() {
                        for name in rule
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                        {
                            if !object.contains_key(name) {
                                out.push(format!("{at}: {name:?} is missing"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let Some(object) = value.as_object() {
                        for (name, v) in object {
                            if let Some(s) = rule.get(name) {
                                self.walk(s, v, &format!("{at}.{name}"), out);
                            } else if map.get("additionalProperties").is_none_or(|a| *a == false) {
                                out.push(format!("{at}: {name:?} is not in the document"));
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Some(object) = value.as_object() {
                        let named = map.get("properties");
                        for (name, v) in object {
                            if named.is_some_and(|p| p.get(name).is_some()) {
                                continue;
                            }
                            match rule {
                                Value::Bool(false) => {
                                    out.push(format!("{at}: {name:?} is not allowed"))
                                }
                                Value::Bool(true) => {}
                                s => self.walk(s, v, &format!("{at}.{name}"), out),
                            }
                        }
                    }
                }
                "propertyNames" => {
                    if let Some(object) = value.as_object() {
                        for name in object.keys() {
                            self.walk(
                                rule,
                                &Value::String(name.clone()),
                                &format!("{at} (name {name:?})"),
                                out,
                            );
                        }
                    }
                }
                "items" => {
                    if let Some(items) = value.as_array() {
                        for (i, v) in items.iter().enumerate() {
                            self.walk(rule, v, &format!("{at}[{i}]"), out);
                        }
                    }
                }
                "oneOf" => {
                    let mut failures = Vec::new();
                    let matched = rule
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|s| {
                            let e = self.errors(s, value);
                            let ok = e.is_empty();
                            failures.extend(e);
                            ok
                        })
                        .count();
                    if matched != 1 {
                        out.push(format!(
                            "{at}: {value} matches {matched} of the oneOf schemas, not 1 ({})",
                            failures.join("; ")
                        ));
                    }
                }
                other => out.push(format!("{at}: the walker does not implement {other:?}")),
            }
        }
        // An object schema without `properties` holds nothing undocumented
        // either, unless it says what more it holds.
        if value.is_object()
            && map.get("type").is_some_and(|t| t == "object")
            && !map.contains_key("properties")
            && !map.contains_key("additionalProperties")
            && !value.as_object().is_some_and(serde_json::Map::is_empty)
        {
            out.push(format!("{at}: an object whose schema names no properties"));
        }
    }
}

fn is_type(t: &str, value: &Value) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// The formats the document uses; others are refused.
fn format_ok(format: &str, value: &Value) -> Result<(), String> {
    match format {
        "date-time" => match value.as_str() {
            None => Ok(()),
            Some(text) => {
                let instant: Result<jiff::Timestamp, _> = text.parse();
                match instant {
                    Err(e) => Err(format!("not an RFC 3339 instant: {e}")),
                    Ok(_) if !text.ends_with('Z') => Err("not in UTC (Z)".to_string()),
                    Ok(_) => Ok(()),
                }
            }
        },
        "int64" => match value {
            Value::Number(n) if n.is_f64() || n.as_i64().is_none() => Err("not an int64".into()),
            _ => Ok(()),
        },
        "int32" => match value.as_i64() {
            Some(n) if i32::try_from(n).is_err() => Err("not an int32".into()),
            _ => Ok(()),
        },
        other => Err(format!("the walker does not implement format {other:?}")),
    }
}
