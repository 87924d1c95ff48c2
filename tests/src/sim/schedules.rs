//! The simulation of schedules as data (issue 26, point 7): several
//! application clients upsert, change, pause, delete and re-create the
//! schedules of a dynamic job, conditionally (`If-Match`) or not, while
//! workers tick and run their slots through the runtime, and the store
//! fails operations now and then (without effect, or applied with the
//! answer lost). One seeded random source decides everything, on a virtual
//! clock, so a seed replays exactly.
//!
//! Checked, per schedule:
//! - **once per slot**: no slot id succeeds twice;
//! - **no slot after an acknowledged delete**: no run starts for a slot
//!   after a delete that was acknowledged, unless a re-create acknowledged
//!   before the slot brought the schedule back;
//! - **no update lost under `If-Match`**: every acknowledged write got a
//!   version no other acknowledged write got, and a conditional write on
//!   version `v` that was acknowledged as a change got `v + 1`;
//! - **fences keep increasing**, across deletes and re-creates: each run
//!   of a schedule holds a greater fence than every run claimed before it;
//! - **nothing stuck**: once the clients stop and the store heals, a few
//!   ticks leave every live, unpaused schedule with nothing due left.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cronslot_core::coord::decide::{self, Precondition, ScheduleRefusal, ScheduleWrite};
use cronslot_core::coord::exec::{block_on, join_all};
use cronslot_core::coord::{
    CasCoordinator, Fault, MemoryStore, RandomSource, ScheduleError, Schedules, SplitMix64,
    StateStore,
};
use cronslot_core::manifest::{JobSpec, JobTemplate, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_runtime::{Jobs, Platform, TickOptions, TickPlan, VirtualPlatform, tick};
use jiff::{SignedDuration, Timestamp};

/// What one seed did, for the caller's report and its assertions.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScheduleSimReport {
    /// Acknowledged writes that created or changed a schedule.
    pub changes: u64,
    /// Acknowledged deletes.
    pub deletes: u64,
    /// Conditional writes refused because another client changed it first.
    pub refused: u64,
    /// Writes that failed on the store (their effect unknown).
    pub failed_writes: u64,
    /// Runs that succeeded.
    pub runs: u64,
    /// A hash of everything that happened, equal for equal seeds.
    pub trace: u64,
}

const CLIENTS: usize = 3;
const WORKERS: usize = 2;
const KEYS: usize = 4;
const SPECS: [&str; 4] = [
    r#"{"cron": "* * * * *", "payload": {"p": 1}}"#,
    r#"{"cron": "*/2 * * * *", "payload": {"p": 2}}"#,
    r#"{"cron": "* * * * *", "timezone": "Europe/Berlin", "payload": {"p": 3}}"#,
    r#"{"cron": "*/3 * * * *", "paused": true}"#,
];

/// What one concurrent step came to.
enum Step {
    Wrote(Result<ScheduleWrite, ScheduleError>),
    Ticked(Result<usize, String>),
}

/// What a key is from an instant on, by the acknowledged writes.
#[derive(Debug, Clone, Copy)]
enum InForce {
    /// `SPECS[i]`.
    Spec(usize),
    Deleted,
    /// A write failed with its effect unknown: not checked until the next
    /// acknowledged one.
    Unknown,
}

/// What the runs did, shared with the job function.
#[derive(Default)]
struct Seen {
    /// Slot ids that succeeded.
    succeeded: HashSet<String>,
    /// Per key: (slot, fence, payload) of each run, in start order.
    runs: BTreeMap<String, Vec<(Timestamp, u64, Option<String>)>>,
    twice: Vec<String>,
}

/// Runs one seed for `minutes` of virtual time.
pub fn run_schedule_sim(seed: u64, minutes: i64) -> ScheduleSimReport {
    let template: JobTemplate = parse_manifest(
        "[[job]]\nname = \"sim\"\ndynamic = true\nlease = \"2m\"\nretry = { max_attempts = 2, backoff = \"5s\", max_backoff = \"5s\" }\n",
        "sim.toml",
    )
    .unwrap()
    .templates
    .remove(0);
    let template = Rc::new(template);
    let store = MemoryStore::yielding();
    let mut rng = SplitMix64::new(seed);
    let start: Timestamp = "2030-03-30T23:58:10Z".parse().unwrap();
    let clock = VirtualPlatform::new(start);
    let platform: Rc<dyn Platform> = Rc::new(clock.clone());
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let failing = Arc::new(Mutex::new(SplitMix64::new(seed ^ 0x5eed)));
    let jobs = {
        let seen = Arc::clone(&seen);
        let failing = Arc::clone(&failing);
        Jobs::new().register("sim", move |ctx| {
            let seen = Arc::clone(&seen);
            let fail = failing.lock().unwrap().next_u64() % 5 == 0;
            async move {
                let key = ctx.key().unwrap().to_string();
                let mut seen = seen.lock().unwrap();
                seen.runs.entry(key).or_default().push((
                    ctx.scheduled_at(),
                    ctx.fence(),
                    ctx.payload().map(str::to_string),
                ));
                if fail {
                    return Err(cronslot_runtime::JobError::transient("flaky"));
                }
                let slot = ctx.slot_id().to_string();
                if !seen.succeeded.insert(slot.clone()) {
                    seen.twice.push(slot);
                }
                Ok(())
            }
        })
    };
    let clients: Vec<CasCoordinator<MemoryStore>> = (0..CLIENTS)
        .map(|i| CasCoordinator::new(store.clone(), seed ^ (i as u64 + 1)))
        .collect();
    let workers: Vec<Rc<CasCoordinator<MemoryStore>>> = (0..WORKERS)
        .map(|i| Rc::new(CasCoordinator::new(store.clone(), seed ^ (100 + i as u64))))
        .collect();
    let plan = TickPlan::new(Vec::new(), |_| true).with_templates(vec![Rc::clone(&template)]);
    let keys: Vec<ScheduleKey> = (0..KEYS)
        .map(|i| ScheduleKey::new(format!("k{i}")).unwrap())
        .collect();
    // Per key: the acknowledged versions, and when it was deleted (and not
    // re-created since), by the acknowledgements' instants.
    let mut versions: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut deleted_at: BTreeMap<String, Timestamp> = BTreeMap::new();
    let mut in_force: BTreeMap<String, Vec<(Timestamp, InForce)>> = BTreeMap::new();
    let mut gone_windows: Vec<(String, Timestamp, Option<Timestamp>)> = Vec::new();
    let mut known_version: BTreeMap<(usize, String), u64> = BTreeMap::new();
    let mut report = ScheduleSimReport::default();
    let mut trace = Trace::default();
    let end = start + SignedDuration::from_mins(minutes);
    while clock.now() < end {
        // A few seconds pass; faults come and go.
        let step = 1 + rng.next_u64() % 20;
        clock.advance(Duration::from_secs(step));
        if rng.next_u64() % 10 == 0 {
            let fault = if rng.next_u64() % 2 == 0 {
                Fault::Unavailable
            } else {
                Fault::AppliedThenTimeout
            };
            store.inject(&[fault]);
        }
        // A client writes while the workers tick: all at once, so that a
        // change lands between a tick's read of a schedule and its claim.
        let write = (rng.next_u64() % 3 == 0).then(|| {
            let c = (rng.next_u64() % CLIENTS as u64) as usize;
            let key = keys[(rng.next_u64() % KEYS as u64) as usize].clone();
            let conditional = rng.next_u64() % 2 == 0;
            let precondition = match known_version.get(&(c, key.as_str().to_string())) {
                Some(v) if conditional => Precondition::Version(*v),
                _ => Precondition::None,
            };
            let spec = (rng.next_u64() % 5 != 0).then(|| (rng.next_u64() % 4) as usize);
            (c, key, precondition, spec)
        });
        let ticking = rng.next_u64() % 2 == 0;
        // Time the ticks still in flight see pass after the write: a slot
        // can come due between a tick's read of a schedule and its claim.
        let slow = Duration::from_secs(rng.next_u64() % 90);
        // How many turns the ticks get before the write starts: 0 lands it
        // before their reads, more between a read and its claim.
        let turns = rng.next_u64() % 6;
        let now = clock.now();
        let mut steps: Vec<Pin<Box<dyn Future<Output = Step> + '_>>> = Vec::new();
        if let Some((c, key, precondition, spec)) = write.clone() {
            let (client, template, clock) = (&clients[c], &template, &clock);
            steps.push(Box::pin(async move {
                for _ in 0..turns {
                    YieldNow(false).await;
                }
                let written = match spec {
                    None => {
                        client
                            .delete_schedule(template, &key, precondition, now)
                            .await
                    }
                    Some(i) => {
                        let spec = ScheduleSpec::from_json(SPECS[i]).unwrap();
                        client
                            .put_schedule(template, &key, spec, precondition, now)
                            .await
                    }
                };
                clock.advance(slow);
                Step::Wrote(written)
            }));
        }
        if ticking {
            for (i, w) in workers.iter().enumerate() {
                let (plan, jobs, platform, store) = (&plan, &jobs, &platform, &store);
                steps.push(Box::pin(async move {
                    let owner = format!("w{i}");
                    let known = Rc::clone(w);
                    let more_due = move |spec: &JobSpec, now: Timestamp| {
                        known
                            .known(&spec.record_name())
                            .is_none_or(|r| decide::more_due(spec, &r.value, now))
                    };
                    let options = TickOptions {
                        owner: &owner,
                        max_jobs: None,
                        retry_within: Duration::ZERO,
                        more_due: Some(&more_due),
                    };
                    let served = tick(plan, w, store, jobs, platform, &options).await;
                    Step::Ticked(served.map(|r| r.served.len()).map_err(|e| e.to_string()))
                }));
            }
        }
        for step in block_on(join_all(steps)) {
            let written = match step {
                Step::Ticked(served) => {
                    trace.add(&format!("tick {served:?}"));
                    continue;
                }
                Step::Wrote(written) => written,
            };
            let Some((c, key, precondition, spec)) = write.clone() else {
                continue;
            };
            let name = key.as_str().to_string();
            let delete = spec.is_none();
            trace.add(&format!("{c} {name} {written:?}"));
            match written {
                Ok(ScheduleWrite::Unchanged { version }) => {
                    known_version.insert((c, name), version);
                }
                Ok(w) => {
                    let version = match w {
                        ScheduleWrite::Created { version }
                        | ScheduleWrite::Changed { version }
                        | ScheduleWrite::Deleted { version } => version,
                        ScheduleWrite::Unchanged { .. } => unreachable!(),
                    };
                    if let Precondition::Version(v) = precondition {
                        assert_eq!(
                            version,
                            v + 1,
                            "seed {seed}: a write on version {v} of {name}"
                        );
                    }
                    versions.entry(name.clone()).or_default().push(version);
                    known_version.insert((c, name.clone()), version);
                    in_force.entry(name.clone()).or_default().push((
                        now,
                        match spec {
                            Some(i) => InForce::Spec(i),
                            None => InForce::Deleted,
                        },
                    ));
                    if delete {
                        report.deletes += 1;
                        deleted_at.entry(name).or_insert(now);
                    } else {
                        report.changes += 1;
                        if let Some(at) = deleted_at.remove(&name) {
                            gone_windows.push((name, at, Some(now)));
                        }
                    }
                }
                Err(ScheduleError::Refused(
                    ScheduleRefusal::VersionMismatch { .. } | ScheduleRefusal::Exists { .. },
                )) => {
                    report.refused += 1;
                    known_version.remove(&(c, name));
                }
                Err(ScheduleError::Refused(ScheduleRefusal::NotFound)) => {}
                Err(_) => {
                    report.failed_writes += 1;
                    // The effect is unknown: forget what this client knew.
                    // A delete that landed unacknowledged only removes
                    // slots; a write that did may have re-created a deleted
                    // schedule, so its slots may run from now on.
                    known_version.remove(&(c, name.clone()));
                    in_force
                        .entry(name.clone())
                        .or_default()
                        .push((now, InForce::Unknown));
                    if !delete {
                        if let Some(at) = deleted_at.remove(&name) {
                            gone_windows.push((name, at, Some(now)));
                        }
                    }
                }
            }
        }
    }
    // The clients stop, the store heals (the faults still queued are used
    // up), time goes on: what is due runs.
    for _ in 0..16 {
        let _ = block_on(store.get("drain"));
    }
    for _ in 0..6 {
        clock.advance(Duration::from_secs(30));
        let w = &workers[0];
        let known = Rc::clone(w);
        let more_due = move |spec: &JobSpec, now: Timestamp| {
            known
                .known(&spec.record_name())
                .is_none_or(|r| decide::more_due(spec, &r.value, now))
        };
        let options = TickOptions {
            owner: "final",
            max_jobs: None,
            retry_within: Duration::ZERO,
            more_due: Some(&more_due),
        };
        block_on(tick(&plan, w, &store, &jobs, &platform, &options)).unwrap();
    }
    for (name, at) in &deleted_at {
        gone_windows.push((name.clone(), *at, None));
    }

    let seen = seen.lock().unwrap();
    assert!(
        seen.twice.is_empty(),
        "seed {seed}: slots succeeded twice: {:?}",
        seen.twice
    );
    for (name, runs) in &seen.runs {
        for pair in runs.windows(2) {
            assert!(
                pair[1].1 > pair[0].1,
                "seed {seed}: {name}: a run's fence {} after fence {}",
                pair[1].1,
                pair[0].1
            );
        }
        // A slot runs with the version in force at its instant: the last
        // acknowledged write strictly before it (a slot at the write's
        // instant belongs to the version before).
        for (slot, fence, payload) in runs {
            let timeline = in_force.get(name).map(Vec::as_slice).unwrap_or(&[]);
            let Some((at, state)) = timeline.iter().rev().find(|(at, _)| at < slot) else {
                continue;
            };
            match state {
                InForce::Unknown => {}
                InForce::Deleted => {
                    panic!(
                        "seed {seed}: {name}: slot {slot} ran (fence {fence}) after the delete at {at}"
                    )
                }
                InForce::Spec(i) => {
                    let spec = ScheduleSpec::from_json(SPECS[*i]).unwrap();
                    assert!(
                        !spec.paused,
                        "seed {seed}: {name}: slot {slot} ran while paused since {at}"
                    );
                    let expected = spec.payload.as_ref().map(|p| p.get().to_string());
                    assert_eq!(
                        payload, &expected,
                        "seed {seed}: {name}: slot {slot} ran with the payload of another version than the one written at {at}"
                    );
                    let job = template
                        .for_schedule(&ScheduleKey::new(name.clone()).unwrap(), &spec)
                        .unwrap();
                    assert!(
                        job.schedule.is_slot(*slot),
                        "seed {seed}: {name}: {slot} is not a slot of the version written at {at}"
                    );
                }
            }
        }
        for (key, from, until) in &gone_windows {
            if key != name {
                continue;
            }
            for (slot, fence, _) in runs {
                let inside = *slot > *from && until.is_none_or(|u| *slot <= u);
                assert!(
                    !inside,
                    "seed {seed}: {name}: slot {slot} ran (fence {fence}) after the delete at {from}"
                );
            }
        }
    }
    for (name, acked) in &versions {
        let distinct: HashSet<&u64> = acked.iter().collect();
        assert_eq!(
            distinct.len(),
            acked.len(),
            "seed {seed}: {name}: versions {acked:?}"
        );
    }
    // Nothing stuck: every live, unpaused schedule has no slot or run due.
    let now = clock.now();
    for key in &keys {
        let Some(record) = block_on(clients[0].schedule(&template, key)).unwrap() else {
            continue;
        };
        let Some(spec) = record.data.job_spec(&template, key).unwrap() else {
            continue;
        };
        let state = &record.record;
        assert!(
            !decide::more_due(&spec, state, now - SignedDuration::from_mins(1)),
            "seed {seed}: {}: something is still due at {now}: {state:?}",
            key.as_str()
        );
    }
    report.runs = seen.succeeded.len() as u64;
    report.trace = trace.0;
    report
}

/// An FNV-1a hash of the events, in order.
#[derive(Default)]
struct Trace(u64);

impl Trace {
    fn add(&mut self, event: &str) {
        if self.0 == 0 {
            self.0 = 0xcbf2_9ce4_8422_2325;
        }
        for b in event.bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Lets the other futures of a step run once.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
