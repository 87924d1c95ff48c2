//! The SQLite store against the store contract: compare-and-set, the effect
//! ledger (agreeing with `MemoryStore` decision for decision), clean errors
//! for bad files and records, and — with real processes — several
//! processes on one file losing no update and claiming each slot once.
//!
//! The multi-process tests re-execute this test binary: the child runs the
//! ignored test `child_process_entry`, which reads its role from the
//! environment. No extra binary ships with the crate for the tests' sake.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, EffectBegin, EffectFinish, EffectLedger, EffectRecord,
    EffectState, Idle, JobState, MemoryStore, Origin, PendingRun, PutResult, StateStore,
    StoreError, StoreErrorKind, TickIndex, Trigger, Version, Versioned, encode_state,
};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_sqlite::{STORE_SCHEMA_VERSION, SqliteStore, parse_sqlite_location};
use jiff::{SignedDuration, Timestamp};

// ---------------------------------------------------------------- helpers

/// A fresh directory per test under Cargo's scratch space for integration
/// tests (removed and recreated, so reruns start clean).
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sqlite_store")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn t0() -> Timestamp {
    ts("2030-01-01T00:00:00Z")
}

fn state(job: &str, fence: u64) -> JobState {
    let mut s = JobState::new(job, "hash", t0(), false);
    s.fence = fence;
    s
}

fn written(result: PutResult) -> u64 {
    match result {
        PutResult::Written(v) => v,
        other => panic!("expected a write, got {other:?}"),
    }
}

fn conflict(result: PutResult) -> Option<Versioned<JobState>> {
    match result {
        PutResult::Conflict(current) => current.map(|b| *b),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// A raw connection to the store's file, to damage it as a bug, a crash or
/// a newer release might.
fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

// ------------------------------------------------------ compare-and-set

#[test]
fn first_put_needs_no_record_and_a_second_first_put_conflicts() {
    let store = SqliteStore::open_in_memory().unwrap();
    block_on(async {
        assert_eq!(store.get("a").await.unwrap(), None);
        assert_eq!(
            written(store.put("a", &state("a", 1), None).await.unwrap()),
            1
        );
        let current = conflict(store.put("a", &state("a", 99), None).await.unwrap()).unwrap();
        assert_eq!(current.version, 1);
        assert_eq!(current.value, state("a", 1));
        let got = store.get("a").await.unwrap().unwrap();
        assert_eq!((got.version, got.value.fence), (1, 1));
    });
}

/// A page of records under a prefix is one statement: a range of the
/// key, in byte order, from the prefix or after the cursor, never past the
/// prefix's end.
#[test]
fn a_page_of_records_is_one_statement_in_byte_order() {
    let store = SqliteStore::open_in_memory().unwrap();
    block_on(async {
        for name in ["inv", "inv/b", "inv/a", "inv/c", "inv0/a", "invx/a", "in/z"] {
            store.put(name, &state(name, 1), None).await.unwrap();
        }
        let names = |page: Vec<(String, Versioned<JobState>)>| -> Vec<String> {
            page.into_iter().map(|(n, _)| n).collect()
        };
        let before = store.statements();
        let page = store.records_page("inv/", None, 2).await.unwrap();
        assert_eq!(store.statements() - before, 1);
        assert_eq!(names(page), ["inv/a", "inv/b"]);
        let page = store.records_page("inv/", Some("inv/b"), 10).await.unwrap();
        assert_eq!(names(page), ["inv/c"]);
        // A cursor before the prefix starts at the prefix; one past it
        // ends the listing.
        let page = store.records_page("inv/", Some("a"), 10).await.unwrap();
        assert_eq!(names(page).len(), 3);
        let page = store.records_page("inv/", Some("inw"), 10).await.unwrap();
        assert!(page.is_empty());
    });
}

#[test]
fn versions_increment_and_a_stale_version_gets_the_current_record() {
    let store = SqliteStore::open_in_memory().unwrap();
    block_on(async {
        assert_eq!(
            written(store.put("a", &state("a", 1), None).await.unwrap()),
            1
        );
        assert_eq!(
            written(store.put("a", &state("a", 2), Some(1)).await.unwrap()),
            2
        );
        assert_eq!(
            written(store.put("a", &state("a", 3), Some(2)).await.unwrap()),
            3
        );

        // A writer that read version 1 loses and learns the current record
        // without another read.
        let current = conflict(store.put("a", &state("a", 7), Some(1)).await.unwrap()).unwrap();
        assert_eq!(current.version, 3);
        assert_eq!(current.value, state("a", 3));
        // A version from the future, and one beyond SQLite's integer range.
        assert_eq!(
            conflict(store.put("a", &state("a", 7), Some(4)).await.unwrap())
                .unwrap()
                .version,
            3
        );
        assert_eq!(
            conflict(
                store
                    .put("a", &state("a", 7), Some(u64::MAX))
                    .await
                    .unwrap()
            )
            .unwrap()
            .version,
            3
        );
        // Nothing was written by the losers.
        assert_eq!(store.get("a").await.unwrap().unwrap().value.fence, 3);
        // Expecting a record that does not exist.
        assert_eq!(
            conflict(store.put("b", &state("b", 1), Some(1)).await.unwrap()),
            None
        );
        assert_eq!(store.get("b").await.unwrap(), None);
    });
}

#[test]
fn a_record_is_only_stored_under_its_own_job() {
    let store = SqliteStore::open_in_memory().unwrap();
    let err = block_on(store.put("a", &state("b", 1), None)).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other);
    assert!(err.message.contains("job \"b\" as job \"a\""), "{err}");
    assert_eq!(block_on(store.get("a")).unwrap(), None);
}

#[test]
fn jobs_are_listed_sorted() {
    let store = SqliteStore::open_in_memory().unwrap();
    block_on(async {
        assert!(store.jobs().await.unwrap().is_empty());
        for job in ["zeta", "alpha", "Mike", "émile", "beta"] {
            store.put(job, &state(job, 0), None).await.unwrap();
        }
        let mut expected = vec!["zeta", "alpha", "Mike", "émile", "beta"];
        expected.sort();
        assert_eq!(store.jobs().await.unwrap(), expected);
    });
}

#[test]
fn records_survive_reopening_and_two_connections_see_each_other() {
    let dir = scratch("reopen");
    let path = dir.join("c.db");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    assert_eq!(a.path(), Some(path.as_path()));
    block_on(async {
        assert_eq!(written(a.put("j", &state("j", 1), None).await.unwrap()), 1);
        // b's connection sees a's commit, and CAS works across connections.
        let current = conflict(b.put("j", &state("j", 5), None).await.unwrap()).unwrap();
        assert_eq!(current.version, 1);
        assert_eq!(
            written(b.put("j", &state("j", 2), Some(1)).await.unwrap()),
            2
        );
        assert_eq!(
            conflict(a.put("j", &state("j", 9), Some(1)).await.unwrap())
                .unwrap()
                .value,
            state("j", 2)
        );
    });
    drop((a, b));
    let again = SqliteStore::open(&path).unwrap();
    let got = block_on(again.get("j")).unwrap().unwrap();
    assert_eq!((got.version, got.value), (2, state("j", 2)));

    // The file is in WAL mode and the store records its schema version.
    let conn = raw(&path);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn
        .query_row("SELECT schema_version FROM schema_meta", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, STORE_SCHEMA_VERSION);
}

#[test]
fn clones_are_shared_across_threads_without_losing_updates() {
    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}
    assert_shareable::<SqliteStore>();

    let store = SqliteStore::open_in_memory().unwrap();
    // The contract lets futures be !Send (wasm); this store's are Send, so
    // a multi-threaded runtime may move them between threads.
    fn assert_send<T: Send>(_: &T) {}
    assert_send(&store.get("n"));
    assert_send(&store.put("n", &state("n", 0), None));
    assert_send(&store.begin_effect("k", "o", 1, t0(), HOLD));
    block_on(store.put("n", &state("n", 0), None)).unwrap();
    const THREADS: u64 = 4;
    const EACH: u64 = 50;
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let store = store.clone();
            s.spawn(move || {
                let mut done = 0;
                let mut current = block_on(store.get("n")).unwrap().unwrap();
                while done < EACH {
                    let mut next = current.value.clone();
                    next.fence += 1;
                    match block_on(store.put("n", &next, Some(current.version))).unwrap() {
                        PutResult::Written(version) => {
                            done += 1;
                            current = Versioned {
                                value: next,
                                version,
                            };
                        }
                        PutResult::Conflict(now) => current = *now.unwrap(),
                    }
                }
            });
        }
    });
    let end = block_on(store.get("n")).unwrap().unwrap();
    assert_eq!(end.value.fence, THREADS * EACH);
    assert_eq!(end.version, THREADS * EACH + 1);
}

#[test]
fn a_lock_held_past_the_busy_timeout_is_unavailable_and_reads_go_on() {
    let dir = scratch("busy");
    let path = dir.join("c.db");
    let store = SqliteStore::open_with_timeout(&path, Duration::from_millis(200)).unwrap();
    block_on(store.put("j", &state("j", 1), None)).unwrap();

    // Another process (here: connection) takes the write lock and sits on it.
    let mut other = raw(&path);
    let tx = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    tx.execute("UPDATE effects SET record = record", [])
        .unwrap();

    let started = Instant::now();
    let err = block_on(store.put("j", &state("j", 2), Some(1))).unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");
    assert!(err.message.contains("c.db"), "{err}");
    assert!(
        waited >= Duration::from_millis(150),
        "gave up after {waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    // WAL: a reader is not blocked by the writer.
    assert_eq!(block_on(store.get("j")).unwrap().unwrap().version, 1);
    let err = block_on(store.begin_effect("k", "o", 1, t0(), Duration::from_secs(60))).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");

    // Once the lock is released the same store writes again.
    drop(tx);
    assert_eq!(
        written(block_on(store.put("j", &state("j", 2), Some(1))).unwrap()),
        2
    );
}

// ---------------------------------------------------------- the ledger

const HOLD: Duration = Duration::from_secs(60);

#[test]
fn ledger_rules() {
    let store = SqliteStore::open_in_memory().unwrap();
    let now = t0();
    let later = now + SignedDuration::from_secs(10);
    // Past every hold taken below (the last one at `later`).
    let expired = later + SignedDuration::from_secs(61);
    block_on(async {
        // First come: acquired, and recorded as in progress.
        assert_eq!(
            store.begin_effect("k", "a", 5, now, HOLD).await.unwrap(),
            EffectBegin::Acquired
        );
        let rec = store.read_effect("k").await.unwrap().unwrap();
        assert_eq!((rec.owner.as_str(), rec.fence), ("a", 5));
        assert!(
            matches!(rec.state, EffectState::InProgress { expires_at } if expires_at == now + SignedDuration::from_secs(60))
        );

        // Another owner with the same fence while the hold is live: held.
        assert_eq!(
            store.begin_effect("k", "b", 5, later, HOLD).await.unwrap(),
            EffectBegin::Held {
                owner: "a".into(),
                fence: 5,
                expires_at: now + SignedDuration::from_secs(60)
            }
        );
        // A lower fence is a stale run: superseded.
        assert_eq!(
            store
                .begin_effect("k", "old", 4, later, HOLD)
                .await
                .unwrap(),
            EffectBegin::Superseded { fence: 5 }
        );
        // The holder itself may begin again (its own retry).
        assert_eq!(
            store.begin_effect("k", "a", 5, later, HOLD).await.unwrap(),
            EffectBegin::Acquired
        );
        // After the hold lapses another owner takes over.
        assert_eq!(
            store
                .begin_effect("k", "c", 5, expired, HOLD)
                .await
                .unwrap(),
            EffectBegin::Acquired
        );
        assert_eq!(store.read_effect("k").await.unwrap().unwrap().owner, "c");

        // Finish by a fence that does not hold it: refused, nothing written.
        assert_eq!(
            store.finish_effect("k", 4, "stale", expired).await.unwrap(),
            EffectFinish::NotHeld
        );
        assert!(matches!(
            store.read_effect("k").await.unwrap().unwrap().state,
            EffectState::InProgress { .. }
        ));
        assert_eq!(
            store
                .finish_effect("missing", 5, "r", expired)
                .await
                .unwrap(),
            EffectFinish::NotHeld
        );
        assert_eq!(store.read_effect("missing").await.unwrap(), None);

        // The holder finishes: done for good.
        assert_eq!(
            store
                .finish_effect("k", 5, "receipt-1", expired)
                .await
                .unwrap(),
            EffectFinish::Recorded
        );
        assert_eq!(
            store.read_effect("k").await.unwrap().unwrap().state,
            EffectState::Done {
                result: "receipt-1".into(),
                done_at: expired
            }
        );
        for (owner, fence) in [("a", 5), ("z", 9), ("old", 1)] {
            assert_eq!(
                store
                    .begin_effect("k", owner, fence, expired, HOLD)
                    .await
                    .unwrap(),
                EffectBegin::AlreadyDone {
                    result: "receipt-1".into()
                }
            );
        }
        // A second finish does not overwrite the result.
        assert_eq!(
            store
                .finish_effect("k", 5, "receipt-2", expired)
                .await
                .unwrap(),
            EffectFinish::NotHeld
        );

        // A retry with a newer fence takes over once the old run's hold has
        // lapsed; the old run can then no longer finish it. (What a newer
        // fence meets while the old hold is live is the core's rule; the
        // agreement test below checks this store follows it.)
        store.begin_effect("n", "a", 1, now, HOLD).await.unwrap();
        assert_eq!(
            store
                .begin_effect("n", "b", 2, expired, HOLD)
                .await
                .unwrap(),
            EffectBegin::Acquired
        );
        assert_eq!(
            store.finish_effect("n", 1, "late", expired).await.unwrap(),
            EffectFinish::NotHeld
        );
        assert_eq!(
            store
                .finish_effect("n", 2, "on time", expired)
                .await
                .unwrap(),
            EffectFinish::Recorded
        );
    });
}

/// Every store decides with the core's shared rules: the same sequence of
/// ledger calls gives the same answers and records here and in memory.
#[test]
fn ledger_agrees_with_the_memory_store() {
    let sqlite = SqliteStore::open_in_memory().unwrap();
    let memory = MemoryStore::new();
    let mut seed = 0x5eed_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let keys = ["k1", "k2", "k3"];
    let owners = ["a", "b", "c"];
    block_on(async {
        for step in 0..400u64 {
            let key = keys[next(3) as usize];
            let owner = owners[next(3) as usize];
            let fence = 1 + next(4);
            let now = t0() + SignedDuration::from_secs((step * 7) as i64);
            let hold = Duration::from_secs(next(40));
            if next(3) == 0 {
                let result = format!("r{step}");
                assert_eq!(
                    sqlite
                        .finish_effect(key, fence, &result, now)
                        .await
                        .unwrap(),
                    memory
                        .finish_effect(key, fence, &result, now)
                        .await
                        .unwrap(),
                    "step {step}"
                );
            } else {
                assert_eq!(
                    sqlite
                        .begin_effect(key, owner, fence, now, hold)
                        .await
                        .unwrap(),
                    memory
                        .begin_effect(key, owner, fence, now, hold)
                        .await
                        .unwrap(),
                    "step {step}"
                );
            }
            assert_eq!(
                sqlite.read_effect(key).await.unwrap(),
                memory.read_effect(key).await.unwrap(),
                "step {step}"
            );
        }
    });
}

// ------------------------------------------------- bad records and files

#[test]
fn a_corrupt_record_is_a_corrupt_error_naming_the_job_and_file() {
    let dir = scratch("corrupt");
    let path = dir.join("c.db");
    let store = SqliteStore::open(&path).unwrap();
    block_on(store.put("good", &state("good", 1), None)).unwrap();
    let conn = raw(&path);
    conn.execute(
        "INSERT INTO job_state (job, version, state, updated_at) VALUES ('broken', 1, '{not json', 'x')",
        [],
    )
    .unwrap();

    let err = block_on(store.get("broken")).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    assert!(err.message.contains("\"broken\""), "{err}");
    assert!(err.message.contains("c.db"), "{err}");
    assert!(err.message.contains("not JSON"), "{err}");
    // A conflicting put reports it too, instead of a half-read record.
    let err = block_on(store.put("broken", &state("broken", 2), None)).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    // Other jobs are unaffected.
    assert_eq!(block_on(store.get("good")).unwrap().unwrap().version, 1);

    // A record of another job stored under this name.
    let other = serde_json::to_string(&state("good", 1)).unwrap();
    conn.execute(
        "INSERT INTO job_state (job, version, state, updated_at) VALUES ('imposter', 1, ?1, 'x')",
        [&other],
    )
    .unwrap();
    let err = block_on(store.get("imposter")).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    assert!(err.message.contains("belongs to job \"good\""), "{err}");

    // A broken effect record.
    conn.execute(
        "INSERT INTO effects (key, record, updated_at) VALUES ('e', '[]', 'x')",
        [],
    )
    .unwrap();
    let err = block_on(store.read_effect("e")).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    assert!(err.message.contains("effect \"e\""), "{err}");
    let err = block_on(store.begin_effect("e", "o", 1, t0(), HOLD)).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
}

#[test]
fn a_record_from_a_newer_cronslot_is_refused_cleanly() {
    let dir = scratch("newer-record");
    let path = dir.join("c.db");
    let store = SqliteStore::open(&path).unwrap();
    let mut value = serde_json::to_value(state("j", 1)).unwrap();
    value["schema"] = serde_json::json!(99);
    raw(&path)
        .execute(
            "INSERT INTO job_state (job, version, state, updated_at) VALUES ('j', 3, ?1, 'x')",
            [value.to_string()],
        )
        .unwrap();
    let err = block_on(store.get("j")).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    assert!(err.message.contains("newer cronslot"), "{err}");
    assert!(err.message.contains("\"j\""), "{err}");
}

/// A file written by store schema 1 (before the wake index) is migrated in
/// place when opened: its records load, it gains the wake column and the
/// tick mark, and the next write of a record indexes its wake.
#[test]
fn a_schema_1_store_is_migrated_on_open() {
    let dir = scratch("schema-1-store");
    let path = dir.join("old.db");
    {
        let conn = raw(&path);
        conn.execute_batch(
            "CREATE TABLE schema_meta (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), \
             schema_version INTEGER NOT NULL, created_by TEXT NOT NULL, created_at TEXT NOT NULL) STRICT;
             CREATE TABLE job_state (job TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL CHECK (version >= 1), \
             state TEXT NOT NULL, updated_at TEXT NOT NULL) STRICT;
             CREATE TABLE effects (key TEXT PRIMARY KEY NOT NULL, record TEXT NOT NULL, expires_at TEXT, \
             updated_at TEXT NOT NULL) STRICT;
             INSERT INTO schema_meta VALUES (1, 1, 'cronslot-local 0.1.0', '2026-01-05T00:00:00Z');",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO job_state VALUES ('j', 3, ?1, '2026-01-05T00:00:00Z')",
            [encode_state(&state("j", 3))],
        )
        .unwrap();
        // A retry waiting, the same paused, and a record that does not
        // decode: the repair gives the first a wake and leaves the others.
        for (job, paused) in [("retrying", false), ("paused", true)] {
            let mut s = state(job, 1);
            s.paused = paused;
            s.pending.push(PendingRun {
                slot: t0(),
                attempt: 2,
                not_before: t0() + SignedDuration::from_secs(90),
                retry_until: None,
                last_error: Some("\"leases\":[{ in an error".into()),
                checkpoint: None,
                origin: Origin::Schedule,
                version: None,
            });
            conn.execute(
                "INSERT INTO job_state VALUES (?1, 1, ?2, '2026-01-05T00:00:00Z')",
                [job.to_string(), encode_state(&s)],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO job_state VALUES ('broken', 1, '{\"pending\":[{', '2026-01-05T00:00:00Z')",
            [],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let got = block_on(store.get("j")).unwrap().unwrap();
    assert_eq!((got.version, got.value), (3, state("j", 3)));
    let retrying = block_on(store.get("retrying")).unwrap().unwrap();
    let wake = t0() + SignedDuration::from_secs(90);
    assert_eq!((retrying.version, retrying.value.wake_at), (2, Some(wake)));
    assert_eq!(block_on(store.get("paused")).unwrap().unwrap().version, 1);
    assert_eq!(
        block_on(store.tick_start(wake, 10)).unwrap().woken,
        ["retrying"],
        "the repaired record is in the index"
    );
    raw(&path)
        .execute(
            "DELETE FROM job_state WHERE job IN ('retrying', 'paused', 'broken')",
            [],
        )
        .unwrap();
    let version: i64 = raw(&path)
        .query_row("SELECT schema_version FROM schema_meta", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, STORE_SCHEMA_VERSION);
    let start = block_on(store.tick_start(t0(), 10)).unwrap();
    assert_eq!((start.mark, start.woken.len()), (None, 0));

    let mut waking = state("j", 4);
    waking.wake_at = Some(t0());
    written(block_on(store.put("j", &waking, Some(3))).unwrap());
    assert_eq!(
        block_on(store.tick_start(t0(), 10)).unwrap().woken,
        vec!["j".to_string()]
    );
    // Opening again finds the current schema and changes nothing.
    drop(store);
    let again = SqliteStore::open(&path).unwrap();
    assert_eq!(
        block_on(again.tick_start(t0(), 10)).unwrap().woken,
        vec!["j".to_string()]
    );
}

#[test]
fn a_store_from_a_newer_cronslot_is_refused_on_open() {
    let dir = scratch("newer-store");
    let path = dir.join("c.db");
    drop(SqliteStore::open(&path).unwrap());
    raw(&path)
        .execute(
            "UPDATE schema_meta SET schema_version = ?1",
            [STORE_SCHEMA_VERSION + 1],
        )
        .unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other, "{err}");
    assert!(err.message.contains("newer cronslot"), "{err}");
    assert!(err.message.contains("c.db"), "{err}");
    assert!(
        err.message
            .contains(&format!("store schema {}", STORE_SCHEMA_VERSION + 1))
    );

    raw(&path).execute("DELETE FROM schema_meta", []).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    assert!(err.message.contains("schema_meta"), "{err}");
}

#[test]
fn foreign_files_are_refused_without_being_touched() {
    let dir = scratch("foreign");
    // Someone else's SQLite database.
    let theirs = dir.join("theirs.db");
    raw(&theirs)
        .execute_batch("CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (1);")
        .unwrap();
    let err = SqliteStore::open(&theirs).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other, "{err}");
    assert!(err.message.contains("not a cronslot store"), "{err}");
    assert!(err.message.contains("invoices"), "{err}");
    let tables: i64 = raw(&theirs)
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 1, "the foreign database was changed");

    // Not a database at all.
    let text = dir.join("notes.txt");
    std::fs::write(
        &text,
        "these are not the pages you are looking for\n".repeat(200),
    )
    .unwrap();
    let err = SqliteStore::open(&text).unwrap_err();
    assert!(err.message.contains("not a SQLite database"), "{err}");
    assert!(err.message.contains("notes.txt"), "{err}");
}

#[test]
fn unusable_paths_give_clean_errors() {
    let dir = scratch("paths");

    let err = SqliteStore::open(&dir).unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other);
    assert!(err.message.contains("is a directory"), "{err}");

    let file = dir.join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let err = SqliteStore::open(file.join("c.db")).unwrap_err();
    assert!(err.message.contains("is not a directory"), "{err}");

    let err = SqliteStore::open(dir.join("missing").join("c.db")).unwrap_err();
    assert!(err.message.contains("does not exist"), "{err}");

    let err = SqliteStore::open("").unwrap_err();
    assert!(err.message.contains("empty"), "{err}");
    let err = SqliteStore::open(":memory:").unwrap_err();
    assert!(err.message.contains("in-memory"), "{err}");

    // A directory where nobody, not even root, may create files: SQLite's
    // own refusal is reported with the path.
    if Path::new("/proc/self").is_dir() {
        let err = SqliteStore::open("/proc/cronslot-test.db").unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Other, "{err}");
        assert!(err.message.contains("/proc/cronslot-test.db"), "{err}");
    }
}

#[test]
fn store_locations() {
    let ok = |s: &str| parse_sqlite_location(s).unwrap();
    assert_eq!(ok("sqlite:cronslot.db"), PathBuf::from("cronslot.db"));
    assert_eq!(ok("sqlite:data/c.db"), PathBuf::from("data/c.db"));
    assert_eq!(ok("sqlite:/var/lib/c.db"), PathBuf::from("/var/lib/c.db"));
    assert_eq!(ok("sqlite://c.db"), PathBuf::from("c.db"));
    assert_eq!(ok("sqlite:///var/lib/c.db"), PathBuf::from("/var/lib/c.db"));
    assert_eq!(ok("SQLite:c.db"), PathBuf::from("c.db"));
    assert_eq!(ok("sqlite:c.db?mode=ro"), PathBuf::from("c.db?mode=ro"));

    let err = |s: &str| parse_sqlite_location(s).unwrap_err().to_string();
    assert!(err("cronslot.db").contains("did you mean sqlite:cronslot.db?"));
    assert!(err("cronslot.db").contains("expected sqlite:PATH"));
    assert!(err("").contains("expected sqlite:PATH"));
    assert!(err("sqlite:").contains("names no file"));
    assert!(err("sqlite://").contains("names no file"));
    assert!(err("sqlite::memory:").contains("in memory"));
    let dynamo = err("dynamodb://table?region=eu-west-1");
    assert!(dynamo.contains("not a SQLite store"), "{dynamo}");
    assert!(dynamo.contains("expected sqlite:PATH"), "{dynamo}");
}

// ------------------------------------------------ several real processes

const CHILD_ROLE: &str = "CRONSLOT_TEST_CHILD_ROLE";
const CHILD_DB: &str = "CRONSLOT_TEST_DB";
const CHILD_ID: &str = "CRONSLOT_TEST_CHILD_ID";
const CHILD_START_MS: &str = "CRONSLOT_TEST_START_MS";
const CHILD_COUNT: &str = "CRONSLOT_TEST_COUNT";
const CHILD_MS_PER_MINUTE: &str = "CRONSLOT_TEST_MS_PER_MINUTE";
/// Children mark the lines meant for the parent; the test harness prints
/// its own text around them (and, with `--nocapture`, on the same line as
/// the first one).
const MARK: &str = "cronslot-child:";

const PROCESSES: usize = 4;

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

fn env_u64(name: &str) -> u64 {
    env(name).parse().unwrap()
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Children start together, so that they really contend.
fn wait_until(unix_ms_start: u64) {
    let now = unix_ms();
    if unix_ms_start > now {
        std::thread::sleep(Duration::from_millis(unix_ms_start - now));
    }
}

/// Runs `PROCESSES` copies of this test binary as children in `role` and
/// returns their marked output lines, split into words, per child.
fn run_children(role: &str, db: &Path, extra: &[(&str, String)]) -> Vec<Vec<Vec<String>>> {
    let exe = std::env::current_exe().unwrap();
    let start = unix_ms() + 400;
    let children: Vec<_> = (0..PROCESSES)
        .map(|id| {
            let mut cmd = Command::new(&exe);
            cmd.args([
                "child_process_entry",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ROLE, role)
            .env(CHILD_DB, db)
            .env(CHILD_ID, id.to_string())
            .env(CHILD_START_MS, start.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            for (k, v) in extra {
                cmd.env(k, v);
            }
            cmd.spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .enumerate()
        .map(|(id, child)| {
            let Output {
                status,
                stdout,
                stderr,
            } = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&stdout);
            assert!(
                status.success(),
                "child {id} ({role}) failed: {status}\n--- stdout\n{stdout}\n--- stderr\n{}",
                String::from_utf8_lossy(&stderr)
            );
            let lines: Vec<Vec<String>> = stdout
                .lines()
                .filter_map(|l| l.find(MARK).map(|at| &l[at + MARK.len()..]))
                .map(|l| l.split_whitespace().map(str::to_string).collect())
                .collect();
            assert!(!lines.is_empty(), "child {id} printed nothing:\n{stdout}");
            lines
        })
        .collect()
}

/// `key=value` from a child's summary line.
fn field(line: &[String], key: &str) -> u64 {
    line.iter()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
        .parse()
        .unwrap()
}

/// The entry point of the child processes; does nothing unless started by
/// `run_children` (hence ignored in ordinary runs).
#[test]
#[ignore = "child process of the multi-process tests; runs only when they re-execute this binary"]
fn child_process_entry() {
    match std::env::var(CHILD_ROLE).as_deref() {
        Ok("counter") => counter_child(),
        Ok("claimer") => claimer_child(),
        Ok(other) => panic!("unknown child role {other:?}"),
        Err(_) => {}
    }
}

const COUNTER_JOB: &str = "counter";
const THINK: Duration = Duration::from_micros(500);

/// Read → modify → compare-and-set, `CHILD_COUNT` successful increments of
/// the record's fence. On conflict it retries with the record the store
/// handed back (the contract's point: no extra read). Between reading and
/// writing it "thinks" for `THINK`, as the coordinator plans between its
/// read and its write: without that pause the processes mostly queue on
/// SQLite's lock and rarely overlap, and the test would show little.
fn counter_child() {
    let id = env(CHILD_ID);
    let want = env_u64(CHILD_COUNT);
    wait_until(env_u64(CHILD_START_MS));
    // Every child creates the file and the record at the same moment: one
    // creates each, the others find them.
    let store = SqliteStore::open(env(CHILD_DB)).unwrap();
    let mut current = match block_on(store.put(COUNTER_JOB, &state(COUNTER_JOB, 0), None)).unwrap()
    {
        PutResult::Written(version) => Versioned {
            value: state(COUNTER_JOB, 0),
            version,
        },
        PutResult::Conflict(Some(now)) => *now,
        PutResult::Conflict(None) => panic!("a conflict on a first write without a record"),
    };
    let (mut done, mut conflicts, mut unavailable) = (0u64, 0u64, 0u64);
    while done < want {
        let mut next = current.value.clone();
        next.fence += 1;
        std::thread::sleep(THINK);
        match block_on(store.put(COUNTER_JOB, &next, Some(current.version))) {
            Ok(PutResult::Written(version)) => {
                assert_eq!(version, current.version + 1);
                done += 1;
                current = block_on(store.get(COUNTER_JOB)).unwrap().unwrap();
            }
            Ok(PutResult::Conflict(Some(now))) => {
                assert!(now.version > current.version, "versions went backwards");
                conflicts += 1;
                current = *now;
            }
            Ok(PutResult::Conflict(None)) => panic!("the counter record vanished"),
            // Waiting longer than the busy timeout would be a finding, but
            // not a lost update: count it and read again.
            Err(e) if e.kind == StoreErrorKind::Unavailable => {
                unavailable += 1;
                current = block_on(store.get(COUNTER_JOB)).unwrap().unwrap();
            }
            Err(e) => panic!("{e}"),
        }
    }
    println!("{MARK} id={id} writes={done} conflicts={conflicts} unavailable={unavailable}");
}

#[test]
fn processes_sharing_one_file_lose_no_update() {
    const EACH: u64 = 150;
    let dir = scratch("counter");
    // The children create it.
    let db = dir.join("shared.db");

    let started = Instant::now();
    let outputs = run_children("counter", &db, &[(CHILD_COUNT, EACH.to_string())]);
    let elapsed = started.elapsed();
    let store = SqliteStore::open(&db).unwrap();

    let summaries: Vec<&Vec<String>> = outputs.iter().map(|lines| &lines[0]).collect();
    let writes: u64 = summaries.iter().map(|l| field(l, "writes")).sum();
    let conflicts: u64 = summaries.iter().map(|l| field(l, "conflicts")).sum();
    let unavailable: u64 = summaries.iter().map(|l| field(l, "unavailable")).sum();
    let per: Vec<String> = summaries
        .iter()
        .map(|l| format!("{}c", field(l, "conflicts")))
        .collect();
    println!(
        "{PROCESSES} processes x {EACH} increments: {writes} writes, {conflicts} conflicts ({}), {unavailable} unavailable, in {elapsed:.2?}",
        per.join(" ")
    );

    let end = block_on(store.get(COUNTER_JOB)).unwrap().unwrap();
    assert_eq!(writes, PROCESSES as u64 * EACH);
    assert_eq!(
        end.value.fence,
        PROCESSES as u64 * EACH,
        "an update was lost"
    );
    assert_eq!(end.version, PROCESSES as u64 * EACH + 1);
    assert!(
        conflicts > 0,
        "the processes never contended: the test proves nothing"
    );
}

const CLAIM_JOB: &str = "every-minute";

/// A per-minute job whose lease and deadline outlast the test, so that a
/// slow child cannot legitimately lose a lease or a slot: any duplicate or
/// gap is then the store's fault.
const CLAIM_MANIFEST: &str = r#"
[[job]]
name = "every-minute"
schedule = "* * * * *"
lease = "1d"
starting_deadline = "1d"
catch_up = "all"
max_catch_up = 100
"#;

fn claim_spec() -> JobSpec {
    let manifest = parse_manifest(CLAIM_MANIFEST, "test.toml").unwrap();
    manifest.job(CLAIM_JOB).unwrap().clone()
}

/// The virtual time range: starts half a minute before the first slot, ends
/// half a minute after slot `slots`.
fn virtual_start() -> Timestamp {
    ts("2030-01-01T00:00:30Z")
}

fn virtual_end(slots: u64) -> Timestamp {
    virtual_start() + SignedDuration::from_mins(slots as i64)
}

/// The store as the coordinator sees it, counting the compare-and-set
/// conflicts it meets: each one is a write another process won.
struct Counting {
    store: SqliteStore,
    conflicts: Cell<u64>,
}

impl StateStore for Counting {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        self.store.get(job).await
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        let result = self.store.put(job, state, expected).await;
        if matches!(result, Ok(PutResult::Conflict(_))) {
            self.conflicts.set(self.conflicts.get() + 1);
        }
        result
    }

    async fn delete(
        &self,
        job: &str,
        expected: cronslot_core::coord::Version,
    ) -> Result<bool, StoreError> {
        self.store.delete(job, expected).await
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.store.jobs().await
    }
}

impl EffectLedger for Counting {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.store.begin_effect(key, owner, fence, now, hold).await
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        self.store.finish_effect(key, fence, result, now).await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.store.read_effect(key).await
    }
}

/// How long a claimed run "works" before it completes (real time), so that
/// the other processes meet its live lease.
const RUN_TIME: Duration = Duration::from_millis(3);

/// Claims the job's slots with the core's generic coordinator on an
/// accelerated clock shared by every child (derived from the wall clock and
/// a common start), completing each claim; once the clock reaches the end
/// it stays there, and the child leaves when nothing is due any more.
fn claimer_child() {
    let store = SqliteStore::open(env(CHILD_DB)).unwrap();
    let id = env_u64(CHILD_ID);
    let slots = env_u64(CHILD_COUNT);
    let ms_per_minute = env_u64(CHILD_MS_PER_MINUTE);
    let start = env_u64(CHILD_START_MS);
    let owner = format!("process-{id}");
    let spec = claim_spec();
    let coord = CasCoordinator::new(
        Counting {
            store,
            conflicts: Cell::new(0),
        },
        id,
    );
    let end = virtual_end(slots);
    let clock = || {
        let real_ms = unix_ms().saturating_sub(start);
        let virtual_ms = real_ms * 60_000 / ms_per_minute;
        (virtual_start() + SignedDuration::from_millis(virtual_ms as i64)).min(end)
    };
    wait_until(start);
    let mut idle: BTreeMap<&str, u64> = BTreeMap::new();
    let mut claims = 0u64;
    loop {
        let now = clock();
        match block_on(coord.claim(&spec, now, Trigger::Tick, &owner)) {
            Ok(Claim::Claimed(lease)) => {
                claims += 1;
                println!(
                    "{MARK} claimed {} fence={} attempt={}",
                    lease.slot, lease.fence, lease.attempt
                );
                std::thread::sleep(RUN_TIME);
                block_on(coord.complete(&spec, lease.fence, None, clock())).unwrap();
                continue;
            }
            Ok(Claim::Idle(why)) => {
                let kind = match why {
                    Idle::NothingDue { .. } if now == end => break,
                    Idle::NothingDue { .. } => "nothing_due",
                    Idle::Busy { .. } => "busy",
                    Idle::InProgress { .. } => "in_progress",
                    Idle::AlreadyResolved { .. } => "already_resolved",
                    other => panic!("unexpected idle answer {other:?}"),
                };
                *idle.entry(kind).or_default() += 1;
            }
            Err(e) if e.is_transient() => *idle.entry("transient").or_default() += 1,
            Err(e) => panic!("{e}"),
        }
        // A runner polls; a tight loop would only burn the CPU the other
        // processes need.
        std::thread::sleep(Duration::from_millis(1));
    }
    let idle: Vec<String> = idle.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "{MARK} summary claims={claims} conflicts={} {}",
        coord.store().conflicts.get(),
        idle.join(" ")
    );
}

#[test]
fn processes_sharing_one_file_claim_each_slot_once() {
    const SLOTS: u64 = 60;
    const MS_PER_MINUTE: u64 = 40;
    let dir = scratch("claims");
    let db = dir.join("shared.db");
    let spec = claim_spec();
    let store = SqliteStore::open(&db).unwrap();
    // The job exists from the start of the virtual range, whichever child
    // comes first.
    let initial = JobState::new(CLAIM_JOB, &spec.spec_hash(), virtual_start(), false);
    block_on(store.put(CLAIM_JOB, &initial, None)).unwrap();

    let started = Instant::now();
    let outputs = run_children(
        "claimer",
        &db,
        &[
            (CHILD_COUNT, SLOTS.to_string()),
            (CHILD_MS_PER_MINUTE, MS_PER_MINUTE.to_string()),
        ],
    );
    let elapsed = started.elapsed();

    // slot -> (process, fence, attempt) for every claim any child made.
    let mut claims: Vec<(Timestamp, usize, u64, u64)> = Vec::new();
    let mut summaries = Vec::new();
    for (process, lines) in outputs.iter().enumerate() {
        for line in lines {
            match line[0].as_str() {
                "claimed" => claims.push((
                    ts(&line[1]),
                    process,
                    field(line, "fence"),
                    field(line, "attempt"),
                )),
                "summary" => summaries.push(line.clone()),
                other => panic!("unexpected child line {other:?}"),
            }
        }
    }
    claims.sort();
    let per_process: Vec<usize> = (0..PROCESSES)
        .map(|p| claims.iter().filter(|c| c.1 == p).count())
        .collect();
    println!(
        "{PROCESSES} processes, {SLOTS} per-minute slots in {elapsed:.2?}: claims per process {per_process:?}"
    );
    for (p, s) in summaries.iter().enumerate() {
        println!("  process {p}: {}", s[1..].join(" "));
    }
    // How often a process met another's work: a compare-and-set it lost,
    // or a claim refused because another process's run held the job.
    // Idle answers a child never met are not in its summary.
    let optional = |line: &Vec<String>, key: &str| {
        line.iter()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
            .map_or(0, |v| v.parse::<u64>().unwrap())
    };
    let conflicts: u64 = summaries.iter().map(|l| field(l, "conflicts")).sum();
    let refused: u64 = summaries
        .iter()
        .map(|l| optional(l, "busy") + optional(l, "in_progress") + optional(l, "already_resolved"))
        .sum();
    println!("  lost compare-and-sets: {conflicts}, claims refused by a live run: {refused}");

    // Every slot of the range, once each, in fence order, first attempt.
    let expected: Vec<Timestamp> = (1..=SLOTS)
        .map(|m| ts("2030-01-01T00:00:00Z") + SignedDuration::from_mins(m as i64))
        .collect();
    let claimed: Vec<Timestamp> = claims.iter().map(|c| c.0).collect();
    let distinct: BTreeSet<Timestamp> = claimed.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        claimed.len(),
        "a slot was claimed twice: {claims:?}"
    );
    assert_eq!(claimed, expected, "slots missing or extra");
    let fences: Vec<u64> = claims.iter().map(|c| c.2).collect();
    assert_eq!(fences, (1..=SLOTS).collect::<Vec<_>>());
    assert!(
        claims.iter().all(|c| c.3 == 1),
        "a slot was retried: {claims:?}"
    );
    assert!(
        per_process.iter().filter(|n| **n > 0).count() >= 2 && conflicts + refused > 0,
        "the processes never competed: the test proves nothing"
    );

    // The stored record agrees.
    let end = block_on(store.get(CLAIM_JOB)).unwrap().unwrap().value;
    assert_eq!(end.fence, SLOTS);
    assert_eq!(end.counters.runs, SLOTS);
    assert_eq!(end.counters.succeeded, SLOTS);
    assert_eq!(end.counters.missed_total(), 0, "{:?}", end.counters.missed);
    assert!(end.leases.is_empty() && end.pending.is_empty());
    assert_eq!(end.cursor, *expected.last().unwrap());
}
