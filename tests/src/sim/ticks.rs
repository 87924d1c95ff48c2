//! Deterministic simulation of the tick path (issue 14): the runtime's
//! [`tick`] over the store's tick index ([`TickIndex`]), as a fleet runs
//! it, with one seeded random source for every choice so that a seed
//! replays exactly.
//!
//! Two ticker processes, each with its own [`CasCoordinator`], tick about
//! once a minute (0–50 s late); sometimes both tick at the same minute (a
//! fleet's tickers race), sometimes nobody ticks for 5–90 minutes (the
//! platform is down). A ticker process dies between two store operations:
//! its tick futures are dropped, with whatever leases they held. Every
//! store operation, `tick_start` and `tick_end` included, may fail without
//! effect or (writes) be applied and lose its answer ([`FaultStore`]). An
//! operator backfills, redrives dead letters and pauses and resumes jobs
//! through a coordinator of its own: the runs those queue are reached only
//! through the wake index, as are retries, expired leases and slots held
//! back by overlap.
//!
//! Then a calm drain (no faults, crashes or outages, a tick every minute)
//! lets everything settle, and the end checks that nothing is stuck.
//!
//! Checked, with violations collected into the report:
//! - every write the store applied, every record and every claim, against
//!   the independent [`model`](super::model) (exclusive slots, fences,
//!   catch-up, fates; with the claims read from the writes themselves);
//! - every run the job functions saw belongs to a claim of that slot,
//!   attempt and fence, and no fence runs twice;
//! - the tick mark never moves backwards, and never passes a slot that the
//!   job's record has not reached unless the record's wake brings the job
//!   back by that slot;
//! - once calm, a waiting run and an expired lease are dealt with by the
//!   second tick after their time;
//! - at the end: no lease, no waiting run whose time has come, the cursor
//!   at the last slot older than the starting deadline, every slot one fate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Waker};
use std::time::Duration;

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, JobState, MemoryStore, RandomSource, SplitMix64, StateStore, StoreError,
    StoreErrorKind, TickIndex, TickStart,
};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runtime::{
    JobError, JobResult, Jobs, LocalFuture, Platform, RunContext, RunEvent, TickOptions, TickPlan,
    tick,
};
use jiff::{SignedDuration, Timestamp};

use super::faults::{Applied, FaultCounts, FaultPlan, FaultStore};
use super::model::{Event, JobModel, Sched};
use super::{SleepUntil, Trace, chance, plus, range, secs};
use cronslot_core::coord::Operator;

/// Thirty jobs whose ticks the index matters to: every minute (planned by
/// the manifest at every tick), `*/7` (a short gap at each hour), hourly at
/// odd minutes, every two hours, and daily at times that fall inside the
/// simulated span (which starts on a Monday at 21:50 UTC); the policies
/// mixed. Retries, expired leases, backfills and redrives are known only
/// to the store, so only the wake index brings them to a tick.
pub const TICK_MANIFEST: &str = r#"
[defaults]
lease = "3m"
starting_deadline = "5m"
skew_margin = "5s"
history = { succeeded = 10, failed = 10 }
retry = { max_attempts = 3, backoff = "10s", max_backoff = "1m" }

[[job]]
name = "m1-forbid-latest"
schedule = "* * * * *"

[[job]]
name = "m1-allow-all"
schedule = "* * * * *"
overlap = "allow"
max_concurrency = 2
catch_up = "all"
max_catch_up = 3
lease = "5m"
starting_deadline = "10m"

[[job]]
name = "m1-replace"
schedule = "* * * * *"
overlap = "replace"

[[job]]
name = "m1-none"
schedule = "* * * * *"
catch_up = "none"

[[job]]
name = "m1-once"
schedule = "* * * * *"
delivery = "at_most_once"

[[job]]
name = "m7-forbid"
schedule = "*/7 * * * *"

[[job]]
name = "m7-all"
schedule = "*/7 * * * *"
catch_up = "all"
max_catch_up = 5
starting_deadline = "40m"

[[job]]
name = "m7-retries"
schedule = "*/7 * * * *"
retry = { max_attempts = 5, backoff = "20s", max_backoff = "2m" }

[[job]]
name = "m7-once"
schedule = "*/7 * * * *"
delivery = "at_most_once"

[[job]]
name = "m7-allow"
schedule = "*/7 * * * *"
overlap = "allow"
max_concurrency = 2
lease = "10m"

[[job]]
name = "m5-offset-none"
schedule = "3-59/5 * * * *"
catch_up = "none"

[[job]]
name = "m2-retries"
schedule = "*/2 * * * *"
retry = { max_attempts = 4, backoff = "15s", max_backoff = "1m" }

[[job]]
name = "m3-all"
schedule = "*/3 * * * *"
catch_up = "all"
max_catch_up = 4
starting_deadline = "15m"

[[job]]
name = "m10-long"
schedule = "*/10 * * * *"
lease = "8m"

[[job]]
name = "m15-replace"
schedule = "*/15 * * * *"
overlap = "replace"
lease = "12m"

[[job]]
name = "h17-latest"
schedule = "17 * * * *"

[[job]]
name = "h41-all"
schedule = "41 * * * *"
catch_up = "all"
starting_deadline = "2h"

[[job]]
name = "h53-none"
schedule = "53 * * * *"
catch_up = "none"

[[job]]
name = "h29-once"
schedule = "29 * * * *"
delivery = "at_most_once"

[[job]]
name = "h07-backoff"
schedule = "7 * * * *"
starting_deadline = "30m"
retry = { max_attempts = 5, backoff = "2m", max_backoff = "10m" }

[[job]]
name = "h59-allow"
schedule = "59 * * * *"
overlap = "allow"
max_concurrency = 3

[[job]]
name = "h2-30-all"
schedule = "30 */2 * * *"
catch_up = "all"
starting_deadline = "1h"

[[job]]
name = "d2213"
schedule = "13 22 * * *"
starting_deadline = "1h"

[[job]]
name = "d2247-backoff"
schedule = "47 22 * * *"
retry = { max_attempts = 4, backoff = "5m", max_backoff = "20m" }

[[job]]
name = "d2329-all"
schedule = "29 23 * * *"
catch_up = "all"
starting_deadline = "3h"

[[job]]
name = "d0041-once"
schedule = "41 0 * * *"
delivery = "at_most_once"

[[job]]
name = "d0207-none"
schedule = "7 2 * * *"
catch_up = "none"

[[job]]
name = "d0533"
schedule = "33 5 * * *"
lease = "10m"

[[job]]
name = "d0901-allow"
schedule = "1 9 * * *"
overlap = "allow"
max_concurrency = 2

[[job]]
name = "d1517-retries"
schedule = "17 15 * * *"
starting_deadline = "20m"
retry = { max_attempts = 6, backoff = "1m", max_backoff = "8m" }
"#;

/// The model's view of each job's schedule, in [`TICK_MANIFEST`]'s order:
/// (window, offset, step) in minutes, as [`Sched::steps`] takes them.
/// [`tick_specs`] checks them against the cron expressions.
const TICK_SCHEDS: &[(i64, i64, i64)] = &[
    (1, 0, 1),
    (1, 0, 1),
    (1, 0, 1),
    (1, 0, 1),
    (1, 0, 1),
    (60, 0, 7),
    (60, 0, 7),
    (60, 0, 7),
    (60, 0, 7),
    (60, 0, 7),
    (5, 3, 5),
    (2, 0, 2),
    (3, 0, 3),
    (10, 0, 10),
    (15, 0, 15),
    (60, 17, 60),
    (60, 41, 60),
    (60, 53, 60),
    (60, 29, 60),
    (60, 7, 60),
    (60, 59, 60),
    (120, 30, 120),
    (1440, 22 * 60 + 13, 1440),
    (1440, 22 * 60 + 47, 1440),
    (1440, 23 * 60 + 29, 1440),
    (1440, 41, 1440),
    (1440, 2 * 60 + 7, 1440),
    (1440, 5 * 60 + 33, 1440),
    (1440, 9 * 60 + 1, 1440),
    (1440, 15 * 60 + 17, 1440),
];

/// The tick simulation's time zero: a Monday, 21:50:30 UTC, so that the
/// default span reaches the first daily jobs and crosses midnight.
pub fn tick_t0() -> Timestamp {
    "2026-01-05T21:50:30Z".parse().unwrap()
}

/// The jobs of [`TICK_MANIFEST`] with the model's schedule of each, after
/// checking that the model's arithmetic finds exactly the instants the
/// cron expression does over two days (a wrong table would make every
/// count check lie).
pub fn tick_specs() -> Vec<(Rc<JobSpec>, Sched)> {
    let specs = parse_manifest(TICK_MANIFEST, "ticks.toml")
        .unwrap_or_else(|e| panic!("tick simulation manifest:\n{e}"))
        .jobs;
    assert_eq!(specs.len(), TICK_SCHEDS.len(), "one schedule per job");
    let from = tick_t0();
    let to = plus(from, secs(2 * 86_400));
    specs
        .into_iter()
        .zip(TICK_SCHEDS)
        .map(|(spec, &(window, offset, step))| {
            let sched = Sched::steps(window, offset, step);
            let mut at = from;
            let mut n = 0;
            while let Some(slot) = spec.schedule.next_after(at).filter(|s| *s <= to) {
                assert!(
                    sched.is_slot(slot),
                    "{}: {slot} is no slot of the model",
                    spec.name.as_str()
                );
                assert_eq!(sched.slot_at_or_before(slot), slot);
                n += 1;
                at = slot;
            }
            assert_eq!(
                sched.count(from, to),
                n,
                "{}: slots in two days",
                spec.name.as_str()
            );
            (Rc::new(spec), sched)
        })
        .collect()
}

/// How much to simulate and how hard.
#[derive(Debug, Clone)]
pub struct TickSimConfig {
    pub seed: u64,
    /// Stop the faulty part once this many slots (all jobs) have come due.
    pub slots: u64,
    /// Chances, in parts per million: per store operation; per poll of a
    /// tick (its ticker process dies); per minute (a tick delivered twice,
    /// an outage starting); per step of a few seconds (an operator's
    /// command).
    pub store_unavailable_ppm: u64,
    pub store_ambiguous_ppm: u64,
    /// More faults on `tick_start` and `tick_end` alone.
    pub index_unavailable_ppm: u64,
    pub index_ambiguous_ppm: u64,
    pub crash_per_poll_ppm: u64,
    pub double_tick_ppm: u64,
    pub outage_per_minute_ppm: u64,
    pub backfill_per_step_ppm: u64,
    pub redrive_per_step_ppm: u64,
    pub pause_per_step_ppm: u64,
}

impl TickSimConfig {
    pub fn new(seed: u64, slots: u64) -> TickSimConfig {
        TickSimConfig {
            seed,
            slots,
            store_unavailable_ppm: 20_000,
            store_ambiguous_ppm: 15_000,
            index_unavailable_ppm: 30_000,
            index_ambiguous_ppm: 50_000,
            crash_per_poll_ppm: 500,
            double_tick_ppm: 100_000,
            outage_per_minute_ppm: 4_000,
            backfill_per_step_ppm: 2_500,
            redrive_per_step_ppm: 4_000,
            pause_per_step_ppm: 800,
        }
    }
}

/// What a run did: counts of everything injected and observed.
#[derive(Debug, Clone, Default)]
pub struct TickSimReport {
    pub seed: u64,
    /// Slots that came due (all jobs) before the drain, and the fates the
    /// end counted.
    pub slots: u64,
    pub fated_slots: u64,
    pub steps: u64,
    pub virtual_secs: i64,
    /// Ticks delivered (twice at one minute counts two), dropped by
    /// outages, finished, and lost with their ticker.
    pub ticks: u64,
    pub double_ticks: u64,
    pub outages: u64,
    pub outage_minutes: i64,
    pub ticks_finished: u64,
    pub ticker_crashes: u64,
    pub ticks_lost: u64,
    /// `tick_start` failed (nothing served); `tick_end` failed without
    /// effect, or was applied and lost its answer.
    pub tick_start_errors: u64,
    pub tick_end_unavailable: u64,
    pub tick_end_ambiguous: u64,
    /// Jobs ticks served because the manifest planned them, and because
    /// only the wake index named them (and of those, how many ran a slot).
    pub planned_served: u64,
    pub woken_served: u64,
    pub woken_ran: u64,
    /// Runs of job functions, and how they were told to end.
    pub runs: u64,
    pub runs_long: u64,
    pub runs_transient: u64,
    pub runs_permanent: u64,
    pub succeeded: u64,
    pub dead: u64,
    pub backfills: u64,
    pub backfilled_slots: u64,
    pub redrives: u64,
    pub redriven_slots: u64,
    pub pauses: u64,
    pub operator_errors: u64,
    /// Once calm: waiting runs and expired leases seen, each to be dealt
    /// with by the second tick after its time.
    pub calm_waits_watched: u64,
    pub calm_expiries_watched: u64,
    /// How far the mark moved, and the writes checked.
    pub marks_seen: u64,
    pub writes_checked: u64,
    pub store: FaultCounts,
    pub violations: Vec<String>,
    pub trace_hash: u64,
}

impl TickSimReport {
    /// One line: what ran, what was injected, what was checked.
    pub fn summary(&self, secs: f64) -> String {
        format!(
            "tick sim seed {}: {} slots ({} fated), {} steps, {:.1} virtual hours, ticks {} \
             ({} doubled, {} finished, {} lost in {} ticker crashes; {} outages of {} min), \
             tick_start errors {}, tick_end {} unavailable {} ambiguous, served {} planned + {} \
             woken ({} woken ran a slot), runs {} ({} long, {} transient, {} permanent), \
             {} succeeded, {} dead, backfills {} ({} slots), redrives {} ({} slots), pauses {}, \
             operator errors {}, calm waits {} expiries {} watched, marks {}, store ops {} \
             ({} unavailable, {} ambiguous), {} writes checked, {} violations, trace {:016x}, \
             {secs:.1}s",
            self.seed,
            self.slots,
            self.fated_slots,
            self.steps,
            self.virtual_secs as f64 / 3600.0,
            self.ticks,
            self.double_ticks,
            self.ticks_finished,
            self.ticks_lost,
            self.ticker_crashes,
            self.outages,
            self.outage_minutes,
            self.tick_start_errors,
            self.tick_end_unavailable,
            self.tick_end_ambiguous,
            self.planned_served,
            self.woken_served,
            self.woken_ran,
            self.runs,
            self.runs_long,
            self.runs_transient,
            self.runs_permanent,
            self.succeeded,
            self.dead,
            self.backfills,
            self.backfilled_slots,
            self.redrives,
            self.redriven_slots,
            self.pauses,
            self.operator_errors,
            self.calm_waits_watched,
            self.calm_expiries_watched,
            self.marks_seen,
            self.store.operations,
            self.store.unavailable,
            self.store.ambiguous,
            self.writes_checked,
            self.violations.len(),
            self.trace_hash,
        )
    }
}

/// One run a job function saw.
#[derive(Debug, Clone)]
struct RunEntry {
    job: String,
    slot: Timestamp,
    attempt: u32,
    fence: u64,
}

/// What a finished tick reported, kept for the checks.
#[derive(Debug, Clone)]
struct TickDone {
    /// The instant the tick planned up to (its ticker's clock).
    now: Timestamp,
    planned: u64,
    woken: u64,
    woken_ran: u64,
    start_error: bool,
    end_error: Option<StoreErrorKind>,
}

/// Shared by the tickers, the job functions and the checks.
struct Shared {
    clock: Cell<Timestamp>,
    calm: Cell<bool>,
    /// The end of the drain: runs succeed.
    settling: Cell<bool>,
    /// The job functions' own random source (drawn in poll order, which
    /// the seed fixes).
    rng: RefCell<SplitMix64>,
    log: RefCell<Vec<RunEntry>>,
    heartbeats: RefCell<Vec<(String, u64, Timestamp)>>,
    done: RefCell<Vec<TickDone>>,
    counts: RefCell<TickSimReport>,
}

thread_local! {
    /// The tick simulation running on this thread: job functions are
    /// `Send + Sync`, so they reach it through here rather than capture it.
    static TICK_SIM: RefCell<Option<Rc<Shared>>> = const { RefCell::new(None) };
}

/// Every simulated job: records its run, works for a while in virtual time
/// (sometimes past the next tick, always within its lease), then succeeds
/// or fails as drawn. Once calm, it works briefly and seldom fails.
async fn tick_job(ctx: RunContext) -> JobResult {
    let Some(sh) = TICK_SIM.with(|s| s.borrow().clone()) else {
        return Err(JobError::permanent("no tick simulation on this thread"));
    };
    sh.log.borrow_mut().push(RunEntry {
        job: ctx.job().to_string(),
        slot: ctx.scheduled_at(),
        attempt: ctx.attempt(),
        fence: ctx.fence(),
    });
    let lease = ctx.spec().lease.as_secs() as i64;
    let (work, outcome) = {
        let mut rng = sh.rng.borrow_mut();
        let mut c = sh.counts.borrow_mut();
        c.runs += 1;
        if sh.calm.get() {
            // Calm: short runs, and now and then a transient failure, so
            // that retries are left to the wake index while calm too.
            let transient = !sh.settling.get() && rng.next_u64() % 100 < 8;
            c.runs_transient += u64::from(transient);
            (range(&mut rng, 1, 20), u8::from(transient))
        } else {
            let long = rng.next_u64() % 100 < 12;
            c.runs_long += u64::from(long);
            // A long run outlives the tick that started it and the next
            // ticks, but ends (with a margin) before its lease does.
            let work = if long {
                range(&mut rng, 61, lease * 4 / 5)
            } else {
                range(&mut rng, 1, 30)
            };
            let o = rng.next_u64() % 100;
            let outcome = if o < 84 {
                0
            } else if o < 96 {
                c.runs_transient += 1;
                1
            } else {
                c.runs_permanent += 1;
                2
            };
            (work, outcome)
        }
    };
    ctx.sleep(Duration::from_secs(work as u64)).await;
    match outcome {
        0 => Ok(()),
        1 => Err(JobError::transient("simulated failure")),
        _ => Err(JobError::permanent("simulated failure")),
    }
}

/// A ticker process's platform: the virtual clock as its host sees it
/// (skewed by a second or two), sleeps that end when the simulation's
/// clock passes them, and heartbeats reported to the model.
struct TickerPlatform {
    sh: Rc<Shared>,
    skew: SignedDuration,
}

impl Platform for TickerPlatform {
    fn name(&self) -> &'static str {
        "the tick simulation"
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
            job,
            fence,
            expires_at,
        } = *event
        {
            self.sh
                .heartbeats
                .borrow_mut()
                .push((job.to_string(), fence, expires_at));
        }
    }
}

type Store = FaultStore<MemoryStore>;
type Task = Pin<Box<dyn Future<Output = ()>>>;

/// The tick index as the ticks see it: the faulty store, plus faults of
/// its own drawn more often than the store's, because a run makes one
/// `tick_start` and one `tick_end` per tick but hundreds of other
/// operations. `tick_end`'s write may be applied and its answer lost.
#[derive(Clone)]
struct IndexFaults {
    store: Store,
    rng: Rc<RefCell<SplitMix64>>,
    unavailable_ppm: u64,
    ambiguous_ppm: u64,
    sh: Rc<Shared>,
}

impl IndexFaults {
    fn draw(&self, write: bool) -> Option<StoreErrorKind> {
        if self.sh.calm.get() {
            return None;
        }
        let r = self.rng.borrow_mut().next_u64() % 1_000_000;
        if r < self.unavailable_ppm {
            Some(StoreErrorKind::Unavailable)
        } else if write && r < self.unavailable_ppm + self.ambiguous_ppm {
            Some(StoreErrorKind::Ambiguous)
        } else {
            None
        }
    }
}

impl TickIndex for IndexFaults {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        match self.draw(false) {
            Some(_) => Err(StoreError::unavailable(
                "simulated index fault: unavailable",
            )),
            None => self.store.tick_start(now, limit).await,
        }
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        match self.draw(true) {
            Some(StoreErrorKind::Ambiguous) => {
                self.store.tick_end(mark).await?;
                Err(StoreError::new(
                    StoreErrorKind::Ambiguous,
                    "simulated index fault: mark written, answer lost",
                ))
            }
            Some(_) => Err(StoreError::unavailable(
                "simulated index fault: unavailable",
            )),
            None => self.store.tick_end(mark).await,
        }
    }
}

/// A process that ticks: its coordinator (and that coordinator's memory of
/// records) lives until the process dies, with every tick it was running.
struct Ticker {
    coord: Rc<CasCoordinator<Store>>,
    platform: Rc<dyn Platform>,
    ticks: Vec<Task>,
    incarnation: u32,
    serial: u64,
}

fn new_ticker(sh: &Rc<Shared>, store: &Store, rng: &mut SplitMix64, incarnation: u32) -> Ticker {
    Ticker {
        coord: Rc::new(CasCoordinator::new(store.clone(), rng.next_u64())),
        platform: Rc::new(TickerPlatform {
            sh: sh.clone(),
            skew: secs(range(rng, -2, 2)),
        }),
        ticks: Vec::new(),
        incarnation,
        serial: 0,
    }
}

/// One tick invocation, reporting what it did when it finishes.
async fn one_tick(
    plan: Rc<TickPlan>,
    coord: Rc<CasCoordinator<Store>>,
    store: IndexFaults,
    jobs: Rc<Jobs>,
    platform: Rc<dyn Platform>,
    owner: String,
    sh: Rc<Shared>,
) {
    let options = TickOptions {
        owner: &owner,
        max_jobs: None,
        // A tick never waits for a retry: the wake index brings it.
        retry_within: Duration::ZERO,
        more_due: None,
    };
    let now = platform.now();
    let done = match tick(&plan, &coord, &store, &jobs, &platform, &options).await {
        Err(_) => TickDone {
            now,
            planned: 0,
            woken: 0,
            woken_ran: 0,
            start_error: true,
            end_error: None,
        },
        Ok(report) => {
            let woken = report.work.jobs.iter().filter(|j| j.planned.is_none());
            let woken_ran = report
                .work
                .jobs
                .iter()
                .zip(&report.served)
                .filter(|(j, s)| j.planned.is_none() && !s.runs.is_empty())
                .count();
            TickDone {
                now: report.work.now,
                planned: report
                    .work
                    .jobs
                    .iter()
                    .filter(|j| j.planned.is_some())
                    .count() as u64,
                woken: woken.count() as u64,
                woken_ran: woken_ran as u64,
                start_error: false,
                end_error: report.mark_error.map(|e| e.kind),
            }
        }
    };
    sh.done.borrow_mut().push(done);
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

/// One operator command, retried on transient errors as a person at a
/// shell would; a refusal (none should come) is reported in `refusals`.
async fn operate(
    coord: Rc<CasCoordinator<Store>>,
    sh: Rc<Shared>,
    action: OpAction,
    spec: Rc<JobSpec>,
    refusals: Rc<RefCell<Vec<String>>>,
) {
    for _ in 0..4 {
        let now = sh.clock.get();
        let r = match action {
            OpAction::Pause(_) => coord.pause(&spec, now).await,
            OpAction::Resume(_) => coord.resume(&spec, now).await,
            OpAction::Backfill(_, from, to) => coord
                .backfill(&spec, from, to, now, false)
                .await
                .map(|_| ()),
            OpAction::Redrive(_, slot) => coord.redrive(&spec, slot, now).await.map(|_| ()),
        };
        match r {
            Ok(()) => return,
            Err(e) if e.is_transient() => sh.counts.borrow_mut().operator_errors += 1,
            Err(e) => {
                refusals
                    .borrow_mut()
                    .push(format!("operator's {action:?} refused: {e}"));
                return;
            }
        }
    }
}

/// A job's last record as the checks saw it, and what follows from it.
#[derive(Debug, Clone)]
struct Seen {
    state: JobState,
    /// The job's first slot after the cursor.
    next: Option<Timestamp>,
}

/// Runs one tick simulation on an empty yielding memory store.
pub fn simulate_ticks(cfg: &TickSimConfig) -> TickSimReport {
    let mut rng = SplitMix64::new(cfg.seed);
    let jobs_sched = tick_specs();
    let specs: Vec<Rc<JobSpec>> = jobs_sched.iter().map(|(s, _)| s.clone()).collect();
    let scheds: Vec<Sched> = jobs_sched.iter().map(|(_, s)| *s).collect();
    let names: Vec<String> = specs.iter().map(|s| s.name.as_str().to_string()).collect();
    let by_name: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let plan = Rc::new(TickPlan::new(specs.clone(), |_| true));
    let jobs = Rc::new(
        names
            .iter()
            .fold(Jobs::new(), |jobs, name| jobs.register(name, tick_job)),
    );
    let raw = MemoryStore::yielding();
    let faults = Rc::new(RefCell::new(FaultPlan::new(
        rng.next_u64(),
        cfg.store_unavailable_ppm,
        cfg.store_ambiguous_ppm,
    )));
    faults.borrow_mut().applied = Some(Vec::new());
    let store = FaultStore {
        inner: raw.clone(),
        plan: faults.clone(),
    };
    let t0 = tick_t0();
    let sh = Rc::new(Shared {
        clock: Cell::new(t0),
        calm: Cell::new(false),
        settling: Cell::new(false),
        rng: RefCell::new(SplitMix64::new(rng.next_u64())),
        log: RefCell::new(Vec::new()),
        heartbeats: RefCell::new(Vec::new()),
        done: RefCell::new(Vec::new()),
        counts: RefCell::new(TickSimReport {
            seed: cfg.seed,
            ..TickSimReport::default()
        }),
    });
    TICK_SIM.with(|s| *s.borrow_mut() = Some(sh.clone()));
    let index = IndexFaults {
        store: store.clone(),
        rng: Rc::new(RefCell::new(SplitMix64::new(rng.next_u64()))),
        unavailable_ppm: cfg.index_unavailable_ppm,
        ambiguous_ppm: cfg.index_ambiguous_ppm,
        sh: sh.clone(),
    };

    // Records are created by the ticks themselves (a planned job's record
    // starts just before its slot), so each job's model starts at its
    // record's first write.
    let mut models: Vec<JobModel> = specs
        .iter()
        .zip(&scheds)
        .map(|(spec, sched)| {
            let hash = u64::from_str_radix(&spec.spec_hash(), 16).unwrap_or(u64::MAX);
            JobModel::new(spec, vec![(hash, *sched)])
        })
        .collect();
    let mut started = vec![false; specs.len()];
    let mut fences = vec![0u64; specs.len()];
    let mut last_claim: Vec<Option<Timestamp>> = vec![None; specs.len()];
    let mut claims: BTreeMap<(usize, u64), (Timestamp, u32)> = BTreeMap::new();
    let mut seen: Vec<Option<Seen>> = vec![None; specs.len()];
    let mut ran: BTreeSet<(usize, u64)> = BTreeSet::new();
    // What the calm checks watched: waiting runs and expired leases.
    let mut waits_watched: BTreeSet<(usize, Timestamp, u32)> = BTreeSet::new();
    let mut expiries_watched: BTreeSet<(usize, u64)> = BTreeSet::new();

    let mut tickers: Vec<Ticker> = (0..2)
        .map(|_| new_ticker(&sh, &store, &mut rng, 0))
        .collect();
    let mut op_coord = Rc::new(CasCoordinator::new(store.clone(), rng.next_u64()));
    let mut op_run: Option<Task> = None;
    let refusals: Rc<RefCell<Vec<String>>> = Rc::default();
    let mut resume_due: Vec<Option<Timestamp>> = vec![None; specs.len()];
    // The operator's commands at the start of the calm, in order.
    let mut calm_ops: Vec<OpAction> = Vec::new();

    let mut trace = Trace(0xcbf2_9ce4_8422_2325);
    let mut violations: Vec<String> = Vec::new();
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);

    // Tick deliveries: (instant, ticker), in order.
    let mut deliveries: Vec<(Timestamp, usize)> = Vec::new();
    let mut next_minute = plus(
        Timestamp::from_second(t0.as_second().div_euclid(60) * 60).unwrap(),
        secs(60),
    );
    let mut outage_until = t0;
    let first_outage = plus(next_minute, secs(60 * range(&mut rng, 20, 90)));
    let mut due_total = 0u64;
    let mut prev = t0;
    let mut mark: Option<Timestamp> = None;
    let mut first_mark: Option<Timestamp> = None;
    let mut calm_since: Option<Timestamp> = None;
    // Time enough, once calm, for the longest lease to run out and the
    // longest backoff to pass, and then some ticks.
    let longest = specs
        .iter()
        .map(|s| s.lease + s.skew_margin + s.retry.max_backoff)
        .max()
        .unwrap_or_default();
    let drain = SignedDuration::try_from(longest).unwrap_or_default() + secs(10 * 60);
    let mut extra_open = u64::MAX;
    let mut last_progress = t0;
    let mut stopped = false;
    let mut settle_until: Option<Timestamp> = None;
    let settle = SignedDuration::try_from(
        specs
            .iter()
            .map(|s| s.retry.max_backoff)
            .max()
            .unwrap_or_default(),
    )
    .unwrap_or_default()
        + secs(3 * 60);
    let mut step = 0u64;
    loop {
        step += 1;
        let now = plus(prev, secs(range(&mut rng, 1, 6)));
        sh.clock.set(now);
        if calm_since.is_none() && due_total >= cfg.slots {
            // The drain: no more faults, crashes, outages or operator
            // commands; a tick every minute; what the operator paused is
            // resumed.
            calm_since = Some(now);
            sh.calm.set(true);
            faults.borrow_mut().enabled = false;
            outage_until = now;
            for r in resume_due.iter_mut().flatten() {
                *r = now;
            }
            // The last crash before the calm: both tickers die with their
            // runs, leaving leases that only their expiry's wake brings
            // back. Then the operator redrives every dead letter and
            // backfills a few slots: waiting runs, which only the wake
            // index brings to a tick.
            for (t, ticker) in tickers.iter_mut().enumerate() {
                let lost = ticker.ticks.len() as u64;
                let incarnation = ticker.incarnation + 1;
                *ticker = new_ticker(&sh, &store, &mut rng, incarnation);
                let mut c = sh.counts.borrow_mut();
                c.ticker_crashes += 1;
                c.ticks_lost += lost;
                trace.add(&format!("C{t};"));
            }
            for (j, m) in models.iter().enumerate() {
                if !m.dead_letters().is_empty() {
                    calm_ops.push(OpAction::Redrive(j, None));
                }
            }
            for _ in 0..3 {
                let j = (rng.next_u64() % specs.len() as u64) as usize;
                let to = plus(now, secs(-60 * range(&mut rng, 0, 60)));
                let from = to - scheds[j].period() * range(&mut rng, 0, 2) as i32;
                models[j].operator_sched = scheds[j];
                calm_ops.push(OpAction::Backfill(j, from, to));
            }
        }
        let calm = calm_since.is_some();
        if let Some(since) = calm_since {
            // Backfilled and redriven runs go at a tick's pace: wait for
            // them while they keep ending.
            let open: u64 = models.iter().map(JobModel::extra_lives_open).sum();
            if open < extra_open {
                extra_open = open;
                last_progress = now;
            }
            let settled = op_run.is_none()
                && calm_ops.is_empty()
                && resume_due.iter().all(Option::is_none)
                && open == 0;
            let enough = now >= plus(since, drain) && settled;
            let stalled = now >= plus(last_progress.max(since), secs(3 * 3600));
            if (enough || stalled) && settle_until.is_none() {
                // The last stretch: runs no longer fail, so every retry
                // comes due, and is served, before the ticks stop.
                settle_until = Some(plus(now, settle));
                sh.settling.set(true);
            }
            if !stopped && settle_until.is_some_and(|t| now >= t) {
                // No tick after this: let the ticks in flight finish.
                stopped = true;
                deliveries.clear();
            }
            if stopped && tickers.iter().all(|t| t.ticks.is_empty()) && op_run.is_none() {
                break;
            }
        }

        // The platform: one tick per minute for each minute that passed,
        // late by up to 50 s, sometimes twice, none during an outage.
        while !stopped && next_minute <= now {
            let minute = next_minute;
            next_minute = plus(next_minute, secs(60));
            due_total += scheds
                .iter()
                .map(|sched| sched.count(plus(minute, secs(-60)), minute))
                .sum::<u64>();
            // One outage comes surely (within the first hours), others by
            // chance: every run then shows a long gap for the mark to cover.
            let sure = minute == first_outage;
            if !calm
                && minute >= outage_until
                && (sure || chance(&mut rng, cfg.outage_per_minute_ppm))
            {
                let minutes = range(&mut rng, 5, 90);
                outage_until = plus(minute, secs(60 * minutes));
                let mut c = sh.counts.borrow_mut();
                c.outages += 1;
                c.outage_minutes += minutes;
                trace.add(&format!("O{minute}:{minutes};"));
            }
            if minute < outage_until {
                continue;
            }
            let first = (rng.next_u64() % tickers.len() as u64) as usize;
            deliveries.push((plus(minute, secs(range(&mut rng, 0, 50))), first));
            if !calm && chance(&mut rng, cfg.double_tick_ppm) {
                // The other ticker ticks at the same minute, within seconds.
                deliveries.push((plus(minute, secs(range(&mut rng, 0, 50))), 1 - first));
                sh.counts.borrow_mut().double_ticks += 1;
            }
        }
        deliveries.sort();
        while let Some(&(at, t)) = deliveries.first() {
            if at > now {
                break;
            }
            deliveries.remove(0);
            let ticker = &mut tickers[t];
            ticker.serial += 1;
            let owner = format!("t{t}.{}-{}", ticker.incarnation, ticker.serial);
            trace.add(&format!("T{owner}@{now};"));
            sh.counts.borrow_mut().ticks += 1;
            ticker.ticks.push(Box::pin(one_tick(
                plan.clone(),
                ticker.coord.clone(),
                index.clone(),
                jobs.clone(),
                ticker.platform.clone(),
                owner,
                sh.clone(),
            )));
        }

        // The operator's next command.
        if op_run.is_none() {
            let resume = resume_due.iter().position(|r| r.is_some_and(|t| t <= now));
            let action = if let Some(j) = resume {
                resume_due[j] = None;
                Some(OpAction::Resume(j))
            } else if calm {
                (!calm_ops.is_empty()).then(|| calm_ops.remove(0))
            } else if chance(&mut rng, cfg.backfill_per_step_ppm) {
                let j = (rng.next_u64() % specs.len() as u64) as usize;
                let to = plus(now, secs(-60 * range(&mut rng, 0, 120)));
                let from = to - scheds[j].period() * range(&mut rng, 0, 3) as i32;
                models[j].operator_sched = scheds[j];
                sh.counts.borrow_mut().backfills += 1;
                Some(OpAction::Backfill(j, from, to))
            } else if chance(&mut rng, cfg.redrive_per_step_ppm) {
                let j = (rng.next_u64() % specs.len() as u64) as usize;
                let dead = models[j].dead_letters();
                if dead.is_empty() {
                    None
                } else {
                    let one = rng.next_u64() % 2 == 0;
                    let slot = one.then(|| dead[(rng.next_u64() % dead.len() as u64) as usize]);
                    sh.counts.borrow_mut().redrives += 1;
                    Some(OpAction::Redrive(j, slot))
                }
            } else if chance(&mut rng, cfg.pause_per_step_ppm) {
                let j = (rng.next_u64() % specs.len() as u64) as usize;
                if resume_due[j].is_none() {
                    // Resumed later whatever the answer: a pause whose
                    // answer was lost may have been applied.
                    resume_due[j] = Some(plus(now, secs(60 * range(&mut rng, 2, 40))));
                    sh.counts.borrow_mut().pauses += 1;
                    Some(OpAction::Pause(j))
                } else {
                    None
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
                trace.add(&format!("P{action:?};"));
                op_run = Some(Box::pin(operate(
                    op_coord.clone(),
                    sh.clone(),
                    action,
                    specs[j].clone(),
                    refusals.clone(),
                )));
            }
        }

        // Poll the ticks: each poll passes at most one await point of each
        // job a tick serves. A ticker process may die at any of them.
        for (t, ticker) in tickers.iter_mut().enumerate() {
            let polls = range(&mut rng, 1, 12);
            'polls: for _ in 0..polls {
                let mut k = 0;
                while k < ticker.ticks.len() {
                    if !calm && chance(&mut rng, cfg.crash_per_poll_ppm) {
                        let lost = ticker.ticks.len() as u64;
                        let incarnation = ticker.incarnation + 1;
                        *ticker = new_ticker(&sh, &store, &mut rng, incarnation);
                        let mut c = sh.counts.borrow_mut();
                        c.ticker_crashes += 1;
                        c.ticks_lost += lost;
                        trace.add(&format!("C{t};"));
                        break 'polls;
                    }
                    if ticker.ticks[k].as_mut().poll(&mut cx).is_ready() {
                        drop(ticker.ticks.swap_remove(k));
                    } else {
                        k += 1;
                    }
                }
            }
        }
        for _ in 0..range(&mut rng, 1, 6) {
            let Some(run) = op_run.as_mut() else { break };
            if !calm && chance(&mut rng, cfg.crash_per_poll_ppm) {
                op_run = None;
                op_coord = Rc::new(CasCoordinator::new(store.clone(), rng.next_u64()));
                trace.add("CO;");
                break;
            }
            if run.as_mut().poll(&mut cx).is_ready() {
                op_run = None;
            }
        }
        violations.append(&mut refusals.borrow_mut());

        // Every write the store applied, in its order: start the model of a
        // job at its record's first write, and read the claims off them.
        let applied = faults
            .borrow_mut()
            .applied
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut claimed: Vec<Event> = Vec::new();
        for w in &applied {
            let Some(&j) = by_name.get(w.job.as_str()) else {
                violations.push(format!("a write to unknown job {}", w.job));
                continue;
            };
            if !started[j] {
                started[j] = true;
                match block_on(raw.get(&names[j])) {
                    Ok(Some(v)) => {
                        let created = JobState::new(
                            &names[j],
                            &specs[j].spec_hash(),
                            v.value.created_at,
                            specs[j].paused,
                        );
                        models[j].start(
                            &created,
                            Applied::of(&names[j], &created),
                            &mut violations,
                        );
                    }
                    other => violations
                        .push(format!("{}: written, then unreadable: {other:?}", names[j])),
                }
            }
            models[j].observe_write(w, &mut violations);
            if w.fence > fences[j] {
                if let Some(lease) = &w.newest {
                    trace.add(&format!("c{j}:{}:{};", lease.fence, lease.slot));
                    claims.insert((j, lease.fence), (lease.slot, lease.attempt));
                    last_claim[j] = Some(lease.claimed_at);
                    claimed.push(Event::Claimed {
                        job: j,
                        lease: Box::new(lease.clone()),
                        effective_now: lease.claimed_at,
                        sched: scheds[j],
                    });
                }
                fences[j] = w.fence;
            }
        }
        // A yielding store applies a write one poll after the fault gate
        // marked the job dirty, so the writes applied name jobs too.
        let mut dirty = std::mem::take(&mut faults.borrow_mut().dirty);
        dirty.extend(applied.iter().map(|w| w.job.clone()));
        for job in &dirty {
            let Some(&j) = by_name.get(job.as_str()) else {
                continue;
            };
            match block_on(raw.get(job)) {
                Ok(Some(v)) => {
                    models[j].observe_record(&v.value, &mut violations);
                    let next = specs[j].schedule.next_after(v.value.cursor);
                    seen[j] = Some(Seen {
                        state: v.value,
                        next,
                    });
                }
                Ok(None) => {}
                Err(e) => violations.push(format!("{job}: unreadable record: {e}")),
            }
        }
        for e in claimed {
            if let Event::Claimed { job, .. } = &e {
                models[*job].observe_event(&e, &mut violations);
            }
        }
        for (job, fence, expires_at) in sh.heartbeats.borrow_mut().drain(..) {
            if let Some(&j) = by_name.get(job.as_str()) {
                models[j].observe_event(
                    &Event::Heartbeat {
                        job: j,
                        fence,
                        expires_at,
                    },
                    &mut violations,
                );
            }
        }
        // Every run the job functions saw was claimed, as that slot and
        // attempt, and no fence ran twice.
        for r in sh.log.borrow_mut().drain(..) {
            let j = by_name[r.job.as_str()];
            trace.add(&format!("r{j}:{}:{};", r.fence, r.attempt));
            if !ran.insert((j, r.fence)) {
                violations.push(format!("{}: fence {} ran twice", r.job, r.fence));
            }
            match claims.get(&(j, r.fence)) {
                Some(&(slot, attempt)) if slot == r.slot && attempt == r.attempt => {}
                other => violations.push(format!(
                    "{}: ran slot {} attempt {} with fence {}, claimed as {other:?}",
                    r.job, r.slot, r.attempt, r.fence
                )),
            }
        }

        // The mark, read without faults: it only moves forward, and every
        // slot it passed is reached by the job's cursor or carried by the
        // wake index (which names the job by that slot) once no lease holds
        // the job: the ticks after the mark plan only later slots, so
        // nothing else brings it back before the job's next slot.
        let start = block_on(raw.tick_start(now, usize::MAX)).expect("a fault-free read");
        if let Some(m) = start.mark {
            if mark.is_some_and(|old| m < old) {
                violations.push(format!("the tick mark moved backwards: {mark:?} -> {m}"));
            }
            if mark != Some(m) {
                sh.counts.borrow_mut().marks_seen += 1;
                trace.add(&format!("M{m};"));
            }
            mark = Some(m);
            let origin = *first_mark.get_or_insert(m);
            for (j, spec) in specs.iter().enumerate() {
                let next = match &seen[j] {
                    // While a lease is live, a tick finds the job busy and
                    // leaves its slot to the lease's end (the write that
                    // ends it, or its expiry), which is judged then.
                    Some(s) if !s.state.leases.is_empty() => continue,
                    Some(s) => s.next,
                    None if started[j] => continue,
                    None => spec.schedule.next_after(origin),
                };
                let Some(next) = next.filter(|n| *n <= m) else {
                    continue;
                };
                let woken = block_on(raw.tick_start(next, usize::MAX))
                    .expect("a fault-free read")
                    .woken;
                if !woken.contains(&names[j]) {
                    violations.push(format!(
                        "{}: the tick mark {m} passed its slot {next}, which its record has not reached \
                         (cursor {:?}), and the wake index does not name the job by then (its record's \
                         wake: {:?})",
                        names[j],
                        seen[j].as_ref().map(|s| s.state.cursor),
                        seen[j].as_ref().and_then(|s| s.state.wake_at),
                    ));
                }
            }
        }

        // Once calm, what the index must carry is served by the second
        // tick after its time: a waiting run and an expired lease. Waiting
        // runs go one at a time under forbid (a redrive of twenty dead
        // letters takes twenty claims), so a job waits too long when two
        // ticks passed since the earliest of them came due and since the
        // job's last claim, with no lease holding it busy. Ticks are judged
        // by the instant they planned up to, less the clocks' skew.
        if let Some(since) = calm_since {
            let done = sh.done.borrow();
            let ticks_after = |at: Timestamp| {
                let at = plus(at.max(since), secs(5));
                done.iter()
                    .filter(|d| !d.start_error && d.now >= at)
                    .count()
            };
            for (j, s) in seen.iter().enumerate() {
                let Some(s) = s else { continue };
                let st = &s.state;
                for p in &st.pending {
                    waits_watched.insert((j, p.slot, p.attempt));
                }
                let first = st.pending.iter().min_by_key(|p| p.not_before);
                if let Some(p) = first.filter(|_| st.leases.is_empty() && !st.paused) {
                    let from = last_claim[j].map_or(p.not_before, |c| c.max(p.not_before));
                    if ticks_after(from) >= 2 {
                        violations.push(format!(
                            "{}: slot {} waits (attempt {}, not before {}, the job's last claim at {:?}) \
                             after two calm ticks",
                            names[j], p.slot, p.attempt, p.not_before, last_claim[j]
                        ));
                    }
                }
                for l in &st.leases {
                    let margin = SignedDuration::try_from(specs[j].skew_margin).unwrap_or_default();
                    let expired = plus(plus(l.expires_at, margin), secs(1));
                    if expired <= now {
                        expiries_watched.insert((j, l.fence));
                    }
                    if ticks_after(expired) >= 2 {
                        violations.push(format!(
                            "{}: the lease of slot {} (fence {}) expired at {} and is still held after two calm ticks",
                            names[j], l.slot, l.fence, l.expires_at
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

    // The end: nothing stuck, every slot one fate.
    let end = sh.clock.get();
    let mut fated = 0;
    if violations.is_empty() {
        let checker = CasCoordinator::new(raw.clone(), 1);
        for (j, spec) in specs.iter().enumerate() {
            let job = names[j].as_str();
            let deadline = SignedDuration::try_from(spec.starting_deadline).unwrap_or_default();
            let last_due = scheds[j].slot_at_or_before(plus(end, -deadline));
            let Some(stored) = block_on(raw.get(job)).expect("a fault-free read") else {
                let first = spec.schedule.next_after(first_mark.unwrap_or(end));
                if first.is_some_and(|f| f <= last_due) {
                    violations.push(format!(
                        "{job}: no record, though its slot {first:?} is long due"
                    ));
                }
                continue;
            };
            let st = &stored.value;
            for l in &st.leases {
                violations.push(format!(
                    "{job}: still holds a lease of slot {} (fence {}) at {end}",
                    l.slot, l.fence
                ));
            }
            for p in st.pending.iter().filter(|p| p.not_before <= end) {
                violations.push(format!(
                    "{job}: slot {} still waits (not before {}) at {end}",
                    p.slot, p.not_before
                ));
            }
            if last_due > st.created_at && st.cursor < last_due {
                violations.push(format!(
                    "{job}: the cursor {} is short of {last_due}, its last slot older than the starting deadline at {end}",
                    st.cursor
                ));
            }
            let stuck_after = deadline
                + SignedDuration::try_from(spec.lease + spec.skew_margin + spec.retry.max_backoff)
                    .unwrap_or_default()
                + secs(3 * 60);
            match block_on(checker.status(spec, end)) {
                Ok(state) => {
                    fated += models[j].check_end(&state, end, stuck_after, &mut violations)
                }
                Err(e) => violations.push(format!("{job}: status failed: {e}")),
            }
        }
    }

    let mut r = sh.counts.borrow().clone();
    for d in sh.done.borrow().iter() {
        r.ticks_finished += 1;
        r.tick_start_errors += u64::from(d.start_error);
        r.tick_end_unavailable += u64::from(d.end_error == Some(StoreErrorKind::Unavailable));
        r.tick_end_ambiguous += u64::from(d.end_error == Some(StoreErrorKind::Ambiguous));
        r.planned_served += d.planned;
        r.woken_served += d.woken;
        r.woken_ran += d.woken_ran;
    }
    r.slots = due_total;
    r.fated_slots = fated;
    r.steps = step;
    r.virtual_secs = (end - t0).as_secs();
    r.store = faults.borrow().counts.clone();
    r.succeeded = models.iter().map(|m| m.succeeded_total).sum();
    r.dead = models.iter().map(|m| m.dead_total).sum();
    r.backfilled_slots = models.iter().map(|m| m.backfill.queued).sum();
    r.redriven_slots = models.iter().map(|m| m.redrive.queued).sum();
    r.writes_checked = models.iter().map(|m| m.writes_seen).sum();
    r.calm_waits_watched = waits_watched.len() as u64;
    r.calm_expiries_watched = expiries_watched.len() as u64;
    r.trace_hash = trace.0;
    r.violations = violations;
    TICK_SIM.with(|s| *s.borrow_mut() = None);
    r
}
