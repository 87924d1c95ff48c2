//! Jobs written in Rust: async functions registered by name, and the owned
//! context each run receives.
//!
//! The context is owned (not a borrow of the coordinator), so
//! `|ctx| async move { … }` compiles without higher-ranked lifetimes, and
//! it does not name the store: the same functions run against DynamoDB in
//! Lambda and against memory in tests.

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

pub use cronslot_core::coord::JobError;
use cronslot_core::coord::{CoordError, EffectError, format_instant};
use jiff::Timestamp;

/// A boxed future that stays on the invocation's thread (core's futures are
/// not `Send`).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// An effect's work, called only if the ledger grants the effect.
pub(crate) type EffectWork<'a> = Box<dyn FnOnce() -> LocalFuture<'a, Result<String, String>> + 'a>;

/// The store operations a run may use, with the store's type erased.
pub(crate) trait Ledger {
    fn effect<'a>(
        &'a self,
        name: &'a str,
        work: EffectWork<'a>,
    ) -> LocalFuture<'a, Result<String, EffectError>>;

    fn checkpoint<'a>(&'a self, value: &'a str) -> LocalFuture<'a, Result<(), CoordError>>;
}

/// What a run of a registered function gets: its slot's identity, fence,
/// attempt and deadlines, the last checkpoint, and the effect ledger.
#[derive(Clone)]
pub struct RunContext {
    inner: Rc<RunInner>,
}

struct RunInner {
    job: String,
    slot: Timestamp,
    fence: u64,
    attempt: u32,
    lease_deadline: Timestamp,
    deadline: Timestamp,
    checkpoint: RefCell<Option<String>>,
    ledger: Rc<dyn Ledger>,
}

/// The plain facts of a run, from which the handler builds its context.
pub(crate) struct RunFacts {
    pub job: String,
    pub slot: Timestamp,
    pub fence: u64,
    pub attempt: u32,
    pub lease_deadline: Timestamp,
    pub deadline: Timestamp,
    pub checkpoint: Option<String>,
}

impl RunContext {
    pub(crate) fn new(facts: RunFacts, ledger: Rc<dyn Ledger>) -> RunContext {
        RunContext {
            inner: Rc::new(RunInner {
                job: facts.job,
                slot: facts.slot,
                fence: facts.fence,
                attempt: facts.attempt,
                lease_deadline: facts.lease_deadline,
                deadline: facts.deadline,
                checkpoint: RefCell::new(facts.checkpoint),
                ledger,
            }),
        }
    }

    pub fn job(&self) -> &str {
        &self.inner.job
    }

    /// `<job>@<RFC 3339 UTC instant>`, the same for every attempt of the
    /// slot: pass it to every API that takes an idempotency key.
    pub fn idempotency_key(&self) -> String {
        format!("{}@{}", self.inner.job, format_instant(self.inner.slot))
    }

    /// The slot's scheduled instant.
    pub fn scheduled_at(&self) -> Timestamp {
        self.inner.slot
    }

    /// Greater than every earlier fence of this job: give it to
    /// destinations that can refuse stale writers.
    pub fn fence(&self) -> u64 {
        self.inner.fence
    }

    /// 1 for the first run of this slot.
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// When the slot's lease expires (it covers the function's timeout).
    pub fn lease_deadline(&self) -> Timestamp {
        self.inner.lease_deadline
    }

    /// When the run is cut: a little before the Lambda invocation's
    /// deadline, so that the failure can still be recorded.
    pub fn deadline(&self) -> Timestamp {
        self.inner.deadline
    }

    /// Time left before [`RunContext::deadline`], from the system clock.
    pub fn remaining(&self) -> Duration {
        let left = self.inner.deadline.duration_since(Timestamp::now());
        Duration::try_from(left).unwrap_or(Duration::ZERO)
    }

    /// The last checkpoint saved by this slot's runs (this one or an earlier
    /// attempt), to resume instead of starting over.
    pub fn last_checkpoint(&self) -> Option<String> {
        self.inner.checkpoint.borrow().clone()
    }

    /// Saves a small checkpoint with the lease (fenced: refused once this
    /// run is superseded). Costs one store write.
    pub async fn checkpoint(&self, value: &str) -> Result<(), CoordError> {
        self.inner.ledger.checkpoint(value).await?;
        *self.inner.checkpoint.borrow_mut() = Some(value.to_string());
        Ok(())
    }

    /// Does `effect` at most once per slot: if an earlier run of this slot
    /// recorded it as done, returns that result without running it again.
    pub async fn effect<'a, F, Fut>(
        &'a self,
        name: &'a str,
        effect: F,
    ) -> Result<String, EffectError>
    where
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = Result<String, String>> + 'a,
    {
        let work: EffectWork<'a> = Box::new(move || Box::pin(effect()));
        self.inner.ledger.effect(name, work).await
    }
}

/// A registered job function, boxed.
pub(crate) type JobFn = Rc<dyn Fn(RunContext) -> LocalFuture<'static, Result<(), JobError>>>;

/// The named async functions of the manifest's function jobs.
#[derive(Clone, Default)]
pub struct Jobs {
    functions: BTreeMap<String, JobFn>,
    twice: Vec<String>,
}

impl Jobs {
    pub fn new() -> Jobs {
        Jobs::default()
    }

    /// Registers the function of the manifest job `name`. Registering a
    /// name twice is reported when the function starts.
    pub fn register<F, Fut>(mut self, name: &str, function: F) -> Jobs
    where
        F: Fn(RunContext) -> Fut + 'static,
        Fut: Future<Output = Result<(), JobError>> + 'static,
    {
        let boxed: JobFn = Rc::new(move |ctx| Box::pin(function(ctx)));
        if self.functions.insert(name.to_string(), boxed).is_some() {
            self.twice.push(name.to_string());
        }
        self
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.functions.keys().map(String::as_str)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&JobFn> {
        self.functions.get(name)
    }

    /// Names registered more than once.
    pub(crate) fn registered_twice(&self) -> &[String] {
        &self.twice
    }
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jobs")
            .field("functions", &self.functions.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Runs a registered function, turning a panic (while building its future
/// or while polling it) into a transient failure: the run is then recorded
/// as failed and retried like any other, instead of leaving its lease held
/// until it expires.
pub(crate) async fn run_catching(function: &JobFn, ctx: RunContext) -> Result<(), JobError> {
    let future = match catch_unwind(AssertUnwindSafe(|| function(ctx))) {
        Ok(future) => future,
        Err(payload) => return Err(panicked(payload.as_ref())),
    };
    match (CatchPanic { inner: future }).await {
        Ok(result) => result,
        Err(payload) => Err(panicked(payload.as_ref())),
    }
}

struct CatchPanic {
    inner: LocalFuture<'static, Result<(), JobError>>,
}

impl Future for CatchPanic {
    type Output = Result<Result<(), JobError>, Box<dyn Any + Send>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.get_mut().inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            // Never polled again: the caller stops at the first `Ready`.
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

fn panicked(payload: &(dyn Any + Send)) -> JobError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    JobError::transient(format!("the job panicked: {message}"))
}
