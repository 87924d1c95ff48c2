//! The one context every job receives, on every platform.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::{CoordError, Coordinator, EffectError, JobContext, Lease, SlotId};
use cronslot_core::manifest::JobSpec;
use jiff::Timestamp;

use crate::platform::{LocalFuture, Platform};

/// An effect's work, called only if the ledger grants the effect.
type EffectWork<'a> = Box<dyn FnOnce() -> LocalFuture<'a, Result<String, String>> + 'a>;

/// The store operations a run may use, with the coordinator's type erased
/// so that job functions never name a store.
trait RunStore {
    fn checkpoint<'a>(
        &'a self,
        spec: &'a JobSpec,
        fence: u64,
        value: &'a str,
        now: Timestamp,
    ) -> LocalFuture<'a, Result<(), CoordError>>;

    fn heartbeat<'a>(
        &'a self,
        spec: &'a JobSpec,
        fence: u64,
        now: Timestamp,
    ) -> LocalFuture<'a, Result<Timestamp, CoordError>>;

    fn effect<'a>(
        &'a self,
        spec: &'a JobSpec,
        lease: Lease,
        clock: &'a dyn Fn() -> Timestamp,
        name: &'a str,
        work: EffectWork<'a>,
    ) -> LocalFuture<'a, Result<String, EffectError>>;
}

impl<C: Coordinator> RunStore for C {
    fn checkpoint<'a>(
        &'a self,
        spec: &'a JobSpec,
        fence: u64,
        value: &'a str,
        now: Timestamp,
    ) -> LocalFuture<'a, Result<(), CoordError>> {
        Box::pin(Coordinator::checkpoint(self, spec, fence, value, now))
    }

    fn heartbeat<'a>(
        &'a self,
        spec: &'a JobSpec,
        fence: u64,
        now: Timestamp,
    ) -> LocalFuture<'a, Result<Timestamp, CoordError>> {
        Box::pin(Coordinator::heartbeat(self, spec, fence, now))
    }

    fn effect<'a>(
        &'a self,
        spec: &'a JobSpec,
        lease: Lease,
        clock: &'a dyn Fn() -> Timestamp,
        name: &'a str,
        work: EffectWork<'a>,
    ) -> LocalFuture<'a, Result<String, EffectError>> {
        Box::pin(async move {
            // The core's context holds the ledger's rules (hold time, fence
            // checks); it is cheap to build per effect.
            JobContext::new(self, spec, lease, clock)
                .effect(name, work)
                .await
        })
    }
}

/// What a run of a job gets: its slot's identity, its fence and attempt,
/// its deadlines, the last checkpoint, and the effect ledger. Owned and
/// cheap to clone, so `|ctx| async move { … }` needs no lifetimes; it names
/// no store, so the same function runs on every platform.
#[derive(Clone)]
pub struct RunContext {
    inner: Rc<Inner>,
}

struct Inner {
    spec: Rc<JobSpec>,
    lease: Lease,
    /// Moved on by heartbeats (the run loop's and the job's own).
    expires_at: Cell<Timestamp>,
    checkpoint: RefCell<Option<String>>,
    deadline: Timestamp,
    store: Rc<dyn RunStore>,
    platform: Rc<dyn Platform>,
}

impl RunContext {
    /// The context of a run of `lease`, which the run loop cuts at
    /// `deadline`.
    pub(crate) fn new<C: Coordinator + 'static>(
        coordinator: Rc<C>,
        spec: Rc<JobSpec>,
        lease: Lease,
        deadline: Timestamp,
        platform: Rc<dyn Platform>,
    ) -> RunContext {
        RunContext {
            inner: Rc::new(Inner {
                spec,
                expires_at: Cell::new(lease.expires_at),
                checkpoint: RefCell::new(lease.checkpoint.clone()),
                lease,
                deadline,
                store: coordinator,
                platform,
            }),
        }
    }

    /// The job's name.
    pub fn job(&self) -> &str {
        self.inner.spec.name.as_str()
    }

    /// The job's resolved manifest entry.
    pub fn spec(&self) -> &JobSpec {
        &self.inner.spec
    }

    /// The key of the schedule the slot is of, for a dynamic job's
    /// schedule (`job/key@…` slots); `None` for a job the manifest
    /// schedules.
    pub fn key(&self) -> Option<&str> {
        self.inner.spec.key.as_ref().map(|k| k.as_str())
    }

    /// The payload (JSON text, as the schedule's write sent it) of the
    /// schedule's version the slot belongs to: the version in force at the
    /// slot's instant, even if the schedule changed since. `None` without
    /// a payload, and for a job the manifest schedules.
    #[cfg(feature = "schedules")]
    pub fn payload(&self) -> Option<&str> {
        self.inner.spec.payload_for(self.inner.lease.version)
    }

    /// `job@2026-03-08T07:00:00Z`: the same for every attempt of the slot.
    pub fn slot_id(&self) -> SlotId {
        SlotId::new(&self.inner.spec, self.inner.lease.slot)
    }

    /// The slot id as text: pass it to every API that takes an
    /// idempotency key, so that a retry of the slot is recognised.
    pub fn idempotency_key(&self) -> String {
        self.slot_id().to_string()
    }

    /// Greater than every earlier fence of the job: give it to destinations
    /// that can refuse a stale writer.
    pub fn fence(&self) -> u64 {
        self.inner.lease.fence
    }

    /// 1 on the slot's first attempt.
    pub fn attempt(&self) -> u32 {
        self.inner.lease.attempt
    }

    /// The slot's scheduled instant.
    pub fn scheduled_at(&self) -> Timestamp {
        self.inner.lease.slot
    }

    /// Who holds the lease (a worker, a Lambda request id, a Worker event).
    pub fn owner(&self) -> &str {
        &self.inner.lease.owner
    }

    /// When the run loop stops this run: the job's time limit, or the
    /// platform's deadline (a Lambda invocation's) if that comes first.
    pub fn deadline(&self) -> Timestamp {
        self.inner.deadline
    }

    /// Time left before [`RunContext::deadline`], by the platform's clock.
    pub fn remaining(&self) -> Duration {
        Duration::try_from(self.inner.deadline.duration_since(self.now())).unwrap_or(Duration::ZERO)
    }

    /// The lease's current expiry. Heartbeats move it on; past it (plus
    /// the skew margin) another run may take the slot over.
    pub fn lease_deadline(&self) -> Timestamp {
        self.inner.expires_at.get()
    }

    /// Now, by the platform's clock (faster than real time in a demo,
    /// virtual in a simulation).
    pub fn now(&self) -> Timestamp {
        self.inner.platform.now()
    }

    /// Sleeps for `duration` of the platform's clock.
    pub async fn sleep(&self, duration: Duration) {
        self.inner.platform.sleep(duration).await;
    }

    /// The last checkpoint saved by this slot's runs (this one or an
    /// earlier attempt), to resume from instead of starting over.
    pub fn last_checkpoint(&self) -> Option<String> {
        self.inner.checkpoint.borrow().clone()
    }

    /// Saves a small checkpoint with the lease; a retry of the slot
    /// receives it. Fenced: refused once this run is superseded. One store
    /// write.
    pub async fn checkpoint(&self, value: &str) -> Result<(), CoordError> {
        let i = &self.inner;
        i.store
            .checkpoint(&i.spec, i.lease.fence, value, self.now())
            .await?;
        *i.checkpoint.borrow_mut() = Some(value.to_string());
        Ok(())
    }

    /// Extends the lease from now by the job's lease; returns the new
    /// expiry. The run loop already heartbeats every third of the lease
    /// when a run may outlive its lease; this is for a job that wants to
    /// be sure before a long step. It works on every platform (the lease
    /// lives in the store); where the platform's own deadline comes first
    /// (Lambda), it extends the lease but not the run, which is still cut
    /// at [`RunContext::deadline`]. Refused once the run is superseded:
    /// the job should then stop.
    pub async fn heartbeat(&self) -> Result<Timestamp, CoordError> {
        let i = &self.inner;
        let expires = i
            .store
            .heartbeat(&i.spec, i.lease.fence, self.now())
            .await?;
        i.expires_at.set(expires);
        Ok(expires)
    }

    /// Does `effect` at most once per slot: if an earlier run of this slot
    /// recorded it as done, returns that result without running it again.
    /// The result (a short text) is recorded with the run's fence; an
    /// effect held by another live run, or owned by a newer one, is not
    /// run (see [`EffectError`]).
    pub async fn effect<'a, F, Fut>(
        &'a self,
        name: &'a str,
        effect: F,
    ) -> Result<String, EffectError>
    where
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = Result<String, String>> + 'a,
    {
        let i = &self.inner;
        let mut lease = i.lease.clone();
        lease.expires_at = i.expires_at.get();
        lease.checkpoint = i.checkpoint.borrow().clone();
        let platform = Rc::clone(&i.platform);
        let clock = move || platform.now();
        let work: EffectWork<'_> = Box::new(move || Box::pin(effect()));
        i.store.effect(&i.spec, lease, &clock, name, work).await
    }
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("slot", &self.idempotency_key())
            .field("fence", &self.fence())
            .field("attempt", &self.attempt())
            .finish_non_exhaustive()
    }
}
