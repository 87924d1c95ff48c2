//! Keyed runs enqueued in an application's own transaction
//! (`PgStore::enqueue_run_in`), on the shared server: the run exists if
//! and only if the transaction commits (commit, rollback, a process killed
//! before its commit), a key enqueued by two transactions is one run (one
//! after the other, and at once), and the statements are counted exactly.
//!
//! The crash test re-executes this test binary: the child runs the ignored
//! test `txn::crash_child_entry`, which reads its store from the
//! environment, enqueues in an open transaction, says so, and waits to be
//! killed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cronslot_core::coord::decide::{Enqueued, RunRefusal};
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, RunError, Runs, Schedules, StoreErrorKind,
    TickIndex, Trigger,
};
use cronslot_core::manifest::{JobTemplate, parse_manifest};
use cronslot_core::schedules::{RunRequest, RunStatus, ScheduleKey};
use cronslot_postgres::tokio_postgres::{Client, IsolationLevel};
use cronslot_postgres::{PgOptions, PgStore};
use cronslot_tests::postgres::{shared, unique};
use cronslot_tests::server_store::{SECRET, assert_hidden, rw, shown};
use jiff::Timestamp;

use crate::support::{block_on, fresh_url, open};

const JOB: &str = "order-confirmation";

/// The child's store URL; unset in ordinary runs.
const CHILD_URL: &str = "CRONSLOT_TXN_CHILD_URL";
/// What the child prints once its transaction holds the order and the run.
const CHILD_MARK: &str = "@@txn-child enqueued ";

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

/// A store in a new schema (judged by the database's clock, as in
/// production), its `orders` table, and a client of the application's own.
async fn setup(tag: &str) -> (PgStore, Client) {
    let store = open(&fresh_url(tag), PgOptions::default()).await.unwrap();
    let client = store.connect_client().await.unwrap();
    client
        .batch_execute(&format!(
            "CREATE TABLE {}.orders (id bigint PRIMARY KEY, total numeric NOT NULL)",
            store.location().schema()
        ))
        .await
        .unwrap();
    (store, client)
}

fn orders(store: &PgStore) -> String {
    format!("{}.orders", store.location().schema())
}

async fn order_count(store: &PgStore, client: &Client) -> i64 {
    client
        .query_one(&format!("SELECT count(*) FROM {}", orders(store)), &[])
        .await
        .unwrap()
        .get(0)
}

fn coordinator(store: &PgStore) -> CasCoordinator<PgStore> {
    CasCoordinator::new(store.clone(), 7)
}

/// The business write and the enqueue in one transaction, committed: the
/// run is pending for the store's readers only after the commit, the
/// tick's wake index finds it, and a claim runs it. 1 read and 1 write.
#[test]
fn a_committed_transaction_enqueues_its_run() {
    block_on(async {
        let (store, mut client) = setup("txn_commit").await;
        let (t, k, c) = (template(), key("order-123"), coordinator(&store));
        let body = request(r#"{"payload":{"order":123}}"#);
        let tx = client.transaction().await.unwrap();
        tx.execute(
            &format!(
                "INSERT INTO {} (id, total) VALUES (123, 42.5)",
                orders(&store)
            ),
            &[],
        )
        .await
        .unwrap();
        let before = store.requests();
        let created = match store.enqueue_run_in(&tx, &t, &k, &body).await {
            Ok(Enqueued::Created(view)) => view,
            other => panic!("a new key creates its run: {other:?}"),
        };
        assert_eq!(
            rw(store.requests().since(&before)),
            (1, 1),
            "1 read, 1 write"
        );
        assert_eq!(created.status, RunStatus::Pending);
        assert!(created.run.starts_with("order-confirmation/order-123@"));
        assert_eq!(
            c.run_status(&t, &k, Timestamp::now()).await,
            Ok(None),
            "uncommitted, the run is not there for others"
        );
        tx.commit().await.unwrap();

        let view = c.run_status(&t, &k, Timestamp::now()).await.unwrap();
        let view = view.expect("committed, the run exists");
        assert_eq!(
            (view.run.as_str(), view.status),
            (created.run.as_str(), RunStatus::Pending)
        );
        assert_eq!(
            view.payload.map(|p| p.get().to_string()).as_deref(),
            Some(r#"{"order":123}"#)
        );
        let tick = store.tick_start(Timestamp::now(), 100).await.unwrap();
        assert!(
            tick.woken
                .iter()
                .any(|j| j == "order-confirmation/order-123"),
            "the wake index holds the run: {:?}",
            tick.woken
        );
        let now = Timestamp::now();
        let spec = c
            .schedule_for_claim(&t, &k, now)
            .await
            .unwrap()
            .expect("a run to claim");
        let lease = match c.claim(&spec, now, Trigger::Tick, "w1").await {
            Ok(Claim::Claimed(lease)) => lease,
            other => panic!("the run is due at once: {other:?}"),
        };
        c.complete(&spec, lease.fence, None, Timestamp::now())
            .await
            .unwrap();
        let done = c
            .run_status(&t, &k, Timestamp::now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((done.status, done.attempts), (RunStatus::Succeeded, 1));
        assert_eq!(order_count(&store, &client).await, 1);
    });
}

/// Rolled back (explicitly, or the transaction dropped unfinished): no
/// order and no run, and the key is free for the next enqueue.
#[test]
fn a_rolled_back_transaction_leaves_no_run() {
    block_on(async {
        let (store, mut client) = setup("txn_rollback").await;
        let (t, c) = (template(), coordinator(&store));
        let body = request(r#"{"payload":{"order":124}}"#);
        for (k, explicit) in [(key("order-124"), true), (key("order-125"), false)] {
            let tx = client.transaction().await.unwrap();
            tx.execute(
                &format!("INSERT INTO {} (id, total) VALUES (124, 1)", orders(&store)),
                &[],
            )
            .await
            .unwrap();
            let enqueued = store.enqueue_run_in(&tx, &t, &k, &body).await.unwrap();
            assert!(matches!(enqueued, Enqueued::Created(_)), "{enqueued:?}");
            if explicit {
                tx.rollback().await.unwrap();
            } else {
                drop(tx);
            }
            assert_eq!(order_count(&store, &client).await, 0);
            assert_eq!(c.run_status(&t, &k, Timestamp::now()).await, Ok(None));
            match c.enqueue_run(&t, &k, &body, Timestamp::now()).await {
                Ok(Enqueued::Created(_)) => {}
                other => panic!("the key was never taken: {other:?}"),
            }
        }
    });
}

/// A process killed (SIGKILL) after its transaction wrote the order and
/// enqueued the run, before its commit: neither exists, and the key is
/// free.
#[test]
fn a_process_killed_before_its_commit_leaves_no_order_and_no_run() {
    let (store, client) = block_on(setup("txn_crash"));
    let url = format!(
        "{}&schema={}",
        cronslot_tests::postgres::shared().url("postgres"),
        store.location().schema()
    );
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "txn::crash_child_entry",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_URL, &url)
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
    assert!(run.starts_with("order-confirmation/order-200@"), "{run}");
    // The child's transaction holds both, uncommitted; now it dies.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed: {status}");
    block_on(async {
        let (t, k, c) = (template(), key("order-200"), coordinator(&store));
        assert_eq!(order_count(&store, &client).await, 0, "no order");
        assert_eq!(
            c.run_status(&t, &k, Timestamp::now()).await,
            Ok(None),
            "no run"
        );
        // The server rolls the dead session's transaction back (at once,
        // or when it notices the closed socket): an enqueue of the key
        // then creates the run.
        match c
            .enqueue_run(
                &t,
                &k,
                &request(r#"{"payload":{"order":200}}"#),
                Timestamp::now(),
            )
            .await
        {
            Ok(Enqueued::Created(_)) => {}
            other => panic!("the killed transaction's run never existed: {other:?}"),
        }
    });
}

/// The child of the crash test: does nothing unless started by it (hence
/// ignored in ordinary runs).
#[test]
#[ignore = "child process of the crash test; runs only when it re-executes this binary"]
fn crash_child_entry() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        return;
    };
    block_on(async {
        let store = open(&url, PgOptions::default()).await.unwrap();
        let mut client = store.connect_client().await.unwrap();
        let tx = client.transaction().await.unwrap();
        tx.execute(
            &format!(
                "INSERT INTO {} (id, total) VALUES (200, 9.99)",
                orders(&store)
            ),
            &[],
        )
        .await
        .unwrap();
        let body = request(r#"{"payload":{"order":200}}"#);
        let enqueued = store
            .enqueue_run_in(&tx, &template(), &key("order-200"), &body)
            .await
            .unwrap();
        assert!(matches!(enqueued, Enqueued::Created(_)), "{enqueued:?}");
        println!("{CHILD_MARK}{}", enqueued.view().run);
        // Killed here, before the commit (the parent's SIGKILL); the
        // deadline only ends a child whose parent is gone.
        tokio::time::sleep(Duration::from_secs(60)).await;
        panic!("the parent never killed this child");
    });
}

/// A key enqueued again in a later transaction: the same request is the
/// run already there (1 read, no write), another payload is refused naming
/// it (1 read, no write); neither changes the run.
#[test]
fn a_key_enqueued_again_in_another_transaction_is_the_same_run() {
    block_on(async {
        let (store, mut client) = setup("txn_again").await;
        let (t, k, c) = (template(), key("order-300"), coordinator(&store));
        let body = request(r#"{"payload":{"order":300}}"#);
        let tx = client.transaction().await.unwrap();
        let first = store.enqueue_run_in(&tx, &t, &k, &body).await.unwrap();
        tx.commit().await.unwrap();

        let tx = client.transaction().await.unwrap();
        let before = store.requests();
        match store.enqueue_run_in(&tx, &t, &k, &body).await {
            Ok(Enqueued::Existing(view)) => assert_eq!(view.run, first.view().run),
            other => panic!("the same request is the same run: {other:?}"),
        }
        assert_eq!(
            rw(store.requests().since(&before)),
            (1, 0),
            "1 read, no write"
        );
        let before = store.requests();
        let other = request(r#"{"payload":{"order":301}}"#);
        match store.enqueue_run_in(&tx, &t, &k, &other).await {
            Err(RunError::Refused(RunRefusal::Differs { fields, existing })) => {
                assert_eq!(fields, ["payload"]);
                assert_eq!(existing.run, first.view().run);
            }
            other => panic!("another payload under the key is refused: {other:?}"),
        }
        assert_eq!(
            rw(store.requests().since(&before)),
            (1, 0),
            "1 read, no write"
        );
        tx.commit().await.unwrap();
        let view = c
            .run_status(&t, &k, Timestamp::now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            view.payload.map(|p| p.get().to_string()).as_deref(),
            Some(r#"{"order":300}"#)
        );
    });
}

/// Waits until the session `pid` waits for a lock (another transaction's
/// row), so that what follows happens while it waits.
async fn wait_for_lock(observer: &Client, pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let row = observer
            .query_one(
                "SELECT coalesce(wait_event_type, '') FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .await
            .unwrap();
        if row.get::<_, String>(0) == "Lock" {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "session {pid} never waited for the lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn backend_pid(client: &Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

/// Two transactions enqueue one key at once (READ COMMITTED): the second
/// waits for the first's row; when the first commits, the second answers
/// its run (`Existing`: its insert lost, so 2 reads and 1 write), or
/// refuses another payload; when the first rolls back, the second creates
/// the run. One run in every case.
#[test]
fn concurrent_transactions_enqueueing_one_key_make_one_run() {
    block_on(async {
        let (store, mut first) = setup("txn_race").await;
        let mut second = store.connect_client().await.unwrap();
        let observer = store.connect_client().await.unwrap();
        let pid = backend_pid(&second).await;
        let (t, c) = (template(), coordinator(&store));
        let body = request(r#"{"payload":{"order":400}}"#);
        let other = request(r#"{"payload":{"order":999}}"#);
        for (n, (commit, second_body)) in [(true, &body), (true, &other), (false, &body)]
            .into_iter()
            .enumerate()
        {
            let k = key(&format!("order-40{n}"));
            let tx1 = first.transaction().await.unwrap();
            let created = store.enqueue_run_in(&tx1, &t, &k, &body).await.unwrap();
            let tx2 = second.transaction().await.unwrap();
            let before = store.requests();
            let (answer, ()) =
                tokio::join!(store.enqueue_run_in(&tx2, &t, &k, second_body), async {
                    wait_for_lock(&observer, pid).await;
                    if commit {
                        tx1.commit().await.unwrap();
                    } else {
                        tx1.rollback().await.unwrap();
                    }
                });
            let spent = rw(store.requests().since(&before));
            match (commit, answer) {
                (true, Ok(Enqueued::Existing(view))) if second_body == &body => {
                    assert_eq!(view.run, created.view().run);
                    assert_eq!(spent, (2, 1), "read, the insert that lost, the winner read");
                }
                (true, Err(RunError::Refused(RunRefusal::Differs { fields, .. })))
                    if second_body == &other =>
                {
                    assert_eq!(fields, ["payload"]);
                    assert_eq!(spent, (2, 1));
                }
                (false, Ok(Enqueued::Created(view))) => {
                    assert_eq!(view.run, created.view().run, "the same slot");
                    assert_eq!(spent, (1, 1), "the insert went through after the rollback");
                }
                (commit, answer) => panic!("round {n} (first commits: {commit}): {answer:?}"),
            }
            tx2.commit().await.unwrap();
            let view = c
                .run_status(&t, &k, Timestamp::now())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(view.status, RunStatus::Pending);
            let payload = view.payload.map(|p| p.get().to_string());
            assert_eq!(payload.as_deref(), Some(r#"{"order":400}"#));
        }
    });
}

/// Under REPEATABLE READ (and SERIALIZABLE), the second transaction's
/// wait ends in a serialization failure: an `Unavailable` error, SQLSTATE
/// 40001, that says to roll back and run the transaction again; run again,
/// it answers the run.
#[test]
fn repeatable_read_asks_to_retry_the_transaction() {
    block_on(async {
        let (store, mut first) = setup("txn_rr").await;
        let mut second = store.connect_client().await.unwrap();
        let observer = store.connect_client().await.unwrap();
        let pid = backend_pid(&second).await;
        let (t, k) = (template(), key("order-500"));
        let body = request(r#"{"payload":{"order":500}}"#);
        let tx1 = first.transaction().await.unwrap();
        let created = store.enqueue_run_in(&tx1, &t, &k, &body).await.unwrap();
        let tx2 = second
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .start()
            .await
            .unwrap();
        let (answer, ()) = tokio::join!(store.enqueue_run_in(&tx2, &t, &k, &body), async {
            wait_for_lock(&observer, pid).await;
            tx1.commit().await.unwrap();
        });
        match answer {
            Err(RunError::Coord(CoordError::Store(e))) => {
                assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
                assert_eq!(e.code(), Some("40001"), "{e}");
                assert!(e.message.contains("roll it back and run it again"), "{e}");
                assert!(
                    e.message.contains("in the application's transaction"),
                    "{e}"
                );
            }
            other => panic!("a serialization failure: {other:?}"),
        }
        tx2.rollback().await.unwrap();
        let tx2 = second
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .start()
            .await
            .unwrap();
        match store.enqueue_run_in(&tx2, &t, &k, &body).await {
            Ok(Enqueued::Existing(view)) => assert_eq!(view.run, created.view().run),
            other => panic!("run again, the transaction finds the run: {other:?}"),
        }
        tx2.commit().await.unwrap();
    });
}

/// An enqueue in a transaction an earlier statement of the application
/// already failed: refused by the server (25P02), the error says to roll
/// back; no error of the store, opened by a role with a password, shows
/// the password.
#[test]
fn an_aborted_transaction_is_named_and_no_error_shows_the_password() {
    let db = shared().fresh_database("txn_secret");
    let role = unique("txn_role");
    shared().create_role(&role, Some(SECRET));
    shared().psql(&db, &format!("GRANT CREATE ON DATABASE {db} TO {role}"));
    let url = format!("{}&schema=s", shared().url_as(&role, Some(SECRET), &db));
    block_on(async {
        let store = open(&url, PgOptions::default()).await.unwrap();
        let mut client = store.connect_client().await.unwrap();
        let tx = client.transaction().await.unwrap();
        assert!(tx.execute("SELECT 1 / 0", &[]).await.is_err());
        let body = request(r#"{"payload":{"order":700}}"#);
        match store
            .enqueue_run_in(&tx, &template(), &key("order-700"), &body)
            .await
        {
            Err(RunError::Coord(CoordError::Store(e))) => {
                assert_eq!(e.kind, StoreErrorKind::Other, "{e}");
                assert_eq!(e.code(), Some("25P02"), "{e}");
                assert!(
                    e.message
                        .contains("an earlier statement of the transaction failed"),
                    "{e}"
                );
                assert!(e.message.contains("reading the state of job \"order-confirmation/order-700\" in the application's transaction"), "{e}");
                assert!(
                    e.message.contains(&role),
                    "the message names the store: {e}"
                );
                assert_hidden("an aborted transaction", &shown(&e));
            }
            other => panic!("the aborted transaction is refused: {other:?}"),
        }
        tx.rollback().await.unwrap();
    });
}
