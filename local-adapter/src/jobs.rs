//! Jobs written in Rust: async functions registered by name, and the
//! context each run receives.
//!
//! A registered function gets an owned [`JobCtx`] (not a borrow), so that
//! `|ctx| async move { … }` compiles without higher-ranked lifetimes. The
//! context wraps the core's [`JobContext`]: slot identity, fence, attempt,
//! lease deadline, checkpoints and the effect ledger.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use cronslot_core::coord::{
    CasCoordinator, CoordError, Coordinator, EffectError, JobContext, Lease, SlotId,
};
use cronslot_core::manifest::JobSpec;
use jiff::Timestamp;

use crate::SqliteStore;
use crate::clock::Clock;

/// The coordinator every worker of the local runner uses.
pub type LocalCoordinator = CasCoordinator<SqliteStore>;

pub use cronslot_core::coord::{JobError, JobResult};

type BoxedRun = Pin<Box<dyn Future<Output = JobResult>>>;
type JobFn = dyn Fn(JobCtx) -> BoxedRun + Send + Sync;

/// One registered function and its time limit.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) run: Arc<JobFn>,
    /// `None`: the job's lease.
    pub(crate) timeout: Option<Duration>,
}

/// The Rust functions a runner can run, by job name. Jobs of the manifest
/// with neither `command` nor `http` run the function registered under
/// their name.
///
/// The functions are shared by every worker thread (hence `Send + Sync`);
/// the futures they return run on one worker's thread and need not be
/// `Send`.
#[derive(Clone, Default)]
pub struct Jobs {
    registered: BTreeMap<String, Registered>,
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.registered.keys()).finish()
    }
}

impl Jobs {
    pub fn new() -> Jobs {
        Jobs::default()
    }

    /// Registers `run` for the job `name`. A run may take at most the job's
    /// lease (clock time); past it the run is stopped and counted as a
    /// transient failure. Registering a name again replaces the function.
    pub fn register<F, Fut>(self, name: &str, run: F) -> Jobs
    where
        F: Fn(JobCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + 'static,
    {
        self.insert(name, None, run)
    }

    /// Like [`Jobs::register`] with another time limit (clock time). A run
    /// longer than its lease keeps the lease by heartbeats.
    pub fn register_with_timeout<F, Fut>(self, name: &str, timeout: Duration, run: F) -> Jobs
    where
        F: Fn(JobCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + 'static,
    {
        self.insert(name, Some(timeout), run)
    }

    fn insert<F, Fut>(mut self, name: &str, timeout: Option<Duration>, run: F) -> Jobs
    where
        F: Fn(JobCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + 'static,
    {
        let run: Arc<JobFn> = Arc::new(move |ctx| Box::pin(run(ctx)) as BoxedRun);
        self.registered
            .insert(name.to_string(), Registered { run, timeout });
        self
    }

    pub fn contains(&self, name: &str) -> bool {
        self.registered.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.registered.keys().map(String::as_str)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Registered> {
        self.registered.get(name)
    }
}

/// The context of one run: the slot's identity, the fence, the attempt, the
/// lease deadline, checkpoints and the effect ledger. Cheap to clone.
#[derive(Clone)]
pub struct JobCtx {
    inner: Rc<CtxInner>,
}

struct CtxInner {
    coordinator: Rc<LocalCoordinator>,
    spec: Rc<JobSpec>,
    lease: Lease,
    clock: Clock,
    /// Moved on by the runner's heartbeats and by [`JobCtx::heartbeat`].
    expires_at: Rc<Cell<Timestamp>>,
    checkpoint: RefCell<Option<String>>,
}

impl JobCtx {
    pub(crate) fn new(
        coordinator: Rc<LocalCoordinator>,
        spec: Rc<JobSpec>,
        lease: Lease,
        clock: Clock,
        expires_at: Rc<Cell<Timestamp>>,
    ) -> JobCtx {
        let checkpoint = RefCell::new(lease.checkpoint.clone());
        JobCtx {
            inner: Rc::new(CtxInner {
                coordinator,
                spec,
                lease,
                clock,
                expires_at,
                checkpoint,
            }),
        }
    }

    pub fn job(&self) -> &str {
        self.inner.spec.name.as_str()
    }

    pub fn spec(&self) -> &JobSpec {
        &self.inner.spec
    }

    /// `job@2026-03-08T07:00:00Z`: the same for every attempt of the slot.
    pub fn slot_id(&self) -> SlotId {
        SlotId::new(&self.inner.spec.name, self.inner.lease.slot)
    }

    /// The slot id as a string: pass it to every API that takes one.
    pub fn idempotency_key(&self) -> String {
        self.slot_id().to_string()
    }

    /// Greater than every earlier fence of the job: give it to destinations
    /// that can refuse stale writers.
    pub fn fence(&self) -> u64 {
        self.inner.lease.fence
    }

    /// 1 on the first attempt of the slot.
    pub fn attempt(&self) -> u32 {
        self.inner.lease.attempt
    }

    pub fn scheduled_at(&self) -> Timestamp {
        self.inner.lease.slot
    }

    /// The lease's current expiry; the runner's heartbeats move it on.
    pub fn lease_deadline(&self) -> Timestamp {
        self.inner.expires_at.get()
    }

    /// The worker that holds the lease.
    pub fn owner(&self) -> &str {
        &self.inner.lease.owner
    }

    /// The runner's clock: in tests and demos it runs faster than real time.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// Sleeps for `clock_time` of the runner's clock.
    pub async fn sleep(&self, clock_time: Duration) {
        self.inner.clock.sleep(clock_time).await;
    }

    /// The last checkpoint saved by this slot's runs, to resume from.
    pub fn last_checkpoint(&self) -> Option<String> {
        self.inner.checkpoint.borrow().clone()
    }

    /// Saves a small checkpoint with the lease (refused once this run is
    /// superseded); a retry of the slot receives it.
    pub async fn checkpoint(&self, value: &str) -> Result<(), CoordError> {
        let i = &self.inner;
        i.coordinator
            .checkpoint(&i.spec, i.lease.fence, value, i.clock.now())
            .await?;
        *i.checkpoint.borrow_mut() = Some(value.to_string());
        Ok(())
    }

    /// Extends the lease from now. The runner already heartbeats every
    /// third of the lease; this is for a job that wants to be sure before a
    /// long step.
    pub async fn heartbeat(&self) -> Result<Timestamp, CoordError> {
        let i = &self.inner;
        let expires = i
            .coordinator
            .heartbeat(&i.spec, i.lease.fence, i.clock.now())
            .await?;
        i.expires_at.set(expires);
        Ok(expires)
    }

    /// Does `effect` at most once per slot: when an earlier run of this slot
    /// recorded it as done, returns that result without running it again
    /// (see the core's `JobContext::effect`).
    pub async fn effect<F, Fut>(&self, name: &str, effect: F) -> Result<String, EffectError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<String, String>>,
    {
        let i = &self.inner;
        let mut lease = i.lease.clone();
        lease.expires_at = i.expires_at.get();
        lease.checkpoint = i.checkpoint.borrow().clone();
        let clock = i.clock.clone();
        let now = move || clock.now();
        let core = JobContext::new(&*i.coordinator, &i.spec, lease, &now);
        core.effect(name, effect).await
    }
}

impl fmt::Debug for JobCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobCtx")
            .field("slot", &self.slot_id().to_string())
            .field("fence", &self.fence())
            .field("attempt", &self.attempt())
            .finish_non_exhaustive()
    }
}
