//! The simulation of keyed runs (issue 27, point 6): several application
//! clients enqueue one-off runs of a dynamic job under a small pool of
//! business keys, at once and again and again (the same payload mostly,
//! now and then another one, which must be refused), while workers tick
//! and run them through the runtime's real tick and run loop, on a virtual
//! clock. The store fails operations now and then (without effect, or
//! applied with the answer lost), workers crash at any await point and on
//! purpose between a claim and its run and between a run's effect and the
//! recording of its outcome (the lease then expires and the run is
//! retried), jobs fail transiently or for good (dead), an operator
//! redrives some dead runs, and the clock jumps about a key retention
//! (30 days) between busy periods, so that keys are forgotten, swept and
//! enqueued again as new runs. One seeded random source decides
//! everything, so a seed replays exactly.
//!
//! The job's effect goes through the effect ledger (`RunContext::effect`),
//! keyed by the run id; the simulation counts every time the effect's body
//! runs. Checked after every step and at the end:
//! - **an accepted run ends exactly once in effect**: every enqueue
//!   answered `Created` or `Existing` names a run that, once the store
//!   heals and the clients stop, is succeeded or dead; a succeeded run's
//!   effect ran, and the ledger holds it done; no effect runs again once
//!   the ledger holds it done (a dead run redriven, a retry after a crash
//!   between the effect and the run's record). An effect runs twice only
//!   when the run was cut between the effect and the ledger's record of it
//!   (the window no ledger closes), and the report counts those;
//! - **an enqueue that failed** may or may not have created its run; every
//!   run that exists ends as above;
//! - **one run per key within its retention**: at most one `Created` per
//!   run id; a key names a new run only once the one before ended and its
//!   retention passed (by the records), and no key's effect runs for two
//!   runs less than a retention apart (by the effects);
//! - **a refusal changes nothing**: an enqueue with another payload is
//!   refused `Differs`, naming the run and its payload, which is the
//!   payload the run was created with; no run's payload ever changes, and
//!   an accepted answer carries the request's payload;
//! - **fences only grow**: every write of a record holds a fence at least
//!   the one before (across re-enqueues over a forgotten run), until the
//!   sweep deletes the record;
//! - **nothing stuck**: after a quiet period (no faults, no crashes, no
//!   clients), no record holds a lease or a waiting run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Waker};
use std::time::Duration;

use cronslot_core::coord::decide::{self, Enqueued, RunRefusal};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, EffectError, EffectLedger, EffectState, JobState, Operator, RandomSource,
    RunError, Runs, SplitMix64, StateStore, TickIndex,
};
use cronslot_core::manifest::{JobSpec, JobTemplate, parse_manifest};
use cronslot_core::schedules::{RunRequest, RunStatus, RunView, ScheduleKey};
use cronslot_runtime::{
    JobError, JobResult, Jobs, LocalFuture, Platform, RunContext, TickOptions, TickPlan, tick,
};
use jiff::{SignedDuration, Timestamp};

use super::faults::{Applied, FaultCounts, FaultPlan, FaultStore};
use super::{SleepUntil, Trace, chance, plus, range, secs};

/// The dynamic job whose keyed runs are enqueued: its runs retried twice,
/// its keys remembered the shortest retention there is.
const MANIFEST: &str = r#"
[[job]]
name = "runs"
dynamic = true
lease = "2m"
skew_margin = "5s"
retry = { max_attempts = 3, backoff = "5s", max_backoff = "20s" }
key_retention = "30d"
"#;

const KEYS: usize = 4;
const CLIENTS: usize = 4;
const WORKERS: usize = 3;

/// How much to simulate and how hard.
#[derive(Debug, Clone)]
pub struct RunSimConfig {
    pub seed: u64,
    /// Busy periods, each followed by a jump of the clock about a key
    /// retention (the last by the quiet period).
    pub periods: u32,
    /// Virtual minutes of each busy period.
    pub period_minutes: i64,
    /// Chances, in parts per million: a store operation fails without
    /// effect, a write applies and loses its answer, a worker crashes at a
    /// poll, a client gives up on its enqueue at a poll.
    pub store_unavailable_ppm: u64,
    pub store_ambiguous_ppm: u64,
    pub crash_per_poll_ppm: u64,
    pub client_drop_per_poll_ppm: u64,
}

impl RunSimConfig {
    pub fn new(seed: u64) -> RunSimConfig {
        RunSimConfig {
            seed,
            periods: 4,
            period_minutes: 20,
            store_unavailable_ppm: 40_000,
            store_ambiguous_ppm: 30_000,
            crash_per_poll_ppm: 6_000,
            client_drop_per_poll_ppm: 4_000,
        }
    }
}

/// What one seed did, for the caller's report and its assertions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSimReport {
    pub seed: u64,
    pub steps: u64,
    /// Enqueues answered, by answer; failed on the store (effect unknown);
    /// given up by their client before an answer.
    pub created: u64,
    pub existing: u64,
    pub differs: u64,
    pub failed_enqueues: u64,
    pub unanswered: u64,
    /// Runs answered `Created` to two enqueues: the second's write was
    /// refused (the first had won with the very same record) but answered
    /// as ambiguous, and reading the record back cannot tell the two
    /// writes apart. Allowed (the run is one), counted.
    pub created_twice_ambiguous: u64,
    /// Distinct runs seen in the store, and how they ended.
    pub runs: u64,
    pub succeeded: u64,
    pub dead: u64,
    /// Runs created under a key that named an earlier run (forgotten).
    pub keys_reused: u64,
    /// Records of forgotten keys deleted by the ticks' sweep.
    pub swept: u64,
    /// Worker crashes: on purpose between a claim and its run, between a
    /// run's effect and its record; at any other poll.
    pub crashes_before_run: u64,
    pub crashes_after_effect: u64,
    pub crashes_at_polls: u64,
    /// Redrives of a dead run asked, and answered.
    pub redrives: u64,
    pub redrives_ok: u64,
    /// Times an effect's body ran, and of those the repeats of a run's
    /// effect that the ledger had not recorded as done (allowed).
    pub effects: u64,
    pub effects_repeated_unrecorded: u64,
    pub store: FaultCounts,
    pub violations: Vec<String>,
    /// A hash of everything that happened, equal for equal seeds.
    pub trace: u64,
}

impl RunSimReport {
    /// One line: what ran, what was injected, what was checked.
    pub fn summary(&self, store: &str) -> String {
        format!(
            "runs sim {store} seed {}: {} steps; enqueues {} created, {} existing, {} differs, \
             {} failed, {} unanswered, {} created twice (ambiguous); {} runs ({} succeeded, {} dead), {} keys reused, \
             {} swept; crashes {} before a run, {} after an effect, {} at polls; \
             redrives {} ({} answered); effects {} ({} repeated unrecorded); store ops {} \
             ({} unavailable, {} ambiguous); {} violations; trace {:016x}",
            self.seed,
            self.steps,
            self.created,
            self.existing,
            self.differs,
            self.failed_enqueues,
            self.unanswered,
            self.created_twice_ambiguous,
            self.runs,
            self.succeeded,
            self.dead,
            self.keys_reused,
            self.swept,
            self.crashes_before_run,
            self.crashes_after_effect,
            self.crashes_at_polls,
            self.redrives,
            self.redrives_ok,
            self.effects,
            self.effects_repeated_unrecorded,
            self.store.operations,
            self.store.unavailable,
            self.store.ambiguous,
            self.violations.len(),
            self.trace,
        )
    }
}

/// The simulation's time zero.
fn t0() -> Timestamp {
    "2031-05-05T08:00:20Z".parse().unwrap()
}

fn template() -> JobTemplate {
    parse_manifest(MANIFEST, "runs-sim.toml")
        .unwrap_or_else(|e| panic!("simulation manifest:\n{e}"))
        .templates
        .remove(0)
}

/// The payloads a key is enqueued with: the usual one, and another.
fn payload(key: usize, other: bool) -> String {
    if other {
        format!(r#"{{"order":{key},"rush":true}}"#)
    } else {
        format!(r#"{{"order":{key}}}"#)
    }
}

/// A payload as a JSON value (spacing and key order aside).
fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
}

fn view_payload(view: &RunView) -> Option<serde_json::Value> {
    view.payload.as_ref().map(|p| json(p.get()))
}

/// How one attempt of a run behaves, drawn when it starts.
#[derive(Debug, Clone, Copy)]
struct AttemptPlan {
    crash_before: bool,
    crash_after: bool,
    /// 0 success, 1 transient failure, 2 permanent failure after the
    /// effect, 3 permanent failure before it.
    outcome: u8,
    work: Duration,
}

/// One run of the effect's body.
#[derive(Debug, Clone)]
struct EffectRan {
    run: String,
    key: String,
    at: Timestamp,
    /// Whether the ledger held the effect done when the body ran.
    recorded_done: bool,
}

/// Shared with the job function (through [`SIM`]).
struct Shared {
    clock: Rc<Cell<Timestamp>>,
    rng: RefCell<SplitMix64>,
    /// The quiet period: no crashes on purpose.
    calm: Cell<bool>,
    /// Owners whose run asked its process to crash.
    crash: RefCell<BTreeSet<String>>,
    effects: RefCell<Vec<EffectRan>>,
    /// Reads the ledger without faults: is this effect recorded as done?
    ledger_done: Box<dyn Fn(&str) -> bool>,
    crashes_before_run: Cell<u64>,
    crashes_after_effect: Cell<u64>,
}

impl Shared {
    fn attempt_plan(&self) -> AttemptPlan {
        let mut rng = self.rng.borrow_mut();
        let calm = self.calm.get();
        let crash_before = !calm && chance(&mut rng, 60_000);
        let crash_after = !calm && chance(&mut rng, 80_000);
        let o = rng.next_u64() % 100;
        let outcome = match o {
            0..80 => 0,
            80..92 => 1,
            92..96 => 2,
            _ => 3,
        };
        let work = Duration::from_secs(rng.next_u64() % 30);
        AttemptPlan {
            crash_before,
            crash_after,
            outcome,
            work,
        }
    }
}

thread_local! {
    /// The simulation running on this thread: job functions are `Send +
    /// Sync`, so the job reaches the simulation through here.
    static SIM: RefCell<Option<Rc<Shared>>> = const { RefCell::new(None) };
}

/// The process of `owner` stops here: the driver drops its future.
async fn crash_here(sh: &Shared, owner: &str) {
    sh.crash.borrow_mut().insert(owner.to_string());
    std::future::pending::<()>().await;
}

/// The keyed run's job: maybe crash before doing anything, its effect
/// through the ledger (keyed by the run id), some work, maybe crash before
/// its outcome is recorded, then the planned outcome.
async fn keyed_job(ctx: RunContext) -> JobResult {
    let Some(sh) = SIM.with(|s| s.borrow().clone()) else {
        return Err(JobError::permanent("no simulation on this thread"));
    };
    let plan = sh.attempt_plan();
    if plan.crash_before {
        sh.crashes_before_run.set(sh.crashes_before_run.get() + 1);
        crash_here(&sh, ctx.owner()).await;
    }
    if plan.outcome == 3 {
        return Err(JobError::permanent("refused before its effect"));
    }
    let run = ctx.idempotency_key();
    let key = ctx.key().unwrap_or_default().to_string();
    let ledger_key = format!("{run}/send");
    let ran = ctx
        .effect("send", || async {
            let recorded_done = (sh.ledger_done)(&ledger_key);
            sh.effects.borrow_mut().push(EffectRan {
                run: run.clone(),
                key: key.clone(),
                at: sh.clock.get(),
                recorded_done,
            });
            Ok::<_, String>("sent".to_string())
        })
        .await;
    match ran {
        Ok(_) => {}
        Err(e @ EffectError::Superseded { .. }) => return Err(e.into()),
        Err(e) => return Err(JobError::transient(e.to_string())),
    }
    ctx.sleep(plan.work).await;
    if plan.crash_after {
        sh.crashes_after_effect
            .set(sh.crashes_after_effect.get() + 1);
        crash_here(&sh, ctx.owner()).await;
    }
    match plan.outcome {
        0 => Ok(()),
        1 => Err(JobError::transient("partner API 503")),
        _ => Err(JobError::permanent("order cancelled")),
    }
}

/// The virtual clock as the runtime's platform: sleeps end once the
/// driver's clock has passed them.
struct SimClock(Rc<Cell<Timestamp>>);

impl Platform for SimClock {
    fn name(&self) -> &'static str {
        "the keyed runs' simulation"
    }

    fn now(&self) -> Timestamp {
        self.0.get()
    }

    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()> {
        let clock = Rc::clone(&self.0);
        SleepUntil::after(Box::new(move || clock.get()), duration)
    }
}

type Task = Pin<Box<dyn Future<Output = ()>>>;
type Coord<S> = CasCoordinator<FaultStore<S>>;

struct Worker<S> {
    coord: Rc<Coord<S>>,
    owner: String,
    incarnation: u32,
    task: Option<Task>,
}

struct Client<S> {
    coord: Rc<Coord<S>>,
    task: Option<Task>,
}

/// An enqueue's answer: (client, key, the request's payload, result).
type Answer = (usize, usize, String, Result<Enqueued, RunError>);

/// One tick of a worker, owning what it needs so that it can live across
/// steps (and be dropped at any poll: a crash).
fn tick_task<S>(
    plan: Rc<TickPlan>,
    coord: Rc<Coord<S>>,
    index: FaultStore<S>,
    jobs: Rc<Jobs>,
    platform: Rc<dyn Platform>,
    owner: String,
) -> Task
where
    S: StateStore + EffectLedger + TickIndex + Clone + 'static,
{
    Box::pin(async move {
        let known = Rc::clone(&coord);
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
        let _ = tick(&plan, &coord, &index, &jobs, &platform, &options).await;
    })
}

/// What the records showed of one run.
#[derive(Debug, Clone)]
struct RunSeen {
    key: usize,
    payload: Option<serde_json::Value>,
    enqueued: Timestamp,
    status: RunStatus,
    finished: Option<Timestamp>,
    ledger_checked: bool,
}

/// The checks, fed after every step.
struct Checker {
    retention: SignedDuration,
    runs: BTreeMap<String, RunSeen>,
    /// The run each key's record names now (`None`: no record).
    current: Vec<Option<String>>,
    /// The last run each key named.
    last: Vec<Option<String>>,
    created: BTreeMap<String, u32>,
    /// Per record: writes refused but answered as ambiguous, not yet
    /// matched with a second `Created`.
    unresolvable: BTreeMap<String, u32>,
    accepted: BTreeMap<String, usize>,
    /// Per record: the last fence written since it was (re)created.
    fences: BTreeMap<String, u64>,
    /// Per run: the instants its effect ran; per key: (instant, run).
    effect_times: BTreeMap<String, Vec<Timestamp>>,
    key_effects: Vec<Vec<(Timestamp, String)>>,
    violations: Vec<String>,
}

impl Checker {
    fn new(retention: SignedDuration) -> Checker {
        Checker {
            retention,
            runs: BTreeMap::new(),
            current: vec![None; KEYS],
            last: vec![None; KEYS],
            created: BTreeMap::new(),
            unresolvable: BTreeMap::new(),
            accepted: BTreeMap::new(),
            fences: BTreeMap::new(),
            effect_times: BTreeMap::new(),
            key_effects: vec![Vec::new(); KEYS],
            violations: Vec::new(),
        }
    }

    fn ended(status: RunStatus) -> bool {
        matches!(status, RunStatus::Succeeded | RunStatus::Dead)
    }

    /// A key's record as read now (`None`: no record).
    fn observe(
        &mut self,
        k: usize,
        record: Option<&JobState>,
        now: Timestamp,
        ledger_done: &dyn Fn(&str) -> bool,
        report: &mut RunSimReport,
        trace: &mut Trace,
    ) {
        let Some(state) = record else {
            if let Some(r0) = self.current[k].take() {
                // Swept: only once its run ended and its retention passed.
                let seen = &self.runs[&r0];
                report.swept += 1;
                trace.add(&format!("swept {r0};"));
                if !Self::ended(seen.status) {
                    self.violations.push(format!(
                        "{r0}: its record was deleted while {:?}",
                        seen.status
                    ));
                } else if seen.finished.is_none_or(|f| now < plus(f, self.retention)) {
                    self.violations.push(format!(
                        "{r0}: its record was deleted at {now}, within its retention (ended {:?})",
                        seen.finished
                    ));
                }
            }
            return;
        };
        if state.schedule.as_ref().is_none_or(|d| d.run.is_none()) {
            self.violations
                .push(format!("{}: a record that is no keyed run's", state.job));
            return;
        }
        let view = match decide::run_view(state) {
            Ok(view) => view,
            Err(e) => {
                self.violations
                    .push(format!("{}: the run does not read: {e}", state.job));
                return;
            }
        };
        let run = view.run.clone();
        trace.add(&format!(
            "o{run}:{:?}:{}:{};",
            view.status, view.attempts, view.fence
        ));
        if self.current[k].as_ref() != Some(&run) {
            // A new run of the key: the run before (if any) ended, and its
            // retention passed before this one appeared. (By the instant
            // it was seen, not the one it holds: an enqueue holds the
            // instant its client sent it, which a jump of the clock while
            // it was on its way leaves far behind.)
            if let Some(r0) = self.last[k].clone() {
                report.keys_reused += 1;
                let seen = &self.runs[&r0];
                if !Self::ended(seen.status) {
                    self.violations.push(format!(
                        "{run} was created while the run {r0} of its key was {:?}",
                        seen.status
                    ));
                } else if seen.finished.is_none_or(|f| now < plus(f, self.retention)) {
                    self.violations.push(format!(
                        "{run} (enqueued at {}) appeared at {now}, within the retention of the \
                         run {r0} of its key (ended {:?})",
                        view.enqueued, seen.finished
                    ));
                }
            }
            if self.runs.contains_key(&run) {
                self.violations
                    .push(format!("{run}: named by its key again after another run"));
            }
            self.current[k] = Some(run.clone());
            self.last[k] = Some(run.clone());
        }
        let payload = view_payload(&view);
        let seen = self.runs.entry(run.clone()).or_insert_with(|| {
            report.runs += 1;
            RunSeen {
                key: k,
                payload: payload.clone(),
                enqueued: view.enqueued,
                status: view.status,
                finished: None,
                ledger_checked: false,
            }
        });
        if seen.payload != payload {
            self.violations.push(format!(
                "{run}: its payload changed from {:?} to {payload:?}",
                seen.payload
            ));
        }
        if seen.enqueued != view.enqueued {
            self.violations.push(format!(
                "{run}: enqueued at {}, now said {}",
                seen.enqueued, view.enqueued
            ));
        }
        seen.status = view.status;
        if Self::ended(view.status) {
            seen.finished = view.finished;
        }
        if view.status == RunStatus::Succeeded && !seen.ledger_checked {
            // Read when first seen succeeded: the ledger may forget an
            // effect long before the key is forgotten.
            seen.ledger_checked = true;
            if !ledger_done(&format!("{run}/send")) {
                self.violations.push(format!(
                    "{run} succeeded without its effect recorded as done in the ledger"
                ));
            }
        }
    }

    fn answer(&mut self, answer: &Answer, report: &mut RunSimReport) {
        let (c, k, sent, result) = answer;
        let sent_value = json(sent);
        match result {
            Ok(Enqueued::Created(view)) | Ok(Enqueued::Existing(view)) => {
                let created = matches!(result, Ok(Enqueued::Created(_)));
                if created {
                    report.created += 1;
                    let n = self.created.entry(view.run.clone()).or_default();
                    *n += 1;
                    let record = view.run.split('@').next().unwrap_or_default();
                    let excused = self.unresolvable.get_mut(record).filter(|u| **u > 0);
                    if let (true, Some(excused)) = (*n > 1, excused) {
                        *excused -= 1;
                        report.created_twice_ambiguous += 1;
                    } else if *n > 1 {
                        self.violations.push(format!(
                            "client {c}: {} answered created {n} times",
                            view.run
                        ));
                    }
                } else {
                    report.existing += 1;
                }
                if view.key != format!("order-{k}") {
                    self.violations.push(format!(
                        "client {c}: an enqueue of order-{k} answered the run {}",
                        view.run
                    ));
                }
                if view_payload(view) != Some(sent_value) {
                    self.violations.push(format!(
                        "client {c}: an enqueue with {sent} was accepted as the run {} with {:?}",
                        view.run,
                        view.payload.as_ref().map(|p| p.get())
                    ));
                }
                self.accepted.insert(view.run.clone(), *k);
            }
            Err(RunError::Refused(RunRefusal::Differs { fields, existing })) => {
                report.differs += 1;
                if fields != &["payload".to_string()] {
                    self.violations.push(format!(
                        "client {c}: refused for {fields:?}, only the payload differs"
                    ));
                }
                let named = view_payload(existing);
                if named.as_ref() == Some(&sent_value) {
                    self.violations.push(format!(
                        "client {c}: {sent} refused as differing from the same payload"
                    ));
                }
                match self.runs.get(&existing.run) {
                    Some(seen) if seen.payload == named => {}
                    Some(seen) => self.violations.push(format!(
                        "client {c}: refused naming {} with {named:?}, which was created with {:?}",
                        existing.run, seen.payload
                    )),
                    None => self.violations.push(format!(
                        "client {c}: refused naming {}, which no record holds",
                        existing.run
                    )),
                }
            }
            Err(RunError::Refused(other)) => self.violations.push(format!(
                "client {c}: an enqueue of order-{k} refused: {other:?}"
            )),
            Err(RunError::Coord(_)) => report.failed_enqueues += 1,
        }
    }

    /// The writes and deletes the store applied, in its order.
    fn writes(&mut self, applied: &[Applied], deleted: &[(usize, String)]) {
        let mut deletes = deleted.iter().peekable();
        for (i, w) in applied.iter().enumerate() {
            while let Some((_, name)) = deletes.next_if(|(n, _)| *n <= i) {
                self.fences.remove(name);
            }
            if let Some(before) = self.fences.insert(w.job.clone(), w.fence) {
                if w.fence < before {
                    self.violations.push(format!(
                        "{}: a write with fence {} after fence {before}",
                        w.job, w.fence
                    ));
                }
            }
        }
        for (_, name) in deletes {
            self.fences.remove(name);
        }
    }

    fn effect(&mut self, e: &EffectRan, report: &mut RunSimReport) {
        report.effects += 1;
        if e.recorded_done {
            self.violations.push(format!(
                "{}: its effect ran at {} again after the ledger recorded it done",
                e.run, e.at
            ));
        }
        let times = self.effect_times.entry(e.run.clone()).or_default();
        if !times.is_empty() {
            report.effects_repeated_unrecorded += 1;
        }
        times.push(e.at);
        let Some(k) = e
            .key
            .strip_prefix("order-")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|k| *k < KEYS)
        else {
            self.violations
                .push(format!("{}: an effect of an unknown key", e.run));
            return;
        };
        // No key's effect for two runs within a retention: the run before
        // ended after its effect, and the next was enqueued a retention
        // after that.
        let effects = &mut self.key_effects[k];
        if let Some((at, run)) = effects.last() {
            if *run != e.run && e.at < plus(*at, self.retention) {
                self.violations.push(format!(
                    "{}: the effects of {run} at {at} and of {} at {} are within a retention",
                    e.key, e.run, e.at
                ));
            }
            if *run != e.run && effects.iter().any(|(_, r)| *r == e.run) {
                self.violations.push(format!(
                    "{}: {} effected again after the later run {run}",
                    e.key, e.run
                ));
            }
        }
        effects.push((e.at, e.run.clone()));
    }

    /// After the quiet period: every run that exists or was accepted has
    /// ended, a succeeded one with its effect; nothing holds a lease or
    /// waits.
    fn end(&mut self, records: &[Option<JobState>], report: &mut RunSimReport) {
        for (run, k) in &self.accepted {
            if !self.runs.contains_key(run) {
                self.violations.push(format!(
                    "{run}: accepted for order-{k}, never seen in the store"
                ));
            }
        }
        for (run, seen) in &self.runs {
            match seen.status {
                RunStatus::Succeeded => {
                    report.succeeded += 1;
                    if !self.effect_times.contains_key(run) {
                        self.violations
                            .push(format!("{run}: succeeded, its effect never ran"));
                    }
                }
                RunStatus::Dead => report.dead += 1,
                other => self.violations.push(format!(
                    "{run} (order-{}): still {other:?} after the quiet period",
                    seen.key
                )),
            }
        }
        for state in records.iter().flatten() {
            if !state.leases.is_empty() || !state.pending.is_empty() {
                self.violations.push(format!(
                    "{}: still {} leases and {} waiting runs after the quiet period",
                    state.job,
                    state.leases.len(),
                    state.pending.len()
                ));
            }
        }
    }
}

/// Runs one seed on the memory store.
pub fn run_runs_sim_memory(cfg: &RunSimConfig) -> RunSimReport {
    run_runs_sim(cronslot_core::coord::MemoryStore::new(), cfg)
}

/// Runs one seed on `store` (empty) and returns what happened; the
/// violations found are in the report.
pub fn run_runs_sim<S>(store: S, cfg: &RunSimConfig) -> RunSimReport
where
    S: StateStore + EffectLedger + TickIndex + Clone + 'static,
{
    let mut rng = SplitMix64::new(cfg.seed);
    let template = Rc::new(template());
    let retention = SignedDuration::try_from(template.key_retention).unwrap();
    let clock = Rc::new(Cell::new(t0()));
    let raw = store.clone();
    let ledger = store.clone();
    let sh = Rc::new(Shared {
        clock: Rc::clone(&clock),
        rng: RefCell::new(SplitMix64::new(rng.next_u64())),
        calm: Cell::new(false),
        crash: RefCell::new(BTreeSet::new()),
        effects: RefCell::new(Vec::new()),
        ledger_done: Box::new(move |key| {
            matches!(
                block_on(ledger.read_effect(key)),
                Ok(Some(r)) if matches!(r.state, EffectState::Done { .. })
            )
        }),
        crashes_before_run: Cell::new(0),
        crashes_after_effect: Cell::new(0),
    });
    SIM.with(|s| *s.borrow_mut() = Some(Rc::clone(&sh)));
    let faults = Rc::new(RefCell::new(FaultPlan::new(
        rng.next_u64(),
        cfg.store_unavailable_ppm,
        cfg.store_ambiguous_ppm,
    )));
    faults.borrow_mut().applied = Some(Vec::new());
    let fstore = FaultStore {
        inner: store,
        plan: Rc::clone(&faults),
    };
    let platform: Rc<dyn Platform> = Rc::new(SimClock(Rc::clone(&clock)));
    let plan =
        Rc::new(TickPlan::new(Vec::new(), |_| true).with_templates(vec![Rc::clone(&template)]));
    let jobs = Rc::new(Jobs::new().register("runs", keyed_job));
    let keys: Vec<ScheduleKey> = (0..KEYS)
        .map(|k| ScheduleKey::new(format!("order-{k}")).unwrap())
        .collect();
    let answers: Rc<RefCell<Vec<Answer>>> = Rc::default();
    let mut clients: Vec<Client<S>> = (0..CLIENTS)
        .map(|_| Client {
            coord: Rc::new(CasCoordinator::new(fstore.clone(), rng.next_u64())),
            task: None,
        })
        .collect();
    let mut workers: Vec<Worker<S>> = (0..WORKERS)
        .map(|i| Worker {
            coord: Rc::new(CasCoordinator::new(fstore.clone(), rng.next_u64())),
            owner: format!("w{i}-0"),
            incarnation: 0,
            task: None,
        })
        .collect();
    let operator = CasCoordinator::new(fstore.clone(), rng.next_u64());
    let mut checker = Checker::new(retention);
    let mut report = RunSimReport {
        seed: cfg.seed,
        ..RunSimReport::default()
    };
    let mut trace = Trace(0xcbf2_9ce4_8422_2325);
    let mut cx = Context::from_waker(Waker::noop());
    let names: Vec<String> = keys
        .iter()
        .map(|k| format!("{}/{}", template.name.as_str(), k.as_str()))
        .collect();

    let mut period = 0;
    let mut period_end = plus(t0(), SignedDuration::from_mins(cfg.period_minutes));
    let quiet_steps = 240;
    let mut quiet = 0;
    loop {
        report.steps += 1;
        let calm = period >= cfg.periods;
        if calm {
            quiet += 1;
            if quiet > quiet_steps {
                break;
            }
            clock.set(plus(clock.get(), secs(15)));
        } else {
            clock.set(plus(clock.get(), secs(range(&mut rng, 1, 20))));
            if clock.get() >= period_end {
                period += 1;
                if period >= cfg.periods {
                    // The quiet period: the store heals, the clients and
                    // the crashes stop, the workers keep ticking.
                    sh.calm.set(true);
                    faults.borrow_mut().enabled = false;
                    trace.add("quiet;");
                } else {
                    // A jump about a key retention: mostly past it (the
                    // keys that ended are forgotten), sometimes just short
                    // of it (they are not).
                    let jump = if chance(&mut rng, 250_000) {
                        retention - secs(range(&mut rng, 60, 86_400))
                    } else {
                        retention + secs(range(&mut rng, 0, 3 * 86_400))
                    };
                    clock.set(plus(clock.get(), jump));
                    period_end = plus(clock.get(), SignedDuration::from_mins(cfg.period_minutes));
                    trace.add(&format!("J{};", jump.as_secs()));
                }
            }
        }
        let calm = period >= cfg.periods;
        let now = clock.get();
        // Clients enqueue: a small pool of keys, so the same key is
        // enqueued at once and again; mostly with its usual payload.
        for (c, client) in clients.iter_mut().enumerate() {
            if calm || client.task.is_some() || !chance(&mut rng, 350_000) {
                continue;
            }
            let k = (rng.next_u64() % KEYS as u64) as usize;
            let sent = payload(k, chance(&mut rng, 120_000));
            trace.add(&format!("e{c}:{k}:{sent};"));
            let request = RunRequest::from_json(&format!(r#"{{"payload":{sent}}}"#)).unwrap();
            let (coord, template, key, answers) = (
                Rc::clone(&client.coord),
                Rc::clone(&template),
                keys[k].clone(),
                Rc::clone(&answers),
            );
            client.task = Some(Box::pin(async move {
                let result = coord.enqueue_run(&template, &key, &request, now).await;
                answers.borrow_mut().push((c, k, sent, result));
            }));
        }
        // Workers tick.
        for w in &mut workers {
            if w.task.is_none() && (calm || chance(&mut rng, 400_000)) {
                w.task = Some(tick_task(
                    Rc::clone(&plan),
                    Rc::clone(&w.coord),
                    fstore.clone(),
                    Rc::clone(&jobs),
                    Rc::clone(&platform),
                    w.owner.clone(),
                ));
            }
        }
        // Everyone moves on a few await points, in an order of the seed's;
        // a worker may crash at any of them, or where its run asked to.
        let n = CLIENTS + WORKERS;
        let first = (rng.next_u64() % n as u64) as usize;
        for turn in 0..n {
            let who = (first + turn) % n;
            let polls = if calm { 8 } else { range(&mut rng, 1, 4) };
            for _ in 0..polls {
                if who < CLIENTS {
                    let client = &mut clients[who];
                    let Some(task) = client.task.as_mut() else {
                        break;
                    };
                    if !calm && chance(&mut rng, cfg.client_drop_per_poll_ppm) {
                        client.task = None;
                        report.unanswered += 1;
                        trace.add(&format!("d{who};"));
                        break;
                    }
                    if task.as_mut().poll(&mut cx).is_ready() {
                        client.task = None;
                    }
                } else {
                    let i = who - CLIENTS;
                    let w = &mut workers[i];
                    let Some(task) = w.task.as_mut() else {
                        break;
                    };
                    let random = !calm && chance(&mut rng, cfg.crash_per_poll_ppm);
                    if !random && task.as_mut().poll(&mut cx).is_ready() {
                        w.task = None;
                    }
                    let asked = sh.crash.borrow_mut().remove(&w.owner);
                    if random || asked {
                        // The process dies here; a new one (new cache, new
                        // owner) takes its place.
                        w.task = None;
                        w.incarnation += 1;
                        w.owner = format!("w{i}-{}", w.incarnation);
                        w.coord = Rc::new(CasCoordinator::new(fstore.clone(), rng.next_u64()));
                        report.crashes_at_polls += u64::from(random);
                        trace.add(&format!("c{i}:{asked};"));
                        break;
                    }
                }
            }
        }
        // The operator redrives a dead run now and then (within its
        // retention, as one would from the list of dead runs).
        if !calm && chance(&mut rng, 40_000) {
            let k = (rng.next_u64() % KEYS as u64) as usize;
            let record = block_on(raw.get(&names[k])).unwrap().map(|v| v.value);
            let dead = record.as_ref().and_then(|state| {
                let view = decide::run_view(state).ok()?;
                let remembered = decide::forget_at(state).is_none_or(|t| t > now);
                let spec = state
                    .schedule
                    .as_ref()?
                    .job_spec(&template, &keys[k])
                    .ok()??;
                (view.status == RunStatus::Dead && remembered).then_some((view, spec))
            });
            if let Some((view, spec)) = dead {
                report.redrives += 1;
                let redriven = block_on(operator.redrive(&spec, Some(view.at), now));
                report.redrives_ok += u64::from(redriven.is_ok());
                trace.add(&format!("r{}:{};", view.run, redriven.is_ok()));
            }
        }
        // The checks of the step: the records a write or a delete may have
        // changed (the others are as the last step saw them), then the
        // answers, the writes and the effects.
        let (applied, deleted, dirty) = {
            let mut f = faults.borrow_mut();
            (
                f.applied.as_mut().map(std::mem::take).unwrap_or_default(),
                std::mem::take(&mut f.deleted),
                std::mem::take(&mut f.dirty),
            )
        };
        for (k, name) in names.iter().enumerate() {
            if !dirty.contains(name) && !deleted.iter().any(|(_, d)| d == name) {
                continue;
            }
            let record = block_on(raw.get(name)).unwrap().map(|v| v.value);
            checker.observe(
                k,
                record.as_ref(),
                now,
                &*sh.ledger_done,
                &mut report,
                &mut trace,
            );
        }
        for name in std::mem::take(&mut faults.borrow_mut().ambiguous_unapplied) {
            *checker.unresolvable.entry(name).or_default() += 1;
        }
        for answer in answers.borrow_mut().drain(..) {
            trace.add(&format!("a{}:{}:{:?};", answer.0, answer.1, answer.3));
            checker.answer(&answer, &mut report);
        }
        checker.writes(&applied, &deleted);
        for e in sh.effects.borrow_mut().drain(..) {
            trace.add(&format!("x{}@{};", e.run, e.at));
            checker.effect(&e, &mut report);
        }
        if !checker.violations.is_empty() {
            for v in &mut checker.violations {
                *v = format!("step {} at {now}: {v}", report.steps);
            }
            break;
        }
    }
    if checker.violations.is_empty() {
        let records: Vec<Option<JobState>> = names
            .iter()
            .map(|name| block_on(raw.get(name)).unwrap().map(|v| v.value))
            .collect();
        checker.end(&records, &mut report);
    }
    SIM.with(|s| *s.borrow_mut() = None);
    report.crashes_before_run = sh.crashes_before_run.get();
    report.crashes_after_effect = sh.crashes_after_effect.get();
    report.store = faults.borrow().counts.clone();
    report.violations = std::mem::take(&mut checker.violations);
    report.trace = trace.0;
    report
}
