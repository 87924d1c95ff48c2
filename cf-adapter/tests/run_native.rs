//! The Worker's runner natively, against the core's coordinator over
//! memory, with a virtual clock that `sleep` advances: in-event retries,
//! the run lines, a manual trigger.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use cronslot_cf::run::{Clock, Executor, LocalFuture, RETRY_WITHIN_EVENT, Serving, serve};
use cronslot_cf::{JobError, RunContext};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, MemoryStore, Trigger};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

/// Fails every slot's first attempt; records each attempt it sees.
struct FlakyFirst(RefCell<Vec<(Timestamp, u32)>>);

impl Executor for FlakyFirst {
    fn execute(
        &self,
        _spec: Rc<JobSpec>,
        ctx: RunContext,
    ) -> LocalFuture<'static, Result<(), JobError>> {
        self.0
            .borrow_mut()
            .push((ctx.scheduled_at(), ctx.attempt()));
        let first = ctx.attempt() == 1;
        Box::pin(async move {
            if first {
                Err(JobError::transient("first attempts fail"))
            } else {
                Ok(())
            }
        })
    }
}

fn spec(retry: &str) -> Rc<JobSpec> {
    let text = format!("[[job]]\nname = \"flaky\"\nschedule = \"* * * * *\"\nretry = {retry}\n");
    Rc::new(parse_manifest(&text, "t.toml").unwrap().jobs.remove(0))
}

struct World {
    now: Rc<Cell<Timestamp>>,
    clock: Clock,
    slept: Rc<Cell<Duration>>,
    coordinator: Rc<CasCoordinator<MemoryStore>>,
}

impl World {
    fn new(start: &str) -> World {
        let now = Rc::new(Cell::new(start.parse::<Timestamp>().unwrap()));
        let clock_now = now.clone();
        World {
            now,
            clock: Rc::new(move || clock_now.get()),
            slept: Rc::new(Cell::new(Duration::ZERO)),
            coordinator: Rc::new(CasCoordinator::new(MemoryStore::new(), 3)),
        }
    }

    fn serve(
        &self,
        spec: &Rc<JobSpec>,
        trigger: Trigger,
        within: Duration,
        ex: &dyn Executor,
    ) -> Vec<Value> {
        let (now, slept) = (self.now.clone(), self.slept.clone());
        let how = Serving {
            owner: "w",
            clock: self.clock.clone(),
            executor: ex,
            sleep: Rc::new(move |d| {
                now.set(now.get() + SignedDuration::try_from(d).unwrap());
                slept.set(slept.get() + d);
                Box::pin(async {})
            }),
            retry_within: within,
        };
        block_on(serve(self.coordinator.clone(), spec.clone(), trigger, how))
    }
}

#[test]
fn a_retry_due_soon_runs_in_the_same_event() {
    let w = World::new("2026-01-05T00:00:00Z");
    let spec = spec("{ max_attempts = 3, backoff = \"10s\", max_backoff = \"10s\" }");
    let ex = FlakyFirst(RefCell::new(Vec::new()));
    // The first tick creates the record; the next one's slot fails once,
    // then its retry (at most 10 s later) runs before the event ends.
    w.serve(&spec, Trigger::Tick, RETRY_WITHIN_EVENT, &ex);
    w.now.set("2026-01-05T00:01:00Z".parse().unwrap());
    let lines = w.serve(&spec, Trigger::Tick, RETRY_WITHIN_EVENT, &ex);
    let outcomes: Vec<&str> = lines
        .iter()
        .filter(|l| l["msg"] == "run")
        .map(|l| l["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["failed", "succeeded"], "{lines:?}");
    assert_eq!(
        ex.0.borrow().iter().map(|(_, a)| *a).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(
        w.slept.get() <= Duration::from_secs(10),
        "{:?}",
        w.slept.get()
    );
    // Each run line carries the slot, attempt, fence, lag and duration.
    let run = &lines[0];
    assert_eq!(run["slot"], "2026-01-05T00:01:00Z");
    assert!(run["fence"].as_u64().unwrap() >= 1 && run.get("lag_ms").is_some());
}

#[test]
fn without_the_wait_the_retry_is_left_to_a_later_tick() {
    let w = World::new("2026-01-05T00:00:00Z");
    let spec = spec(
        "{ max_attempts = 3, backoff = \"10s\", max_backoff = \"10s\", past_next_slot = true }",
    );
    let ex = FlakyFirst(RefCell::new(Vec::new()));
    w.serve(&spec, Trigger::Tick, Duration::ZERO, &ex);
    w.now.set("2026-01-05T00:01:00Z".parse().unwrap());
    let lines = w.serve(&spec, Trigger::Tick, Duration::ZERO, &ex);
    assert_eq!(
        lines.iter().filter(|l| l["msg"] == "run").count(),
        1,
        "{lines:?}"
    );
    let idle = lines.last().unwrap();
    assert_eq!(
        idle["detail"]["next_retry"], lines[0]["retry_at"],
        "{lines:?}"
    );
    assert_eq!(w.slept.get(), Duration::ZERO);
    // The next tick runs the retry of 00:01 (and the new slot 00:02).
    w.now.set("2026-01-05T00:02:00Z".parse().unwrap());
    w.serve(&spec, Trigger::Tick, Duration::ZERO, &ex);
    assert!(
        ex.0.borrow()
            .contains(&("2026-01-05T00:01:00Z".parse().unwrap(), 2)),
        "{:?}",
        ex.0.borrow()
    );
}
