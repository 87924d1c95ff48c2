//! The same job, the same events, the same outcome names in the logs of
//! the three platforms: Lambda's run lines (its handler over the memory
//! store), the Worker's event lines (its native part: the runtime's run
//! loop and `cronslot_cf::run::lines`), and the local runner's `run
//! finished` events (its runner over SQLite, logs captured as JSON).
//!
//! A binary of its own: it installs the process's `tracing` subscriber.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use cronslot_aws::lambda::{Handler, Host, Invocation};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, MemoryStore, Trigger};
use cronslot_core::manifest::{Manifest, parse_manifest};
use cronslot_runner::{Clock, Runner, SqliteStore};
use cronslot_runtime::{JobError, Jobs, Outcome, Platform, ServeOptions, VirtualPlatform, serve};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// `flaky` fails its first attempt and succeeds on the retry; `doomed`
/// fails permanently. Both at 14:00, on dedicated triggers (a Lambda's
/// Scheduler events, a Worker's own Cron Trigger).
const MANIFEST: &str = r#"
[defaults]
lease = "10m"
retry = { max_attempts = 3, backoff = "2s", max_backoff = "2s" }

[[job]]
name = "flaky"
schedule = "0 * * * *"
trigger = "dedicated"

[[job]]
name = "doomed"
schedule = "0 * * * *"
trigger = "dedicated"
"#;

/// The outcomes every platform must log, in order.
const EXPECTED: [(&str, &str); 3] = [
    ("flaky", "retrying"),
    ("flaky", "succeeded"),
    ("doomed", "dead"),
];

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn manifest() -> Manifest {
    parse_manifest(MANIFEST, "cronslot.toml").unwrap()
}

/// The job functions, registered once for all three platforms.
fn jobs() -> Jobs {
    Jobs::new()
        .register("flaky", |ctx| async move {
            if ctx.attempt() == 1 {
                Err(JobError::transient("upstream busy"))
            } else {
                Ok(())
            }
        })
        .register("doomed", |_| async {
            Err(JobError::permanent("bad input"))
        })
}

/// (job, outcome) of every run line, in order, per job then by line.
fn outcomes(lines: &[Value]) -> Vec<(String, String)> {
    let mut runs: Vec<(String, String)> = lines
        .iter()
        .filter(|l| l.get("outcome").is_some())
        .map(|l| {
            (
                l["job"].as_str().unwrap().to_string(),
                l["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Jobs interleave differently on each platform; each job's own order
    // is what must agree.
    runs.sort_by_key(|(job, _)| job != "flaky");
    for (_, outcome) in &runs {
        assert!(Outcome::NAMES.contains(&outcome.as_str()), "{outcome}");
    }
    runs
}

fn lambda() -> Vec<Value> {
    let now = Rc::new(Cell::new(at("2026-03-08T14:00:01Z")));
    let lines = Rc::new(RefCell::new(Vec::new()));
    let (clock, sink) = (now.clone(), lines.clone());
    let host = Host {
        clock: Rc::new(move || clock.get()),
        log: Rc::new(move |line: &str| sink.borrow_mut().push(line.to_string())),
        seed: 7,
    };
    let store = MemoryStore::new();
    let handler = Handler::new(
        manifest(),
        jobs(),
        move |_: &Invocation| store.clone(),
        host,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let deliver = |job: &str, n: u32| {
        let event = json!({"cronslot": {"job": job, "scheduled_time": "2026-03-08T14:00:00Z"}});
        let inv = Invocation {
            request_id: format!("request-{n}"),
            deadline: now.get() + SignedDuration::from_secs(60),
        };
        // Failed runs are errors, so that Lambda re-delivers the event.
        let _ = runtime.block_on(handler.handle(&event, &inv));
    };
    deliver("flaky", 1);
    deliver("doomed", 2);
    // Lambda's re-delivery, after the backoff.
    now.set(at("2026-03-08T14:01:00Z"));
    deliver("flaky", 3);
    let lines = lines.borrow();
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["msg"] == "run")
        .collect()
}

fn worker() -> Vec<Value> {
    let platform = VirtualPlatform::new(at("2026-03-08T14:00:01Z"));
    let dyn_platform: Rc<dyn Platform> = Rc::new(platform.clone());
    let coordinator = Rc::new(CasCoordinator::new(MemoryStore::new(), 7));
    let jobs = jobs();
    let mut lines = Vec::new();
    for spec in manifest().jobs {
        let spec = Rc::new(spec);
        let options = ServeOptions {
            owner: "cf:event",
            trigger: Trigger::Slot(at("2026-03-08T14:00:00Z")),
            retry_within: cronslot_cf::run::RETRY_WITHIN_EVENT,
            more_due: None,
        };
        let served = block_on(serve(&coordinator, &spec, &jobs, &dyn_platform, &options));
        lines.extend(
            cronslot_cf::run::lines(spec.name.as_str(), &served)
                .iter()
                .map(|line| serde_json::from_str::<Value>(&line.json()).expect("a JSON line")),
        );
    }
    lines.into_iter().filter(|l| l["msg"] == "run").collect()
}

/// The log, as the subscriber writes it.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn local() -> Vec<Value> {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_writer(move || writer.clone())
        .try_init()
        .unwrap();
    let start = at("2026-03-08T13:59:50Z");
    let clock = Clock::accelerated_from(start, 60.0).unwrap();
    let summary = Runner::new(
        SqliteStore::open_in_memory().unwrap(),
        manifest().jobs,
        clock,
    )
    .with_jobs(jobs())
    .until(at("2026-03-08T14:00:40Z"))
    .run()
    .unwrap();
    assert!(summary.ok(), "{summary}");
    let bytes = captured.0.lock().unwrap().clone();
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["message"] == "run finished")
        .collect()
}

#[test]
fn the_same_events_give_the_same_outcome_names_on_every_platform() {
    let expected: Vec<(String, String)> = EXPECTED
        .iter()
        .map(|(j, o)| (j.to_string(), o.to_string()))
        .collect();
    let lambda = lambda();
    assert_eq!(outcomes(&lambda), expected, "Lambda: {lambda:#?}");
    let worker = worker();
    assert_eq!(outcomes(&worker), expected, "Worker: {worker:#?}");
    let local = local();
    assert_eq!(outcomes(&local), expected, "local runner: {local:#?}");
    // The fields of a run line are the same too.
    let fields = |l: &Value| {
        let mut keys: Vec<String> = ["job", "slot", "scheduled_at", "attempt", "fence", "outcome"]
            .iter()
            .filter(|k| l.get(**k).is_some())
            .map(|k| k.to_string())
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(fields(&lambda[0]), fields(&worker[0]));
    assert_eq!(fields(&lambda[0]), fields(&local[0]));
    assert_eq!(lambda[0]["slot"], "flaky@2026-03-08T14:00:00Z");
    assert_eq!(worker[0]["slot"], lambda[0]["slot"]);
    assert_eq!(local[0]["slot"], lambda[0]["slot"]);
}
