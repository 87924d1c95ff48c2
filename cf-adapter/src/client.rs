//! The Worker's side of the objects: a [`Coordinator`] that sends each
//! operation to the object of its job, and a [`TickIndex`] over the tick
//! object. The transport is a parameter: the Durable Object stub in
//! workerd, an HTTP client or the object itself in-process in tests.
#![allow(async_fn_in_trait)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use cronslot_core::coord::{
    Claim, CoordError, Coordinator, EffectBegin, EffectFinish, EffectRecord, FailOutcome, JobState,
    Operator, StoreError, StoreErrorKind, TickIndex, TickStart, Trigger,
};
use cronslot_core::manifest::JobSpec;
use jiff::Timestamp;

use crate::protocol::{
    Answer, ObjectReply, ObjectRequest, Op, PROTOCOL_VERSION, TICK_OBJECT, Woken,
};
use crate::spec_text::encode_spec;

#[cfg(feature = "schedules")]
#[path = "client_schedules.rs"]
mod schedules;

/// Carries one request body to the object named `job` and returns its
/// answer body. A transport error is a store error (the object was not
/// reached, or its answer was lost).
pub trait Transport {
    /// Sends `body` to the object of `job` and returns its answer's body.
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError>;
}

/// Sends one operation to the object named `object` and decodes the answer.
async fn exchange<T: Transport>(
    transport: &T,
    object: &str,
    spec: String,
    op: Op,
) -> Result<Answer, CoordError> {
    let request = ObjectRequest {
        protocol: PROTOCOL_VERSION,
        job: object.to_string(),
        spec,
        op,
        #[cfg(feature = "schedules")]
        schedule: None,
    };
    send_request(transport, &request)
        .await?
        .map_err(CoordError::from)
}

/// Sends `request` and decodes the object's reply: the outer error is the
/// transport's or an unreadable answer, the inner one the object's.
async fn send_request<T: Transport>(
    transport: &T,
    request: &ObjectRequest,
) -> Result<ObjectReply, CoordError> {
    let (object, name) = (request.job.as_str(), request.op.name());
    let body = serde_json::to_string(request)
        .map_err(|e| StoreError::other(format!("encoding a {name} request: {e}")))?;
    let answer = transport.call(object, body).await?;
    cronslot_core::json::from_str(&answer).map_err(|e| {
        // The object ran (or not) and its answer is unreadable: whether a
        // write happened is unknown.
        CoordError::Store(StoreError::new(
            StoreErrorKind::Ambiguous,
            format!("the object {object:?} answered {name} with something unreadable: {e}"),
        ))
    })
}

/// Where a job's (or a schedule's) requests go: its object, its spec
/// text, and for a schedule its address among the job's objects.
#[derive(Clone)]
struct Target {
    object: String,
    spec: String,
    #[cfg(feature = "schedules")]
    schedule: Option<crate::protocol::ScheduleAt>,
}

impl Target {
    fn request(&self, op: Op) -> ObjectRequest {
        ObjectRequest {
            protocol: PROTOCOL_VERSION,
            job: self.object.clone(),
            spec: self.spec.clone(),
            op,
            #[cfg(feature = "schedules")]
            schedule: self.schedule.clone(),
        }
    }
}

/// What the object said after recording a run's end.
#[derive(Debug, Clone, Copy)]
struct Recorded {
    /// Another claim may find something now.
    more_due: bool,
    /// The failed slot's retry, if it has one.
    retry_at: Option<Timestamp>,
}

/// A coordinator whose store is one object per job, and a dynamic job's
/// schedules spread over several objects by key.
pub struct ObjectClient<T> {
    transport: T,
    /// Where each record's requests went last (by record name), for effect
    /// operations (which name only a key).
    specs: RefCell<HashMap<String, Target>>,
    /// How many objects each dynamic job's schedules are spread over.
    #[cfg(feature = "schedules")]
    schedule_objects: u32,
    /// What each job's object said when it last recorded a run's end.
    recorded: RefCell<HashMap<String, Recorded>>,
}

impl<T: Transport> ObjectClient<T> {
    /// A client sending every operation through `transport`.
    pub fn new(transport: T) -> ObjectClient<T> {
        ObjectClient {
            transport,
            specs: RefCell::new(HashMap::new()),
            #[cfg(feature = "schedules")]
            schedule_objects: crate::protocol::DEFAULT_SCHEDULE_OBJECTS,
            recorded: RefCell::new(HashMap::new()),
        }
    }

    /// Spreads each dynamic job's schedules over `objects` objects (1 to
    /// [`MAX_SCHEDULE_OBJECTS`](crate::protocol::MAX_SCHEDULE_OBJECTS);
    /// [`DEFAULT_SCHEDULE_OBJECTS`](crate::protocol::DEFAULT_SCHEDULE_OBJECTS)
    /// by default). The count decides which object holds each key: an
    /// object refuses requests that count otherwise than those that wrote
    /// it, so it is chosen once, before the first schedule is written.
    #[cfg(feature = "schedules")]
    pub fn with_schedule_objects(mut self, objects: u32) -> ObjectClient<T> {
        self.schedule_objects = objects.clamp(1, crate::protocol::MAX_SCHEDULE_OBJECTS);
        self
    }

    /// Whether another claim of the job (`job`: its record's name, `job/key`
    /// for a schedule) may find something to run at
    /// `now`, judging by what its object answered when this client last
    /// recorded a run's end (the runtime's
    /// [`ServeOptions::more_due`](cronslot_runtime::ServeOptions::more_due)):
    /// a slot or retry due, or a retry due within `retry_within` (the run
    /// loop waits for it). `true` when the client recorded nothing since
    /// its last claim of the job: a wrong guess costs one claim.
    pub fn more_due(&self, job: &str, now: Timestamp, retry_within: Duration) -> bool {
        let Some(r) = self.recorded.borrow().get(job).copied() else {
            return true;
        };
        let soon = within(now, retry_within);
        r.more_due || r.retry_at.is_some_and(|at| at <= soon)
    }

    fn note(&self, job: &str, recorded: Option<Recorded>) {
        let mut map = self.recorded.borrow_mut();
        match recorded {
            Some(r) => {
                map.insert(job.to_string(), r);
            }
            None => {
                map.remove(job);
            }
        }
    }

    /// The transport the client sends through.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Where `spec`'s requests go. Its text is rendered on every call
    /// (small next to the request it rides on, its zone's TZif data
    /// included): the same job name may carry a changed spec, and the
    /// object must plan with the new one.
    fn target(&self, spec: &JobSpec) -> Target {
        let target = Target {
            #[cfg(feature = "schedules")]
            object: match &spec.key {
                Some(key) => crate::protocol::schedule_object(
                    spec.name.as_str(),
                    key.as_str(),
                    self.schedule_objects,
                ),
                None => spec.name.as_str().to_string(),
            },
            #[cfg(not(feature = "schedules"))]
            object: spec.name.as_str().to_string(),
            spec: encode_spec(spec),
            #[cfg(feature = "schedules")]
            schedule: spec.key.as_ref().map(|key| crate::protocol::ScheduleAt {
                objects: self.schedule_objects,
                key: Some(key.as_str().to_string()),
                version: spec.schedule_version,
            }),
        };
        self.specs
            .borrow_mut()
            .insert(spec.record_name().into_owned(), target.clone());
        target
    }

    async fn send(&self, target: &Target, op: Op) -> Result<Answer, CoordError> {
        send_request(&self.transport, &target.request(op))
            .await?
            .map_err(CoordError::from)
    }

    async fn op(&self, spec: &JobSpec, op: Op) -> Result<Answer, CoordError> {
        self.send(&self.target(spec), op).await
    }

    /// The record as stored (not brought up to now); `None` before the
    /// job's first claim.
    pub async fn record(&self, spec: &JobSpec) -> Result<Option<JobState>, CoordError> {
        match self.op(spec, Op::Record).await? {
            Answer::Record(r) => Ok(r.map(|b| *b)),
            other => Err(unexpected("record", &other)),
        }
    }

    /// Gives `job`'s record the wake (the object's alarm) it needs if it
    /// was written before objects kept one ([`Op::RepairWake`]); returns
    /// the wake given, `None` when it needed none.
    pub async fn repair_wake(&self, job: &str) -> Result<Option<Timestamp>, CoordError> {
        match exchange(&self.transport, job, String::new(), Op::RepairWake).await? {
            Answer::Repaired(wake) => Ok(wake),
            other => Err(unexpected("repair_wake", &other)),
        }
    }

    /// Effects live in the object of their job (or schedule); the key
    /// names it (`<job>@<slot>/<name>`, `<job>/<key>@<slot>/<name>`), and
    /// the requests go where the record's went last.
    async fn effect_op(&self, key: &str, op: Op) -> Result<Answer, CoordError> {
        let record = key
            .split_once('@')
            .map(|(record, _)| record)
            .ok_or_else(|| {
                StoreError::other(format!(
                    "effect key {key:?} does not name its job (expected <job>@<slot>/<name>)"
                ))
            })?;
        let target = self.specs.borrow().get(record).cloned().ok_or_else(|| {
            StoreError::other(format!(
                "effect key {key:?}: job {record:?} has not been used through this client"
            ))
        })?;
        self.send(&target, op).await
    }
}

/// An answer of the wrong kind, named by its kind: its contents are not
/// printed (a debug dump of a record would bring every type's `Debug` into
/// the Worker, docs/performance.md "Worker size").
fn unexpected(op: &str, answer: &Answer) -> CoordError {
    CoordError::Store(StoreError::other(format!(
        "the object answered {op} with the answer to another operation ({})",
        answer.name()
    )))
}

/// Without the feature `schedules` a Worker serves no dynamic jobs: its
/// manifest has none (the build refuses them), so its tick plan has no
/// templates and never asks.
#[cfg(not(feature = "schedules"))]
impl<T: Transport> cronslot_runtime::ScheduleSource for ObjectClient<T> {
    async fn schedule_spec(
        &self,
        template: &cronslot_core::manifest::JobTemplate,
        key: &cronslot_core::schedules::ScheduleKey,
        _read: Option<(
            &cronslot_core::coord::Versioned<cronslot_core::coord::JobState>,
            Timestamp,
        )>,
        _now: Timestamp,
    ) -> Result<Option<JobSpec>, String> {
        Err(format!(
            "{}/{key}: this Worker is built without cronslot-cf's feature `schedules`",
            template.name
        ))
    }
}

impl<T: Transport> Coordinator for ObjectClient<T> {
    async fn claim(
        &self,
        spec: &JobSpec,
        now: Timestamp,
        trigger: Trigger,
        owner: &str,
    ) -> Result<Claim, CoordError> {
        let op = Op::Claim {
            now,
            trigger,
            owner: owner.to_string(),
        };
        self.note(&spec.record_name(), None);
        match self.op(spec, op).await? {
            Answer::Claim(c) => Ok(c),
            other => Err(unexpected("claim", &other)),
        }
    }

    async fn complete(
        &self,
        spec: &JobSpec,
        fence: u64,
        result: Option<&str>,
        now: Timestamp,
    ) -> Result<(), CoordError> {
        let op = Op::Complete {
            fence,
            result: result.map(str::to_string),
            now,
        };
        match self.op(spec, op).await? {
            Answer::Completed { more_due } => {
                let recorded = Recorded {
                    more_due,
                    retry_at: None,
                };
                self.note(&spec.record_name(), Some(recorded));
                Ok(())
            }
            other => Err(unexpected("complete", &other)),
        }
    }

    async fn fail(
        &self,
        spec: &JobSpec,
        fence: u64,
        error: &str,
        permanent: bool,
        now: Timestamp,
    ) -> Result<FailOutcome, CoordError> {
        let op = Op::Fail {
            fence,
            error: error.to_string(),
            permanent,
            now,
        };
        match self.op(spec, op).await? {
            Answer::Failed { outcome, more_due } => {
                let retry_at = match outcome {
                    FailOutcome::RetryAt(at) => Some(at),
                    _ => None,
                };
                self.note(&spec.record_name(), Some(Recorded { more_due, retry_at }));
                Ok(outcome)
            }
            other => Err(unexpected("fail", &other)),
        }
    }

    async fn heartbeat(
        &self,
        spec: &JobSpec,
        fence: u64,
        now: Timestamp,
    ) -> Result<Timestamp, CoordError> {
        match self.op(spec, Op::Heartbeat { fence, now }).await? {
            Answer::Expiry(t) => Ok(t),
            other => Err(unexpected("heartbeat", &other)),
        }
    }

    async fn checkpoint(
        &self,
        spec: &JobSpec,
        fence: u64,
        value: &str,
        now: Timestamp,
    ) -> Result<(), CoordError> {
        let op = Op::Checkpoint {
            fence,
            value: value.to_string(),
            now,
        };
        match self.op(spec, op).await? {
            Answer::Done => Ok(()),
            other => Err(unexpected("checkpoint", &other)),
        }
    }

    async fn begin_effect(
        &self,
        spec: &JobSpec,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, CoordError> {
        let op = Op::BeginEffect {
            key: key.to_string(),
            owner: owner.to_string(),
            fence,
            now,
            hold_ms: u64::try_from(hold.as_millis()).unwrap_or(u64::MAX),
        };
        match self.op(spec, op).await? {
            Answer::EffectBegin(b) => Ok(b),
            other => Err(unexpected("begin_effect", &other)),
        }
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, CoordError> {
        let op = Op::FinishEffect {
            key: key.to_string(),
            fence,
            result: result.to_string(),
            now,
        };
        match self.effect_op(key, op).await? {
            Answer::EffectFinish(f) => Ok(f),
            other => Err(unexpected("finish_effect", &other)),
        }
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, CoordError> {
        let op = Op::ReadEffect {
            key: key.to_string(),
        };
        match self.effect_op(key, op).await? {
            Answer::Effect(e) => Ok(e),
            other => Err(unexpected("read_effect", &other)),
        }
    }
}

impl<T: Transport> Operator for ObjectClient<T> {
    async fn status(&self, spec: &JobSpec, now: Timestamp) -> Result<JobState, CoordError> {
        match self.op(spec, Op::Status { now }).await? {
            Answer::State(s) => Ok(*s),
            other => Err(unexpected("status", &other)),
        }
    }

    async fn pause(&self, spec: &JobSpec, now: Timestamp) -> Result<(), CoordError> {
        match self.op(spec, Op::Pause { now }).await? {
            Answer::Done => Ok(()),
            other => Err(unexpected("pause", &other)),
        }
    }

    async fn resume(&self, spec: &JobSpec, now: Timestamp) -> Result<(), CoordError> {
        match self.op(spec, Op::Resume { now }).await? {
            Answer::Done => Ok(()),
            other => Err(unexpected("resume", &other)),
        }
    }

    async fn redrive(
        &self,
        spec: &JobSpec,
        slot: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Vec<Timestamp>, CoordError> {
        match self.op(spec, Op::Redrive { slot, now }).await? {
            Answer::Slots(s) => Ok(s),
            other => Err(unexpected("redrive", &other)),
        }
    }

    async fn backfill(
        &self,
        spec: &JobSpec,
        from: Timestamp,
        to: Timestamp,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<Vec<Timestamp>, CoordError> {
        let op = Op::Backfill {
            from,
            to,
            now,
            dry_run,
        };
        match self.op(spec, op).await? {
            Answer::Slots(s) => Ok(s),
            other => Err(unexpected("backfill", &other)),
        }
    }
}

/// `now` plus a wait, saturating.
fn within(now: Timestamp, wait: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(wait)
        .ok()
        .and_then(|d| now.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// The tick object, as a [`TickIndex`]: `tick_start` and `tick_end` are one
/// request each. It remembers the woken jobs `tick_start` returned and
/// reports them served in `tick_end`, which the runtime's tick calls once
/// it has served every job: the tick object then drops each entry whose
/// wake is still the one returned. The jobs the tick leaves (`leave`: a
/// bound on the jobs per tick, a failed claim) go with `tick_end` too: a
/// woken one is not reported served, a planned one is kept at its slot and
/// comes back as `TickStart::carried` (planned at that slot, so a job's
/// first slot still creates its record before it). The next tick gets them
/// all, and the mark need not wait for them (which, with more jobs at one
/// slot than a tick serves, would have the next tick plan the same first
/// jobs again). Should a report be wrong
/// anyway, a woken job keeps its wake in its own record, and its object's
/// alarm, re-armed when it sent the wake, sends it again (`crate::object`,
/// "Why no wake is lost").
pub struct TickClient<'t, T> {
    transport: &'t T,
    woken: RefCell<Vec<Woken>>,
    /// Planned jobs the tick left, sent with `tick_end`.
    left: RefCell<Vec<Woken>>,
}

impl<'t, T: Transport> TickClient<'t, T> {
    /// A client of the tick object through `transport`.
    pub fn new(transport: &'t T) -> TickClient<'t, T> {
        TickClient {
            transport,
            woken: RefCell::new(Vec::new()),
            left: RefCell::new(Vec::new()),
        }
    }

    /// Sends records' wakes to the tick object (what an object's alarm
    /// does).
    pub async fn wake(&self, woken: Vec<Woken>) -> Result<(), StoreError> {
        match self.send(Op::Wakes { woken }).await? {
            Answer::Done => Ok(()),
            other => Err(store_error(unexpected("wake", &other))),
        }
    }

    async fn send(&self, op: Op) -> Result<Answer, StoreError> {
        exchange(self.transport, TICK_OBJECT, String::new(), op)
            .await
            .map_err(store_error)
    }
}

/// The tick index speaks in store errors.
fn store_error(e: CoordError) -> StoreError {
    match e {
        CoordError::Store(s) => s,
        other => StoreError::other(other.to_string()),
    }
}

impl<T: Transport> TickIndex for TickClient<'_, T> {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        match self.send(Op::TickStart { now, limit }).await? {
            Answer::Tick {
                mark,
                woken,
                carried,
            } => {
                let names = woken.iter().map(|w| w.job.clone()).collect();
                let left = carried.iter().map(|w| (w.job.clone(), w.at)).collect();
                // Both kinds of entry are reported served at the tick's end,
                // unless the tick leaves them again.
                *self.woken.borrow_mut() = woken.into_iter().chain(carried).collect();
                Ok(TickStart {
                    mark,
                    now,
                    woken: names,
                    records: Vec::new(),
                    carried: left,
                    // An object's alarm sends its wakes when they come.
                    next_wake: None,
                })
            }
            other => Err(store_error(unexpected("tick_start", &other))),
        }
    }

    fn leave(&self, planned: &[(&str, Timestamp)], woken: &[&str]) -> bool {
        self.woken.borrow_mut().retain(|w| {
            let job = w.job.as_str();
            !woken.contains(&job) && !planned.iter().any(|(left, _)| *left == job)
        });
        *self.left.borrow_mut() = planned
            .iter()
            .map(|(job, slot)| Woken {
                job: (*job).to_string(),
                at: *slot,
            })
            .collect();
        true
    }

    /// The tick object lets go of the woken jobs it handed out when the
    /// mark moves: every tick ends with that request.
    fn tick_end_moves_only_the_mark(&self) -> bool {
        false
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        let served = self.woken.borrow().clone();
        let left = self.left.borrow().clone();
        match self.send(Op::TickEnd { mark, served, left }).await? {
            Answer::Done => {
                self.woken.borrow_mut().clear();
                self.left.borrow_mut().clear();
                Ok(())
            }
            other => Err(store_error(unexpected("tick_end", &other))),
        }
    }
}
