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
//! An application enqueues a keyed run inside its own transaction on the
//! store's file with [`SqliteStore::enqueue_run_in`] (this crate
//! re-exports [`rusqlite`]): the run exists if and only if the transaction
//! commits (docs/guide/runs-in-a-transaction.md).
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

mod ledger;
mod location;
mod records;
mod schema;
mod tick;
mod txn;
mod wake;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cronslot_core::coord::decide::migrated_wake;
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState, JobState, PutResult,
    RecordWrite, StateStore, StoreError, StoreErrorKind, TickIndex, TickStart, Version, Versioned,
    decide_begin, decide_finish, decode_state, encode_state, prefix_end,
};
use cronslot_store_kit::{OpenOptions, UrlStore};
use jiff::Timestamp;
use rusqlite::ffi::ErrorCode;
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};

pub use location::{MISSING, SqliteLocation, parse_sqlite_location};
/// The SQLite binding this store is built on: an application that
/// enqueues runs in its own transactions ([`SqliteStore::enqueue_run_in`])
/// uses this one, so that its `Transaction` is the type the store takes.
pub use rusqlite;
pub use wake::WAKE_CHECK_PERIOD;

use schema::init_schema;

/// The layout of the tables, as recorded in `schema_meta`. A file with a
/// higher number was written by a newer cronslot and is refused.
pub const STORE_SCHEMA_VERSION: i64 = 3;

/// How long an operation waits for another connection's write lock before
/// it reports the store unavailable. Transactions hold the lock for
/// milliseconds, so five seconds means something is wrong (a process
/// stopped inside a transaction, a very slow disk), not mere contention.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// SQLite's clock, for the informational `updated_at` columns only: no
/// decision reads them (decisions use the caller's `now`).
const SQL_NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

pub use cronslot_core::coord::LocationError;

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
    /// The wake watcher, once a runner asked for it (wake.rs).
    wakes: wake::Wakes,
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
                wakes: wake::Wakes::default(),
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
                wakes: wake::Wakes::default(),
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
    /// it conflicts), one per tick start or end, and those of a sweep of
    /// the effect ledger ([`SqliteStore::sweep_expired`]). Transaction
    /// control is not counted.
    pub fn statements(&self) -> u64 {
        self.inner.statements.load(Ordering::Relaxed)
    }

    fn count(&self, n: u64) {
        self.inner.statements.fetch_add(n, Ordering::Relaxed);
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
                    // A transaction that read before it wrote, and whose
                    // snapshot another connection has since written past
                    // (an application's deferred transaction): waiting
                    // cannot help, SQLite answers at once.
                    ErrorCode::DatabaseBusy
                        if err.extended_code == rusqlite::ffi::SQLITE_BUSY_SNAPSHOT =>
                    {
                        (
                            StoreErrorKind::Unavailable,
                            format!(
                                "{detail} (another connection wrote since this transaction read, \
                                 so it cannot write)"
                            ),
                        )
                    }
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
