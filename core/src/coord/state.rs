//! The per-job state record: everything a store keeps about one job, in one
//! versioned value, so that a single compare-and-set replaces it atomically.
//!
//! The record is bounded: history and dead letters are capped (DynamoDB
//! items are limited to 400 KB), and slots are never enumerated into it —
//! the cursor stands for every slot up to it.

use std::collections::BTreeMap;
use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::schedule::GapCause;

/// The layout version written by this build. Records of older versions are
/// migrated on read (see [`decode_state`]); newer ones are refused.
pub const SCHEMA_VERSION: u32 = 1;

/// Dead letters kept per job; the oldest is dropped past this (and counted).
pub const MAX_DEAD_LETTERS: usize = 100;

/// Largest checkpoint a run may save with its lease, in bytes.
pub const MAX_CHECKPOINT_BYTES: usize = 4096;

/// Largest error text kept in a record, in bytes (longer ones are cut).
pub const MAX_ERROR_BYTES: usize = 1024;

/// Largest result a completion may carry, in bytes.
pub const MAX_RESULT_BYTES: usize = 1024;

/// The most an encoded record may take. DynamoDB items stop at 400 KB; the
/// rest is headroom for the item's other attributes. Every store enforces the
/// same budget (see `decide::fit_record`), so a record that fits one fits all.
pub const MAX_RECORD_BYTES: usize = 350 * 1024;

/// Why a slot did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissReason {
    /// Older than the starting deadline when planned: the scheduler (or every
    /// trigger) was down.
    Downtime,
    /// `overlap = "forbid"` kept it waiting past its deadline, or `replace`
    /// superseded its run.
    Overlap,
    /// The catch-up policy (`latest`, `none`, or `max_catch_up`) passed it over.
    CatchUp,
    /// A fixed-time slot in a DST gap under `dst_gap = "skip"`.
    Dst,
    /// A fixed-time slot whose wall-clock time a clock change skipped: the
    /// clock jumped forward three hours or more (Samoa skipped 2011-12-30),
    /// which is not DST; under `dst_gap = "shift"` or `"skip"`.
    ClockChange,
}

impl MissReason {
    /// Every reason, in declaration order (for reports that list each).
    pub const ALL: [MissReason; 5] = [
        MissReason::Downtime,
        MissReason::Overlap,
        MissReason::CatchUp,
        MissReason::Dst,
        MissReason::ClockChange,
    ];

    /// The reason as written in output (`"catch_up"`), the same as its
    /// serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            MissReason::Downtime => "downtime",
            MissReason::Overlap => "overlap",
            MissReason::CatchUp => "catch_up",
            MissReason::Dst => "dst",
            MissReason::ClockChange => "clock_change",
        }
    }
}

impl From<GapCause> for MissReason {
    /// The reason a slot that a gap skipped is missed for.
    fn from(cause: GapCause) -> MissReason {
        match cause {
            GapCause::Dst => MissReason::Dst,
            GapCause::ClockChange => MissReason::ClockChange,
        }
    }
}

/// Why a slot was not due to run at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The job was paused when the slot came due.
    Paused,
    /// Before `start_at` or at/after `end_at`.
    OutsideWindow,
    /// The slot's schedule (of a dynamic job) was deleted before the slot
    /// was claimed.
    Deleted,
}

impl SkipReason {
    /// The reason as written in output (`"outside_window"`), the same as
    /// its serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Paused => "paused",
            SkipReason::OutsideWindow => "outside_window",
            SkipReason::Deleted => "deleted",
        }
    }
}

/// How a run came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The slot came due on the schedule.
    #[default]
    Schedule,
    /// An operator asked for past slots (`backfill`).
    Backfill,
    /// An operator asked for the current slot now (`trigger`).
    Manual,
    /// An operator sent a dead letter back (`redrive`).
    Redrive,
}

/// The right to run one slot until `expires_at` (plus the skew margin).
///
/// A claim hands it to the worker that runs the slot; the worker passes its
/// `fence` back to complete, fail, heartbeat or checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The worker that claimed the slot (the id it gave to the claim).
    pub owner: String,
    /// The slot's scheduled instant.
    #[serde(with = "crate::instant::text")]
    pub slot: Timestamp,
    /// The claim's fence: greater than every earlier fence of the job, so
    /// destinations can refuse a stale writer, and the store refuses
    /// completions of a superseded run.
    pub fence: u64,
    /// 1 for the first run of the slot.
    pub attempt: u32,
    /// When the claim was made.
    #[serde(with = "crate::instant::text")]
    pub claimed_at: Timestamp,
    /// The lease runs out at this instant; it counts as expired once the
    /// job's skew margin has passed too. A heartbeat moves it.
    #[serde(with = "crate::instant::text")]
    pub expires_at: Timestamp,
    /// The last checkpoint saved for the slot, by this run or an earlier
    /// attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// How the run came to be.
    #[serde(default)]
    pub origin: Origin,
    /// Retries of this slot must start before this instant (the next slot),
    /// unless the job allows retries past it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub retry_until: Option<Timestamp>,
    /// The version of the schedule (of a dynamic job) the slot belongs to,
    /// when it is not the one in force ([`ScheduleData::pinned`]); `None`:
    /// the one in force, or a static job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// A slot waiting for another attempt.
///
/// Retries, redriven dead letters, backfilled slots and manual triggers of a
/// slot already passed wait here until a claim takes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRun {
    /// The slot's scheduled instant.
    #[serde(with = "crate::instant::text")]
    pub slot: Timestamp,
    /// The attempt number the next run will have.
    pub attempt: u32,
    /// The run may not start before this instant (the retry's backoff).
    #[serde(with = "crate::instant::text")]
    pub not_before: Timestamp,
    /// The run must start before this instant (the schedule's next slot),
    /// or the slot becomes a dead letter; `None`: no such limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub retry_until: Option<Timestamp>,
    /// The error of the previous attempt (or of the dead letter redriven).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The checkpoint the next run starts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// How the run came to be.
    #[serde(default)]
    pub origin: Origin,
    /// As [`Lease::version`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// A slot whose retries are exhausted or whose error was permanent.
///
/// It stays in the record (up to 100 per job) for an operator to look at or
/// redrive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// The slot's scheduled instant.
    #[serde(with = "crate::instant::text")]
    pub slot: Timestamp,
    /// Attempts made.
    pub attempts: u32,
    /// The last error, with why it was not retried.
    pub last_error: String,
    /// The fence of the last attempt's claim (for a slot whose retry
    /// window closed, the job's fence at that time).
    pub fence: u64,
    /// When the slot became a dead letter.
    #[serde(with = "crate::instant::text")]
    pub died_at: Timestamp,
    /// The last checkpoint saved, which a redrive hands on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

/// How one run ended.
/// Written inside [`RunRecord`] (read back through `StoredRun`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RunOutcome {
    /// The run completed.
    Succeeded {
        /// The short result the run reported, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    /// The run reported a failure.
    Failed {
        /// The error it reported (a long one is cut, to keep the record
        /// small).
        error: String,
        /// Whether it was permanent (no retry).
        permanent: bool,
    },
    /// The lease expired before the run reported (a crash, a pause, a kill).
    LeaseExpired,
    /// `overlap = "replace"`: a newer slot's claim superseded this run.
    Superseded,
}

impl RunOutcome {
    /// True for [`RunOutcome::Succeeded`].
    pub fn succeeded(&self) -> bool {
        matches!(self, RunOutcome::Succeeded { .. })
    }
}

/// One finished run, kept in the bounded history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StoredRun")]
pub struct RunRecord {
    /// The slot's scheduled instant.
    #[serde(with = "crate::instant::text")]
    pub slot: Timestamp,
    /// The run's attempt number (1 for the first).
    pub attempt: u32,
    /// The run's fence.
    pub fence: u64,
    /// The worker that ran it.
    pub owner: String,
    /// When the slot was claimed.
    #[serde(with = "crate::instant::text")]
    pub started_at: Timestamp,
    /// When the outcome was recorded (for an expired or superseded run,
    /// when that was noticed).
    #[serde(with = "crate::instant::text")]
    pub finished_at: Timestamp,
    /// How the run ended.
    #[serde(flatten)]
    pub outcome: RunOutcome,
}

/// [`RunRecord`] as stored: the outcome's fields sit beside the run's
/// (`"outcome": "failed", "error": …`). Read through this plain struct
/// rather than serde's `flatten` and `tag`, whose deserialisers buffer the
/// record in serde's generic `Content` (with the effect ledger's record,
/// ≈ 100 KB of a Worker). The layout written is the same.
#[derive(Deserialize)]
struct StoredRun {
    #[serde(with = "crate::instant::text")]
    slot: Timestamp,
    attempt: u32,
    fence: u64,
    owner: String,
    #[serde(with = "crate::instant::text")]
    started_at: Timestamp,
    #[serde(with = "crate::instant::text")]
    finished_at: Timestamp,
    outcome: OutcomeKind,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    permanent: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutcomeKind {
    Succeeded,
    Failed,
    LeaseExpired,
    Superseded,
}

impl TryFrom<StoredRun> for RunRecord {
    type Error = String;
    fn try_from(run: StoredRun) -> Result<RunRecord, String> {
        let outcome = match run.outcome {
            OutcomeKind::Succeeded => RunOutcome::Succeeded { result: run.result },
            OutcomeKind::Failed => match (run.error, run.permanent) {
                (Some(error), Some(permanent)) => RunOutcome::Failed { error, permanent },
                (None, _) => return Err("a failed run without its \"error\"".into()),
                (_, None) => return Err("a failed run without \"permanent\"".into()),
            },
            OutcomeKind::LeaseExpired => RunOutcome::LeaseExpired,
            OutcomeKind::Superseded => RunOutcome::Superseded,
        };
        Ok(RunRecord {
            slot: run.slot,
            attempt: run.attempt,
            fence: run.fence,
            owner: run.owner,
            started_at: run.started_at,
            finished_at: run.finished_at,
            outcome,
        })
    }
}

/// Running totals: what `status` shows for slots no longer listed one by one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Claims (runs started), retries included.
    pub runs: u64,
    /// Successful runs.
    pub succeeded: u64,
    /// Failed attempts (each retry that fails counts).
    pub failed: u64,
    /// Slots that became dead letters.
    pub dead: u64,
    /// Dead letters dropped from the capped list (still counted in `dead`).
    #[serde(default)]
    pub dead_dropped: u64,
    /// Slots that did not run, by reason (reasons with none are absent).
    #[serde(default)]
    pub missed: BTreeMap<MissReason, u64>,
    /// Slots that were not due to run, by reason (reasons with none are
    /// absent).
    #[serde(default)]
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Dead letters sent back to run.
    #[serde(default)]
    pub redriven: u64,
    /// Past slots queued by backfills.
    #[serde(default)]
    pub backfilled: u64,
}

impl Counters {
    /// Missed slots, every reason together.
    pub fn missed_total(&self) -> u64 {
        self.missed.values().sum()
    }

    /// Skipped slots, every reason together.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    pub(crate) fn add_missed(&mut self, reason: MissReason, n: u64) {
        if n > 0 {
            *self.missed.entry(reason).or_default() += n;
        }
    }

    pub(crate) fn add_skipped(&mut self, reason: SkipReason, n: u64) {
        if n > 0 {
            *self.skipped.entry(reason).or_default() += n;
        }
    }
}

/// A schedule change noticed by the coordinator (the spec hash differed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleChange {
    /// When the change was noticed.
    #[serde(with = "crate::instant::text")]
    pub at: Timestamp,
    /// The spec hash before.
    pub from_hash: String,
    /// The spec hash after.
    pub to_hash: String,
}

/// Everything a store keeps about one job.
///
/// Stores keep it encoded ([`encode_state`], [`decode_state`]) and replace
/// it only by compare-and-set; the transitions of [`decide`](super::decide)
/// change it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobState {
    /// The layout version the record was written with
    /// ([`SCHEMA_VERSION`]).
    pub schema: u32,
    /// The job's name.
    pub job: String,
    /// The [spec hash](crate::manifest::spec_hash) the record was last
    /// planned with; a different one means the job's slots changed
    /// (schedule, zone, DST policy or active window).
    pub spec_hash: String,
    /// When the record was created: slots before it never run (unless
    /// backfilled).
    #[serde(with = "crate::instant::text")]
    pub created_at: Timestamp,
    /// Every slot at or before the cursor has been taken (claimed, or given a
    /// fate). Never moves backwards.
    #[serde(with = "crate::instant::text")]
    pub cursor: Timestamp,
    /// The highest fence issued; every claim takes the next one.
    pub fence: u64,
    /// Runs in progress, each holding its slot.
    #[serde(default)]
    pub leases: Vec<Lease>,
    /// Slots waiting for a run (retries, redrives, backfills, manual
    /// triggers).
    #[serde(default)]
    pub pending: Vec<PendingRun>,
    /// Slots given up on: at most 100, the oldest dropped first (and
    /// counted in [`Counters::dead_dropped`]).
    #[serde(default)]
    pub dead: Vec<DeadLetter>,
    /// Newest last; at most `history.succeeded` successes and
    /// `history.failed` other outcomes.
    #[serde(default)]
    pub history: Vec<RunRecord>,
    /// Running totals.
    #[serde(default)]
    pub counters: Counters,
    /// Due slots are skipped (reason: paused) while this is set.
    #[serde(default)]
    pub paused: bool,
    /// Why cronslot paused the job itself (its record outgrew the budget);
    /// `None` when an operator paused it or it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_reason: Option<String>,
    /// The newest successful run, kept whatever the history limits (health
    /// checks measure staleness from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_success: Option<RunRecord>,
    /// The newest schedule change noticed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_change: Option<ScheduleChange>,
    /// When the job needs a claim that its schedule will not bring: a
    /// lease's expiry, a waiting retry, backfill or redrive, a slot held
    /// back by overlap. Derived from the rest of the record
    /// ([`decide::next_wake`](super::decide::next_wake)) at every write, so
    /// that a store can index it and a tick can find these jobs without
    /// reading every record. `None`: the schedule alone brings the job back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub wake_at: Option<Timestamp>,
    /// The newest slots that did not run, as spans of one fate and reason
    /// (at most [`MAX_FATE_SPANS`], the oldest dropped first): what a
    /// timeline shows between the runs of `history`. The counters keep
    /// the totals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fates: Vec<FateSpan>,
    /// What a schedule of a dynamic job is (its spec and version); `None`
    /// for a static job, whose schedule the manifest writes.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleData>,
}

#[cfg(feature = "schedules")]
pub use schedule_data::{KeyedRun, PinnedVersion, ScheduleData};

/// A schedule's data in its record (feature `schedules`).
#[cfg(feature = "schedules")]
mod schedule_data {
    use jiff::Timestamp;
    use serde::{Deserialize, Serialize};

    use crate::manifest::{JobSpec, JobTemplate};
    use crate::schedules::{ScheduleKey, ScheduleSpec, SpecProblem};

    /// The data of one schedule of a dynamic job, kept in its record so that a
    /// change and the slots it decides about are one conditional write.
    ///
    /// The spec is kept as the JSON a `PUT` of it sends
    /// ([`ScheduleSpec::to_json`]), read only where schedules are served: a
    /// process that only runs jobs (a Worker) pays nothing to carry it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct ScheduleData {
        /// 1 when created; one more at every change, a delete and a re-create
        /// included, so that a version from before a delete never matches.
        pub version: u64,
        /// The spec in force, as JSON; `None` once deleted (the record is then
        /// a tombstone: it keeps the version and the fence for a re-create).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub spec_json: Option<String>,
        /// When the version in force was written, by the store's clock.
        #[serde(with = "crate::instant::text")]
        pub changed_at: Timestamp,
        /// The payloads of earlier versions that a lease or a waiting run still
        /// belongs to: a slot runs with the payload of the version in force at
        /// its instant. Dropped once nothing refers to them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub pinned: Vec<PinnedVersion>,
        /// Set when the schedule is a keyed run (a one-off enqueued under a
        /// business key, [`crate::schedules::RunRequest`]): how long its key
        /// is remembered once the run ends.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub run: Option<KeyedRun>,
    }

    /// What a keyed run's record keeps beyond a one-off schedule's.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct KeyedRun {
        /// The key is remembered this many seconds after the run ends (the
        /// job's `key_retention` when the run was enqueued); then the
        /// record is forgotten, and the key may name a new run.
        pub retention_secs: u64,
    }

    /// An earlier version's payload, kept for the runs that belong to it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct PinnedVersion {
        /// The version.
        pub version: u64,
        /// Its payload, JSON text as it was sent; `None`: it had none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub payload: Option<String>,
    }

    impl ScheduleData {
        /// Data of `version` with `spec` in force, written at `at`.
        pub fn live(version: u64, spec: &ScheduleSpec, at: Timestamp) -> ScheduleData {
            ScheduleData {
                version,
                spec_json: Some(spec.to_json()),
                changed_at: at,
                pinned: Vec::new(),
                run: None,
            }
        }

        /// Whether the schedule exists (is not a tombstone).
        pub fn is_live(&self) -> bool {
            self.spec_json.is_some()
        }

        /// The spec in force (`None`: deleted), read with the checks of a
        /// `PUT`: a stored spec that no longer passes them (its zone left the
        /// tz database) is an error naming the record's field.
        pub fn spec(&self) -> Result<Option<ScheduleSpec>, SpecProblem> {
            let Some(text) = &self.spec_json else {
                return Ok(None);
            };
            ScheduleSpec::from_json(text).map(Some).map_err(|problems| {
                let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
                SpecProblem {
                    field: "spec_json".to_string(),
                    message: format!("the stored spec no longer reads: {}", text.join("; ")),
                }
            })
        }

        /// The spec the schedule `key` of `template` runs its slots with now:
        /// the version in force, its timing and its payload
        /// ([`JobTemplate::for_schedule`], with
        /// [`JobSpec::schedule_version`] set so that a claim with it after
        /// another change starts nothing). `None` for a tombstone.
        pub fn job_spec(
            &self,
            template: &JobTemplate,
            key: &ScheduleKey,
        ) -> Result<Option<JobSpec>, SpecProblem> {
            let Some(spec) = self.spec()? else {
                return Ok(None);
            };
            let mut job = template.for_schedule(key, &spec)?;
            job.schedule_version = Some(self.version);
            job.earlier_payloads = self
                .pinned
                .iter()
                .map(|p| (p.version, p.payload.as_deref().map(std::sync::Arc::from)))
                .collect();
            Ok(Some(job))
        }

        /// The payload (JSON text) of `version`, the one in force when `None`.
        pub fn payload(&self, version: Option<u64>) -> Option<String> {
            match version {
                None => self
                    .spec()
                    .ok()
                    .flatten()?
                    .payload
                    .map(|p| p.get().to_string()),
                Some(v) => self
                    .pinned
                    .iter()
                    .find(|p| p.version == v)
                    .and_then(|p| p.payload.clone()),
            }
        }
    }
}

/// Fate spans a record keeps ([`JobState::fates`]).
pub const MAX_FATE_SPANS: usize = 20;

/// Consecutive slots of one job given one fate for one reason: missed
/// (`downtime`, `overlap`, `catch_up`, `dst`, `clock_change`) or skipped
/// (`paused`, `outside_window`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FateSpan {
    /// `missed` or `skipped`.
    pub fate: String,
    /// The reason, as the counters name it.
    pub reason: String,
    /// The first slot of the span (for a slot a DST gap or clock change
    /// removed, the instant of the transition).
    #[serde(with = "crate::instant::text")]
    pub first: Timestamp,
    /// The last slot of the span.
    #[serde(with = "crate::instant::text")]
    pub last: Timestamp,
    /// How many slots the span holds.
    pub slots: u64,
}

impl JobState {
    /// A new job: its cursor starts at its creation, so it never runs slots
    /// from before it existed (unless backfilled).
    pub fn new(job: &str, spec_hash: &str, now: Timestamp, paused: bool) -> JobState {
        JobState {
            schema: SCHEMA_VERSION,
            job: job.to_string(),
            spec_hash: spec_hash.to_string(),
            created_at: now,
            cursor: now,
            fence: 0,
            leases: Vec::new(),
            pending: Vec::new(),
            dead: Vec::new(),
            history: Vec::new(),
            counters: Counters::default(),
            paused,
            paused_reason: None,
            last_success: None,
            last_schedule_change: None,
            wake_at: None,
            fates: Vec::new(),
            #[cfg(feature = "schedules")]
            schedule: None,
        }
    }

    /// Notes `slots` slots from `first` to `last` given `fate` for
    /// `reason`. With `joins` (the caller found no slot of the schedule
    /// between the newest span's last slot and `first`), extends the
    /// newest span when it has the same fate and reason; otherwise adds a
    /// span, dropping the oldest beyond [`MAX_FATE_SPANS`].
    pub(crate) fn note_fate(
        &mut self,
        fate: &str,
        reason: &str,
        (first, last): (Timestamp, Timestamp),
        slots: u64,
        joins: bool,
    ) {
        if slots == 0 {
            return;
        }
        if let Some(newest) = self.fates.last_mut() {
            if joins && newest.fate == fate && newest.reason == reason && newest.last < first {
                newest.last = last;
                newest.slots = newest.slots.saturating_add(slots);
                return;
            }
        }
        self.fates.push(FateSpan {
            fate: fate.to_string(),
            reason: reason.to_string(),
            first,
            last,
            slots,
        });
        if self.fates.len() > MAX_FATE_SPANS {
            let excess = self.fates.len() - MAX_FATE_SPANS;
            self.fates.drain(..excess);
        }
    }

    /// The lease with this fence, if the record still holds it (a run that
    /// completed, failed or was superseded has none; nor has an expired
    /// one once the record was brought up to date).
    pub fn lease_for_fence(&self, fence: u64) -> Option<&Lease> {
        self.leases.iter().find(|l| l.fence == fence)
    }

    /// Is this slot already taken (claimed now, waiting for a retry, or
    /// resolved)?
    pub fn slot_taken(&self, slot: Timestamp) -> bool {
        slot <= self.cursor
            || self.leases.iter().any(|l| l.slot == slot)
            || self.pending.iter().any(|p| p.slot == slot)
    }

    /// Is this slot running now or waiting for another attempt?
    pub fn slot_in_flight(&self, slot: Timestamp) -> bool {
        self.leases.iter().any(|l| l.slot == slot) || self.pending.iter().any(|p| p.slot == slot)
    }

    /// Is this slot finished for good (not live, not waiting)?
    pub fn slot_resolved(&self, slot: Timestamp) -> bool {
        slot <= self.cursor
            && !self.leases.iter().any(|l| l.slot == slot)
            && !self.pending.iter().any(|p| p.slot == slot)
    }
}

/// A stored record that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The job whose record it is.
    pub job: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stored state of job {:?} cannot be read: {}",
            self.job, self.message
        )
    }
}

impl std::error::Error for DecodeError {}

/// Encodes a record for storage (JSON: readable in a table browser, and
/// every store can hold a string).
pub fn encode_state(state: &JobState) -> String {
    // Serialising plain data with string keys cannot fail; fall back to an
    // empty object rather than panic if serde ever says otherwise.
    serde_json::to_string(state).unwrap_or_else(|_| "{}".to_string())
}

/// Decodes a stored record, migrating older layouts. Refuses records written
/// by a newer cronslot (their meaning is unknown to this build) and records
/// of another job.
pub fn decode_state(job: &str, text: &str) -> Result<JobState, DecodeError> {
    let err = |message: String| DecodeError {
        job: job.to_string(),
        message,
    };
    // The schema first, so that a record of a newer cronslot says so
    // instead of failing on whichever key changed. (Read into a struct of
    // its own rather than a `serde_json::Value`, whose deserialiser would
    // add ≈ 30 KB to a Worker.)
    #[derive(Deserialize)]
    struct Schema {
        schema: Option<u64>,
    }
    let schema = if text.trim_start().starts_with('{') {
        match crate::json::from_str::<Schema>(text) {
            Ok(Schema { schema }) => schema,
            Err(e) if e.is_data() => None,
            Err(e) => return Err(err(format!("not JSON ({e})"))),
        }
    } else {
        // Not an object (a derived struct would also read an array):
        // JSON or not, it has no schema.
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| err(format!("not JSON ({e})")))?;
        None
    };
    let schema = schema.ok_or_else(|| err("no schema version".into()))?;
    if schema > u64::from(SCHEMA_VERSION) {
        return Err(err(format!(
            "written by a newer cronslot (schema {schema}, this build reads up to {SCHEMA_VERSION}); upgrade cronslot"
        )));
    }
    if schema == 0 {
        return Err(err("schema 0 does not exist".into()));
    }
    let state: JobState =
        crate::json::from_str(text).map_err(|e| err(format!("malformed record ({e})")))?;
    if state.job != job {
        return Err(err(format!("the record belongs to job {:?}", state.job)));
    }
    if state.cursor < state.created_at {
        return Err(err("cursor is before the job's creation".into()));
    }
    Ok(state)
}

/// Cuts a text to at most `max` bytes on a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(outcome: RunOutcome) -> RunRecord {
        let t: Timestamp = "2026-03-08T07:00:00Z".parse().expect("valid");
        RunRecord {
            slot: t,
            attempt: 2,
            fence: 9,
            owner: "w1".into(),
            started_at: t,
            finished_at: t,
            outcome,
        }
    }

    /// The stored layout is pinned (records outlive builds), and reads back
    /// through `StoredRun` to the same value.
    #[test]
    fn run_records_keep_their_flat_layout_and_round_trip() {
        let cases = [
            (
                RunOutcome::Succeeded {
                    result: Some("ok".into()),
                },
                r#""outcome":"succeeded","result":"ok"}"#,
            ),
            (
                RunOutcome::Succeeded { result: None },
                r#""outcome":"succeeded"}"#,
            ),
            (
                RunOutcome::Failed {
                    error: "boom".into(),
                    permanent: true,
                },
                r#""outcome":"failed","error":"boom","permanent":true}"#,
            ),
            (RunOutcome::LeaseExpired, r#""outcome":"lease_expired"}"#),
            (RunOutcome::Superseded, r#""outcome":"superseded"}"#),
        ];
        for (outcome, tail) in cases {
            let record = run(outcome);
            let text = serde_json::to_string(&record).expect("serialises");
            assert!(
                text.starts_with(
                    r#"{"slot":"2026-03-08T07:00:00Z","attempt":2,"fence":9,"owner":"w1","#
                ),
                "{text}"
            );
            assert!(text.ends_with(tail), "{text}");
            let back: RunRecord = serde_json::from_str(&text).expect("reads back");
            assert_eq!(back, record);
        }
    }

    #[test]
    fn a_failed_run_without_its_error_is_refused() {
        let head = r#"{"slot":"2026-03-08T07:00:00Z","attempt":1,"fence":1,"owner":"w","started_at":"2026-03-08T07:00:00Z","finished_at":"2026-03-08T07:00:00Z","#;
        for (tail, expected) in [
            (
                r#""outcome":"failed","permanent":false}"#,
                "without its \"error\"",
            ),
            (
                r#""outcome":"failed","error":"x"}"#,
                "without \"permanent\"",
            ),
            (r#""outcome":"exploded"}"#, "unknown variant `exploded`"),
        ] {
            let e = serde_json::from_str::<RunRecord>(&format!("{head}{tail}"))
                .expect_err(tail)
                .to_string();
            assert!(e.contains(expected), "{tail}: {e}");
        }
    }
}
