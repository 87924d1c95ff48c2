//! Deterministic simulation of cronslot (issue 7): many virtual workers,
//! each with its own [`CasCoordinator`] over one shared store, a virtual
//! clock, and one seeded random source for every choice, so that a seed
//! replays exactly.
//!
//! Faults: workers crash at any await point (their run's future is dropped
//! between two polls), pause for longer than their lease, and see clocks
//! skewed within the job's skew margin; the platform delivers `Tick`,
//! `Slot(t)` and `Manual` triggers late, twice or three times, out of
//! order, and not at all during outages; the store fails operations without
//! effect and applies writes whose response is lost ([`faults`]).
//!
//! An operator pauses jobs (and resumes them later), backfills past ranges,
//! redrives dead letters (one slot or all) through the coordinator's API (as
//! `cronslot pause|resume|backfill|redrive` and the admin routes do), and
//! deploys schedule changes ([`SCHEDULES`]: a new
//! spec hash; runs already started keep the spec they started with).
//!
//! Each claimed slot runs through the runtime's run loop
//! ([`cronslot_runtime::run_lease`], the one every platform runs) with a
//! registered job function and a [`Platform`] on the virtual clock: the
//! run's time limit, heartbeats, panics policy and recording of outcomes
//! are the product's, not the simulation's. Half the jobs may run past
//! their lease (their function's time limit is twice it, so the run loop
//! heartbeats); the others are cut at their lease.
//!
//! After every step the records, and every write the store applied, are
//! checked against [`model`], which does not use `coord::decide`.
//! [`stores`] runs the simulation on any store with the checks every store
//! gets.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod faults;
pub mod model;
pub mod runs;
pub mod schedules;
pub mod stores;
pub mod ticks;

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, EffectError, EffectLedger, EffectState, Idle, RandomSource,
    SplitMix64, StateStore, Trigger,
};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runtime::{
    JobError, JobResult, Jobs, LocalFuture, Outcome, Platform, RunContext, RunEvent, run_lease,
};
use jiff::{SignedDuration, Timestamp};

pub use faults::{Applied, FaultCounts, FaultPlan, FaultStore};
pub use model::{Event, JobModel, Sched};

/// The simulated jobs: one of each shape. Schedules are `*/N` minutes in UTC
/// so that the model can count slots by arithmetic.
pub const MANIFEST: &str = r#"
[defaults]
lease = "2m"
starting_deadline = "3m"
skew_margin = "5s"
history = { succeeded = 10, failed = 10 }
retry = { max_attempts = 3, backoff = "5s", max_backoff = "20s" }

[[job]]
name = "forbid-latest"
schedule = "* * * * *"
overlap = "forbid"
catch_up = "latest"

[[job]]
name = "allow-all"
schedule = "*/2 * * * *"
overlap = "allow"
max_concurrency = 2
catch_up = "all"
max_catch_up = 3
lease = "5m"
starting_deadline = "10m"

[[job]]
name = "replace-none"
schedule = "* * * * *"
overlap = "replace"
catch_up = "none"

[[job]]
name = "at-most-once"
schedule = "*/5 * * * *"
delivery = "at_most_once"

[[job]]
name = "forbid-all-retries"
schedule = "*/2 * * * *"
catch_up = "all"
max_catch_up = 5
starting_deadline = "20m"
retry = { max_attempts = 5, backoff = "2s", max_backoff = "10s" }
"#;

/// Periods (minutes) of [`MANIFEST`]'s jobs, in order.
pub const PERIODS: &[i64] = &[1, 2, 1, 5, 2];

/// The schedules each job of [`MANIFEST`] can be changed to mid-run, the
/// first being the manifest's: (cron, period, offset), minutes in UTC.
/// Some share slots with each other (`*/2`, `*/3`), some share none
/// (`*/2`, `1-59/2`), so a slot of the old schedule claimed after a change
/// is visible.
pub const SCHEDULES: &[&[(&str, i64, i64)]] = &[
    &[
        ("* * * * *", 1, 0),
        ("*/3 * * * *", 3, 0),
        ("1-59/2 * * * *", 2, 1),
    ],
    &[("*/2 * * * *", 2, 0), ("1-59/2 * * * *", 2, 1)],
    &[("* * * * *", 1, 0), ("*/2 * * * *", 2, 0)],
    &[
        ("*/5 * * * *", 5, 0),
        ("2-59/5 * * * *", 5, 2),
        ("*/3 * * * *", 3, 0),
    ],
    &[
        ("*/2 * * * *", 2, 0),
        ("*/3 * * * *", 3, 0),
        ("1-59/2 * * * *", 2, 1),
    ],
];

/// Every job of [`MANIFEST`] under each of its [`SCHEDULES`], with the
/// model's view of that schedule.
pub fn spec_variants() -> Vec<Vec<(Rc<JobSpec>, Sched)>> {
    let base = specs();
    base.iter()
        .enumerate()
        .map(|(j, spec)| {
            let name = spec.name.as_str();
            let line = |cron: &str| format!("name = \"{name}\"\nschedule = \"{cron}\"");
            SCHEDULES[j]
                .iter()
                .map(|&(cron, period, offset)| {
                    let text = MANIFEST.replace(&line(SCHEDULES[j][0].0), &line(cron));
                    let spec = parse_manifest(&text, "sim.toml")
                        .unwrap_or_else(|e| panic!("simulation manifest ({cron}):\n{e}"))
                        .jobs
                        .swap_remove(j);
                    assert_eq!(spec.schedule_text, cron, "variant of {name}");
                    (Rc::new(spec), Sched::every(period, offset))
                })
                .collect()
        })
        .collect()
}

/// The jobs of [`MANIFEST`].
pub fn specs() -> Vec<JobSpec> {
    parse_manifest(MANIFEST, "sim.toml")
        .unwrap_or_else(|e| panic!("simulation manifest:\n{e}"))
        .jobs
}

/// The simulation's time zero: a Monday, 00:00:30 UTC.
pub fn t0() -> Timestamp {
    "2026-01-05T00:00:30Z".parse().unwrap()
}

/// How much to simulate and how hard.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    /// Stop once this many virtual slots (all jobs) have come due.
    pub slots: u64,
    pub workers: usize,
    /// Chances, in parts per million.
    pub crash_per_poll_ppm: u64,
    pub pause_per_step_ppm: u64,
    pub store_unavailable_ppm: u64,
    pub store_ambiguous_ppm: u64,
    /// Per step: an operator pauses a job (resumed 2–40 minutes later),
    /// backfills a past range, redrives a job's dead letters, a new
    /// schedule is deployed.
    pub job_pause_per_step_ppm: u64,
    pub backfill_per_step_ppm: u64,
    pub redrive_per_step_ppm: u64,
    pub schedule_change_per_step_ppm: u64,
}

impl SimConfig {
    pub fn new(seed: u64, slots: u64) -> SimConfig {
        SimConfig {
            seed,
            slots,
            workers: 8,
            crash_per_poll_ppm: 8_000,
            pause_per_step_ppm: 2_000,
            store_unavailable_ppm: 15_000,
            store_ambiguous_ppm: 10_000,
            job_pause_per_step_ppm: 1_500,
            backfill_per_step_ppm: 2_000,
            redrive_per_step_ppm: 1_500,
            schedule_change_per_step_ppm: 1_000,
        }
    }
}

/// What a run did: counts of everything injected and observed.
#[derive(Debug, Clone, Default)]
pub struct SimReport {
    pub seed: u64,
    /// Virtual slots that came due (all jobs), and that were given a fate.
    pub slots: u64,
    pub fated_slots: u64,
    pub steps: u64,
    pub virtual_secs: i64,
    pub claims: u64,
    pub succeeded: u64,
    pub dead: u64,
    pub idle_claims: u64,
    pub claim_errors: u64,
    pub late_claims: u64,
    pub crashes: u64,
    pub pauses: u64,
    pub deliveries: u64,
    pub duplicate_deliveries: u64,
    pub late_deliveries: u64,
    pub slot_triggers: u64,
    pub tick_triggers: u64,
    pub manual_triggers: u64,
    pub dropped_deliveries: u64,
    pub outages: u64,
    pub store: FaultCounts,
    pub effects_run: u64,
    /// Effects that ran again because the earlier run's record of it was
    /// lost (the crash between an effect and its record; allowed).
    pub effects_repeated_unrecorded: u64,
    /// Operator's pauses and resumes asked, and applied (seen in the
    /// store's writes); claims answered "paused"; slots skipped as paused.
    pub job_pauses: u64,
    pub job_pauses_applied: u64,
    pub job_resumes_applied: u64,
    pub paused_idle: u64,
    pub skipped_paused: u64,
    /// Backfills asked and answered, slots they queued (each a new life of
    /// a past slot) and how those lives ended.
    pub backfills: u64,
    pub backfills_ok: u64,
    pub backfilled_slots: u64,
    pub backfill_succeeded: u64,
    pub backfill_dead: u64,
    pub backfill_superseded: u64,
    /// Redrives asked (of one dead slot or of all) and answered, slots they
    /// sent back (each a new life) and how those lives ended.
    pub redrives: u64,
    pub redrives_ok: u64,
    pub redriven_slots: u64,
    pub redrive_succeeded: u64,
    pub redrive_dead: u64,
    pub redrive_superseded: u64,
    /// Schedules deployed, and spec hash changes the records went through
    /// (a run that started before a deploy writes the older hash back).
    pub schedule_changes: u64,
    pub spec_changes_applied: u64,
    /// Operator calls that failed transiently (retried), operator crashes.
    pub operator_errors: u64,
    pub operator_crashes: u64,
    /// Writes the store applied, each checked against the one before.
    pub writes_checked: u64,
    pub violations: Vec<String>,
    pub trace_hash: u64,
}

impl SimReport {
    /// One line: what ran, what was injected, what was checked.
    pub fn summary(&self, store: &str, secs: f64) -> String {
        format!(
            "sim {store} seed {}: {} slots ({} fated), {} steps, {} virtual days, {} claims, \
             {} succeeded, {} dead, {} late claims, {} crashes, {} pauses, {} deliveries \
             ({} duplicate, {} late, {} dropped; {} tick, {} slot, {} manual), {} outages, \
             store ops {} ({} unavailable, {} ambiguous), effects {} ({} repeated unrecorded), \
             job pauses {} ({} applied, {} resumes applied, {} claims answered paused, {} slots skipped), \
             backfills {} ({} answered, {} slots queued: {} succeeded, {} dead, {} superseded), \
             redrives {} ({} answered, {} slots sent back: {} succeeded, {} dead, {} superseded), \
             schedule changes {} ({} spec hash changes stored), operator {} transient errors, \
             {} crashes, {} writes checked, {} violations, trace {:016x}, {secs:.1}s",
            self.seed,
            self.slots,
            self.fated_slots,
            self.steps,
            self.virtual_secs / 86_400,
            self.claims,
            self.succeeded,
            self.dead,
            self.late_claims,
            self.crashes,
            self.pauses,
            self.deliveries,
            self.duplicate_deliveries,
            self.late_deliveries,
            self.dropped_deliveries,
            self.tick_triggers,
            self.slot_triggers,
            self.manual_triggers,
            self.outages,
            self.store.operations,
            self.store.unavailable,
            self.store.ambiguous,
            self.effects_run,
            self.effects_repeated_unrecorded,
            self.job_pauses,
            self.job_pauses_applied,
            self.job_resumes_applied,
            self.paused_idle,
            self.skipped_paused,
            self.backfills,
            self.backfills_ok,
            self.backfilled_slots,
            self.backfill_succeeded,
            self.backfill_dead,
            self.backfill_superseded,
            self.redrives,
            self.redrives_ok,
            self.redriven_slots,
            self.redrive_succeeded,
            self.redrive_dead,
            self.redrive_superseded,
            self.schedule_changes,
            self.spec_changes_applied,
            self.operator_errors,
            self.operator_crashes,
            self.writes_checked,
            self.violations.len(),
            self.trace_hash,
        )
    }
}

/// A queued trigger: (due, sequence, job, kind 0 tick / 1 slot / 2 manual,
/// slot in Unix seconds), earliest first.
type Delivery = Reverse<(Timestamp, u64, usize, u8, i64)>;

/// FNV-1a over the trace.
pub(crate) struct Trace(pub(crate) u64);

impl Trace {
    pub(crate) fn add(&mut self, s: &str) {
        for b in s.bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
}

/// Shared by every worker of one simulation.
struct Shared {
    clock: Cell<Timestamp>,
    /// Each job's spec as deployed now.
    specs: RefCell<Vec<Rc<JobSpec>>>,
    /// When the operator is to resume a job it paused.
    resume_due: RefCell<Vec<Option<Timestamp>>>,
    /// Operator calls the coordinator refused for good (none should be).
    op_refusals: RefCell<Vec<String>>,
    events: RefCell<Vec<Event>>,
    effects: RefCell<BTreeMap<String, u32>>,
    /// Reads the ledger without faults: is this effect recorded as done?
    ledger_done: Box<dyn Fn(&str) -> bool>,
    report: RefCell<SimReport>,
    /// How the run each owner is running behaves.
    plans: RefCell<BTreeMap<String, RunPlan>>,
    /// The simulated jobs' function, registered for every job.
    jobs: Jobs,
}

thread_local! {
    /// The simulation running on this thread. Job functions are `Send +
    /// Sync` (the local runner shares its registry between threads), so
    /// the simulated job reaches the simulation's state through here
    /// instead of capturing it.
    static SIM: RefCell<Option<Rc<Shared>>> = const { RefCell::new(None) };
}

/// The job every simulated job runs: its effect (if planned), then its
/// work in virtual time, then the planned outcome.
async fn simulated_job(ctx: RunContext) -> JobResult {
    let Some(sh) = SIM.with(|s| s.borrow().clone()) else {
        return Err(JobError::permanent("no simulation on this thread"));
    };
    let Some(plan) = sh.plans.borrow().get(ctx.owner()).copied() else {
        return Err(JobError::permanent("no plan for this run"));
    };
    let mut outcome = plan.outcome;
    if plan.effect {
        let key = format!("{}/send", ctx.idempotency_key());
        let ran = ctx
            .effect("send", || async {
                let recorded_done = (sh.ledger_done)(&key);
                *sh.effects.borrow_mut().entry(key.clone()).or_default() += 1;
                sh.events.borrow_mut().push(Event::EffectRan {
                    key: key.clone(),
                    recorded_done,
                });
                Ok::<_, String>("sent".to_string())
            })
            .await;
        match ran {
            Ok(_) => {}
            Err(e @ EffectError::Superseded { .. }) => return Err(e.into()),
            Err(_) => outcome = 1,
        }
    }
    ctx.sleep(Duration::try_from(plan.work).unwrap_or(Duration::ZERO))
        .await;
    match outcome {
        0 => Ok(()),
        1 => Err(JobError::transient("simulated failure")),
        _ => Err(JobError::permanent("simulated failure")),
    }
}

/// The simulation as a runtime platform: the virtual clock as one process
/// sees it (skewed), sleeps that end when the simulation's clock passes
/// them, and heartbeats reported to the model.
struct SimPlatform {
    sh: Rc<Shared>,
    skew: SignedDuration,
    job: usize,
}

impl Platform for SimPlatform {
    fn name(&self) -> &'static str {
        "the simulation"
    }

    fn now(&self) -> Timestamp {
        plus(self.sh.clock.get(), self.skew)
    }

    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()> {
        let sh = self.sh.clone();
        SleepUntil::after(Box::new(move || sh.clock.get()), duration)
    }

    fn observe(&self, event: &RunEvent<'_>) {
        if let RunEvent::Heartbeat {
            fence, expires_at, ..
        } = *event
        {
            self.sh.events.borrow_mut().push(Event::Heartbeat {
                job: self.job,
                fence,
                expires_at,
            });
        }
    }
}

/// One process: a coordinator (with its cache), an owner id, a skewed clock.
struct Proc<S> {
    coord: Rc<CasCoordinator<FaultStore<S>>>,
    owner: String,
    skew: SignedDuration,
}

struct Worker<S> {
    proc: Rc<Proc<S>>,
    run: Option<Pin<Box<dyn Future<Output = ()>>>>,
    paused_until: Timestamp,
    incarnation: u32,
}

/// How one run behaves, drawn before it starts.
#[derive(Debug, Clone, Copy)]
struct RunPlan {
    work: SignedDuration,
    effect: bool,
    /// 0 success, 1 transient failure, 2 permanent failure.
    outcome: u8,
}

/// Pending until the virtual clock reaches `until`.
pub(crate) struct SleepUntil {
    pub(crate) clock: Box<dyn Fn() -> Timestamp>,
    pub(crate) until: Timestamp,
}

impl SleepUntil {
    /// A sleep of `duration` on the simulation's clock (read by `clock`),
    /// from its reading now: it ends once the clock has passed it.
    pub(crate) fn after(
        clock: Box<dyn Fn() -> Timestamp>,
        duration: Duration,
    ) -> LocalFuture<'static, ()> {
        let until = plus(
            clock(),
            SignedDuration::try_from(duration).unwrap_or(SignedDuration::MAX),
        );
        Box::pin(SleepUntil { clock, until })
    }
}

impl Future for SleepUntil {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if (self.clock)() >= self.until {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

pub(crate) fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

pub(crate) fn plus(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

pub(crate) fn chance(rng: &mut SplitMix64, ppm: u64) -> bool {
    rng.next_u64() % 1_000_000 < ppm
}

pub(crate) fn range(rng: &mut SplitMix64, lo: i64, hi: i64) -> i64 {
    lo + (rng.next_u64() % u64::try_from(hi - lo + 1).unwrap_or(1)) as i64
}

/// What the operator does.
#[derive(Debug, Clone, Copy)]
enum OpAction {
    Pause(usize),
    Resume(usize),
    Backfill(usize, Timestamp, Timestamp),
    /// One dead slot, or every dead letter (`None`).
    Redrive(usize, Option<Timestamp>),
}

/// One operator command (as `cronslot pause|resume|backfill|redrive` runs it),
/// retried on transient errors like a person at a shell would.
async fn run_op<S: StateStore + EffectLedger + 'static>(
    coord: Rc<CasCoordinator<FaultStore<S>>>,
    sh: Rc<Shared>,
    action: OpAction,
    spec: Rc<JobSpec>,
) {
    for _ in 0..4 {
        let now = sh.clock.get();
        let r = match action {
            OpAction::Pause(_) => coord.pause(&spec, now).await.map(|()| 0),
            OpAction::Resume(_) => coord.resume(&spec, now).await.map(|()| 0),
            OpAction::Backfill(_, from, to) => coord
                .backfill(&spec, from, to, now, false)
                .await
                .map(|s| s.len()),
            OpAction::Redrive(_, slot) => coord.redrive(&spec, slot, now).await.map(|s| s.len()),
        };
        match r {
            Ok(_) => {
                match action {
                    OpAction::Resume(j) => sh.resume_due.borrow_mut()[j] = None,
                    OpAction::Backfill(..) => sh.report.borrow_mut().backfills_ok += 1,
                    OpAction::Redrive(..) => sh.report.borrow_mut().redrives_ok += 1,
                    OpAction::Pause(_) => {}
                }
                return;
            }
            Err(e) if e.is_transient() => sh.report.borrow_mut().operator_errors += 1,
            Err(e) => {
                sh.op_refusals
                    .borrow_mut()
                    .push(format!("operator's {action:?} refused: {e}"));
                return;
            }
        }
    }
}

async fn run_one<S: StateStore + EffectLedger + 'static>(
    p: Rc<Proc<S>>,
    sh: Rc<Shared>,
    job: usize,
    trigger: Trigger,
    plan: RunPlan,
    spec: Rc<JobSpec>,
    sched: Sched,
) {
    let now = plus(sh.clock.get(), p.skew);
    let lease = match p.coord.claim(&spec, now, trigger, &p.owner).await {
        Ok(Claim::Claimed(l)) => l,
        Ok(Claim::Idle(idle)) => {
            let mut r = sh.report.borrow_mut();
            r.idle_claims += 1;
            r.paused_idle += u64::from(idle == Idle::Paused);
            return;
        }
        Err(_) => {
            sh.report.borrow_mut().claim_errors += 1;
            return;
        }
    };
    let effective_now = match trigger {
        Trigger::Slot(t) => now.max(t),
        _ => now,
    };
    sh.events.borrow_mut().push(Event::Claimed {
        job,
        lease: Box::new(lease.clone()),
        effective_now,
        sched,
    });
    let fence = lease.fence;
    sh.plans.borrow_mut().insert(p.owner.clone(), plan);
    let platform: Rc<dyn Platform> = Rc::new(SimPlatform {
        sh: sh.clone(),
        skew: p.skew,
        job,
    });
    let report = run_lease(&p.coord, &spec, lease, &sh.jobs, &platform).await;
    let event = match report.outcome {
        Outcome::Succeeded => Event::Completed { job, fence },
        Outcome::Retrying { .. } | Outcome::Dead => Event::Failed { job, fence },
        _ => return,
    };
    sh.events.borrow_mut().push(event);
}

/// The registry: every job runs [`simulated_job`]; on even-numbered jobs
/// its time limit is twice the lease (long runs keep their lease by the
/// run loop's heartbeats), on the others the lease (long runs are cut).
fn simulated_jobs(variants: &[Vec<(Rc<JobSpec>, Sched)>]) -> Jobs {
    variants
        .iter()
        .enumerate()
        .fold(Jobs::new(), |jobs, (j, vs)| {
            let spec = &vs[0].0;
            let name = spec.name.as_str();
            if j % 2 == 0 {
                jobs.register_with_timeout(name, spec.lease * 2, simulated_job)
            } else {
                jobs.register(name, simulated_job)
            }
        })
}

fn new_proc<S: Clone>(
    store: &FaultStore<S>,
    rng: &mut SplitMix64,
    index: usize,
    incarnation: u32,
) -> Rc<Proc<S>> {
    Rc::new(Proc {
        coord: Rc::new(CasCoordinator::new(store.clone(), rng.next_u64())),
        owner: format!("w{index}-{incarnation}"),
        skew: secs(range(rng, -2, 2)),
    })
}

/// Runs one simulation on `store` (empty) and returns what happened.
pub fn simulate<S>(store: S, cfg: &SimConfig) -> SimReport
where
    S: StateStore + EffectLedger + Clone + 'static,
{
    let mut rng = SplitMix64::new(cfg.seed);
    let variants = spec_variants();
    let mut models: Vec<JobModel> = variants
        .iter()
        .map(|vs| {
            let hashes = vs
                .iter()
                .map(|(spec, sched)| {
                    (
                        u64::from_str_radix(&spec.spec_hash(), 16).unwrap_or(u64::MAX),
                        *sched,
                    )
                })
                .collect();
            JobModel::new(&vs[0].0, hashes)
        })
        .collect();
    let names: Vec<String> = variants
        .iter()
        .map(|vs| vs[0].0.name.as_str().to_string())
        .collect();
    // The deployed schedule of each job (an index into its variants).
    let mut deployed = vec![0usize; variants.len()];
    let raw = store.clone();
    let ledger = store.clone();
    let sh = Rc::new(Shared {
        clock: Cell::new(t0()),
        specs: RefCell::new(variants.iter().map(|vs| vs[0].0.clone()).collect()),
        resume_due: RefCell::new(vec![None; variants.len()]),
        op_refusals: RefCell::new(Vec::new()),
        events: RefCell::new(Vec::new()),
        effects: RefCell::new(BTreeMap::new()),
        ledger_done: Box::new(move |key| {
            matches!(
                block_on(ledger.read_effect(key)),
                Ok(Some(r)) if matches!(r.state, EffectState::Done { .. })
            )
        }),
        report: RefCell::new(SimReport {
            seed: cfg.seed,
            ..SimReport::default()
        }),
        plans: RefCell::new(BTreeMap::new()),
        jobs: simulated_jobs(&variants),
    });
    SIM.with(|s| *s.borrow_mut() = Some(sh.clone()));
    let plan = Rc::new(RefCell::new(FaultPlan::new(
        rng.next_u64(),
        cfg.store_unavailable_ppm,
        cfg.store_ambiguous_ppm,
    )));
    let fstore = FaultStore {
        inner: store,
        plan: plan.clone(),
    };
    let mut violations: Vec<String> = Vec::new();
    // Every job is created at t0, so the model knows its first slot.
    let creator = CasCoordinator::new(raw.clone(), 0);
    for (j, m) in models.iter_mut().enumerate() {
        let spec = sh.specs.borrow()[j].clone();
        let _ = block_on(creator.claim(&spec, t0(), Trigger::Tick, "creator"));
        match block_on(raw.get(&names[j])) {
            Ok(Some(v)) => m.start(&v.value, Applied::of(&names[j], &v.value), &mut violations),
            other => violations.push(format!("{}: not created: {other:?}", names[j])),
        }
    }
    // From here on, every write the store applies is checked.
    plan.borrow_mut().applied = Some(Vec::new());
    let mut workers: Vec<Worker<S>> = (0..cfg.workers)
        .map(|i| Worker {
            proc: new_proc(&fstore, &mut rng, i, 0),
            run: None,
            paused_until: t0(),
            incarnation: 0,
        })
        .collect();
    // The operator: one command at a time, through its own coordinator.
    let mut op_coord = Rc::new(CasCoordinator::new(fstore.clone(), rng.next_u64()));
    let mut op_run: Option<Pin<Box<dyn Future<Output = ()>>>> = None;
    let mut trace = Trace(0xcbf2_9ce4_8422_2325);
    let mut queue: BinaryHeap<Delivery> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut outage_until = t0();
    let mut prev = t0();
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    // Slots that came due on the deployed schedules.
    let mut due_total = 0u64;
    let mut draining_since: Option<Timestamp> = None;
    let drain = secs(20 * 60);
    // Backfilled and redriven slots run at the pace of the job's triggers,
    // one per free claim (a redrive of a hundred dead letters of a busy
    // every-minute job takes hours): the drain waits for them as long as
    // they keep ending, and gives up when none has ended for this long
    // (then they are stuck, and the end check says so).
    let no_progress_max = secs(3 * 60 * 60);
    let mut extra_open = u64::MAX;
    let mut last_progress = t0();
    let mut step = 0u64;
    loop {
        step += 1;
        let dt = secs(range(&mut rng, 1, 20));
        let now = plus(prev, dt);
        sh.clock.set(now);
        if draining_since.is_none() && due_total >= cfg.slots {
            // Drain: no more faults, crashes, pauses or outages; the
            // platform keeps triggering until every slot settles, and the
            // operator resumes what it paused.
            draining_since = Some(now);
            plan.borrow_mut().enabled = false;
            outage_until = now;
            for r in sh.resume_due.borrow_mut().iter_mut().flatten() {
                *r = now;
            }
        }
        let calm = draining_since.is_some();
        if let Some(since) = draining_since {
            let open: u64 = models.iter().map(JobModel::extra_lives_open).sum();
            if open < extra_open {
                extra_open = open;
                last_progress = now;
            }
            let settled =
                op_run.is_none() && sh.resume_due.borrow().iter().all(Option::is_none) && open == 0;
            let drained = now >= plus(since, drain) && settled;
            if drained || now >= plus(last_progress.max(since), no_progress_max) {
                break;
            }
        }
        // A deploy: the job's next schedule, for the platform and for runs
        // starting from now on.
        if !calm && chance(&mut rng, cfg.schedule_change_per_step_ppm) {
            let j = (rng.next_u64() % variants.len() as u64) as usize;
            let k = (deployed[j] + 1 + (rng.next_u64() % (variants[j].len() as u64 - 1)) as usize)
                % variants[j].len();
            deployed[j] = k;
            sh.specs.borrow_mut()[j] = variants[j][k].0.clone();
            sh.report.borrow_mut().schedule_changes += 1;
            trace.add(&format!("S{j}:{k};"));
        }
        // The operator's next command.
        if op_run.is_none() {
            let due = sh
                .resume_due
                .borrow()
                .iter()
                .position(|r| r.is_some_and(|t| t <= now));
            let action = if let Some(j) = due {
                Some(OpAction::Resume(j))
            } else if calm {
                None
            } else if chance(&mut rng, cfg.job_pause_per_step_ppm) {
                let j = (rng.next_u64() % variants.len() as u64) as usize;
                if sh.resume_due.borrow()[j].is_none() {
                    // Resumed later whatever the answer: a pause whose
                    // answer was lost may have been applied.
                    sh.resume_due.borrow_mut()[j] =
                        Some(plus(now, secs(60 * range(&mut rng, 2, 40))));
                    sh.report.borrow_mut().job_pauses += 1;
                    Some(OpAction::Pause(j))
                } else {
                    None
                }
            } else if chance(&mut rng, cfg.backfill_per_step_ppm) {
                let j = (rng.next_u64() % variants.len() as u64) as usize;
                let sched = variants[j][deployed[j]].1;
                let to = now - secs(60 * range(&mut rng, 0, 120));
                let from = to - sched.period() * range(&mut rng, 0, 3) as i32;
                models[j].operator_sched = sched;
                sh.report.borrow_mut().backfills += 1;
                Some(OpAction::Backfill(j, from, to))
            } else if chance(&mut rng, cfg.redrive_per_step_ppm) {
                // As an operator would: one dead letter the last record
                // showed, or all of them.
                let j = (rng.next_u64() % variants.len() as u64) as usize;
                let dead = models[j].dead_letters();
                if dead.is_empty() {
                    None
                } else {
                    let one = rng.next_u64() % 2 == 0;
                    let slot = one.then(|| dead[(rng.next_u64() % dead.len() as u64) as usize]);
                    sh.report.borrow_mut().redrives += 1;
                    Some(OpAction::Redrive(j, slot))
                }
            } else {
                None
            };
            if let Some(action) = action {
                let j = match action {
                    OpAction::Pause(j)
                    | OpAction::Resume(j)
                    | OpAction::Backfill(j, ..)
                    | OpAction::Redrive(j, _) => j,
                };
                trace.add(&format!("O{action:?};"));
                let spec = sh.specs.borrow()[j].clone();
                op_run = Some(Box::pin(run_op(op_coord.clone(), sh.clone(), action, spec)));
            }
        }
        // The platform: deliveries for slots in (prev, now].
        if !calm && now >= outage_until && chance(&mut rng, 150) {
            outage_until = plus(now, secs(range(&mut rng, 3 * 60, 60 * 60)));
            sh.report.borrow_mut().outages += 1;
        }
        for (j, vs) in variants.iter().enumerate() {
            let sched = vs[deployed[j]].1;
            let n = sched.count(prev, now);
            due_total += n;
            if n == 0 || now < outage_until {
                continue;
            }
            let slot = sched.slot_at_or_before(now);
            let copies = if calm {
                1
            } else if chance(&mut rng, 250_000) {
                range(&mut rng, 2, 3)
            } else {
                1
            };
            for c in 0..copies {
                let late = !calm && chance(&mut rng, 150_000);
                let delay = if late {
                    range(&mut rng, 10, 240)
                } else {
                    range(&mut rng, 0, 3)
                };
                let kind = if !calm && chance(&mut rng, 2_000) {
                    2
                } else {
                    (rng.next_u64() % 2) as u8
                };
                let mut r = sh.report.borrow_mut();
                r.deliveries += 1;
                r.duplicate_deliveries += u64::from(c > 0);
                r.late_deliveries += u64::from(late);
                seq += 1;
                queue.push(Reverse((
                    plus(slot, secs(delay)),
                    seq,
                    j,
                    kind,
                    slot.as_second(),
                )));
            }
        }
        // Deliver what is due to idle workers.
        while let Some(Reverse((at, _, _, _, _))) = queue.peek() {
            if *at > now {
                break;
            }
            let Reverse((_, s, job, kind, slot)) = queue.pop().unwrap();
            let trigger = match kind {
                0 => Trigger::Tick,
                1 => Trigger::Slot(Timestamp::from_second(slot).unwrap()),
                _ => Trigger::Manual,
            };
            let start = (rng.next_u64() % workers.len() as u64) as usize;
            let free = (0..workers.len())
                .map(|k| (start + k) % workers.len())
                .find(|&w| workers[w].run.is_none() && workers[w].paused_until <= now);
            let Some(w) = free else {
                sh.report.borrow_mut().dropped_deliveries += 1;
                continue;
            };
            {
                let mut r = sh.report.borrow_mut();
                match trigger {
                    Trigger::Tick | Trigger::Planned(_) => r.tick_triggers += 1,
                    Trigger::Slot(_) => r.slot_triggers += 1,
                    Trigger::Manual => r.manual_triggers += 1,
                }
            }
            let spec = sh.specs.borrow()[job].clone();
            let lease_s = spec.lease.as_secs() as i64;
            let roll = rng.next_u64() % 100;
            let work = if calm || roll < 70 {
                range(&mut rng, 1, 30)
            } else if roll < 95 {
                range(&mut rng, 30, lease_s)
            } else {
                range(&mut rng, lease_s, lease_s * 3 / 2)
            };
            let o = rng.next_u64() % 100;
            let plan = RunPlan {
                work: secs(work),
                effect: rng.next_u64() % 4 != 0,
                outcome: if calm || o < 88 {
                    0
                } else if o < 98 {
                    1
                } else {
                    2
                },
            };
            trace.add(&format!("d{s}:{job}:{kind}:{slot}:{w};"));
            // The run keeps the spec it started with, across a deploy.
            workers[w].run = Some(Box::pin(run_one(
                workers[w].proc.clone(),
                sh.clone(),
                job,
                trigger,
                plan,
                spec,
                variants[job][deployed[job]].1,
            )));
        }
        // Poll the runs: each poll passes at most one await point.
        for (i, w) in workers.iter_mut().enumerate() {
            if w.paused_until > now {
                continue;
            }
            if !calm && w.run.is_some() && chance(&mut rng, cfg.pause_per_step_ppm) {
                let lease_s = 300;
                w.paused_until = plus(now, secs(range(&mut rng, lease_s, lease_s * 3)));
                sh.report.borrow_mut().pauses += 1;
                trace.add(&format!("p{i};"));
                continue;
            }
            let polls = range(&mut rng, 1, 4);
            for _ in 0..polls {
                let Some(run) = w.run.as_mut() else { break };
                if !calm && chance(&mut rng, cfg.crash_per_poll_ppm) {
                    // The process dies here: its future is dropped, and a
                    // new process (new cache, new owner, new skew) starts.
                    w.run = None;
                    w.incarnation += 1;
                    w.proc = new_proc(&fstore, &mut rng, i, w.incarnation);
                    sh.report.borrow_mut().crashes += 1;
                    trace.add(&format!("c{i};"));
                    break;
                }
                if run.as_mut().poll(&mut cx).is_ready() {
                    w.run = None;
                }
            }
        }
        // The operator's command runs like a worker's, and can be killed.
        for _ in 0..range(&mut rng, 1, 4) {
            let Some(run) = op_run.as_mut() else { break };
            if !calm && chance(&mut rng, cfg.crash_per_poll_ppm) {
                op_run = None;
                op_coord = Rc::new(CasCoordinator::new(fstore.clone(), rng.next_u64()));
                sh.report.borrow_mut().operator_crashes += 1;
                trace.add("cO;");
                break;
            }
            if run.as_mut().poll(&mut cx).is_ready() {
                op_run = None;
            }
        }
        // Check every write the store applied, in its order, then every
        // record (when something was written) and every event of the step.
        let applied = plan
            .borrow_mut()
            .applied
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        for w in &applied {
            match names.iter().position(|n| *n == w.job) {
                Some(j) => models[j].observe_write(w, &mut violations),
                None => violations.push(format!("a write to unknown job {}", w.job)),
            }
        }
        violations.append(&mut sh.op_refusals.borrow_mut());
        let dirty = std::mem::take(&mut plan.borrow_mut().dirty);
        for (j, m) in models.iter_mut().enumerate() {
            let job = names[j].as_str();
            if !dirty.contains(job) {
                continue;
            }
            match block_on(raw.get(job)) {
                Ok(Some(v)) => {
                    trace.add(&format!("v{j}:{}:{};", v.version, v.value.fence));
                    m.observe_record(&v.value, &mut violations);
                }
                Ok(None) => violations.push(format!("{job}: no record")),
                Err(e) => violations.push(format!("{job}: unreadable record: {e}")),
            }
        }
        for e in sh.events.borrow_mut().drain(..) {
            match &e {
                Event::Claimed { job, lease, .. } => {
                    trace.add(&format!("C{job}:{}:{};", lease.fence, lease.slot));
                    sh.report.borrow_mut().claims += 1;
                    models[*job].observe_event(&e, &mut violations);
                }
                Event::Completed { job, fence }
                | Event::Failed { job, fence }
                | Event::Heartbeat { job, fence, .. } => {
                    trace.add(&format!("E{job}:{fence};"));
                    models[*job].observe_event(&e, &mut violations);
                }
                Event::EffectRan { key, recorded_done } => {
                    trace.add(&format!("X{key};"));
                    let mut r = sh.report.borrow_mut();
                    r.effects_run += 1;
                    if *recorded_done {
                        violations.push(format!(
                            "effect {key} ran again after it was recorded as done"
                        ));
                    }
                }
            }
        }
        if !violations.is_empty() {
            for v in &mut violations {
                *v = format!("step {step} at {now}: {v}");
            }
            break;
        }
        prev = now;
    }
    // The end: every slot up to now − starting deadline has one fate.
    let end = sh.clock.get();
    let checker = CasCoordinator::new(raw.clone(), 1);
    let mut fated = 0;
    if violations.is_empty() {
        for (j, m) in models.iter_mut().enumerate() {
            let spec = sh.specs.borrow()[j].clone();
            let longest = SCHEDULES[j].iter().map(|s| s.1).max().unwrap_or(1);
            // A slot may wait up to its starting deadline (catch-up), then
            // run for a lease (plus the margin) and retry before the next
            // slot: past that, it is stuck.
            let stuck_after = SignedDuration::try_from(spec.starting_deadline).unwrap_or_default()
                + SignedDuration::try_from(spec.lease).unwrap_or_default()
                + SignedDuration::try_from(spec.skew_margin).unwrap_or_default()
                + secs(2 * 60 * longest);
            match block_on(checker.status(&spec, end)) {
                Ok(state) => {
                    sh.report.borrow_mut().skipped_paused += state
                        .counters
                        .skipped
                        .get(&cronslot_core::coord::SkipReason::Paused)
                        .copied()
                        .unwrap_or(0);
                    fated += m.check_end(&state, end, stuck_after, &mut violations);
                }
                Err(e) => violations.push(format!("{}: status failed: {e}", spec.name.as_str())),
            }
        }
    }
    let mut r = sh.report.borrow().clone();
    r.slots = due_total;
    r.fated_slots = fated;
    r.steps = step;
    r.virtual_secs = (end - t0()).as_secs();
    r.store = plan.borrow().counts.clone();
    r.succeeded = models.iter().map(|m| m.succeeded_total).sum();
    r.dead = models.iter().map(|m| m.dead_total).sum();
    r.late_claims = models.iter().map(|m| m.late_claims).sum();
    r.job_pauses_applied = models.iter().map(|m| m.pauses_applied).sum();
    r.job_resumes_applied = models.iter().map(|m| m.resumes_applied).sum();
    r.backfilled_slots = models.iter().map(|m| m.backfill.queued).sum();
    r.backfill_succeeded = models.iter().map(|m| m.backfill.succeeded).sum();
    r.backfill_dead = models.iter().map(|m| m.backfill.dead).sum();
    r.backfill_superseded = models.iter().map(|m| m.backfill.superseded).sum();
    r.redriven_slots = models.iter().map(|m| m.redrive.queued).sum();
    r.redrive_succeeded = models.iter().map(|m| m.redrive.succeeded).sum();
    r.redrive_dead = models.iter().map(|m| m.redrive.dead).sum();
    r.redrive_superseded = models.iter().map(|m| m.redrive.superseded).sum();
    r.spec_changes_applied = models.iter().map(|m| m.spec_changes_applied).sum();
    r.writes_checked = models.iter().map(|m| m.writes_seen).sum();
    r.effects_repeated_unrecorded = sh
        .effects
        .borrow()
        .values()
        .map(|n| u64::from(n.saturating_sub(1)))
        .sum();
    for (k, n) in sh.effects.borrow().iter() {
        trace.add(&format!("{k}={n};"));
    }
    r.trace_hash = trace.0;
    r.violations = violations;
    r
}

/// Slots to simulate: `CRONSLOT_SIM_SLOTS` or the default.
pub fn slots_from_env(default: u64) -> u64 {
    std::env::var("CRONSLOT_SIM_SLOTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
