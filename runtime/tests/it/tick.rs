//! The tick, on the core's memory store and a virtual clock: the first
//! tick writes only the mark, planned jobs are served (their records
//! created just before their slots), a claim that fails holds the mark
//! before its slot, a limit on jobs leaves the rest for the next tick, and
//! a woken job is served without its schedule.

use std::collections::HashSet;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, MemoryStore, TickIndex, TickStart};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runtime::{
    JobError, Jobs, Platform, TickOptions, TickPlan, TickReport, VirtualPlatform, tick,
};
use jiff::Timestamp;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

const MANIFEST: &str = r#"
[defaults]
retry = { max_attempts = 3, backoff = "10s", max_backoff = "10s" }
[[job]]
name = "every-minute"
schedule = "* * * * *"
[[job]]
name = "daily"
schedule = "30 4 * * *"
[[job]]
name = "quarter"
schedule = "*/15 * * * *"
"#;

struct World {
    store: MemoryStore,
    coordinator: Rc<CasCoordinator<MemoryStore>>,
    clock: VirtualPlatform,
    platform: Rc<dyn Platform>,
    plan: TickPlan,
    jobs: Jobs,
    /// (job, slot id, attempt) of every run.
    runs: Arc<Mutex<Vec<(String, String, u32)>>>,
}

impl World {
    fn new() -> World {
        let specs: Vec<Rc<JobSpec>> = parse_manifest(MANIFEST, "t.toml")
            .unwrap()
            .jobs
            .into_iter()
            .map(Rc::new)
            .collect();
        let store = MemoryStore::new();
        let runs = Arc::new(Mutex::new(Vec::new()));
        let mut jobs = Jobs::new();
        for spec in &specs {
            let runs = runs.clone();
            jobs = jobs.register(spec.name.as_str(), move |ctx| {
                let runs = runs.clone();
                async move {
                    runs.lock().unwrap().push((
                        ctx.job().to_string(),
                        ctx.slot_id().to_string(),
                        ctx.attempt(),
                    ));
                    if ctx.job() == "daily" && ctx.attempt() == 1 {
                        return Err(JobError::transient("first attempts of daily fail"));
                    }
                    Ok(())
                }
            });
        }
        let clock = VirtualPlatform::new(at("2026-01-05T04:28:30Z"));
        World {
            coordinator: Rc::new(CasCoordinator::new(store.clone(), 9)),
            store,
            platform: Rc::new(clock.clone()),
            clock,
            plan: TickPlan::new(specs, |_| true),
            jobs,
            runs,
        }
    }

    fn tick(&self, now: &str, max_jobs: Option<usize>) -> TickReport {
        self.clock.set(at(now));
        let options = TickOptions {
            owner: "t",
            max_jobs,
            retry_within: Duration::ZERO,
            more_due: None,
        };
        block_on(tick(
            &self.plan,
            &self.coordinator,
            &self.store,
            &self.jobs,
            &self.platform,
            &options,
        ))
        .unwrap()
    }

    fn ran(&self) -> Vec<(String, String, u32)> {
        std::mem::take(&mut *self.runs.lock().unwrap())
    }

    fn mark(&self) -> Option<Timestamp> {
        block_on(self.store.tick_start(at("2100-01-01T00:00:00Z"), 0))
            .unwrap()
            .mark
    }
}

fn run(job: &str, slot: &str, attempt: u32) -> (String, String, u32) {
    (job.to_string(), format!("{job}@{slot}"), attempt)
}

#[test]
fn the_first_tick_looks_back_a_minute_and_runs_no_slot_from_before_the_store() {
    let w = World::new();
    // 04:28:30: no mark yet. The window reaches back a minute, to serve
    // the current slots of a store upgraded from before ticks had marks;
    // every-minute's 04:28 slot is in it. Its record is created now, so
    // that slot, from before the job existed here, does not run.
    let report = w.tick("2026-01-05T04:28:30Z", None);
    let names: Vec<_> = report
        .work
        .jobs
        .iter()
        .map(|j| j.spec.name.as_str())
        .collect();
    assert_eq!(names, vec!["every-minute"]);
    assert!(w.ran().is_empty());
    assert_eq!(w.store.writes(), 2, "the new record and the mark");
    assert_eq!(w.store.reads(), 2, "the mark and the record");
    assert_eq!(w.mark(), Some(at("2026-01-05T04:28:30Z")));
}

#[test]
fn planned_jobs_run_their_first_slot_and_the_retry_is_woken() {
    let w = World::new();
    w.tick("2026-01-05T04:28:30Z", None);
    // 04:29 and 04:30: every-minute twice (catch-up latest runs 04:30),
    // daily and quarter at 04:30, all with records created just now.
    let report = w.tick("2026-01-05T04:30:05Z", None);
    assert_eq!(report.work.jobs.len(), 3);
    assert!(report.work.jobs.iter().all(|j| j.planned.is_some()));
    let mut ran = w.ran();
    ran.sort();
    assert_eq!(
        ran,
        vec![
            run("daily", "2026-01-05T04:30:00Z", 1),
            run("every-minute", "2026-01-05T04:30:00Z", 1),
            run("quarter", "2026-01-05T04:30:00Z", 1),
        ]
    );
    assert_eq!(w.mark(), Some(at("2026-01-05T04:30:05Z")));
    // 04:30:20: nothing planned, but daily's retry (backoff up to 10 s) is
    // woken by its record.
    let report = w.tick("2026-01-05T04:30:20Z", None);
    assert_eq!(report.work.jobs.len(), 1, "{:?}", report.work.jobs);
    assert_eq!(report.work.jobs[0].planned, None);
    assert_eq!(w.ran(), vec![run("daily", "2026-01-05T04:30:00Z", 2)]);
    // And then nothing at all: two requests, no record read.
    let (reads, writes) = (w.store.reads(), w.store.writes());
    let report = w.tick("2026-01-05T04:30:40Z", None);
    assert!(report.work.jobs.is_empty());
    assert_eq!((w.store.reads() - reads, w.store.writes() - writes), (1, 1));
}

#[test]
fn a_job_left_unserved_holds_the_mark_before_its_slot() {
    let w = World::new();
    let start = TickStart {
        mark: Some(at("2026-01-05T04:28:30Z")),
        now: at("2026-01-05T04:30:05Z"),
        woken: vec!["daily".to_string()],
        records: vec![],
        carried: vec![],
        next_wake: None,
    };
    let work = w.plan.work(&start);
    let names: Vec<_> = work.jobs.iter().map(|j| j.spec.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["every-minute", "daily", "quarter"],
        "by slot, then name"
    );
    assert_eq!(work.jobs[0].planned, Some(at("2026-01-05T04:29:00Z")));
    assert_eq!(work.mark(&HashSet::new()), start.now);
    let held = work.mark(&HashSet::from(["quarter"]));
    assert_eq!(held, at("2026-01-05T04:29:59.999999999Z"));
    let held = work.mark(&HashSet::from(["every-minute", "quarter"]));
    assert_eq!(held, at("2026-01-05T04:28:59.999999999Z"));
    // A store's first tick looks back a minute, and creates no record
    // from before its window.
    let first = w.plan.work(&TickStart {
        mark: None,
        ..start
    });
    assert_eq!(first.after, at("2026-01-05T04:29:05Z"));
    assert!(first.jobs.iter().all(|j| !j.from_slot));
}

/// Planned jobs an earlier, bounded tick left come first, at the slots
/// they were planned for (so a job's first slot creates its record before
/// it), and once: a carried job also planned again is served once.
#[test]
fn carried_jobs_come_first_at_their_slots() {
    let w = World::new();
    let start = TickStart {
        mark: Some(at("2026-01-05T04:29:30Z")),
        now: at("2026-01-05T04:30:05Z"),
        woken: vec![],
        records: vec![],
        carried: vec![
            ("every-minute".to_string(), at("2026-01-05T04:29:00Z")),
            ("quarter".to_string(), at("2026-01-05T04:15:00Z")),
            ("gone".to_string(), at("2026-01-05T04:15:00Z")),
        ],
        next_wake: None,
    };
    let work = w.plan.work(&start);
    let jobs: Vec<_> = work
        .jobs
        .iter()
        .map(|j| (j.spec.name.as_str(), j.planned, j.from_slot))
        .collect();
    assert_eq!(
        jobs,
        vec![
            ("quarter", Some(at("2026-01-05T04:15:00Z")), true),
            ("every-minute", Some(at("2026-01-05T04:29:00Z")), true),
            ("daily", Some(at("2026-01-05T04:30:00Z")), true),
        ]
    );
    assert_eq!(work.unknown, ["gone"], "a job no longer in the manifest");
}

#[test]
fn a_limit_on_jobs_leaves_the_rest_to_the_next_tick() {
    let w = World::new();
    w.tick("2026-01-05T04:28:30Z", None);
    let report = w.tick("2026-01-05T04:30:05Z", Some(1));
    assert_eq!(report.served.len(), 1);
    assert_eq!(report.left.as_ref().map(|(n, _)| *n), Some(2));
    assert_eq!(w.ran().len(), 1);
    // The mark stays just before 04:30, the slot of the jobs left.
    assert_eq!(w.mark(), Some(at("2026-01-05T04:29:59.999999999Z")));
    let report = w.tick("2026-01-05T04:30:10Z", Some(10));
    assert_eq!(report.left, None);
    let ran = w.ran();
    assert_eq!(ran.len(), 2, "the two jobs left, once each: {ran:?}");
    assert_eq!(w.mark(), Some(at("2026-01-05T04:30:10Z")));
}
