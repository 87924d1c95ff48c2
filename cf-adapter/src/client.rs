//! The Worker's side of the job objects: a [`Coordinator`] that sends each
//! operation to the object of its job. The transport is a parameter: the
//! Durable Object stub in workerd, an HTTP client or the object itself
//! in-process in tests.
#![allow(async_fn_in_trait)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use cronslot_core::coord::{
    Claim, CoordError, Coordinator, EffectBegin, EffectFinish, EffectRecord, FailOutcome, JobState,
    StoreError, StoreErrorKind, Trigger,
};
use cronslot_core::manifest::JobSpec;
use jiff::Timestamp;

use crate::protocol::{Answer, ObjectReply, ObjectRequest, Op};
use crate::spec_text::encode_spec;

/// Carries one request body to the object named `job` and returns its
/// answer body. A transport error is a store error (the object was not
/// reached, or its answer was lost).
pub trait Transport {
    /// Sends `body` to the object of `job` and returns its answer's body.
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError>;
}

/// A coordinator whose store is one object per job.
pub struct ObjectClient<T> {
    transport: T,
    /// The latest spec text of each job, for effect operations (which name
    /// only a key).
    specs: RefCell<HashMap<String, String>>,
}

impl<T: Transport> ObjectClient<T> {
    /// A client sending every operation through `transport`.
    pub fn new(transport: T) -> ObjectClient<T> {
        ObjectClient {
            transport,
            specs: RefCell::new(HashMap::new()),
        }
    }

    /// The transport the client sends through.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Rendered on every call (small next to the request it rides on, its
    /// zone's TZif data included): the same job name may carry a changed
    /// spec, and the object must plan with the new one.
    fn spec_text(&self, spec: &JobSpec) -> String {
        let text = encode_spec(spec);
        self.specs
            .borrow_mut()
            .insert(spec.name.as_str().to_string(), text.clone());
        text
    }

    async fn send(&self, job: &str, spec: String, op: Op) -> Result<Answer, CoordError> {
        let name = op.name();
        let request = ObjectRequest {
            job: job.to_string(),
            spec,
            op,
        };
        let body = serde_json::to_string(&request)
            .map_err(|e| StoreError::other(format!("encoding a {name} request: {e}")))?;
        let answer = self.transport.call(job, body).await?;
        let reply: ObjectReply = serde_json::from_str(&answer).map_err(|e| {
            // The object ran (or not) and its answer is unreadable: whether a
            // write happened is unknown.
            StoreError::new(
                StoreErrorKind::Ambiguous,
                format!("the object of job {job:?} answered {name} with something unreadable: {e}"),
            )
        })?;
        reply.map_err(CoordError::from)
    }

    async fn op(&self, spec: &JobSpec, op: Op) -> Result<Answer, CoordError> {
        self.send(spec.name.as_str(), self.spec_text(spec), op)
            .await
    }

    /// The record as stored (not brought up to now); `None` before the
    /// job's first claim.
    pub async fn record(&self, spec: &JobSpec) -> Result<Option<JobState>, CoordError> {
        match self.op(spec, Op::Record).await? {
            Answer::Record(r) => Ok(r.map(|b| *b)),
            other => Err(unexpected("record", &other)),
        }
    }

    /// Effects live in the object of their job; the key names it
    /// (`<job>@<slot>/<name>`). The spec is needed only to address the
    /// object, and a remembered one is used when the job is known.
    async fn effect_op(&self, key: &str, op: Op) -> Result<Answer, CoordError> {
        let job = key.split_once('@').map(|(job, _)| job).ok_or_else(|| {
            StoreError::other(format!(
                "effect key {key:?} does not name its job (expected <job>@<slot>/<name>)"
            ))
        })?;
        let spec = self.specs.borrow().get(job).cloned().ok_or_else(|| {
            StoreError::other(format!(
                "effect key {key:?}: job {job:?} has not been used through this client"
            ))
        })?;
        self.send(job, spec, op).await
    }
}

fn unexpected(op: &str, answer: &Answer) -> CoordError {
    CoordError::Store(StoreError::other(format!(
        "the object answered {op} with {answer:?}"
    )))
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
            Answer::Done => Ok(()),
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
            Answer::Fail(f) => Ok(f),
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
