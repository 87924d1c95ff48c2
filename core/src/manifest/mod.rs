//! The `cronslot.toml` manifest: `[defaults]` and `[[job]]` tables,
//! deserialised with serde and validated into fully resolved [`JobSpec`]s.
//!
//! Core does no I/O: [`parse_manifest`] takes the text and the file name to
//! use in messages. Every problem is collected (not just the first), each
//! with file, line, column and the offending source line.
//!
//! Resolution: a job's value wins, then the `[defaults]` value, then the
//! built-in default of docs/design.md §5. The tables `retry` and `history` merge
//! key by key, so a job that writes `retry = { max_attempts = 5 }` keeps the
//! backoff of `[defaults]`.
//!
//! See [`parse_manifest`] for an example. Where no TOML parser should be
//! linked (a Lambda function, a Worker), a build script validates the
//! manifest and the program loads its precompiled form
//! ([`Manifest::to_precompiled`], [`load_precompiled`]).

mod base64;
#[cfg(feature = "toml")]
mod chunks;
mod diagnostic;
mod duration;
mod gaps;
pub(crate) mod hash;
mod name;
mod precompiled;
#[cfg(feature = "toml")]
mod raw;
#[cfg(feature = "toml")]
mod resolve;
pub(crate) mod rules;
#[cfg(feature = "toml")]
mod table;
mod template;
#[cfg(feature = "toml")]
mod validate;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::schedule::{DstPolicy, Schedule};
use crate::schedules::ScheduleKey;

pub use diagnostic::{Diagnostic, ManifestErrors, Severity};
pub use duration::{DurationError, MAX_DURATION, format_duration, parse_duration};
pub use hash::spec_hash;
pub use name::{JobName, JobNameError, JobNameErrorKind, validate_job_name};
pub use precompiled::{
    PRECOMPILED_FORMAT, PRECOMPILED_VERSION, PrecompiledError, load_precompiled,
};
pub use template::JobTemplate;

/// Built-in defaults (docs/design.md §5) and limits: what a manifest key
/// set neither on the job nor in `[defaults]` gets, and the bounds values
/// are checked against.
pub mod defaults {
    use std::time::Duration;

    /// `timezone`: UTC.
    pub const TIMEZONE: &str = "UTC";
    /// `lease`: 15 minutes.
    pub const LEASE: Duration = Duration::from_secs(15 * 60);
    /// `starting_deadline`: 10 minutes.
    pub const STARTING_DEADLINE: Duration = Duration::from_secs(10 * 60);
    /// `max_catch_up`: 10 slots.
    pub const MAX_CATCH_UP: u32 = 10;
    /// `retry.max_attempts`: 3 (the first attempt and two retries).
    pub const MAX_ATTEMPTS: u32 = 3;
    /// `retry.backoff`: 30 seconds.
    pub const BACKOFF: Duration = Duration::from_secs(30);
    /// `retry.max_backoff`: 10 minutes.
    pub const MAX_BACKOFF: Duration = Duration::from_secs(10 * 60);
    /// `skew_margin`: 5 seconds.
    pub const SKEW_MARGIN: Duration = Duration::from_secs(5);
    /// `overlap = "allow"` without `max_concurrency`: bounded, because every
    /// live lease is kept in the job's state record.
    pub const MAX_CONCURRENCY: u32 = 10;
    /// `history.succeeded`: the 3 newest successful runs are kept.
    pub const HISTORY_SUCCEEDED: u32 = 3;
    /// `history.failed`: the newest unsuccessful run is kept.
    pub const HISTORY_FAILED: u32 = 1;
    /// `http` jobs without `method`: a scheduled call triggers work, and
    /// work is not a safe, cacheable GET.
    pub const HTTP_METHOD: super::HttpMethod = super::HttpMethod::Post;

    /// A lease shorter than this leaves no room for clock skew and start-up.
    pub const MIN_LEASE: Duration = Duration::from_secs(60);
    /// Upper bound of `max_concurrency` (live leases live in the state record).
    pub const MAX_CONCURRENCY_LIMIT: u32 = 100;
    /// Upper bound of each `history` count (the history lives in the state
    /// record, which must stay small enough for a DynamoDB item).
    pub const HISTORY_LIMIT: u32 = 100;
    /// `catch_up = "all"` with more than this many late slots draws a
    /// warning: after an outage they all run back to back.
    pub const LARGE_CATCH_UP: u32 = 100;
    /// `key_retention`: a keyed run's key is remembered 30 days after the
    /// run ends.
    pub const KEY_RETENTION: Duration = Duration::from_secs(30 * 86_400);
}

/// The shortest `key_retention`: 30 days, the retention promised for every
/// keyed run (docs/design.md, "Keyed runs").
pub const MIN_KEY_RETENTION: std::time::Duration = defaults::KEY_RETENTION;

/// How a job's slots reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// A frequent trigger (every minute) serves every tick-mode job.
    #[default]
    Tick,
    /// One platform trigger per job, carrying its slot time.
    Dedicated,
}

/// Which late slots run after the scheduler was down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Only the newest due slot (Kubernetes CronJob).
    #[default]
    Latest,
    /// Every missed slot, oldest first, up to `max_catch_up`.
    All,
    /// Nothing late; missed slots are recorded as missed.
    None,
}

/// What a new slot does while an earlier run of the job holds a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Overlap {
    /// The new slot waits, or is missed per `catch_up`.
    #[default]
    Forbid,
    /// Up to `max_concurrency` live leases at once.
    Allow {
        /// The most live leases at once (1 to
        /// [`defaults::MAX_CONCURRENCY_LIMIT`]).
        max_concurrency: u32,
    },
    /// The new claim supersedes the old lease (its fence is bumped).
    Replace,
}

/// Whether a slot may run again after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// A slot whose run crashed (its lease expired) or failed transiently
    /// runs again, up to `retry.max_attempts`: no slot is lost to a crash,
    /// but a run may repeat work an earlier attempt did (the effect ledger,
    /// [`JobContext::effect`], keeps such work to once).
    ///
    /// [`JobContext::effect`]: crate::coord::JobContext::effect
    #[default]
    AtLeastOnce,
    /// The claim resolves the slot: a crash loses it.
    AtMostOnce,
}

/// Retries of a slot after transient failures: exponential backoff with
/// full jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (at least 1).
    pub max_attempts: u32,
    /// The cap of the delay before the first retry; it doubles per retry.
    pub backoff: Duration,
    /// The cap no delay exceeds.
    pub max_backoff: Duration,
    /// Allow retries to start after the job's next slot.
    pub past_next_slot: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: defaults::MAX_ATTEMPTS,
            backoff: defaults::BACKOFF,
            max_backoff: defaults::MAX_BACKOFF,
            past_next_slot: false,
        }
    }
}

impl RetryPolicy {
    /// The upper bound of the (jittered) delay before retry `n` (1 = the
    /// second attempt): `min(backoff · 2^(n−1), max_backoff)`.
    pub fn delay_cap(&self, retry: u32) -> Duration {
        let doublings = retry.saturating_sub(1).min(63);
        let factor = 1u64 << doublings;
        let secs = self.backoff.as_secs().saturating_mul(factor);
        Duration::from_secs(secs).min(self.max_backoff)
    }

    /// The longest total backoff over all retries: how long after the first
    /// failure the last attempt may start, run times not counted.
    pub fn max_total_backoff(&self) -> Duration {
        let retries = self.max_attempts.saturating_sub(1);
        let mut total = Duration::ZERO;
        for retry in 1..=retries {
            let delay = self.delay_cap(retry);
            // From the cap, or the 64th retry (the doubling saturates), on,
            // every delay is the same: add the rest at once, because one
            // step per retry spins for seconds at max_attempts = 2^32 − 1.
            if delay >= self.max_backoff || retry >= 64 {
                let rest = delay.saturating_mul(retries - retry + 1);
                return total.saturating_add(rest).min(MAX_DURATION);
            }
            total = total.saturating_add(delay);
            if total >= MAX_DURATION {
                return MAX_DURATION;
            }
        }
        total
    }
}

/// How many finished runs a job's state keeps (like Kubernetes'
/// `successfulJobsHistoryLimit` / `failedJobsHistoryLimit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HistoryLimits {
    /// How many of the newest successful runs are kept (at most
    /// [`defaults::HISTORY_LIMIT`]).
    pub succeeded: u32,
    /// How many of the newest other runs (failed, lease expired,
    /// superseded) are kept (at most [`defaults::HISTORY_LIMIT`]).
    pub failed: u32,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            succeeded: defaults::HISTORY_SUCCEEDED,
            failed: defaults::HISTORY_FAILED,
        }
    }
}

/// The HTTP methods an `http` job may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// `POST`, the default ([`defaults::HTTP_METHOD`]).
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
    /// `OPTIONS`.
    Options,
}

impl HttpMethod {
    /// Every method, in declaration order.
    pub const ALL: [HttpMethod; 7] = [
        HttpMethod::Get,
        HttpMethod::Head,
        HttpMethod::Post,
        HttpMethod::Put,
        HttpMethod::Patch,
        HttpMethod::Delete,
        HttpMethod::Options,
    ];

    /// The method as sent on the wire, uppercase: `"POST"`.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Head => "HEAD",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Options => "OPTIONS",
        }
    }

    /// Case-insensitive: `post` and `POST` are the same method here.
    pub fn parse(text: &str) -> Option<HttpMethod> {
        HttpMethod::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(text))
    }
}

/// What runs for a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A Rust function registered under the job's name.
    Function,
    /// A process: exit 0 succeeds, 75 is a transient failure, anything else
    /// permanent; a timeout is transient.
    Command {
        /// The program and its arguments, run without a shell.
        argv: Vec<String>,
        /// The process is killed after this long (a transient failure); the
        /// manifest's `timeout`, or the lease.
        timeout: Duration,
        /// Added to the inherited environment (after cronslot's own
        /// `CRONSLOT_*` variables, which cannot be overridden).
        env: BTreeMap<String, String>,
    },
    /// A request: 2xx succeeds, 408/429/5xx are transient, other 4xx
    /// permanent.
    Http {
        /// The URL requested.
        url: String,
        /// The method ([`defaults::HTTP_METHOD`] unless set).
        method: HttpMethod,
        /// Headers to send with the request, by name.
        headers: BTreeMap<String, String>,
        /// The request is abandoned after this long (a transient failure);
        /// the manifest's `timeout`, or the lease.
        timeout: Duration,
    },
}

impl Action {
    /// The timeout of a command or http job; `None` for a function job,
    /// which bounds its own run time (within its lease).
    pub fn timeout(&self) -> Option<Duration> {
        match self {
            Action::Function => None,
            Action::Command { timeout, .. } | Action::Http { timeout, .. } => Some(*timeout),
        }
    }
}

/// `[defaults]` resolved against the built-in defaults: what a job that sets
/// nothing gets.
///
/// Each field has the meaning of the [`JobSpec`] field of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defaults {
    /// The IANA zone name (`timezone`).
    pub timezone: String,
    /// `trigger`.
    pub trigger: Trigger,
    /// `lease`.
    pub lease: Duration,
    /// `starting_deadline`.
    pub starting_deadline: Duration,
    /// `catch_up`.
    pub catch_up: CatchUp,
    /// `max_catch_up`.
    pub max_catch_up: u32,
    /// `overlap` with `max_concurrency`.
    pub overlap: Overlap,
    /// The `retry` table.
    pub retry: RetryPolicy,
    /// `delivery`.
    pub delivery: Delivery,
    /// `dst_gap` and `dst_overlap`.
    pub dst: DstPolicy,
    /// `skew_margin`.
    pub skew_margin: Duration,
    /// `jitter`: zero for none.
    pub jitter: Duration,
    /// `paused`.
    pub paused: bool,
    /// `stale_after`; `None`: derived from each job's schedule.
    pub stale_after: Option<Duration>,
    /// The `history` table.
    pub history: HistoryLimits,
    /// Timeout of command and http jobs; `None`: the lease.
    pub timeout: Option<Duration>,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            timezone: defaults::TIMEZONE.into(),
            trigger: Trigger::default(),
            lease: defaults::LEASE,
            starting_deadline: defaults::STARTING_DEADLINE,
            catch_up: CatchUp::default(),
            max_catch_up: defaults::MAX_CATCH_UP,
            overlap: Overlap::default(),
            retry: RetryPolicy::default(),
            delivery: Delivery::default(),
            dst: DstPolicy::default(),
            skew_margin: defaults::SKEW_MARGIN,
            jitter: Duration::ZERO,
            paused: false,
            stale_after: None,
            history: HistoryLimits::default(),
            timeout: None,
        }
    }
}

/// One job, fully resolved: every policy has its value.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// The job's name: its key in slot ids, store records and events.
    pub name: JobName,
    /// The cron expression in the job's zone with its DST policy.
    pub schedule: Schedule,
    /// The expression as written in the manifest.
    pub schedule_text: String,
    /// The zone's IANA name.
    pub timezone: String,
    /// How the job's slots reach it: the shared tick or a trigger of its
    /// own.
    pub trigger: Trigger,
    /// The longest a run may hold its slot; must cover the platform timeout.
    pub lease: Duration,
    /// A slot older than this when planned is missed.
    pub starting_deadline: Duration,
    /// Which late slots run after an outage.
    pub catch_up: CatchUp,
    /// Under `catch_up = "all"`, the most late slots that run.
    pub max_catch_up: u32,
    /// What a slot does while an earlier run still holds a lease.
    pub overlap: Overlap,
    /// Retries after transient failures.
    pub retry: RetryPolicy,
    /// Whether a slot may run again after a crash.
    pub delivery: Delivery,
    /// Margin added to lease expiry comparisons to absorb clock skew.
    pub skew_margin: Duration,
    /// Each slot starts at a point of this window after its nominal
    /// instant, the same on every node ([`JobSpec::start_of`],
    /// [`crate::jitter`]); zero: at its instant.
    pub jitter: Duration,
    /// The job starts paused: a record created for it is created paused
    /// (its slots are skipped). Once the record exists, pausing and
    /// resuming are operations on it ([`Coordinator::pause`]).
    ///
    /// [`Coordinator::pause`]: crate::coord::Coordinator::pause
    pub paused: bool,
    /// Slots before this instant do not run (inclusive bound).
    pub start_at: Option<Timestamp>,
    /// Slots at or after this instant do not run (exclusive bound).
    pub end_at: Option<Timestamp>,
    /// How long without a success before health checks and alarms call the
    /// job stale; `None`: see [`JobSpec::stale_after_at`].
    pub stale_after: Option<Duration>,
    /// How many finished runs the job's record keeps.
    pub history: HistoryLimits,
    /// What runs for a slot.
    pub action: Action,
    /// The schedule this spec is of, when the job is `dynamic` and its
    /// schedules are data ([`crate::schedules`]); `None` for a job whose
    /// schedule the manifest writes.
    pub key: Option<ScheduleKey>,
    /// With `key`: the version of the schedule this spec was read at
    /// ([`ScheduleData::job_spec`](crate::coord::ScheduleData)). A claim
    /// with a spec of another version than the record's starts nothing
    /// ([`Idle::ScheduleChanged`](crate::coord::decide::Idle)): the spec is
    /// read again. `None`: not checked (a spec built from a template alone).
    #[cfg(feature = "schedules")]
    pub schedule_version: Option<u64>,
    /// With `key`: the payload (JSON text) of the schedule's version, which
    /// a run of a slot of that version receives.
    #[cfg(feature = "schedules")]
    pub payload: Option<std::sync::Arc<str>>,
    /// With `key`: the payloads of earlier versions that runs still belong
    /// to (a slot due before a change runs with the payload of its time).
    #[cfg(feature = "schedules")]
    pub earlier_payloads: Vec<(u64, Option<std::sync::Arc<str>>)>,
}

impl JobSpec {
    /// The name of the job's record in the store, and the job part of its
    /// slot ids and effect keys: the job's name, or `job/key` for one
    /// schedule of a dynamic job ([`crate::schedules::record_name`]).
    pub fn record_name(&self) -> Cow<'_, str> {
        match &self.key {
            None => Cow::Borrowed(self.name.as_str()),
            Some(key) => Cow::Owned(crate::schedules::record_name(&self.name, key)),
        }
    }

    /// The payload a run of a lease of `version` receives
    /// ([`Lease::version`](crate::coord::Lease): `None` is the version in
    /// force).
    #[cfg(feature = "schedules")]
    pub fn payload_for(&self, version: Option<u64>) -> Option<&str> {
        match version {
            None => self.payload.as_deref(),
            Some(v) if Some(v) == self.schedule_version => self.payload.as_deref(),
            Some(v) => self
                .earlier_payloads
                .iter()
                .find(|(earlier, _)| *earlier == v)
                .and_then(|(_, p)| p.as_deref()),
        }
    }

    /// The DST policy of the job's schedule (`dst_gap`, `dst_overlap`).
    pub fn dst_policy(&self) -> DstPolicy {
        self.schedule.policy()
    }

    /// True when `t` lies in the job's active window `[start_at, end_at)`.
    pub fn in_window(&self, t: Timestamp) -> bool {
        self.start_at.is_none_or(|s| t >= s) && self.end_at.is_none_or(|e| t < e)
    }

    /// [`spec_hash`] of this job.
    pub fn spec_hash(&self) -> String {
        spec_hash(self)
    }

    /// The staleness bound: `stale_after` when set, otherwise
    /// [`JobSpec::default_stale_after`].
    pub fn stale_after_at(&self, now: Timestamp) -> Option<Duration> {
        self.stale_after.or_else(|| self.default_stale_after(now))
    }

    /// A staleness bound derived from the schedule: the longest gap between
    /// consecutive slots in the year after `now` (at least the first two
    /// slots, however far apart), plus the lease and the starting deadline —
    /// the longest a healthy job can go without a success. `None` when fewer
    /// than two slots remain (the job has ended, or never fires).
    ///
    /// Gaps of an hour or more are measured exactly; shorter ones over the
    /// first day of slots, which is where their pattern repeats.
    pub fn default_stale_after(&self, now: Timestamp) -> Option<Duration> {
        let gap = gaps::longest_gap(&self.schedule, now, self.start_at, self.end_at)?;
        Some(
            gap.saturating_add(self.lease)
                .saturating_add(self.starting_deadline),
        )
    }
}

/// A validated manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// `[defaults]`, resolved against the built-in defaults.
    pub defaults: Defaults,
    /// In file order: the jobs whose schedule the manifest writes.
    pub jobs: Vec<JobSpec>,
    /// In file order: the dynamic jobs (`dynamic = true`), whose schedules
    /// are data.
    pub templates: Vec<JobTemplate>,
    /// Things that are valid but probably not what was meant.
    pub warnings: Vec<Diagnostic>,
}

impl Manifest {
    /// The job named `name`, if there is one.
    pub fn job(&self, name: &str) -> Option<&JobSpec> {
        self.jobs.iter().find(|j| j.name.as_str() == name)
    }

    /// The dynamic job named `name`, if there is one.
    pub fn template(&self, name: &str) -> Option<&JobTemplate> {
        self.templates.iter().find(|t| t.name.as_str() == name)
    }
}

/// Parses and validates a manifest. `file` is only used in messages.
///
/// Needs the `toml` feature (on by default); without it, a manifest is
/// loaded from its precompiled form ([`load_precompiled`]).
///
/// # Errors
///
/// [`ManifestErrors`] with every error found (not just the first), each
/// with file, line, column and the source line, and the warnings found
/// along the way.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use cronslot_core::manifest::{Action, CatchUp, Trigger, parse_manifest};
///
/// let text = r#"
/// [defaults]
/// timezone = "America/New_York"
/// lease = "5m"
///
/// [[job]]
/// name = "daily-report"
/// schedule = "0 9 * * MON-FRI"
/// trigger = "dedicated"
///
/// [[job]]
/// name = "cleanup"
/// schedule = "*/15 * * * *"
/// timezone = "UTC"
/// command = ["./cleanup.sh", "--fast"]
/// "#;
/// let manifest = parse_manifest(text, "cronslot.toml")?;
/// assert!(manifest.warnings.is_empty());
///
/// let report = manifest.job("daily-report").unwrap();
/// assert_eq!(report.schedule_text, "0 9 * * MON-FRI");
/// assert_eq!(report.timezone, "America/New_York"); // from [defaults]
/// assert_eq!(report.lease, Duration::from_secs(5 * 60)); // from [defaults]
/// assert_eq!(report.trigger, Trigger::Dedicated);
/// assert_eq!(report.catch_up, CatchUp::Latest); // built in
/// assert_eq!(report.action, Action::Function); // no command, no http
///
/// // 09:00 in New York on Friday 2026-03-06 is 14:00 UTC.
/// let next = report.schedule.next_after("2026-03-06T00:00:00Z".parse()?);
/// assert_eq!(next, Some("2026-03-06T14:00:00Z".parse()?));
///
/// let cleanup = &manifest.jobs[1];
/// assert_eq!(cleanup.timezone, "UTC");
/// assert_eq!(cleanup.action.timeout(), Some(Duration::from_secs(5 * 60))); // the lease
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Errors point at the line and column, as rustc does:
///
/// ```
/// use cronslot_core::manifest::parse_manifest;
///
/// let text = "[[job]]\nname = \"nightly\"\nschedule = \"0 9 * * 8\"\n";
/// let errors = parse_manifest(text, "cronslot.toml").unwrap_err();
/// assert_eq!(errors.errors.len(), 1);
/// let error = &errors.errors[0];
/// assert_eq!((error.line, error.column), (3, 21));
/// assert_eq!(
///     errors.to_string(),
///     "cronslot.toml:3:21: invalid schedule \"0 9 * * 8\": \"8\" in day-of-week \
///      (column 9) is out of range 0-7; weekdays are 0-7 (0 and 7 are Sunday) or SUN-SAT\n  \
///      |\n\
///      3 | schedule = \"0 9 * * 8\"\n  \
///      |                     ^",
/// );
/// ```
#[cfg(feature = "toml")]
pub fn parse_manifest(text: &str, file: &str) -> Result<Manifest, ManifestErrors> {
    validate::parse(text, file)
}

impl Trigger {
    /// The value as the manifest writes it (`"dedicated"`); also `Display`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Tick => "tick",
            Trigger::Dedicated => "dedicated",
        }
    }
}

impl CatchUp {
    /// The value as the manifest writes it (`"latest"`); also `Display`.
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::Latest => "latest",
            CatchUp::All => "all",
            CatchUp::None => "none",
        }
    }
}

impl Overlap {
    /// The mode as the manifest writes it (`"forbid"`, `"allow"`,
    /// `"replace"`), without `max_concurrency` (which `Display` adds).
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Forbid => "forbid",
            Overlap::Allow { .. } => "allow",
            Overlap::Replace => "replace",
        }
    }
}

impl Delivery {
    /// The value as the manifest writes it (`"at_least_once"`); also `Display`.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::AtLeastOnce => "at_least_once",
            Delivery::AtMostOnce => "at_most_once",
        }
    }
}

/// The manifest spelling of each policy value.
macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(Trigger, CatchUp, Delivery, HttpMethod);

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Overlap::Allow { max_concurrency } => {
                write!(f, "allow (max_concurrency {max_concurrency})")
            }
            other => f.write_str(other.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form equals the sum of every retry's delay, where the sum
    /// can be taken.
    #[test]
    fn max_total_backoff_is_the_sum_of_every_delay() {
        let secs = Duration::from_secs;
        for backoff in [0, 1, 7, 30, 3600] {
            for max_backoff in [0, 1, 60, 300, 86_400] {
                for max_attempts in (1..=140).chain([1_000, 5_000]) {
                    let p = RetryPolicy {
                        max_attempts,
                        backoff: secs(backoff),
                        max_backoff: secs(max_backoff),
                        past_next_slot: false,
                    };
                    let sum = (1..max_attempts)
                        .map(|r| p.delay_cap(r))
                        .fold(Duration::ZERO, Duration::saturating_add)
                        .min(MAX_DURATION);
                    assert_eq!(p.max_total_backoff(), sum, "{p:?}");
                }
            }
        }
        let huge = RetryPolicy {
            max_attempts: u32::MAX,
            backoff: secs(1),
            max_backoff: secs(1),
            past_next_slot: false,
        };
        // 2^32 − 2 seconds is more than the 100 years a duration may be.
        assert_eq!(huge.max_total_backoff(), MAX_DURATION);
        let long = RetryPolicy {
            max_attempts: 1_000_001,
            ..huge
        };
        assert_eq!(long.max_total_backoff(), secs(1_000_000));
    }
}
