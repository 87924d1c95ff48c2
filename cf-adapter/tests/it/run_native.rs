//! The Worker's runner natively, against the core's coordinator over
//! memory, with a virtual clock that `sleep` advances: in-event retries,
//! the run lines, a manual trigger.

use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cronslot_cf::run::{RETRY_WITHIN_EVENT, lines};
use cronslot_cf::{JobError, Jobs};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, MemoryStore, Trigger};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runtime::{Platform, ServeOptions, VirtualPlatform, serve};
use jiff::Timestamp;
use serde_json::Value;

/// The attempts a job saw: (slot, attempt).
type Seen = Arc<Mutex<Vec<(Timestamp, u32)>>>;

/// Fails every slot's first attempt; records each attempt it sees.
fn flaky_first(seen: &Seen) -> Jobs {
    let seen = Arc::clone(seen);
    Jobs::new().register("flaky", move |ctx| {
        seen.lock()
            .unwrap()
            .push((ctx.scheduled_at(), ctx.attempt()));
        let first = ctx.attempt() == 1;
        async move {
            if first {
                Err(JobError::transient("first attempts fail"))
            } else {
                Ok(())
            }
        }
    })
}

fn spec(retry: &str) -> Rc<JobSpec> {
    let text = format!("[[job]]\nname = \"flaky\"\nschedule = \"* * * * *\"\nretry = {retry}\n");
    Rc::new(parse_manifest(&text, "t.toml").unwrap().jobs.remove(0))
}

struct World {
    platform: VirtualPlatform,
    coordinator: Rc<CasCoordinator<MemoryStore>>,
}

impl World {
    fn new(start: &str) -> World {
        World {
            platform: VirtualPlatform::new(start.parse().unwrap()),
            coordinator: Rc::new(CasCoordinator::new(MemoryStore::new(), 3)),
        }
    }

    fn serve(
        &self,
        spec: &Rc<JobSpec>,
        trigger: Trigger,
        within: Duration,
        jobs: &Jobs,
    ) -> Vec<Value> {
        let platform: Rc<dyn Platform> = Rc::new(self.platform.clone());
        let options = ServeOptions {
            owner: "w",
            trigger,
            retry_within: within,
            more_due: None,
        };
        let served = block_on(serve(&self.coordinator, spec, jobs, &platform, &options));
        lines(spec.name.as_str(), &served)
            .iter()
            .map(|line| serde_json::from_str(&line.json()).expect("a JSON line"))
            .collect()
    }
}

#[test]
fn a_retry_due_soon_runs_in_the_same_event() {
    let w = World::new("2026-01-05T00:00:00Z");
    let spec = spec("{ max_attempts = 3, backoff = \"10s\", max_backoff = \"10s\" }");
    let seen = Seen::default();
    let ex = flaky_first(&seen);
    // The first tick creates the record; the next one's slot fails once,
    // then its retry (at most 10 s later) runs before the event ends.
    w.serve(&spec, Trigger::Tick, RETRY_WITHIN_EVENT, &ex);
    w.platform.set("2026-01-05T00:01:00Z".parse().unwrap());
    let lines = w.serve(&spec, Trigger::Tick, RETRY_WITHIN_EVENT, &ex);
    let outcomes: Vec<&str> = lines
        .iter()
        .filter(|l| l["msg"] == "run")
        .map(|l| l["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["retrying", "succeeded"], "{lines:?}");
    assert_eq!(
        seen.lock()
            .unwrap()
            .iter()
            .map(|(_, a)| *a)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(
        w.platform.slept() <= Duration::from_secs(10),
        "{:?}",
        w.platform.slept()
    );
    // Each run line carries the slot, attempt, fence, lag and duration.
    let run = &lines[0];
    assert_eq!(run["slot"], "flaky@2026-01-05T00:01:00Z");
    assert_eq!(run["scheduled_at"], "2026-01-05T00:01:00Z");
    assert!(run["fence"].as_u64().unwrap() >= 1 && run.get("lag_ms").is_some());
}

#[test]
fn without_the_wait_the_retry_is_left_to_a_later_tick() {
    let w = World::new("2026-01-05T00:00:00Z");
    let spec = spec(
        "{ max_attempts = 3, backoff = \"10s\", max_backoff = \"10s\", past_next_slot = true }",
    );
    let seen = Seen::default();
    let ex = flaky_first(&seen);
    w.serve(&spec, Trigger::Tick, Duration::ZERO, &ex);
    w.platform.set("2026-01-05T00:01:00Z".parse().unwrap());
    let lines = w.serve(&spec, Trigger::Tick, Duration::ZERO, &ex);
    assert_eq!(
        lines.iter().filter(|l| l["msg"] == "run").count(),
        1,
        "{lines:?}"
    );
    // A failed run ends the event's work on the job: no claim is spent on
    // learning that the retry is not due yet.
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["outcome"], "retrying", "{lines:?}");
    assert!(lines[0]["retry_at"].is_string(), "{lines:?}");
    assert_eq!(w.platform.slept(), Duration::ZERO);
    // The next tick runs the retry of 00:01 (and the new slot 00:02).
    w.platform.set("2026-01-05T00:02:00Z".parse().unwrap());
    w.serve(&spec, Trigger::Tick, Duration::ZERO, &ex);
    assert!(
        seen.lock()
            .unwrap()
            .contains(&("2026-01-05T00:01:00Z".parse().unwrap(), 2)),
        "{:?}",
        seen.lock().unwrap()
    );
}

#[test]
fn a_panicking_job_is_a_transient_failure_in_the_workers_lines() {
    // The runtime's panic policy, as the Worker's serving code reports it
    // (natively: in a real isolate a panic aborts it, and the lease's expiry
    // gives the slot the same fate later).
    let w = World::new("2026-01-05T00:00:00Z");
    let spec = spec("{ max_attempts = 2, backoff = \"5s\", max_backoff = \"5s\" }");
    let jobs = Jobs::new().register("flaky", |ctx| async move {
        if ctx.attempt() == 1 {
            panic!("a bug in the job");
        }
        Ok(())
    });
    w.serve(&spec, Trigger::Tick, RETRY_WITHIN_EVENT, &jobs);
    w.platform.set("2026-01-05T00:01:00Z".parse().unwrap());
    let lines = w.serve(&spec, Trigger::Tick, RETRY_WITHIN_EVENT, &jobs);
    let runs: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["msg"] == "run")
        .map(|l| {
            (
                l["outcome"].as_str().unwrap(),
                l["error"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("retrying", "the job panicked: a bug in the job"),
            ("succeeded", "")
        ],
        "{lines:?}"
    );
}
