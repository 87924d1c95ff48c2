//! One invocation: decode the event, check it against the manifest, claim,
//! run, record, report. Generic over the store, so tests drive it against
//! memory with a fake clock and a fake deadline, without the Lambda runtime.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{
    CasCoordinator, CoordError, EffectLedger, Idle, StateStore, StoreError, TickIndex, Trigger,
    decide, format_instant,
};
use cronslot_core::manifest::{JobSpec, Manifest, format_duration};
use cronslot_core::translate::{Platform as Dialect, dedicated};
use cronslot_runtime::{
    JobError, Jobs, Outcome, Platform, RunReport, ServeOptions, TickJob, TickPlan, TickReport,
    TickServer, TickWork, WokenSchedule, idle_reason, resolve_with, serve, tick_with,
};
use jiff::Timestamp;
use serde_json::{Value, json};

use super::error::{ErrorKind, HandlerError};
use super::event::{self, EventError, Work};
use super::http::HttpRunner;
use super::init::{self, InitError};
use super::log::{self, LogSink};
use super::observe::{FateWatcher, Fates, Observed};
use super::platform::{Clock, LambdaPlatform};

/// Another due slot is claimed only if the time left exceeds the longest
/// run so far in this invocation by this much.
pub const CATCH_UP_MARGIN: Duration = Duration::from_secs(2);

/// A bound on the runs of one job in one invocation, whatever the clock
/// says (the catch-up policies bound them already; this guards the loop).
pub const MAX_RUNS: usize = 1000;

/// What the handler takes from its surroundings.
pub struct Host {
    /// Where `now` comes from.
    pub clock: Clock,
    /// Where log lines go.
    pub log: LogSink,
    /// Seeds retry jitter.
    pub seed: u64,
}

impl Host {
    /// The system clock, stdout, a seed from the clock and process id.
    pub fn system() -> Host {
        let nanos = Timestamp::now().as_nanosecond();
        let seed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
        Host {
            clock: Rc::new(Timestamp::now),
            log: log::stdout(),
            seed,
        }
    }
}

/// One Lambda invocation's identity and deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The Lambda request id: the owner of every lease this invocation takes.
    pub request_id: String,
    /// When Lambda stops the invocation.
    pub deadline: Timestamp,
}

/// Another round of a tick starts only with this much of the invocation
/// left: a round's runs must fit before the deadline, and the runtime
/// starts none within its own margin of it.
const ANOTHER_ROUND: jiff::SignedDuration = jiff::SignedDuration::from_secs(30);

/// What the rounds of one tick came to, for its summary: the window from
/// the first round's start to the last's end, the jobs planned and woken
/// in all, the mark and what was left where the last round ended.
#[derive(Default)]
struct TickTally {
    window: Option<(Timestamp, Timestamp)>,
    planned: usize,
    woken: usize,
    unknown: Vec<String>,
    unresolved: usize,
    mark: Option<Timestamp>,
    left: Option<(usize, String)>,
    round_jobs: Vec<usize>,
}

impl TickTally {
    fn add(&mut self, report: &TickReport<JobReport, HandlerError>) {
        let work = &report.work;
        let planned = work.jobs.iter().filter(|j| j.planned.is_some()).count();
        self.window = Some((self.window.map_or(work.after, |(start, _)| start), work.now));
        self.planned += planned;
        self.woken += work.jobs.len() - planned;
        self.unknown.extend(work.unknown.iter().cloned());
        self.unresolved += report.unresolved.len();
        self.mark = Some(report.mark);
        self.left.clone_from(&report.left);
        self.round_jobs.push(work.jobs.len());
    }

    fn summary(&self) -> Value {
        let (start, end) = self.window.unzip();
        let mut summary = json!({
            "trigger": "tick",
            "window_start": start.map(format_instant),
            "window_end": end.map(format_instant),
            "planned": self.planned,
            "woken": self.woken,
            "unknown_woken": self.unknown,
            "unresolved": self.unresolved,
            "mark": self.mark.map(format_instant),
            "rounds": self.round_jobs.len(),
            "round_jobs": self.round_jobs,
        });
        if let (Some((count, why)), Value::Object(map)) = (&self.left, &mut summary) {
            map.insert("left".into(), Value::from(*count));
            map.insert("left_because".into(), Value::from(why.as_str()));
        }
        summary
    }
}

/// The coordinator of one invocation.
type Coord<S> = Rc<CasCoordinator<Observed<S>>>;

/// Makes the store of one invocation (a DynamoDB store bounded by the
/// invocation's deadline; a shared memory store in tests).
pub type StoreFactory<S> = Box<dyn Fn(&Invocation) -> S>;

/// The function's state across invocations: the manifest, the registered
/// functions, the store factory, the HTTP client (and its connection pool).
///
/// Each invocation gets its own coordinator: its remembered records and
/// observed counters never leak into the next invocation.
pub struct Handler<S> {
    manifest: Manifest,
    specs: BTreeMap<String, Rc<JobSpec>>,
    /// What a tick serves. The manifest plans the slots of tick-mode jobs,
    /// and of dedicated jobs whose schedule has no exact EventBridge
    /// translation (`cronslot render` deploys no schedule of their own for
    /// them). The store's wake index may name any job: a dedicated job's
    /// retry or expired lease is served by the tick too.
    tick_plan: TickPlan,
    jobs: Jobs,
    stores: StoreFactory<S>,
    seed: Cell<u64>,
    /// The function's platform (clock, timers, the HTTP client and its
    /// connection pool); each invocation adds its deadline.
    platform: LambdaPlatform,
    clock: Clock,
    log: LogSink,
}

/// What serving one job in one invocation came to.
struct JobReport {
    runs: Vec<Value>,
    idle: Vec<Value>,
    errors: Vec<HandlerError>,
    /// A claim failed on the store: a tick's mark must not pass the job's
    /// slot.
    claim_failed: bool,
}

impl<S: StateStore + EffectLedger + TickIndex + 'static> Handler<S> {
    /// Checks the manifest against the registered functions (see
    /// [`init::check`]) and builds the handler.
    pub fn new(
        manifest: Manifest,
        jobs: Jobs,
        stores: impl Fn(&Invocation) -> S + 'static,
        host: Host,
    ) -> Result<Handler<S>, InitError> {
        let warnings = init::check(&manifest, &jobs)?;
        for warning in warnings {
            (host.log)(&json!({"level": "warn", "msg": "init", "warning": warning}).to_string());
        }
        let specs: BTreeMap<String, Rc<JobSpec>> = manifest
            .jobs
            .iter()
            .map(|s| (s.name.as_str().to_string(), Rc::new(s.clone())))
            .collect();
        // Dynamic jobs' schedules are served by the tick alone: the wake
        // index names the due ones, and EventBridge holds no rule of theirs.
        let templates = manifest.templates.iter().cloned().map(Rc::new).collect();
        let tick_plan = TickPlan::new(specs.values().cloned().collect(), |s| {
            !matches!(dedicated(s, Dialect::EventBridge), Some(Ok(_)))
        })
        .with_templates(templates);
        Ok(Handler {
            manifest,
            specs,
            tick_plan,
            jobs,
            stores: Box::new(stores),
            seed: Cell::new(host.seed),
            platform: LambdaPlatform::new(host.clock.clone(), Rc::new(HttpRunner::new())),
            clock: host.clock,
            log: host.log,
        })
    }

    /// The manifest the handler serves.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// A coordinator for one invocation, with its own jitter seed.
    fn coordinator(&self, inv: &Invocation) -> Coord<S> {
        let seed = self.seed.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.seed.set(seed);
        Rc::new(CasCoordinator::new(
            FateWatcher::watch((self.stores)(inv)),
            seed,
        ))
    }

    fn emit(&self, line: &Value) {
        (self.log)(&line.to_string());
    }

    /// Handles one event. `Ok` carries a summary of what ran; every failure
    /// is an `Err` (see [`ErrorKind`] for which ones a retry can fix).
    pub async fn handle(&self, payload: &Value, inv: &Invocation) -> Result<Value, HandlerError> {
        let event = match event::decode(payload) {
            Ok(event) => event,
            Err(e) => return Err(self.invalid(inv, None, &e)),
        };
        let work = match event::resolve(&event, &self.manifest) {
            Ok(work) => work,
            Err(e) => {
                let known = event.job().filter(|j| self.manifest.job(j).is_some());
                return Err(self.invalid(inv, known, &e));
            }
        };
        let now = (self.clock)();
        let coord = self.coordinator(inv);
        let (reports, summary) = match work {
            Work::Slot { spec, slot } => {
                let spec = match self.spec(spec) {
                    Ok(spec) => spec,
                    Err(e) => return Err(self.fail_with(inv, None, e)),
                };
                if let Err(e) = self.check_lease(&spec, inv, now) {
                    return Err(self.fail_with(inv, Some(spec.name.as_str()), e));
                }
                let report = self
                    .serve(&coord, spec.clone(), Trigger::Slot(slot), inv)
                    .await;
                let summary = json!({
                    "trigger": "slot",
                    "source": event.source_name(),
                    "job": spec.name.as_str(),
                    "slot": format_instant(slot),
                });
                (vec![report], summary)
            }
            Work::Tick { time } => {
                let (reports, mut summary) = self.tick(&coord, inv, now).await?;
                if let Value::Object(map) = &mut summary {
                    map.insert("source".into(), Value::from(event.source_name()));
                    map.insert("tick_time".into(), Value::from(format_instant(time)));
                    let lag = now.as_millisecond() - time.as_millisecond();
                    map.insert("tick_lag_ms".into(), Value::from(lag));
                }
                (reports, summary)
            }
        };
        self.conclude(inv, reports, summary)
    }

    /// A tick: the runtime's, the same on every platform (docs/design.md
    /// §11): the store's mark and woken jobs, and the manifest's slots since
    /// the mark, say which jobs to serve; they are served at once, and the
    /// mark moves past every slot whose job was served. A job refused for
    /// its configuration (a lease shorter than the invocation) does not hold
    /// the mark (it would hold it for ever): its error fails the invocation.
    async fn tick(
        &self,
        coord: &Coord<S>,
        inv: &Invocation,
        now: Timestamp,
    ) -> Result<(Vec<JobReport>, Value), HandlerError> {
        let platform = self.platform.until(inv.deadline);
        let mut served = Vec::new();
        let mut refused = Vec::new();
        let mut tally = TickTally::default();
        // A tick serves at most a thousand woken jobs; while the index may
        // hold more (a burst) and the invocation has time, it ticks again,
        // so a burst takes as few invocations as their time allows.
        loop {
            let round_now = if tally.round_jobs.is_empty() {
                now
            } else {
                platform.now()
            };
            let report = self.tick_round(coord, inv, round_now, &platform).await?;
            let more = report.work.took_all_it_could() && report.left.is_none();
            tally.add(&report);
            served.extend(report.served);
            refused.extend(report.refused);
            let left = inv.deadline.duration_since(platform.now());
            if !more || left < ANOTHER_ROUND {
                break;
            }
        }
        let summary = tally.summary();
        let mut reports = served;
        reports.push(JobReport {
            runs: Vec::new(),
            idle: Vec::new(),
            errors: refused,
            claim_failed: false,
        });
        Ok((reports, summary))
    }

    /// One round of a tick ([`Handler::tick`]): the runtime's tick, with
    /// its warnings said.
    async fn tick_round(
        &self,
        coord: &Coord<S>,
        inv: &Invocation,
        now: Timestamp,
        platform: &LambdaPlatform,
    ) -> Result<TickReport<JobReport, HandlerError>, HandlerError> {
        let mut server = LambdaTick {
            handler: self,
            coord,
            inv,
            now,
        };
        let report = match tick_with(
            &self.tick_plan,
            coord.store().inner(),
            platform,
            None,
            &mut server,
        )
        .await
        {
            Ok(report) => report,
            Err(e) => return Err(self.fail_with(inv, None, tick_error("read the tick mark", &e))),
        };
        if let Some(e) = &report.mark_error {
            // The next tick plans a longer window, the same jobs again:
            // their records answer that the slots are taken.
            self.emit(&json!({
                "level": "warn",
                "msg": "tick_mark_not_moved",
                "request_id": inv.request_id,
                "error": e.to_string(),
            }));
        }
        // A woken schedule whose spec could not be read (the store failed,
        // or it names a zone this build does not carry) keeps its wake: the
        // next tick reads it again. Said each time, so it is not silent.
        for (schedule, why) in &report.unresolved {
            self.emit(&json!({
                "level": "error",
                "msg": "schedule_unresolved",
                "request_id": inv.request_id,
                "schedule": schedule,
                "error": why,
            }));
        }
        Ok(report)
    }

    fn spec(&self, spec: &JobSpec) -> Result<Rc<JobSpec>, HandlerError> {
        self.specs.get(spec.name.as_str()).cloned().ok_or_else(|| {
            HandlerError::new(
                ErrorKind::InvalidEvent,
                format!("unknown job {:?}", spec.name.as_str()),
            )
        })
    }

    fn conclude(
        &self,
        inv: &Invocation,
        reports: Vec<JobReport>,
        mut summary: Value,
    ) -> Result<Value, HandlerError> {
        let mut runs = Vec::new();
        let mut idle = Vec::new();
        let mut errors = Vec::new();
        for r in reports {
            runs.extend(r.runs);
            idle.extend(r.idle);
            errors.extend(r.errors);
        }
        if let Some(error) = HandlerError::combine(errors) {
            return Err(self.fail_with(inv, None, error));
        }
        if let Value::Object(map) = &mut summary {
            map.insert("runs".into(), Value::Array(runs));
            map.insert("idle".into(), Value::Array(idle));
        }
        Ok(summary)
    }

    fn invalid(&self, inv: &Invocation, job: Option<&str>, e: &EventError) -> HandlerError {
        let error = HandlerError::new(ErrorKind::InvalidEvent, e.to_string());
        let at = (self.clock)();
        self.emit(&log::error_line(
            &inv.request_id,
            job,
            &error,
            Some(&e.path),
            at,
        ));
        error
    }

    fn fail_with(&self, inv: &Invocation, job: Option<&str>, error: HandlerError) -> HandlerError {
        let at = (self.clock)();
        self.emit(&log::error_line(&inv.request_id, job, &error, None, at));
        error
    }

    /// The lease must outlast the invocation (plus the skew margin): a run
    /// cannot heartbeat inside Lambda, so a lease shorter than the time
    /// Lambda may let it run would let a second copy start.
    fn check_lease(
        &self,
        spec: &JobSpec,
        inv: &Invocation,
        now: Timestamp,
    ) -> Result<(), HandlerError> {
        let remaining = until(now, inv.deadline);
        let needed = remaining.saturating_add(spec.skew_margin);
        if spec.lease >= needed {
            return Ok(());
        }
        let up = |d: Duration| {
            format_duration(Duration::from_secs(
                d.as_secs() + u64::from(d.subsec_nanos() > 0),
            ))
        };
        let timeout_max = spec.lease.saturating_sub(spec.skew_margin);
        Err(HandlerError::new(
            ErrorKind::Misconfigured,
            format!(
                "job {:?}: its lease {} is shorter than the function's remaining time {} plus the skew margin {}, so a run could outlive its lease and a second copy could start; raise the job's lease to at least {}, or lower the function timeout to at most {} (lease − skew margin)",
                spec.name.as_str(),
                format_duration(spec.lease),
                up(remaining),
                format_duration(spec.skew_margin),
                up(needed),
                format_duration(timeout_max),
            ),
        ))
    }

    /// Claims and runs one job's slots with the runtime's run loop: the
    /// first claim with `first`, then (while slots are due and time allows)
    /// with a tick, so that `catch_up = "all"` runs every kept late slot. A
    /// failed run ends the job's work in this invocation: the function
    /// returns an error, and Lambda's re-delivery runs the retry.
    async fn serve(
        &self,
        coord: &Coord<S>,
        spec: Rc<JobSpec>,
        first: Trigger,
        inv: &Invocation,
    ) -> JobReport {
        let job = spec.name.as_str();
        // A schedule's record (`job/key`) is not its job's.
        let record = spec.record_name();
        let platform: Rc<dyn Platform> = Rc::new(self.platform.until(inv.deadline));
        let more_due = |spec: &JobSpec, now: Timestamp| more_due(coord, spec, now);
        let options = ServeOptions {
            owner: &inv.request_id,
            trigger: first,
            retry_within: Duration::ZERO,
            more_due: Some(&more_due),
        };
        let served = serve(coord, &spec, &self.jobs, &platform, &options).await;
        let mut report = JobReport {
            runs: Vec::new(),
            idle: Vec::new(),
            errors: Vec::new(),
            claim_failed: served.claim_error.is_some() && served.runs.is_empty(),
        };
        // Slots given a fate by this job's writes (missed by a claim, dead
        // by a failure): on the last run's line, or a line of their own.
        let fates = coord.store().watcher().take_fates(&record);
        let last = served.runs.len().saturating_sub(1);
        for (i, run) in served.runs.iter().enumerate() {
            let fates = if i == last { fates } else { Fates::default() };
            report.runs.push(self.run_line(inv, run, fates));
            if let Some(e) = run_error(run) {
                report.errors.push(e);
            }
        }
        if served.runs.is_empty() {
            self.fates(inv, job, fates);
        }
        if let Some(e) = &served.claim_error {
            report.errors.push(coord_error(job, "claim", e));
        }
        if let Some((trigger, idle)) = served.idle {
            self.idle(&mut report, &spec, trigger, idle, inv, (self.clock)());
        }
        if let Some(reason) = served.deferred {
            self.emit(&json!({
                "level": "warn",
                "msg": "catch_up_deferred",
                "request_id": inv.request_id,
                "job": job,
                "reason": reason,
            }));
        }
        report
    }

    /// Logs a run's line (its EMF document) and returns its summary.
    fn run_line(&self, inv: &Invocation, run: &RunReport, fates: Fates) -> Value {
        self.emit(&log::run_line(&inv.request_id, run, fates));
        let mut line = json!({
            "job": run.job,
            "slot": format_instant(run.slot),
            "attempt": run.attempt,
            "fence": run.fence,
            "outcome": run.outcome.as_str(),
        });
        if let (Some(key), Value::Object(map)) = (&run.key, &mut line) {
            map.insert("key".into(), Value::from(key.as_str()));
        }
        line
    }

    fn fates(&self, inv: &Invocation, job: &str, fates: Fates) {
        if let Some(line) = log::fates_line(&inv.request_id, job, fates, (self.clock)()) {
            self.emit(&line);
        }
    }

    fn idle(
        &self,
        report: &mut JobReport,
        spec: &JobSpec,
        trigger: Trigger,
        idle: Idle,
        inv: &Invocation,
        now: Timestamp,
    ) {
        let job = spec.name.as_str();
        let dedicated = matches!(trigger, Trigger::Slot(_));
        let error = match &idle {
            Idle::RetryLater { slot, not_before } => Some(HandlerError::new(
                ErrorKind::RetryLater,
                format!(
                    "slot {job}@{} failed and its retry waits until {}: this re-delivery came early; a later one will run it",
                    format_instant(*slot),
                    format_instant(*not_before)
                ),
            )),
            Idle::NotYetDue { slot } => Some(HandlerError::new(
                ErrorKind::NotReady,
                format!(
                    "slot {job}@{} is not due at {} (beyond the skew margin of {}): a clock is wrong, or the event was sent early",
                    format_instant(*slot),
                    format_instant(now),
                    format_duration(spec.skew_margin)
                ),
            )),
            Idle::Busy { live } if dedicated => Some(HandlerError::new(
                ErrorKind::NotReady,
                format!(
                    "job {job:?} is busy: {live} run(s) hold its lease and overlap = {}; a re-delivery (or the running invocation's catch-up) runs the slot once it is free",
                    spec.overlap
                ),
            )),
            _ => None,
        };
        if let Some(e) = error {
            report.errors.push(e);
            return;
        }
        let (reason, detail) = idle_reason(&idle);
        self.emit(&log::idle_line(
            &inv.request_id,
            job,
            reason,
            detail.clone(),
        ));
        report
            .idle
            .push(json!({"job": job, "reason": reason, "detail": detail}));
    }
}

/// Is another slot or retry of the job due, judging by the record the last
/// write left? (Costs no request; a wrong guess costs one read.)
fn more_due<S>(coord: &Coord<S>, spec: &JobSpec, now: Timestamp) -> bool {
    coord
        .known(&spec.record_name())
        .is_some_and(|record| decide::more_due(spec, &record.value, now))
}

/// How the Lambda serves a tick: a job is admitted when its lease outlasts
/// the invocation; admitted jobs are served at once, each with the
/// handler's own run loop and log lines.
struct LambdaTick<'a, S> {
    handler: &'a Handler<S>,
    coord: &'a Coord<S>,
    inv: &'a Invocation,
    now: Timestamp,
}

impl<S: StateStore + EffectLedger + TickIndex + 'static> TickServer for LambdaTick<'_, S> {
    type Served = JobReport;
    type Refusal = HandlerError;

    fn admit(&self, job: &TickJob) -> Result<(), HandlerError> {
        self.handler.check_lease(&job.spec, self.inv, self.now)
    }

    async fn serve(&mut self, _work: &TickWork, jobs: &[&TickJob]) -> Vec<JobReport> {
        let serving = jobs.iter().map(|job| {
            self.handler
                .serve(self.coord, job.spec.clone(), job.trigger(), self.inv)
        });
        join_all(serving.collect()).await
    }

    fn claim_failed(served: &JobReport) -> bool {
        served.claim_failed
    }

    /// A woken schedule's spec, read from the store (the read its claim
    /// then starts from).
    async fn resolve(
        &self,
        woken: &WokenSchedule,
        now: Timestamp,
    ) -> Result<Option<Rc<JobSpec>>, String> {
        resolve_with(&**self.coord, woken, now).await
    }
}

/// The invocation's error when the tick's own store requests fail.
fn tick_error(doing: &str, e: &StoreError) -> HandlerError {
    let kind = if CoordError::Store(e.clone()).is_transient() {
        ErrorKind::StoreUnavailable
    } else {
        ErrorKind::StoreFailed
    };
    HandlerError::new(kind, format!("could not {doing}: {e}"))
}

/// The invocation's error for a run that did not succeed: Lambda retries
/// the event on any error, and the error type says which.
fn run_error(run: &RunReport) -> Option<HandlerError> {
    let slot_id = run.slot_id();
    let what = |e: &JobError| {
        let kind = if e.is_permanent() {
            "permanently"
        } else {
            "transiently"
        };
        format!(
            "slot {slot_id} attempt {} failed {kind}: {}",
            run.attempt,
            e.message()
        )
    };
    let refused = run.record_error.clone().unwrap_or_default();
    match (run.outcome, &run.job_error) {
        (Outcome::Succeeded, _) => None,
        (Outcome::Retrying { at }, Some(e)) => Some(HandlerError::new(
            ErrorKind::RunFailed,
            format!("{}; its retry may start at {}", what(e), format_instant(at)),
        )),
        (Outcome::Dead, Some(e)) => Some(HandlerError::new(
            ErrorKind::SlotDead,
            format!(
                "{}; the slot is a dead letter (redrive it with `cronslot dlq`)",
                what(e)
            ),
        )),
        (Outcome::LeaseLost, Some(e)) => Some(HandlerError::new(
            ErrorKind::LeaseLost,
            format!("{}; and {refused}", what(e)),
        )),
        (Outcome::LeaseLost, None) => Some(HandlerError::new(
            ErrorKind::LeaseLost,
            format!("slot {slot_id} ran, but {refused}"),
        )),
        (_, job_error) => {
            let doing = match job_error {
                Some(e) => format!("record that {}", what(e)),
                None => format!("record the success of {slot_id}"),
            };
            Some(match &run.store_error {
                Some(e) => coord_error(&run.job, &doing, e),
                None => HandlerError::new(
                    ErrorKind::StoreFailed,
                    format!("job {:?}: could not {doing}: {refused}", run.job),
                ),
            })
        }
    }
}

fn coord_error(job: &str, doing: &str, e: &CoordError) -> HandlerError {
    let kind = match e {
        CoordError::Trigger(_) => ErrorKind::InvalidEvent,
        CoordError::Refused(_) => ErrorKind::LeaseLost,
        _ if e.is_transient() => ErrorKind::StoreUnavailable,
        _ => ErrorKind::StoreFailed,
    };
    HandlerError::new(kind, format!("job {job:?}: could not {doing}: {e}"))
}

/// The time from `from` to `to`, zero if `to` is not later.
fn until(from: Timestamp, to: Timestamp) -> Duration {
    Duration::try_from(to.duration_since(from)).unwrap_or(Duration::ZERO)
}
