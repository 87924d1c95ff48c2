//! The wake signal on SQLite (docs/design.md §12, "Keyed runs"). SQLite
//! has no server to push a notification, and several processes share the
//! file, so the store watches it: one thread per store (all its clones
//! together), with a connection of its own, asks every
//! [`WAKE_CHECK_PERIOD`] for `PRAGMA data_version`, which reads no table
//! and changes only when another connection (another process, or this
//! process's store connection) committed. When it changed, one statement
//! over the wake index's partial index reads the due records (as a tick
//! does, earliest first, at most a tick's worth): if one was not due at the
//! last look (an enqueued run, a trigger, a redrive, a retry whose time
//! came), the runners are woken. A record that stays due (a slot held back
//! by a running lease) wakes them once, not at every commit. Idle, that is four `PRAGMA`s a second and no table read; these
//! statements are counted apart ([`SqliteStore::wake_statements`]), not
//! among the store's [`SqliteStore::statements`].

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use cronslot_store_kit::{WakeSender, WakeSignal, wake_channel};

use super::*;

/// How often the watcher asks whether another connection committed.
pub const WAKE_CHECK_PERIOD: Duration = Duration::from_millis(250);

/// The most due records one look reads (the most a tick takes); a record
/// that comes due behind as many others is found by the poll.
const MAX_DUE_SEEN: usize = 1000;

/// What the store keeps of its watcher.
#[derive(Default)]
pub(crate) struct Wakes {
    signal: OnceLock<WakeSignal>,
    statements: Arc<AtomicU64>,
}

impl SqliteStore {
    /// The store's wake signal: it fires within about
    /// [`WAKE_CHECK_PERIOD`] of a commit (by any process, this one
    /// included) that made a record due now. The first call starts the one
    /// watching thread every clone of this store shares; it ends once no
    /// signal is left. `None` for an in-memory store, which no other
    /// connection can write.
    pub fn wake_signal(&self) -> Option<WakeSignal> {
        let path = self.inner.path.clone()?;
        let wakes = &self.inner.wakes;
        let signal = wakes.signal.get_or_init(|| {
            let (tx, signal) = wake_channel();
            let watcher = Watcher {
                path: path.clone(),
                busy_timeout: self.inner.busy_timeout,
                statements: Arc::clone(&wakes.statements),
            };
            let started = std::thread::Builder::new()
                .name("cronslot-sqlite-wake".to_string())
                .spawn(move || watcher.run(&tx));
            if let Err(e) = started {
                // The signal then never fires: the runners poll, as they
                // would without it.
                let (tx, signal) = wake_channel();
                tx.lost(format!(
                    "SQLite store {}: cannot start the thread that watches for wakes: {e}",
                    path.display()
                ));
                return signal;
            }
            signal
        });
        Some(signal.clone())
    }

    /// How many statements the wake watcher has run (a `PRAGMA
    /// data_version` every [`WAKE_CHECK_PERIOD`], and one read of the wake
    /// index after each change), apart from [`SqliteStore::statements`].
    pub fn wake_statements(&self) -> u64 {
        self.inner.wakes.statements.load(Ordering::Relaxed)
    }
}

struct Watcher {
    path: PathBuf,
    busy_timeout: Duration,
    statements: Arc<AtomicU64>,
}

impl Watcher {
    /// Watches until every signal is gone (the store holds one, so at the
    /// latest when the store is dropped).
    fn run(self, tx: &WakeSender) {
        let mut conn: Option<Connection> = None;
        let mut version: Option<i64> = None;
        let mut due = HashSet::new();
        while !tx.is_closed() {
            std::thread::sleep(WAKE_CHECK_PERIOD);
            let c = match conn.take() {
                Some(c) => c,
                None => match self.open() {
                    Ok(c) => {
                        // Whatever came while not watching: tick once.
                        tx.listening();
                        version = None;
                        c
                    }
                    Err(e) => {
                        tx.lost(e.message);
                        continue;
                    }
                },
            };
            match self.look(&c, &mut version, Timestamp::now(), &mut due) {
                Ok(true) => tx.wake(),
                Ok(false) => {}
                Err(e) => {
                    tx.lost(e.message);
                    continue;
                }
            }
            conn = Some(c);
        }
    }

    fn where_(&self) -> Where<'_> {
        Where(Some(&self.path))
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let where_ = self.where_();
        // Never creates: the store made the file. Read-write, because a
        // reader of a WAL file may need to set up its shared memory.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags)
            .map_err(|e| where_.error("opening a connection to watch for wakes", &e))?;
        conn.busy_timeout(self.busy_timeout)
            .map_err(|e| where_.error("setting the busy timeout", &e))?;
        Ok(conn)
    }

    /// Whether a commit since the last look made a record due: the due
    /// records (at most [`MAX_DUE_SEEN`], earliest first, as a tick reads
    /// them) hold one that was not due at the last look.
    fn look(
        &self,
        conn: &Connection,
        version: &mut Option<i64>,
        now: Timestamp,
        due: &mut HashSet<String>,
    ) -> Result<bool, StoreError> {
        let where_ = self.where_();
        self.statements.fetch_add(1, Ordering::Relaxed);
        let current: i64 = conn
            .query_row("PRAGMA data_version", [], |row| row.get(0))
            .map_err(|e| where_.error("watching for wakes (data_version)", &e))?;
        if version.replace(current) == Some(current) {
            return Ok(false);
        }
        self.statements.fetch_add(1, Ordering::Relaxed);
        let doing = "watching for wakes (the due records)";
        let mut stmt = conn
            .prepare_cached(
                "SELECT job FROM job_state WHERE wake_at <= ?1 ORDER BY wake_at, job LIMIT ?2",
            )
            .map_err(|e| where_.error(doing, &e))?;
        let limit = i64::try_from(MAX_DUE_SEEN).unwrap_or(i64::MAX);
        let now_due = stmt
            .query_map((nanos(now), limit), |row| row.get::<_, String>(0))
            .map_err(|e| where_.error(doing, &e))?
            .collect::<Result<HashSet<String>, _>>()
            .map_err(|e| where_.error(doing, &e))?;
        let fresh = now_due.iter().any(|job| !due.contains(job));
        *due = now_due;
        Ok(fresh)
    }
}
