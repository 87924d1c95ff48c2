//! The JSON bodies of the admin routes. Each derives `Deserialize` too, so
//! a client (the `cronslot` CLI) reads exactly what the Worker writes.
//! Instants are RFC 3339 strings in UTC; field names are stable; fields
//! may be added (clients must ignore unknown ones).

use std::collections::BTreeMap;

use cronslot_core::coord::{BackfillError, DeadLetter, FailOutcome, Idle, JobState, TriggerError};
use cronslot_core::health::Health;
#[cfg(feature = "schedules")]
use cronslot_core::schedules::SpecProblem;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The status document: `GET {p}/status` on the Worker and `cronslot
/// serve`, `cronslot status --format json`, and what the dashboard draws.
/// Every job of the manifest (or the `job` one), in manifest order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusDoc {
    /// The instant the status was computed at (the clock of whoever
    /// computed it: the Worker, `serve`, the CLI).
    #[serde(with = "cronslot_core::instant::text")]
    pub now: Timestamp,
    /// The store the records were read from, as `--store` names it (no
    /// password). Absent from the admin route: its caller knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// One report per job.
    pub jobs: Vec<JobReport>,
    /// The manifest's dynamic jobs (`dynamic = true`), in manifest order:
    /// their schedules are listed by `GET {p}/schedules/{job}`, not here.
    /// Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dynamic_jobs: Vec<String>,
    /// Jobs the store has a record of that the manifest no longer defines
    /// (left alone). Absent when that was not looked for: the admin route,
    /// and `cronslot status --job`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_in_manifest: Option<Vec<String>>,
    /// Where the next page of jobs starts: send it back as `after`.
    /// Absent: this is the last page (or the document is not paged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// How many jobs the page's `search` matches in all (every job without
    /// one). Absent when the document is not paged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<usize>,
}

/// One job in [`StatusDoc`]: a summary, and the record it is computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// The job's name.
    pub job: String,
    /// The cron expression as the manifest writes it. (Absent from a
    /// Worker older than the dashboard, as are `timezone`, `explanation`
    /// and `late_since`.)
    #[serde(default)]
    pub schedule: String,
    /// The IANA zone the expression is read in.
    #[serde(default)]
    pub timezone: String,
    /// The schedule in plain English ("At 09:00, Monday through Friday,
    /// America/New_York"), as `cronslot explain` writes it.
    #[serde(default)]
    pub explanation: String,
    /// What the job runs: `command | http | function`.
    #[serde(default)]
    pub action: String,
    /// False when the store has no record of the job yet (no tick has
    /// planned it); `record` is then the record a first tick would create.
    pub recorded: bool,
    /// Whether the job is paused.
    pub paused: bool,
    /// `ok | stale | never_succeeded | paused | no_bound` (the rule of
    /// `cronslot_core::health::assess`, as `cronslot status` uses it).
    pub health: Health,
    /// Whether `health` is `stale`.
    pub stale: bool,
    /// The staleness bound (`stale_after`, or derived from the schedule);
    /// `null`: the job has none (fewer than two slots remain).
    pub stale_after_seconds: Option<u64>,
    /// When the job is (or was) stale without a success; `null`: never.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub stale_at: Option<Timestamp>,
    /// When the last successful run finished; `null`: never.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub last_success: Option<Timestamp>,
    /// The slot of the last successful run.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub last_success_slot: Option<Timestamp>,
    /// The next slot after `now` in the job's active window.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub next_slot: Option<Timestamp>,
    /// The oldest slot overdue and not taken yet (nothing claimed it a
    /// minute and the skew margin after its time: the scheduler, the tick
    /// or every runner is down); `null`: the job is not late
    /// (`cronslot_core::health::late_since`).
    #[serde(default, with = "cronslot_core::instant::text::option")]
    pub late_since: Option<Timestamp>,
    /// Slots due and not claimed yet (the oldest, and how many up to
    /// `now`); `null`: none, or the job is paused.
    #[serde(default)]
    pub due: Option<Due>,
    /// Runs holding a lease now.
    pub live_leases: usize,
    /// The highest fence issued.
    pub fence: u64,
    /// Runs waiting for a runner: retries, backfills, redrives.
    pub pending: usize,
    /// Claims (runs started), retries included.
    pub runs: u64,
    /// Successful runs.
    pub succeeded: u64,
    /// Failed attempts (each retry that fails counts).
    pub failed: u64,
    /// Missed slots by reason; every reason is present (0 when none).
    pub missed: BTreeMap<String, u64>,
    /// Skipped slots by reason; every reason is present.
    pub skipped: BTreeMap<String, u64>,
    /// Dead letters held now.
    pub dead_letters: usize,
    /// The record as the coordinator's `status` returns it: brought up to
    /// `now` (expired leases and late slots given their fates), not written.
    /// The details the summary counts are here: `leases`, `pending`, `dead`
    /// (oldest first), `last_success` (the whole run), `counters` (dead,
    /// redriven, backfilled), `cursor`, `created_at`,
    /// `last_schedule_change`.
    pub record: JobState,
}

/// Due slots no run has claimed yet, in [`JobReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Due {
    /// The oldest.
    #[serde(with = "cronslot_core::instant::text")]
    pub oldest: Timestamp,
    /// How many slots are due, the oldest included (at least 1).
    pub count: u64,
}

/// `GET {p}/health`: 200 with `status: "ok"`, or 503 with the stale jobs
/// (or the jobs whose state could not be read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthDoc {
    /// The verdict over every job.
    pub status: HealthState,
    /// The instant the health was computed at (the Worker's clock).
    #[serde(with = "cronslot_core::instant::text")]
    pub now: Timestamp,
    /// Jobs whose staleness was checked.
    pub checked: usize,
    /// The jobs found stale (then the status is `stale`).
    pub stale: Vec<StaleJob>,
    /// Jobs not checked: paused, without a bound, never recorded.
    pub unchecked: Vec<UncheckedJob>,
    /// Jobs whose state could not be read (then the status is `unknown`).
    pub errors: Vec<JobErrorDoc>,
}

/// [`HealthDoc`]'s verdict (`"ok"`, `"stale"`, `"unknown"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HealthState {
    /// Every checked job succeeded within its bound. HTTP 200.
    Ok,
    /// A job is stale. HTTP 503.
    Stale,
    /// A job's state could not be read: health cannot be vouched for.
    Unknown,
}

/// A stale job in [`HealthDoc`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleJob {
    /// The job's name.
    pub job: String,
    /// When its last successful run finished; `null`: it never succeeded.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub last_success: Option<Timestamp>,
    /// Its staleness bound, as in [`JobReport`].
    pub stale_after_seconds: Option<u64>,
    /// When it became stale.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub stale_at: Option<Timestamp>,
}

/// A job [`HealthDoc`] did not check, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UncheckedJob {
    /// The job's name.
    pub job: String,
    /// `paused | no_bound | not_recorded`.
    pub reason: String,
}

/// A job whose state [`HealthDoc`] could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobErrorDoc {
    /// The job's name.
    pub job: String,
    /// What went wrong, for a person.
    pub message: String,
}

/// `GET {p}/dlq` and `cronslot dlq list --format json`: dead letters
/// sorted by job, then slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DlqDoc {
    /// The instant the list was read at (the Worker's clock, or the CLI's).
    #[serde(with = "cronslot_core::instant::text")]
    pub now: Timestamp,
    /// The store, as in [`StatusDoc::store`]; absent from the admin route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// The dead letters held now.
    pub dead_letters: Vec<DlqEntry>,
    /// Per job, dead letters dropped from the capped list (jobs with none
    /// omitted).
    pub dropped: BTreeMap<String, u64>,
    /// Per dynamic job whose dead keyed runs did not all fit in this list
    /// (it holds the first [`DEAD_RUNS_LISTED`] of each, in key order):
    /// where the rest go on, the cursor of
    /// `GET {p}/runs/{job}?status=dead&cursor=…`. Jobs whose dead runs are
    /// all here are omitted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub more_dead_runs: BTreeMap<String, String>,
}

/// The dead keyed runs of each dynamic job the dead-letter list holds; a
/// job with more says where they go on ([`DlqDoc::more_dead_runs`]).
pub const DEAD_RUNS_LISTED: usize = 100;

/// One dead letter in [`DlqDoc`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DlqEntry {
    /// The job's name.
    pub job: String,
    /// `job@slot`: the idempotency key the runs had (`job/key@instant` for
    /// a dynamic job's keyed run).
    pub slot_id: String,
    /// A dynamic job's keyed run: its key, which its redrive names
    /// (`POST {p}/jobs/{job}/redrive?key=KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `slot`, `attempts`, `last_error`, `fence`, `died_at`, `checkpoint`.
    #[serde(flatten)]
    pub letter: DeadLetter,
}

/// `GET {p}/jobs/{job}/next`: the job's next slots after `now`, from the
/// manifest alone (the store is not read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextDoc {
    /// The job's name.
    pub job: String,
    /// The instant the slots follow (the server's clock).
    #[serde(with = "cronslot_core::instant::text")]
    pub now: Timestamp,
    /// The IANA zone of the schedule.
    pub timezone: String,
    /// How the schedule behaves at DST transitions, in one sentence;
    /// `null` in zones without DST.
    pub dst: Option<String>,
    /// The job's jitter (`10m`): each slot starts within it after its
    /// instant, at `starts`. Absent without jitter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    /// The slots, oldest first, inside the job's active window (with
    /// jitter, the newest slot at or before `now` too while its start is
    /// still to come).
    pub slots: Vec<NextSlot>,
}

/// One slot of [`NextDoc`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextSlot {
    /// The slot's instant: its id.
    #[serde(with = "cronslot_core::instant::text")]
    pub slot: Timestamp,
    /// When it starts: its instant, or with jitter the point of its window
    /// the slot's hash chose.
    #[serde(with = "cronslot_core::instant::text")]
    pub starts: Timestamp,
    /// The wall-clock time the expression matched, `YYYY-MM-DDTHH:MM`
    /// (for a slot shifted out of a DST gap, the time in the gap).
    pub local: String,
    /// The zone's offset from UTC at the slot, in seconds.
    pub offset_seconds: i32,
    /// `regular`, `shifted_from_gap` (its wall-clock time does not exist
    /// that day: it runs at the first instant after the gap) or
    /// `second_pass` (the second pass through a repeated hour).
    pub kind: String,
}

/// `POST {p}/jobs/{job}/redrive`: the slots sent back to run (empty when
/// there was nothing to redrive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedriveDoc {
    /// The job's name.
    pub job: String,
    /// The schedule acted on (`?key=`); absent for a job's own record.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The slots sent back to run.
    #[serde(with = "cronslot_core::instant::text::vec")]
    pub redriven: Vec<Timestamp>,
}

/// `POST {p}/jobs/{job}/pause` and `/resume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseDoc {
    /// The job's name.
    pub job: String,
    /// The schedule acted on (`?key=`); absent for a job's own record.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The state after the request.
    pub paused: bool,
    /// False when the job already was in that state.
    pub changed: bool,
}

/// `POST {p}/jobs/{job}/backfill`: the slots queued (or, with `dry_run`,
/// that would be).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackfillDoc {
    /// The job's name.
    pub job: String,
    /// The schedule acted on (`?key=`); absent for a job's own record.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// True when nothing was queued: `slots` are what would have been.
    pub dry_run: bool,
    /// The slots queued (or that would be).
    #[serde(with = "cronslot_core::instant::text::vec")]
    pub slots: Vec<Timestamp>,
}

/// `POST {p}/repair`: one page of the repair sweep over the jobs' objects,
/// in name order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairDoc {
    /// How many jobs' objects this page looked at.
    pub checked: usize,
    /// The records that were given a wake (their object's alarm).
    pub repaired: Vec<RepairedJob>,
    /// Records that do not decode, with the store's message: left as they
    /// are (every operation on the job reports them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<JobErrorDoc>,
    /// Where the next page starts (`?after=` this job); `null`: this was
    /// the last page.
    pub next: Option<String>,
}

/// One record that [`RepairDoc`] gave a wake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairedJob {
    /// The job.
    pub job: String,
    /// The wake it was given.
    #[serde(with = "cronslot_core::instant::text")]
    pub wake: Timestamp,
}

/// `POST {p}/jobs/{job}/trigger`: what the manual run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerDoc {
    /// The job's name.
    pub job: String,
    /// What happened.
    pub outcome: TriggerKind,
    /// One sentence for a person.
    pub message: String,
    /// The claimed slot (absent when nothing was claimed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "cronslot_core::instant::text::option")]
    pub slot: Option<Timestamp>,
    /// The claimed slot's id, `job@slot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_id: Option<String>,
    /// The run's attempt of its slot (1 for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The run's fence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<u64>,
    /// How long the job ran, in milliseconds, when the run was timed where
    /// this document was made (`cronslot trigger` on a store it runs jobs
    /// on; absent from the Worker's route).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    /// The run's error (`failed`), or the store's (`claim_failed`,
    /// `not_recorded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the run's error was permanent (`failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permanent: Option<bool>,
    /// What became of a failed run: retried at an instant, or dead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fate: Option<FailOutcome>,
    /// Why nothing was claimed (`not_claimed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<Idle>,
}

/// What a manual run came to, in [`TriggerDoc`] (`"succeeded"`,
/// `"failed"`, `"not_claimed"`, …), with the HTTP status it is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TriggerKind {
    /// Ran and succeeded; recorded. HTTP 200.
    Succeeded,
    /// Ran and failed; recorded (retried or dead). HTTP 500.
    Failed,
    /// Nothing to run (paused, already ran, running, …). HTTP 409.
    NotClaimed,
    /// The Worker cannot run this kind of job; nothing claimed. HTTP 422.
    CannotRun,
    /// The claim itself failed. HTTP 503 (transient) or 500.
    ClaimFailed,
    /// The run ended but its outcome could not be recorded. HTTP 503 or 500.
    NotRecorded,
    /// A kind this build does not know (a newer Worker).
    #[serde(other)]
    Unknown,
}

/// Every error reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDoc {
    /// The HTTP status, repeated.
    pub status: u16,
    /// What kind of error.
    pub error: ErrorKind,
    /// What went wrong, for a person.
    pub message: String,
    /// The query parameter at fault (400); for a schedule's route also
    /// the path segment `key` or the header `If-Match` / `If-None-Match`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    /// The methods the route takes (405).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
    /// The core's refusal of a backfill (400), for clients to rebuild it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill: Option<BackfillError>,
    /// The core's refusal of a trigger (400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<TriggerError>,
    /// Every problem of a refused schedule spec (400, `spec`), each naming
    /// its field.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<SpecProblem>>,
    /// The schedule's version now: the live one (412, 409), or a
    /// tombstone's (404 of a deleted schedule). Absent when there is none.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The fields of a keyed run's request that differ from the run its
    /// key names (409, `differs`): `payload`, `at`.
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differs: Option<Vec<String>>,
    /// The run the key names (409, `differs`).
    #[cfg(feature = "schedules")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Box<cronslot_core::schedules::RunView>>,
}

impl ErrorDoc {
    /// An error of `error` kind sent with `status`, without the optional
    /// fields.
    pub fn new(status: u16, error: ErrorKind, message: impl Into<String>) -> ErrorDoc {
        ErrorDoc {
            status,
            error,
            message: message.into(),
            parameter: None,
            allow: None,
            backfill: None,
            trigger: None,
            #[cfg(feature = "schedules")]
            problems: None,
            #[cfg(feature = "schedules")]
            version: None,
            #[cfg(feature = "schedules")]
            differs: None,
            #[cfg(feature = "schedules")]
            run: None,
        }
    }
}

/// The kind of an [`ErrorDoc`] (`"unauthorized"`, `"not_found"`, …), with
/// the HTTP status it is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// 401: no token, or not the Worker's.
    Unauthorized,
    /// 503: no admin token (or tick secret) is configured.
    NotConfigured,
    /// 404: no such route or job.
    NotFound,
    /// 405.
    MethodNotAllowed,
    /// 400: a bad query.
    BadRequest,
    /// 400: the core refused the backfill (see `backfill`).
    Backfill,
    /// 400: the core refused the trigger (see `trigger`).
    Trigger,
    /// 409: the store refused a write (a superseded fence, a record too
    /// large).
    Refused,
    /// 503: the store is unavailable or contended; try again.
    Unavailable,
    /// 400: a schedule's spec was refused (see `problems`).
    #[cfg(feature = "schedules")]
    Spec,
    /// 412: `If-Match` named another version than the schedule's (see
    /// `version`); nothing was written.
    #[cfg(feature = "schedules")]
    PreconditionFailed,
    /// 409: `If-None-Match: *` met an existing schedule, or a keyed
    /// run's key names a schedule (see `version`); nothing was written.
    #[cfg(feature = "schedules")]
    Exists,
    /// 409: a keyed run's key names a run enqueued with another request
    /// (see `differs` and `run`); nothing was written.
    #[cfg(feature = "schedules")]
    Differs,
    /// 500.
    Internal,
    /// A kind this build does not know (a newer Worker).
    #[serde(other)]
    Unknown,
}
