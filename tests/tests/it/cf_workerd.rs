//! The Cloudflare adapter in workerd (`wrangler dev` serving
//! `tests/cf-worker`, built by `scripts/build-workers`): the core
//! conformance suite against the Durable Object coordinator, and the
//! Worker end to end through Cron Trigger events and the admin routes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cronslot_cf::ObjectClient;
use cronslot_cf::protocol::TICK_OBJECT;
use cronslot_core::conformance::run_all_blocking;
use cronslot_tests::webdriver::Browser;
use cronslot_tests::workerd::{ViaWorker, Wrangler};
use serde_json::Value;

const WORKER: &str = "tests/cf-worker";
const TOKEN: &str = "test-admin-token-0123456789";

fn state_dir(name: &str) -> tempdir::Dir {
    tempdir::Dir::new(name)
}

#[test]
fn conformance_suite_against_durable_objects_in_workerd() {
    let state = state_dir("cf-conformance");
    let wrangler = Wrangler::start(WORKER, state.path(), &[]);
    run_all_blocking(|| ObjectClient::new(ViaWorker(&wrangler)), "cfw");
}

/// The schedules part of the conformance suite against the real objects in
/// workerd, a job's schedules spread over 4 of them (as the test Worker
/// spreads them).
#[test]
fn schedule_conformance_against_durable_objects_in_workerd() {
    use cronslot_core::conformance::schedules as suite;
    use cronslot_core::coord::exec::block_on;
    let state = state_dir("cf-schedule-conformance");
    let wrangler = Wrangler::start(WORKER, state.path(), &[]);
    let c = || ObjectClient::new(ViaWorker(&wrangler)).with_schedule_objects(4);
    block_on(suite::concurrent_upserts_of_one_spec_end_at_version_1(
        &c(),
        "cws1",
    ));
    block_on(suite::versions_preconditions_and_tombstones(&c(), "cws2"));
    block_on(suite::a_schedule_runs_and_a_recreate_fences_out_old_runs(
        &c(),
        "cws3",
    ));
    block_on(suite::listing_pages_each_schedule_once(&c(), "cws4"));
}

/// The keyed runs part of the conformance suite against the real objects
/// in workerd: each key's run in the object its key names among the test
/// Worker's 4, through the object protocol's `enqueue_run`, `run_status`
/// and `read_schedule_for_claim`.
#[test]
fn runs_conformance_against_durable_objects_in_workerd() {
    use cronslot_core::conformance::runs as suite;
    use cronslot_core::coord::exec::block_on;
    let state = state_dir("cf-runs-conformance");
    let wrangler = Wrangler::start(WORKER, state.path(), &[]);
    let c = || ObjectClient::new(ViaWorker(&wrangler)).with_schedule_objects(4);
    block_on(suite::concurrent_enqueues_of_one_key_create_one_run(
        &c(),
        "cwr1",
    ));
    block_on(suite::a_keyed_run_answers_its_status_through_its_life(
        &c(),
        "cwr2",
    ));
    block_on(suite::a_dead_keyed_run_is_redriven(&c(), "cwr3"));
    block_on(suite::a_key_is_remembered_for_its_retention_then_forgotten(
        &c(),
        "cwr4",
    ));
}

/// A dynamic job's schedules through the Worker: written, read, listed,
/// paused and deleted with the admin routes; a schedule's slot reaches a
/// tick through its object's alarm and runs with its key and payload; a
/// paused and a deleted schedule's do not.
#[test]
fn schedules_through_the_workers_routes_and_ticks() {
    let state = state_dir("cf-schedules");
    let w = Wrangler::start(WORKER, state.path(), &[("CRONSLOT_ADMIN_TOKEN", TOKEN)]);
    let call = |method: &str, path: &str, body: &str| {
        let (code, text) = w.request(method, path, Some(TOKEN), body);
        let doc = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
        (code, doc, text)
    };
    let spec = |key: &str| {
        serde_json::json!({"cron": "* * * * *", "timezone": "Europe/Paris", "payload": {"tenant": key}})
            .to_string()
    };
    // The first tick sets the mark.
    let start = jiff::Timestamp::now();
    assert_eq!(w.fire("* * * * *", start.as_millisecond()).0, 200);

    let (code, doc, text) = call("PUT", "/cronslot/schedules/tenant/t-1", &spec("t-1"));
    assert_eq!(
        (code, &doc["version"], &doc["changed"]),
        (201, &Value::from(1), &Value::from(true)),
        "{text}"
    );
    let (code, doc, text) = call("PUT", "/cronslot/schedules/tenant/t-1", &spec("t-1"));
    assert_eq!(
        (code, &doc["version"], &doc["changed"]),
        (200, &Value::from(1), &Value::from(false)),
        "{text}"
    );
    // A zone the Worker does not carry is refused, naming the field and
    // the zones its build carries; nothing is written.
    let tokyo = r#"{"cron": "* * * * *", "timezone": "Asia/Tokyo"}"#;
    let (code, _, text) = call("PUT", "/cronslot/schedules/tenant/t-9", tokyo);
    assert_eq!(code, 400, "{text}");
    assert!(
        text.contains("timezone") && text.contains("Asia/Tokyo") && text.contains("Europe/Paris"),
        "{text}"
    );
    let (code, _, text) = call("GET", "/cronslot/schedules/tenant/t-9", "");
    assert_eq!(code, 404, "{text}");
    for key in ["t-2", "t-3"] {
        let (code, _, text) = call(
            "PUT",
            &format!("/cronslot/schedules/tenant/{key}"),
            &spec(key),
        );
        assert_eq!(code, 201, "{text}");
    }

    // Pages of two, in key order, across the job's objects.
    let keys = |doc: &Value| -> Vec<String> {
        doc["schedules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["key"].as_str().unwrap().to_string())
            .collect()
    };
    let (code, page, text) = call("GET", "/cronslot/schedules/tenant?limit=2", "");
    assert_eq!(code, 200, "{text}");
    let mut listed = keys(&page);
    let mut cursor = page["cursor"].as_str().map(str::to_string);
    while let Some(after) = cursor {
        let (code, page, text) = call(
            "GET",
            &format!("/cronslot/schedules/tenant?limit=2&cursor={after}"),
            "",
        );
        assert_eq!(code, 200, "{text}");
        listed.extend(keys(&page));
        cursor = page["cursor"].as_str().map(str::to_string);
    }
    assert_eq!(listed, ["t-1", "t-2", "t-3"]);

    let (code, one, text) = call("GET", "/cronslot/schedules/tenant/t-1", "");
    assert_eq!(code, 200, "{text}");
    assert_eq!(one["next"].as_array().map(Vec::len), Some(10), "{text}");

    // t-2 paused by the job's operation with its key, t-3 deleted.
    let (code, _, text) = call("POST", "/cronslot/jobs/tenant/pause?key=t-2", "");
    assert_eq!(code, 200, "{text}");
    let (code, _, text) = call("DELETE", "/cronslot/schedules/tenant/t-3", "");
    assert_eq!(code, 200, "{text}");

    // t-1's first slot is the next minute: its object's alarm sends its
    // wake to the tick object then (real time), and a tick runs it.
    let first: jiff::Timestamp = one["next"][0]["slot"].as_str().unwrap().parse().unwrap();
    let at = first.as_millisecond() + 1_000;
    wait_woken(&w, "tenant/t-1", at);
    assert!(
        !woken(&w, at)
            .iter()
            .any(|(j, _)| j == "tenant/t-2" || j == "tenant/t-3"),
        "a paused or deleted schedule has no wake: {:?}",
        woken(&w, at)
    );
    assert_eq!(w.fire("* * * * *", at).0, 200);
    let (_, one, text) = call("GET", "/cronslot/schedules/tenant/t-1", "");
    assert_eq!(
        one["status"]["succeeded"],
        1,
        "t-1 ran once, with its key and payload: {text}\n{}",
        w.log_text()
    );
    // The same tick again runs nothing twice.
    assert_eq!(w.fire("* * * * *", at).0, 200);
    let (_, one, _) = call("GET", "/cronslot/schedules/tenant/t-1", "");
    assert_eq!(one["status"]["runs"], 1);
    let (_, two, text) = call("GET", "/cronslot/schedules/tenant/t-2", "");
    assert_eq!(two["status"]["runs"], 0, "{text}");
    let (code, _, _) = call("GET", "/cronslot/schedules/tenant/t-3", "");
    assert_eq!(code, 404);

    // A keyed run through the Worker's routes: 202 with its id and
    // Location, the same request 200 with the same run, another payload
    // 409; its object's alarm wakes it at once, and the next tick runs it.
    let body = r#"{"payload": {"tenant":"r-1"}}"#;
    let (code, run, text) = call("PUT", "/cronslot/runs/tenant/r-1", body);
    assert_eq!((code, &run["created"]), (202, &Value::from(true)), "{text}");
    let id = run["run"].as_str().unwrap().to_string();
    assert!(id.starts_with("tenant/r-1@"), "{text}");
    let (code, again, text) = call("PUT", "/cronslot/runs/tenant/r-1", body);
    assert_eq!(
        (code, again["run"].as_str(), &again["created"]),
        (200, Some(id.as_str()), &Value::from(false)),
        "{text}"
    );
    let (code, refused, text) = call("PUT", "/cronslot/runs/tenant/r-1", r#"{"payload": 2}"#);
    assert_eq!(
        (code, &refused["error"]),
        (409, &Value::from("differs")),
        "{text}"
    );
    let now = jiff::Timestamp::now().as_millisecond() + 1_000;
    wait_woken(&w, "tenant/r-1", now);
    assert_eq!(w.fire("* * * * *", now).0, 200);
    let (code, done, text) = call("GET", "/cronslot/runs/tenant/r-1", "");
    assert_eq!(
        (code, done["status"].as_str(), done["attempts"].as_u64()),
        (200, Some("succeeded"), Some(1)),
        "{text}\n{}",
        w.log_text()
    );
    let (code, _, text) = call("GET", "/cronslot/runs/tenant/r-2", "");
    assert_eq!(code, 404, "{text}");
}

/// A ten-minute boundary 10 to 20 minutes ago, in ms since the epoch: a
/// slot of every job but `slow`, recent enough for the starting deadline.
fn base() -> i64 {
    let now = jiff::Timestamp::now().as_millisecond();
    (now / 600_000 - 1) * 600_000
}

fn status(w: &Wrangler) -> Value {
    let (code, body) = w.request("GET", "/cronslot/status", Some(TOKEN), "");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn job<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {status}"))
}

fn history(job: &Value) -> Vec<(String, u64, String)> {
    job["record"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["slot"].as_str().unwrap().to_string(),
                r["attempt"].as_u64().unwrap(),
                r["outcome"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect()
}

#[test]
fn worker_end_to_end() {
    let state = state_dir("cf-e2e");
    let w = Wrangler::start(WORKER, state.path(), &[("CRONSLOT_ADMIN_TOKEN", TOKEN)]);
    let tick = "* * * * *";

    // The admin routes refuse requests without the token (health aside).
    for token in [None, Some("wrong-token")] {
        let (code, body) = w.request("GET", "/cronslot/status", token, "");
        assert_eq!(code, 401, "{token:?}: {body}");
        let (code, _) = w.request("POST", "/cronslot/jobs/quick/pause", token, "");
        assert_eq!(code, 401);
    }
    let (code, body) = w.request("GET", "/cronslot/health", None, "");
    assert!(code == 200 || code == 503, "{code} {body}");

    // The first tick sets the tick mark and looks back a minute (the
    // every-minute jobs get records, and no slot from before them runs);
    // the next runs the jobs due since (`flaky` fails). Times are the
    // events' scheduled times; the claims use them.
    let b = base();
    let (t0, t1, t2) = (b - 60_000, b, b + 60_000);
    assert_eq!(w.fire(tick, t0).0, 200);
    assert_eq!(w.fire(tick, t1).0, 200);
    // The same scheduled time delivered again: nothing runs twice.
    assert_eq!(w.fire(tick, t1).0, 200);
    let s = status(&w);
    let quick = job(&s, "quick");
    assert_eq!(quick["runs"], 1, "{quick}");
    assert_eq!(quick["succeeded"], 1, "{quick}");
    let flaky = job(&s, "flaky");
    assert_eq!(flaky["runs"], 1, "two jobs ran on one tick: {flaky}");
    assert_eq!(flaky["failed"], 1, "{flaky}");

    // The failed slot is retried by a later tick (at or after its
    // not-before), with a higher fence, and succeeds. That tick finds it
    // through the tick object, once flaky's object's alarm (its retry's
    // time, already past in real time) has sent it there.
    wait_woken(&w, "flaky", t2);
    assert_eq!(w.fire(tick, t2).0, 200);
    let s = status(&w);
    let flaky = job(&s, "flaky");
    let slot_t1 = jiff::Timestamp::from_millisecond(t1).unwrap();
    let slot_t1 = cronslot_core::coord::format_instant(slot_t1);
    let h = history(flaky);
    assert!(
        h.contains(&(slot_t1.clone(), 2, "succeeded".into())),
        "the retry of {slot_t1} succeeded on attempt 2: {h:?}"
    );
    assert_eq!(job(&s, "quick")["runs"], 2);

    // Pause through the admin route: the next tick does not run the job.
    let (code, body) = w.request("POST", "/cronslot/jobs/quick/pause", Some(TOKEN), "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(w.fire(tick, b + 120_000).0, 200);
    assert_eq!(job(&status(&w), "quick")["runs"], 2, "paused");
    let (code, _) = w.request("POST", "/cronslot/jobs/quick/resume", Some(TOKEN), "");
    assert_eq!(code, 200);

    // Prometheus text.
    let (code, text) = w.request("GET", "/cronslot/metrics", Some(TOKEN), "");
    assert_eq!(code, 200);
    assert!(
        text.contains("cronslot_runs_total{job=\"quick\"} 2"),
        "{text}"
    );

    // The dashboard, from the Worker, in a real browser: its policy lets
    // only its own script and style run, and the script reads the same
    // routes as on `cronslot serve`.
    let jobs = status(&w)["jobs"].as_array().map_or(0, Vec::len);
    // Its files are static assets (the build script writes them), served
    // with the headers `cronslot serve` gives them (`_headers`).
    for path in [
        "/cronslot/",
        "/cronslot/dashboard.js",
        "/cronslot/dashboard.css",
    ] {
        let a = cronslot_tests::http::request(w.port, "GET", path, None)
            .unwrap_or_else(|| panic!("no answer to {path}"));
        assert_eq!(a.status, 200, "{path}: {a:?}");
        assert_eq!(
            a.header("content-security-policy"),
            Some(cronslot_runtime::admin::CONTENT_SECURITY_POLICY),
            "{path}: {a:?}"
        );
        assert_eq!(a.header("x-frame-options"), Some("DENY"), "{path}");
    }
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cf-dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let browser = Browser::start(&shots, 1280, 900);
    browser.goto(&format!("http://127.0.0.1:{}/cronslot/", w.port));
    browser.type_on("#token", TOKEN);
    browser.click_on("#login button[type=submit]");
    browser.wait_until(
        "the jobs table lists every job",
        &format!("return document.querySelectorAll('#jobs tbody tr').length === {jobs}"),
    );
    browser.click_on("#jobs a[href='#/job/flaky']");
    let timeline = browser.text_of("#timeline");
    assert!(
        timeline.contains("retried") && timeline.contains("succeeded"),
        "flaky failed once, then succeeded: {timeline}"
    );
    let png = browser.screenshot(&shots.join("flaky.png"));
    assert!(
        png.len() > 10_000,
        "the screenshot looks blank: {} bytes",
        png.len()
    );
}

/// Sends a raw request to the object named `name` through the test Worker.
fn object_request(w: &Wrangler, name: &str, op: Value) -> Value {
    let body = serde_json::json!({"job": name, "op": op}).to_string();
    let (code, answer) = w.request("POST", &format!("/__object/{name}"), None, &body);
    assert_eq!(code, 200, "{answer}");
    let reply: Value = serde_json::from_str(&answer).unwrap();
    reply
        .get("Ok")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: {reply}"))
}

/// The jobs the tick object holds as woken at `now_ms` (read-only).
fn woken(w: &Wrangler, now_ms: i64) -> Vec<(String, String)> {
    let now =
        cronslot_core::coord::format_instant(jiff::Timestamp::from_millisecond(now_ms).unwrap());
    let answer = object_request(
        w,
        TICK_OBJECT,
        serde_json::json!({"tick_start": {"now": now, "limit": 100}}),
    );
    answer["tick"]["woken"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["job"].as_str().unwrap().to_string(),
                e["at"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Waits (real time) until the tick object holds `job` as woken at `now_ms`:
/// the job's object's alarm has fired and sent it.
fn wait_woken(w: &Wrangler, job: &str, now_ms: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while !woken(w, now_ms).iter().any(|(j, _)| j == job) {
        assert!(
            std::time::Instant::now() < deadline,
            "{job}'s alarm never woke it: {:?}\n{}",
            woken(w, now_ms),
            w.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The objects of the test Worker: its jobs' and the tick object.
const OBJECTS: [&str; 6] = ["quick", "flaky", "slow", "hook", "wobbly", TICK_OBJECT];

/// Requests and alarms served, per object.
type Counts = std::collections::BTreeMap<String, (u64, u64)>;

/// Requests and alarms each object has served (with counting on).
fn counts(w: &Wrangler) -> Counts {
    OBJECTS
        .iter()
        .map(|name| {
            let c = &object_request(w, name, Value::from("requests"))["count"];
            (
                name.to_string(),
                (
                    c["requests"].as_u64().unwrap(),
                    c["alarms"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// What each object served between two counts (objects with nothing left
/// out): (requests, alarms).
fn cost(before: &Counts, after: &Counts) -> Counts {
    after
        .iter()
        .map(|(k, (r, a))| (k.clone(), (r - before[k].0, a - before[k].1)))
        .filter(|(_, c)| *c != (0, 0))
        .collect()
}

fn expect(pairs: &[(&str, u64, u64)]) -> Counts {
    pairs
        .iter()
        .map(|(k, r, a)| (k.to_string(), (*r, *a)))
        .collect()
}

/// What a tick costs in Durable Object requests, counted by the objects
/// themselves (every request and every alarm they serve): a tick with
/// nothing due costs two (the tick object's start and end), a tick with N
/// due jobs 2N + 2 (plus what the jobs' runs ask of their objects, such as
/// effects); a retry reaches a tick through the job object's alarm
/// and the tick object, and the ticks in between touch no job. The ticks'
/// times are a little ahead of real time, so that the retry's alarm fires
/// after the in-between ticks, as it would on Cloudflare.
#[test]
fn a_tick_costs_what_is_due_in_durable_object_requests() {
    let state = state_dir("cf-tick-cost");
    let w = Wrangler::start(
        WORKER,
        state.path(),
        &[
            ("CRONSLOT_ADMIN_TOKEN", TOKEN),
            ("CRONSLOT_COUNT_REQUESTS", "1"),
        ],
    );
    let tick = "* * * * *";
    // The next whole minute at least 10 s ahead such that neither it nor
    // the minute before (the first tick's) is a ten-minute one (`flaky`'s
    // slots): `quick` and `wobbly` are due there, nothing else.
    let now = jiff::Timestamp::now().as_millisecond();
    let mut b = (now + 10_000).div_euclid(60_000) * 60_000 + 60_000;
    while b % 600_000 == 0 || (b - 60_000) % 600_000 == 0 {
        b += 60_000;
    }
    // One tick at `t`: what it cost each object.
    let step = |before: &mut Counts, t: i64, expected: &[(&str, u64, u64)], what: &str| {
        assert_eq!(w.fire(tick, t).0, 200);
        let after = counts(&w);
        assert_eq!(
            cost(before, &after),
            expect(expected),
            "{what}\n{}",
            w.log_text()
        );
        *before = after;
    };
    let mut before = counts(&w);
    // The first tick sets the mark and looks back a minute: the two
    // every-minute jobs get their records (one claim each, which finds the
    // slot from before the record and runs nothing).
    step(
        &mut before,
        b - 60_000,
        &[("quick", 1, 0), ("wobbly", 1, 0), (TICK_OBJECT, 2, 0)],
        "the first tick sets the mark",
    );
    step(
        &mut before,
        b - 30_000,
        &[(TICK_OBJECT, 2, 0)],
        "nothing due",
    );
    // Two due: a claim and a completion (or failure) each, and the tick's
    // two. `quick`'s run also records one effect (its begin and finish are
    // two more requests to its object: the job's own work, not the tick's).
    step(
        &mut before,
        b,
        &[("quick", 2 + 2, 0), ("wobbly", 2, 0), (TICK_OBJECT, 2, 0)],
        "two due",
    );
    // wobbly failed: its retry is its record's wake, and its object's alarm.
    // (The status route asks every job's object: counted, then set aside.)
    let s = status(&w);
    before = counts(&w);
    let wake_text = job(&s, "wobbly")["record"]["wake_at"]
        .as_str()
        .unwrap_or_else(|| panic!("wobbly has a wake: {s}"))
        .to_string();
    let wake = wake_text
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_millisecond();
    assert!(wake > b && wake <= b + 21_000, "{wake} after {b}");
    assert!(
        jiff::Timestamp::now().as_millisecond() < wake,
        "the test was too slow to tick before the retry's alarm"
    );
    // Ticks before the wake (in scheduled and in real time) touch no job.
    for t in [b + (wake - b) / 3, b + 2 * (wake - b) / 3] {
        if t > b {
            step(&mut before, t, &[(TICK_OBJECT, 2, 0)], "before the wake");
        }
    }
    // The alarm fires at the wake (real time) and sends it to the tick
    // object: one alarm, one request to the tick object. (Waited for by
    // the counts, which reading does not change.) The bound is the wake
    // itself plus a minute for a busy machine, not a span from now: the
    // wake may be two minutes off when `b` had to skip ten-minute slots.
    let until_wake = wake - jiff::Timestamp::now().as_millisecond();
    let deadline = std::time::Instant::now()
        + std::time::Duration::from_millis(u64::try_from(until_wake).unwrap_or(0))
        + std::time::Duration::from_secs(60);
    let after = loop {
        let now = counts(&w);
        if now[TICK_OBJECT].0 > before[TICK_OBJECT].0 && now["wobbly"].1 > before["wobbly"].1 {
            break now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the wake never came: waited until a minute past the wake at {wake_text}: {now:?}\n{}",
            w.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(
        cost(&before, &after),
        expect(&[("wobbly", 0, 1), (TICK_OBJECT, 1, 0)]),
        "the alarm\n{}",
        w.log_text()
    );
    assert_eq!(woken(&w, b + 59_000), [("wobbly".to_string(), wake_text)]);
    before = counts(&w);
    // The next tick serves the retry: a claim and a completion.
    step(
        &mut before,
        (wake + 1_000).max(b + 30_000),
        &[("wobbly", 2, 0), (TICK_OBJECT, 2, 0)],
        "the woken retry",
    );
    let s = status(&w);
    before = counts(&w);
    let slot = cronslot_core::coord::format_instant(jiff::Timestamp::from_millisecond(b).unwrap());
    let h = history(job(&s, "wobbly"));
    assert!(
        h.contains(&(slot.clone(), 1, "failed".into()))
            && h.contains(&(slot, 2, "succeeded".into())),
        "{h:?}"
    );
    assert!(job(&s, "wobbly")["record"]["wake_at"].is_null(), "{s}");
    step(
        &mut before,
        b + 50_000,
        &[(TICK_OBJECT, 2, 0)],
        "nothing due after the retry",
    );
    // The repair `cronslot init` runs asks each job's object once, in name
    // order, and never the tick object; these objects were all written
    // with their wakes, so none needs one.
    let (code, body) = w.request("POST", "/cronslot/repair", Some(TOKEN), "");
    assert_eq!(code, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["checked"], 5, "{doc}");
    assert_eq!(doc["repaired"], Value::Array(Vec::new()), "{doc}");
    assert!(doc["next"].is_null(), "{doc}");
    let after = counts(&w);
    assert_eq!(
        cost(&before, &after),
        expect(&[
            ("flaky", 1, 0),
            ("hook", 1, 0),
            ("quick", 1, 0),
            ("slow", 1, 0),
            ("wobbly", 1, 0)
        ]),
        "the repair"
    );
}

#[test]
fn a_run_killed_with_the_runtime_is_retried_with_a_higher_fence() {
    let state = state_dir("cf-restart");
    let mut w = Wrangler::start(WORKER, state.path(), &[("CRONSLOT_ADMIN_TOKEN", TOKEN)]);
    // `slow`'s first attempt never ends. Run its current slot now through
    // the admin route; the request does not return while the run goes on,
    // so it is sent from a thread, and the runtime killed once the object
    // holds the lease.
    let port = w.port;
    let firing = std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(
                s,
                "POST /cronslot/jobs/slow/trigger HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let first_fence = loop {
        let s = status(&w);
        let slow = job(&s, "slow");
        if let Some(lease) = slow["record"]["leases"].as_array().and_then(|l| l.first()) {
            break lease["fence"].as_u64().unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "slow never claimed: {slow}\n{}",
            w.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    w.restart();
    let _ = firing.join();
    // The state survived the restart: the lease is still held.
    let s = status(&w);
    assert_eq!(
        job(&s, "slow")["record"]["leases"][0]["fence"],
        first_fence,
        "{s}"
    );
    // Once the lease (1 min + 1 s margin) has expired, the slot runs again
    // with a higher fence, and this second attempt succeeds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(150);
    loop {
        let (code, body) = w.request("POST", "/cronslot/jobs/slow/trigger", Some(TOKEN), "");
        if code == 200 {
            break;
        }
        assert_eq!(
            code, 409,
            "only 'nothing claimed' while the lease lives: {body}"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "never retried: {body}"
        );
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    let s = status(&w);
    let slow = job(&s, "slow");
    let h = history(slow);
    assert!(
        h.iter()
            .any(|(_, attempt, outcome)| *attempt >= 2 && outcome == "succeeded"),
        "{h:?}\n{slow}"
    );
    assert!(slow["fence"].as_u64().unwrap() > first_fence, "{slow}");
}

/// A request as the hook saw it: its request line and its headers.
type Seen = (String, Vec<(String, String)>);

/// The requests an HTTP server received (request line, headers with
/// lower-case names), answering each with the next status of a list.
struct Hook {
    seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
}

impl Hook {
    fn serve(port: u16, statuses: Vec<u16>) -> Hook {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| {
            panic!("the hook's port {port} (tests/cf-worker/cronslot.toml): {e}")
        });
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for (stream, status) in listener.incoming().zip(statuses) {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap() == 0 || h.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = h.trim_end().split_once(':') {
                        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
                    }
                }
                record
                    .lock()
                    .unwrap()
                    .push((line.trim_end().to_string(), headers));
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy"
                );
            }
        });
        Hook { seen }
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    headers
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

/// An `http` job through the Worker's fetch: cronslot's headers and the
/// manifest's; a 503 is transient and
/// retried with the same idempotency key, a higher fence and attempt 2.
#[test]
fn http_job_through_the_workers_fetch() {
    let hook = Hook::serve(18791, vec![503, 204]);
    let state = state_dir("cf-http");
    let w = Wrangler::start(WORKER, state.path(), &[("CRONSLOT_ADMIN_TOKEN", TOKEN)]);
    let (code, body) = w.request("POST", "/cronslot/jobs/hook/trigger", Some(TOKEN), "");
    assert_eq!(code, 500, "the first attempt fails (503): {body}");
    let first: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(first["permanent"], false, "{first}");
    assert!(
        first["error"]
            .as_str()
            .unwrap()
            .contains("HTTP 503 from http://127.0.0.1:18791/hooks/cronslot?from=workerd: busy"),
        "{first}"
    );
    let slot_id = first["slot_id"].as_str().unwrap().to_string();
    // The retry is due after the 1 s backoff.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let second = loop {
        let (code, body) = w.request("POST", "/cronslot/jobs/hook/trigger", Some(TOKEN), "");
        if code == 200 {
            break serde_json::from_str::<Value>(&body).unwrap();
        }
        assert_eq!(code, 409, "only 'not yet' before the retry is due: {body}");
        assert!(
            std::time::Instant::now() < deadline,
            "never retried: {body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert_eq!(second["slot_id"], slot_id.as_str());
    assert_eq!(second["attempt"], 2);

    let requests = hook.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let slot = slot_id.split_once('@').unwrap().1;
    let mut fences = Vec::new();
    for (i, (line, headers)) in requests.iter().enumerate() {
        assert_eq!(line, "PUT /hooks/cronslot?from=workerd HTTP/1.1");
        assert_eq!(header(headers, "idempotency-key"), [slot_id.as_str()]);
        assert_eq!(
            header(headers, "cronslot-attempt"),
            [(i + 1).to_string().as_str()]
        );
        assert_eq!(header(headers, "cronslot-scheduled-at"), [slot]);
        assert_eq!(header(headers, "x-team"), ["payroll"]);
        // The runtime's User-Agent, the same on every platform.
        assert_eq!(
            header(headers, "user-agent"),
            [cronslot_runtime::http::USER_AGENT]
        );
        let fence = header(headers, "cronslot-fence");
        assert_eq!(fence.len(), 1, "one fence: {headers:?}");
        fences.push(fence[0].parse::<u64>().unwrap());
    }
    assert!(fences[1] > fences[0], "{fences:?}");
    assert_eq!(second["fence"], fences[1]);

    let h = history(job(&status(&w), "hook"));
    assert!(h.contains(&(slot.to_string(), 1, "failed".into())), "{h:?}");
    assert!(
        h.contains(&(slot.to_string(), 2, "succeeded".into())),
        "{h:?}"
    );
}

/// A directory removed when dropped.
mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new(name: &str) -> Dir {
            let path = std::env::temp_dir().join(format!(
                "cronslot-{name}-{}-{}",
                std::process::id(),
                jiff::Timestamp::now().as_nanosecond()
            ));
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The test Worker of the previous release, built by `scripts/baseline`.
fn baseline_worker() -> std::path::PathBuf {
    let dir = cronslot_tests::baseline::built("cf-worker");
    assert!(
        dir.join("build/index.js").is_file(),
        "{} has no build: run scripts/baseline",
        dir.display()
    );
    dir
}

/// Two Workers in one runtime: `front` (serving HTTP and the Cron
/// Triggers) binds the Durable Object class of `objects`, as a gradual
/// deployment pairs one version's Worker with another's objects.
fn paired_configs(
    dir: &std::path::Path,
    front: &std::path::Path,
    objects: &std::path::Path,
) -> Vec<std::path::PathBuf> {
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let front_toml = format!(
        r#"name = "cronslot-front"
main = "{}/build/index.js"
compatibility_date = "2026-08-01"

[assets]
directory = "{}/assets"

[triggers]
crons = ["* * * * *"]

[[durable_objects.bindings]]
name = "CRONSLOT_JOBS"
class_name = "CronslotJob"
script_name = "cronslot-objects"
"#,
        front.display(),
        front.display()
    );
    let objects_toml = format!(
        r#"name = "cronslot-objects"
main = "{}/build/index.js"
compatibility_date = "2026-08-01"

[assets]
directory = "{}/assets"

[[durable_objects.bindings]]
name = "CRONSLOT_JOBS"
class_name = "CronslotJob"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["CronslotJob"]
"#,
        objects.display(),
        objects.display()
    );
    vec![
        write("front.toml", front_toml),
        write("objects.toml", objects_toml),
    ]
}

/// A gradual deployment (issue 29): the previous release's Worker against
/// this tree's Durable Object code, and this tree's Worker against the
/// previous release's objects, each pair in one workerd. The behaviour is
/// served, both ways: a Worker of this release sends object protocol 2,
/// which an object of the previous release (protocol 1, which never read
/// the number) serves as before; a Worker of the previous release sends no
/// number, which this release's objects read as protocol 1 and serve. In
/// each pairing a tick runs a due job once (a second delivery runs
/// nothing), and a dynamic job's schedule is written, read and listed, and
/// its keyed run enqueued and run, through the front Worker's routes. A
/// request of a protocol newer than an object's is refused naming both
/// (`cf-adapter/tests/it/object_native.rs`).
#[test]
fn the_previous_worker_and_this_one_serve_each_others_durable_objects() {
    let previous = baseline_worker();
    let this = cronslot_tests::workerd::repo_root().join(WORKER);
    for (front, objects, pairing) in [
        (
            &previous,
            &this,
            "the previous Worker with this tree's objects",
        ),
        (
            &this,
            &previous,
            "this Worker with the previous release's objects",
        ),
    ] {
        let dir = state_dir("cf-versions");
        let configs = paired_configs(dir.path(), front, objects);
        let w = Wrangler::start_configs(
            &configs,
            &dir.path().join("state"),
            &[("CRONSLOT_ADMIN_TOKEN", TOKEN)],
        );
        let call = |method: &str, path: &str, body: &str| {
            let (code, text) = w.request(method, path, Some(TOKEN), body);
            let doc = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
            (code, doc, text)
        };
        // Which object code answers: a request of a protocol newer than
        // this release's is refused naming both by this release's objects,
        // and is not even readable to the previous release's (which did
        // not read a protocol number yet).
        let newer = cronslot_cf::protocol::PROTOCOL_VERSION + 1;
        let body = format!(
            r#"{{"protocol":{newer},"job":"quick","spec":"","op":{{"launch_rockets":{{}}}}}}"#
        );
        let (code, answer) = w.request("POST", "/__object/quick", None, &body);
        assert_eq!(code, 200, "{pairing}: {answer}");
        if std::ptr::eq(objects, &this) {
            assert!(
                answer.contains(&format!("object protocol {newer}"))
                    && answer.contains("unavailable"),
                "{pairing}: {answer}"
            );
        } else {
            assert!(
                answer.contains("not a cronslot object request") && !answer.contains("protocol"),
                "{pairing}: {answer}"
            );
        }
        let tick = "* * * * *";
        let b = base();
        assert_eq!(w.fire(tick, b - 60_000).0, 200, "{pairing}");
        assert_eq!(w.fire(tick, b).0, 200, "{pairing}");
        assert_eq!(w.fire(tick, b).0, 200, "{pairing}");
        let s = status(&w);
        let quick = job(&s, "quick");
        assert_eq!(
            (quick["runs"].as_u64(), quick["succeeded"].as_u64()),
            (Some(1), Some(1)),
            "{pairing}: {quick}\n{}",
            w.log_text()
        );

        let spec =
            r#"{"cron": "0 9 * * *", "timezone": "Europe/Paris", "payload": {"tenant": "v-1"}}"#;
        let (code, _, text) = call("PUT", "/cronslot/schedules/tenant/v-1", spec);
        assert_eq!(code, 201, "{pairing}: {text}");
        let (code, one, text) = call("GET", "/cronslot/schedules/tenant/v-1", "");
        assert_eq!(
            (code, &one["version"]),
            (200, &Value::from(1)),
            "{pairing}: {text}"
        );
        let (code, page, text) = call("GET", "/cronslot/schedules/tenant", "");
        assert_eq!(code, 200, "{pairing}: {text}");
        assert_eq!(page["schedules"][0]["key"], "v-1", "{pairing}: {text}");

        let body = r#"{"payload": {"tenant":"r-1"}}"#;
        let (code, _, text) = call("PUT", "/cronslot/runs/tenant/r-1", body);
        assert_eq!(code, 202, "{pairing}: {text}");
        let now = jiff::Timestamp::now().as_millisecond() + 1_000;
        wait_woken(&w, "tenant/r-1", now);
        assert_eq!(w.fire(tick, now).0, 200);
        let (code, done, text) = call("GET", "/cronslot/runs/tenant/r-1", "");
        assert_eq!(
            (code, done["status"].as_str(), done["attempts"].as_u64()),
            (200, Some("succeeded"), Some(1)),
            "{pairing}: {text}\n{}",
            w.log_text()
        );
    }
}
