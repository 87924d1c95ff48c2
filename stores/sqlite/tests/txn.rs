//! Keyed runs enqueued in an application's own transaction, on its own
//! connection to the store's file (`SqliteStore::enqueue_run_in`): the run
//! exists if and only if the transaction commits (commit, rollback, a
//! process killed before its commit), a key enqueued by two transactions
//! is one run, and the statements are counted exactly.
//!
//! The crash test re-executes this test binary: the child runs the ignored
//! test `crash_child_entry`, which reads the file from the environment,
//! enqueues in an open transaction, says so, and waits to be killed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use cronslot_core::coord::decide::{Enqueued, RunRefusal};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, RunError, Runs, Schedules, StoreErrorKind,
    TickIndex, Trigger,
};
use cronslot_core::manifest::{JobTemplate, parse_manifest};
use cronslot_core::schedules::{RunRequest, RunStatus, ScheduleKey};
use cronslot_sqlite::SqliteStore;
use cronslot_sqlite::rusqlite::{Connection, TransactionBehavior};
use jiff::Timestamp;

const JOB: &str = "order-confirmation";

/// The child's store file; unset in ordinary runs.
const CHILD_DB: &str = "CRONSLOT_TXN_CHILD_DB";
/// What the child prints once its transaction holds the order and the run.
const CHILD_MARK: &str = "@@txn-child enqueued ";

/// A fresh directory per test under Cargo's scratch space.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sqlite_txn")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn template() -> JobTemplate {
    let text = format!(
        "[[job]]\nname = \"{JOB}\"\ndynamic = true\ncommand = [\"true\"]\nlease = \"2m\"\n"
    );
    parse_manifest(&text, "txn.toml")
        .unwrap()
        .templates
        .remove(0)
}

fn key(text: &str) -> ScheduleKey {
    ScheduleKey::new(text).unwrap()
}

fn request(json: &str) -> RunRequest {
    RunRequest::from_json(json).unwrap()
}

/// The application's connection to the store's file, as an application
/// opens it: waiting for the runner's short transactions.
fn app_connection(db: &Path) -> Connection {
    let conn = Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

/// A store in a new file (opened first: it creates its tables in a new
/// file), the application's `orders` table beside its tables, and the
/// application's connection.
fn setup(name: &str) -> (SqliteStore, Connection, PathBuf) {
    let db = scratch(name).join("app.db");
    let store = SqliteStore::open(&db).unwrap();
    let conn = app_connection(&db);
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, total TEXT NOT NULL)")
        .unwrap();
    (store, conn, db)
}

fn order_count(conn: &Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM orders", [], |r| r.get(0))
        .unwrap()
}

fn coordinator(store: &SqliteStore) -> CasCoordinator<SqliteStore> {
    CasCoordinator::new(store.clone(), 7)
}

/// The business write and the enqueue in one transaction, committed: the
/// store's own connection sees the run only after the commit, the tick's
/// wake index finds it, and a claim runs it. A read and a write: 2
/// statements, 1 row changed.
#[test]
fn a_committed_transaction_enqueues_its_run() {
    let (store, mut conn, _) = setup("commit");
    let (t, k, c) = (template(), key("order-123"), coordinator(&store));
    let now = at("2026-01-05T00:00:30Z");
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    tx.execute("INSERT INTO orders (id, total) VALUES (123, '42.50')", [])
        .unwrap();
    let (statements, changes) = (store.statements(), tx.total_changes());
    let body = request(r#"{"payload":{"order":123}}"#);
    let created = match store.enqueue_run_in(&tx, &t, &k, &body, now) {
        Ok(Enqueued::Created(view)) => view,
        other => panic!("a new key creates its run: {other:?}"),
    };
    assert_eq!(store.statements() - statements, 2, "a read and a write");
    assert_eq!(tx.total_changes() - changes, 1, "one row written");
    assert_eq!(
        created.run,
        "order-confirmation/order-123@2026-01-05T00:00:00Z"
    );
    assert_eq!(created.status, RunStatus::Pending);
    assert_eq!(
        block_on(c.run_status(&t, &k, now)),
        Ok(None),
        "uncommitted, the run is not there for the store's connection"
    );
    tx.commit().unwrap();

    let view = block_on(c.run_status(&t, &k, now)).unwrap().unwrap();
    assert_eq!(
        (view.run.as_str(), view.status),
        (created.run.as_str(), RunStatus::Pending)
    );
    let tick = block_on(store.tick_start(now, 100)).unwrap();
    assert_eq!(
        tick.woken,
        ["order-confirmation/order-123"],
        "the wake index holds the run"
    );
    let later = at("2026-01-05T00:00:35Z");
    let spec = block_on(c.schedule_for_claim(&t, &k, later))
        .unwrap()
        .expect("a run to claim");
    let lease = match block_on(c.claim(&spec, later, Trigger::Tick, "w1")) {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("the run is due at once: {other:?}"),
    };
    block_on(c.complete(&spec, lease.fence, None, later)).unwrap();
    let done = block_on(c.run_status(&t, &k, later)).unwrap().unwrap();
    assert_eq!((done.status, done.attempts), (RunStatus::Succeeded, 1));
    assert_eq!(order_count(&conn), 1);
}

/// Rolled back (explicitly, or the transaction dropped unfinished): no
/// order and no run, and the key is free for the next enqueue.
#[test]
fn a_rolled_back_transaction_leaves_no_run() {
    let (store, mut conn, _) = setup("rollback");
    let (t, c) = (template(), coordinator(&store));
    let now = at("2026-01-05T00:00:30Z");
    let body = request(r#"{"payload":{"order":124}}"#);
    for (k, explicit) in [(key("order-124"), true), (key("order-125"), false)] {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        tx.execute("INSERT INTO orders (id, total) VALUES (124, '1')", [])
            .unwrap();
        let enqueued = store.enqueue_run_in(&tx, &t, &k, &body, now).unwrap();
        assert!(matches!(enqueued, Enqueued::Created(_)), "{enqueued:?}");
        if explicit {
            tx.rollback().unwrap();
        } else {
            drop(tx);
        }
        assert_eq!(order_count(&conn), 0);
        assert_eq!(block_on(c.run_status(&t, &k, now)), Ok(None));
        match block_on(c.enqueue_run(&t, &k, &body, now)) {
            Ok(Enqueued::Created(_)) => {}
            other => panic!("the key was never taken: {other:?}"),
        }
    }
}

/// A process killed (SIGKILL) after its transaction wrote the order and
/// enqueued the run, before its commit: neither exists, and the key is
/// free.
#[test]
fn a_process_killed_before_its_commit_leaves_no_order_and_no_run() {
    let (store, conn, db) = setup("crash");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "crash_child_entry",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut run = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(at) = line.find(CHILD_MARK) {
            run = Some(line[at + CHILD_MARK.len()..].trim().to_string());
            break;
        }
    }
    let run = run.unwrap_or_else(|| {
        let status = child.wait().unwrap();
        panic!("the child ended ({status}) without enqueueing")
    });
    assert_eq!(run, "order-confirmation/order-200@2026-01-05T00:00:00Z");
    // The child's transaction holds both, uncommitted; now it dies.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed: {status}");
    let (t, k, c) = (template(), key("order-200"), coordinator(&store));
    let now = at("2026-01-05T00:00:40Z");
    assert_eq!(order_count(&conn), 0, "no order");
    assert_eq!(block_on(c.run_status(&t, &k, now)), Ok(None), "no run");
    let body = request(r#"{"payload":{"order":200}}"#);
    match block_on(c.enqueue_run(&t, &k, &body, now)) {
        Ok(Enqueued::Created(_)) => {}
        other => panic!("the killed transaction's run never existed: {other:?}"),
    }
}

/// The child of the crash test: does nothing unless started by it (hence
/// ignored in ordinary runs).
#[test]
#[ignore = "child process of the crash test; runs only when it re-executes this binary"]
fn crash_child_entry() {
    let Some(db) = std::env::var_os(CHILD_DB) else {
        return;
    };
    let store = SqliteStore::open(&db).unwrap();
    let mut conn = app_connection(Path::new(&db));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    tx.execute("INSERT INTO orders (id, total) VALUES (200, '9.99')", [])
        .unwrap();
    let body = request(r#"{"payload":{"order":200}}"#);
    let now = at("2026-01-05T00:00:30Z");
    let enqueued = store
        .enqueue_run_in(&tx, &template(), &key("order-200"), &body, now)
        .unwrap();
    assert!(matches!(enqueued, Enqueued::Created(_)), "{enqueued:?}");
    println!("{CHILD_MARK}{}", enqueued.view().run);
    // Killed here, before the commit (the parent's SIGKILL); the deadline
    // only ends a child whose parent is gone.
    std::thread::sleep(Duration::from_secs(60));
    panic!("the parent never killed this child");
}

/// A key enqueued again in a later transaction: the same request is the
/// run already there (1 statement, the read; nothing written), another
/// payload is refused naming it (the same); neither changes the run.
#[test]
fn a_key_enqueued_again_in_another_transaction_is_the_same_run() {
    let (store, mut conn, _) = setup("again");
    let (t, k, c) = (template(), key("order-300"), coordinator(&store));
    let now = at("2026-01-05T00:00:30Z");
    let body = request(r#"{"payload":{"order":300}}"#);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let first = store.enqueue_run_in(&tx, &t, &k, &body, now).unwrap();
    tx.commit().unwrap();

    let later = at("2026-01-05T00:01:10Z");
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let (statements, changes) = (store.statements(), tx.total_changes());
    match store.enqueue_run_in(&tx, &t, &k, &body, later) {
        Ok(Enqueued::Existing(view)) => assert_eq!(view.run, first.view().run),
        other => panic!("the same request is the same run: {other:?}"),
    }
    let other = request(r#"{"payload":{"order":301}}"#);
    match store.enqueue_run_in(&tx, &t, &k, &other, later) {
        Err(RunError::Refused(RunRefusal::Differs { fields, existing })) => {
            assert_eq!(fields, ["payload"]);
            assert_eq!(existing.run, first.view().run);
        }
        other => panic!("another payload under the key is refused: {other:?}"),
    }
    assert_eq!(
        store.statements() - statements,
        2,
        "one read each, no write"
    );
    assert_eq!(tx.total_changes() - changes, 0, "nothing written");
    tx.commit().unwrap();
    let view = block_on(c.run_status(&t, &k, later)).unwrap().unwrap();
    let payload = view.payload.map(|p| p.get().to_string());
    assert_eq!(payload.as_deref(), Some(r#"{"order":300}"#));
}

/// Two connections enqueue one key at once: the second's IMMEDIATE
/// transaction waits for the first's lock, then reads its run and answers
/// it (after a commit), or creates it (after a rollback). One run either
/// way.
#[test]
fn concurrent_transactions_enqueueing_one_key_make_one_run() {
    let (store, mut conn, db) = setup("race");
    let t = template();
    let now = at("2026-01-05T00:00:30Z");
    let body = request(r#"{"payload":{"order":400}}"#);
    for (n, commit) in [true, false].into_iter().enumerate() {
        let k = key(&format!("order-40{n}"));
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let created = store.enqueue_run_in(&tx, &t, &k, &body, now).unwrap();
        let (started, answered) = (mpsc::channel(), mpsc::channel());
        let second = {
            let (store, t, k, body, db) = (
                store.clone(),
                t.clone(),
                k.clone(),
                body.clone(),
                db.clone(),
            );
            let (started, answered) = (started.0, answered.0);
            std::thread::spawn(move || {
                let mut conn = app_connection(&db);
                started.send(()).unwrap();
                // Waits here for the first transaction's lock.
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .unwrap();
                let answer = store.enqueue_run_in(&tx, &t, &k, &body, now);
                tx.commit().unwrap();
                answered.send(answer).unwrap();
            })
        };
        started.1.recv().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            answered.1.try_recv().is_err(),
            "the second waits for the lock"
        );
        if commit {
            tx.commit().unwrap();
        } else {
            tx.rollback().unwrap();
        }
        let answer = answered.1.recv_timeout(Duration::from_secs(10)).unwrap();
        second.join().unwrap();
        match (commit, answer) {
            (true, Ok(Enqueued::Existing(view))) | (false, Ok(Enqueued::Created(view))) => {
                assert_eq!(view.run, created.view().run);
            }
            (commit, answer) => panic!("first commits: {commit}: {answer:?}"),
        }
        let view = block_on(coordinator(&store).run_status(&t, &k, now))
            .unwrap()
            .unwrap();
        assert_eq!(view.status, RunStatus::Pending);
    }
}

/// A transaction on another database than the store's file is refused
/// with nothing written: the run would be where no runner looks.
#[test]
fn a_transaction_on_another_database_is_refused() {
    let (store, _, _) = setup("elsewhere");
    let other = scratch("elsewhere-other").join("other.db");
    let mut conn = Connection::open(&other).unwrap();
    let tx = conn.transaction().unwrap();
    let now = at("2026-01-05T00:00:30Z");
    let body = request("{}");
    match store.enqueue_run_in(&tx, &template(), &key("order-1"), &body, now) {
        Err(RunError::Coord(CoordError::Store(e))) => {
            assert_eq!(e.kind, StoreErrorKind::Other);
            assert!(e.message.contains("not on this store's file"), "{e}");
            assert!(e.message.contains("other.db"), "{e}");
        }
        other => panic!("refused: {other:?}"),
    }
    let mut memory = Connection::open_in_memory().unwrap();
    let tx = memory.transaction().unwrap();
    let refused = store.enqueue_run_in(&tx, &template(), &key("order-1"), &body, now);
    assert!(
        matches!(refused, Err(RunError::Coord(CoordError::Store(_)))),
        "{refused:?}"
    );
}

/// A deferred transaction that read the file before another connection
/// wrote the key's record cannot write over what it read: SQLite answers
/// busy at once, an `Unavailable` error that asks to roll back and run the
/// transaction again; run again, it answers the run.
#[test]
fn a_deferred_transaction_overtaken_by_another_write_is_asked_to_retry() {
    let (store, mut conn, _) = setup("deferred");
    let (t, k, c) = (template(), key("order-600"), coordinator(&store));
    let now = at("2026-01-05T00:00:30Z");
    let body = request(r#"{"payload":{"order":600}}"#);
    let tx = conn.transaction().unwrap();
    // The transaction's snapshot starts with its first read.
    assert_eq!(order_count(&tx), 0);
    let created = block_on(c.enqueue_run(&t, &k, &body, now)).unwrap();
    match store.enqueue_run_in(&tx, &t, &k, &body, now) {
        Err(RunError::Coord(CoordError::Store(e))) => {
            assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
            assert!(e.message.contains("another connection wrote since"), "{e}");
            assert!(e.message.contains("run it again"), "{e}");
        }
        other => panic!("the write over a stale read is refused: {other:?}"),
    }
    tx.rollback().unwrap();
    let tx = conn.transaction().unwrap();
    match store.enqueue_run_in(&tx, &t, &k, &body, now) {
        Ok(Enqueued::Existing(view)) => assert_eq!(view.run, created.view().run),
        other => panic!("run again, the transaction finds the run: {other:?}"),
    }
    tx.commit().unwrap();
}
