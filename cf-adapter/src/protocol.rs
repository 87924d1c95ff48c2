//! The messages between the Worker and a job's Durable Object: one JSON
//! request per coordinator operation, one JSON answer.
//!
//! Every request to a job's object carries the job's spec (see
//! [`crate::spec_text`]) and the caller's `now`: the object has no manifest
//! and no clock of its own, so it applies exactly the transitions the
//! caller's spec and time imply, like every other store of the conformance
//! suite. Requests to the tick object ([`TICK_OBJECT`]: the tick mark and
//! the woken jobs, docs/design.md §11) name no job spec and carry none;
//! neither does [`Op::RepairWake`], which reads only the stored record.
//!
//! Enums travel in serde's default, externally tagged form
//! (`{"claim": {…}}`, `"record"`): internally and adjacently tagged enums
//! are read through serde's generic `Content` buffer, which was ≈ 100 KB of
//! the Worker (docs/performance.md, "Worker size").

#[cfg(feature = "schedules")]
use cronslot_core::coord::decide::{
    Enqueued, Precondition, RunRefusal, ScheduleRefusal, ScheduleWrite,
};
use cronslot_core::coord::{
    BackfillError, Claim, CoordError, EffectBegin, EffectFinish, EffectRecord, FailOutcome,
    JobState, Refusal, StoreError, StoreErrorKind, Trigger, TriggerError,
};
#[cfg(feature = "schedules")]
use cronslot_core::schedules::RunView;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The name of the tick object: the one object of the class that is not a
/// job's. It holds the tick mark and the woken jobs (each job object's
/// alarm sends it its wake). A job name is lowercase letters, digits, `-`
/// and `_` (`validate_job_name`), so no job's object can be this one.
pub const TICK_OBJECT: &str = "cronslot:tick";

/// The version of the protocol between a Worker and its Durable Objects
/// that this build speaks, sent in every request ([`ObjectRequest::protocol`]).
///
/// - 1: the requests of the releases before the number was sent (a request
///   without it is of protocol 1);
/// - 2: the same operations and answers, with the number.
///
/// An object serves every protocol up to its own and refuses a newer one
/// before reading the operation (which a newer Worker may have added),
/// with a store error that names both numbers, the kind a tick retries
/// ([`protocol_refusal`]). During a gradual deployment, where two
/// versions of a Worker and of its objects serve at once, a request the
/// other side cannot serve is thereby refused, said and retried, never
/// misread. A release that adds an operation or changes an answer raises
/// this number; docs/upgrading.md says in which order to deploy.
pub const PROTOCOL_VERSION: u32 = 2;

fn protocol_one() -> u32 {
    1
}

/// The refusal of a request of a protocol newer than this object's: a
/// store error (`Unavailable`, which every version of a Worker reads and a
/// tick retries), naming both versions.
pub fn protocol_refusal(requested: u32) -> WireError {
    WireError::Store {
        kind: WireStoreKind::Unavailable,
        message: format!(
            "a request of object protocol {requested}; this Durable Object speaks protocol {PROTOCOL_VERSION} and older: not read (a deployment in progress), retried"
        ),
    }
}

/// The protocol of a request's body, read before anything else of it.
pub fn request_protocol(body: &str) -> Option<u32> {
    #[derive(Deserialize)]
    struct Header {
        #[serde(default = "protocol_one")]
        protocol: u32,
    }
    cronslot_core::json::from_str::<Header>(body)
        .ok()
        .map(|h| h.protocol)
}

/// One operation on one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRequest {
    /// The protocol the sender speaks ([`PROTOCOL_VERSION`]); 1 when
    /// absent (a Worker from before the number was sent).
    #[serde(default = "protocol_one")]
    pub protocol: u32,
    /// The object's name: the job the object is named after (the spec's
    /// name), or [`TICK_OBJECT`] for the tick operations.
    pub job: String,
    /// The job's spec as a one-job manifest; empty (and left out of the
    /// JSON) in a request to the tick object, which plans nothing, and in
    /// [`Op::RepairWake`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spec: String,
    /// What to do.
    pub op: Op,
    /// With a dynamic job's schedules: which ones, and how the job's
    /// objects are counted. `job` is then one of the job's schedule
    /// objects ([`schedule_object`]); `spec` the job's template
    /// ([`encode_template`](crate::spec_text::encode_template)) for the
    /// schedule operations, the schedule's spec for the others.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleAt>,
}

/// The schedules of a dynamic job are spread over this many objects by
/// default (docs/design.md §12, "Durable Objects"): one object serves
/// about 1,000 requests a second, and a run costs three, so 16 objects
/// start about 5,000 slots a second, and a listing reads 16 objects a page.
pub const DEFAULT_SCHEDULE_OBJECTS: u32 = 16;

/// The most objects one dynamic job's schedules are spread over.
pub const MAX_SCHEDULE_OBJECTS: u32 = 1024;

/// The object that holds the schedule `key` of the dynamic job `job`, when
/// the job's schedules are spread over `objects` objects: `job#i`, `i` the
/// key's 64-bit FNV-1a hash modulo `objects`. A job name has no `#`
/// (`validate_job_name`), so no job's own object has such a name. The
/// hash is fixed: every Worker version finds a key in the same object.
pub fn schedule_object(job: &str, key: &str, objects: u32) -> String {
    format!("{job}#{}", schedule_shard(key, objects))
}

/// The index of the object of `key` among `objects` (see
/// [`schedule_object`]).
pub fn schedule_shard(key: &str, objects: u32) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // The remainder is below `objects`, a u32.
    u32::try_from(hash % u64::from(objects.max(1))).unwrap_or(0)
}

/// Where a request on a dynamic job's schedules goes.
#[cfg(feature = "schedules")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleAt {
    /// How many objects the job's schedules are spread over (the Worker's
    /// setting): an object refuses a request that counts them otherwise
    /// than the requests that wrote its schedules, since the count decides
    /// where every key is.
    pub objects: u32,
    /// The schedule; `None` for a listing of the object's schedules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The schedule's version the spec was read at
    /// ([`JobSpec::schedule_version`](cronslot_core::manifest::JobSpec)):
    /// a claim with a spec of another version starts nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// A job whose wake has come, as the tick object holds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Woken {
    /// The job.
    pub job: String,
    /// Its wake ([`JobState::wake_at`]) when its object sent it.
    #[serde(with = "cronslot_core::instant::text")]
    pub at: Timestamp,
}

/// A coordinator operation with its arguments (the job and spec are the
/// request's). `now` is always the caller's clock; the rest are the
/// arguments of the [`Coordinator`](cronslot_core::coord::Coordinator)
/// method of the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `claim`.
    Claim {
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
        /// What the claim is for.
        trigger: Trigger,
        /// Who claims.
        owner: String,
    },
    /// `complete`.
    Complete {
        /// The run's fence.
        fence: u64,
        /// The run's result, if any.
        result: Option<String>,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `fail`.
    Fail {
        /// The run's fence.
        fence: u64,
        /// The job's error.
        error: String,
        /// Whether the error is permanent (no retry).
        permanent: bool,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `heartbeat`.
    Heartbeat {
        /// The run's fence.
        fence: u64,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `checkpoint`.
    Checkpoint {
        /// The run's fence.
        fence: u64,
        /// The checkpoint to store.
        value: String,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `status`.
    Status {
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// The record as stored, not brought up to now.
    Record,
    /// `pause`.
    Pause {
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `resume`.
    Resume {
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `redrive`.
    Redrive {
        /// The one dead letter to send back; `None`: all of them.
        #[serde(with = "cronslot_core::instant::text::option")]
        slot: Option<Timestamp>,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `backfill`.
    Backfill {
        /// Where the range starts (inclusive).
        #[serde(with = "cronslot_core::instant::text")]
        from: Timestamp,
        /// Where it ends (inclusive).
        #[serde(with = "cronslot_core::instant::text")]
        to: Timestamp,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
        /// Report the slots without queueing them.
        dry_run: bool,
    },
    /// `begin_effect`.
    BeginEffect {
        /// The effect's key.
        key: String,
        /// Who begins it.
        owner: String,
        /// The run's fence.
        fence: u64,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
        /// How long the hold lasts before another run may take the effect
        /// over, in milliseconds.
        hold_ms: u64,
    },
    /// `finish_effect`.
    FinishEffect {
        /// The effect's key.
        key: String,
        /// The run's fence.
        fence: u64,
        /// The effect's result.
        result: String,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// `read_effect`.
    ReadEffect {
        /// The effect's key.
        key: String,
    },
    /// To the tick object: [`TickIndex::tick_start`](cronslot_core::coord::TickIndex::tick_start).
    /// Answered with [`Answer::Tick`].
    TickStart {
        /// The caller's clock: the woken jobs are those whose wake is at
        /// or before it.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
        /// Most woken jobs to return, earliest wake first.
        limit: usize,
    },
    /// To the tick object: [`TickIndex::tick_end`](cronslot_core::coord::TickIndex::tick_end),
    /// and the woken jobs the tick served. The mark only moves forward;
    /// each served entry is removed if its stored wake is still the one
    /// given (a later wake sent meanwhile stays).
    TickEnd {
        /// Where the mark may move.
        #[serde(with = "cronslot_core::instant::text")]
        mark: Timestamp,
        /// The woken entries the tick served, as `tick_start` gave them.
        served: Vec<Woken>,
        /// Planned jobs the tick left for the next one (a bound on the
        /// jobs per tick, a failed claim), each at its slot: kept for the
        /// next tick (`carried`), so the mark may pass their slots.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left: Vec<Woken>,
    },
    /// To the tick object, from a job object's alarm: the job's wake has
    /// come. Replaces the job's entry, if it has one: a job's object sends
    /// its wakes in order, so the last one is its record's.
    Wake {
        /// The job and its wake.
        woken: Woken,
    },
    /// To the tick object, from an object's alarm: these records' wakes
    /// have come (an object holding many schedules sends them at once),
    /// each as [`Op::Wake`].
    Wakes {
        /// The records and their wakes.
        woken: Vec<Woken>,
    },
    /// To a job's object: [`repair_wake`](cronslot_core::coord::repair_wake),
    /// for a record written before objects kept their wake as their alarm
    /// (the bounded repair of docs/design.md §11, which `cronslot init`
    /// runs through the admin route `POST {p}/repair`). Needs no spec: the
    /// request carries none. Answered with [`Answer::Repaired`].
    RepairWake,
    /// To a schedule's object: [`Schedules::put_schedule`](cronslot_core::coord::Schedules::put_schedule).
    /// Answered with [`Answer::Written`].
    #[cfg(feature = "schedules")]
    PutSchedule {
        /// The schedule's spec, as JSON.
        spec: String,
        /// What the write asks of the version it replaces.
        precondition: Precondition,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// To a schedule object (no key): [`Schedules::put_schedules`](cronslot_core::coord::Schedules::put_schedules)
    /// of the schedules of a bulk write whose keys it holds, as the
    /// coordinator writes them (every record read, the changed ones
    /// written). Answered with [`Answer::WrittenEach`], in the order sent.
    #[cfg(feature = "schedules")]
    PutSchedules {
        /// Each schedule: its key, its spec as JSON, its condition.
        puts: Vec<(String, String, Precondition)>,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// To a schedule's object: [`Schedules::delete_schedule`](cronslot_core::coord::Schedules::delete_schedule).
    /// Answered with [`Answer::Written`].
    #[cfg(feature = "schedules")]
    DeleteSchedule {
        /// What the delete asks of the version it replaces.
        precondition: Precondition,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// To a schedule's object: the schedule's record as stored (a
    /// tombstone's included). Answered with [`Answer::Record`].
    #[cfg(feature = "schedules")]
    ReadSchedule,
    /// To a schedule's object: the record for the claim that follows, as
    /// [`Schedules::schedule_for_claim`](cronslot_core::coord::Schedules::schedule_for_claim)
    /// reads it at `now` (the tick's read of a woken schedule): a keyed
    /// run's record past its key's retention is deleted then, and read as
    /// none. Answered with [`Answer::Record`].
    #[cfg(feature = "schedules")]
    ReadScheduleForClaim {
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// To a keyed run's object (the one its key names, as a schedule's):
    /// [`Runs::enqueue_run`](cronslot_core::coord::Runs::enqueue_run).
    /// Answered with [`Answer::Enqueued`]; a refusal is [`WireError::Run`].
    #[cfg(feature = "schedules")]
    EnqueueRun {
        /// The run's request, as the JSON body of an enqueue
        /// ([`RunRequest::from_json`](cronslot_core::schedules::RunRequest::from_json)
        /// reads it again in the object, with every check).
        request: String,
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// To a keyed run's object: [`Runs::run_status`](cronslot_core::coord::Runs::run_status).
    /// Answered with [`Answer::Run`].
    #[cfg(feature = "schedules")]
    RunStatus {
        /// The caller's clock.
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// To one of a job's schedule objects: a page of the keyed runs it
    /// holds, as [`Runs::list_runs`](cronslot_core::coord::Runs::list_runs)
    /// reads them. Answered with [`Answer::Runs`].
    #[cfg(feature = "schedules")]
    ListRuns {
        /// Only keys that start with this.
        prefix: String,
        /// Only runs in this status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<cronslot_core::schedules::RunStatus>,
        /// Only keys after this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        /// At most this many.
        limit: usize,
        /// The caller's clock (a run past its key's retention is left out).
        #[serde(with = "cronslot_core::instant::text")]
        now: Timestamp,
    },
    /// To one of a job's schedule objects: a page of the live schedules it
    /// holds, as [`Schedules::list_schedules`](cronslot_core::coord::Schedules::list_schedules)
    /// reads them. Answered with [`Answer::Page`].
    #[cfg(feature = "schedules")]
    ListSchedules {
        /// Only keys that start with this.
        prefix: String,
        /// Only schedules with this label (`NAME:VALUE`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        /// Only keys after this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        /// At most this many.
        limit: usize,
    },
    /// How many requests (and alarms) the object has served, when the
    /// Worker counts them (the `CRONSLOT_COUNT_REQUESTS` variable; tests
    /// measure a tick's cost with it). Not counted itself.
    Requests,
}

impl Op {
    /// The operation's name, for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Complete { .. } => "complete",
            Op::Fail { .. } => "fail",
            Op::Heartbeat { .. } => "heartbeat",
            Op::Checkpoint { .. } => "checkpoint",
            Op::Status { .. } => "status",
            Op::Record => "record",
            Op::Pause { .. } => "pause",
            Op::Resume { .. } => "resume",
            Op::Redrive { .. } => "redrive",
            Op::Backfill { .. } => "backfill",
            Op::BeginEffect { .. } => "begin_effect",
            Op::FinishEffect { .. } => "finish_effect",
            Op::ReadEffect { .. } => "read_effect",
            Op::TickStart { .. } => "tick_start",
            Op::TickEnd { .. } => "tick_end",
            Op::Wake { .. } => "wake",
            Op::Wakes { .. } => "wakes",
            Op::RepairWake => "repair_wake",
            Op::Requests => "requests",
            #[cfg(feature = "schedules")]
            Op::PutSchedule { .. } => "put_schedule",
            #[cfg(feature = "schedules")]
            Op::PutSchedules { .. } => "put_schedules",
            #[cfg(feature = "schedules")]
            Op::DeleteSchedule { .. } => "delete_schedule",
            #[cfg(feature = "schedules")]
            Op::ReadSchedule => "read_schedule",
            #[cfg(feature = "schedules")]
            Op::ListSchedules { .. } => "list_schedules",
            #[cfg(feature = "schedules")]
            Op::ListRuns { .. } => "list_runs",
            #[cfg(feature = "schedules")]
            Op::ReadScheduleForClaim { .. } => "read_schedule_for_claim",
            #[cfg(feature = "schedules")]
            Op::EnqueueRun { .. } => "enqueue_run",
            #[cfg(feature = "schedules")]
            Op::RunStatus { .. } => "run_status",
        }
    }

    /// Whether the operation is the tick object's (it names no job).
    pub fn is_tick(&self) -> bool {
        matches!(
            self,
            Op::TickStart { .. } | Op::TickEnd { .. } | Op::Wake { .. } | Op::Wakes { .. }
        )
    }
}

/// A successful answer; which variant depends on the operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// To `claim`.
    Claim(Claim),
    /// To `checkpoint`, `pause`, `resume`, `tick_end` and `wake`.
    Done,
    /// To `complete`.
    Completed {
        /// Whether another claim may find something to run now, judged
        /// from the record just written ([`decide::more_due`](cronslot_core::coord::decide::more_due)):
        /// the Worker skips the claim that would only find nothing.
        more_due: bool,
    },
    /// To `fail`.
    Failed {
        /// What becomes of the slot.
        outcome: FailOutcome,
        /// As in [`Answer::Completed`].
        more_due: bool,
    },
    /// To `heartbeat`: the lease's new expiry.
    Expiry(#[serde(with = "cronslot_core::instant::text")] Timestamp),
    /// To `status`.
    State(Box<JobState>),
    /// To `record`: `None` before the job's first claim.
    Record(Option<Box<JobState>>),
    /// To `redrive` and `backfill`.
    Slots(#[serde(with = "cronslot_core::instant::text::vec")] Vec<Timestamp>),
    /// To `begin_effect`.
    EffectBegin(EffectBegin),
    /// To `finish_effect`.
    EffectFinish(EffectFinish),
    /// To `read_effect`.
    Effect(Option<EffectRecord>),
    /// To `tick_start`.
    Tick {
        /// Every slot at or before the mark was planned by an earlier
        /// tick; `None` before the first tick.
        #[serde(with = "cronslot_core::instant::text::option")]
        mark: Option<Timestamp>,
        /// The woken jobs, earliest wake first.
        woken: Vec<Woken>,
        /// The planned jobs a bounded tick left, at their slots.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        carried: Vec<Woken>,
    },
    /// To `repair_wake`: the wake the record was given (its alarm), `None`
    /// when it needed none.
    Repaired(#[serde(with = "cronslot_core::instant::text::option")] Option<Timestamp>),
    /// To `requests`: requests and alarms served (with counting off, 0).
    Count {
        /// Requests served, this one aside.
        requests: u64,
        /// Alarms served.
        alarms: u64,
    },
    /// To `put_schedule` and `delete_schedule`: what the write did.
    #[cfg(feature = "schedules")]
    Written(ScheduleWrite),
    /// To `put_schedules`: what each write did, in the order sent.
    #[cfg(feature = "schedules")]
    WrittenEach(Vec<Result<ScheduleWrite, WireError>>),
    /// To `list_schedules`: the object's live schedules of the page, in key
    /// order, each with its record.
    #[cfg(feature = "schedules")]
    Page {
        /// Each schedule's key and record.
        schedules: Vec<(String, Box<JobState>)>,
        /// Where the object's next page starts; `None`: it has no more.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    },
    /// To `enqueue_run`: the run, created or found.
    #[cfg(feature = "schedules")]
    Enqueued(Enqueued),
    /// To `run_status`: the run, `None` when the key names none.
    #[cfg(feature = "schedules")]
    Run(Option<Box<RunView>>),
    /// To `list_runs`: a page of the object's keyed runs in key order.
    #[cfg(feature = "schedules")]
    Runs {
        /// Each run, as its status read answers it.
        runs: Vec<RunView>,
        /// Where the object's next page starts; `None`: it has no more.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    },
}

impl Answer {
    /// The answer's name, as it appears on the wire (for errors).
    pub fn name(&self) -> &'static str {
        match self {
            Answer::Claim(_) => "claim",
            Answer::Done => "done",
            Answer::Completed { .. } => "completed",
            Answer::Failed { .. } => "failed",
            Answer::Expiry(_) => "expiry",
            Answer::State(_) => "state",
            Answer::Record(_) => "record",
            Answer::Slots(_) => "slots",
            Answer::EffectBegin(_) => "effect_begin",
            Answer::EffectFinish(_) => "effect_finish",
            Answer::Effect(_) => "effect",
            Answer::Tick { .. } => "tick",
            Answer::Repaired(_) => "repaired",
            Answer::Count { .. } => "count",
            #[cfg(feature = "schedules")]
            Answer::Written(_) => "written",
            #[cfg(feature = "schedules")]
            Answer::WrittenEach(_) => "written_each",
            #[cfg(feature = "schedules")]
            Answer::Page { .. } => "page",
            #[cfg(feature = "schedules")]
            Answer::Enqueued(_) => "enqueued",
            #[cfg(feature = "schedules")]
            Answer::Run(_) => "run",
            #[cfg(feature = "schedules")]
            Answer::Runs { .. } => "runs",
        }
    }
}

/// The answer on the wire: `{"Ok": …}` or `{"Err": …}`.
pub type ObjectReply = Result<Answer, WireError>;

/// A [`CoordError`] on the wire (its `&'static str` parts become text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireError {
    /// [`CoordError::Store`].
    Store {
        /// The store error's kind.
        kind: WireStoreKind,
        /// Its message.
        message: String,
    },
    /// [`Refusal::Superseded`].
    Superseded {
        /// The fence the caller gave.
        fence: u64,
        /// The job's latest fence.
        latest: u64,
    },
    /// [`Refusal::Expired`].
    Expired {
        /// The fence the caller gave.
        fence: u64,
        /// When its lease expired.
        #[serde(with = "cronslot_core::instant::text")]
        expired_at: Timestamp,
    },
    /// [`Refusal::TooLarge`].
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        bytes: usize,
        /// The most allowed.
        max: usize,
    },
    /// [`TriggerError::NotASlot`].
    NotASlot {
        /// The instant the trigger carried.
        #[serde(with = "cronslot_core::instant::text")]
        slot: Timestamp,
    },
    /// [`CoordError::Backfill`].
    Backfill(BackfillError),
    /// [`CoordError::Contention`].
    Contention {
        /// The conditional writes tried.
        attempts: u32,
    },
    /// The request itself was wrong: bad JSON, a spec that does not parse,
    /// a job that is not the object's.
    BadRequest {
        /// What was wrong, for a person.
        message: String,
    },
    /// [`ScheduleError::Refused`](cronslot_core::coord::ScheduleError):
    /// a schedule's write was refused, and nothing was written.
    #[cfg(feature = "schedules")]
    Schedule(ScheduleRefusal),
    /// [`RunError::Refused`](cronslot_core::coord::RunError): an enqueue
    /// was refused, and nothing was written.
    #[cfg(feature = "schedules")]
    Run(RunRefusal),
}

/// A [`StoreErrorKind`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireStoreKind {
    /// [`StoreErrorKind::Unavailable`].
    Unavailable,
    /// [`StoreErrorKind::Corrupt`].
    Corrupt,
    /// [`StoreErrorKind::Ambiguous`].
    Ambiguous,
    /// [`StoreErrorKind::Other`].
    Other,
}

impl From<&CoordError> for WireError {
    fn from(e: &CoordError) -> Self {
        match e {
            CoordError::Store(s) => WireError::Store {
                kind: match s.kind {
                    StoreErrorKind::Unavailable => WireStoreKind::Unavailable,
                    StoreErrorKind::Corrupt => WireStoreKind::Corrupt,
                    StoreErrorKind::Ambiguous => WireStoreKind::Ambiguous,
                    // `Other`, or a kind newer than this crate.
                    _ => WireStoreKind::Other,
                },
                message: s.message.clone(),
            },
            CoordError::Refused(Refusal::Superseded { fence, latest }) => WireError::Superseded {
                fence: *fence,
                latest: *latest,
            },
            CoordError::Refused(Refusal::Expired { fence, expired_at }) => WireError::Expired {
                fence: *fence,
                expired_at: *expired_at,
            },
            CoordError::Refused(Refusal::TooLarge { what, bytes, max }) => WireError::TooLarge {
                what: (*what).to_string(),
                bytes: *bytes,
                max: *max,
            },
            CoordError::Trigger(TriggerError::NotASlot { slot }) => {
                WireError::NotASlot { slot: *slot }
            }
            CoordError::Backfill(b) => WireError::Backfill(b.clone()),
            CoordError::Contention { attempts } => WireError::Contention {
                attempts: *attempts,
            },
            // An error (or refusal, or trigger error) newer than this
            // protocol: its text as a store error, retryable if it was.
            other => WireError::Store {
                kind: if other.is_transient() {
                    WireStoreKind::Unavailable
                } else {
                    WireStoreKind::Other
                },
                message: other.to_string(),
            },
        }
    }
}

impl From<WireError> for CoordError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Store { kind, message } => CoordError::Store(StoreError::new(
                match kind {
                    WireStoreKind::Unavailable => StoreErrorKind::Unavailable,
                    WireStoreKind::Corrupt => StoreErrorKind::Corrupt,
                    WireStoreKind::Ambiguous => StoreErrorKind::Ambiguous,
                    WireStoreKind::Other => StoreErrorKind::Other,
                },
                message,
            )),
            WireError::Superseded { fence, latest } => {
                CoordError::Refused(Refusal::Superseded { fence, latest })
            }
            WireError::Expired { fence, expired_at } => {
                CoordError::Refused(Refusal::Expired { fence, expired_at })
            }
            WireError::TooLarge { what, bytes, max } => CoordError::Refused(Refusal::TooLarge {
                what: static_what(&what),
                bytes,
                max,
            }),
            WireError::NotASlot { slot } => CoordError::Trigger(TriggerError::NotASlot { slot }),
            WireError::Backfill(b) => CoordError::Backfill(b),
            WireError::Contention { attempts } => CoordError::Contention { attempts },
            WireError::BadRequest { message } => CoordError::Store(StoreError::other(format!(
                "the job's object refused the request: {message}"
            ))),
            #[cfg(feature = "schedules")]
            WireError::Schedule(refusal) => CoordError::Store(StoreError::other(
                cronslot_core::coord::ScheduleError::Refused(refusal).to_string(),
            )),
            #[cfg(feature = "schedules")]
            WireError::Run(refusal) => CoordError::Store(StoreError::other(
                cronslot_core::coord::RunError::Refused(refusal).to_string(),
            )),
        }
    }
}

/// The core names what was too large with a few fixed phrases; anything
/// else (a newer object's phrase) becomes a generic one.
fn static_what(what: &str) -> &'static str {
    match what {
        "the result" => "the result",
        "the checkpoint" => "the checkpoint",
        "the record" => "the record",
        _ => "a value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_survive_the_wire() {
        let t: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let errors = [
            CoordError::Store(StoreError::new(StoreErrorKind::Ambiguous, "timeout")),
            CoordError::Refused(Refusal::Superseded {
                fence: 3,
                latest: 4,
            }),
            CoordError::Refused(Refusal::Expired {
                fence: 3,
                expired_at: t,
            }),
            CoordError::Refused(Refusal::TooLarge {
                what: "the checkpoint",
                bytes: 9,
                max: 1,
            }),
            CoordError::Trigger(TriggerError::NotASlot { slot: t }),
            CoordError::Backfill(BackfillError::TooMany { count: 5, max: 4 }),
            CoordError::Contention { attempts: 64 },
        ];
        for e in errors {
            let json = serde_json::to_string(&WireError::from(&e)).unwrap();
            let back: WireError = serde_json::from_str(&json).unwrap();
            assert_eq!(CoordError::from(back), e, "{json}");
        }
    }

    #[test]
    fn answers_are_named_as_on_the_wire() {
        let t: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let answers = [
            Answer::Done,
            Answer::Completed { more_due: false },
            Answer::Expiry(t),
            Answer::Record(None),
            Answer::Slots(Vec::new()),
            Answer::Effect(None),
            Answer::Tick {
                mark: None,
                woken: Vec::new(),
                carried: Vec::new(),
            },
            Answer::Repaired(Some(t)),
            Answer::Count {
                requests: 1,
                alarms: 0,
            },
        ];
        for answer in answers {
            let wire = serde_json::to_value(&answer).unwrap();
            let key = match &wire {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Object(m) => m.keys().next().unwrap().clone(),
                other => panic!("{other}"),
            };
            assert_eq!(answer.name(), key, "{wire}");
        }
    }

    #[test]
    fn a_request_round_trips() {
        let t: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let req = ObjectRequest {
            protocol: PROTOCOL_VERSION,
            job: "a".into(),
            spec: "[[job]]".into(),
            op: Op::Claim {
                now: t,
                trigger: Trigger::Slot(t),
                owner: "w".into(),
            },
            #[cfg(feature = "schedules")]
            schedule: None,
        };
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(serde_json::from_str::<ObjectRequest>(&json).unwrap(), req);
    }

    #[test]
    fn tick_requests_round_trip_without_a_spec() {
        let t: Timestamp = "2026-01-05T00:00:00.000000001Z".parse().unwrap();
        let woken = Woken {
            job: "a".into(),
            at: t,
        };
        for op in [
            Op::TickStart { now: t, limit: 7 },
            Op::TickEnd {
                mark: t,
                served: vec![woken.clone()],
                left: vec![],
            },
            Op::TickEnd {
                mark: t,
                served: vec![],
                left: vec![woken.clone()],
            },
            Op::Wake {
                woken: woken.clone(),
            },
            Op::Requests,
        ] {
            let req = ObjectRequest {
                protocol: PROTOCOL_VERSION,
                job: TICK_OBJECT.into(),
                spec: String::new(),
                op,
                #[cfg(feature = "schedules")]
                schedule: None,
            };
            let json = serde_json::to_string(&req).unwrap();
            assert!(!json.contains("spec"), "{json}");
            assert_eq!(serde_json::from_str::<ObjectRequest>(&json).unwrap(), req);
        }
        for answer in [
            Answer::Tick {
                mark: Some(t),
                woken: vec![woken.clone()],
                carried: vec![],
            },
            Answer::Tick {
                mark: None,
                woken: vec![],
                carried: vec![woken],
            },
            Answer::Completed { more_due: true },
            Answer::Failed {
                outcome: FailOutcome::RetryAt(t),
                more_due: false,
            },
            Answer::Count {
                requests: 3,
                alarms: 1,
            },
        ] {
            let json = serde_json::to_string(&Ok::<_, WireError>(answer.clone())).unwrap();
            assert_eq!(
                serde_json::from_str::<ObjectReply>(&json).unwrap(),
                Ok(answer)
            );
        }
    }

    /// The keyed runs' operations and answers on the wire: their names
    /// are the wire's, and they round-trip.
    #[cfg(feature = "schedules")]
    #[test]
    fn keyed_run_messages_round_trip_and_are_named_as_on_the_wire() {
        use cronslot_core::coord::decide::{Enqueued, RunRefusal};
        use cronslot_core::schedules::{RunStatus, RunView};
        let t: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let view = RunView {
            job: "mail".into(),
            key: "k".into(),
            run: "mail/k@2026-01-05T00:00:00Z".into(),
            created: Some(true),
            status: RunStatus::Pending,
            attempts: 0,
            last_error: None,
            enqueued: t,
            at: t,
            started: None,
            finished: None,
            next_attempt: Some(t),
            fence: 0,
            remembered_until: None,
            payload: serde_json::value::RawValue::from_string(r#"{"a":1}"#.into()).ok(),
        };
        for (op, name) in [
            (
                Op::EnqueueRun {
                    request: r#"{"payload":1}"#.into(),
                    now: t,
                },
                "enqueue_run",
            ),
            (Op::RunStatus { now: t }, "run_status"),
            (
                Op::ListRuns {
                    prefix: "k".into(),
                    status: Some(RunStatus::Dead),
                    after: None,
                    limit: 10,
                    now: t,
                },
                "list_runs",
            ),
            (
                Op::ReadScheduleForClaim { now: t },
                "read_schedule_for_claim",
            ),
        ] {
            let wire = serde_json::to_value(&op).unwrap();
            assert_eq!(
                wire.as_object().and_then(|m| m.keys().next()).unwrap(),
                name
            );
            assert_eq!(op.name(), name);
            let back: Op = serde_json::from_value(wire).unwrap();
            assert_eq!(back, op);
        }
        for answer in [
            Answer::Enqueued(Enqueued::Created(view.clone())),
            Answer::Run(Some(Box::new(view.clone()))),
            Answer::Run(None),
            Answer::Runs {
                runs: vec![view.clone()],
                cursor: Some("k".into()),
            },
        ] {
            let json = serde_json::to_string(&Ok::<_, WireError>(answer.clone())).unwrap();
            let wire: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(
                wire["Ok"]
                    .as_object()
                    .and_then(|m| m.keys().next())
                    .unwrap(),
                answer.name()
            );
            assert_eq!(
                serde_json::from_str::<ObjectReply>(&json).unwrap(),
                Ok(answer)
            );
        }
        let refusal = WireError::Run(RunRefusal::Differs {
            fields: vec!["payload".into()],
            existing: Box::new(view),
        });
        let json = serde_json::to_string(&refusal).unwrap();
        assert_eq!(serde_json::from_str::<WireError>(&json).unwrap(), refusal);
        // An object of a version without these operations refuses them as
        // a request it cannot read (not a guess at what they mean).
        assert!(serde_json::from_str::<Op>(r#"{"enqueue_run_v2":{}}"#).is_err());
    }

    #[test]
    fn the_tick_object_is_no_job() {
        assert!(cronslot_core::manifest::validate_job_name(TICK_OBJECT).is_err());
    }
}
