//! The run loop: claim → run → record, written once.
//!
//! [`run_lease`] runs one claimed lease: it builds the job's
//! [`RunContext`], runs the job's action under its time limit (and the
//! platform's deadline), heartbeats when the run may outlive its lease,
//! and records the outcome with the lease's fence. [`serve`] claims and
//! runs one job's slots for one trigger until nothing more is due. The
//! local runner's workers call [`run_lease`] for each lease they claim;
//! Lambda and Workers call [`serve`] for each job an event is for.
//!
//! One policy for an outcome that cannot be recorded: a transient store
//! error is tried again every [`RECORD_RETRY`] until the lease (plus the
//! skew margin) runs out or the platform's invocation ends. Past that,
//! another run may own the slot and the lease's expiry already counts this
//! attempt as failed, so the run ends [`Outcome::Unrecorded`].

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use cronslot_core::coord::{
    Claim, CoordError, Coordinator, FailOutcome, Idle, Lease, Trigger, format_instant,
};
use cronslot_core::manifest::{Action, JobSpec, format_duration};
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::platform::{LocalFuture, Platform, RunEvent};
use crate::{JobError, Jobs, Outcome, RunContext, command, http, panic};

/// Between tries of recording an outcome the store did not take.
pub const RECORD_RETRY: Duration = Duration::from_secs(2);

/// A bound on the runs of one job for one trigger, whatever the plan says
/// (the catch-up policy bounds them already; this guards the loop).
pub const MAX_RUNS_PER_TRIGGER: usize = 100;

/// Another due slot is claimed only if the time left before the
/// platform's deadline exceeds the longest run so far by this much.
const CATCH_UP_MARGIN: Duration = Duration::from_secs(2);

/// What one run did, for the log line, the metrics and the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// The job.
    pub job: String,
    /// The schedule's key, for a slot of a dynamic job's schedule or keyed
    /// run (its slot id is then `job/key@instant`).
    pub key: Option<String>,
    /// The slot's scheduled instant.
    pub slot: Timestamp,
    /// 1 on the slot's first attempt.
    pub attempt: u32,
    /// The lease's fence.
    pub fence: u64,
    /// Who held the lease.
    pub owner: String,
    /// When the job started.
    pub started: Timestamp,
    /// When the job's work ended (finished, cut or stopped).
    pub ran_until: Timestamp,
    /// When the outcome was recorded (or given up on).
    pub ended: Timestamp,
    /// How the run ended.
    pub outcome: Outcome,
    /// The short result of a successful run (`HTTP 204`), if any.
    pub result: Option<String>,
    /// Why the job failed: its own error, a timeout, a panic, a shutdown.
    pub job_error: Option<JobError>,
    /// Why the outcome was not recorded ([`Outcome::LeaseLost`],
    /// [`Outcome::Unrecorded`]), or why the run lost its lease mid-way.
    pub record_error: Option<String>,
    /// The store's error, when recording failed on one.
    pub store_error: Option<CoordError>,
}

impl RunReport {
    /// `job@2026-03-08T07:00:00Z`, or `job/key@2026-03-08T07:00:00Z` for
    /// a schedule's slot: the idempotency key the run was given.
    pub fn slot_id(&self) -> String {
        match &self.key {
            None => format!("{}@{}", self.job, format_instant(self.slot)),
            Some(key) => format!("{}/{key}@{}", self.job, format_instant(self.slot)),
        }
    }

    /// From the scheduled instant to the start, in milliseconds (negative
    /// when started early within the skew margin).
    pub fn lag_ms(&self) -> i64 {
        millis(self.started.duration_since(self.slot))
    }

    /// How long the job ran, in milliseconds.
    pub fn duration_ms(&self) -> i64 {
        millis(self.ran_until.duration_since(self.started))
    }

    /// The instant the retry may start, for [`Outcome::Retrying`].
    pub fn retry_at(&self) -> Option<Timestamp> {
        match self.outcome {
            Outcome::Retrying { at } => Some(at),
            _ => None,
        }
    }

    /// What went wrong, in one text: the job's error, then why its outcome
    /// was not recorded. `None` for a recorded success.
    pub fn error(&self) -> Option<String> {
        match (&self.job_error, &self.record_error) {
            (None, None) => None,
            (Some(e), None) => Some(e.message().to_string()),
            (None, Some(r)) => Some(r.clone()),
            (Some(e), Some(r)) => Some(format!("{}; {r}", e.message())),
        }
    }

    /// The fields of the run's log line, the same on every platform: `job`,
    /// `slot` (the slot id), `scheduled_at`, `attempt`, `fence`, `owner`,
    /// `lag_ms`, `duration_ms`, `outcome`, and `retry_at` and `error` when
    /// they apply; `msg` when the platform's line carries one.
    pub fn line(&self, msg: Option<&'static str>) -> RunLine<'_> {
        RunLine {
            attempt: self.attempt,
            duration_ms: self.duration_ms(),
            error: self.error(),
            fence: self.fence,
            job: &self.job,
            key: self.key.as_deref(),
            lag_ms: self.lag_ms(),
            msg,
            outcome: self.outcome.as_str(),
            owner: &self.owner,
            retry_at: self.retry_at().map(format_instant),
            scheduled_at: format_instant(self.slot),
            slot: self.slot_id(),
        }
    }

    /// [`RunReport::line`]'s fields (without `msg`) as a JSON object.
    pub fn fields(&self) -> Map<String, Value> {
        match serde_json::to_value(self.line(None)) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

/// A run's log line ([`RunReport::line`]).
///
/// The fields are in alphabetical order, the order of the keys of the JSON
/// object the line was first built as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunLine<'a> {
    /// 1 on the slot's first attempt.
    pub attempt: u32,
    /// How long the job ran, in milliseconds.
    pub duration_ms: i64,
    /// What went wrong ([`RunReport::error`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The lease's fence.
    pub fence: u64,
    /// The job.
    pub job: &'a str,
    /// The schedule's key, for a dynamic job's slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<&'a str>,
    /// From the scheduled instant to the start, in milliseconds.
    pub lag_ms: i64,
    /// The line's message, on the platforms whose lines carry one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg: Option<&'static str>,
    /// How the run ended ([`Outcome::as_str`]).
    pub outcome: &'static str,
    /// Who held the lease.
    pub owner: &'a str,
    /// When the retry may start, for [`Outcome::Retrying`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    /// The slot's scheduled instant.
    pub scheduled_at: String,
    /// The slot id (`job@2026-03-08T07:00:00Z`, `job/key@…` for a
    /// schedule's).
    pub slot: String,
}

fn millis(d: SignedDuration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(if d.is_negative() { i64::MIN } else { i64::MAX })
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    let d = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

/// The time from `from` to `to`, zero if `to` is not later.
fn until(from: Timestamp, to: Timestamp) -> Duration {
    Duration::try_from(to.duration_since(from)).unwrap_or(Duration::ZERO)
}

/// A duration for messages: milliseconds below a second (where
/// `format_duration`, which counts whole seconds, would say `0s`).
fn human(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format_duration(d)
    }
}

/// The longest one run of `spec` may take: the registered function's
/// timeout or the action's, else the lease.
fn time_limit(spec: &JobSpec, jobs: &Jobs) -> Duration {
    match &spec.action {
        Action::Function => jobs
            .get(spec.name.as_str())
            .and_then(|r| r.timeout)
            .unwrap_or(spec.lease),
        other => other.timeout().unwrap_or(spec.lease),
    }
}

/// How the job's work ended.
enum Ended {
    Finished(Result<Option<String>, JobError>),
    /// Cut at its time limit (`false`) or at the platform's deadline.
    TimedOut {
        by_platform: bool,
    },
    /// A heartbeat was refused, or the lease ran out before the work
    /// could start: the slot is no longer ours.
    LeaseLost(String),
    /// The platform stopped it (a forced shutdown).
    Stopped,
}

/// Starts the job's action.
fn start(
    spec: &Rc<JobSpec>,
    ctx: RunContext,
    jobs: &Jobs,
    platform: &Rc<dyn Platform>,
) -> LocalFuture<'static, Result<Option<String>, JobError>> {
    match &spec.action {
        Action::Function => match jobs.get(spec.name.as_str()) {
            Some(registered) => {
                let run = Rc::new(registered.run.clone());
                Box::pin(async move { panic::catching(move || run(ctx)).await.map(|()| None) })
            }
            None => {
                let message = format!(
                    "no function is registered for job {:?} (Jobs::register)",
                    spec.name.as_str()
                );
                Box::pin(async move { Err(JobError::permanent(message)) })
            }
        },
        Action::Http { .. } => match http::plan(spec, &ctx) {
            Some(request) => {
                let send = platform.send_http(request.clone());
                Box::pin(async move { http::judge(&request, send.await).map(Some) })
            }
            None => Box::pin(async { Err(JobError::permanent("not an http job")) }),
        },
        Action::Command { .. } => match command::plan(spec, &ctx) {
            Some(request) => platform.run_command(request),
            None => Box::pin(async { Err(JobError::permanent("not a command job")) }),
        },
    }
}

/// The error of a run its time limit stopped.
fn timed_out(spec: &JobSpec, limit: Duration) -> JobError {
    match &spec.action {
        Action::Http { method, url, .. } => http::timed_out(*method, url, limit),
        Action::Command { .. } => JobError::transient(format!(
            "timed out after {} and was stopped (its process group was killed)",
            human(limit)
        )),
        Action::Function => {
            JobError::transient(format!("timed out after {} and was stopped", human(limit)))
        }
    }
}

/// Which of the supervised futures ended first.
enum First<T> {
    Work(T),
    Timer,
    Stop,
}

/// Polls the work first, then the timer, then the stop signal.
async fn first<T>(
    work: &mut LocalFuture<'static, T>,
    timer: &mut LocalFuture<'static, ()>,
    stop: &mut LocalFuture<'static, ()>,
) -> First<T> {
    poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(First::Work(out));
        }
        if Pin::new(&mut *timer).poll(cx).is_ready() {
            return Poll::Ready(First::Timer);
        }
        if Pin::new(&mut *stop).poll(cx).is_ready() {
            return Poll::Ready(First::Stop);
        }
        Poll::Pending
    })
    .await
}

/// Runs one claimed lease of `spec` to its end and records the outcome.
///
/// The job's action runs with a [`RunContext`] until it ends, its time
/// limit passes (the registered or manifest timeout, else the lease; the
/// platform's deadline if sooner), its lease is lost, or the platform
/// stops it. When the run may outlive its lease, the lease is extended
/// every third of it; a refused heartbeat stops the run. A panic, a
/// timeout and a stop are transient failures. Then the outcome is recorded
/// with the lease's fence (see the module's recording policy).
pub async fn run_lease<C: Coordinator + 'static>(
    coordinator: &Rc<C>,
    spec: &Rc<JobSpec>,
    lease: Lease,
    jobs: &Jobs,
    platform: &Rc<dyn Platform>,
) -> RunReport {
    let started = platform.now();
    let limit = time_limit(spec, jobs);
    let platform_deadline = platform.deadline();
    let own_deadline = add(started, limit);
    let (deadline, by_platform) = match &platform_deadline {
        Some(d) if d.cut_runs_at < own_deadline => (d.cut_runs_at, true),
        _ => (own_deadline, false),
    };
    let ctx = RunContext::new(
        Rc::clone(coordinator),
        Rc::clone(spec),
        lease.clone(),
        deadline,
        Rc::clone(platform),
    );
    let ended = supervise(spec, &lease, &ctx, deadline, by_platform, jobs, platform).await;
    let ran_until = platform.now();
    platform.observe(&RunEvent::WorkEnded {
        job: &spec.record_name(),
        slot: lease.slot,
    });
    let mut report = RunReport {
        job: spec.name.as_str().to_string(),
        key: spec.key.as_ref().map(|k| k.as_str().to_string()),
        slot: lease.slot,
        attempt: lease.attempt,
        fence: lease.fence,
        owner: lease.owner.clone(),
        started,
        ran_until,
        ended: ran_until,
        outcome: Outcome::LeaseLost,
        result: None,
        job_error: None,
        record_error: None,
        store_error: None,
    };
    let failure = match ended {
        Ended::Finished(Ok(result)) => {
            let recorded = record(spec, &ctx, platform, "success", async || {
                coordinator
                    .complete(spec, lease.fence, result.as_deref(), platform.now())
                    .await
            })
            .await;
            report.result = result;
            match recorded {
                Ok(()) => report.outcome = Outcome::Succeeded,
                Err(e) => unrecorded(&mut report, "success", e),
            }
            None
        }
        Ended::Finished(Err(e)) => Some(e),
        Ended::TimedOut { by_platform: false } => Some(timed_out(spec, limit)),
        Ended::TimedOut { by_platform: true } => {
            let advice = platform_deadline.map(|d| d.advice).unwrap_or_default();
            Some(JobError::transient(format!(
                "the run was cut after {} to leave time to record it before {}'s deadline{}{advice}",
                human(until(started, deadline)),
                platform.name(),
                if advice.is_empty() { "" } else { "; " },
            )))
        }
        Ended::Stopped => Some(JobError::transient(
            "stopped by the runner's shutdown before it finished",
        )),
        Ended::LeaseLost(why) => {
            report.outcome = Outcome::LeaseLost;
            report.record_error = Some(why);
            None
        }
    };
    if let Some(error) = failure {
        let recorded = record(spec, &ctx, platform, "failure", async || {
            coordinator
                .fail(
                    spec,
                    lease.fence,
                    error.message(),
                    error.is_permanent(),
                    platform.now(),
                )
                .await
        })
        .await;
        match recorded {
            Ok(FailOutcome::RetryAt(at)) => report.outcome = Outcome::Retrying { at },
            Ok(FailOutcome::Dead) => report.outcome = Outcome::Dead,
            Err(e) => unrecorded(&mut report, "failure", e),
        }
        report.job_error = Some(error);
    }
    report.ended = platform.now();
    report
}

/// A refused report means the run was superseded; anything else means the
/// store did not take it.
fn unrecorded(report: &mut RunReport, what: &str, e: CoordError) {
    report.outcome = if matches!(e, CoordError::Refused(_)) {
        Outcome::LeaseLost
    } else {
        Outcome::Unrecorded
    };
    report.record_error = Some(format!("the {what} was not recorded: {e}"));
    report.store_error = Some(e);
}

/// Runs the job's work until it ends, its deadline passes, its lease is
/// lost, or the platform stops it.
async fn supervise(
    spec: &Rc<JobSpec>,
    lease: &Lease,
    ctx: &RunContext,
    deadline: Timestamp,
    by_platform: bool,
    jobs: &Jobs,
    platform: &Rc<dyn Platform>,
) -> Ended {
    // A lease that ran out before its work started (the process was
    // paused between the claim and now: a freeze, a swap storm) may
    // already be another claimer's: its work must not start with a fence
    // that a newer run has passed.
    if platform.now() >= lease.expires_at {
        return Ended::LeaseLost("the lease ran out before the run could start".into());
    }
    // Heartbeats only where the run may outlive its lease: in Lambda the
    // lease covers the whole invocation (checked before any claim), so it
    // costs no writes there.
    let heartbeats = deadline > lease.expires_at;
    let every = (spec.lease / 3).max(Duration::from_secs(1));
    let mut next_beat = add(lease.claimed_at, every);
    let mut work = start(spec, ctx.clone(), jobs, platform);
    let mut stop = platform.stop_now();
    loop {
        let now = platform.now();
        let for_deadline = !heartbeats || deadline <= next_beat;
        let wake = if for_deadline { deadline } else { next_beat };
        let mut timer = platform.sleep(until(now, wake));
        match first(&mut work, &mut timer, &mut stop).await {
            First::Work(out) => return Ended::Finished(out),
            First::Stop => return Ended::Stopped,
            First::Timer => {}
        }
        // The timer is trusted: a clock that reads a little early (or a
        // test's frozen one) must not let a run outlive its deadline.
        let now = platform.now();
        if for_deadline || now >= deadline {
            return Ended::TimedOut { by_platform };
        }
        if heartbeats && now >= next_beat {
            match ctx.heartbeat().await {
                Ok(expires_at) => {
                    platform.observe(&RunEvent::Heartbeat {
                        job: spec.name.as_str(),
                        fence: lease.fence,
                        expires_at,
                    });
                    next_beat = add(now, every);
                }
                Err(CoordError::Refused(refusal)) => {
                    return Ended::LeaseLost(format!(
                        "a heartbeat was refused ({refusal}): the run no longer held its slot and was stopped"
                    ));
                }
                // Tried again soon; the lease is still ours until it
                // expires, and a later heartbeat or the record will tell.
                Err(e) => {
                    platform.observe(&RunEvent::StoreRetry {
                        job: spec.name.as_str(),
                        what: "heartbeat",
                        error: &e,
                    });
                    next_beat = add(now, RECORD_RETRY.min(every));
                }
            }
        }
    }
}

/// Tries `op` until it is taken, refused, or the lease (plus the skew
/// margin) or the platform's invocation has run out.
async fn record<T>(
    spec: &JobSpec,
    ctx: &RunContext,
    platform: &Rc<dyn Platform>,
    what: &str,
    op: impl AsyncFn() -> Result<T, CoordError>,
) -> Result<T, CoordError> {
    loop {
        match op().await {
            Err(e) if e.is_transient() => {
                let mut give_up = add(ctx.lease_deadline(), spec.skew_margin);
                if let Some(d) = platform.deadline() {
                    give_up = give_up.min(d.ends_at);
                }
                let now = platform.now();
                if now >= give_up {
                    return Err(e);
                }
                platform.observe(&RunEvent::StoreRetry {
                    job: spec.name.as_str(),
                    what,
                    error: &e,
                });
                platform.sleep(RECORD_RETRY.min(until(now, give_up))).await;
            }
            other => return other,
        }
    }
}

/// See [`ServeOptions::more_due`].
pub type MoreDue<'a> = &'a dyn Fn(&JobSpec, Timestamp) -> bool;

/// How [`serve`] serves one job for one trigger.
pub struct ServeOptions<'a> {
    /// The owner of every lease taken.
    pub owner: &'a str,
    /// The first claim's trigger; later claims tick.
    pub trigger: Trigger,
    /// A retry due within this long is waited for and run in the same
    /// call; a later one is left to a later trigger. Zero: a failed run
    /// ends the call (the platform re-delivers, or the next tick retries).
    pub retry_within: Duration,
    /// Asked before each claim after a run: may more be due now? A store
    /// that remembers the last record it wrote can answer without a
    /// request and so save the last, idle claim. `None`: claim and see.
    pub more_due: Option<MoreDue<'a>>,
}

/// What serving one job for one trigger came to.
#[derive(Debug, Default)]
pub struct Served {
    /// The runs, in order.
    pub runs: Vec<RunReport>,
    /// The claim that ran nothing and ended the call, with its trigger.
    pub idle: Option<(Trigger, Idle)>,
    /// The claim that failed and ended the call.
    pub claim_error: Option<CoordError>,
    /// Why due slots were left to the next trigger (the platform's
    /// deadline was too close).
    pub deferred: Option<String>,
}

/// Claims and runs `spec`'s slots: the first claim with the options'
/// trigger, then with ticks while slots are due (`catch_up = "all"` runs
/// every kept late slot), until nothing is due, the platform's deadline is
/// near, or a bound is reached. A manual trigger runs one slot.
pub async fn serve<C: Coordinator + 'static>(
    coordinator: &Rc<C>,
    spec: &Rc<JobSpec>,
    jobs: &Jobs,
    platform: &Rc<dyn Platform>,
    options: &ServeOptions<'_>,
) -> Served {
    let mut served = Served::default();
    let allowed = MAX_RUNS_PER_TRIGGER.min(
        (spec.max_catch_up as usize)
            .saturating_add(spec.retry.max_attempts as usize)
            .saturating_add(1),
    );
    let manual = options.trigger == Trigger::Manual;
    let mut trigger = options.trigger;
    let mut longest = Duration::ZERO;
    // Waits count too, so a retry that never becomes claimable cannot loop.
    let mut rounds = 0;
    while served.runs.len() < allowed && rounds < 2 * allowed + 2 {
        rounds += 1;
        let now = platform.now();
        match coordinator.claim(spec, now, trigger, options.owner).await {
            Err(e) => {
                served.claim_error = Some(e);
                break;
            }
            Ok(Claim::Idle(idle)) => match retry_wait(&idle, now, options, platform, longest) {
                Some(wait) if !manual => platform.sleep(wait).await,
                _ => {
                    served.idle = Some((trigger, idle));
                    break;
                }
            },
            Ok(Claim::Claimed(lease)) => {
                let report = run_lease(coordinator, spec, lease, jobs, platform).await;
                longest = longest.max(until(report.started, report.ran_until));
                let succeeded = report.outcome == Outcome::Succeeded;
                served.runs.push(report);
                if manual || (!succeeded && options.retry_within.is_zero()) {
                    break;
                }
                let now = platform.now();
                if let Some(more_due) = options.more_due {
                    if !more_due(spec, now) {
                        break;
                    }
                }
                if let Some(d) = platform.deadline() {
                    let left = until(now, d.cut_runs_at);
                    if left < longest.saturating_add(CATCH_UP_MARGIN) {
                        served.deferred = Some(format!(
                            "{} left, the longest run took {}: the next trigger runs the rest",
                            human(left),
                            human(longest)
                        ));
                        break;
                    }
                }
                trigger = Trigger::Tick;
            }
        }
    }
    served
}

/// How long to wait for a retry this call should still run, if any.
fn retry_wait(
    idle: &Idle,
    now: Timestamp,
    options: &ServeOptions<'_>,
    platform: &Rc<dyn Platform>,
    longest: Duration,
) -> Option<Duration> {
    let at = match idle {
        Idle::RetryLater { not_before, .. } => *not_before,
        Idle::NothingDue {
            next_retry: Some(at),
            ..
        } => *at,
        _ => return None,
    };
    let wait = Duration::try_from(at.duration_since(now)).ok()?;
    if wait > options.retry_within {
        return None;
    }
    if let Some(d) = platform.deadline() {
        let needed = wait.saturating_add(longest).saturating_add(CATCH_UP_MARGIN);
        if until(now, d.cut_runs_at) < needed {
            return None;
        }
    }
    Some(wait)
}
