//! Serving one job for one event: claim through the job's object, run the
//! job in the Worker with the core's context, record the outcome, and
//! report one structured line per run. Platform-neutral: the coordinator,
//! the clock and the job's executor are parameters.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::{
    Claim, CoordError, Coordinator, EffectError, FailOutcome, Idle, JobContext, JobError, Lease,
    Refusal, Trigger, format_instant,
};
use cronslot_core::manifest::JobSpec;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// A future that stays on the Worker's thread (nothing here is `Send`).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Supplies `now`.
pub type Clock = Rc<dyn Fn() -> Timestamp>;

/// Runs the job's action for one claimed slot.
pub trait Executor {
    fn execute(
        &self,
        spec: Rc<JobSpec>,
        ctx: RunContext,
    ) -> LocalFuture<'static, Result<(), JobError>>;
}

/// What a run of a job gets: the slot's identity, fence, attempt, deadline,
/// the last checkpoint, and the effect ledger (in the job's object).
#[derive(Clone)]
pub struct RunContext {
    inner: Rc<dyn RunServices>,
}

/// The store side of a run, with the coordinator's type erased so job
/// functions need not name it.
trait RunServices {
    fn lease(&self) -> Lease;
    fn job(&self) -> &str;
    fn effect<'a>(
        &'a self,
        name: &'a str,
        work: Box<dyn FnOnce() -> LocalFuture<'a, Result<String, String>> + 'a>,
    ) -> LocalFuture<'a, Result<String, EffectError>>;
    fn checkpoint<'a>(&'a self, value: &'a str) -> LocalFuture<'a, Result<(), CoordError>>;
    fn heartbeat(&self) -> LocalFuture<'_, Result<Timestamp, CoordError>>;
}

struct Services<C> {
    coordinator: Rc<C>,
    spec: Rc<JobSpec>,
    /// The lease as the run knows it: heartbeats and checkpoints update it.
    lease: RefCell<Lease>,
    clock: Clock,
}

impl<C: Coordinator + 'static> RunServices for Services<C> {
    fn lease(&self) -> Lease {
        self.lease.borrow().clone()
    }

    fn job(&self) -> &str {
        self.spec.name.as_str()
    }

    fn effect<'a>(
        &'a self,
        name: &'a str,
        work: Box<dyn FnOnce() -> LocalFuture<'a, Result<String, String>> + 'a>,
    ) -> LocalFuture<'a, Result<String, EffectError>> {
        Box::pin(async move {
            let clock = &*self.clock;
            let ctx = JobContext::new(&*self.coordinator, &self.spec, self.lease(), clock);
            ctx.effect(name, work).await
        })
    }

    fn checkpoint<'a>(&'a self, value: &'a str) -> LocalFuture<'a, Result<(), CoordError>> {
        Box::pin(async move {
            let fence = self.lease.borrow().fence;
            self.coordinator
                .checkpoint(&self.spec, fence, value, (self.clock)())
                .await?;
            self.lease.borrow_mut().checkpoint = Some(value.to_string());
            Ok(())
        })
    }

    fn heartbeat(&self) -> LocalFuture<'_, Result<Timestamp, CoordError>> {
        Box::pin(async move {
            let fence = self.lease.borrow().fence;
            let expires = self
                .coordinator
                .heartbeat(&self.spec, fence, (self.clock)())
                .await?;
            self.lease.borrow_mut().expires_at = expires;
            Ok(expires)
        })
    }
}

impl RunContext {
    pub fn job(&self) -> &str {
        self.inner.job()
    }

    /// `<job>@<slot>`: the same for every attempt of this slot.
    pub fn idempotency_key(&self) -> String {
        format!("{}@{}", self.job(), format_instant(self.inner.lease().slot))
    }

    /// Greater than every earlier fence of this job.
    pub fn fence(&self) -> u64 {
        self.inner.lease().fence
    }

    /// 1 for the first run of this slot.
    pub fn attempt(&self) -> u32 {
        self.inner.lease().attempt
    }

    pub fn scheduled_at(&self) -> Timestamp {
        self.inner.lease().slot
    }

    /// The run must finish (or heartbeat) before this instant.
    pub fn lease_deadline(&self) -> Timestamp {
        self.inner.lease().expires_at
    }

    pub fn last_checkpoint(&self) -> Option<String> {
        self.inner.lease().checkpoint
    }

    /// Does `work` at most once per slot (see the core's `JobContext::effect`).
    pub async fn effect<'a, F, Fut>(&'a self, name: &'a str, work: F) -> Result<String, EffectError>
    where
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = Result<String, String>> + 'a,
    {
        let work: Box<dyn FnOnce() -> LocalFuture<'a, Result<String, String>> + 'a> =
            Box::new(move || Box::pin(work()));
        self.inner.effect(name, work).await
    }

    pub async fn checkpoint(&self, value: &str) -> Result<(), CoordError> {
        self.inner.checkpoint(value).await
    }

    /// Extends the lease; returns the new deadline.
    pub async fn heartbeat(&self) -> Result<Timestamp, CoordError> {
        self.inner.heartbeat().await
    }
}

/// A bound on the runs of one job in one event, whatever the plan says (the
/// catch-up policy bounds them already; this guards the loop).
pub const MAX_RUNS_PER_EVENT: usize = 100;

/// Waits a while (a timer of the runtime; a virtual clock in tests).
pub type Sleep = Rc<dyn Fn(Duration) -> LocalFuture<'static, ()>>;

/// How one event serves its jobs.
#[derive(Clone)]
pub struct Serving<'a> {
    /// The owner of every lease this event takes.
    pub owner: &'a str,
    pub clock: Clock,
    pub executor: &'a dyn Executor,
    pub sleep: Sleep,
    /// A retry due within this long is waited for and run in the same
    /// event; a later one is left to the tick at or after its not-before
    /// time. Ticks come once a minute, and a retry may not outlive the
    /// job's next slot: without this, a per-minute job could never retry.
    pub retry_within: Duration,
}

/// The default of [`Serving::retry_within`]: long enough for the first
/// retries of the default backoff (30 s), short enough that an event does
/// not idle for minutes (wall time, not CPU time, while it waits).
pub const RETRY_WITHIN_EVENT: Duration = Duration::from_secs(30);

/// Serves one job for one event: claims and runs until nothing is due (or
/// the bound), waiting for retries due soon. Returns one JSON line per run
/// or idle answer, for the log.
pub async fn serve<C: Coordinator + 'static>(
    coordinator: Rc<C>,
    spec: Rc<JobSpec>,
    trigger: Trigger,
    how: Serving<'_>,
) -> Vec<Value> {
    let mut lines = Vec::new();
    let job = spec.name.as_str();
    let runs_allowed =
        MAX_RUNS_PER_EVENT.min(spec.max_catch_up as usize + spec.retry.max_attempts as usize + 1);
    let mut runs = 0;
    // Waits count too, so a retry that never becomes claimable cannot loop.
    let mut rounds = 0;
    while runs < runs_allowed && rounds < 2 * runs_allowed + 2 {
        rounds += 1;
        let now = (how.clock)();
        match coordinator.claim(&spec, now, trigger, how.owner).await {
            Err(e) => {
                lines.push(json!({
                    "msg": "claim failed", "job": job, "error": e.to_string(),
                    "transient": e.is_transient(),
                }));
                break;
            }
            Ok(Claim::Idle(idle)) => {
                let retry_at = match &idle {
                    Idle::RetryLater { not_before, .. } => Some(*not_before),
                    Idle::NothingDue { next_retry, .. } => *next_retry,
                    _ => None,
                };
                let wait = retry_at.map(|at| at.duration_since(now));
                match wait.and_then(|w| Duration::try_from(w).ok()) {
                    Some(wait)
                        if wait <= how.retry_within && !matches!(trigger, Trigger::Manual) =>
                    {
                        (how.sleep)(wait).await;
                    }
                    _ => {
                        lines.push(idle_line(job, &idle));
                        break;
                    }
                }
            }
            Ok(Claim::Claimed(lease)) => {
                runs += 1;
                let line = run_one(&coordinator, &spec, lease, &how.clock, how.executor).await;
                lines.push(line);
                if matches!(trigger, Trigger::Manual) {
                    break;
                }
            }
        }
    }
    lines
}

/// The context of a run of `lease`, for callers that claim themselves (the
/// admin route's manual trigger).
pub fn context<C: Coordinator + 'static>(
    coordinator: Rc<C>,
    spec: Rc<JobSpec>,
    lease: Lease,
    clock: Clock,
) -> RunContext {
    RunContext {
        inner: Rc::new(Services {
            coordinator,
            spec,
            lease: RefCell::new(lease),
            clock,
        }),
    }
}

async fn run_one<C: Coordinator + 'static>(
    coordinator: &Rc<C>,
    spec: &Rc<JobSpec>,
    lease: Lease,
    clock: &Clock,
    executor: &dyn Executor,
) -> Value {
    let started = clock();
    let services = Rc::new(Services {
        coordinator: coordinator.clone(),
        spec: spec.clone(),
        lease: RefCell::new(lease.clone()),
        clock: clock.clone(),
    });
    let ctx = RunContext {
        inner: services.clone(),
    };
    let result = executor.execute(spec.clone(), ctx).await;
    let finished = clock();
    let fence = services.lease.borrow().fence;
    let mut line = json!({
        "msg": "run",
        "job": spec.name.as_str(),
        "slot": format_instant(lease.slot),
        "attempt": lease.attempt,
        "fence": lease.fence,
        "lag_ms": millis(started.duration_since(lease.slot)),
        "duration_ms": millis(finished.duration_since(started)),
    });
    let (outcome, error) = match result {
        Ok(()) => match coordinator.complete(spec, fence, None, finished).await {
            Ok(()) => ("succeeded", None),
            Err(CoordError::Refused(
                r @ (Refusal::Superseded { .. } | Refusal::Expired { .. }),
            )) => ("lease_lost", Some(r.to_string())),
            Err(e) => (
                "unrecorded",
                Some(format!("the run succeeded but recording it failed: {e}")),
            ),
        },
        Err(job_error) => {
            let permanent = job_error.permanent;
            let text = job_error.message;
            match coordinator
                .fail(spec, fence, &text, permanent, finished)
                .await
            {
                Ok(FailOutcome::RetryAt(at)) => {
                    line["retry_at"] = Value::String(format_instant(at));
                    ("failed", Some(text))
                }
                Ok(FailOutcome::Dead) => ("dead", Some(text)),
                Err(CoordError::Refused(r)) => ("lease_lost", Some(format!("{text}; {r}"))),
                Err(e) => (
                    "unrecorded",
                    Some(format!("{text}; recording the failure failed: {e}")),
                ),
            }
        }
    };
    line["outcome"] = Value::String(outcome.into());
    if let Some(error) = error {
        line["error"] = Value::String(error);
    }
    line
}

fn millis(d: SignedDuration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn idle_line(job: &str, idle: &Idle) -> Value {
    let (reason, detail): (&str, Value) = match idle {
        Idle::NothingDue {
            next_slot,
            next_retry,
        } => (
            "nothing_due",
            json!({"next_slot": next_slot.map(format_instant), "next_retry": next_retry.map(format_instant)}),
        ),
        Idle::Busy { live } => ("busy", json!({"live": live})),
        Idle::Paused => ("paused", Value::Null),
        Idle::AlreadyResolved { slot } => {
            ("already_resolved", json!({"slot": format_instant(*slot)}))
        }
        Idle::InProgress { slot, fence } => (
            "in_progress",
            json!({"slot": format_instant(*slot), "fence": fence}),
        ),
        Idle::RetryLater { slot, not_before } => (
            "retry_later",
            json!({"slot": format_instant(*slot), "not_before": format_instant(*not_before)}),
        ),
        Idle::NotYetDue { slot } => ("not_yet_due", json!({"slot": format_instant(*slot)})),
    };
    json!({"msg": "idle", "job": job, "reason": reason, "detail": detail})
}

/// Registered Rust job functions, by job name.
#[derive(Clone, Default)]
pub struct Jobs {
    functions: BTreeMap<String, JobFn>,
}

type JobFn = Rc<dyn Fn(RunContext) -> LocalFuture<'static, Result<(), JobError>>>;

impl Jobs {
    pub fn new() -> Jobs {
        Jobs::default()
    }

    /// Registers the function that runs the manifest's job `name`.
    pub fn register<F, Fut>(mut self, name: &str, function: F) -> Jobs
    where
        F: Fn(RunContext) -> Fut + 'static,
        Fut: Future<Output = Result<(), JobError>> + 'static,
    {
        let function: JobFn = Rc::new(move |ctx| Box::pin(function(ctx)));
        self.functions.insert(name.to_string(), function);
        self
    }

    pub fn get(&self, name: &str) -> Option<&JobFn> {
        self.functions.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.functions.keys().map(String::as_str)
    }
}
