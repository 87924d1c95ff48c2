//! Schedules of a dynamic job through the tick, on the core's memory
//! store and a virtual clock: the wake index names a schedule's record at
//! its next slot, the tick reads its spec (the read its claim starts
//! from), and the run gets the key and its version's payload. A change
//! just after a fire time runs that slot with the old version, a delete
//! starts nothing, and a claim with a spec read before a change starts
//! nothing either.

use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cronslot_core::coord::decide::{self, Precondition};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, Idle, MemoryStore, Schedules, Trigger,
};
use cronslot_core::manifest::{JobSpec, JobTemplate, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_runtime::{Jobs, Platform, TickOptions, TickPlan, TickReport, VirtualPlatform, tick};
use jiff::Timestamp;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

const MANIFEST: &str = r#"
[[job]]
name = "report"
schedule = "15 3 * * *"
[[job]]
name = "invoice"
dynamic = true
"#;

/// (slot id, key, payload) of every run.
type Runs = Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>>;

struct World {
    store: MemoryStore,
    coordinator: Rc<CasCoordinator<MemoryStore>>,
    clock: VirtualPlatform,
    platform: Rc<dyn Platform>,
    plan: TickPlan,
    template: JobTemplate,
    jobs: Jobs,
    runs: Runs,
}

impl World {
    fn new(start: &str) -> World {
        let manifest = parse_manifest(MANIFEST, "t.toml").unwrap();
        let template = manifest.templates[0].clone();
        let specs: Vec<Rc<JobSpec>> = manifest.jobs.into_iter().map(Rc::new).collect();
        let runs: Runs = Arc::new(Mutex::new(Vec::new()));
        let mut jobs = Jobs::new();
        for name in ["report", "invoice"] {
            let runs = runs.clone();
            jobs = jobs.register(name, move |ctx| {
                let runs = runs.clone();
                async move {
                    runs.lock().unwrap().push((
                        ctx.slot_id().to_string(),
                        ctx.key().map(str::to_string),
                        ctx.payload().map(str::to_string),
                    ));
                    Ok(())
                }
            });
        }
        let store = MemoryStore::new();
        let clock = VirtualPlatform::new(at(start));
        World {
            coordinator: Rc::new(CasCoordinator::new(store.clone(), 5)),
            store,
            platform: Rc::new(clock.clone()),
            clock,
            plan: TickPlan::new(specs, |_| true).with_templates(vec![Rc::new(template.clone())]),
            template,
            jobs,
            runs,
        }
    }

    fn put(&self, key: &str, json: &str) -> decide::ScheduleWrite {
        let spec = ScheduleSpec::from_json(json).unwrap();
        block_on(self.coordinator.put_schedule(
            &self.template,
            &ScheduleKey::new(key).unwrap(),
            spec,
            Precondition::None,
            self.platform.now(),
        ))
        .unwrap()
    }

    fn delete(&self, key: &str) {
        block_on(self.coordinator.delete_schedule(
            &self.template,
            &ScheduleKey::new(key).unwrap(),
            Precondition::None,
            self.platform.now(),
        ))
        .unwrap();
    }

    /// A tick at `now`; the serve loop asks the record its claim wrote
    /// whether more is due, as every platform's does.
    fn tick(&self, now: &str) -> TickReport {
        self.clock.set(at(now));
        let coordinator = Rc::clone(&self.coordinator);
        let more_due = move |spec: &JobSpec, now: Timestamp| {
            coordinator
                .known(&spec.record_name())
                .is_none_or(|r| decide::more_due(spec, &r.value, now))
        };
        let options = TickOptions {
            owner: "t",
            max_jobs: None,
            retry_within: Duration::ZERO,
            more_due: Some(&more_due),
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

    fn ran(&self) -> Vec<(String, Option<String>, Option<String>)> {
        std::mem::take(&mut *self.runs.lock().unwrap())
    }

    fn counts(&self) -> (u64, u64) {
        (self.store.reads(), self.store.writes())
    }
}

fn run(slot: &str, key: &str, payload: &str) -> (String, Option<String>, Option<String>) {
    (
        slot.to_string(),
        Some(key.to_string()),
        Some(payload.to_string()),
    )
}

#[test]
fn a_tick_runs_each_due_schedule_once_with_its_key_and_payload() {
    let w = World::new("2026-01-05T04:28:30Z");
    w.put(
        "tenant:1",
        r#"{"cron": "*/10 * * * *", "payload": {"tenant": 1}}"#,
    );
    w.put(
        "tenant:2",
        r#"{"at": "2026-01-05T04:35:00Z", "payload": {"tenant": 2}}"#,
    );
    w.put(
        "tenant:3",
        r#"{"cron": "*/10 * * * *", "paused": true, "payload": {"tenant": 3}}"#,
    );
    w.tick("2026-01-05T04:28:40Z");
    assert!(w.ran().is_empty());

    let before = w.counts();
    let report = w.tick("2026-01-05T04:30:05Z");
    assert!(report.unresolved.is_empty(), "{:?}", report.unresolved);
    assert_eq!(
        w.ran(),
        vec![run(
            "invoice/tenant:1@2026-01-05T04:30:00Z",
            "tenant:1",
            r#"{"tenant": 1}"#
        )]
    );
    let (reads, writes) = (w.counts().0 - before.0, w.counts().1 - before.1);
    // The mark, and the schedule's record once (its claim starts from that
    // read); the claim, the completion and the mark.
    assert_eq!((reads, writes), (2, 3), "one due schedule");

    w.tick("2026-01-05T04:35:05Z");
    assert_eq!(
        w.ran(),
        vec![run(
            "invoice/tenant:2@2026-01-05T04:35:00Z",
            "tenant:2",
            r#"{"tenant": 2}"#
        )]
    );
    w.tick("2026-01-05T04:40:05Z");
    assert_eq!(
        w.ran(),
        vec![run(
            "invoice/tenant:1@2026-01-05T04:40:00Z",
            "tenant:1",
            r#"{"tenant": 1}"#
        )],
        "the one-off ran once; the paused schedule never"
    );
    // Between slots nothing is due: the mark's two requests, nothing read.
    let before = w.counts();
    let report = w.tick("2026-01-05T04:45:05Z");
    assert!(report.work.jobs.is_empty() && report.work.schedules.is_empty());
    assert_eq!(
        (w.counts().0 - before.0, w.counts().1 - before.1),
        (1, 1),
        "nothing due"
    );
}

#[test]
fn a_change_just_after_a_fire_time_runs_that_slot_with_the_old_version() {
    let w = World::new("2026-01-05T04:58:30Z");
    w.put(
        "t",
        r#"{"cron": "0 * * * *", "payload": {"plan": "basic"}}"#,
    );
    w.tick("2026-01-05T04:58:40Z");
    // 0.1 s after 05:00, before any tick claimed the slot: a new hour and
    // a new payload.
    w.clock.set(at("2026-01-05T05:00:00.1Z"));
    w.put("t", r#"{"cron": "30 * * * *", "payload": {"plan": "pro"}}"#);
    w.tick("2026-01-05T05:00:05Z");
    assert_eq!(
        w.ran(),
        vec![run(
            "invoice/t@2026-01-05T05:00:00Z",
            "t",
            r#"{"plan": "basic"}"#
        )],
        "the 05:00 slot belongs to the version in force at 05:00"
    );
    w.tick("2026-01-05T05:30:05Z");
    assert_eq!(
        w.ran(),
        vec![run(
            "invoice/t@2026-01-05T05:30:00Z",
            "t",
            r#"{"plan": "pro"}"#
        )]
    );
    w.tick("2026-01-05T06:00:05Z");
    assert!(w.ran().is_empty(), "06:00 is not a slot of the new version");
}

#[test]
fn a_deleted_schedule_starts_nothing_and_costs_a_tick_nothing() {
    let w = World::new("2026-01-05T04:28:30Z");
    w.put("gone", r#"{"cron": "*/10 * * * *"}"#);
    w.tick("2026-01-05T04:28:40Z");
    w.clock.set(at("2026-01-05T04:29:59.9Z"));
    w.delete("gone");
    let before = w.counts();
    let report = w.tick("2026-01-05T04:30:05Z");
    assert!(w.ran().is_empty());
    assert!(report.work.schedules.is_empty(), "a tombstone has no wake");
    assert_eq!((w.counts().0 - before.0, w.counts().1 - before.1), (1, 1));
}

#[test]
fn a_claim_with_a_spec_read_before_a_change_starts_nothing() {
    let w = World::new("2026-01-05T04:28:30Z");
    let key = ScheduleKey::new("t").unwrap();
    w.put("t", r#"{"cron": "*/10 * * * *"}"#);
    let now = at("2026-01-05T04:30:01Z");
    let read = block_on(w.coordinator.schedule_for_claim(&w.template, &key, now))
        .unwrap()
        .unwrap();
    assert_eq!(read.schedule_version, Some(1));
    // Another instance changes it between the read and the claim.
    let other = CasCoordinator::new(w.store.clone(), 6);
    block_on(other.put_schedule(
        &w.template,
        &key,
        ScheduleSpec::from_json(r#"{"cron": "5 * * * *"}"#).unwrap(),
        Precondition::None,
        now,
    ))
    .unwrap();
    let claim = block_on(w.coordinator.claim(&read, now, Trigger::Tick, "t")).unwrap();
    assert_eq!(
        claim,
        Claim::Idle(Idle::ScheduleChanged { current: Some(2) })
    );
    // The 04:30 slot was due at the change: it stays with version 1, and
    // the next read serves it.
    let fresh = block_on(w.coordinator.schedule_for_claim(&w.template, &key, now))
        .unwrap()
        .unwrap();
    assert_eq!(fresh.schedule_version, Some(2));
    let Claim::Claimed(lease) =
        block_on(w.coordinator.claim(&fresh, now, Trigger::Tick, "t")).unwrap()
    else {
        panic!("the slot due before the change runs");
    };
    assert_eq!(lease.slot, at("2026-01-05T04:30:00Z"));
    assert_eq!(lease.version, Some(1));
}
