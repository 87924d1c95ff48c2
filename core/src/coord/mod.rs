//! Slot coordination: the per-job state record, the pure transitions over
//! it, the store contract, and the generic coordinator.

mod context;
mod coordinator;
pub mod decide;
pub mod exec;
mod job_error;
pub mod location;
mod memory;
mod rng;
#[cfg(feature = "schedules")]
mod runs;
#[cfg(feature = "schedules")]
mod schedules;
mod slot;
mod state;
mod store;
mod watched;

pub use context::{EffectError, JobContext};
pub use coordinator::{CasCoordinator, CoordError, Coordinator, MAX_CAS_ATTEMPTS, Operator};
pub use decide::{BackfillError, Claim, FailOutcome, Idle, Refusal, Trigger, TriggerError};
pub use job_error::{JobError, JobResult};
pub use location::{BareUserinfo, Secret, redact_url};
pub use memory::{Fault, MemoryStore};
pub use rng::{RandomSource, SplitMix64};
#[cfg(feature = "schedules")]
pub use runs::{MAX_RUN_PAGE, RunError, RunPage, RunQuery, Runs};
#[cfg(feature = "schedules")]
pub use schedules::{
    MAX_SCHEDULE_BATCH, MAX_SCHEDULE_PAGE, ScheduleError, SchedulePage, SchedulePut, ScheduleQuery,
    ScheduleRecord, Schedules, bulk_answers,
};
pub use slot::{SlotId, SlotIdError, format_instant};
pub use state::{
    Counters, DeadLetter, DecodeError, FateSpan, JobState, Lease, MAX_FATE_SPANS, MAX_RECORD_BYTES,
    MissReason, Origin, PendingRun, RunOutcome, RunRecord, SCHEMA_VERSION, ScheduleChange,
    SkipReason, decode_state, encode_state,
};
#[cfg(feature = "schedules")]
pub use state::{KeyedRun, PinnedVersion, ScheduleData};
pub use store::{
    BULK_LANES, DEFAULT_EFFECT_RETENTION, EFFECT_FORMAT, EffectBegin, EffectFinish, EffectLedger,
    EffectRecord, EffectState, LocationError, PutResult, RecordWrite, StateStore, StoreError,
    StoreErrorKind, TickIndex, TickStart, Version, Versioned, decide_begin, decide_finish,
    prefix_end, repair_wake,
};
pub use watched::{RecordWatcher, Watched};
