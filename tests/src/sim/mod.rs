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
//! After every step the records are checked against [`model`], which does
//! not use `decide.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod faults;
pub mod model;

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, EffectError, EffectLedger, EffectState,
    JobContext, RandomSource, SplitMix64, StateStore, Trigger,
};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use jiff::{SignedDuration, Timestamp};

pub use faults::{FaultCounts, FaultPlan, FaultStore};
pub use model::{Event, JobModel};

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
    pub violations: Vec<String>,
    pub trace_hash: u64,
}

/// A queued trigger: (due, sequence, job, kind 0 tick / 1 slot / 2 manual,
/// slot in Unix seconds), earliest first.
type Delivery = Reverse<(Timestamp, u64, usize, u8, i64)>;

/// FNV-1a over the trace.
struct Trace(u64);

impl Trace {
    fn add(&mut self, s: &str) {
        for b in s.bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
}

/// Shared by every worker of one simulation.
struct Shared {
    clock: Cell<Timestamp>,
    specs: Vec<JobSpec>,
    events: RefCell<Vec<Event>>,
    effects: RefCell<BTreeMap<String, u32>>,
    /// Reads the ledger without faults: is this effect recorded as done?
    ledger_done: Box<dyn Fn(&str) -> bool>,
    report: RefCell<SimReport>,
}

/// One process: a coordinator (with its cache), an owner id, a skewed clock.
struct Proc<S> {
    coord: CasCoordinator<FaultStore<S>>,
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
    heartbeat: bool,
    effect: bool,
    /// 0 success, 1 transient failure, 2 permanent failure.
    outcome: u8,
}

/// Pending until the virtual clock reaches `until`.
struct SleepUntil<'a> {
    clock: &'a Cell<Timestamp>,
    until: Timestamp,
}

impl Future for SleepUntil<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.clock.get() >= self.until {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

fn plus(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

fn chance(rng: &mut SplitMix64, ppm: u64) -> bool {
    rng.next_u64() % 1_000_000 < ppm
}

fn range(rng: &mut SplitMix64, lo: i64, hi: i64) -> i64 {
    lo + (rng.next_u64() % u64::try_from(hi - lo + 1).unwrap_or(1)) as i64
}

async fn run_one<S: StateStore + EffectLedger + 'static>(
    p: Rc<Proc<S>>,
    sh: Rc<Shared>,
    job: usize,
    trigger: Trigger,
    plan: RunPlan,
) {
    let spec = &sh.specs[job];
    let skew = p.skew;
    let clock = || plus(sh.clock.get(), skew);
    let now = clock();
    let lease = match p.coord.claim(spec, now, trigger, &p.owner).await {
        Ok(Claim::Claimed(l)) => l,
        Ok(Claim::Idle(_)) => {
            sh.report.borrow_mut().idle_claims += 1;
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
        lease: lease.clone(),
        effective_now,
    });
    let fence = lease.fence;
    let ctx = JobContext::new(&p.coord, spec, lease, &clock);
    let mut outcome = plan.outcome;
    if plan.effect {
        let key = ctx.effect_key("send");
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
            Err(EffectError::Superseded { .. }) => return,
            Err(_) => outcome = 1,
        }
    }
    let end = plus(sh.clock.get(), plan.work);
    let third = SignedDuration::try_from(spec.lease).unwrap_or(secs(60)) / 3;
    while sh.clock.get() < end {
        let next = if plan.heartbeat {
            plus(sh.clock.get(), third).min(end)
        } else {
            end
        };
        SleepUntil {
            clock: &sh.clock,
            until: next,
        }
        .await;
        if plan.heartbeat && sh.clock.get() < end {
            match ctx.heartbeat().await {
                Ok(expires_at) => sh.events.borrow_mut().push(Event::Heartbeat {
                    job,
                    fence,
                    expires_at,
                }),
                Err(CoordError::Refused(_)) => return,
                Err(_) => {}
            }
        }
    }
    for _ in 0..3 {
        let r = match outcome {
            0 => p
                .coord
                .complete(spec, fence, Some("ok"), clock())
                .await
                .map(|()| Event::Completed { job, fence }),
            o => p
                .coord
                .fail(spec, fence, "simulated failure", o == 2, clock())
                .await
                .map(|_| Event::Failed { job, fence }),
        };
        match r {
            Ok(e) => {
                sh.events.borrow_mut().push(e);
                return;
            }
            Err(e) if e.is_transient() => continue,
            Err(_) => return,
        }
    }
}

fn new_proc<S: Clone>(
    store: &FaultStore<S>,
    rng: &mut SplitMix64,
    index: usize,
    incarnation: u32,
) -> Rc<Proc<S>> {
    Rc::new(Proc {
        coord: CasCoordinator::new(store.clone(), rng.next_u64()),
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
    let specs = specs();
    let mut models: Vec<JobModel> = specs
        .iter()
        .zip(PERIODS)
        .map(|(s, p)| JobModel::new(s, *p))
        .collect();
    let raw = store.clone();
    let ledger = store.clone();
    let sh = Rc::new(Shared {
        clock: Cell::new(t0()),
        specs,
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
    });
    let plan = Rc::new(RefCell::new(FaultPlan::new(
        rng.next_u64(),
        cfg.store_unavailable_ppm,
        cfg.store_ambiguous_ppm,
    )));
    let fstore = FaultStore {
        inner: store,
        plan: plan.clone(),
    };
    // Every job is created at t0, so the model knows its first slot.
    let creator = CasCoordinator::new(raw.clone(), 0);
    for spec in &sh.specs {
        let _ = block_on(creator.claim(spec, t0(), Trigger::Tick, "creator"));
    }
    let mut workers: Vec<Worker<S>> = (0..cfg.workers)
        .map(|i| Worker {
            proc: new_proc(&fstore, &mut rng, i, 0),
            run: None,
            paused_until: t0(),
            incarnation: 0,
        })
        .collect();
    let mut trace = Trace(0xcbf2_9ce4_8422_2325);
    let mut queue: BinaryHeap<Delivery> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut outage_until = t0();
    let mut prev = t0();
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let slots_due = |now: Timestamp, models: &[JobModel]| -> u64 {
        models.iter().map(|m| m.count(t0(), now)).sum()
    };
    let mut violations: Vec<String> = Vec::new();
    let mut draining_since: Option<Timestamp> = None;
    let drain = secs(20 * 60);
    let mut step = 0u64;
    loop {
        step += 1;
        let dt = secs(range(&mut rng, 1, 20));
        let now = plus(prev, dt);
        sh.clock.set(now);
        if draining_since.is_none() && slots_due(now, &models) >= cfg.slots {
            // Drain: no more faults, crashes, pauses or outages; the
            // platform keeps triggering until every slot settles.
            draining_since = Some(now);
            plan.borrow_mut().enabled = false;
            outage_until = now;
        }
        let calm = draining_since.is_some();
        if let Some(since) = draining_since {
            if now >= plus(since, drain) {
                break;
            }
        }
        // The platform: deliveries for slots in (prev, now].
        if !calm && now >= outage_until && chance(&mut rng, 150) {
            outage_until = plus(now, secs(range(&mut rng, 3 * 60, 60 * 60)));
            sh.report.borrow_mut().outages += 1;
        }
        for (j, m) in models.iter().enumerate() {
            let n = m.count(prev, now);
            if n == 0 || now < outage_until {
                continue;
            }
            let slot = m.slot_at_or_before(now);
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
                    Trigger::Tick => r.tick_triggers += 1,
                    Trigger::Slot(_) => r.slot_triggers += 1,
                    Trigger::Manual => r.manual_triggers += 1,
                }
            }
            let lease_s = sh.specs[job].lease.as_secs() as i64;
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
                heartbeat: rng.next_u64() % 2 == 0,
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
            workers[w].run = Some(Box::pin(run_one(
                workers[w].proc.clone(),
                sh.clone(),
                job,
                trigger,
                plan,
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
        // Check every record (when something was written) and every event
        // of the step.
        let dirty = std::mem::take(&mut plan.borrow_mut().dirty);
        for (j, m) in models.iter_mut().enumerate() {
            let job = sh.specs[j].name.as_str();
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
            let spec = &sh.specs[j];
            // A slot may wait up to its starting deadline (catch-up), then
            // run for a lease (plus the margin) and retry before the next
            // slot: past that, it is stuck.
            let stuck_after = SignedDuration::try_from(spec.starting_deadline).unwrap_or_default()
                + SignedDuration::try_from(spec.lease).unwrap_or_default()
                + SignedDuration::try_from(spec.skew_margin).unwrap_or_default()
                + secs(2 * 60 * PERIODS[j]);
            match block_on(checker.status(spec, end)) {
                Ok(state) => fated += m.check_end(&state, end, stuck_after, &mut violations),
                Err(e) => violations.push(format!("{}: status failed: {e}", spec.name.as_str())),
            }
        }
    }
    let mut r = sh.report.borrow().clone();
    r.slots = slots_due(end, &models);
    r.fated_slots = fated;
    r.steps = step;
    r.virtual_secs = (end - t0()).as_secs();
    r.store = plan.borrow().counts.clone();
    r.succeeded = models.iter().map(|m| m.succeeded.len() as u64).sum();
    r.dead = models.iter().map(|m| m.dead.len() as u64).sum();
    r.late_claims = models.iter().map(|m| m.late_claims).sum();
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
