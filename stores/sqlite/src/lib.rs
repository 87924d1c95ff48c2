//! cronslot-sqlite: [`SqliteStore`], the compare-and-set store and effect ledger of docs/design.md §5
//! in one SQLite file, the embedded default on a plain machine.
//!
//! Several processes may open the same file: every read-decide-write runs
//! in one `BEGIN IMMEDIATE` transaction, which takes SQLite's write lock
//! before reading, so two writers never both read a version and then both
//! write over it. A writer that finds the lock taken waits (`busy_timeout`)
//! instead of failing; only a wait longer than that becomes
//! [`StoreErrorKind::Unavailable`].
//!
//! The operations are `async fn` because the contract is, but they run
//! inline and block the calling thread. That is acceptable here: each one
//! is a short transaction on a local file (microseconds to a few
//! milliseconds, one fsync per write), and the only unbounded wait, on
//! another process's lock, is capped by the busy timeout. Handing them to a
//! thread pool would need a runtime, which core deliberately has none of.
//!
//! Records are kept as the JSON text of [`encode_state`] so that a table
//! browser shows them and [`decode_state`] migrates old layouts on read.

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cronslot_core::coord::decide::migrated_wake;
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState, JobState, PutResult,
    StateStore, StoreError, StoreErrorKind, TickIndex, TickStart, Version, Versioned, decide_begin,
    decide_finish, decode_state, encode_state,
};
use cronslot_store_kit::{OpenOptions, UrlStore};
use jiff::Timestamp;
use rusqlite::ffi::ErrorCode;
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};

/// The layout of the tables, as recorded in `schema_meta`. A file with a
/// higher number was written by a newer cronslot and is refused.
pub const STORE_SCHEMA_VERSION: i64 = 2;

/// How long an operation waits for another connection's write lock before
/// it reports the store unavailable. Transactions hold the lock for
/// milliseconds, so five seconds means something is wrong (a process
/// stopped inside a transaction, a very slow disk), not mere contention.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The tables of schema version 1. `STRICT` makes SQLite refuse a value of
/// the wrong type instead of storing it, so what the code reads back has
/// the type it wrote.
const SCHEMA_V1: &str = "
CREATE TABLE schema_meta (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    schema_version INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE job_state (
    job TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    state TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE TABLE effects (
    key TEXT PRIMARY KEY NOT NULL,
    record TEXT NOT NULL,
    expires_at TEXT,
    updated_at TEXT NOT NULL
) STRICT;
";

/// Version 2: each record's wake, indexed, and the tick mark, so that a
/// tick reads only what is due (docs/design.md §11). Instants are Unix
/// nanoseconds. The index is partial: most records have no wake.
const SCHEMA_V2: &str = "
ALTER TABLE job_state ADD COLUMN wake_at INTEGER;
CREATE INDEX job_state_wake ON job_state (wake_at) WHERE wake_at IS NOT NULL;
CREATE TABLE tick_mark (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    mark INTEGER NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
";

/// SQLite's clock, for the informational `updated_at` columns only: no
/// decision reads them (decisions use the caller's `now`).
const SQL_NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

pub use cronslot_core::coord::LocationError;

const LOCATION_SYNTAX: &str = "expected sqlite:PATH (for example sqlite:cronslot.db) or sqlite://PATH (sqlite:///var/lib/cronslot.db for an absolute path)";

/// Parses the CLI's `--store` syntax for SQLite: `sqlite:PATH` or
/// `sqlite://PATH`, scheme in any case. The rest is a file path taken
/// literally (no `?query`, no `~`): `sqlite://data/c.db` is the relative
/// `data/c.db`, `sqlite:///var/c.db` the absolute `/var/c.db`.
pub fn parse_sqlite_location(input: &str) -> Result<PathBuf, LocationError> {
    let error = |message: String| LocationError {
        input: input.to_string(),
        message,
    };
    let trimmed = input.trim();
    let Some((scheme, rest)) = trimmed.split_once(':') else {
        let hint = if trimmed.is_empty() {
            String::new()
        } else {
            format!("; did you mean sqlite:{trimmed}?")
        };
        return Err(error(format!(
            "store {input:?} has no scheme: {LOCATION_SYNTAX}{hint}"
        )));
    };
    if !scheme.eq_ignore_ascii_case("sqlite") {
        return Err(error(format!(
            "store {input:?} is not a SQLite store (scheme {scheme:?}): {LOCATION_SYNTAX}"
        )));
    }
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() {
        return Err(error(format!(
            "store {input:?} names no file: {LOCATION_SYNTAX}"
        )));
    }
    if path == ":memory:" {
        return Err(error(format!(
            "store {input:?} is in memory, which lives and dies with one process and cannot be shared: {LOCATION_SYNTAX}"
        )));
    }
    Ok(PathBuf::from(path))
}

/// A SQLite-backed store. Clones share one connection (and so one lock), so
/// a runner can hand it to several threads; another process opens its own
/// with [`SqliteStore::open`] and coordinates through the file.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Mutex<Connection>,
    /// `None` for an in-memory store.
    path: Option<PathBuf>,
    busy_timeout: Duration,
    /// SQL statements that read or wrote data, for tests that count a
    /// tick's cost ([`SqliteStore::statements`]).
    statements: AtomicU64,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("busy_timeout", &self.inner.busy_timeout)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the store at `path`, creating the file and its tables if
    /// missing, with [`DEFAULT_BUSY_TIMEOUT`].
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        Self::open_with_timeout(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// Like [`SqliteStore::open`], waiting at most `busy_timeout` for
    /// another connection's lock before an operation reports
    /// [`StoreErrorKind::Unavailable`].
    pub fn open_with_timeout(
        path: impl AsRef<Path>,
        busy_timeout: Duration,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        check_path(path)?;
        let where_ = Where(Some(path));
        // No SQLITE_OPEN_URI: the path is a file name, even with `?` in it.
        // NO_MUTEX: the connection sits behind our own mutex.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags)
            .map_err(|e| where_.error("opening the database", &e))?;
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            // SQLite silently falls back to read-only for a write-protected
            // file; every claim would then fail, so say it now.
            return Err(StoreError::other(format!(
                "{where_}: the file is not writable (opened read-only); cronslot writes every claim"
            )));
        }
        conn.busy_timeout(busy_timeout)
            .map_err(|e| where_.error("setting the busy timeout", &e))?;
        init_schema(&mut conn, where_)?;
        // WAL lets readers proceed while one process writes. It is
        // persistent in the file, so only the first open changes it. Where
        // SQLite cannot use WAL (a VFS without shared memory) it answers
        // with the mode it kept, the rollback journal, which is just as
        // atomic and only less concurrent, so that is not an error.
        let _mode: String = retry_while_busy(busy_timeout, || {
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        })
        .map_err(|e| where_.error("switching to WAL journal mode", &e))?;
        // FULL: a claim that was reported committed survives a power cut, so
        // a slot that ran is never handed out again. One fsync per write is
        // cheap at scheduler rates.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| where_.error("setting synchronous = FULL", &e))?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                path: Some(path.to_path_buf()),
                busy_timeout,
                statements: AtomicU64::new(0),
            }),
        })
    }

    /// A private in-memory store (for tests): gone when the last clone is
    /// dropped, invisible to other processes.
    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        let where_ = Where(None);
        let mut conn =
            Connection::open_in_memory().map_err(|e| where_.error("opening the database", &e))?;
        init_schema(&mut conn, where_)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                path: None,
                busy_timeout: Duration::ZERO,
                statements: AtomicU64::new(0),
            }),
        })
    }

    /// The file this store lives in; `None` when in memory.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    fn where_(&self) -> Where<'_> {
        Where(self.inner.path.as_deref())
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a transaction open
        // (dropping a `Transaction` rolls it back), so the connection is
        // still sound: keep using it rather than poison every later call.
        self.inner.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many SQL statements that read or write data this store (and its
    /// clones) have run: one per read, one per conditional write (two when
    /// it conflicts), one per tick start or end. Transaction control is
    /// not counted.
    pub fn statements(&self) -> u64 {
        self.inner.statements.load(Ordering::Relaxed)
    }

    fn count(&self, n: u64) {
        self.inner.statements.fetch_add(n, Ordering::Relaxed);
    }

    fn tick_start_now(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let where_ = self.where_();
        let doing = "reading the tick mark and the woken jobs";
        let conn = self.lock();
        self.count(1);
        // One statement: the mark's row (job NULL), then the woken jobs.
        let mut stmt = conn
            .prepare_cached(
                "SELECT NULL, mark FROM tick_mark WHERE singleton = 1 \
                 UNION ALL SELECT * FROM (SELECT job, NULL FROM job_state \
                 WHERE wake_at <= ?1 ORDER BY wake_at, job LIMIT ?2)",
            )
            .map_err(|e| where_.error(doing, &e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map((nanos(now), limit), |row| {
                Ok((
                    row.get::<_, Option<String>>(0)?,
                    row.get::<_, Option<i64>>(1)?,
                ))
            })
            .map_err(|e| where_.error(doing, &e))?;
        let mut start = TickStart {
            mark: None,
            now,
            woken: Vec::new(),
            carried: Vec::new(),
        };
        for row in rows {
            match row.map_err(|e| where_.error(doing, &e))? {
                (Some(job), _) => start.woken.push(job),
                (None, Some(mark)) => start.mark = Some(from_nanos(mark)),
                (None, None) => return Err(where_.corrupt("tick_mark", "the mark is NULL")),
            }
        }
        Ok(start)
    }

    fn tick_end_now(&self, mark: Timestamp) -> Result<(), StoreError> {
        let where_ = self.where_();
        let doing = "moving the tick mark";
        let conn = self.lock();
        self.count(1);
        let sql = format!(
            "INSERT INTO tick_mark (singleton, mark, updated_at) VALUES (1, ?1, {SQL_NOW}) \
             ON CONFLICT (singleton) DO UPDATE SET mark = excluded.mark, \
             updated_at = excluded.updated_at WHERE excluded.mark > tick_mark.mark"
        );
        conn.execute(&sql, [nanos(mark)])
            .map_err(|e| where_.error(doing, &e))?;
        Ok(())
    }

    fn get_now(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        let conn = self.lock();
        self.count(1);
        read_state(&conn, self.where_(), job)
    }

    fn put_now(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        let where_ = self.where_();
        if state.job != job {
            // A caller's bug; storing it would leave a record that every
            // later read refuses as corrupt.
            return Err(StoreError::other(format!(
                "{where_}: refusing to store the state of job {:?} as job {job:?}",
                state.job
            )));
        }
        let doing = || format!("writing the state of job {job:?}");
        let mut conn = self.lock();
        let tx = begin_immediate(&mut conn, where_, &doing)?;
        let text = encode_state(state);
        let wake = state.wake_at.map(nanos);
        self.count(1);
        let written: Option<Version> = match expected {
            None => {
                let sql = format!(
                    "INSERT INTO job_state (job, version, state, wake_at, updated_at) \
                     VALUES (?1, 1, ?2, ?3, {SQL_NOW}) ON CONFLICT (job) DO NOTHING"
                );
                let changed = tx
                    .execute(&sql, (job, &text, wake))
                    .map_err(|e| where_.error(&doing(), &e))?;
                (changed == 1).then_some(1)
            }
            // A version beyond SQLite's integer range was never issued by
            // this store: it cannot match, so it is a conflict.
            Some(expected) => match i64::try_from(expected) {
                Err(_) => None,
                Ok(expected_sql) => {
                    let next = expected_sql.checked_add(1).ok_or_else(|| {
                        StoreError::other(format!(
                            "{where_}: the version of job {job:?} cannot grow past {expected}"
                        ))
                    })?;
                    let sql = format!(
                        "UPDATE job_state SET version = ?3, state = ?2, wake_at = ?5, \
                         updated_at = {SQL_NOW} WHERE job = ?1 AND version = ?4"
                    );
                    let changed = tx
                        .execute(&sql, (job, &text, next, expected_sql, wake))
                        .map_err(|e| where_.error(&doing(), &e))?;
                    // `next` is positive, so it converts back.
                    (changed == 1).then(|| expected.saturating_add(1))
                }
            },
        };
        if let Some(version) = written {
            commit(tx, where_, &doing)?;
            return Ok(PutResult::Written(version));
        }
        // Still inside the transaction, so this is the record that beat us,
        // not a later one; dropping `tx` then rolls back (nothing written).
        self.count(1);
        let current = read_state(&tx, where_, job)?;
        Ok(PutResult::Conflict(current.map(Box::new)))
    }

    fn jobs_now(&self) -> Result<Vec<String>, StoreError> {
        let where_ = self.where_();
        let conn = self.lock();
        let doing = "listing jobs";
        // SQLite's BINARY collation compares UTF-8 bytes, which is the
        // order of Rust's `String`.
        let mut stmt = conn
            .prepare("SELECT job FROM job_state ORDER BY job")
            .map_err(|e| where_.error(doing, &e))?;
        let rows = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(|e| where_.error(doing, &e))?;
        rows.map(|r| r.map_err(|e| where_.error(doing, &e)))
            .collect()
    }

    fn begin_effect_now(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        let where_ = self.where_();
        let doing = || format!("beginning effect {key:?}");
        let mut conn = self.lock();
        let tx = begin_immediate(&mut conn, where_, &doing)?;
        let current = read_effect(&tx, where_, key)?;
        let (decision, write) = decide_begin(current.as_ref(), key, owner, fence, now, hold);
        if let Some(record) = write {
            write_effect(&tx, where_, &record, &doing)?;
            commit(tx, where_, &doing)?;
        }
        Ok(decision)
    }

    fn finish_effect_now(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        let where_ = self.where_();
        let doing = || format!("finishing effect {key:?}");
        let mut conn = self.lock();
        let tx = begin_immediate(&mut conn, where_, &doing)?;
        let current = read_effect(&tx, where_, key)?;
        let (decision, write) = decide_finish(current.as_ref(), fence, result, now);
        if let Some(record) = write {
            write_effect(&tx, where_, &record, &doing)?;
            commit(tx, where_, &doing)?;
        }
        Ok(decision)
    }

    fn read_effect_now(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        let conn = self.lock();
        read_effect(&conn, self.where_(), key)
    }
}

impl StateStore for SqliteStore {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        self.get_now(job)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.put_now(job, state, expected)
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.jobs_now()
    }
}

impl TickIndex for SqliteStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.tick_start_now(now, limit)
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.tick_end_now(mark)
    }
}

/// An instant as Unix nanoseconds, saturating outside 1678–2262 (no slot
/// or lease of a real deployment is out there).
fn nanos(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanosecond()).unwrap_or(if t.as_second() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

fn from_nanos(n: i64) -> Timestamp {
    Timestamp::from_nanosecond(i128::from(n)).unwrap_or(Timestamp::MAX)
}

impl EffectLedger for SqliteStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.begin_effect_now(key, owner, fence, now, hold)
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        self.finish_effect_now(key, fence, result, now)
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.read_effect_now(key)
    }
}

/// Names the store in messages: the file, or "in-memory SQLite store".
#[derive(Clone, Copy)]
struct Where<'a>(Option<&'a Path>);

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(path) => write!(f, "SQLite store {}", path.display()),
            None => f.write_str("in-memory SQLite store"),
        }
    }
}

impl Where<'_> {
    /// Classifies a SQLite error: a lock still held after the busy timeout
    /// is worth retrying; a damaged file is corrupt; the rest (permissions,
    /// a full disk, a file that is not a database, a bug) is not.
    fn error(self, doing: &str, e: &rusqlite::Error) -> StoreError {
        let (kind, detail) = match e {
            rusqlite::Error::SqliteFailure(err, message) => {
                let detail = message.clone().unwrap_or_else(|| err.to_string());
                match err.code {
                    ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => (
                        StoreErrorKind::Unavailable,
                        format!(
                            "{detail} (another connection held the lock for longer than the busy timeout)"
                        ),
                    ),
                    ErrorCode::DatabaseCorrupt => (StoreErrorKind::Corrupt, detail),
                    ErrorCode::NotADatabase => (
                        StoreErrorKind::Other,
                        format!("{detail}: the file is not a SQLite database"),
                    ),
                    ErrorCode::CannotOpen => (
                        StoreErrorKind::Other,
                        format!("{detail}: check that the directory exists and is writable"),
                    ),
                    ErrorCode::ReadOnly => (
                        StoreErrorKind::Other,
                        format!("{detail}: the file or its directory is not writable"),
                    ),
                    _ => (StoreErrorKind::Other, detail),
                }
            }
            other => (StoreErrorKind::Other, other.to_string()),
        };
        StoreError::new(kind, format!("{self}: {doing}: {detail}"))
    }

    fn corrupt(self, what: &str, message: impl fmt::Display) -> StoreError {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!("{self}: {what}: {message}"),
        )
    }
}

/// Refuses paths SQLite would misread or fail on with a vague message.
fn check_path(path: &Path) -> Result<(), StoreError> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        return Err(StoreError::other(
            "the SQLite store path is empty; give a file such as cronslot.db",
        ));
    }
    if path.as_os_str() == ":memory:" {
        // SQLite would open a private in-memory database under this name,
        // which no other process could share.
        return Err(StoreError::other(
            "\":memory:\" is not a file: an in-memory store cannot be shared between processes; give a file such as cronslot.db",
        ));
    }
    if path.is_dir() {
        return Err(StoreError::other(format!(
            "SQLite store {shown}: is a directory; give a file inside it, such as {}",
            path.join("cronslot.db").display()
        )));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            let why = if parent.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            return Err(StoreError::other(format!(
                "SQLite store {shown}: cannot create the file: {} {why}",
                parent.display()
            )));
        }
    }
    Ok(())
}

/// The records a migration to schema 2 must give a wake: those whose text
/// shows a waiting run or a live lease (an empty list is written `[]`).
/// A false match (the text inside an error message) costs one wake.
const NEEDS_WAKE: &str = "state LIKE '%\"pending\":[{%' OR state LIKE '%\"leases\":[{%'";

/// Gives each record that needs one its [`migrated_wake`], in the record
/// and in the index, with a new version (a process that read the record
/// before must read it again). A record that does not decode is left as it
/// is: reading it reports it.
fn repair_wakes(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let found: Vec<(String, i64, String)> = tx
        .prepare(&format!(
            "SELECT job, version, state FROM job_state WHERE {NEEDS_WAKE}"
        ))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (job, version, text) in found {
        let Ok(mut state) = decode_state(&job, &text) else {
            continue;
        };
        let Some(wake) = migrated_wake(&state) else {
            continue;
        };
        state.wake_at = Some(wake);
        tx.execute(
            "UPDATE job_state SET version = ?2, state = ?3, wake_at = ?4 WHERE job = ?1",
            rusqlite::params![job, version + 1, encode_state(&state), nanos(wake)],
        )?;
    }
    Ok(())
}

/// Creates the tables in a new file, or checks the schema version of an
/// existing one. One IMMEDIATE transaction, so processes opening a new
/// file at the same moment create it once.
/// Runs `op` again while SQLite answers "busy", until `timeout` has passed.
/// SQLite's busy handler covers ordinary lock waits, but in some states it
/// answers busy at once without calling it: processes that open a new file
/// at the same moment, one of them switching it to WAL while another reads
/// the WAL index, met that in CI ("database is locked" after 0.5 s with a
/// 5 s timeout). Those states pass in milliseconds, so waiting is right.
fn retry_while_busy<T>(
    timeout: Duration,
    mut op: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        match op() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

fn init_schema(conn: &mut Connection, where_: Where<'_>) -> Result<(), StoreError> {
    let doing = || "checking the schema".to_string();
    let tx = begin_immediate(conn, where_, &doing)?;
    let has_meta = tx
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_meta'",
            [],
            |row| row.get::<_, i64>(0),
        )
        .map_err(|e| where_.error(&doing(), &e))?
        > 0;
    if !has_meta {
        let mut stmt = tx
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
            )
            .map_err(|e| where_.error(&doing(), &e))?;
        let tables: Vec<String> = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| where_.error(&doing(), &e))?;
        drop(stmt);
        if !tables.is_empty() {
            // Someone else's database: writing our tables into it would
            // be a surprise for its owner.
            return Err(StoreError::other(format!(
                "{where_}: is a SQLite database but not a cronslot store (it has tables {}); give a new file or a cronslot store",
                tables.join(", ")
            )));
        }
        let created = "creating the tables".to_string();
        tx.execute_batch(SCHEMA_V1)
            .and_then(|()| tx.execute_batch(SCHEMA_V2))
            .map_err(|e| where_.error(&created, &e))?;
        let sql = format!(
            "INSERT INTO schema_meta (singleton, schema_version, created_by, created_at) \
             VALUES (1, ?1, ?2, {SQL_NOW})"
        );
        let created_by = concat!("cronslot-sqlite ", env!("CARGO_PKG_VERSION"));
        tx.execute(&sql, (STORE_SCHEMA_VERSION, created_by))
            .map_err(|e| where_.error(&created, &e))?;
        return commit(tx, where_, &|| created.clone());
    }
    let version: Option<Value> = tx
        .query_row(
            "SELECT schema_version FROM schema_meta WHERE singleton = 1",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(|e| where_.error(&doing(), &e))?;
    match version {
        Some(Value::Integer(v)) if v == STORE_SCHEMA_VERSION => Ok(()),
        Some(Value::Integer(1)) => {
            // Records written before version 2 have no wake yet: those
            // with waiting runs or live leases get one here, in the same
            // transaction (`repair_wakes`); the others need none.
            let migrating = "adding the wake index (store schema 1 to 2)".to_string();
            tx.execute_batch(SCHEMA_V2)
                .and_then(|()| repair_wakes(&tx))
                .and_then(|()| {
                    tx.execute(
                        "UPDATE schema_meta SET schema_version = ?1 WHERE singleton = 1",
                        [STORE_SCHEMA_VERSION],
                    )
                })
                .map_err(|e| where_.error(&migrating, &e))?;
            commit(tx, where_, &|| migrating.clone())
        }
        Some(Value::Integer(v)) if v > STORE_SCHEMA_VERSION => Err(StoreError::other(format!(
            "{where_}: was written by a newer cronslot (store schema {v}; this build knows up to {STORE_SCHEMA_VERSION}); upgrade cronslot or use another file"
        ))),
        // There is no schema before 1; later versions add their
        // migrations above, inside this same transaction.
        Some(Value::Integer(v)) => {
            Err(where_.corrupt("schema_meta", format!("store schema {v} does not exist")))
        }
        Some(other) => Err(where_.corrupt(
            "schema_meta",
            format!("schema_version holds {other:?}, not a number"),
        )),
        None => Err(where_.corrupt("schema_meta", "the table has no row")),
    }
}

/// Starts a transaction that holds the write lock from its first statement:
/// what it reads cannot change before it writes.
fn begin_immediate<'c>(
    conn: &'c mut Connection,
    where_: Where<'_>,
    doing: &dyn Fn() -> String,
) -> Result<Transaction<'c>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| where_.error(&doing(), &e))
}

/// Commits. An I/O error here may come after the commit reached the
/// write-ahead log (a failed fsync), so the write may or may not be
/// there: that is `Ambiguous`, which the coordinator resolves by reading
/// back. Any other failure left nothing written.
fn commit(
    tx: Transaction<'_>,
    where_: Where<'_>,
    doing: &dyn Fn() -> String,
) -> Result<(), StoreError> {
    tx.commit().map_err(|e| {
        let mut err = where_.error(&format!("{}: committing", doing()), &e);
        if matches!(&e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::SystemIoFailure)
        {
            err.kind = StoreErrorKind::Ambiguous;
        }
        err
    })
}

fn read_state(
    conn: &Connection,
    where_: Where<'_>,
    job: &str,
) -> Result<Option<Versioned<JobState>>, StoreError> {
    let row: Option<(Value, Value)> = conn
        .query_row(
            "SELECT version, state FROM job_state WHERE job = ?1",
            [job],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(|e| where_.error(&format!("reading the state of job {job:?}"), &e))?;
    let Some((version, text)) = row else {
        return Ok(None);
    };
    let what = format!("job {job:?}");
    let version = match version {
        Value::Integer(v) => Version::try_from(v)
            .map_err(|_| where_.corrupt(&what, format!("version {v} is negative")))?,
        other => {
            return Err(where_.corrupt(&what, format!("version holds {other:?}, not a number")));
        }
    };
    let Value::Text(text) = text else {
        return Err(where_.corrupt(&what, "the state is not text"));
    };
    // The decode error already names the job.
    let value = decode_state(job, &text)
        .map_err(|e| StoreError::new(StoreErrorKind::Corrupt, format!("{where_}: {e}")))?;
    Ok(Some(Versioned { value, version }))
}

fn read_effect(
    conn: &Connection,
    where_: Where<'_>,
    key: &str,
) -> Result<Option<EffectRecord>, StoreError> {
    let text: Option<Value> = conn
        .query_row("SELECT record FROM effects WHERE key = ?1", [key], |row| {
            row.get(0)
        })
        .optional()
        .map_err(|e| where_.error(&format!("reading effect {key:?}"), &e))?;
    let what = format!("effect {key:?}");
    let text = match text {
        None => return Ok(None),
        Some(Value::Text(text)) => text,
        Some(_) => return Err(where_.corrupt(&what, "the record is not text")),
    };
    let record: EffectRecord = serde_json::from_str(&text)
        .map_err(|e| where_.corrupt(&what, format!("the record cannot be read ({e})")))?;
    if record.key != key {
        return Err(where_.corrupt(
            &what,
            format!("the record belongs to effect {:?}", record.key),
        ));
    }
    Ok(Some(record))
}

fn write_effect(
    tx: &Transaction<'_>,
    where_: Where<'_>,
    record: &EffectRecord,
    doing: &dyn Fn() -> String,
) -> Result<(), StoreError> {
    let text = serde_json::to_string(record).map_err(|e| {
        StoreError::other(format!("{where_}: {}: encoding the record: {e}", doing()))
    })?;
    // Kept beside the record so that expired holds can be found with SQL;
    // a done effect never expires.
    let expires_at = match &record.state {
        EffectState::InProgress { expires_at } => Some(expires_at.to_string()),
        EffectState::Done { .. } => None,
    };
    let sql = format!(
        "INSERT INTO effects (key, record, expires_at, updated_at) VALUES (?1, ?2, ?3, {SQL_NOW}) \
         ON CONFLICT (key) DO UPDATE SET record = excluded.record, \
         expires_at = excluded.expires_at, updated_at = excluded.updated_at"
    );
    tx.execute(&sql, (&record.key, &text, expires_at))
        .map_err(|e| where_.error(&doing(), &e))?;
    Ok(())
}

/// Where a SQLite store is: its file, as `sqlite:PATH` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteLocation(pub PathBuf);

impl fmt::Display for SqliteLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sqlite:{}", self.0.display())
    }
}

/// The error code of a store opened without `create` whose file is not
/// there ([`StoreError::code`]).
pub const MISSING: &str = "missing";

impl UrlStore for SqliteStore {
    const KIND: &'static str = "sqlite";
    const SCHEMES: &'static [&'static str] = &["sqlite"];
    const SYNTAX: &'static str = "sqlite:PATH (for example sqlite:cronslot.db)";
    type Location = SqliteLocation;

    fn parse_location(url: &str) -> Result<SqliteLocation, LocationError> {
        parse_sqlite_location(url).map(SqliteLocation)
    }

    /// Creates the file and its directory when `create` (the default);
    /// else the file must be there: a missing one is an error with code
    /// [`MISSING`], not a new empty file that no runner reads.
    async fn open_at(location: &SqliteLocation, options: OpenOptions) -> Result<Self, StoreError> {
        let path = &location.0;
        if options.creates() {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| {
                    StoreError::other(format!(
                        "SQLite store {}: cannot create the directory {}: {e}",
                        path.display(),
                        parent.display()
                    ))
                })?;
            }
        } else {
            match std::fs::metadata(path) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(StoreError::other(format!(
                        "SQLite store {} does not exist",
                        path.display()
                    ))
                    .with_code(MISSING));
                }
                Err(e) => {
                    return Err(StoreError::other(format!(
                        "SQLite store {}: cannot read it: {e}",
                        path.display()
                    )));
                }
            }
        }
        SqliteStore::open(path)
    }
}
