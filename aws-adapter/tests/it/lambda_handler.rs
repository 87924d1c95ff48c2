//! The invocation handler driven directly (not through the Lambda runtime)
//! against the memory store, with a fake clock and a fake deadline.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cronslot_aws::lambda::{
    ErrorKind, Handler, HandlerError, Host, Invocation, JobError, Jobs, ManifestSource, check,
};
use cronslot_core::coord::Operator;
use cronslot_core::coord::{CasCoordinator, Claim, Coordinator, JobState, MemoryStore, Trigger};
use cronslot_core::manifest::{Manifest, parse_manifest};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const MANIFEST: &str = include_str!("../fixtures/cronslot.toml");

fn at(text: &str) -> Timestamp {
    text.parse().expect("instant")
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn manifest(text: &str) -> Manifest {
    parse_manifest(text, "cronslot.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// State shared with job functions, which must be `Send + Sync` (the
/// registry is shared by the local runner's threads).
#[derive(Clone, Default)]
struct Shared<T>(Arc<Mutex<T>>);

impl<T: Clone> Shared<T> {
    fn new(value: T) -> Shared<T> {
        Shared(Arc::new(Mutex::new(value)))
    }
    fn get(&self) -> T {
        self.0.lock().unwrap().clone()
    }
    fn set(&self, value: T) {
        *self.0.lock().unwrap() = value;
    }
    fn borrow(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap()
    }
    fn borrow_mut(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap()
    }
}

/// A clock the test moves, a log the test reads, a store the test inspects.
struct World {
    now: Rc<Cell<Timestamp>>,
    lines: Rc<RefCell<Vec<String>>>,
    store: MemoryStore,
    handler: Handler<MemoryStore>,
    /// Lambda functions get a timeout; the fake deadline is now + this.
    timeout: Duration,
    requests: Cell<u32>,
}

impl World {
    fn new(manifest_text: &str, jobs: Jobs, start: &str) -> World {
        let now = Rc::new(Cell::new(at(start)));
        let lines = Rc::new(RefCell::new(Vec::new()));
        let store = MemoryStore::new();
        let clock = now.clone();
        let sink = lines.clone();
        let host = Host {
            clock: Rc::new(move || clock.get()),
            log: Rc::new(move |line: &str| sink.borrow_mut().push(line.to_string())),
            seed: 7,
        };
        let shared = store.clone();
        let handler = Handler::new(
            manifest(manifest_text),
            jobs,
            move |_: &Invocation| shared.clone(),
            host,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        World {
            now,
            lines,
            store,
            handler,
            timeout: Duration::from_secs(60),
            requests: Cell::new(0),
        }
    }

    fn set(&self, t: &str) {
        self.now.set(at(t));
    }

    fn invocation(&self) -> Invocation {
        let n = self.requests.get() + 1;
        self.requests.set(n);
        let timeout = SignedDuration::try_from(self.timeout).expect("timeout");
        Invocation {
            request_id: format!("request-{n}"),
            deadline: self.now.get().checked_add(timeout).expect("deadline"),
        }
    }

    async fn deliver(&self, payload: &Value) -> Result<Value, HandlerError> {
        let inv = self.invocation();
        self.handler.handle(payload, &inv).await
    }

    async fn state(&self, job: &str) -> JobState {
        let spec = self.handler.manifest().job(job).expect("job").clone();
        let c = CasCoordinator::new(self.store.clone(), 1);
        c.status(&spec, self.now.get()).await.expect("status")
    }

    fn lines(&self, msg: &str) -> Vec<Value> {
        self.lines
            .borrow()
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
            .filter(|v| v["msg"] == msg)
            .collect()
    }
}

/// Counts the runs of a job.
fn counting(
    count: &Shared<u32>,
) -> impl Fn(
    cronslot_aws::RunContext,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), JobError>>>>
+ 'static {
    let count = count.clone();
    move |_ctx| {
        count.set(count.get() + 1);
        Box::pin(async { Ok(()) })
    }
}

fn default_jobs(report: &Shared<u32>) -> Jobs {
    let none = Shared::new(0);
    Jobs::new()
        .register("report", counting(report))
        .register("sweep", counting(&none))
        .register("rollup", counting(&none))
}

/// Gives `report` a record (as an earlier invocation would have) before
/// its first slot.
async fn create_report_record(w: &World, when: &str) {
    let spec = w.handler.manifest().job("report").expect("report").clone();
    let c = CasCoordinator::new(w.store.clone(), 1);
    let claim = c.claim(&spec, at(when), Trigger::Tick, "creator").await;
    assert!(matches!(claim, Ok(Claim::Idle(_))), "{claim:?}");
}

fn kind(result: &Result<Value, HandlerError>) -> Option<ErrorKind> {
    result.as_ref().err().map(|e| e.kind)
}

#[tokio::test]
async fn the_same_scheduler_event_three_times_runs_once() {
    let runs = Shared::new(0);
    let w = World::new(MANIFEST, default_jobs(&runs), "2026-03-08T13:30:00Z");
    create_report_record(&w, "2026-03-08T13:30:00Z").await;
    let event = fixture("scheduler.json");

    w.set("2026-03-08T14:00:00.400Z");
    let first = w.deliver(&event).await.expect("first delivery runs");
    assert_eq!(runs.get(), 1);
    assert_eq!(first["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(first["runs"][0]["outcome"], "succeeded");
    assert_eq!(first["runs"][0]["slot"], "2026-03-08T14:00:00Z");
    let (writes, reads) = (w.store.writes(), w.store.reads());
    assert_eq!(
        (writes - 1, reads),
        (2, 2),
        "claim: 1 read + 1 write; completion: 1 write"
    );

    for t in ["2026-03-08T14:00:01Z", "2026-03-08T14:03:00Z"] {
        w.set(t);
        let again = w.deliver(&event).await.expect("a duplicate succeeds");
        assert_eq!(again["runs"], Value::Array(vec![]));
        assert_eq!(again["idle"][0]["reason"], "already_resolved");
    }
    assert_eq!(runs.get(), 1, "one run for three deliveries");
    assert_eq!(w.store.writes(), writes, "duplicates write nothing");
    assert_eq!(w.store.reads(), reads + 2, "a duplicate costs one read");
}

#[tokio::test]
async fn the_first_delivery_of_a_new_job_runs_its_slot() {
    // No record yet: the delivery of the job's first slot is the first time
    // any coordinator sees the job, a moment after the slot came due.
    let runs = Shared::new(0);
    let w = World::new(MANIFEST, default_jobs(&runs), "2026-03-08T14:00:00.300Z");
    let event = fixture("scheduler.json");
    let first = w.deliver(&event).await.expect("runs");
    assert_eq!(runs.get(), 1);
    assert_eq!(first["runs"][0]["outcome"], "succeeded");
    // The claim creates the record just before the slot: a normal run's
    // cost, 1 read and 2 writes.
    assert_eq!((w.store.reads(), w.store.writes()), (1, 2));
    w.set("2026-03-08T14:00:02Z");
    let again = w.deliver(&event).await.expect("duplicate");
    assert_eq!(again["idle"][0]["reason"], "already_resolved");
    assert_eq!(runs.get(), 1);
    let state = w.state("report").await;
    assert_eq!(state.counters.succeeded, 1);
}

#[tokio::test]
async fn a_rule_event_and_a_scheduler_event_are_the_same_slot() {
    let runs = Shared::new(0);
    let w = World::new(MANIFEST, default_jobs(&runs), "2026-03-08T13:30:00Z");
    create_report_record(&w, "2026-03-08T13:30:00Z").await;
    w.set("2026-03-08T14:00:02Z");
    let out = w
        .deliver(&fixture("rule.json"))
        .await
        .expect("rule event runs");
    assert_eq!(out["source"], "rule");
    assert_eq!(runs.get(), 1);
    let dup = w
        .deliver(&fixture("scheduler.json"))
        .await
        .expect("duplicate");
    assert_eq!(dup["idle"][0]["reason"], "already_resolved");
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn a_tick_runs_every_due_tick_mode_job_concurrently() {
    let in_flight = Shared::new(0u32);
    let most = Shared::new(0u32);
    let ran = Shared::new(Vec::new());
    let job = |name: &'static str| {
        let (in_flight, most, ran) = (in_flight.clone(), most.clone(), ran.clone());
        move |ctx: cronslot_aws::RunContext| {
            let (in_flight, most, ran) = (in_flight.clone(), most.clone(), ran.clone());
            async move {
                in_flight.set(in_flight.get() + 1);
                most.set(most.get().max(in_flight.get()));
                // Yield so the other job's future gets polled meanwhile.
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                in_flight.set(in_flight.get() - 1);
                ran.borrow_mut()
                    .push(format!("{name} {}", ctx.idempotency_key()));
                Ok(())
            }
        }
    };
    let jobs = Jobs::new()
        .register("report", |_| async { Ok(()) })
        .register("sweep", job("sweep"))
        .register("rollup", job("rollup"));
    let w = World::new(MANIFEST, jobs, "2026-03-08T14:04:30Z");
    // The table's first tick plans nothing and reads no job: it writes
    // the tick mark, from which the next tick plans.
    let first = w
        .deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("tick");
    assert_eq!(first["runs"], Value::Array(vec![]));
    assert_eq!(first["idle"], Value::Array(vec![]));
    assert_eq!(
        (first["planned"].as_u64(), first["woken"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!((w.store.reads(), w.store.writes()), (1, 1), "the mark only");

    w.set("2026-03-08T14:05:00.200Z");
    let out = w
        .deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("tick");
    assert_eq!(out["trigger"], "tick");
    assert_eq!(out["runs"].as_array().map(Vec::len), Some(2));
    let mut ran = ran.borrow().clone();
    ran.sort();
    assert_eq!(
        ran,
        [
            "rollup rollup@2026-03-08T14:05:00Z",
            "sweep sweep@2026-03-08T14:05:00Z"
        ]
    );
    assert_eq!(most.get(), 2, "both jobs ran at once");

    assert_eq!(out["planned"].as_u64(), Some(2));
    // The tick rule, a few seconds later: nothing left to do, and no job
    // read: the mark covers 14:05 already, and, 9 s old, stays where it
    // is (MARK_REFRESH): the mark's read alone.
    w.set("2026-03-08T14:05:09Z");
    let (reads, writes) = (w.store.reads(), w.store.writes());
    let out = w.deliver(&fixture("tick-rule.json")).await.expect("tick");
    assert_eq!(out["runs"], Value::Array(vec![]));
    assert_eq!(out["idle"], Value::Array(vec![]));
    assert_eq!((w.store.reads() - reads, w.store.writes() - writes), (1, 0));
}

/// A dedicated job whose schedule EventBridge cannot express exactly gets no
/// schedule of its own (`cronslot render` puts it on the tick): the tick
/// must serve it, or it would never run.
#[tokio::test]
async fn the_tick_serves_a_dedicated_job_without_an_exact_translation() {
    let text = r#"
[[job]]
name = "berlin-nightly"
schedule = "*/5 * * * *"
trigger = "dedicated"
timezone = "Europe/Berlin"
dst_gap = "shift"
[[job]]
name = "utc-dedicated"
schedule = "*/5 * * * *"
trigger = "dedicated"
"#;
    // `*/5` is interval-like and follows real time in Berlin, exactly like
    // EventBridge; a fixed-time Berlin job with `shift` is not: check that
    // the first is exact and make the second the inexact one.
    let text = text.replacen("*/5 * * * *", "30 2 * * *", 1);
    let m = manifest(&text);
    assert!(
        cronslot_core::translate::translate(
            &m.jobs[0].schedule,
            cronslot_core::translate::Platform::EventBridge
        )
        .is_err()
    );
    assert!(
        cronslot_core::translate::translate(
            &m.jobs[1].schedule,
            cronslot_core::translate::Platform::EventBridge
        )
        .is_ok()
    );
    let ran = Shared::new(0);
    let other = Shared::new(0);
    let jobs = Jobs::new()
        .register("berlin-nightly", counting(&ran))
        .register("utc-dedicated", counting(&other));
    let w = World::new(&text, jobs, "2026-03-08T01:00:00Z");
    let tick = |t: &str| json!({"cronslot": {"tick": true, "scheduled_time": t}});
    w.deliver(&tick("2026-03-08T01:00:00Z"))
        .await
        .expect("tick");
    // 02:30 in Berlin (CET, UTC+1) is 01:30 UTC.
    w.set("2026-03-08T01:30:20Z");
    let out = w
        .deliver(&tick("2026-03-08T01:30:00Z"))
        .await
        .expect("tick");
    assert_eq!(ran.get(), 1, "{out}");
    // The exact dedicated job has its own schedule: the tick leaves it alone.
    assert_eq!(other.get(), 0, "{out}");
}

#[tokio::test]
async fn a_failed_run_is_retried_by_a_redelivery_after_its_backoff() {
    let attempts = Shared::new(Vec::new());
    let seen = attempts.clone();
    let jobs = Jobs::new()
        .register("report", move |ctx| {
            let seen = seen.clone();
            async move {
                seen.borrow_mut().push(ctx.attempt());
                if ctx.attempt() == 1 {
                    Err(JobError::transient("upstream busy"))
                } else {
                    Ok(())
                }
            }
        })
        .register("sweep", |_| async { Ok(()) })
        .register("rollup", |_| async { Ok(()) });
    let w = World::new(MANIFEST, jobs, "2026-03-08T13:30:00Z");
    create_report_record(&w, "2026-03-08T13:30:00Z").await;
    let event = fixture("scheduler.json");

    w.set("2026-03-08T14:00:00.500Z");
    let failed = w.deliver(&event).await;
    let e = failed.as_ref().expect_err("a failed run is an error");
    assert_eq!(e.kind, ErrorKind::RunFailed);
    assert!(
        e.message.starts_with("slot report@2026-03-08T14:00:00Z attempt 1 failed transiently: upstream busy; its retry may start at "),
        "{e}"
    );
    let state = w.state("report").await;
    let not_before = state.pending[0].not_before;
    let line = &w.lines("run")[0];
    assert_eq!(line["outcome"], "retrying");
    assert_eq!(line["RunFailed"], 1);

    // A re-delivery before the backoff ends changes nothing.
    if not_before > at("2026-03-08T14:00:00.500Z") {
        w.now.set(
            not_before
                .checked_sub(SignedDuration::from_millis(1))
                .expect("t"),
        );
        let writes = w.store.writes();
        assert_eq!(kind(&w.deliver(&event).await), Some(ErrorKind::RetryLater));
        assert_eq!(w.store.writes(), writes);
    }

    // Lambda's retry, a minute later: the retry runs and succeeds.
    w.set("2026-03-08T14:01:00Z");
    let ok = w.deliver(&event).await.expect("the retry succeeds");
    assert_eq!(ok["runs"][0]["attempt"], 2);
    assert_eq!(*attempts.borrow(), [1, 2]);
    let state = w.state("report").await;
    assert_eq!((state.counters.failed, state.counters.succeeded), (1, 1));
    assert!(state.pending.is_empty());

    // And the slot is resolved.
    w.set("2026-03-08T14:03:00Z");
    let dup = w.deliver(&event).await.expect("duplicate");
    assert_eq!(dup["idle"][0]["reason"], "already_resolved");
    assert_eq!(attempts.borrow().len(), 2);
}

#[tokio::test]
async fn a_permanent_failure_makes_the_slot_dead() {
    let jobs = Jobs::new()
        .register("report", |_| async {
            Err(JobError::permanent("bad input file"))
        })
        .register("sweep", |_| async { Ok(()) })
        .register("rollup", |_| async { Ok(()) });
    let w = World::new(MANIFEST, jobs, "2026-03-08T13:30:00Z");
    create_report_record(&w, "2026-03-08T13:30:00Z").await;
    w.set("2026-03-08T14:00:01Z");
    let e = w
        .deliver(&fixture("scheduler.json"))
        .await
        .expect_err("dead");
    assert_eq!(e.kind, ErrorKind::SlotDead);
    assert_eq!(
        e.message,
        "slot report@2026-03-08T14:00:00Z attempt 1 failed permanently: bad input file; the slot is a dead letter (redrive it with `cronslot dlq`)"
    );
    let line = &w.lines("run")[0];
    assert_eq!(line["SlotDead"], 1);
    assert_eq!(line["outcome"], "dead");
    let state = w.state("report").await;
    assert_eq!(state.dead.len(), 1);
}

#[tokio::test]
async fn malformed_and_unknown_payloads_are_refused_without_touching_the_store() {
    let runs = Shared::new(0);
    let w = World::new(MANIFEST, default_jobs(&runs), "2026-03-08T14:00:01Z");
    let names = [
        "malformed-not-object.json",
        "malformed-no-time.json",
        "malformed-bad-time.json",
        "malformed-placeholder.json",
        "malformed-unknown-key.json",
        "malformed-job-type.json",
        "malformed-attempt.json",
        "malformed-no-target.json",
        "malformed-rule-source.json",
        "malformed-rule-name.json",
        "unknown-job.json",
        "not-a-slot.json",
    ];
    for name in names {
        let e = w.deliver(&fixture(name)).await.expect_err(name);
        assert_eq!(e.kind, ErrorKind::InvalidEvent, "{name}");
        assert!(!e.kind.retryable());
        assert!(e.to_string().starts_with("event $"), "{name}: {e}");
    }
    assert_eq!(
        (w.store.reads(), w.store.writes()),
        (0, 0),
        "nothing read or written"
    );
    assert_eq!(runs.get(), 0);
    let refused = w.lines("refused");
    assert_eq!(refused.len(), names.len());
    let unknown = &refused[10];
    assert_eq!(unknown["error_type"], "cronslot.InvalidEvent");
    assert_eq!(unknown["retryable"], false);
    assert_eq!(unknown["path"], "$.cronslot.job");
    assert_eq!(unknown["InvalidEvent"], 1);
    assert_eq!(
        unknown["job"], "(none)",
        "unknown names do not become dimensions"
    );
    let not_a_slot = &refused[11];
    assert_eq!(not_a_slot["job"], "report");
}

#[tokio::test]
async fn a_lease_shorter_than_the_function_timeout_is_refused() {
    let text = MANIFEST.replace("lease = \"15m\"", "lease = \"2m\"");
    let runs = Shared::new(0);
    let mut w = World::new(&text, default_jobs(&runs), "2026-03-08T14:00:01Z");
    w.timeout = Duration::from_secs(900);
    let e = w
        .deliver(&fixture("scheduler.json"))
        .await
        .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Misconfigured);
    assert_eq!(
        e.message,
        "job \"report\": its lease 2m is shorter than the function's remaining time 15m plus the skew margin 5s, so a run could outlive its lease and a second copy could start; raise the job's lease to at least 15m5s, or lower the function timeout to at most 1m55s (lease − skew margin)"
    );
    assert_eq!((w.store.reads(), w.store.writes()), (0, 0));
    // The tick refuses its jobs the same way when they come due (the
    // store's first tick looks back a minute, to 14:00), and claims
    // nothing: only the mark is read and moved.
    let e = w
        .deliver(&fixture("tick-scheduler.json"))
        .await
        .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Misconfigured);
    assert!(e.message.contains("job \"rollup\""), "{e}");
    assert!(e.message.contains("job \"sweep\""), "{e}");
    assert_eq!((w.store.reads(), w.store.writes()), (1, 1));
    assert_eq!(runs.get(), 0);

    // A timeout within the lease (minus the skew margin) is fine.
    w.timeout = Duration::from_secs(115);
    w.deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("within the lease");
}

#[tokio::test]
async fn missed_slots_are_counted_in_the_run_line() {
    let runs = Shared::new(0);
    let w = World::new(MANIFEST, default_jobs(&runs), "2026-03-08T14:00:30Z");
    w.deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("creates");
    // Twenty minutes without a tick: 14:05..14:20 are due; `latest` runs
    // 14:20 and misses the three before it.
    w.set("2026-03-08T14:20:05Z");
    w.deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("tick");
    let lines = w.lines("run");
    let sweep = lines
        .iter()
        .find(|l| l["job"] == "sweep")
        .expect("sweep ran");
    assert_eq!(sweep["scheduled_at"], "2026-03-08T14:20:00Z");
    assert_eq!(sweep["SlotMissed"], 3);
    assert_eq!(sweep["LagMs"], 5000);
    let metrics: Vec<&str> = sweep["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .filter_map(|m| m["Name"].as_str())
        .collect();
    assert_eq!(
        metrics,
        [
            "RunSucceeded",
            "RunFailed",
            "LagMs",
            "DurationMs",
            "SlotMissed"
        ]
    );
    assert_eq!(
        sweep["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "cronslot"
    );
    assert_eq!(
        sweep["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        serde_json::json!([["job"]])
    );
    for key in [
        "slot",
        "attempt",
        "fence",
        "lag_ms",
        "duration_ms",
        "outcome",
        "request_id",
    ] {
        assert!(!sweep[key].is_null(), "{key} in {sweep}");
    }
}

#[tokio::test]
async fn catch_up_all_runs_every_kept_slot_in_one_invocation() {
    let text = r#"
[[job]]
name = "batch"
schedule = "*/10 * * * *"
trigger = "dedicated"
catch_up = "all"
starting_deadline = "1h"
"#;
    let order = Shared::new(Vec::new());
    let seen = order.clone();
    let jobs = Jobs::new().register("batch", move |ctx| {
        let seen = seen.clone();
        async move {
            seen.borrow_mut().push(ctx.idempotency_key());
            Ok(())
        }
    });
    let w = World::new(text, jobs, "2026-03-08T13:00:00.100Z");
    let spec = w.handler.manifest().job("batch").expect("batch").clone();
    let c = CasCoordinator::new(w.store.clone(), 1);
    c.claim(
        &spec,
        at("2026-03-08T13:00:00.100Z"),
        Trigger::Tick,
        "creator",
    )
    .await
    .expect("create");
    // The function was down from 13:00 to 13:50.
    w.set("2026-03-08T13:50:01Z");
    let event =
        serde_json::json!({"cronslot": {"job": "batch", "scheduled_time": "2026-03-08T13:50:00Z"}});
    let out = w.deliver(&event).await.expect("runs");
    assert_eq!(out["runs"].as_array().map(Vec::len), Some(5));
    assert_eq!(
        *order.borrow(),
        [
            "batch@2026-03-08T13:10:00Z",
            "batch@2026-03-08T13:20:00Z",
            "batch@2026-03-08T13:30:00Z",
            "batch@2026-03-08T13:40:00Z",
            "batch@2026-03-08T13:50:00Z"
        ]
    );
}

#[tokio::test]
async fn a_run_past_the_deadline_is_cut_and_recorded() {
    let jobs = Jobs::new()
        .register("report", |_| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(())
        })
        .register("sweep", |_| async { Ok(()) })
        .register("rollup", |_| async { Ok(()) });
    let mut w = World::new(MANIFEST, jobs, "2026-03-08T13:30:00Z");
    create_report_record(&w, "2026-03-08T13:30:00Z").await;
    w.set("2026-03-08T14:00:00.100Z");
    w.timeout = Duration::from_millis(1500);
    let started = std::time::Instant::now();
    let e = w
        .deliver(&fixture("scheduler.json"))
        .await
        .expect_err("cut");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(e.kind, ErrorKind::RunFailed);
    assert!(e.message.contains("the run was cut after 500ms"), "{e}");
    let state = w.state("report").await;
    assert_eq!(
        state.pending.len(),
        1,
        "the failure is recorded: a retry waits"
    );
    assert!(state.leases.is_empty());
}

#[tokio::test]
async fn effects_done_by_a_failed_attempt_are_not_redone() {
    let sent = Shared::new(0);
    let count = sent.clone();
    let jobs = Jobs::new()
        .register("report", move |ctx| {
            let count = count.clone();
            async move {
                let result = ctx
                    .effect("send-email", || async {
                        count.set(count.get() + 1);
                        Ok("message 17".to_string())
                    })
                    .await?;
                assert_eq!(result, "message 17");
                if ctx.attempt() == 1 {
                    return Err(JobError::transient("crashed after sending"));
                }
                Ok(())
            }
        })
        .register("sweep", |_| async { Ok(()) })
        .register("rollup", |_| async { Ok(()) });
    let w = World::new(MANIFEST, jobs, "2026-03-08T13:30:00Z");
    create_report_record(&w, "2026-03-08T13:30:00Z").await;
    w.set("2026-03-08T14:00:01Z");
    assert_eq!(
        kind(&w.deliver(&fixture("scheduler.json")).await),
        Some(ErrorKind::RunFailed)
    );
    w.set("2026-03-08T14:02:00Z");
    w.deliver(&fixture("scheduler.json"))
        .await
        .expect("retry succeeds");
    assert_eq!(sent.get(), 1, "the effect ran once over two attempts");
}

/// A tiny HTTP/1.1 server answering each request with the next status of a
/// script, and keeping the requests' heads.
struct Server {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
}

async fn server(script: &[u16], delay: Duration) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let statuses = Arc::new(Mutex::new(
        script.iter().copied().collect::<VecDeque<u16>>(),
    ));
    let kept = heads.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            kept.lock()
                .expect("lock")
                .push(String::from_utf8_lossy(&buf).to_string());
            let status = statuses.lock().expect("lock").pop_front().unwrap_or(200);
            tokio::time::sleep(delay).await;
            let body = format!("status {status}");
            let response = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    Server { url, heads }
}

fn http_manifest(url: &str) -> String {
    format!(
        r#"
[defaults]
retry = {{ max_attempts = 3, backoff = "10s", max_backoff = "1m" }}

[[job]]
name = "hook"
schedule = "0 * * * *"
trigger = "dedicated"
timeout = "2s"
http = {{ url = "{url}", method = "POST", headers = {{ "X-Team" = "billing" }} }}
"#
    )
}

fn hook_event() -> Value {
    serde_json::json!({"cronslot": {"job": "hook", "scheduled_time": "2026-03-08T14:00:00Z"}})
}

fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test]
async fn http_jobs_send_the_slot_and_fence_and_retry_on_5xx() {
    let s = server(&[503, 200], Duration::ZERO).await;
    let w = World::new(
        &http_manifest(&s.url),
        Jobs::new(),
        "2026-03-08T14:00:00.200Z",
    );
    let e = w
        .deliver(&hook_event())
        .await
        .expect_err("503 is a failure");
    assert_eq!(e.kind, ErrorKind::RunFailed);
    assert!(
        e.message
            .contains("failed transiently: HTTP 503 from http://127.0.0.1:"),
        "{e}"
    );
    assert!(e.message.contains(": status 503"), "{e}");
    w.set("2026-03-08T14:02:00Z");
    let ok = w.deliver(&hook_event()).await.expect("200 succeeds");
    assert_eq!(ok["runs"][0]["attempt"], 2);

    let heads = s.heads.lock().expect("lock").clone();
    assert_eq!(heads.len(), 2);
    for (i, head) in heads.iter().enumerate() {
        assert!(head.starts_with("POST /hook HTTP/1.1\r\n"), "{head}");
        assert_eq!(
            header(head, "idempotency-key"),
            Some("hook@2026-03-08T14:00:00Z")
        );
        assert_eq!(header(head, "cronslot-attempt"), Some(["1", "2"][i]));
        assert_eq!(
            header(head, "cronslot-scheduled-at"),
            Some("2026-03-08T14:00:00Z")
        );
        assert_eq!(header(head, "x-team"), Some("billing"));
        assert_eq!(header(head, "content-length"), Some("0"));
    }
    let fences: Vec<u64> = heads
        .iter()
        .filter_map(|h| header(h, "cronslot-fence")?.parse().ok())
        .collect();
    assert_eq!(fences.len(), 2);
    assert!(
        fences[1] > fences[0],
        "each attempt carries a newer fence: {fences:?}"
    );
    let state = w.state("hook").await;
    assert_eq!(
        state.last_success.map(|r| r.outcome),
        Some(cronslot_core::coord::RunOutcome::Succeeded {
            result: Some("HTTP 200".into())
        })
    );
}

#[tokio::test]
async fn http_4xx_is_permanent_and_a_timeout_transient() {
    let s = server(&[404], Duration::ZERO).await;
    let w = World::new(
        &http_manifest(&s.url),
        Jobs::new(),
        "2026-03-08T14:00:00.200Z",
    );
    let e = w.deliver(&hook_event()).await.expect_err("404");
    assert_eq!(e.kind, ErrorKind::SlotDead);

    let slow = server(&[200], Duration::from_secs(5)).await;
    let w = World::new(
        &http_manifest(&slow.url),
        Jobs::new(),
        "2026-03-08T14:00:00.200Z",
    );
    let e = w.deliver(&hook_event()).await.expect_err("timeout");
    assert_eq!(e.kind, ErrorKind::RunFailed);
    assert!(e.message.contains("timed out after 2s"), "{e}");

    let w = World::new(
        &http_manifest("http://127.0.0.1:9/closed"),
        Jobs::new(),
        "2026-03-08T14:00:00.200Z",
    );
    let e = w
        .deliver(&hook_event())
        .await
        .expect_err("refused connection");
    assert_eq!(
        e.kind,
        ErrorKind::RunFailed,
        "connection errors are transient: {e}"
    );
}

#[test]
fn the_registry_must_match_the_manifest() {
    let m = manifest(MANIFEST);
    let e = check(&m, &Jobs::new().register("report", |_| async { Ok(()) })).expect_err("missing");
    // The runtime's words, the same on every platform.
    assert_eq!(
        e.problems,
        [
            "job \"sweep\" runs a Rust function, but none is registered under that name; register one (Jobs::register) or give the job an http request in the manifest",
            "job \"rollup\" runs a Rust function, but none is registered under that name; register one (Jobs::register) or give the job an http request in the manifest"
        ]
    );
    let jobs = Jobs::new()
        .register("report", |_| async { Ok(()) })
        .register("sweep", |_| async { Ok(()) })
        .register("rollup", |_| async { Ok(()) })
        .register("reprot", |_| async { Ok(()) })
        .register("sweep", |_| async { Ok(()) });
    let e = check(&m, &jobs).expect_err("stray and twice");
    assert_eq!(
        e.problems,
        [
            "job \"sweep\" is registered more than once; register each job's function once",
            "a function is registered for \"reprot\", but the manifest has no such job"
        ]
    );
    let commands = manifest(
        "[[job]]\nname = \"cleanup\"\nschedule = \"* * * * *\"\ncommand = [\"sh\", \"-c\", \"true\"]\n",
    );
    let e = check(&commands, &Jobs::new()).expect_err("command");
    assert!(
        e.problems[0]
            .starts_with("job \"cleanup\" is a command job, and Lambda has no processes to run it"),
        "{e}"
    );
}

#[test]
fn manifests_come_embedded_or_from_a_file() {
    let embedded = ManifestSource::embedded("cronslot.toml", MANIFEST);
    assert_eq!(embedded.load(None).map(|m| m.jobs.len()), Ok(3));

    // A bad manifest fails the start with its diagnostics.
    let bad = ManifestSource::embedded(
        "cronslot.toml",
        "[[job]]\nname = \"x\"\nschedule = \"61 * * * *\"\n",
    );
    let e = bad.load(None).expect_err("bad manifest");
    let text = e.to_string();
    assert!(
        text.starts_with("cronslot cannot start: the manifest has errors:\ncronslot.toml:3:"),
        "{text}"
    );
    assert!(text.contains("61"), "{text}");

    // CRONSLOT_MANIFEST overrides the embedded manifest.
    let dir = std::env::temp_dir().join(format!("cronslot-manifest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("override.toml");
    std::fs::write(
        &file,
        "[[job]]\nname = \"only\"\nschedule = \"* * * * *\"\n",
    )
    .expect("write");
    let path = file.to_string_lossy().to_string();
    let m = embedded.load(Some(&path)).expect("override");
    assert_eq!(m.jobs[0].name.as_str(), "only");
    assert_eq!(
        ManifestSource::from_env()
            .load(Some(&path))
            .map(|m| m.jobs.len()),
        Ok(1)
    );
    let missing = ManifestSource::from_env().load(None).expect_err("unset");
    assert!(
        missing.to_string().contains("CRONSLOT_MANIFEST is not set"),
        "{missing}"
    );
    let gone = ManifestSource::path(dir.join("gone.toml"))
        .load(None)
        .expect_err("missing file");
    assert!(
        gone.to_string().contains("cannot read the manifest"),
        "{gone}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn precompiled_manifests_load_like_embedded_ones() {
    let parsed = manifest(MANIFEST);
    let json = parsed.to_precompiled("cronslot.toml");
    let precompiled = ManifestSource::precompiled(&json);
    let loaded = precompiled.load(None).expect("precompiled");
    assert_eq!(loaded, parsed);
    let embedded = ManifestSource::embedded("cronslot.toml", MANIFEST)
        .load(None)
        .expect("embedded");
    assert_eq!(loaded, embedded);
    // The spec hash is stored in every job's record: it must not depend on
    // the form the manifest came in.
    for (l, e) in loaded.jobs.iter().zip(&embedded.jobs) {
        assert_eq!(l.spec_hash(), e.spec_hash(), "{}", e.name.as_str());
    }

    // A bad one fails the start with a sentence per problem, no panic.
    let bad = json.replacen("\"max_attempts\":3", "\"max_attempts\":0", 1);
    assert_ne!(bad, json, "the fixture has max_attempts = 3");
    let e = ManifestSource::precompiled(&bad)
        .load(None)
        .expect_err("bad precompiled manifest");
    let text = e.to_string();
    assert!(
        text.starts_with(
            "cronslot cannot start: the manifest has errors:\ninvalid precompiled manifest"
        ),
        "{text}"
    );
    assert!(text.contains("max_attempts must be at least 1"), "{text}");
    let cut = ManifestSource::precompiled(&json[..json.len() / 3])
        .load(None)
        .expect_err("truncated");
    assert!(cut.to_string().contains("not valid JSON"), "{cut}");

    // CRONSLOT_MANIFEST overrides it with a file of either form; a file
    // beginning with `{` is precompiled.
    let dir = std::env::temp_dir().join(format!("cronslot-precompiled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let only = manifest("[[job]]\nname = \"only\"\nschedule = \"* * * * *\"\n");
    let json_file = dir.join("override.json");
    std::fs::write(&json_file, only.to_precompiled("override.toml")).expect("write");
    let toml_file = dir.join("override.toml");
    std::fs::write(
        &toml_file,
        "[[job]]\nname = \"only\"\nschedule = \"* * * * *\"\n",
    )
    .expect("write");
    for source in [
        precompiled.clone(),
        ManifestSource::embedded("cronslot.toml", MANIFEST),
        ManifestSource::from_env(),
    ] {
        for file in [&json_file, &toml_file] {
            let path = file.to_string_lossy().to_string();
            // The same jobs (the warnings name the file they were found in).
            let loaded = source.load(Some(&path)).map(|m| m.jobs);
            assert_eq!(loaded, Ok(only.jobs.clone()), "{path}");
        }
    }
    assert_eq!(
        ManifestSource::path(&json_file).load(None),
        Ok(only.clone())
    );
    let bad_file = dir.join("bad.json");
    std::fs::write(
        &bad_file,
        "{\"format\": \"cronslot-manifest\", \"version\": 7}",
    )
    .expect("write");
    let e = ManifestSource::path(&bad_file)
        .load(None)
        .expect_err("version");
    let text = e.to_string();
    assert!(
        text.contains("bad.json has errors:\ninvalid precompiled manifest: the precompiled manifest has version 7"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_panicking_job_is_a_failed_run() {
    let jobs = Jobs::new()
        .register("report", |ctx| async move {
            tokio::task::yield_now().await;
            if ctx.attempt() == 1 {
                panic!("index out of bounds");
            }
            Ok(())
        })
        .register("sweep", |_| async { Ok(()) })
        .register("rollup", |_| async { Ok(()) });
    let w = World::new(MANIFEST, jobs, "2026-03-08T13:30:00Z");
    create_report_record(&w, "2026-03-08T13:30:00Z").await;
    w.set("2026-03-08T14:00:01Z");
    let e = w
        .deliver(&fixture("scheduler.json"))
        .await
        .expect_err("failed");
    assert_eq!(e.kind, ErrorKind::RunFailed);
    assert!(
        e.message
            .contains("failed transiently: the job panicked: index out of bounds"),
        "{e}"
    );
    let state = w.state("report").await;
    assert!(
        state.leases.is_empty(),
        "the lease is released, not left to expire"
    );
    assert_eq!(state.pending.len(), 1);
    w.set("2026-03-08T14:02:00Z");
    w.deliver(&fixture("scheduler.json"))
        .await
        .expect("the retry succeeds");
}

/// A dynamic job's schedules run from the tick (issue 26): the wake index
/// names the due ones, the tick reads each one's spec, and the run gets its
/// key and payload; a redelivered tick runs nothing again, and an event
/// naming the dynamic job itself is refused (it has no slots of its own).
#[tokio::test]
async fn the_tick_runs_the_due_schedules_of_a_dynamic_job() {
    use cronslot_core::coord::Schedules;
    use cronslot_core::coord::decide::{Precondition, ScheduleWrite};
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};

    let text = "[[job]]\nname = \"tenant-invoice\"\ndynamic = true\nlease = \"5m\"\n";
    let ran = Shared::new(Vec::new());
    let seen = ran.clone();
    let jobs = Jobs::new().register("tenant-invoice", move |ctx: cronslot_aws::RunContext| {
        let seen = seen.clone();
        async move {
            seen.borrow_mut().push(format!(
                "{} {} {}",
                ctx.key().unwrap_or("-"),
                ctx.payload().unwrap_or("-"),
                ctx.idempotency_key()
            ));
            Ok(())
        }
    });
    let w = World::new(text, jobs, "2026-03-08T14:04:30Z");
    let template = manifest(text).templates.remove(0);
    let writer = CasCoordinator::new(w.store.clone(), 99);
    for (key, spec) in [
        (
            "acme",
            r#"{"cron": "5 14 * * *", "payload": {"plan": "pro"}}"#,
        ),
        ("globex", r#"{"cron": "0 3 * * *"}"#),
    ] {
        let written = writer
            .put_schedule(
                &template,
                &ScheduleKey::new(key).expect("key"),
                ScheduleSpec::from_json(spec).expect("spec"),
                Precondition::None,
                at("2026-03-08T14:04:30Z"),
            )
            .await;
        assert!(
            matches!(written, Ok(ScheduleWrite::Created { version: 1 })),
            "{written:?}"
        );
    }
    // The table's first tick writes the mark.
    w.deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("tick");
    assert_eq!(ran.get(), Vec::<String>::new());

    w.set("2026-03-08T14:05:00.200Z");
    let out = w
        .deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("tick");
    assert_eq!(
        ran.get(),
        [r#"acme {"plan": "pro"} tenant-invoice/acme@2026-03-08T14:05:00Z"#]
    );
    let runs = out["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{out}");
    assert_eq!(
        (runs[0]["job"].as_str(), runs[0]["key"].as_str()),
        (Some("tenant-invoice"), Some("acme"))
    );
    assert_eq!(runs[0]["outcome"], "succeeded");
    assert_eq!(out["woken"].as_u64(), Some(1), "{out}");
    // The slot's state is the schedule's record.
    let record = cronslot_core::coord::StateStore::get(&w.store, "tenant-invoice/acme")
        .await
        .expect("read")
        .expect("the schedule's record");
    assert_eq!(
        record.value.last_success.map(|s| s.slot),
        Some(at("2026-03-08T14:05:00Z"))
    );

    // A redelivery of the same tick: the slot is taken, nothing runs.
    w.set("2026-03-08T14:05:20Z");
    let out = w
        .deliver(&fixture("tick-scheduler.json"))
        .await
        .expect("tick");
    assert_eq!(out["runs"], Value::Array(vec![]), "{out}");
    assert_eq!(ran.get().len(), 1);

    // The dynamic job has no slots of its own to trigger.
    let event =
        json!({"cronslot": {"job": "tenant-invoice", "scheduled_time": "2026-03-08T14:05:00Z"}});
    let refused = w.deliver(&event).await;
    assert_eq!(kind(&refused), Some(ErrorKind::InvalidEvent), "{refused:?}");
    assert!(
        format!("{:?}", refused.err()).contains("is dynamic"),
        "the error says why"
    );
}

/// A burst of 2,500 schedules due in one minute: a tick takes a thousand
/// woken schedules at a time, and an invocation with time left ticks again
/// (rounds), so one invocation serves them all; one whose deadline is too
/// close for another round leaves the rest to the next invocation, and the
/// burst takes as many as it needs, each slot once.
#[tokio::test]
async fn a_burst_is_served_in_rounds_while_the_invocation_has_time() {
    use cronslot_core::coord::decide::Precondition;
    use cronslot_core::coord::{SchedulePut, Schedules};
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};

    let text = "[[job]]\nname = \"tenant-invoice\"\ndynamic = true\nlease = \"5m\"\n";
    for (timeout, invocations) in [(60, 1), (20, 3)] {
        let count = Shared::new(0);
        let jobs = Jobs::new().register("tenant-invoice", counting(&count));
        let mut w = World::new(text, jobs, "2026-03-08T14:04:30Z");
        w.timeout = Duration::from_secs(timeout);
        let template = manifest(text).templates.remove(0);
        let spec = ScheduleSpec::from_json(r#"{"at": "2026-03-08T14:05:00Z"}"#).expect("spec");
        let puts = (0..2_500)
            .map(|i| SchedulePut {
                key: ScheduleKey::new(format!("t-{i:04}")).expect("key"),
                spec: spec.clone(),
                precondition: Precondition::None,
            })
            .collect();
        let writer = CasCoordinator::new(w.store.clone(), 99);
        for written in writer
            .put_schedules(&template, puts, at("2026-03-08T14:04:30Z"))
            .await
        {
            written.expect("written");
        }
        // The table's first tick writes the mark.
        w.deliver(&fixture("tick-scheduler.json"))
            .await
            .expect("tick");
        w.set("2026-03-08T14:05:01Z");
        let mut rounds = Vec::new();
        for _ in 0..invocations {
            let out = w
                .deliver(&fixture("tick-scheduler.json"))
                .await
                .expect("tick");
            rounds.push(out["rounds"].as_u64().unwrap_or(0));
            assert_eq!(
                out["woken"],
                out["runs"].as_array().map_or(0, Vec::len),
                "{out}"
            );
        }
        assert_eq!(count.get(), 2_500, "timeout {timeout}s: every slot once");
        let expected: Vec<u64> = if invocations == 1 {
            vec![3]
        } else {
            vec![1, 1, 1]
        };
        assert_eq!(rounds, expected, "timeout {timeout}s");
        // Nothing is due any more.
        let out = w
            .deliver(&fixture("tick-scheduler.json"))
            .await
            .expect("tick");
        assert_eq!(out["runs"], Value::Array(vec![]), "{out}");
        assert_eq!(count.get(), 2_500);
    }
}
