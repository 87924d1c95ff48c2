//! Issue 27, point 5: on `cronslot run`, a keyed run enqueued now starts
//! within a second, by the store's wake signal, not at the runner's poll
//! (five seconds). On SQLite, PostgreSQL and Redis: a runner (`Runner`,
//! real clock, two workers, woken by its store) is idle; runs are enqueued
//! from another store handle (another connection, as another process
//! would); each must start soon after its enqueue returned.
//!
//! The bound asserted is 2.5 s, not 1 s: the machines that run CI are
//! shared and loaded, and a worker thread may wait for a core. It is still
//! well under the poll: a runner that only polled would start each run
//! 0 to 5 s after its enqueue (2.5 s on average), so five runs all under
//! 2.5 s by the poll alone would happen about one time in 32. The latencies
//! are printed; on an idle machine they are a few milliseconds (PostgreSQL,
//! Redis) or about the watcher's 250 ms period (SQLite).
//!
//! On PostgreSQL and Redis a raw `LISTEN` / `SUBSCRIBE` counts the
//! notifications: one per enqueue, and none for the runner's claims and
//! completions, whose records are not due now.
//!
//! When the listener's connection is cut (PostgreSQL's
//! `pg_terminate_backend`, Redis's `CLIENT KILL`, each on a server of the
//! test's own), the signal says it is lost, the listener connects again by
//! itself and says so, and the next enqueue wakes again.
//!
//! One module alone: `cargo test -p cronslot-tests --test it keyed_run_wakes`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, Runs, StateStore};
use cronslot_core::manifest::parse_manifest;
use cronslot_core::schedules::{RunRequest, ScheduleKey};
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_runner::{Clock, Jobs, Runner, RunnerStore, WakeSignal};
use cronslot_sqlite::SqliteStore;
use jiff::Timestamp;

/// Runs enqueued per store.
const RUNS: usize = 5;
/// The most a run may wait after its enqueue returned (see the module's
/// documentation for why not 1 s).
const BOUND: Duration = Duration::from_millis(2500);

/// Starts a runner of one dynamic job on `store`, woken by `signal`;
/// enqueues [`RUNS`] runs through `enqueuer`, each once the previous has
/// started, and answers each run's wait from its enqueue's return to its
/// start. `notified`, when given, counts the store's wake notifications:
/// it must grow by exactly one per enqueue.
fn enqueued_runs_start_at_once<S: RunnerStore, E: StateStore>(
    ns: &str,
    store: S,
    signal: Option<WakeSignal>,
    enqueuer: E,
    notified: Option<&AtomicU64>,
) -> Vec<Duration> {
    assert!(signal.is_some(), "{ns}: the store gives a wake signal");
    let name = format!("{ns}-orders");
    let text = format!("[[job]]\nname = \"{name}\"\ndynamic = true\nlease = \"5m\"\n");
    let manifest = parse_manifest(&text, "wakes.toml").unwrap();
    let template = manifest.templates[0].clone();
    let (started_tx, started_rx) = mpsc::channel::<(String, Instant)>();
    let jobs = Jobs::new().register(&name, move |ctx| {
        let started_tx = started_tx.clone();
        async move {
            let key = ctx.key().unwrap_or_default().to_string();
            let _ = started_tx.send((key, Instant::now()));
            Ok(())
        }
    });
    let runner = Runner::new(store, Vec::new(), Clock::real())
        .with_templates(manifest.templates)
        .with_jobs(jobs)
        .workers(2)
        .woken_by(signal);
    let stop = runner.stop_handle();
    let running = std::thread::spawn(move || runner.run());
    // The runner's first tick (and the listener's connection) happen now;
    // then it sleeps until the next poll.
    std::thread::sleep(Duration::from_millis(1500));
    let writer = CasCoordinator::new(enqueuer, 7);
    let before = notified.map(|n| n.load(Ordering::SeqCst));
    let mut waits = Vec::new();
    for i in 0..RUNS {
        let key = ScheduleKey::new(format!("order-{i}")).unwrap();
        let request = RunRequest {
            payload: None,
            at: None,
        };
        block_on(writer.enqueue_run(&template, &key, &request, Timestamp::now())).unwrap();
        let enqueued = Instant::now();
        let (ran, started) = started_rx
            .recv_timeout(Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("{ns}: run {key} never started: {e}"));
        assert_eq!(ran, key.as_str(), "{ns}: the run enqueued");
        waits.push(started.saturating_duration_since(enqueued));
        // Not in step with the poll: the next enqueue comes at another
        // point of the runner's five seconds.
        std::thread::sleep(Duration::from_millis(300 + 170 * i as u64));
    }
    // The completions are written by now, or soon: give the last one time
    // to land before counting what was notified.
    std::thread::sleep(Duration::from_millis(500));
    stop.stop();
    let summary = running.join().unwrap().unwrap();
    assert!(summary.ok(), "{ns}: {summary}");
    eprintln!("{ns}: enqueue to start: {waits:?}");
    for (i, wait) in waits.iter().enumerate() {
        assert!(
            *wait < BOUND,
            "{ns}: run {i} started {wait:?} after its enqueue, not by a wake: {waits:?}"
        );
    }
    if let (Some(n), Some(before)) = (notified, before) {
        assert_eq!(
            n.load(Ordering::SeqCst) - before,
            RUNS as u64,
            "{ns}: one notification per enqueue, none for the claims and completions"
        );
    }
    waits
}

#[test]
fn keyed_runs_start_at_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wakes.db");
    let store = SqliteStore::open(&path).unwrap();
    // Another connection to the file, as another process would have.
    let enqueuer = SqliteStore::open(&path).unwrap();
    let signal = store.wake_signal();
    enqueued_runs_start_at_once("sqlite", store.clone(), signal, enqueuer, None);
    // Idle, the watcher costs no statement of the store's: its own are
    // counted apart, four `PRAGMA data_version`s a second.
    assert!(store.wake_statements() > 0);
}

#[test]
fn keyed_runs_start_at_once_on_postgres() {
    let server = cronslot_tests::postgres::shared();
    let url = format!(
        "{}&schema={}",
        server.url("postgres"),
        cronslot_tests::postgres::unique("wakes")
    );
    let store = block_on(PgStore::connect(&url)).unwrap();
    let enqueuer = block_on(PgStore::connect(&url)).unwrap();
    let notified = pg_listen(&server.url("postgres"), &store.wake_channel());
    let signal = Some(store.wake_signal());
    enqueued_runs_start_at_once("pg", store, signal, enqueuer, Some(&notified));
}

#[test]
fn keyed_runs_start_at_once_on_redis() {
    let server = cronslot_tests::redis::shared();
    let url = server.url(&cronslot_tests::redis::unique("wakes"));
    let store = block_on(RedisStore::connect(&url)).unwrap();
    let enqueuer = block_on(RedisStore::connect(&url)).unwrap();
    let notified = redis_subscribe(server, &store.wake_channel());
    let signal = Some(store.wake_signal());
    enqueued_runs_start_at_once("redis", store, signal, enqueuer, Some(&notified));
}

/// A claim's write (its record's wake is its lease's expiry) notifies no
/// one; an enqueue (its wake is now) notifies once; on PostgreSQL, inside
/// an application's transaction, at commit and not on rollback.
#[test]
fn only_writes_that_make_a_record_due_notify_on_postgres() {
    use cronslot_core::coord::{Claim, Coordinator, Trigger};
    use cronslot_postgres::tokio_postgres::NoTls;

    let server = cronslot_tests::postgres::shared();
    let schema = cronslot_tests::postgres::unique("notify");
    let url = format!("{}&schema={schema}", server.url("postgres"));
    let store = block_on(PgStore::connect(&url)).unwrap();
    let notified = pg_listen(&server.url("postgres"), &store.wake_channel());
    let manifest = parse_manifest(
        "[[job]]\nname = \"pg-static\"\nschedule = \"* * * * *\"\ncommand = [\"true\"]\n\n\
         [[job]]\nname = \"pg-keyed\"\ndynamic = true\n",
        "notify.toml",
    )
    .unwrap();
    let coordinator = CasCoordinator::new(store.clone(), 3);
    let now = Timestamp::now();
    let slot = Timestamp::from_second(now.as_second() - now.as_second().rem_euclid(60)).unwrap();
    let claim =
        block_on(coordinator.claim(&manifest.jobs[0], now, Trigger::Planned(slot), "test-owner"))
            .unwrap();
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    settle();
    assert_eq!(
        notified.load(Ordering::SeqCst),
        0,
        "a claim notifies no one"
    );

    let template = &manifest.templates[0];
    let request = RunRequest {
        payload: None,
        at: None,
    };
    let key = ScheduleKey::new("order-1").unwrap();
    block_on(coordinator.enqueue_run(template, &key, &request, Timestamp::now())).unwrap();
    settle();
    assert_eq!(
        notified.load(Ordering::SeqCst),
        1,
        "an enqueue notifies once"
    );

    // In an application's transaction: at commit, and not on rollback.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (mut client, connection) =
            cronslot_postgres::tokio_postgres::connect(&server.url("postgres"), NoTls)
                .await
                .unwrap();
        tokio::spawn(connection);
        for (key, commit) in [("order-2", false), ("order-3", true)] {
            let key = ScheduleKey::new(key).unwrap();
            let txn = client.transaction().await.unwrap();
            store
                .enqueue_run_in(&txn, template, &key, &request)
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(
                notified.load(Ordering::SeqCst),
                1,
                "nothing is delivered before the transaction ends"
            );
            if commit {
                txn.commit().await.unwrap();
            } else {
                txn.rollback().await.unwrap();
            }
        }
    });
    settle();
    assert_eq!(
        notified.load(Ordering::SeqCst),
        2,
        "the committed enqueue notified, the rolled back one did not"
    );
}

/// A claim publishes nothing on Redis; an enqueue publishes once.
#[test]
fn only_writes_that_make_a_record_due_publish_on_redis() {
    use cronslot_core::coord::{Claim, Coordinator, Trigger};

    let server = cronslot_tests::redis::shared();
    let store = block_on(RedisStore::connect(
        &server.url(&cronslot_tests::redis::unique("notify")),
    ))
    .unwrap();
    let notified = redis_subscribe(server, &store.wake_channel());
    let manifest = parse_manifest(
        "[[job]]\nname = \"redis-static\"\nschedule = \"* * * * *\"\ncommand = [\"true\"]\n\n\
         [[job]]\nname = \"redis-keyed\"\ndynamic = true\n",
        "notify.toml",
    )
    .unwrap();
    let coordinator = CasCoordinator::new(store.clone(), 3);
    let now = Timestamp::now();
    let slot = Timestamp::from_second(now.as_second() - now.as_second().rem_euclid(60)).unwrap();
    let claim =
        block_on(coordinator.claim(&manifest.jobs[0], now, Trigger::Planned(slot), "test-owner"))
            .unwrap();
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    settle();
    assert_eq!(
        notified.load(Ordering::SeqCst),
        0,
        "a claim publishes nothing"
    );
    let key = ScheduleKey::new("order-1").unwrap();
    let request = RunRequest {
        payload: None,
        at: None,
    };
    block_on(coordinator.enqueue_run(&manifest.templates[0], &key, &request, Timestamp::now()))
        .unwrap();
    settle();
    assert_eq!(
        notified.load(Ordering::SeqCst),
        1,
        "an enqueue publishes once"
    );
}

/// Time for a notification to arrive, on a loaded machine.
fn settle() {
    std::thread::sleep(Duration::from_millis(500));
}

/// A raw `LISTEN` on `channel`, on a thread of its own for the rest of
/// the test binary: the notifications it received.
fn pg_listen(url: &str, channel: &str) -> Arc<AtomicU64> {
    use cronslot_postgres::tokio_postgres::{AsyncMessage, NoTls, connect};

    let count = Arc::new(AtomicU64::new(0));
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (url, channel, counted) = (url.to_string(), channel.to_string(), Arc::clone(&count));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (client, mut connection) = connect(&url, NoTls).await.unwrap();
            let messages = tokio::spawn(async move {
                while let Some(message) =
                    std::future::poll_fn(|cx| connection.poll_message(cx)).await
                {
                    if let Ok(AsyncMessage::Notification(_)) = message {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
            client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .unwrap();
            ready_tx.send(()).unwrap();
            let _ = messages.await;
            drop(client);
        });
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("LISTEN");
    count
}

/// A raw `SUBSCRIBE` to `channel`, on a thread of its own for the rest of
/// the test binary: the messages it received.
fn redis_subscribe(server: &cronslot_tests::redis::Server, channel: &str) -> Arc<AtomicU64> {
    let count = Arc::new(AtomicU64::new(0));
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let url = server.url("unused");
    let (channel, counted) = (channel.to_string(), Arc::clone(&count));
    std::thread::spawn(move || {
        // The store's URL minus its `prefix`, which redis-rs does not know.
        let url = url.split('?').next().unwrap_or_default().to_string();
        let client = redis::Client::open(url).unwrap();
        let mut conn = client.get_connection().unwrap();
        let mut pubsub = conn.as_pubsub();
        pubsub.subscribe(&channel).unwrap();
        ready_tx.send(()).unwrap();
        while pubsub.get_message().is_ok() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("SUBSCRIBE");
    count
}

/// Waits for the signal's next word, at most `within`.
fn next_word(signal: &mut WakeSignal, within: Duration) -> Option<cronslot_store_kit::Woken> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { tokio::time::timeout(within, signal.woken()).await.ok() })
}

/// The listener's connection is cut (`kill`): the signal says it is
/// lost, the listener connects again by itself (a quarter second later)
/// and says it is back, and an enqueue after that wakes it again.
fn the_signal_survives_a_cut<E: StateStore>(
    mut signal: WakeSignal,
    enqueuer: E,
    kill: impl Fn() -> bool,
) {
    use cronslot_store_kit::Woken;

    // The listener's first connection: it says it listens.
    assert_eq!(
        next_word(&mut signal, Duration::from_secs(10)),
        Some(Woken::Due)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !kill() {
        assert!(Instant::now() < deadline, "no listening connection to cut");
        std::thread::sleep(Duration::from_millis(50));
    }
    match next_word(&mut signal, Duration::from_secs(10)) {
        Some(Woken::Lost(why)) => assert!(!why.is_empty()),
        other => panic!("the cut is reported: {other:?}"),
    }
    assert_eq!(
        next_word(&mut signal, Duration::from_secs(10)),
        Some(Woken::Due),
        "listening again, with a wake for what came meanwhile"
    );
    let template = parse_manifest("[[job]]\nname = \"cut\"\ndynamic = true\n", "cut.toml")
        .unwrap()
        .templates
        .remove(0);
    let writer = CasCoordinator::new(enqueuer, 3);
    let request = RunRequest {
        payload: None,
        at: None,
    };
    block_on(writer.enqueue_run(
        &template,
        &ScheduleKey::new("after-the-cut").unwrap(),
        &request,
        Timestamp::now(),
    ))
    .unwrap();
    assert_eq!(
        next_word(&mut signal, BOUND),
        Some(Woken::Due),
        "an enqueue after the reconnection wakes"
    );
}

#[test]
fn the_wake_signal_reconnects_after_its_connection_is_cut_on_postgres() {
    // A server of its own: terminating a backend is refused on the
    // shared one.
    let pg = cronslot_tests::postgres::Server::start();
    let schema = cronslot_tests::postgres::unique("wake_cut");
    let url = format!("{}&schema={schema}", pg.url("postgres"));
    let store = block_on(PgStore::connect(&url)).unwrap();
    let channel = store.wake_channel();
    let signal = store.wake_signal();
    let enqueuer = block_on(PgStore::connect(&url)).unwrap();
    the_signal_survives_a_cut(signal, enqueuer, || {
        let killed = pg.psql(
            "postgres",
            &format!(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE query LIKE 'LISTEN%{channel}%'"
            ),
        );
        killed.trim() != "0"
    });
}

#[test]
fn the_wake_signal_reconnects_after_its_connection_is_cut_on_redis() {
    // A server of its own: the cut kills every subscriber on it.
    let redis = cronslot_tests::redis::Server::start();
    let url = redis.url(&cronslot_tests::redis::unique("wake-cut"));
    let store = block_on(RedisStore::connect(&url)).unwrap();
    let signal = store.wake_signal();
    let enqueuer = block_on(RedisStore::connect(&url)).unwrap();
    the_signal_survives_a_cut(signal, enqueuer, || {
        // The subscribed connection (`sub=1`; over RESP3 its type may
        // stay `normal`), and no other.
        let clients = redis.cli(&["CLIENT", "LIST"]);
        let mut killed = false;
        for line in clients
            .lines()
            .filter(|l| l.split_whitespace().any(|f| f == "sub=1"))
        {
            if let Some(id) = line.split_whitespace().find_map(|f| f.strip_prefix("id=")) {
                // The number of clients killed.
                killed |= redis.cli(&["CLIENT", "KILL", "ID", id]).trim() == "1";
            }
        }
        killed
    });
}
