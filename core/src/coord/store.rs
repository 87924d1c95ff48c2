//! The store contract (docs/design.md §5): a compare-and-set store for the state
//! record and an effect ledger. Memory, SQLite and DynamoDB implement it;
//! the generic coordinator turns it into every operation of
//! [`Coordinator`](super::Coordinator).
//!
//! Futures need not be `Send`: the Cloudflare adapter is single-threaded
//! wasm. Native async functions in traits keep `Send` where the concrete
//! store's futures have it.
#![allow(async_fn_in_trait)]

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::exec::join_all;
use super::state::{DecodeError, JobState};

/// A store's version of a record. Opaque to the coordinator: it is only
/// handed back to [`StateStore::put`].
pub type Version = u64;

/// A value read from a store with the version to hand back to a conditional
/// write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// The store's version of it.
    pub version: Version,
}

/// The outcome of a conditional write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutResult {
    /// Written; the record's new version.
    Written(Version),
    /// The version did not match; here is the current record (`None` when
    /// there is none), so the caller can re-plan without another read.
    Conflict(Option<Box<Versioned<JobState>>>),
}

/// What went wrong talking to a store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// Throttled, timed out, unreachable: worth retrying.
    Unavailable,
    /// A stored record cannot be decoded.
    Corrupt,
    /// A write may or may not have been applied (a timeout after sending).
    /// The coordinator resolves it by reading back.
    Ambiguous,
    /// Anything else: a misconfiguration, a permission, a bug.
    Other,
}

/// An error of a store operation, the one error type of every store:
/// its kind decides whether it is worth retrying (see
/// [`CoordError::is_transient`](super::CoordError::is_transient)), its
/// message says what happened and what to do, in one sentence that names
/// the store without its password; [`code`](StoreError::code) is the
/// server's own code when a server reported it, and
/// [`source`](std::error::Error::source) the client's error underneath.
#[derive(Clone)]
pub struct StoreError {
    /// What went wrong, for the caller to decide what to do.
    pub kind: StoreErrorKind,
    /// What happened, for logs and operators. Never holds a secret.
    pub message: String,
    code: Option<String>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl StoreError {
    /// An error of the given kind.
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> StoreError {
        StoreError {
            kind,
            message: message.into(),
            code: None,
            source: None,
        }
    }

    /// A [`StoreErrorKind::Unavailable`] error: worth retrying.
    pub fn unavailable(message: impl Into<String>) -> StoreError {
        Self::new(StoreErrorKind::Unavailable, message)
    }

    /// A [`StoreErrorKind::Corrupt`] error: a stored record that cannot be
    /// read.
    pub fn corrupt(message: impl Into<String>) -> StoreError {
        Self::new(StoreErrorKind::Corrupt, message)
    }

    /// A [`StoreErrorKind::Other`] error: not worth retrying.
    pub fn other(message: impl Into<String>) -> StoreError {
        Self::new(StoreErrorKind::Other, message)
    }

    /// The same error, with the server's code (PostgreSQL's SQLSTATE,
    /// Redis's error prefix, DynamoDB's error code).
    pub fn with_code(mut self, code: impl Into<String>) -> StoreError {
        self.code = Some(code.into());
        self
    }

    /// The same error, with the client's error that caused it. Its text
    /// must hold no secret either: stores attach errors whose text they
    /// have checked (a client's connection error never echoes the
    /// password it was given).
    pub fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        self.source = Some(Arc::new(source));
        self
    }

    /// Whether it is worth retrying, and how: see [`StoreErrorKind`].
    pub fn kind(&self) -> &StoreErrorKind {
        &self.kind
    }

    /// The sentence for logs and operators.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The server's code, when a server reported the error (`28P01`,
    /// `WRONGPASS`, `ResourceNotFoundException`, …).
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }
}

impl fmt::Debug for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("StoreError");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(code) = &self.code {
            d.field("code", code);
        }
        if let Some(source) = &self.source {
            d.field("source", &format_args!("{source}"));
        }
        d.finish()
    }
}

/// Two errors are equal when they say the same: kind, message and code
/// (the source is the client's and has no equality).
impl PartialEq for StoreError {
    fn eq(&self, other: &StoreError) -> bool {
        self.kind == other.kind && self.message == other.message && self.code == other.code
    }
}

impl Eq for StoreError {}

impl From<DecodeError> for StoreError {
    fn from(e: DecodeError) -> Self {
        StoreError::new(StoreErrorKind::Corrupt, e.to_string())
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            StoreErrorKind::Unavailable => "store unavailable",
            StoreErrorKind::Corrupt => "corrupt record",
            StoreErrorKind::Ambiguous => "ambiguous write",
            StoreErrorKind::Other => "store error",
        };
        write!(f, "{kind}: {}", self.message)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A store location (a `--store` URL, or a store's own configuration) that
/// cannot be used, and why: one type for every store's parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationError {
    /// The location as given.
    pub input: String,
    /// What is wrong with it and the syntax expected, for a person.
    pub message: String,
}

impl fmt::Display for LocationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LocationError {}

/// A compare-and-set store of per-job state records.
pub trait StateStore {
    /// The record of `job` and its version, or `None` if the job has none.
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError>;

    /// Writes `state` if the stored version is `expected` (`None`: only if
    /// there is no record yet).
    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError>;

    /// Deletes the record of `job` if its stored version is `expected`
    /// (with its entries in the store's indexes); answers whether it did.
    /// A record written since it was read at `expected` stays: the
    /// forgetting of a keyed run's record ([`decide::forget_at`]) must not
    /// delete a run enqueued again meanwhile.
    ///
    /// [`decide::forget_at`]: super::decide::forget_at
    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError>;

    /// Every job that has a record, sorted.
    async fn jobs(&self) -> Result<Vec<String>, StoreError>;

    /// A page of the records whose names start with `prefix`, in byte
    /// order of their names: those after `after` (exclusive; `None`: from
    /// the first), at most `limit`, each with its version. A schedule
    /// listing pages with it (`job/` and the keys' prefix), so a store
    /// answers it from an index in name order, in one read that sees each
    /// record as it is at one instant; paging on from the last name of a
    /// page then meets every record that existed throughout exactly once,
    /// whatever is written meanwhile.
    ///
    /// The default reads [`jobs`](StateStore::jobs) and then each record
    /// of the page: correct (each record is read as it is), one read per
    /// record, for stores that have no index to page.
    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        let names = self.jobs().await?;
        let mut page = Vec::new();
        for name in names
            .into_iter()
            .filter(|n| n.starts_with(prefix) && after.is_none_or(|a| n.as_str() > a))
        {
            if page.len() >= limit {
                break;
            }
            if let Some(record) = self.get(&name).await? {
                page.push((name, record));
            }
        }
        Ok(page)
    }

    /// [`get`](StateStore::get), and the instant that leases are judged
    /// by, read in the same round trip. A store without a clock of its own
    /// answers the caller's `now` (the default). A store shared by servers
    /// whose clocks may disagree (PostgreSQL) answers its own clock, so
    /// that every server agrees on when a lease has expired: the
    /// coordinator plans with that instant instead of the caller's.
    async fn get_judged(
        &self,
        job: &str,
        now: Timestamp,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        Ok((self.get(job).await?, now))
    }

    /// The records of `jobs` (in that order) and one instant they may all
    /// be judged by: [`get_judged`](StateStore::get_judged) of many, for a
    /// bulk write of schedules. A store that can read many records in one
    /// request does (PostgreSQL: one statement; SQLite: one lock). The
    /// default reads each, [`BULK_LANES`] at a time, and answers the latest
    /// instant any read was judged at: a record read earlier is as it was
    /// then, and a decision made later over it is one a read at that
    /// instant could have made, since the compare-and-set of the write
    /// refuses a record changed since.
    async fn get_many_judged(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        let mut records = Vec::with_capacity(jobs.len());
        let mut judged = now;
        for chunk in jobs.chunks(BULK_LANES) {
            let reads = join_all(chunk.iter().map(|job| self.get_judged(job, now)).collect()).await;
            for read in reads {
                let (record, at) = read?;
                judged = judged.max(at);
                records.push(record);
            }
        }
        Ok((records, judged))
    }

    /// Many conditional writes, each [`put`](StateStore::put) with its own
    /// answer, in the order given (at most one per record: a second write
    /// of one record would race the first). Nothing is atomic across
    /// them. A store that can send many in one request does (PostgreSQL:
    /// one statement each for the first writes and the compare-and-sets;
    /// SQLite: one transaction). The default sends [`BULK_LANES`] at a
    /// time, so a store that pipelines requests (Redis, DynamoDB, the
    /// Durable Objects) has them in flight together.
    async fn put_many(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        let mut answers = Vec::with_capacity(writes.len());
        for chunk in writes.chunks(BULK_LANES) {
            let puts = chunk
                .iter()
                .map(|w| self.put(w.job, w.state, w.expected))
                .collect();
            answers.extend(join_all(puts).await);
        }
        answers
    }
}

/// How many reads or writes of a bulk operation the default
/// [`StateStore::get_many_judged`] and [`StateStore::put_many`] keep in
/// flight at once.
pub const BULK_LANES: usize = 64;

/// One conditional write of [`StateStore::put_many`]: `state` as the
/// record `job`, if the stored version is `expected` (`None`: only if
/// there is no record yet).
#[derive(Debug, Clone, Copy)]
pub struct RecordWrite<'a> {
    /// The record's name.
    pub job: &'a str,
    /// What to write.
    pub state: &'a JobState,
    /// The version it must be at.
    pub expected: Option<Version>,
}

/// The least string greater than every string that starts with `prefix`
/// (in byte order, which is code point order), where there is one: the
/// exclusive end of a prefix's range in an index ordered by name. `None`
/// for an empty prefix, or one of only `char::MAX`: the range then runs
/// to the end.
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        // The next code point that is a char (the surrogates are not).
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Gives `job`'s record a wake if it was written before stores kept wakes
/// and needs one: no [`JobState::wake_at`], but a waiting run or a live
/// lease ([`migrated_wake`](super::decide::migrated_wake)). The record is
/// written with the store's conditional write, so it gets a new version
/// and the wake reaches the store's index (or an object's alarm) the way
/// every write's does. One read when nothing is needed.
///
/// The bounded repair of docs/design.md §11, for stores that repair job by
/// job (DynamoDB's `init`, a Durable Object per job); SQLite and
/// PostgreSQL repair every record inside their schema migration. Returns
/// the wake given, `None` when the record needed none (or was written
/// meanwhile: that write gave it its exact wake). Running it twice is
/// harmless: the second finds the wake.
pub async fn repair_wake<S: StateStore + ?Sized>(
    store: &S,
    job: &str,
) -> Result<Option<Timestamp>, StoreError> {
    let Some(current) = store.get(job).await? else {
        return Ok(None);
    };
    if current.value.wake_at.is_some() {
        return Ok(None);
    }
    let Some(wake) = super::decide::migrated_wake(&current.value) else {
        return Ok(None);
    };
    let mut state = current.value;
    state.wake_at = Some(wake);
    Ok(match store.put(job, &state, Some(current.version)).await? {
        PutResult::Written(_) => Some(wake),
        PutResult::Conflict(_) => None,
    })
}

/// Where a tick begins ([`TickIndex::tick_start`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickStart {
    /// Every slot at or before this instant was planned by an earlier
    /// tick; `None` before the store's first tick.
    pub mark: Option<Timestamp>,
    /// The instant this tick plans up to: the store's clock where it
    /// judges leases by its own ([`StateStore::get_judged`]), otherwise the
    /// caller's `now`. Every server then agrees on which slots a mark
    /// covers.
    pub now: Timestamp,
    /// Jobs whose [wake](super::JobState::wake_at) has come (at or before
    /// `now`), earliest wake first, at most the limit asked for.
    pub woken: Vec<String>,
    /// The records of woken jobs, read in the same request, where the store
    /// returns them with the index (PostgreSQL), judged
    /// at `now` as [`StateStore::get_judged`] would judge them; empty
    /// elsewhere. A woken schedule whose record is here costs the tick no
    /// read of its own.
    pub records: Vec<super::Versioned<super::JobState>>,
    /// Planned jobs an earlier tick left (a bound on the jobs per tick),
    /// each with the slot it was planned for, where the store keeps them
    /// ([`TickIndex::leave`]); empty elsewhere. A tick plans them as
    /// planned at that slot, so a job's first slot still creates its
    /// record just before it.
    pub carried: Vec<(String, Timestamp)>,
    /// The earliest wake after `now`, where the store reads it in the same
    /// request (SQLite, PostgreSQL, Redis, the memory store); `None`
    /// elsewhere, or when no record has one. A runner sleeps until it
    /// rather than until its poll: a jittered slot's start, or a retry's
    /// time, is time passing, which no write announces.
    pub next_wake: Option<Timestamp>,
}

/// What lets a tick cost what is due rather than what is held
/// (docs/design.md §11): the deployment's tick mark (how far ticks have
/// planned the manifest's slots), and an index of every record's
/// [`JobState::wake_at`](super::JobState::wake_at), kept by the store as
/// part of the record's own conditional write, so that it is never out of
/// step with the record.
pub trait TickIndex {
    /// In one request: the tick mark, the store's instant, and the jobs
    /// whose wake has come (at most `limit`, earliest first).
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError>;

    /// In one request: moves the tick mark to `mark`, unless it is already
    /// there or later (a mark never moves backwards).
    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError>;

    /// Told, before [`TickIndex::tick_end`], which jobs the tick leaves
    /// for the next one (a bound on the jobs per tick, a failed claim):
    /// `planned`, the planned ones with their slot, and `woken`, the woken
    /// ones. Returns whether the store keeps them all as wakes, which the
    /// next tick reads; the mark may then pass their slots (the Cloudflare
    /// tick object does, in the same request as `tick_end`). Otherwise
    /// (the default: the other stores keep every wake in its record until
    /// a write clears it) the mark stays before the earliest slot left.
    fn leave(&self, _planned: &[(&str, Timestamp)], _woken: &[&str]) -> bool {
        false
    }

    /// Whether [`TickIndex::tick_end`] writes the mark and nothing else,
    /// so that a tick that planned no slot may leave a fresh mark where it
    /// is (the old mark stays true, and the next tick plans the window
    /// again and finds the same nothing). True where the wakes live in the
    /// records, cleared by the records' own writes (the default). The
    /// Cloudflare tick object also lets go, at `tick_end`, of the woken
    /// jobs it handed out, and says no.
    fn tick_end_moves_only_the_mark(&self) -> bool {
        true
    }
}

/// The newest format of an effect ledger entry this build reads (and the
/// one it writes, which leaves the number out: absent means 1).
pub const EFFECT_FORMAT: u32 = 1;

/// One entry of the effect ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StoredEffect")]
pub struct EffectRecord {
    /// The effect's key: `job@slot/name` (see
    /// [`JobContext::effect_key`](super::JobContext::effect_key)).
    pub key: String,
    /// The worker whose run holds or did the effect.
    pub owner: String,
    /// That run's fence.
    pub fence: u64,
    /// In progress or done.
    #[serde(flatten)]
    pub state: EffectState,
}

/// Written inside [`EffectRecord`] (read back through `StoredEffect`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum EffectState {
    /// Someone is doing it; the hold lapses at `expires_at`.
    InProgress {
        /// When the hold lapses and another run may take the effect over.
        #[serde(with = "crate::instant::text")]
        expires_at: Timestamp,
    },
    /// Done: never again for this key.
    Done {
        /// The result the effect returned, handed to later runs instead of
        /// doing it again.
        result: String,
        /// When it was recorded as done.
        #[serde(with = "crate::instant::text")]
        done_at: Timestamp,
    },
}

/// How long a done effect is kept before a store may delete its entry (a
/// sweep, a TTL), unless the store is told otherwise: far longer than any
/// retry of a slot.
pub const DEFAULT_EFFECT_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

impl EffectRecord {
    /// When a store may delete this entry (its sweep, its TTL), the one
    /// rule every store keeps: a hold when it lapses (no entry then reads
    /// as a lapsed hold to [`decide_begin`]: another run may take the
    /// effect over either way), a done effect `retention` after it was done
    /// (a retry of its slot later than that would do it again, so the
    /// retention is far longer than any retry). Saturates at
    /// [`Timestamp::MAX`].
    pub fn sweep_at(&self, retention: Duration) -> Timestamp {
        match &self.state {
            EffectState::InProgress { expires_at } => *expires_at,
            EffectState::Done { done_at, .. } => {
                let retention =
                    jiff::SignedDuration::try_from(retention).unwrap_or(jiff::SignedDuration::MAX);
                done_at.checked_add(retention).unwrap_or(Timestamp::MAX)
            }
        }
    }
}

/// [`EffectRecord`] as stored, with the state's fields beside the key's
/// (`"state": "done", "result": …`): a plain struct, for the reason given at
/// `StoredRun` (serde's `flatten` and `tag` buffer through `Content`).
#[derive(Deserialize)]
struct StoredEffect {
    /// The entry's format: absent in format 1 (every entry written so
    /// far). A later layout writes its number here, and this build refuses
    /// what it cannot read rather than misreading it (and never writes
    /// over an entry it could not read: every write of an entry follows a
    /// read of it).
    #[serde(default)]
    format: Option<u64>,
    key: String,
    owner: String,
    fence: u64,
    state: EffectStateKind,
    #[serde(default)]
    #[serde(with = "crate::instant::text::option")]
    expires_at: Option<Timestamp>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    #[serde(with = "crate::instant::text::option")]
    done_at: Option<Timestamp>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum EffectStateKind {
    InProgress,
    Done,
}

impl TryFrom<StoredEffect> for EffectRecord {
    type Error = String;
    fn try_from(e: StoredEffect) -> Result<EffectRecord, String> {
        if let Some(format) = e.format.filter(|f| *f > u64::from(EFFECT_FORMAT)) {
            return Err(format!(
                "a ledger entry of format {format}, written by a newer cronslot (this build reads format {EFFECT_FORMAT} and older): upgrade cronslot"
            ));
        }
        let missing = |field: &str| format!("a ledger entry without {field:?}");
        let state = match e.state {
            EffectStateKind::InProgress => EffectState::InProgress {
                expires_at: e.expires_at.ok_or_else(|| missing("expires_at"))?,
            },
            EffectStateKind::Done => EffectState::Done {
                result: e.result.ok_or_else(|| missing("result"))?,
                done_at: e.done_at.ok_or_else(|| missing("done_at"))?,
            },
        };
        Ok(EffectRecord {
            key: e.key,
            owner: e.owner,
            fence: e.fence,
            state,
        })
    }
}

/// The answer to "may I do this effect?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EffectBegin {
    /// Go ahead, then call `finish_effect`.
    Acquired,
    /// Already done by an earlier run: here is its result; do not repeat it.
    AlreadyDone {
        /// The result recorded when it was done.
        result: String,
    },
    /// Another live run (a different owner with a newer or equal fence)
    /// holds it.
    Held {
        /// The worker holding it.
        owner: String,
        /// The fence of the run holding it.
        fence: u64,
        /// When its hold lapses.
        #[serde(with = "crate::instant::text")]
        expires_at: Timestamp,
    },
    /// A newer fence holds or did it: this run is stale.
    Superseded {
        /// The newer fence: the ledger entry's, or, when the run no longer
        /// holds a live lease, the job's latest fence.
        fence: u64,
    },
}

/// The ledger rule, shared by every store so they agree exactly: what
/// `begin` does given the current entry (if any). Returns the decision and
/// the entry to write (if any).
pub fn decide_begin(
    current: Option<&EffectRecord>,
    key: &str,
    owner: &str,
    fence: u64,
    now: Timestamp,
    hold: Duration,
) -> (EffectBegin, Option<EffectRecord>) {
    let hold = jiff::SignedDuration::try_from(hold).unwrap_or(jiff::SignedDuration::MAX);
    let fresh = EffectRecord {
        key: key.to_string(),
        owner: owner.to_string(),
        fence,
        state: EffectState::InProgress {
            expires_at: now.checked_add(hold).unwrap_or(Timestamp::MAX),
        },
    };
    match current {
        None => (EffectBegin::Acquired, Some(fresh)),
        Some(rec) => match &rec.state {
            EffectState::Done { result, .. } => (
                EffectBegin::AlreadyDone {
                    result: result.clone(),
                },
                None,
            ),
            EffectState::InProgress { expires_at } => {
                if rec.fence > fence {
                    (EffectBegin::Superseded { fence: rec.fence }, None)
                } else if *expires_at <= now || (rec.fence == fence && rec.owner == owner) {
                    // An expired hold belongs to a run that died (its hold
                    // ends with its lease); the same owner and fence is this
                    // run trying again. A live hold of a lower fence (a run
                    // superseded by `replace` that may still be working)
                    // is waited out rather than raced.
                    (EffectBegin::Acquired, Some(fresh))
                } else {
                    (
                        EffectBegin::Held {
                            owner: rec.owner.clone(),
                            fence: rec.fence,
                            expires_at: *expires_at,
                        },
                        None,
                    )
                }
            }
        },
    }
}

/// The answer to "I did it".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EffectFinish {
    /// Recorded as done (or had already been, by the same fence with the
    /// same result).
    Recorded,
    /// The entry is held by another fence (or missing): nothing written.
    NotHeld,
}

/// The ledger rule for `finish`: only the holder's fence may mark it done.
pub fn decide_finish(
    current: Option<&EffectRecord>,
    fence: u64,
    result: &str,
    now: Timestamp,
) -> (EffectFinish, Option<EffectRecord>) {
    match current {
        // Finishing again what this fence already finished (an answer that
        // was lost on the way back) is recorded, not refused.
        Some(rec)
            if rec.fence == fence
                && matches!(&rec.state, EffectState::Done { result: r, .. } if r == result) =>
        {
            (EffectFinish::Recorded, None)
        }
        Some(rec) if rec.fence == fence && matches!(rec.state, EffectState::InProgress { .. }) => (
            EffectFinish::Recorded,
            Some(EffectRecord {
                state: EffectState::Done {
                    result: result.to_string(),
                    done_at: now,
                },
                ..rec.clone()
            }),
        ),
        _ => (EffectFinish::NotHeld, None),
    }
}

/// Most bytes an effect's result may have.
pub const MAX_EFFECT_RESULT_BYTES: usize = 1024;

/// A store-backed record of effects done, keyed by slot and effect name:
/// an effect recorded as done is not done again by a retry.
pub trait EffectLedger {
    /// Asks to start the effect `key` for the run `owner`/`fence`, holding
    /// it for `hold` from `now`: applies [`decide_begin`] to the entry
    /// atomically.
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError>;

    /// Records the effect `key` as done with `result`, if `fence` holds it:
    /// applies [`decide_finish`] to the entry atomically.
    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError>;

    /// The entry of `key`, if there is one.
    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_at_the_least_string_after_all_its_extensions() {
        assert_eq!(prefix_end("invoice/t-"), Some("invoice/t.".to_string()));
        assert_eq!(prefix_end("a"), Some("b".to_string()));
        assert_eq!(prefix_end(""), None);
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        // The last char cannot grow: the one before it does.
        assert_eq!(prefix_end("a\u{10FFFF}"), Some("b".to_string()));
        // The surrogates are no chars: the next char after them.
        assert_eq!(prefix_end("\u{D7FF}"), Some("\u{E000}".to_string()));
        let end = prefix_end("job/").expect("an end");
        for name in ["job/", "job/a", "job/\u{10FFFF}\u{10FFFF}"] {
            assert!(name < end.as_str(), "{name:?}");
        }
        assert!("job0" >= end.as_str());
    }

    #[test]
    fn an_entry_may_go_when_its_hold_lapses_or_its_retention_after_done() {
        let t: Timestamp = "2026-03-08T07:00:00.5Z".parse().expect("valid");
        let mut record = EffectRecord {
            key: "k".into(),
            owner: "w".into(),
            fence: 1,
            state: EffectState::InProgress { expires_at: t },
        };
        assert_eq!(record.sweep_at(DEFAULT_EFFECT_RETENTION), t);
        record.state = EffectState::Done {
            result: "r".into(),
            done_at: t,
        };
        let thirty_days: Timestamp = "2026-04-07T07:00:00.5Z".parse().expect("valid");
        assert_eq!(record.sweep_at(DEFAULT_EFFECT_RETENTION), thirty_days);
        assert_eq!(record.sweep_at(Duration::MAX), Timestamp::MAX, "saturates");
    }

    #[test]
    fn ledger_entries_keep_their_flat_layout_and_round_trip() {
        let t: Timestamp = "2026-03-08T07:00:00Z".parse().expect("valid");
        let cases = [
            (
                EffectState::InProgress { expires_at: t },
                r#"{"key":"k","owner":"w","fence":3,"state":"in_progress","expires_at":"2026-03-08T07:00:00Z"}"#,
            ),
            (
                EffectState::Done {
                    result: "r".into(),
                    done_at: t,
                },
                r#"{"key":"k","owner":"w","fence":3,"state":"done","result":"r","done_at":"2026-03-08T07:00:00Z"}"#,
            ),
        ];
        for (state, text) in cases {
            let record = EffectRecord {
                key: "k".into(),
                owner: "w".into(),
                fence: 3,
                state,
            };
            assert_eq!(serde_json::to_string(&record).expect("serialises"), text);
            let back: EffectRecord = serde_json::from_str(text).expect("reads back");
            assert_eq!(back, record);
        }
        let e = serde_json::from_str::<EffectRecord>(
            r#"{"key":"k","owner":"w","fence":3,"state":"done","result":"r"}"#,
        )
        .expect_err("no done_at")
        .to_string();
        assert!(e.contains("a ledger entry without \"done_at\""), "{e}");
        // Format 1 says so or not; a newer one is refused, naming both.
        let current = r#"{"format":1,"key":"k","owner":"w","fence":3,"state":"done","result":"r","done_at":"2026-03-08T07:00:00Z"}"#;
        assert!(serde_json::from_str::<EffectRecord>(current).is_ok());
        let e =
            serde_json::from_str::<EffectRecord>(&current.replace("\"format\":1", "\"format\":2"))
                .expect_err("newer")
                .to_string();
        assert!(
            e.contains("format 2, written by a newer cronslot")
                && e.contains("this build reads format 1"),
            "{e}"
        );
    }
}
