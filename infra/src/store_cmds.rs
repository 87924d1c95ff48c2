//! The store commands: `status`, `dlq list|redrive`, `pause`, `resume`,
//! `backfill` and `trigger`.
//!
//! Every command reads the manifest (the coordinator needs each job's spec),
//! opens the store named by `--store`, reads the clock once (the CLI is the
//! only place that does) and asks the core's [`Coordinator`] for the rest.
//!
//! Stores: `--store` is parsed into a [`StoreTarget`] and opened into a
//! [`Backend`]; the commands themselves are generic over
//! [`Coordinator`] + [`Records`], so a new kind of store (DynamoDB, the
//! Worker's admin URL) is one more variant of each enum and one more arm in
//! [`with_backend!`], nothing else. Today: `sqlite:PATH`,
//! `dynamodb://TABLE?region=R[&endpoint=URL]` (credentials from the usual
//! AWS environment) and `https://HOST/PREFIX --token-env VAR`: a Cloudflare
//! Worker's admin routes (see [`admin`]), where the Worker's clock, not
//! this machine's, decides what is due, and `trigger` asks the Worker to
//! run the job.
//!
//! Every command requires the store to exist already: `cronslot run` creates
//! it. A mistyped `--store` path therefore fails with a message instead of
//! creating an empty file that no runner reads (where a `pause` would then
//! "succeed" while the real job keeps running).
//!
//! Exit codes: 0 done (including "nothing to do": pausing a paused job, an
//! empty dead-letter list); 1 the operation could not be done as asked (a
//! trigger found nothing to run or its run failed, the store failed or
//! refused a write); 2 bad input (store URL, missing store, manifest, job
//! name, instant, backfill range, a job kind `trigger` cannot run).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use cronslot_aws::dynamo::{DynamoStore, parse_dynamodb_location};
use cronslot_core::Zone;
use cronslot_core::coord::Trigger as ClaimTrigger;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, DeadLetter, FailOutcome, Idle, JobState, Lease,
    MissReason, Origin, SkipReason, SlotId, StateStore, format_instant,
};
use cronslot_core::health::{self, Health};
use cronslot_core::manifest::{Action, JobSpec, Manifest, format_duration};
use cronslot_local::{SqliteStore, parse_sqlite_location};
use jiff::{SignedDuration, Timestamp};
use serde::{Serialize, Serializer};

use crate::Failure;
use crate::cli::{BackfillArgs, DlqAction, DlqArgs, Format, JobArgs, StatusArgs, StoreArgs};
use crate::schedule_cmds::{local, utc};
use crate::validate::load_manifest;

mod admin;

/// Exit code of an operation that could not be done as asked.
const PROBLEM: u8 = 1;

/// Dead letters `status` lists per job (newest first); `dlq list` shows all.
const STATUS_DEAD_LETTERS: usize = 3;

/// Longest error text `dlq list` prints in a table cell (JSON has it whole).
const ERROR_CELL_CHARS: usize = 120;

/// Bytes of a command's stderr kept as the error of a failed run.
const STDERR_TAIL_BYTES: usize = 512;

/// How long to wait for a finished command's stderr to reach its end (a
/// background process it started may keep the pipe open).
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// How often a running command is polled for its exit.
const POLL: Duration = Duration::from_millis(20);

fn problem(message: impl Into<String>) -> Failure {
    Failure {
        code: PROBLEM,
        message: message.into(),
    }
}

// ------------------------------------------------------------------ stores

/// Where job state lives, parsed from `--store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreTarget {
    /// `sqlite:PATH`: one SQLite file on this machine.
    Sqlite(PathBuf),
    /// `dynamodb://TABLE?region=R[&endpoint=URL]`: the AWS adapter's table.
    Dynamo(String),
    /// `https://HOST/PREFIX`: a Cloudflare Worker's admin routes, with the
    /// token from the environment variable named by `--token-env`.
    Admin {
        base_url: String,
        token_env: String,
        token: admin::Token,
    },
}

const STORE_SYNTAX: &str = "expected sqlite:PATH (for example sqlite:cronslot.db), \
                            dynamodb://TABLE?region=REGION[&endpoint=URL] or \
                            https://HOST/PREFIX --token-env VAR (a Cloudflare Worker's admin URL)";

impl StoreTarget {
    /// Parses `--store` (with `--token-env`, which only an https:// store
    /// takes). Reads the token from the environment; touches nothing else.
    pub fn parse(url: &str, token_env: Option<&str>) -> Result<StoreTarget, Failure> {
        let target = StoreTarget::parse_url(url, token_env)?;
        if let (Some(var), StoreTarget::Sqlite(_) | StoreTarget::Dynamo(_)) = (token_env, &target) {
            return Err(Failure::bad_input(format!(
                "error: --token-env {var}: only an https:// store (a Worker's admin URL) takes a token; \
                 store {} does not",
                target.label()
            )));
        }
        Ok(target)
    }

    fn parse_url(url: &str, token_env: Option<&str>) -> Result<StoreTarget, Failure> {
        let trimmed = url.trim();
        let Some((scheme, _)) = trimmed.split_once(':') else {
            let hint = if trimmed.is_empty() {
                String::new()
            } else {
                format!("; did you mean sqlite:{trimmed}?")
            };
            return Err(Failure::bad_input(format!(
                "error: --store: unsupported store URL {url:?} (no scheme); {STORE_SYNTAX}{hint}"
            )));
        };
        let scheme = scheme.to_ascii_lowercase();
        match scheme.as_str() {
            "sqlite" => parse_sqlite_location(trimmed)
                .map(StoreTarget::Sqlite)
                .map_err(|e| Failure::bad_input(format!("error: --store: {e}"))),
            "dynamodb" => parse_dynamodb_location(trimmed)
                .map(|_| StoreTarget::Dynamo(trimmed.to_string()))
                .map_err(|e| Failure::bad_input(format!("error: --store: {}", e.message))),
            "http" | "https" => admin::parse_target(trimmed, token_env),
            _ => Err(Failure::bad_input(format!(
                "error: --store: unsupported store URL {url:?} (scheme {scheme:?}); {STORE_SYNTAX}"
            ))),
        }
    }

    /// The store as messages name it.
    pub fn label(&self) -> String {
        match self {
            StoreTarget::Sqlite(path) => format!("sqlite:{}", path.display()),
            StoreTarget::Dynamo(url) => url.clone(),
            StoreTarget::Admin { base_url, .. } => base_url.clone(),
        }
    }

    /// Opens an existing store. A missing one is an error, not a new empty
    /// file (see the module documentation).
    fn open(&self) -> Result<Backend, Failure> {
        match self {
            StoreTarget::Sqlite(path) => {
                match std::fs::metadata(path) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        let cwd = std::env::current_dir()
                            .map(|d| format!(" (relative paths start at {})", d.display()))
                            .unwrap_or_default();
                        return Err(Failure::bad_input(format!(
                            "error: store {} does not exist yet: `cronslot run MANIFEST --store {}` creates it; \
                             or check the path{cwd}",
                            self.label(),
                            self.label()
                        )));
                    }
                    Err(e) => {
                        return Err(Failure::bad_input(format!(
                            "error: store {}: cannot read {}: {e}",
                            self.label(),
                            path.display()
                        )));
                    }
                }
                let store = SqliteStore::open(path).map_err(|e| {
                    Failure::bad_input(format!("error: store {}: {e}", self.label()))
                })?;
                Ok(Backend::Sqlite(CasCoordinator::new(store, jitter_seed())))
            }
            StoreTarget::Dynamo(url) => {
                // The table must exist (the deployed template creates it);
                // a missing one fails on first use with the store's hint.
                let store = wait(DynamoStore::from_url(url)).map_err(|e| {
                    Failure::bad_input(format!("error: store {}: {e}", self.label()))
                })?;
                Ok(Backend::Dynamo(CasCoordinator::new(store, jitter_seed())))
            }
            StoreTarget::Admin {
                base_url,
                token_env,
                token,
            } => admin::AdminStore::new(base_url, token_env, token)
                .map(Backend::Admin)
                .map_err(|e| problem(format!("error: store {base_url}: {e}"))),
        }
    }
}

/// An opened store and the coordinator over it.
enum Backend {
    Sqlite(CasCoordinator<SqliteStore>),
    Dynamo(CasCoordinator<DynamoStore>),
    Admin(admin::AdminStore),
}

/// Runs `$body` with `$c` bound to the backend's coordinator, whatever its
/// type: the one place that lists every kind of store.
macro_rules! with_backend {
    ($backend:expr, $c:ident => $body:expr) => {
        match $backend {
            Backend::Sqlite($c) => $body,
            Backend::Dynamo($c) => $body,
            Backend::Admin($c) => $body,
        }
    };
}

/// What the commands need from a store besides the [`Coordinator`]: the
/// records as stored (not brought up to now).
trait Records {
    /// The job's record as stored; `None` when it has none yet.
    async fn record(&self, job: &str) -> Result<Option<JobState>, CoordError>;
    /// Every job with a record, sorted.
    async fn recorded_jobs(&self) -> Result<Vec<String>, CoordError>;
}

impl<S: StateStore> Records for CasCoordinator<S> {
    async fn record(&self, job: &str) -> Result<Option<JobState>, CoordError> {
        Ok(self.store().get(job).await?.map(|v| v.value))
    }

    async fn recorded_jobs(&self) -> Result<Vec<String>, CoordError> {
        Ok(self.store().jobs().await?)
    }
}

thread_local! {
    /// One current-thread runtime for the command: DynamoDB's client does
    /// its I/O on it (the SQLite store's futures finish on their first poll).
    static RUNTIME: Option<tokio::runtime::Runtime> = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok();
}

/// Whether the command's runtime could be started (the HTTP client needs
/// it; the fallback executor of [`wait`] cannot drive network I/O).
fn runtime_available() -> bool {
    RUNTIME.with(Option::is_some)
}

/// Drives a store operation to its end on the command's runtime.
fn wait<F: Future>(future: F) -> F::Output {
    RUNTIME.with(|rt| match rt {
        Some(rt) => rt.block_on(future),
        // Without a runtime (the OS refused its resources) only futures that
        // need none can finish: the SQLite store's.
        None => cronslot_core::coord::exec::block_on(future),
    })
}

fn jitter_seed() -> u64 {
    let nanos = Timestamp::now().as_nanosecond();
    (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
}

/// A store operation that failed: a refusal of what was asked is bad input
/// (2), the store itself failing is a problem (1).
fn coord_failure(store: &str, doing: &str, job: &str, e: &CoordError) -> Failure {
    let message = format!("error: {doing} job {job:?} in store {store}: {e}");
    match e {
        CoordError::Backfill(_) | CoordError::Trigger(_) => Failure::bad_input(message),
        CoordError::Store(_) | CoordError::Refused(_) | CoordError::Contention { .. } => {
            problem(message)
        }
    }
}

// ---------------------------------------------------------------- sessions

/// What every command starts from: the manifest, the store and `now`.
struct Session {
    manifest: Manifest,
    manifest_path: PathBuf,
    store: String,
    backend: Backend,
    now: Timestamp,
}

impl Session {
    /// Parses `--store`, reads the manifest, checks `job` (when given), and
    /// only then opens the store: bad input never touches a file.
    fn open(args: &StoreArgs, job: Option<&str>) -> Result<Session, Failure> {
        let target = StoreTarget::parse(&args.store, args.token_env.as_deref())?;
        let manifest = load_manifest(&args.manifest)?;
        if let Some(name) = job {
            find_job(&manifest, &args.manifest, name)?;
        }
        let backend = target.open()?;
        Ok(Session {
            manifest,
            manifest_path: args.manifest.clone(),
            store: target.label(),
            backend,
            now: Timestamp::now(),
        })
    }

    fn job(&self, name: &str) -> Result<&JobSpec, Failure> {
        find_job(&self.manifest, &self.manifest_path, name)
    }

    /// One job, or every job of the manifest in file order.
    fn jobs(&self, only: Option<&str>) -> Result<Vec<&JobSpec>, Failure> {
        match only {
            Some(name) => Ok(vec![self.job(name)?]),
            None => Ok(self.manifest.jobs.iter().collect()),
        }
    }
}

fn find_job<'m>(manifest: &'m Manifest, path: &Path, name: &str) -> Result<&'m JobSpec, Failure> {
    manifest.job(name).ok_or_else(|| {
        let known: Vec<&str> = manifest.jobs.iter().map(|j| j.name.as_str()).collect();
        let known = if known.is_empty() {
            "it defines no jobs".to_string()
        } else {
            format!("known jobs: {}", known.join(", "))
        };
        Failure::bad_input(format!(
            "error: no job {name:?} in manifest {}; {known}",
            path.display()
        ))
    })
}

fn slot_id(spec: &JobSpec, slot: Timestamp) -> String {
    SlotId::new(&spec.name, slot).to_string()
}

/// "2026-03-08T07:00:00Z  2026-03-08 02:00 EST (-05:00)", or just UTC when
/// the job's zone is UTC.
fn instant_text(t: Timestamp, zone: &Zone) -> String {
    if zone.is_utc() {
        utc(t)
    } else {
        format!("{}  {}", utc(t), local(t, zone))
    }
}

/// A duration to the precision a person reads: seconds under an hour,
/// minutes under a day, hours beyond.
fn approx(d: SignedDuration) -> String {
    let secs = d.unsigned_abs().as_secs();
    let shown = if secs >= 86_400 {
        secs - secs % 3600
    } else if secs >= 3600 {
        secs - secs % 60
    } else {
        secs
    };
    format_duration(Duration::from_secs(shown))
}

/// "3m20s ago", or "in 5m" for an instant after `now`.
fn relative(now: Timestamp, t: Timestamp) -> String {
    let d = now.duration_since(t);
    if d.is_negative() {
        format!("in {}", approx(d))
    } else {
        format!("{} ago", approx(d))
    }
}

fn origin_str(origin: Origin) -> &'static str {
    match origin {
        Origin::Schedule => "schedule",
        Origin::Backfill => "backfill",
        Origin::Manual => "manual",
        Origin::Redrive => "redrive",
    }
}

fn action_str(action: &Action) -> &'static str {
    match action {
        Action::Function => "function",
        Action::Command { .. } => "command",
        Action::Http { .. } => "http",
    }
}

/// One line, at most `max` characters: control characters become spaces.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= max {
        flat.to_string()
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Parses an instant flag: RFC 3339, or a slot id `job@RFC3339` of `job`.
fn parse_slot_flag(flag: &str, text: &str, spec: &JobSpec) -> Result<Timestamp, Failure> {
    if text.contains('@') {
        let id: SlotId = text
            .parse()
            .map_err(|e| Failure::bad_input(format!("error: {flag}: {e}")))?;
        if id.job() != spec.name.as_str() {
            return Err(Failure::bad_input(format!(
                "error: {flag} {text:?} is a slot of job {:?}, not of {:?}",
                id.job(),
                spec.name.as_str()
            )));
        }
        return Ok(id.at());
    }
    parse_rfc3339(flag, text)
}

fn parse_rfc3339(flag: &str, text: &str) -> Result<Timestamp, Failure> {
    text.trim().parse::<Timestamp>().map_err(|e| {
        Failure::bad_input(format!(
            "error: {flag} {text:?} is not an RFC 3339 instant (write 2026-03-08T07:00:00Z): {e}"
        ))
    })
}

// ------------------------------------------------------------ JSON shapes

/// An instant in JSON: RFC 3339, UTC, seconds precision, `Z` suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ts(Timestamp);

impl Serialize for Ts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_instant(self.0))
    }
}

/// `cronslot status --format json` prints one object:
///
/// ```text
/// {
///   "now": "2026-03-08T07:00:42Z",        // the instant the status is computed at
///   "store": "sqlite:cronslot.db",
///   "jobs": [ {                            // manifest order (or the --job one)
///     "job": "heartbeat",
///     "schedule": "* * * * *", "timezone": "UTC",
///     "action": "command",                 // command | http | function
///     "recorded": true,                    // false: no record in the store yet ("no runs yet")
///     "paused": false,
///     "health": "ok",                      // ok | stale | never_succeeded | paused | no_bound
///     "stale": false,
///     "stale_after_seconds": 1020,         // the bound (stale_after, or derived); null: none
///     "stale_at": "2026-03-08T07:17:01Z",  // when it is (was) stale without a success; null: never
///     "last_success": null | { "slot", "slot_id", "attempt", "fence", "owner",
///                              "started_at", "finished_at", "age_seconds" },
///     "next_slot": "2026-03-08T07:01:00Z", // next slot after now (null: none left)
///     "due": null | { "oldest": "…Z", "count": 1 },  // due slots no runner has claimed yet
///     "fence": 12, "cursor": "…Z",
///     "created_at": "…Z" | null,           // null when not recorded
///     "leases":  [ { "owner", "slot", "slot_id", "fence", "attempt", "origin",
///                    "claimed_at", "expires_at" } ],
///     "pending": [ { "slot", "slot_id", "attempt", "not_before", "origin", "last_error" } ],
///     "counts": { "runs", "succeeded", "failed", "dead", "dead_dropped", "redriven", "backfilled",
///                 "missed":  { "catch_up", "downtime", "dst", "overlap" },
///                 "skipped": { "outside_window", "paused" } },
///     "dead_letters": { "count": 1, "dropped": 0,
///                       "newest": [ { "slot", "slot_id", "attempts", "fence", "died_at", "last_error" } ] },
///     "schedule_change": null | { "at", "from_hash", "to_hash" }
///   } ],
///   "not_in_manifest": [ "old-job" ]       // jobs with a record the manifest no longer has
/// }
/// ```
///
/// Field names are stable; instants are RFC 3339 UTC strings; `origin` is
/// `schedule | backfill | manual | redrive`; every reason key is always
/// present (0 when none).
#[derive(Serialize)]
struct StatusReport {
    now: Ts,
    store: String,
    jobs: Vec<JobStatus>,
    not_in_manifest: Vec<String>,
}

#[derive(Serialize)]
struct JobStatus {
    job: String,
    schedule: String,
    timezone: String,
    action: &'static str,
    recorded: bool,
    paused: bool,
    health: Health,
    stale: bool,
    stale_after_seconds: Option<u64>,
    stale_at: Option<Ts>,
    last_success: Option<SuccessView>,
    next_slot: Option<Ts>,
    due: Option<DueView>,
    fence: u64,
    cursor: Ts,
    created_at: Option<Ts>,
    leases: Vec<LeaseView>,
    pending: Vec<PendingView>,
    counts: CountsView,
    dead_letters: DeadSummary,
    schedule_change: Option<ChangeView>,
}

#[derive(Serialize)]
struct SuccessView {
    slot: Ts,
    slot_id: String,
    attempt: u32,
    fence: u64,
    owner: String,
    started_at: Ts,
    finished_at: Ts,
    age_seconds: i64,
}

#[derive(Serialize)]
struct DueView {
    oldest: Ts,
    count: u64,
}

#[derive(Serialize)]
struct LeaseView {
    owner: String,
    slot: Ts,
    slot_id: String,
    fence: u64,
    attempt: u32,
    origin: &'static str,
    claimed_at: Ts,
    expires_at: Ts,
}

#[derive(Serialize)]
struct PendingView {
    slot: Ts,
    slot_id: String,
    attempt: u32,
    not_before: Ts,
    origin: &'static str,
    last_error: Option<String>,
}

#[derive(Serialize)]
struct CountsView {
    runs: u64,
    succeeded: u64,
    failed: u64,
    dead: u64,
    dead_dropped: u64,
    redriven: u64,
    backfilled: u64,
    missed: BTreeMap<&'static str, u64>,
    skipped: BTreeMap<&'static str, u64>,
}

#[derive(Serialize)]
struct DeadSummary {
    /// Dead letters held now (redrive removes them).
    count: usize,
    /// Dropped from the capped list (still counted in `counts.dead`).
    dropped: u64,
    newest: Vec<DeadView>,
}

#[derive(Serialize)]
struct DeadView {
    slot: Ts,
    slot_id: String,
    attempts: u32,
    fence: u64,
    died_at: Ts,
    last_error: String,
}

#[derive(Serialize)]
struct ChangeView {
    at: Ts,
    from_hash: String,
    to_hash: String,
}

fn lease_view(spec: &JobSpec, l: &Lease) -> LeaseView {
    LeaseView {
        owner: l.owner.clone(),
        slot: Ts(l.slot),
        slot_id: slot_id(spec, l.slot),
        fence: l.fence,
        attempt: l.attempt,
        origin: origin_str(l.origin),
        claimed_at: Ts(l.claimed_at),
        expires_at: Ts(l.expires_at),
    }
}

fn dead_view(spec: &JobSpec, d: &DeadLetter) -> DeadView {
    DeadView {
        slot: Ts(d.slot),
        slot_id: slot_id(spec, d.slot),
        attempts: d.attempts,
        fence: d.fence,
        died_at: Ts(d.died_at),
        last_error: d.last_error.clone(),
    }
}

/// The job's next slot strictly after `after` inside its active window.
fn next_slot(spec: &JobSpec, after: Timestamp) -> Option<Timestamp> {
    health::next_slot(spec, after)
}

fn job_status(spec: &JobSpec, state: &JobState, recorded: bool, now: Timestamp) -> JobStatus {
    // The same rule as the Worker's health route and stale gauge.
    let verdict = health::assess(spec, state, now);
    let (health, bound, stale_at) = (verdict.health, verdict.bound, verdict.stale_at);
    let due = spec
        .schedule
        .next_after(state.cursor)
        .filter(|s| *s <= now && spec.in_window(*s) && !state.paused)
        .map(|oldest| DueView {
            oldest: Ts(oldest),
            count: spec.schedule.count_between(state.cursor, now).max(1),
        });
    let mut dead: Vec<&DeadLetter> = state.dead.iter().collect();
    dead.sort_by_key(|d| std::cmp::Reverse((d.died_at, d.slot)));
    let c = &state.counters;
    JobStatus {
        job: spec.name.as_str().to_string(),
        schedule: spec.schedule_text.clone(),
        timezone: spec.timezone.clone(),
        action: action_str(&spec.action),
        recorded,
        paused: state.paused,
        health,
        stale: health == Health::Stale,
        stale_after_seconds: bound.map(|b| b.as_secs()),
        stale_at: stale_at.map(Ts),
        last_success: state.last_success.as_ref().map(|r| SuccessView {
            slot: Ts(r.slot),
            slot_id: slot_id(spec, r.slot),
            attempt: r.attempt,
            fence: r.fence,
            owner: r.owner.clone(),
            started_at: Ts(r.started_at),
            finished_at: Ts(r.finished_at),
            age_seconds: now.duration_since(r.finished_at).as_secs(),
        }),
        next_slot: next_slot(spec, now).map(Ts),
        due,
        fence: state.fence,
        cursor: Ts(state.cursor),
        created_at: recorded.then_some(Ts(state.created_at)),
        leases: state.leases.iter().map(|l| lease_view(spec, l)).collect(),
        pending: state
            .pending
            .iter()
            .map(|p| PendingView {
                slot: Ts(p.slot),
                slot_id: slot_id(spec, p.slot),
                attempt: p.attempt,
                not_before: Ts(p.not_before),
                origin: origin_str(p.origin),
                last_error: p.last_error.clone(),
            })
            .collect(),
        counts: CountsView {
            runs: c.runs,
            succeeded: c.succeeded,
            failed: c.failed,
            dead: c.dead,
            dead_dropped: c.dead_dropped,
            redriven: c.redriven,
            backfilled: c.backfilled,
            missed: MissReason::ALL
                .iter()
                .map(|r| (r.as_str(), c.missed.get(r).copied().unwrap_or(0)))
                .collect(),
            skipped: [SkipReason::Paused, SkipReason::OutsideWindow]
                .iter()
                .map(|r| (r.as_str(), c.skipped.get(r).copied().unwrap_or(0)))
                .collect(),
        },
        dead_letters: DeadSummary {
            count: state.dead.len(),
            dropped: c.dead_dropped,
            newest: dead
                .into_iter()
                .take(STATUS_DEAD_LETTERS)
                .map(|d| dead_view(spec, d))
                .collect(),
        },
        schedule_change: state.last_schedule_change.as_ref().map(|ch| ChangeView {
            at: Ts(ch.at),
            from_hash: ch.from_hash.clone(),
            to_hash: ch.to_hash.clone(),
        }),
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<String, Failure> {
    serde_json::to_string(value).map_err(|e| problem(format!("error: cannot encode JSON: {e}")))
}

// ------------------------------------------------------------------ status

pub fn status(args: StatusArgs) -> Result<(), Failure> {
    let session = Session::open(&args.store, args.job.as_deref())?;
    let specs = session.jobs(args.job.as_deref())?;
    let report = with_backend!(&session.backend, c => status_report(c, &session, &specs, args.job.is_none()))?;
    match args.format {
        Format::Json => println!("{}", to_json(&report)?),
        Format::Text => print!("{}", status_text(&report, &specs, session.now)),
    }
    Ok(())
}

fn status_report<C: Coordinator + Records>(
    c: &C,
    session: &Session,
    specs: &[&JobSpec],
    all: bool,
) -> Result<StatusReport, Failure> {
    let now = session.now;
    let mut jobs = Vec::with_capacity(specs.len());
    for spec in specs {
        let name = spec.name.as_str();
        let fail = |e: CoordError| coord_failure(&session.store, "reading", name, &e);
        let recorded = wait(c.record(name)).map_err(fail)?.is_some();
        let state = wait(c.status(spec, now)).map_err(fail)?;
        jobs.push(job_status(spec, &state, recorded, now));
    }
    let not_in_manifest = if all {
        wait(c.recorded_jobs())
            .map_err(|e| {
                problem(format!(
                    "error: listing jobs in store {}: {e}",
                    session.store
                ))
            })?
            .into_iter()
            .filter(|j| session.manifest.job(j).is_none())
            .collect()
    } else {
        Vec::new()
    };
    Ok(StatusReport {
        now: Ts(now),
        store: session.store.clone(),
        jobs,
        not_in_manifest,
    })
}

fn status_text(report: &StatusReport, specs: &[&JobSpec], now: Timestamp) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "store {}  at {}", report.store, utc(now));
    if report.jobs.is_empty() {
        let _ = writeln!(out, "\nthe manifest defines no jobs");
    }
    for (s, spec) in report.jobs.iter().zip(specs) {
        job_text(&mut out, s, spec, now);
    }
    if !report.not_in_manifest.is_empty() {
        let _ = writeln!(
            out,
            "\nrecords of jobs not in the manifest (left alone): {}",
            report.not_in_manifest.join(", ")
        );
    }
    out
}

/// Renders a count map as "downtime 2, catch_up 1", or "none".
fn reasons(map: &BTreeMap<&'static str, u64>) -> String {
    let parts: Vec<String> = map
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        let total: u64 = map.values().sum();
        format!("{total} ({})", parts.join(", "))
    }
}

fn job_text(out: &mut String, s: &JobStatus, spec: &JobSpec, now: Timestamp) {
    let zone = spec.schedule.zone();
    let _ = writeln!(
        out,
        "\n{}  {} ({})  {} job{}",
        s.job,
        s.schedule,
        s.timezone,
        s.action,
        if s.paused { "  PAUSED" } else { "" }
    );
    let line = |out: &mut String, label: &str, text: &str| {
        let _ = writeln!(out, "  {label:<13} {text}");
    };
    let bound = s
        .stale_after_seconds
        .map(|b| format_duration(Duration::from_secs(b)))
        .unwrap_or_default();
    let stale_at = s.stale_at.map(|t| utc(t.0)).unwrap_or_default();
    let health = match s.health {
        Health::Ok => format!("ok (stale after {bound} without a success: at {stale_at})"),
        Health::Stale => match &s.last_success {
            Some(l) => format!(
                "STALE: no success for {} (bound {bound})",
                approx(now.duration_since(l.finished_at.0))
            ),
            None => format!(
                "STALE: never succeeded, and its first slot plus {bound} passed at {stale_at}"
            ),
        },
        Health::NeverSucceeded => {
            let what = if s.counts.runs == 0 {
                "never ran".to_string()
            } else {
                format!("never succeeded ({} runs failed)", s.counts.failed)
            };
            match s.stale_at {
                Some(at) => format!("{what} (stale at {} without a success)", utc(at.0)),
                None => what,
            }
        }
        Health::Paused => "paused (not checked for staleness)".to_string(),
        Health::NoBound => "no staleness bound: fewer than two slots remain".to_string(),
    };
    line(out, "health", &health);
    match &s.last_success {
        Some(l) => line(
            out,
            "last success",
            &format!(
                "{} finished {} ({}), attempt {}, fence {}",
                l.slot_id,
                utc(l.finished_at.0),
                relative(now, l.finished_at.0),
                l.attempt,
                l.fence
            ),
        ),
        None if !s.recorded => line(
            out,
            "last success",
            "no runs yet (no record in this store: no runner has planned this job)",
        ),
        None if s.counts.runs == 0 => line(out, "last success", "no runs yet"),
        None => line(out, "last success", "none"),
    }
    let next = match s.next_slot {
        Some(t) => {
            let paused = if s.paused {
                " (paused: will be skipped)"
            } else {
                ""
            };
            format!(
                "{} ({}){paused}",
                instant_text(t.0, zone),
                relative(now, t.0)
            )
        }
        None => "none (the schedule has no slot left in its active window)".to_string(),
    };
    line(out, "next slot", &next);
    if let Some(d) = &s.due {
        let more = if d.count > 1 {
            format!(" and {} later", d.count - 1)
        } else {
            String::new()
        };
        line(
            out,
            "due",
            &format!(
                "{}{more}: not claimed yet (does a runner serve this store?)",
                slot_id(spec, d.oldest.0)
            ),
        );
    }
    line(out, "fence", &s.fence.to_string());
    if s.leases.is_empty() {
        line(out, "live leases", "none");
    } else {
        line(out, "live leases", &s.leases.len().to_string());
        for l in &s.leases {
            let _ = writeln!(
                out,
                "    {}  owner {}  fence {}  attempt {}  expires {} ({})",
                l.slot_id,
                l.owner,
                l.fence,
                l.attempt,
                utc(l.expires_at.0),
                relative(now, l.expires_at.0)
            );
        }
    }
    if s.pending.is_empty() {
        line(out, "pending", "none");
    } else {
        line(
            out,
            "pending",
            &format!(
                "{} (retries, backfills and redrives waiting for a runner)",
                s.pending.len()
            ),
        );
        for p in &s.pending {
            let why = match p.origin {
                "schedule" | "manual" => "retry",
                other => other,
            };
            let error = p
                .last_error
                .as_deref()
                .map(|e| format!("  last error: {}", one_line(e, ERROR_CELL_CHARS)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    {}  {why}, attempt {}  not before {}{error}",
                p.slot_id,
                p.attempt,
                utc(p.not_before.0),
            );
        }
    }
    let k = &s.counts;
    line(
        out,
        "runs",
        &format!(
            "{} ({} succeeded, {} failed), {} dead, {} redriven, {} backfilled",
            k.runs, k.succeeded, k.failed, k.dead, k.redriven, k.backfilled
        ),
    );
    line(out, "missed", &reasons(&k.missed));
    line(out, "skipped", &reasons(&k.skipped));
    let dropped = if s.dead_letters.dropped > 0 {
        format!(
            " ({} older ones dropped from the list)",
            s.dead_letters.dropped
        )
    } else {
        String::new()
    };
    if s.dead_letters.count == 0 {
        line(out, "dead letters", &format!("none{dropped}"));
    } else {
        let shown = s.dead_letters.newest.len();
        let which = if shown < s.dead_letters.count {
            format!(", newest {shown} (all: cronslot dlq list --job {})", s.job)
        } else {
            String::new()
        };
        line(
            out,
            "dead letters",
            &format!("{}{which}{dropped}", s.dead_letters.count),
        );
        for d in &s.dead_letters.newest {
            let _ = writeln!(
                out,
                "    {}  attempts {}  fence {}  died {}  error: {}",
                d.slot_id,
                d.attempts,
                d.fence,
                utc(d.died_at.0),
                one_line(&d.last_error, ERROR_CELL_CHARS)
            );
        }
    }
    if let Some(ch) = &s.schedule_change {
        line(
            out,
            "schedule",
            &format!(
                "changed {} (spec {} -> {}); slots after the cursor follow the new one",
                utc(ch.at.0),
                short_hash(&ch.from_hash),
                short_hash(&ch.to_hash)
            ),
        );
    }
}

fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

// --------------------------------------------------------------------- dlq

pub fn dlq(args: DlqArgs) -> Result<(), Failure> {
    match args.action {
        DlqAction::List { store, job, format } => dlq_list(&store, job.as_deref(), format),
        DlqAction::Redrive { store, job, slot } => dlq_redrive(&store, &job, slot.as_deref()),
    }
}

/// One dead letter in `cronslot dlq list --format json`:
/// `{"dead_letters":[{"job","slot","slot_id","attempts","fence","died_at","last_error"}],
///   "dropped":{"job":N}}` — sorted by job then slot; `dropped` counts, per
/// job, dead letters that fell off the capped list (jobs with none omitted).
#[derive(Serialize)]
struct DlqReport {
    now: Ts,
    store: String,
    dead_letters: Vec<DlqEntry>,
    dropped: BTreeMap<String, u64>,
}

#[derive(Serialize)]
struct DlqEntry {
    job: String,
    #[serde(flatten)]
    letter: DeadView,
}

fn dlq_list(args: &StoreArgs, job: Option<&str>, format: Format) -> Result<(), Failure> {
    let session = Session::open(args, job)?;
    let specs = session.jobs(job)?;
    let mut report = DlqReport {
        now: Ts(session.now),
        store: session.store.clone(),
        dead_letters: Vec::new(),
        dropped: BTreeMap::new(),
    };
    for spec in &specs {
        let name = spec.name.as_str();
        let state = with_backend!(&session.backend, c => wait(c.status(spec, session.now)))
            .map_err(|e| coord_failure(&session.store, "reading", name, &e))?;
        let mut dead: Vec<&DeadLetter> = state.dead.iter().collect();
        dead.sort_by_key(|d| d.slot);
        report
            .dead_letters
            .extend(dead.into_iter().map(|d| DlqEntry {
                job: name.to_string(),
                letter: dead_view(spec, d),
            }));
        if state.counters.dead_dropped > 0 {
            report
                .dropped
                .insert(name.to_string(), state.counters.dead_dropped);
        }
    }
    report
        .dead_letters
        .sort_by(|a, b| (&a.job, a.letter.slot.0).cmp(&(&b.job, b.letter.slot.0)));
    match format {
        Format::Json => println!("{}", to_json(&report)?),
        Format::Text => print!("{}", dlq_text(&report)),
    }
    Ok(())
}

fn dlq_text(report: &DlqReport) -> String {
    let mut out = String::new();
    if report.dead_letters.is_empty() {
        let _ = writeln!(out, "no dead letters in store {}", report.store);
    } else {
        let rows: Vec<[String; 6]> = report
            .dead_letters
            .iter()
            .map(|e| {
                [
                    e.job.clone(),
                    utc(e.letter.slot.0),
                    e.letter.attempts.to_string(),
                    e.letter.fence.to_string(),
                    utc(e.letter.died_at.0),
                    one_line(&e.letter.last_error, ERROR_CELL_CHARS),
                ]
            })
            .collect();
        let header = ["JOB", "SLOT", "ATTEMPTS", "FENCE", "DIED AT", "LAST ERROR"];
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut print_row = |cells: [&str; 6]| {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i + 1 == cells.len() {
                    line.push_str(cell);
                } else {
                    let _ = write!(line, "{cell:<w$}  ", w = widths[i]);
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        };
        print_row(header);
        for row in &rows {
            print_row([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]]);
        }
        let n = report.dead_letters.len();
        let _ = writeln!(
            out,
            "\n{n} dead letter{}; send them back to run with: cronslot dlq redrive JOB [--slot RFC3339]",
            if n == 1 { "" } else { "s" }
        );
    }
    for (job, n) in &report.dropped {
        let _ = writeln!(
            out,
            "{job}: {n} older dead letter{} dropped from the capped list (counted in status)",
            if *n == 1 { " was" } else { "s were" }
        );
    }
    out
}

fn dlq_redrive(args: &StoreArgs, job: &str, slot: Option<&str>) -> Result<(), Failure> {
    let session = Session::open(args, Some(job))?;
    let spec = session.job(job)?;
    let slot = slot
        .map(|s| parse_slot_flag("--slot", s, spec))
        .transpose()?;
    let now = session.now;
    let fail = |doing: &str, e: CoordError| coord_failure(&session.store, doing, job, &e);
    let redriven = with_backend!(&session.backend, c => wait(c.redrive(spec, slot, now)))
        .map_err(|e| fail("redriving", e))?;
    if redriven.is_empty() {
        let state = with_backend!(&session.backend, c => wait(c.status(spec, now)))
            .map_err(|e| fail("reading", e))?;
        return match slot {
            None if state.dead.is_empty() => {
                println!("job {job} has no dead letters; nothing redriven");
                Ok(())
            }
            None => Err(problem(format!(
                "error: none of the {} dead letters of job {job} could be redriven: each is running or waiting already, or the job has too many pending runs",
                state.dead.len()
            ))),
            Some(s) if state.slot_in_flight(s) => Err(Failure::bad_input(format!(
                "error: {} is not a dead letter: it is running or waiting for a retry now (cronslot status --job {job})",
                slot_id(spec, s)
            ))),
            Some(s) => {
                let known: Vec<String> = state.dead.iter().map(|d| utc(d.slot)).collect();
                let known = if known.is_empty() {
                    "the job has no dead letters".to_string()
                } else {
                    format!("its dead letters: {}", known.join(", "))
                };
                Err(Failure::bad_input(format!(
                    "error: {} is not a dead letter of job {job}; {known}",
                    slot_id(spec, s)
                )))
            }
        };
    }
    let n = redriven.len();
    println!(
        "redrove {n} dead letter{} of job {job} with a fresh attempt budget; a runner on store {} claims {} next:",
        if n == 1 { "" } else { "s" },
        session.store,
        if n == 1 { "it" } else { "them" }
    );
    for s in redriven {
        println!("  {}", slot_id(spec, s));
    }
    Ok(())
}

// ----------------------------------------------------------- pause, resume

pub fn pause(args: JobArgs) -> Result<(), Failure> {
    set_paused(&args, true)
}

pub fn resume(args: JobArgs) -> Result<(), Failure> {
    set_paused(&args, false)
}

fn set_paused(args: &JobArgs, paused: bool) -> Result<(), Failure> {
    let session = Session::open(&args.store, Some(&args.job))?;
    let spec = session.job(&args.job)?;
    let job = spec.name.as_str();
    let now = session.now;
    let fail = |doing: &str, e: CoordError| coord_failure(&session.store, doing, job, &e);
    let before = with_backend!(&session.backend, c => wait(c.status(spec, now)))
        .map_err(|e| fail("reading", e))?;
    let zone = spec.schedule.zone();
    if before.paused == paused {
        let state = if paused { "paused" } else { "not paused" };
        println!("job {job} is already {state}; nothing changed");
        return Ok(());
    }
    let doing = if paused { "pausing" } else { "resuming" };
    let changed = if paused {
        with_backend!(&session.backend, c => wait(c.pause(spec, now)))
    } else {
        with_backend!(&session.backend, c => wait(c.resume(spec, now)))
    };
    changed.map_err(|e| fail(doing, e))?;
    let after = with_backend!(&session.backend, c => wait(c.status(spec, now)))
        .map_err(|e| fail("reading", e))?;
    if paused {
        println!(
            "paused job {job} in store {}: its slots are skipped (and counted) until `cronslot resume {job}`",
            session.store
        );
        if !after.leases.is_empty() {
            println!(
                "{} run{} in progress {} not stopped:",
                after.leases.len(),
                if after.leases.len() == 1 { "" } else { "s" },
                if after.leases.len() == 1 { "is" } else { "are" }
            );
            for l in &after.leases {
                println!(
                    "  {}  owner {}  fence {}",
                    slot_id(spec, l.slot),
                    l.owner,
                    l.fence
                );
            }
        }
    } else {
        let skipped = after
            .counters
            .skipped
            .get(&SkipReason::Paused)
            .copied()
            .unwrap_or(0);
        println!(
            "resumed job {job} in store {}; slots skipped while paused, over all pauses: {skipped}",
            session.store
        );
        match next_slot(spec, now) {
            Some(t) => println!("next slot {}", instant_text(t, zone)),
            None => println!("no slot left in the job's active window"),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- backfill

pub fn backfill(args: BackfillArgs) -> Result<(), Failure> {
    let from = parse_rfc3339("--from", &args.from)?;
    let to = parse_rfc3339("--to", &args.to)?;
    let session = Session::open(&args.store, Some(&args.job))?;
    let spec = session.job(&args.job)?;
    let job = spec.name.as_str();
    let fail = |doing: &str, e: CoordError| coord_failure(&session.store, doing, job, &e);
    let slots = with_backend!(&session.backend, c => wait(c.backfill(spec, from, to, session.now, args.dry_run)))
        .map_err(|e| fail("backfilling", e))?;
    // Backfill takes only slots the stored cursor has passed; later ones
    // are still due on the schedule. Say so when the range reaches them.
    let cursor = with_backend!(&session.backend, c => wait(c.record(job)))
        .map_err(|e| fail("reading", e))?
        .map(|state| state.cursor);
    let zone = spec.schedule.zone();
    let n = slots.len();
    let plural = if n == 1 { "" } else { "s" };
    if n == 0 {
        println!(
            "no slot of job {job} to queue in [{}, {}]: slots that are running, waiting for a retry \
             or dead (use `cronslot dlq redrive`) are left alone",
            utc(from),
            utc(to)
        );
    } else {
        if args.dry_run {
            println!("would queue {n} slot{plural} of job {job} (dry run: nothing changed):");
        } else {
            println!(
                "queued {n} slot{plural} of job {job}; a runner on store {} runs {} oldest first:",
                session.store,
                if n == 1 { "it" } else { "them" }
            );
        }
        for s in slots {
            if zone.is_utc() {
                println!("  {}", slot_id(spec, s));
            } else {
                println!("  {}  {}", slot_id(spec, s), local(s, zone));
            }
        }
    }
    if let Some(cursor) = cursor.filter(|c| to > *c) {
        println!(
            "note: slots after {} (where runners have planned job {job} up to) are left alone: \
             they are still due on the schedule and get their fate (run, or missed per catch_up) \
             when a runner next plans the job",
            utc(cursor)
        );
    }
    Ok(())
}

// ----------------------------------------------------------------- trigger

/// `cli-<hostname>-<pid>`: who holds a lease taken by `trigger`.
fn owner_id() -> String {
    let host = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "local".to_string());
    format!("cli-{host}-{}", std::process::id())
}

pub fn trigger(args: JobArgs) -> Result<(), Failure> {
    let session = Session::open(&args.store, Some(&args.job))?;
    let spec = session.job(&args.job)?;
    if let Backend::Admin(worker) = &session.backend {
        // The Worker runs the job (it has the functions and the fetch).
        return admin::trigger(worker, &session.store, spec);
    }
    // Refuse what this command cannot run before claiming anything: a
    // claimed slot that nobody runs would wait for its lease to expire.
    let command = match &spec.action {
        Action::Command { argv, timeout, env } => CommandJob {
            argv,
            timeout: *timeout,
            env,
        },
        Action::Http { url, .. } => {
            return Err(Failure::bad_input(format!(
                "error: job {:?} is an http job ({url}); `cronslot trigger` runs command jobs only \
                 (`cronslot run` runs http jobs on their schedule). Nothing was claimed.",
                spec.name.as_str()
            )));
        }
        Action::Function => {
            return Err(Failure::bad_input(format!(
                "error: job {:?} runs a Rust function registered in your own program, which the cronslot CLI \
                 does not contain; `cronslot trigger` runs command jobs only. Nothing was claimed.",
                spec.name.as_str()
            )));
        }
    };
    with_backend!(&session.backend, c => trigger_on(c, &session, spec, &command))
}

struct CommandJob<'a> {
    argv: &'a [String],
    timeout: Duration,
    env: &'a BTreeMap<String, String>,
}

fn trigger_on<C: Coordinator>(
    c: &C,
    session: &Session,
    spec: &JobSpec,
    command: &CommandJob<'_>,
) -> Result<(), Failure> {
    let job = spec.name.as_str();
    let store = &session.store;
    let owner = owner_id();
    let claim = wait(c.claim(spec, session.now, ClaimTrigger::Manual, &owner))
        .map_err(|e| coord_failure(store, "claiming a slot of", job, &e))?;
    let lease = match claim {
        Claim::Claimed(lease) => lease,
        Claim::Idle(idle) => return Err(problem(idle_message(c, session, spec, &idle))),
    };
    let id = slot_id(spec, lease.slot);
    println!(
        "claimed {id} (attempt {}, fence {}, owner {owner}, lease until {}); running: {}",
        lease.attempt,
        lease.fence,
        utc(lease.expires_at),
        shell_words(command.argv)
    );
    let _ = std::io::stdout().flush();
    let started = Instant::now();
    let outcome = run_command(spec, &lease, command);
    let took = format_took(started.elapsed());
    let finished = Timestamp::now();
    match outcome {
        RunResult::Succeeded => {
            wait(c.complete(spec, lease.fence, None, finished)).map_err(|e| {
                problem(format!(
                    "error: {id} succeeded in {took}, but store {store} refused to record it: {e}"
                ))
            })?;
            println!(
                "{id} succeeded in {took}; recorded with fence {}",
                lease.fence
            );
            Ok(())
        }
        RunResult::Failed { error, permanent } => {
            let kind = if permanent { "permanent" } else { "transient" };
            let fate = wait(c.fail(spec, lease.fence, &error, permanent, finished)).map_err(|e| {
                problem(format!(
                    "error: {id} failed in {took} ({kind}: {error}), and store {store} refused to record it: {e}"
                ))
            })?;
            let next = match fate {
                FailOutcome::RetryAt(at) => format!(
                    "attempt {} is due at {} (a runner on the store retries it)",
                    lease.attempt + 1,
                    utc(at)
                ),
                FailOutcome::Dead => format!(
                    "the slot is now a dead letter (cronslot dlq list --job {job}; cronslot dlq redrive {job} --slot {})",
                    utc(lease.slot)
                ),
            };
            Err(problem(format!(
                "error: {id} failed in {took} ({kind}): {error}\n{next}"
            )))
        }
    }
}

/// Why a trigger found nothing to run, with what to do about it.
fn idle_message<C: Coordinator>(c: &C, session: &Session, spec: &JobSpec, idle: &Idle) -> String {
    let job = spec.name.as_str();
    match idle {
        Idle::Paused => format!("job {job} is paused; nothing ran (cronslot resume {job} first)"),
        Idle::Busy { live } => format!(
            "job {job} already has {live} run{} in progress and its overlap policy ({}) allows no more; nothing ran (cronslot status --job {job})",
            if *live == 1 { "" } else { "s" },
            spec.overlap
        ),
        Idle::InProgress { slot, fence } => format!(
            "the current slot {} is running now (fence {fence}); nothing ran",
            slot_id(spec, *slot)
        ),
        Idle::RetryLater { slot, not_before } => format!(
            "the current slot {} waits for its retry at {}; nothing ran",
            slot_id(spec, *slot),
            utc(*not_before)
        ),
        Idle::NotYetDue { slot } => {
            format!("slot {} is not due yet; nothing ran", slot_id(spec, *slot))
        }
        Idle::NothingDue { next_slot, .. } => match next_slot {
            Some(t) => format!(
                "job {job} has no slot at or before now to run; its next slot is {}",
                utc(*t)
            ),
            None => format!("job {job} has no slot to run: its schedule has none left"),
        },
        Idle::AlreadyResolved { slot } => {
            let id = slot_id(spec, *slot);
            let Ok(state) = wait(c.status(spec, session.now)) else {
                return format!("the current slot {id} is already resolved; nothing ran");
            };
            if state.paused {
                return format!("job {job} is paused; nothing ran (cronslot resume {job} first)");
            }
            if let Some(run) = state
                .history
                .iter()
                .rev()
                .chain(state.last_success.iter())
                .find(|r| r.slot == *slot && r.outcome.succeeded())
            {
                return format!(
                    "the current slot {id} already ran: it succeeded at {} (fence {}); nothing ran",
                    utc(run.finished_at),
                    run.fence
                );
            }
            if let Some(d) = state.dead.iter().find(|d| d.slot == *slot) {
                return format!(
                    "the current slot {id} already ran and is a dead letter ({} attempt{}: {}); \
                     send it back with: cronslot dlq redrive {job} --slot {}",
                    d.attempts,
                    if d.attempts == 1 { "" } else { "s" },
                    one_line(&d.last_error, ERROR_CELL_CHARS),
                    utc(*slot)
                );
            }
            if *slot < state.created_at {
                return format!(
                    "the current slot {id} came before job {job} was first recorded in this store ({}): \
                     cronslot does not run slots from before a job existed. To run it anyway: \
                     cronslot backfill {job} --from {t} --to {t}, then cronslot trigger {job}",
                    utc(state.created_at),
                    t = utc(*slot)
                );
            }
            format!(
                "the current slot {id} is already resolved (it ran, or was missed or skipped: cronslot status --job {job}); nothing ran"
            )
        }
    }
}

fn format_took(d: Duration) -> String {
    if d < Duration::from_secs(60) {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format_duration(Duration::from_secs(d.as_secs()))
    }
}

/// The argv as one could paste it into a shell.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

enum RunResult {
    Succeeded,
    Failed { error: String, permanent: bool },
}

/// Runs a command job for its lease: `CRONSLOT_*` in the environment (over
/// the job's own `env`), stdin closed, stdout inherited, stderr shown and
/// its tail kept as the error. Exit 0 succeeds, 75 is transient, anything
/// else (a signal too) permanent; a command that cannot start is permanent,
/// one killed at its timeout (or its lease's expiry, if sooner) transient.
fn run_command(spec: &JobSpec, lease: &Lease, command: &CommandJob<'_>) -> RunResult {
    let Some((program, rest)) = command.argv.split_first() else {
        return RunResult::Failed {
            error: "the command is empty".to_string(),
            permanent: true,
        };
    };
    let id = slot_id(spec, lease.slot);
    let lease_left = Duration::try_from(lease.expires_at.duration_since(Timestamp::now()))
        .unwrap_or(Duration::ZERO);
    let limit = command.timeout.min(lease_left);
    let mut child = match Process::new(program)
        .args(rest)
        .envs(command.env)
        .env("CRONSLOT_JOB", spec.name.as_str())
        .env("CRONSLOT_SLOT", &id)
        .env("CRONSLOT_IDEMPOTENCY_KEY", &id)
        .env("CRONSLOT_FENCE", lease.fence.to_string())
        .env("CRONSLOT_ATTEMPT", lease.attempt.to_string())
        .env("CRONSLOT_SCHEDULED_AT", format_instant(lease.slot))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            return RunResult::Failed {
                error: format!("cannot start {program:?}: {e}"),
                permanent: true,
            };
        }
    };
    let tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    let cut = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    if let Some(mut stderr) = child.stderr.take() {
        let tail = Arc::clone(&tail);
        let cut = Arc::clone(&cut);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let _ = std::io::stderr().write_all(&buf[..n]);
                        let mut kept = tail.lock().unwrap_or_else(|p| p.into_inner());
                        kept.extend_from_slice(&buf[..n]);
                        let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
                        kept.drain(..excess);
                        if excess > 0 {
                            cut.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
            let _ = done_tx.send(());
        });
    }
    // `None`: a limit beyond what the clock can represent, i.e. none.
    let deadline = Instant::now().checked_add(limit);
    let status: Result<ExitStatus, String> = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if deadline.is_some_and(|d| Instant::now() >= d) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "timed out after {} and was killed",
                    format_duration(Duration::from_secs(limit.as_secs().max(1)))
                ));
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => {
                let _ = child.kill();
                break Err(format!("lost track of the process: {e}"));
            }
        }
    };
    let _ = done_rx.recv_timeout(STDERR_DRAIN);
    let stderr_tail = {
        let kept = tail.lock().unwrap_or_else(|p| p.into_inner());
        let text = one_line(&String::from_utf8_lossy(&kept), STDERR_TAIL_BYTES);
        if cut.load(Ordering::Relaxed) && !text.is_empty() {
            format!("…{text}")
        } else {
            text
        }
    };
    let with_tail = |what: String| {
        if stderr_tail.is_empty() {
            what
        } else {
            format!("{what}: {stderr_tail}")
        }
    };
    match status {
        Err(why) => RunResult::Failed {
            error: with_tail(why),
            permanent: false,
        },
        Ok(status) => match status.code() {
            Some(0) => RunResult::Succeeded,
            Some(75) => RunResult::Failed {
                error: with_tail("exit status 75 (transient)".to_string()),
                permanent: false,
            },
            Some(code) => RunResult::Failed {
                error: with_tail(format!("exit status {code}")),
                permanent: true,
            },
            None => RunResult::Failed {
                error: with_tail(describe_signal(status)),
                permanent: true,
            },
        },
    }
}

#[cfg(unix)]
fn describe_signal(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("ended without an exit status ({status})"),
    }
}

#[cfg(not(unix))]
fn describe_signal(status: ExitStatus) -> String {
    format!("ended without an exit status ({status})")
}
