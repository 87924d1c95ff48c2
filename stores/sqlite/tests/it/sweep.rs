//! The effect ledger's sweep on a SQLite file: what is due goes (a lapsed
//! hold, a done effect past the retention) in bounded batches, each batch
//! two statements over the sweep time's index; what is not due stays (a
//! hold not yet lapsed, a done effect within the retention); and a store
//! of schema 2, whose entries have no sweep time, is migrated and its
//! entries are judged by their records.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{DEFAULT_EFFECT_RETENTION, EffectBegin, EffectFinish, EffectLedger};
use cronslot_sqlite::{STORE_SCHEMA_VERSION, SqliteStore};
use cronslot_store_kit::UrlStore;
use jiff::{SignedDuration, Timestamp};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sweep")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("cronslot.db")
}

fn t0() -> Timestamp {
    "2030-01-01T00:00:00Z".parse().unwrap()
}

fn after(secs: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_secs(secs)).unwrap()
}

const MINUTE: Duration = Duration::from_secs(60);
const DAY: i64 = 86_400;

fn hold(store: &SqliteStore, key: &str, now: Timestamp, hold: Duration) {
    let begun = block_on(store.begin_effect(key, "w", 1, now, hold)).unwrap();
    assert_eq!(begun, EffectBegin::Acquired, "{key}");
}

fn done(store: &SqliteStore, key: &str, now: Timestamp) {
    hold(store, key, now, MINUTE);
    let finished = block_on(store.finish_effect(key, 1, "ok", now)).unwrap();
    assert_eq!(finished, EffectFinish::Recorded, "{key}");
}

fn entries(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("SELECT count(*) FROM effects", [], |r| r.get(0))
        .unwrap()
}

fn sweep(
    store: &SqliteStore,
    now: Timestamp,
    batch: u32,
    max_batches: u32,
) -> Result<u64, cronslot_core::coord::StoreError> {
    block_on(store.sweep_expired(now, batch, max_batches))
}

fn present(store: &SqliteStore, key: &str) -> bool {
    block_on(store.read_effect(key)).unwrap().is_some()
}

/// Nine entries due among thirteen: two batches of two delete four and
/// stop at `max_batches`; the next sweep deletes the other five in batches
/// of 2, 2 and 1 and stops at the short one. Every batch is two statements
/// (no old entries wait for a sweep time). The hold not yet lapsed and the
/// done effects within the retention stay, until their own time.
#[test]
fn the_sweep_deletes_what_is_due_in_bounded_batches() {
    let path = scratch("batches");
    let store = SqliteStore::open(&path).unwrap();
    let long_ago = after(-31 * DAY);
    for i in 0..5 {
        hold(&store, &format!("j@s/lapsed-{i}"), t0(), MINUTE);
    }
    for i in 0..4 {
        done(&store, &format!("j@s/old-{i}"), long_ago);
    }
    hold(&store, "j@s/live", after(60), Duration::from_secs(600));
    for i in 0..3 {
        done(&store, &format!("j@s/recent-{i}"), t0());
    }
    assert_eq!(entries(&path), 13);
    let now = after(120);

    let before = store.statements();
    assert_eq!(sweep(&store, now, 2, 2).unwrap(), 4);
    assert_eq!(store.statements() - before, 2 * 2, "two statements a batch");
    assert_eq!(entries(&path), 9);

    let before = store.statements();
    assert_eq!(
        block_on(UrlStore::sweep_expired(&store, now, 2, 10)).unwrap(),
        5
    );
    assert_eq!(store.statements() - before, 3 * 2, "batches of 2, 2 and 1");
    assert_eq!(entries(&path), 4);
    assert!(present(&store, "j@s/live"), "a hold not yet lapsed stays");
    for i in 0..3 {
        assert!(
            present(&store, &format!("j@s/recent-{i}")),
            "within retention"
        );
    }
    for i in 0..5 {
        assert!(!present(&store, &format!("j@s/lapsed-{i}")));
    }
    for i in 0..4 {
        assert!(!present(&store, &format!("j@s/old-{i}")));
    }
    // Nothing more is due: one batch of two statements finds nothing.
    let before = store.statements();
    assert_eq!(sweep(&store, now, 2, 10).unwrap(), 0);
    assert_eq!(store.statements() - before, 2);
    assert_eq!(sweep(&store, now, 0, 10).unwrap(), 0, "an empty batch");
    assert_eq!(sweep(&store, now, 10, 0).unwrap(), 0, "no batch");

    // The hold goes when it lapses, the done effects their retention
    // after they were done, not a nanosecond before.
    let lapse = after(660);
    assert_eq!(
        sweep(&store, lapse - SignedDuration::from_nanos(1), 10, 10).unwrap(),
        0
    );
    assert_eq!(sweep(&store, lapse, 10, 10).unwrap(), 1);
    let retained = t0()
        .checked_add(SignedDuration::try_from(DEFAULT_EFFECT_RETENTION).unwrap())
        .unwrap();
    assert_eq!(
        sweep(&store, retained - SignedDuration::from_nanos(1), 10, 10).unwrap(),
        0
    );
    assert_eq!(sweep(&store, retained, 10, 10).unwrap(), 3);
    assert_eq!(entries(&path), 0);
    assert!(UrlStore::sweeps(&store), "a runner sweeps a SQLite store");
}

/// A batch reads its part of the index on the sweep time, never the table.
#[test]
fn a_sweep_reads_the_index_not_the_table() {
    let path = scratch("plan");
    drop(SqliteStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        rows.join("; ")
    };
    let due = plan(
        "DELETE FROM effects WHERE key IN (SELECT key FROM effects \
         WHERE sweep_at <= 1 ORDER BY sweep_at LIMIT 2)",
    );
    assert!(
        due.contains("SEARCH effects USING INDEX effects_sweep (sweep_at<?)"),
        "{due}"
    );
    let untimed = plan("SELECT key, record FROM effects WHERE sweep_at IS NULL LIMIT 2");
    assert!(
        untimed.contains("SEARCH effects USING INDEX effects_sweep (sweep_at=?)"),
        "{untimed}"
    );
    for plan in [due, untimed] {
        assert!(!plan.contains("SCAN"), "{plan}");
    }
}

/// A file of store schema 2 (its effects have no sweep time, and done ones
/// were never deleted) is migrated on open: the column and its index are
/// added, the entries left as they are. The sweep gives each its time from
/// its record, a batch at a time, and deletes those that are due: a lapsed
/// hold and a done effect past the retention, not a live hold, a recent
/// done effect, nor an entry whose record does not read.
#[test]
fn a_schema_2_store_is_migrated_and_its_old_entries_are_swept_by_their_records() {
    let path = scratch("schema-2");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_meta (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), \
             schema_version INTEGER NOT NULL, created_by TEXT NOT NULL, created_at TEXT NOT NULL) STRICT;
             CREATE TABLE job_state (job TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL CHECK (version >= 1), \
             state TEXT NOT NULL, updated_at TEXT NOT NULL) STRICT;
             CREATE TABLE effects (key TEXT PRIMARY KEY NOT NULL, record TEXT NOT NULL, expires_at TEXT, \
             updated_at TEXT NOT NULL) STRICT;
             ALTER TABLE job_state ADD COLUMN wake_at INTEGER;
             CREATE INDEX job_state_wake ON job_state (wake_at) WHERE wake_at IS NOT NULL;
             CREATE TABLE tick_mark (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), \
             mark INTEGER NOT NULL, updated_at TEXT NOT NULL) STRICT;
             INSERT INTO schema_meta VALUES (1, 2, 'cronslot-sqlite 0.1.0', '2029-01-01T00:00:00Z');",
        )
        .unwrap();
        let held = |key: &str, until: &str| {
            format!(
                r#"{{"key":"{key}","owner":"w","fence":1,"state":"in_progress","expires_at":"{until}"}}"#
            )
        };
        let finished = |key: &str, at: &str| {
            format!(
                r#"{{"key":"{key}","owner":"w","fence":1,"state":"done","result":"ok","done_at":"{at}"}}"#
            )
        };
        let rows = [
            ("j@s/lapsed", held("j@s/lapsed", "2030-01-01T00:01:00Z")),
            ("j@s/live", held("j@s/live", "2030-01-01T00:10:00.5Z")),
            ("j@s/old", finished("j@s/old", "2029-11-01T00:00:00Z")),
            ("j@s/recent", finished("j@s/recent", "2029-12-31T00:00:00Z")),
            ("j@s/broken", "{\"key\":".to_string()),
            (
                "j@s/elsewhere",
                finished("j@s/other", "2029-11-01T00:00:00Z"),
            ),
        ];
        for (key, record) in rows {
            conn.execute(
                "INSERT INTO effects VALUES (?1, ?2, NULL, '2029-01-01T00:00:00Z')",
                [key, record.as_str()],
            )
            .unwrap();
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("SELECT schema_version FROM schema_meta", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, STORE_SCHEMA_VERSION);
    let untimed = || -> i64 {
        conn.query_row(
            "SELECT count(*) FROM effects WHERE sweep_at IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(untimed(), 6, "the migration leaves the entries as they are");

    let now = after(120);
    // Batches of 4: the first times four entries (one of them due), the
    // second the other two (one due) and stops, short on both counts.
    let before = store.statements();
    assert_eq!(sweep(&store, now, 4, 10).unwrap(), 2);
    assert_eq!(
        store.statements() - before,
        (1 + 4 + 1) + (1 + 2 + 1),
        "a batch: the read of entries without a time, one update each, the delete"
    );
    assert_eq!(untimed(), 0);
    assert_eq!(entries(&path), 4);
    assert!(!present(&store, "j@s/lapsed"));
    assert!(present(&store, "j@s/live"));
    assert!(present(&store, "j@s/recent"));
    let kept: Vec<(String, i64)> = conn
        .prepare("SELECT key, sweep_at FROM effects ORDER BY key")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let ns = |t: &str| -> i64 {
        i64::try_from(t.parse::<Timestamp>().unwrap().as_nanosecond()).unwrap()
    };
    assert_eq!(
        kept,
        [
            ("j@s/broken".to_string(), i64::MAX),
            ("j@s/elsewhere".to_string(), i64::MAX),
            ("j@s/live".to_string(), ns("2030-01-01T00:10:00.5Z")),
            ("j@s/recent".to_string(), ns("2030-01-30T00:00:00Z")),
        ],
        "a record that does not read (or names another key) is never swept"
    );
    // Opening again finds the current schema and changes nothing.
    drop(store);
    let again = SqliteStore::open(&path).unwrap();
    assert!(present(&again, "j@s/recent"));
}
