//! The job's Durable Object, without the runtime: decode a request, apply
//! the core's transition through the generic coordinator over the object's
//! own storage, encode the answer.
//!
//! The object is the only writer of its storage and runs one request at a
//! time (its code never awaits anything but its own synchronous storage),
//! so the coordinator's compare-and-set never conflicts here: the object
//! *is* the serialisation point. The coordinator is reused, not rewritten,
//! so the object agrees with every other store to the letter.
//!
//! One more object of the same class, named [`TICK_OBJECT`], holds the
//! tick mark and the woken jobs ([`crate::tick_store`]); the same code
//! serves it, by the request's name. A job object's alarm is its record's
//! wake ([`crate::object_store`]); when it fires, [`JobObject::alarm_start`]
//! and [`JobObject::alarm_end`] decide what to send the tick object and
//! when to fire again.
//!
//! Why no wake is lost. The alarm is durable and committed with the record
//! whose wake it is (the same storage commit); it fires at least once. It
//! sends the wake to the tick object, and re-arms itself (a minute later
//! when the send failed, two minutes later when it succeeded) for as long
//! as the record's wake stays the same, so a wake the tick object did not
//! get, or that a tick took but served without changing the record (a
//! claim that failed, or found the job busy), is sent again. Only a write
//! of the record moves or deletes the alarm, and that write sets the alarm
//! to the record's next wake. In the tick object, an entry is replaced
//! only by the job's newer wake and removed only by a tick that served
//! that exact wake. Repeated sends cost requests, never slots.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::{
    CasCoordinator, CoordError, Coordinator, StateStore, StoreError, decide, repair_wake,
};
use cronslot_core::manifest::JobSpec;
use jiff::{SignedDuration, Timestamp};

#[cfg(feature = "schedules")]
#[path = "object_schedules.rs"]
mod schedules;

use crate::object_store::{ObjectStore, alarm_ms};
use crate::protocol::{
    Answer, ObjectReply, ObjectRequest, Op, PROTOCOL_VERSION, TICK_OBJECT, WireError, Woken,
    protocol_refusal, request_protocol,
};
use crate::spec_text::decode_spec;
use crate::sql::{Alarm, NoAlarm, Sql, SqlValue};
use crate::tick_store::TickTables;
use cronslot_core::coord::Operator;

/// A wake this close ahead counts as come when its alarm fires (clocks and
/// alarm times differ by milliseconds; the tick takes entries only when
/// due anyway).
const ALARM_SLACK: SignedDuration = SignedDuration::from_secs(1);

/// When a wake could not be sent to the tick object, the alarm tries again
/// this much later (the platform's own alarm retries are bounded).
pub const WAKE_RETRY: SignedDuration = SignedDuration::from_secs(60);

/// After a wake was sent, the alarm fires again this much later if the
/// record still has the same wake: the tick that took it did not change
/// the record (its claim failed, or found the job busy). Two minutes, so a
/// tick a little late does not cost a second send.
pub const WAKE_REMINDER: SignedDuration = SignedDuration::from_secs(120);

/// Largest request body the object reads: a spec and a few fields; a
/// checkpoint or effect result is bounded by the core far below this.
pub(crate) const MAX_REQUEST_BYTES: usize = 512 * 1024;

/// One object of the class: a job's (its coordinator and the last spec it
/// parsed), or the tick object.
pub struct JobObject<S, A = NoAlarm> {
    coordinator: CasCoordinator<ObjectStore<S, A>>,
    /// The spec text of the last request and its parse: a Worker sends the
    /// same text every time, so it is parsed once per object start.
    spec: RefCell<Option<(String, Rc<JobSpec>)>>,
    /// The tick object's tables (used only when it is the tick object).
    tick: TickTables,
    /// A schedule object's dynamic job: its text and parse.
    #[cfg(feature = "schedules")]
    template: RefCell<Option<(String, Rc<cronslot_core::manifest::JobTemplate>)>>,
    /// How many objects a schedule object's job is spread over, once read.
    #[cfg(feature = "schedules")]
    objects: Cell<Option<u32>>,
    /// Whether requests and alarms are counted in storage.
    counting: Cell<bool>,
}

impl<S: Sql> JobObject<S> {
    /// An object without an alarm. `seed` seeds retry jitter (the
    /// runtime's randomness in workerd).
    pub fn new(sql: S, seed: u64) -> JobObject<S> {
        JobObject::with_alarm(sql, NoAlarm, seed)
    }
}

/// What a fired alarm does next ([`JobObject::alarm_start`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlarmStep {
    /// Nothing: no record has a wake (any more).
    Nothing,
    /// No wake has come: the alarm was set to the earliest.
    Rearmed,
    /// These wakes have come (earliest first, at most
    /// [`MAX_WAKES_SENT`](crate::object_store::MAX_WAKES_SENT)): send them
    /// to the tick object, then call [`JobObject::alarm_end`].
    Send(Vec<Woken>),
}

impl<S: Sql, A: Alarm> JobObject<S, A> {
    /// An object whose alarm is `alarm`. `seed` seeds retry jitter.
    pub fn with_alarm(sql: S, alarm: A, seed: u64) -> JobObject<S, A> {
        JobObject {
            coordinator: CasCoordinator::new(ObjectStore::with_alarm(sql, alarm), seed),
            spec: RefCell::new(None),
            tick: TickTables::default(),
            #[cfg(feature = "schedules")]
            template: RefCell::new(None),
            #[cfg(feature = "schedules")]
            objects: Cell::new(None),
            counting: Cell::new(false),
        }
    }

    /// Counts every request (but [`Op::Requests`]) and alarm in storage,
    /// for tests that measure what a tick costs.
    pub fn count_requests(&self, on: bool) {
        self.counting.set(on);
    }

    /// The object's storage.
    pub fn store(&self) -> &ObjectStore<S, A> {
        self.coordinator.store()
    }

    /// The alarm fired at `now`: decides from the records' wakes which to
    /// send to the tick object, or sets the alarm to a later one.
    pub fn alarm_start(&self, now: Timestamp) -> Result<AlarmStep, StoreError> {
        self.count(true);
        let store = self.store();
        let due = store.due_wakes(alarm_ms(now.saturating_add(ALARM_SLACK).unwrap_or(now)))?;
        if !due.is_empty() {
            return Ok(AlarmStep::Send(due));
        }
        store.rearm()?;
        Ok(match store.wake()? {
            None => AlarmStep::Nothing,
            Some(_) => AlarmStep::Rearmed,
        })
    }

    /// After sending `sent` to the tick object (`delivered` tells whether
    /// it arrived), at `now`: each wake sent is sent again
    /// ([`WAKE_RETRY`] or [`WAKE_REMINDER`] later) while its record keeps
    /// it; a wake that moved meanwhile is due at its own time. The alarm is
    /// set to the earliest (at once when more have come than one alarm
    /// sends).
    pub fn alarm_end(
        &self,
        sent: &[Woken],
        delivered: bool,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let again = if delivered { WAKE_REMINDER } else { WAKE_RETRY };
        let again_ms = alarm_ms(now.saturating_add(again).unwrap_or(Timestamp::MAX));
        self.store().sent(sent, again_ms)
    }

    /// Requests and alarms counted so far.
    fn counts(&self) -> Result<(u64, u64), StoreError> {
        let rows = self
            .store()
            .sql()
            .exec(
                "SELECT requests, alarms FROM cronslot_requests WHERE singleton = 1",
                &[],
            )
            .unwrap_or_default();
        let n = |v: Option<&SqlValue>| v.and_then(SqlValue::as_integer).unwrap_or(0).max(0) as u64;
        Ok(rows.first().map_or((0, 0), |r| (n(r.first()), n(r.get(1)))))
    }

    /// Counts one request or alarm, when counting.
    fn count(&self, alarm: bool) {
        if !self.counting.get() {
            return;
        }
        let sql = self.store().sql();
        let _ = sql.exec(
            "CREATE TABLE IF NOT EXISTS cronslot_requests (\
               singleton INTEGER PRIMARY KEY CHECK (singleton = 1), \
               requests INTEGER NOT NULL, alarms INTEGER NOT NULL)",
            &[],
        );
        let (r, a) = if alarm { (0, 1) } else { (1, 0) };
        let _ = sql.exec(
            "INSERT INTO cronslot_requests (singleton, requests, alarms) VALUES (1, ?, ?) \
             ON CONFLICT (singleton) DO UPDATE SET requests = requests + excluded.requests, \
             alarms = alarms + excluded.alarms",
            &[SqlValue::Integer(r), SqlValue::Integer(a)],
        );
    }

    /// Serves one request body; the answer is always JSON of an
    /// [`ObjectReply`], errors included.
    pub async fn handle_text(&self, body: &str) -> String {
        let reply = if body.len() > MAX_REQUEST_BYTES {
            self.count(false);
            Err(WireError::BadRequest {
                message: format!(
                    "the request is {} bytes, more than the {MAX_REQUEST_BYTES} an object reads",
                    body.len()
                ),
            })
        } else if let Some(requested) = request_protocol(body).filter(|p| *p > PROTOCOL_VERSION) {
            self.count(false);
            Err(protocol_refusal(requested))
        } else {
            match cronslot_core::json::from_str::<ObjectRequest>(body) {
                Ok(request) => {
                    if request.op != Op::Requests {
                        self.count(false);
                    }
                    self.handle(&request).await
                }
                Err(e) => {
                    self.count(false);
                    Err(WireError::BadRequest {
                        message: format!("not a cronslot object request: {e}"),
                    })
                }
            }
        };
        serde_json::to_string(&reply).unwrap_or_else(|e| {
            format!(r#"{{"Err":{{"bad_request":{{"message":"encoding the answer: {e}"}}}}}}"#)
        })
    }

    /// Serves one decoded request.
    async fn handle(&self, request: &ObjectRequest) -> ObjectReply {
        if request.op == Op::Requests {
            let (requests, alarms) = self
                .counts()
                .map_err(|e| WireError::from(&CoordError::Store(e)))?;
            return Ok(Answer::Count { requests, alarms });
        }
        let tick_object = request.job == TICK_OBJECT;
        if tick_object != request.op.is_tick() {
            return Err(WireError::BadRequest {
                message: format!(
                    "{} is {}an operation of the tick object, and the request names {:?}",
                    request.op.name(),
                    if tick_object { "not " } else { "" },
                    request.job
                ),
            });
        }
        if tick_object {
            return self
                .tick_op(&request.op)
                .map_err(|e| WireError::from(&CoordError::Store(e)));
        }
        if request.op == Op::RepairWake {
            return repair_wake(self.store(), &request.job)
                .await
                .map(Answer::Repaired)
                .map_err(|e| WireError::from(&CoordError::Store(e)));
        }
        #[cfg(feature = "schedules")]
        if let Some(at) = &request.schedule {
            return self.schedule_request(request, at).await;
        }
        let spec = self.spec(request)?;
        self.apply(&spec, &request.op)
            .await
            .map_err(|e| WireError::from(&e))
    }

    fn spec(&self, request: &ObjectRequest) -> Result<Rc<JobSpec>, WireError> {
        let spec = self.parsed_spec(&request.spec)?;
        if spec.name.as_str() != request.job {
            return Err(WireError::BadRequest {
                message: format!(
                    "the spec is job {:?}, the request names job {:?}",
                    spec.name.as_str(),
                    request.job
                ),
            });
        }
        Ok(spec)
    }

    /// The spec `text` parses to: parsed once while the same text comes.
    fn parsed_spec(&self, text: &str) -> Result<Rc<JobSpec>, WireError> {
        if let Some((cached, spec)) = self.spec.borrow().as_ref()
            && cached == text
        {
            return Ok(spec.clone());
        }
        let spec = decode_spec(text).map_err(|e| WireError::BadRequest {
            message: format!("the job spec does not parse: {e}"),
        })?;
        let spec = Rc::new(spec);
        *self.spec.borrow_mut() = Some((text.to_string(), spec.clone()));
        Ok(spec)
    }

    /// The tick object's operations.
    fn tick_op(&self, op: &Op) -> Result<Answer, StoreError> {
        let sql = self.store().sql();
        Ok(match op {
            Op::TickStart { now, limit } => {
                let read = self.tick.start(sql, *now, *limit)?;
                Answer::Tick {
                    mark: read.mark,
                    woken: read.woken,
                    carried: read.carried,
                }
            }
            Op::TickEnd { mark, served, left } => {
                self.tick.end(sql, *mark, served, left)?;
                Answer::Done
            }
            Op::Wake { woken } => {
                self.tick.wake(sql, woken)?;
                Answer::Done
            }
            Op::Wakes { woken } => {
                for w in woken {
                    self.tick.wake(sql, w)?;
                }
                Answer::Done
            }
            other => {
                return Err(StoreError::other(format!(
                    "{} is not an operation of the tick object",
                    other.name()
                )));
            }
        })
    }

    /// Whether another claim may find something now, from the record the
    /// coordinator just wrote (or read): `true` when it does not know.
    fn more_due(&self, spec: &JobSpec, now: Timestamp) -> bool {
        self.coordinator
            .known(&spec.record_name())
            .is_none_or(|v| decide::more_due(spec, &v.value, now))
    }

    async fn apply(&self, spec: &JobSpec, op: &Op) -> Result<Answer, CoordError> {
        let c = &self.coordinator;
        Ok(match op {
            Op::Claim {
                now,
                trigger,
                owner,
            } => Answer::Claim(c.claim(spec, *now, *trigger, owner).await?),
            Op::Complete { fence, result, now } => {
                c.complete(spec, *fence, result.as_deref(), *now).await?;
                Answer::Completed {
                    more_due: self.more_due(spec, *now),
                }
            }
            Op::Fail {
                fence,
                error,
                permanent,
                now,
            } => Answer::Failed {
                outcome: c.fail(spec, *fence, error, *permanent, *now).await?,
                more_due: self.more_due(spec, *now),
            },
            Op::Heartbeat { fence, now } => Answer::Expiry(c.heartbeat(spec, *fence, *now).await?),
            Op::Checkpoint { fence, value, now } => {
                c.checkpoint(spec, *fence, value, *now).await?;
                Answer::Done
            }
            Op::Status { now } => Answer::State(Box::new(c.status(spec, *now).await?)),
            Op::Record => Answer::Record(
                c.store()
                    .get(&spec.record_name())
                    .await?
                    .map(|v| Box::new(v.value)),
            ),
            Op::Pause { now } => {
                c.pause(spec, *now).await?;
                Answer::Done
            }
            Op::Resume { now } => {
                c.resume(spec, *now).await?;
                Answer::Done
            }
            Op::Redrive { slot, now } => Answer::Slots(c.redrive(spec, *slot, *now).await?),
            Op::Backfill {
                from,
                to,
                now,
                dry_run,
            } => Answer::Slots(c.backfill(spec, *from, *to, *now, *dry_run).await?),
            Op::BeginEffect {
                key,
                owner,
                fence,
                now,
                hold_ms,
            } => Answer::EffectBegin(
                c.begin_effect(
                    spec,
                    key,
                    owner,
                    *fence,
                    *now,
                    Duration::from_millis(*hold_ms),
                )
                .await?,
            ),
            Op::FinishEffect {
                key,
                fence,
                result,
                now,
            } => Answer::EffectFinish(c.finish_effect(key, *fence, result, *now).await?),
            Op::ReadEffect { key } => Answer::Effect(c.read_effect(key).await?),
            Op::TickStart { .. }
            | Op::TickEnd { .. }
            | Op::Wake { .. }
            | Op::Wakes { .. }
            | Op::RepairWake
            | Op::Requests => {
                return Err(CoordError::Store(StoreError::other(format!(
                    "{} is not an operation of a job's object",
                    op.name()
                ))));
            }
            #[cfg(feature = "schedules")]
            Op::PutSchedule { .. }
            | Op::PutSchedules { .. }
            | Op::DeleteSchedule { .. }
            | Op::ReadSchedule
            | Op::ReadScheduleForClaim { .. }
            | Op::EnqueueRun { .. }
            | Op::RunStatus { .. }
            | Op::ListRuns { .. }
            | Op::ListSchedules { .. } => {
                return Err(CoordError::Store(StoreError::other(format!(
                    "{} is not an operation of a job's object",
                    op.name()
                ))));
            }
        })
    }
}
