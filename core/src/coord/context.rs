//! What a running job gets: its slot's identity, its fence, its attempt, its
//! lease deadline, the last checkpoint, and the effect ledger.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::coordinator::{CoordError, Coordinator};
use super::slot::{SlotId, format_instant};
use super::state::Lease;
use super::store::{EffectBegin, EffectFinish, MAX_EFFECT_RESULT_BYTES};
use crate::manifest::JobSpec;

/// Why an effect did not run (or its outcome was not recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EffectError {
    /// Another live run holds this effect right now.
    Held {
        /// The worker whose run holds it.
        owner: String,
        /// That run's fence.
        fence: u64,
    },
    /// A newer run of this slot holds or did it: this run is stale and must
    /// stop.
    Superseded {
        /// The newer fence.
        fence: u64,
    },
    /// The effect itself failed (the closure's error).
    Failed(String),
    /// The result is too large to record.
    ResultTooLarge {
        /// The result's size (the limit is 1024 bytes).
        bytes: usize,
    },
    /// The coordinator (or its store) failed or refused.
    Coordinator(CoordError),
}

impl fmt::Display for EffectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EffectError::Held { owner, fence } => {
                write!(f, "the effect is held by {owner} (fence {fence})")
            }
            EffectError::Superseded { fence } => {
                write!(f, "a newer run (fence {fence}) owns this slot's effects")
            }
            EffectError::Failed(e) => write!(f, "{e}"),
            EffectError::ResultTooLarge { bytes } => write!(
                f,
                "effect result is {bytes} bytes, more than {MAX_EFFECT_RESULT_BYTES}"
            ),
            EffectError::Coordinator(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for EffectError {}

/// The context of one run. `clock` supplies `now` (a real clock in
/// production, a virtual one in simulations).
pub struct JobContext<'a, C: Coordinator> {
    coordinator: &'a C,
    spec: &'a JobSpec,
    lease: Lease,
    expires_at: Cell<Timestamp>,
    checkpoint: RefCell<Option<String>>,
    clock: &'a dyn Fn() -> Timestamp,
}

impl<'a, C: Coordinator> JobContext<'a, C> {
    /// The context of the run holding `lease` (as a claim returned it) for
    /// the job `spec`, reporting through `coordinator`.
    pub fn new(
        coordinator: &'a C,
        spec: &'a JobSpec,
        lease: Lease,
        clock: &'a dyn Fn() -> Timestamp,
    ) -> Self {
        JobContext {
            coordinator,
            spec,
            expires_at: Cell::new(lease.expires_at),
            checkpoint: RefCell::new(lease.checkpoint.clone()),
            lease,
            clock,
        }
    }

    /// The job's name.
    pub fn job(&self) -> &str {
        self.spec.name.as_str()
    }

    /// The job's spec.
    pub fn spec(&self) -> &JobSpec {
        self.spec
    }

    /// The slot this run is for.
    pub fn slot_id(&self) -> SlotId {
        SlotId::new(self.spec, self.lease.slot)
    }

    /// The same for every attempt of this slot: pass it to every API that
    /// takes one.
    pub fn idempotency_key(&self) -> String {
        self.slot_id().to_string()
    }

    /// Greater than every earlier fence of this job: give it to destinations
    /// that can refuse stale writers.
    pub fn fence(&self) -> u64 {
        self.lease.fence
    }

    /// 1 for the first run of this slot.
    pub fn attempt(&self) -> u32 {
        self.lease.attempt
    }

    /// The slot's scheduled instant.
    pub fn scheduled_at(&self) -> Timestamp {
        self.lease.slot
    }

    /// The run must finish (or heartbeat) before this instant.
    pub fn lease_deadline(&self) -> Timestamp {
        self.expires_at.get()
    }

    /// The lease as claimed (its expiry is not updated by heartbeats; see
    /// [`JobContext::lease_deadline`]).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The last checkpoint saved by this slot's runs (this one or an earlier
    /// attempt), to resume instead of starting over.
    pub fn last_checkpoint(&self) -> Option<String> {
        self.checkpoint.borrow().clone()
    }

    /// Saves a small checkpoint with the lease (fenced: refused once this run
    /// is superseded).
    pub async fn checkpoint(&self, value: &str) -> Result<(), CoordError> {
        self.coordinator
            .checkpoint(self.spec, self.lease.fence, value, (self.clock)())
            .await?;
        *self.checkpoint.borrow_mut() = Some(value.to_string());
        Ok(())
    }

    /// Extends the lease from now.
    pub async fn heartbeat(&self) -> Result<Timestamp, CoordError> {
        let expires = self
            .coordinator
            .heartbeat(self.spec, self.lease.fence, (self.clock)())
            .await?;
        self.expires_at.set(expires);
        Ok(expires)
    }

    /// The ledger key of an effect of this slot: the slot id's job part
    /// (`job`, or `job/key` for a schedule or a keyed run of a dynamic
    /// job), then the instant and the effect's name.
    pub fn effect_key(&self, name: &str) -> String {
        format!(
            "{}@{}/{}",
            self.spec.record_name(),
            format_instant(self.lease.slot),
            name
        )
    }

    /// Does `effect` at most once per slot: if an earlier run of this slot
    /// recorded it as done, returns that result without running it again.
    /// The effect's result (a short text) is recorded with the run's fence.
    pub async fn effect<F, Fut>(&self, name: &str, effect: F) -> Result<String, EffectError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<String, String>>,
    {
        let key = self.effect_key(name);
        let now = (self.clock)();
        let remaining = self.expires_at.get().duration_since(now);
        let hold = Duration::try_from(remaining.max(SignedDuration::ZERO))
            .unwrap_or(Duration::ZERO)
            .saturating_add(self.spec.skew_margin);
        let begin = self
            .coordinator
            .begin_effect(
                self.spec,
                &key,
                &self.lease.owner,
                self.lease.fence,
                now,
                hold,
            )
            .await
            .map_err(EffectError::Coordinator)?;
        match begin {
            EffectBegin::AlreadyDone { result } => return Ok(result),
            EffectBegin::Held { owner, fence, .. } => {
                return Err(EffectError::Held { owner, fence });
            }
            EffectBegin::Superseded { fence } => return Err(EffectError::Superseded { fence }),
            EffectBegin::Acquired => {}
        }
        let result = effect().await.map_err(EffectError::Failed)?;
        if result.len() > MAX_EFFECT_RESULT_BYTES {
            return Err(EffectError::ResultTooLarge {
                bytes: result.len(),
            });
        }
        match self
            .coordinator
            .finish_effect(&key, self.lease.fence, &result, (self.clock)())
            .await
            .map_err(EffectError::Coordinator)?
        {
            EffectFinish::Recorded => Ok(result),
            EffectFinish::NotHeld => Err(EffectError::Superseded {
                fence: self.lease.fence,
            }),
        }
    }
}
