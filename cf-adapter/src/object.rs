//! The job's Durable Object, without the runtime: decode a request, apply
//! the core's transition through the generic coordinator over the object's
//! own storage, encode the answer.
//!
//! The object is the only writer of its storage and runs one request at a
//! time (its code never awaits anything but its own synchronous storage),
//! so the coordinator's compare-and-set never conflicts here: the object
//! *is* the serialisation point. The coordinator is reused, not rewritten,
//! so the object agrees with every other store to the letter.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::{CasCoordinator, CoordError, Coordinator, StateStore};
use cronslot_core::manifest::JobSpec;

use crate::object_store::ObjectStore;
use crate::protocol::{Answer, ObjectReply, ObjectRequest, Op, WireError};
use crate::spec_text::decode_spec;
use crate::sql::Sql;

/// Largest request body the object reads: a spec and a few fields; a
/// checkpoint or effect result is bounded by the core far below this.
pub(crate) const MAX_REQUEST_BYTES: usize = 512 * 1024;

/// One job's object: its coordinator and the last spec it parsed.
pub struct JobObject<S> {
    coordinator: CasCoordinator<ObjectStore<S>>,
    /// The spec text of the last request and its parse: a Worker sends the
    /// same text every time, so it is parsed once per object start.
    spec: RefCell<Option<(String, Rc<JobSpec>)>>,
}

impl<S: Sql> JobObject<S> {
    /// `seed` seeds retry jitter (the runtime's randomness in workerd).
    pub fn new(sql: S, seed: u64) -> JobObject<S> {
        JobObject {
            coordinator: CasCoordinator::new(ObjectStore::new(sql), seed),
            spec: RefCell::new(None),
        }
    }

    /// The object's storage.
    pub fn store(&self) -> &ObjectStore<S> {
        self.coordinator.store()
    }

    /// Serves one request body; the answer is always JSON of an
    /// [`ObjectReply`], errors included.
    pub async fn handle_text(&self, body: &str) -> String {
        let reply = if body.len() > MAX_REQUEST_BYTES {
            Err(WireError::BadRequest {
                message: format!(
                    "the request is {} bytes, more than the {MAX_REQUEST_BYTES} an object reads",
                    body.len()
                ),
            })
        } else {
            match serde_json::from_str::<ObjectRequest>(body) {
                Ok(request) => self.handle(&request).await,
                Err(e) => Err(WireError::BadRequest {
                    message: format!("not a cronslot object request: {e}"),
                }),
            }
        };
        serde_json::to_string(&reply).unwrap_or_else(|e| {
            format!(r#"{{"Err":{{"bad_request":{{"message":"encoding the answer: {e}"}}}}}}"#)
        })
    }

    /// Serves one decoded request.
    async fn handle(&self, request: &ObjectRequest) -> ObjectReply {
        let spec = self.spec(request)?;
        self.apply(&spec, &request.op)
            .await
            .map_err(|e| WireError::from(&e))
    }

    fn spec(&self, request: &ObjectRequest) -> Result<Rc<JobSpec>, WireError> {
        if let Some((text, spec)) = self.spec.borrow().as_ref()
            && *text == request.spec
        {
            return Ok(spec.clone());
        }
        let spec = decode_spec(&request.spec).map_err(|e| WireError::BadRequest {
            message: format!("the job spec does not parse: {e}"),
        })?;
        if spec.name.as_str() != request.job {
            return Err(WireError::BadRequest {
                message: format!(
                    "the spec is job {:?}, the request names job {:?}",
                    spec.name.as_str(),
                    request.job
                ),
            });
        }
        let spec = Rc::new(spec);
        *self.spec.borrow_mut() = Some((request.spec.clone(), spec.clone()));
        Ok(spec)
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
                Answer::Done
            }
            Op::Fail {
                fence,
                error,
                permanent,
                now,
            } => Answer::Fail(c.fail(spec, *fence, error, *permanent, *now).await?),
            Op::Heartbeat { fence, now } => Answer::Expiry(c.heartbeat(spec, *fence, *now).await?),
            Op::Checkpoint { fence, value, now } => {
                c.checkpoint(spec, *fence, value, *now).await?;
                Answer::Done
            }
            Op::Status { now } => Answer::State(Box::new(c.status(spec, *now).await?)),
            Op::Record => Answer::Record(
                c.store()
                    .get(spec.name.as_str())
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
        })
    }
}
