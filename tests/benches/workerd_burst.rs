//! The 09:00 burst on Cloudflare (issue 28), in workerd: `SLOTS`
//! (100,000) one-off schedules of the test Worker's dynamic job `tenant`
//! at the same minute, written through the Worker's bulk route (1,000 a
//! request) into its Durable Objects (4 schedule objects, as the test
//! Worker spreads them), paged through with the listing route, then
//! worked through by ticks: Cron Trigger events fired one after another,
//! each serving at most the Worker's `max_jobs_per_tick` (240, for a
//! Worker's subrequests). On Cloudflare the ticks come a minute apart, so
//! the printed number of ticks is the burst's minutes there.
//!
//! Prints the writes per second, the listing's pages, a tick with nothing
//! due (its time, and the requests the tick object served), each
//! hundredth tick, the number of ticks, and the checks read from every
//! schedule's record: each slot once, none twice, no lease left.
//!
//! `scripts/build-workers` first (the Worker of `tests/cf-worker`), then
//! `cargo bench -p cronslot-tests --bench workerd_burst`; `SLOTS`.

use std::time::{Duration, Instant};

use cronslot_cf::ObjectClient;
use cronslot_cf::protocol::TICK_OBJECT;
use cronslot_core::coord::format_instant;
use cronslot_core::manifest::parse_manifest;
use cronslot_tests::burst;
use cronslot_tests::workerd::{ViaWorker, Wrangler};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const WORKER: &str = "tests/cf-worker";
const TOKEN: &str = "bench-admin-token-0123456789";
const JOB: &str = "tenant";
const TICK: &str = "* * * * *";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn call(w: &Wrangler, method: &str, path: &str, body: &str) -> Value {
    let (code, text) = w.request(method, path, Some(TOKEN), body);
    assert!(code < 300, "{method} {path}: {code} {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
}

/// A raw request to an object through the test Worker's route.
fn object_request(w: &Wrangler, name: &str, op: Value) -> Value {
    let body = json!({"job": name, "op": op}).to_string();
    let (code, answer) = w.request("POST", &format!("/__object/{name}"), None, &body);
    assert_eq!(code, 200, "{answer}");
    let reply: Value = serde_json::from_str(&answer).expect("an object's reply");
    reply
        .get("Ok")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: {reply}"))
}

/// How many jobs the tick object holds as woken at `now` (at most
/// `limit`).
fn woken(w: &Wrangler, now: Timestamp, limit: usize) -> usize {
    let answer = object_request(
        w,
        TICK_OBJECT,
        json!({"tick_start": {"now": format_instant(now), "limit": limit}}),
    );
    answer["tick"]["woken"].as_array().map_or(0, Vec::len)
}

fn tick_object_requests(w: &Wrangler) -> u64 {
    object_request(w, TICK_OBJECT, Value::from("requests"))["count"]["requests"]
        .as_u64()
        .unwrap_or(0)
}

fn main() {
    let slots: usize = env_or("SLOTS", 100_000);
    let state = std::env::temp_dir().join(format!("cronslot-workerd-burst-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&state);
    let w = Wrangler::start(
        WORKER,
        &state,
        &[
            ("CRONSLOT_ADMIN_TOKEN", TOKEN),
            ("CRONSLOT_COUNT_REQUESTS", "1"),
        ],
    );
    // The first tick sets the mark.
    assert_eq!(w.fire(TICK, Timestamp::now().as_millisecond()).0, 200);

    // The minute: far enough ahead for the writes.
    let lead = 60 + slots as i64 / 500;
    let minute = (Timestamp::now().as_second() + lead).div_euclid(60) * 60 + 60;
    let at = Timestamp::from_second(minute).expect("an instant");
    let started = Instant::now();
    for first in (0..slots).step_by(1000) {
        let entries: Vec<Value> = (first..slots.min(first + 1000))
            .map(|i| {
                let key = format!("tenant-{i:07}");
                json!({"key": key, "spec": {"at": format_instant(at), "payload": {"tenant": key}}})
            })
            .collect();
        let doc = call(
            &w,
            "POST",
            &format!("/cronslot/schedules/{JOB}"),
            &json!({ "schedules": entries }).to_string(),
        );
        assert_eq!(doc["failed"], 0, "{doc}");
    }
    let wrote = started.elapsed().as_secs_f64();
    println!(
        "workerd   {slots} schedules at {at}: written in {wrote:.1} s ({:.0}/s, 1,000 a request)",
        slots as f64 / wrote
    );

    let started = Instant::now();
    let (mut pages, mut listed) = (0, 0);
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(after) => format!("/cronslot/schedules/{JOB}?limit=1000&cursor={after}"),
            None => format!("/cronslot/schedules/{JOB}?limit=1000"),
        };
        let page = call(&w, "GET", &path, "");
        pages += 1;
        listed += page["schedules"].as_array().map_or(0, Vec::len);
        cursor = page["cursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    let took = started.elapsed().as_secs_f64();
    assert_eq!(listed, slots, "the listing meets every schedule once");
    println!(
        "workerd   listed {listed} in {pages} pages of 1,000 in {took:.1} s ({:.0} ms a page)",
        took * 1e3 / pages as f64
    );

    let before = tick_object_requests(&w);
    let started = Instant::now();
    assert_eq!(w.fire(TICK, Timestamp::now().as_millisecond()).0, 200);
    let idle = started.elapsed();
    let cost = tick_object_requests(&w) - before;
    println!(
        "workerd   a tick with nothing due among {slots}: {:.1} ms, {cost} requests to the tick object",
        idle.as_secs_f64() * 1e3
    );

    // At the minute the schedule objects' alarms hand their wakes to the
    // tick object.
    let due = at + SignedDuration::from_secs(1);
    let wait = due.duration_since(Timestamp::now());
    if wait.is_positive() {
        std::thread::sleep(Duration::try_from(wait).expect("a wait"));
    }
    let started = Instant::now();
    while woken(&w, Timestamp::now(), 1) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no wake reached the tick object\n{}",
            w.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let burst_started = Instant::now();
    let mut ticks = 0;
    loop {
        let fired = Instant::now();
        let (code, text) = w.fire(TICK, Timestamp::now().as_millisecond());
        assert_eq!(code, 200, "{text}");
        ticks += 1;
        if ticks % 100 == 0 {
            println!(
                "workerd   tick {ticks}: {:.1} s, {:.0} s since the first",
                fired.elapsed().as_secs_f64(),
                burst_started.elapsed().as_secs_f64()
            );
        }
        if woken(&w, Timestamp::now(), 1) == 0 {
            break;
        }
        assert!(ticks < 10 * slots / 240 + 100, "the burst does not drain");
    }
    let took = burst_started.elapsed().as_secs_f64();

    let manifest_path = cronslot_tests::workerd::repo_root()
        .join(WORKER)
        .join("cronslot.toml");
    let text = std::fs::read_to_string(&manifest_path).expect("the test Worker's manifest");
    let manifest = parse_manifest(&text, "cronslot.toml").unwrap_or_else(|e| panic!("{e}"));
    let template = manifest
        .templates
        .iter()
        .find(|t| t.name.as_str() == JOB)
        .expect("the dynamic job");
    let client = ObjectClient::new(ViaWorker(&w)).with_schedule_objects(4);
    let outcome = burst::check_schedules(&client, template, at);
    println!(
        "workerd   {slots} slots at {at}: {ticks} ticks back to back in {took:.0} s \
         ({:.0} slots a tick; on Cloudflare, a tick a minute: {ticks} minutes); {}",
        slots as f64 / ticks as f64,
        outcome.summary()
    );
    outcome.assert_every_slot_once(slots);
    drop(w);
    let _ = std::fs::remove_dir_all(&state);
}
