//! One worker: a loop that claims due slots and runs each claimed lease in
//! a task of its own, on one thread (a current-thread runtime and a
//! `LocalSet`: the core's futures are not `Send`).
//!
//! Each round is a tick (docs/design.md §11): the store's tick mark and
//! wake index, and the manifest's slots since the mark, say which jobs to
//! claim; no other job's record is read. The coordinator decides
//! everything about slots (which is due, overlap, catch-up, retries); the
//! worker claims each of those jobs until told it is idle, moves the mark,
//! and sleeps until the next whole minute (when slots fall), the earliest
//! instant a claim told it about (a retry), the store's wake signal (a
//! write somewhere made a record due now: an enqueued keyed run, a
//! trigger), a short poll (for what other workers and processes change,
//! and the safety net under the signal), or a stop request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, EffectLedger, Idle, Lease, SlotId, StateStore, TickIndex,
    Trigger, decide, format_instant,
};
use cronslot_core::manifest::{JobSpec, JobTemplate};
use cronslot_runtime::command::CommandRequest;
use cronslot_runtime::http::{HttpFailure, HttpRequest, HttpResponse};
use cronslot_runtime::{
    JobError, Jobs, LocalFuture, Outcome, Platform, PlatformDeadline, RunEvent, TickJob, TickPlan,
    TickServer, TickWork, WokenSchedule, resolve_with, run_lease, tick_with,
};
use jiff::{SignedDuration, Timestamp};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;

use crate::clock::{Clock, add};
use crate::log::emit_run;
use crate::platform::LocalPlatform;
use crate::summary::Tally;
pub(crate) use crate::watch::{Stop, Watch};
use cronslot_sqlite::SqliteStore;

/// The coordinator every worker of the local runner uses on its default
/// store.
pub type LocalCoordinator = CasCoordinator<SqliteStore>;

/// How often (clock time) a worker looks again at jobs whose next event it
/// cannot know: a slot held by another worker's run, a paused job, a retry
/// or a backfill queued by someone else.
const POLL: Duration = Duration::from_secs(5);

/// The shortest real pause between polls, so that a very fast clock does
/// not turn polling into spinning.
const MIN_REAL_POLL: Duration = Duration::from_millis(5);

/// Claims one job may take in one round (an `allow` job takes up to its
/// `max_concurrency`); a bound so that a bug cannot loop forever.
const MAX_CLAIMS_PER_ROUND: usize = 128;

/// Between tries of a store operation that failed (clock time).
const STORE_RETRY: Duration = Duration::from_secs(5);

/// The shortest real pause before a failed claim is tried again.
const MIN_REAL_STORE_RETRY: Duration = Duration::from_millis(250);

/// Jobs a worker claims at once within a tick (each claim is a round
/// trip to the store; distinct jobs' records do not contend, so their
/// claims overlap rather than queue). Bounded so that a tick of a
/// thousand woken runs does not open a thousand requests at once.
const CLAIMS_AT_ONCE: usize = 16;

/// Slots fall on whole minutes: a worker wakes at each, so that a slot
/// starts on time whatever the poll.
const MINUTE: i64 = 60;

/// A store the runner's workers share: the state store, the effect ledger
/// and the tick index, used from several threads at once (each worker
/// thread runs its own current-thread tokio runtime). SQLite, PostgreSQL,
/// Redis and DynamoDB are such stores, and so is `cronslot-stores`'s
/// `AnyStore`; anything that implements the core's store traits and is
/// `Clone + Send + Sync` is one.
pub trait RunnerStore:
    StateStore + EffectLedger + TickIndex + Clone + Send + Sync + 'static
{
}

impl<S: StateStore + EffectLedger + TickIndex + Clone + Send + Sync + 'static> RunnerStore for S {}

/// What every worker of a runner shares.
pub(crate) struct Shared<S> {
    pub specs: Vec<JobSpec>,
    /// The dynamic jobs, whose schedules the store holds.
    pub templates: Vec<JobTemplate>,
    pub jobs: Jobs,
    pub clock: Clock,
    pub store: S,
    pub until: Option<Timestamp>,
    /// One pass (`cronslot tick`): claim what is due once, run it, end.
    pub single_pass: bool,
    pub watch: Arc<Watch>,
    /// The store's wake signal, forwarded by the runner's thread: one
    /// waiting worker ticks per wake (a wake during a tick is kept for the
    /// next waiter).
    pub poke: Notify,
    /// Competing workers in this process.
    pub workers: u32,
    /// The runs going on in this process, and their bound.
    pub running: Arc<Running>,
}

/// The bound on the runs going on in a process, over all its workers
/// ([`crate::Runner::max_running`]), and on the leases it holds
/// ([`crate::Runner::claim_ahead`]). A place is taken before a claim (a
/// tick reserves every free one) and held by the run until its work ends
/// (or its task, however it ends); the places a tick did not use go back.
/// So the bound holds however many workers tick at once.
///
/// There are more places than runs at once: the rest are leases claimed
/// ahead, each waiting for a turn ([`Running::turns`]) to start its work.
/// A run that ends hands its turn straight to the oldest waiting lease,
/// so the next run starts without a round trip to the store, while the
/// worker claims another lease ahead.
pub(crate) struct Running {
    /// Places: runs at once plus leases claimed ahead.
    limit: Option<usize>,
    /// Places taken: by runs going on, by leases waiting for a turn, and
    /// by ticks' reservations.
    taken: AtomicUsize,
    /// One permit per run at once; a bounded run holds one from the start
    /// of its work to its end. Fair: the longest waiting lease goes first.
    turns: Option<Arc<Semaphore>>,
}

impl Running {
    /// At most `limit` runs at once (none: unbounded), and `ahead` more
    /// leases claimed, waiting for a turn.
    pub(crate) fn new(limit: Option<u32>, ahead: u32) -> Running {
        Running {
            limit: limit.map(|n| n as usize + ahead as usize),
            taken: AtomicUsize::new(0),
            turns: limit.map(|n| Arc::new(Semaphore::new(n as usize))),
        }
    }

    /// Takes every free place (`None`: no bound, nothing to take).
    fn reserve(&self) -> Option<usize> {
        let limit = self.limit?;
        let mut taken = self.taken.load(Ordering::SeqCst);
        loop {
            let free = limit.saturating_sub(taken);
            match self.taken.compare_exchange(
                taken,
                taken + free,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(free),
                Err(now) => taken = now,
            }
        }
    }

    /// Gives back places a tick reserved and did not use.
    fn release(&self, places: usize) {
        if self.limit.is_some() && places > 0 {
            self.taken.fetch_sub(places, Ordering::SeqCst);
        }
    }

    /// Whether a place is free now (a hint: a tick reserves before it
    /// claims).
    fn full(&self) -> bool {
        self.limit
            .is_some_and(|l| self.taken.load(Ordering::SeqCst) >= l)
    }
}

/// A run's place, reserved by its tick, given back when the run's work
/// ends, or else when its task ends (however it ends); with its turn, once
/// it has one.
struct Place {
    running: Arc<Running>,
    turn: Option<OwnedSemaphorePermit>,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.running.release(1);
    }
}

/// The platform one run sees: its worker's, and the run's place in the
/// process's bound, given back as soon as the run's work has ended
/// ([`RunEvent::WorkEnded`]), before its outcome is written. The bound is
/// on jobs' work at once; the outcome's write (one round trip) then
/// overlaps the next run's claim instead of delaying it, and the worker
/// is told at once that a place is free.
struct RunPlatform<S: RunnerStore> {
    worker: Rc<Worker<S>>,
    place: RefCell<Option<Place>>,
}

impl<S: RunnerStore> Platform for RunPlatform<S> {
    fn name(&self) -> &'static str {
        self.worker.platform.name()
    }

    fn now(&self) -> Timestamp {
        self.worker.platform.now()
    }

    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()> {
        self.worker.platform.sleep(duration)
    }

    fn deadline(&self) -> Option<PlatformDeadline> {
        self.worker.platform.deadline()
    }

    fn stop_now(&self) -> LocalFuture<'static, ()> {
        self.worker.platform.stop_now()
    }

    fn observe(&self, event: &RunEvent<'_>) {
        self.worker.platform.observe(event);
        if matches!(event, RunEvent::WorkEnded { .. }) && self.place.borrow_mut().take().is_some() {
            self.worker.wake.notify_one();
        }
    }

    fn send_http(
        &self,
        request: HttpRequest,
    ) -> LocalFuture<'static, Result<HttpResponse, HttpFailure>> {
        self.worker.platform.send_http(request)
    }

    fn runs_commands(&self) -> bool {
        self.worker.platform.runs_commands()
    }

    fn run_command(
        &self,
        command: CommandRequest,
    ) -> LocalFuture<'static, Result<Option<String>, JobError>> {
        self.worker.platform.run_command(command)
    }
}

/// The places a tick reserved, handed out to its claims.
struct Reserved {
    /// `None`: no bound.
    left: std::cell::Cell<Option<usize>>,
}

impl Reserved {
    /// Whether another claim may be made.
    fn any(&self) -> bool {
        self.left.get() != Some(0)
    }

    /// One place for a lease just claimed (whether it is bounded).
    fn take(&self) -> bool {
        match self.left.get() {
            Some(n) => {
                self.left.set(Some(n.saturating_sub(1)));
                true
            }
            None => false,
        }
    }
}

impl<S> Shared<S> {
    pub(crate) fn tally(&self) -> MutexGuard<'_, Tally> {
        self.watch.tally()
    }
}

pub(crate) struct Worker<S: RunnerStore> {
    /// From 1.
    number: u32,
    owner: String,
    coordinator: Rc<CasCoordinator<S>>,
    plan: TickPlan,
    shared: Arc<Shared<S>>,
    platform: Rc<dyn Platform>,
    /// A run of this worker ended: look again at once (its job may have a
    /// retry or a waiting slot now).
    wake: Notify,
    /// The earliest wake a record this worker wrote holds (a retry's time):
    /// the loop sleeps no longer than that, so a retry starts on time
    /// rather than at the next poll.
    soonest: std::cell::Cell<Option<Timestamp>>,
    stop: watch::Receiver<Stop>,
}

impl<S: RunnerStore> Worker<S> {
    pub(crate) fn new(
        number: u32,
        owner: String,
        seed: u64,
        shared: Arc<Shared<S>>,
        stop: watch::Receiver<Stop>,
    ) -> Worker<S> {
        let platform = LocalPlatform::for_worker(shared.clock.clone(), stop.clone())
            .watched_by(Arc::clone(&shared.watch));
        Worker {
            number,
            owner,
            coordinator: Rc::new(CasCoordinator::new(shared.store.clone(), seed)),
            plan: TickPlan::new(shared.specs.iter().cloned().map(Rc::new).collect(), |_| {
                true
            })
            .with_templates(shared.templates.iter().cloned().map(Rc::new).collect()),
            shared,
            platform: Rc::new(platform),
            wake: Notify::new(),
            soonest: std::cell::Cell::new(None),
            stop,
        }
    }

    fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    fn stopping(&self) -> bool {
        *self.stop.borrow() != Stop::Running
    }

    /// The worker's loop; returns when told to stop or at `until`, after
    /// its running jobs have finished.
    pub(crate) async fn run(self: Rc<Self>) {
        let mut runs = JoinSet::new();
        // Per job: the next slot the coordinator told us of, to notice when
        // another worker takes it.
        let mut expected: HashMap<String, Timestamp> = HashMap::new();
        let mut stop = self.stop.clone();
        let mut stop_open = true;
        let health = &self.shared.watch.health;
        loop {
            health.progress(self.number);
            let now = self.clock().now();
            if self.stopping() || self.shared.until.is_some_and(|u| now >= u) {
                break;
            }
            let poll = POLL.max(self.clock_time_of(MIN_REAL_POLL));
            let mut wake_at = add(now, poll).min(next_minute(now));
            if let Some(t) = self.tick(&mut runs, &mut expected).await {
                wake_at = wake_at.min(t);
            }
            if let Some(t) = self.soonest.take().filter(|t| *t > now) {
                wake_at = wake_at.min(t);
            }
            if let Some(until) = self.shared.until {
                wake_at = wake_at.min(until);
            }
            while let Some(done) = runs.try_join_next() {
                self.note_task_end(done);
            }
            if self.shared.single_pass {
                break;
            }
            tokio::select! {
                () = self.clock().sleep_until(wake_at) => {}
                () = self.wake.notified() => {}
                () = self.shared.poke.notified() => {}
                changed = stop.changed(), if stop_open => stop_open = changed.is_ok(),
            }
        }
        tracing::debug!(owner = %self.owner, running = runs.len(), "worker stopping");
        while let Some(done) = runs.join_next().await {
            self.note_task_end(done);
        }
        health.ended(self.number);
    }

    fn clock_time_of(&self, real: Duration) -> Duration {
        Duration::try_from_secs_f64(real.as_secs_f64() * self.clock().speed()).unwrap_or(POLL)
    }

    fn note_task_end(&self, done: Result<(), tokio::task::JoinError>) {
        if let Err(e) = done {
            // Run tasks catch their jobs' panics; this would be our bug.
            tracing::error!(owner = %self.owner, error = %e, "a run task ended abnormally");
        }
    }

    /// One tick, the runtime's (the same on every platform): the store's
    /// mark and woken jobs, the manifest's slots since the mark; claims each
    /// of those jobs in turn (their runs go on in tasks of their own), then
    /// moves the mark past every slot whose job was served. Returns when to
    /// look again, if sooner than the poll.
    async fn tick(
        self: &Rc<Self>,
        runs: &mut JoinSet<()>,
        expected: &mut HashMap<String, Timestamp>,
    ) -> Option<Timestamp> {
        let room = self.shared.running.reserve();
        if room == Some(0) {
            // As many runs as the process allows are going on: the store
            // keeps what is due (for this process's next tick, when a run
            // ends, or another process's).
            return None;
        }
        let platform = LocalPlatform::new(self.clock().clone());
        let runs_before = runs.len();
        let reserved = Reserved {
            left: std::cell::Cell::new(room),
        };
        let mut server = RunnerTick {
            worker: self,
            runs: RefCell::new(runs),
            expected: RefCell::new(expected),
            reserved: &reserved,
        };
        // No bound on the jobs the tick serves: the places bound the claims
        // (`RunnerTick::serve`), and the woken records read
        // (`RunnerTick::woken_wanted`).
        let report = tick_with(
            &self.plan,
            self.coordinator.store(),
            &platform,
            None,
            &mut server,
        )
        .await;
        self.shared
            .running
            .release(reserved.left.get().unwrap_or(0));
        let report = match report {
            Ok(report) => report,
            Err(e) => {
                self.shared.watch.health.store_failed(&e.to_string());
                self.shared.tally().store_error();
                tracing::warn!(owner = %self.owner, error = %e,
                    "cannot read the tick mark; trying again at the next tick");
                let pause = STORE_RETRY.max(self.clock_time_of(MIN_REAL_STORE_RETRY));
                return Some(add(self.clock().now(), pause));
            }
        };
        if let Some(e) = &report.mark_error {
            // The next tick plans a longer window: the same jobs again,
            // which the store answers as already claimed. Nothing is lost.
            tracing::warn!(owner = %self.owner, error = %e, "cannot move the tick mark");
        }
        // Beyond this process's bound on runs: a later tick's.
        let left = report.schedules_left;
        for (schedule, why) in &report.unresolved {
            // It keeps its wake: the next tick reads it again.
            tracing::warn!(owner = %self.owner, schedule = %schedule, error = %why,
                "cannot serve a woken schedule");
        }
        // The index's next wake too: a jittered start or a retry's time
        // comes with no write to announce it. Counted from the instant the
        // store judged the tick at, so that a store whose clock is behind
        // this one's is not asked again and again until it catches up.
        let index_wake = report.work.next_wake.map(|t| {
            let delay = t
                .duration_since(report.work.now)
                .max(SignedDuration::from_millis(1));
            self.clock().now().checked_add(delay).unwrap_or(t)
        });
        let next = report
            .served
            .iter()
            .filter_map(|(next, _)| *next)
            .chain(index_wake)
            .min();
        let started = runs.len() > runs_before;
        if report.work.took_all_it_could() || (left > 0 && started && !self.shared.running.full()) {
            // The index may hold more due jobs than one tick takes, or
            // this tick left some and started runs, and more may start:
            // look again at once rather than at the poll. (Left for want
            // of room, they wait for a run's end, which wakes the worker;
            // a tick that started nothing waits too, or woken records
            // that cannot be claimed would be read again and again.)
            return Some(self.clock().now());
        }
        next
    }

    /// Claims every due slot of one job; returns when to look again, and
    /// whether a claim failed on the store.
    async fn claim_due(
        self: &Rc<Self>,
        tick_job: &TickJob,
        runs: &RefCell<&mut JoinSet<()>>,
        expected: &RefCell<&mut HashMap<String, Timestamp>>,
        reserved: &Reserved,
    ) -> (Option<Timestamp>, bool) {
        let spec = &tick_job.spec;
        // The record's name: a schedule's (`job/key`) is not its job's.
        let record_name = spec.record_name();
        let job = record_name.as_ref();
        let mut trigger = tick_job.trigger();
        let mut failed = false;
        let now = self.clock().now();
        let due = expected.borrow().get(job).copied().filter(|s| *s <= now);
        let mut got_due = false;
        let mut wake = None;
        for round in 0..MAX_CLAIMS_PER_ROUND {
            // The tick's bound let this job in, but the places it reserved
            // may have gone to other jobs' claims (a job can take several
            // leases: catch-up, an `allow` job): without one, it waits for
            // the next tick like any due run.
            if !reserved.any() {
                if round == 0 {
                    // Its slot stays due: the mark is held for it.
                    failed = true;
                }
                break;
            }
            self.shared.watch.health.progress(self.number);
            let claim = self
                .coordinator
                .claim(spec, self.clock().now(), trigger, &self.owner)
                .await;
            trigger = Trigger::Tick;
            match claim {
                Ok(Claim::Claimed(lease)) => {
                    self.shared.watch.health.store_ok();
                    got_due |= Some(lease.slot) == due;
                    let bounded = reserved.take();
                    self.start_run(spec, lease, bounded, &mut runs.borrow_mut());
                    // The record this claim wrote says whether another
                    // claim could find anything: if not, that claim (a read)
                    // is saved. A run is then one read and two writes.
                    let more = self.coordinator.known(job).is_none_or(|record| {
                        decide::more_due(spec, &record.value, self.clock().now())
                    });
                    if !more {
                        break;
                    }
                }
                Ok(Claim::Idle(idle)) => {
                    self.shared.watch.health.store_ok();
                    wake = self.note_idle(job, idle, &mut expected.borrow_mut());
                    break;
                }
                Err(e) => {
                    self.shared.watch.health.store_failed(&e.to_string());
                    self.shared.tally().store_error();
                    tracing::warn!(job, owner = %self.owner, error = %e,
                        "claim failed; trying again at the next tick");
                    // At least a quarter of a real second: a store that is
                    // down must not be hammered (nor the log flooded) by a
                    // fast clock.
                    let pause = STORE_RETRY.max(self.clock_time_of(MIN_REAL_STORE_RETRY));
                    wake = Some(add(self.clock().now(), pause));
                    failed = true;
                    break;
                }
            }
        }
        if let Some(slot) = due {
            let mut expected = expected.borrow_mut();
            if expected.get(job) == Some(&slot) {
                expected.remove(job);
            }
            if !got_due {
                tracing::debug!(job, slot = %SlotId::new(spec, slot), owner = %self.owner,
                    "the slot went to another claimer");
                self.shared.tally().lost(job, slot, &self.owner);
            }
        }
        (wake, failed)
    }

    fn note_idle(
        &self,
        job: &str,
        idle: Idle,
        expected: &mut HashMap<String, Timestamp>,
    ) -> Option<Timestamp> {
        match idle {
            Idle::NothingDue {
                next_slot,
                next_retry,
            } => {
                if let Some(slot) = next_slot {
                    expected.insert(job.to_string(), slot);
                }
                match (next_slot, next_retry) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            Idle::RetryLater { not_before, .. } => Some(not_before),
            Idle::InProgress { .. } | Idle::AlreadyResolved { .. } => {
                self.shared.tally().refused();
                tracing::debug!(job, owner = %self.owner, "duplicate refused: {idle:?}");
                None
            }
            // Another run holds the job, it is paused, or (dedicated
            // triggers only) not due: nothing to wait for but the poll.
            Idle::Busy { .. } | Idle::Paused | Idle::NotYetDue { .. } => None,
            // A reason newer than this runner: the poll too.
            _ => None,
        }
    }

    /// Starts a claimed lease's run in a task of its own; `bounded`: it
    /// holds one of the process's places, given back when the task ends.
    fn start_run(
        self: &Rc<Self>,
        spec: &Rc<JobSpec>,
        lease: Lease,
        bounded: bool,
        runs: &mut JoinSet<()>,
    ) {
        let record_name = spec.record_name();
        let job = record_name.as_ref();
        if let Some(slot) = self.shared.tally().claimed(job, &lease) {
            tracing::error!(job, slot = %slot, owner = %self.owner, fence = lease.fence,
                "slot claimed while it is running or after it succeeded: it runs more than once");
        }
        tracing::debug!(job, slot = %SlotId::new(spec, lease.slot), owner = %self.owner,
            fence = lease.fence, attempt = lease.attempt, "claimed");
        let running = bounded.then(|| Arc::clone(&self.shared.running));
        runs.spawn_local(Rc::clone(self).run_claimed(Rc::clone(spec), lease, running));
    }

    /// Runs a claimed lease: at once when it is unbounded, or once it has
    /// a turn (a lease claimed ahead waits for a run to end).
    async fn run_claimed(
        self: Rc<Self>,
        spec: Rc<JobSpec>,
        mut lease: Lease,
        running: Option<Arc<Running>>,
    ) {
        let place = match running {
            None => None,
            Some(running) => {
                let turns = running.turns.clone();
                // Held from here, so that it goes back however this ends.
                let mut place = Place {
                    running,
                    turn: None,
                };
                if let Some(turns) = turns {
                    match self.await_turn(&spec, &mut lease, turns).await {
                        Some(turn) => place.turn = Some(turn),
                        None => {
                            drop(place);
                            self.wake.notify_one();
                            return;
                        }
                    }
                }
                Some(place)
            }
        };
        let platform: Rc<dyn Platform> = Rc::new(RunPlatform {
            worker: Rc::clone(&self),
            place: RefCell::new(place),
        });
        self.run_lease(spec, lease, platform).await;
    }

    /// A lease claimed ahead waits here for a turn. It is kept alive while
    /// it waits: half-way through it, a heartbeat extends it, so a lease
    /// that waits behind long runs is neither lost to its expiry (which
    /// would cost its slot an attempt) nor started by two. `None`: the
    /// lease was lost (its heartbeat refused, or the store unreachable
    /// until it ran out); its slot is another claimer's, as after a crash.
    async fn await_turn(
        &self,
        spec: &JobSpec,
        lease: &mut Lease,
        turns: Arc<Semaphore>,
    ) -> Option<OwnedSemaphorePermit> {
        let half = SignedDuration::try_from(spec.lease / 2).unwrap_or(SignedDuration::ZERO);
        let half_way = |lease: &Lease| {
            lease
                .expires_at
                .checked_sub(half)
                .unwrap_or(lease.expires_at)
        };
        let mut turn = std::pin::pin!(turns.acquire_owned());
        let mut beat_at = half_way(lease);
        loop {
            tokio::select! {
                biased;
                // The semaphore is never closed.
                turn = &mut turn => return turn.ok(),
                () = self.clock().sleep_until(beat_at) => {}
            }
            let now = self.clock().now();
            let record_name = spec.record_name();
            match self.coordinator.heartbeat(spec, lease.fence, now).await {
                Ok(expires_at) => {
                    lease.expires_at = expires_at;
                    beat_at = half_way(lease);
                }
                Err(e) if e.is_transient() && now < lease.expires_at => {
                    self.shared.tally().store_error();
                    tracing::warn!(job = %record_name, fence = lease.fence, error = %e,
                        "extending a lease claimed ahead failed; trying again");
                    let pause = STORE_RETRY.max(self.clock_time_of(MIN_REAL_STORE_RETRY));
                    beat_at = add(now, pause).min(lease.expires_at);
                }
                Err(e) => {
                    tracing::warn!(job = %record_name, slot = %SlotId::new(spec, lease.slot),
                        owner = %self.owner, fence = lease.fence, error = %e,
                        "a lease claimed ahead was lost while it waited for a turn: its slot is left to another claimer");
                    let mut tally = self.shared.tally();
                    tally.work_ended(&record_name, lease.slot);
                    tally.finished(&record_name, lease, Outcome::LeaseLost, now);
                    return None;
                }
            }
        }
    }

    /// Runs one lease to its end (the runtime's run loop), records the
    /// outcome, logs the run's line and counts it.
    async fn run_lease(
        self: Rc<Self>,
        spec: Rc<JobSpec>,
        lease: Lease,
        platform: Rc<dyn Platform>,
    ) {
        let report = run_lease(
            &self.coordinator,
            &spec,
            lease.clone(),
            &self.shared.jobs,
            &platform,
        )
        .await;
        // The run's place, if its work never ended (it is freed here).
        drop(platform);
        emit_run(&report);
        let record_name = spec.record_name();
        let twice =
            self.shared
                .tally()
                .finished(&record_name, &lease, report.outcome, report.ended);
        if let Some(slot) = twice {
            tracing::error!(slot = %slot, owner = %self.owner, "slot succeeded twice");
        }
        let wake = self
            .coordinator
            .known(&record_name)
            .and_then(|record| record.value.wake_at);
        if let Some(t) = wake {
            self.soonest
                .set(Some(self.soonest.get().map_or(t, |s| s.min(t))));
        }
        self.wake.notify_one();
    }
}

/// The first whole minute after `now`.
fn next_minute(now: Timestamp) -> Timestamp {
    let next = (now.as_second().div_euclid(MINUTE) + 1) * MINUTE;
    Timestamp::from_second(next).unwrap_or(now)
}

/// A store whose mark is ahead of this clock has planned slots this clock
/// has not reached: they wait until it does. Said once per process, or a
/// demo run twice on one store looks idle for no reason.
fn warn_ahead_once(mark: Timestamp, now: Timestamp) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            planned_until = %format_instant(mark),
            now = %format_instant(now),
            "the store's ticks have planned slots up to an instant this clock has not reached \
             (a faster clock used it before): those slots wait until the clock gets there"
        );
    });
}

/// How a worker serves a tick: every job is admitted; each is claimed in
/// turn until it is idle, and each lease claimed runs in a task of its own.
/// A job's answer is when to look again and whether its claim failed.
struct RunnerTick<'a, S: RunnerStore> {
    worker: &'a Rc<Worker<S>>,
    runs: RefCell<&'a mut JoinSet<()>>,
    expected: RefCell<&'a mut HashMap<String, Timestamp>>,
    reserved: &'a Reserved,
}

impl<S: RunnerStore> TickServer for RunnerTick<'_, S> {
    type Served = (Option<Timestamp>, bool);
    type Refusal = std::convert::Infallible;

    fn admit(&self, _job: &TickJob) -> Result<(), Self::Refusal> {
        Ok(())
    }

    async fn serve(
        &mut self,
        work: &TickWork,
        jobs: &[&TickJob],
    ) -> Vec<(Option<Timestamp>, bool)> {
        let worker = self.worker;
        worker.shared.watch.health.store_ok();
        if let Some(mark) = work.start_mark.filter(|m| *m > work.now) {
            warn_ahead_once(mark, work.now);
        }
        // Claims go out a chunk at a time, no more at once than the places
        // left: a claim that finds its slot taken (another process's)
        // takes no place, so the jobs after it still get theirs. (A bound
        // on the jobs a tick serves would let the same first jobs, already
        // served elsewhere, use it up tick after tick, and starve the
        // jobs behind them.)
        let mut answers = Vec::with_capacity(jobs.len());
        let mut rest = jobs;
        while !rest.is_empty() {
            let at_once = match self.reserved.left.get() {
                None => CLAIMS_AT_ONCE,
                Some(0) => break,
                Some(places) => places.min(CLAIMS_AT_ONCE),
            };
            let (chunk, after) = rest.split_at(at_once.min(rest.len()));
            rest = after;
            for job in chunk {
                if let Some(slot) = job.planned {
                    self.expected
                        .borrow_mut()
                        .insert(job.spec.record_name().into_owned(), slot);
                }
            }
            let before = worker.coordinator.conflicts();
            let claims = chunk
                .iter()
                .map(|job| worker.claim_due(job, &self.runs, &self.expected, self.reserved))
                .collect();
            answers.extend(join_all(claims).await);
            let conflicts = worker.coordinator.conflicts().saturating_sub(before);
            if conflicts > 0 {
                worker.shared.tally().claim_conflicts(conflicts);
            }
        }
        // No place was left for these: their slots stay due, and the mark
        // is held for them (a claim that did not happen counts as failed).
        answers.extend(rest.iter().map(|_| (None, true)));
        answers
    }

    /// With a bound on runs, enough for every worker's share of the free
    /// places, twice over (some are held by others' claims).
    fn woken_wanted(&self) -> Option<usize> {
        let workers = self.worker.shared.workers.max(1) as usize;
        self.reserved
            .left
            .get()
            .map(|places| places.saturating_mul(workers).saturating_mul(2))
    }

    /// Each worker of the process starts at its own share of the woken
    /// records: with a bound on runs, each takes a different few rather
    /// than all the same first ones.
    fn order_woken(&self, woken: &mut [WokenSchedule]) {
        let workers = self.worker.shared.workers.max(1) as usize;
        if woken.len() > 1 && workers > 1 {
            let share = (self.worker.number as usize - 1) * woken.len() / workers;
            woken.rotate_left(share);
        }
    }

    fn claim_failed(served: &(Option<Timestamp>, bool)) -> bool {
        served.1
    }

    async fn resolve(
        &self,
        woken: &WokenSchedule,
        now: Timestamp,
    ) -> Result<Option<Rc<JobSpec>>, String> {
        resolve_with(&*self.worker.coordinator, woken, now).await
    }
}
