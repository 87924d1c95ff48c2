//! Faults of a real server: a connection cut mid-statement, a statement
//! stuck behind a lock, a crash and a restart. Each is reported with the
//! right kind, nothing is half-written, and the store recovers by itself.

use std::process::Child;
use std::time::{Duration, Instant};

use cronslot_core::conformance::{at, job};
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, PutResult, StateStore, StoreErrorKind, Trigger,
};
use cronslot_postgres::{JudgeClock, PgOptions};
use cronslot_tests::postgres::{Server, shared, unique};
use cronslot_tests::server_store::state;

use crate::support::{Pg, block_on, fresh_url, open};
use cronslot_core::coord::Operator;

/// Runs `lock` (a statement taking a lock) in a transaction of its own
/// `psql`, holding it for `seconds`; returns once the lock is held.
fn hold(server: &Server, db: &str, lock: &str, seconds: f64) -> Child {
    let marker = unique("holder");
    let mut child = server.spawn_psql(
        db,
        &format!("/* {marker} */ BEGIN; {lock}; SELECT pg_sleep({seconds}); COMMIT;"),
    );
    let start = Instant::now();
    // Sleeping means the lock statement before it is done.
    let sleeping = || {
        server.psql(
            db,
            &format!(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE query LIKE '%{marker}%' AND wait_event = 'PgSleep'"
            ),
        ) == "1"
    };
    while !sleeping() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the lock was never taken");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Holds an exclusive lock on the store's `job_state` (reads and writes
/// wait).
fn hold_table(server: &Server, db: &str, schema: &str, seconds: f64) -> Child {
    hold(
        server,
        db,
        &format!("LOCK TABLE {schema}.job_state IN ACCESS EXCLUSIVE MODE"),
        seconds,
    )
}

/// Holds the row of `job` (writes wait; reads do not).
fn hold_row(server: &Server, db: &str, schema: &str, job: &str, seconds: f64) -> Child {
    hold(
        server,
        db,
        &format!("SELECT 1 FROM {schema}.job_state WHERE job = '{job}' FOR UPDATE"),
        seconds,
    )
}

/// Ends the store's connections (`pg_terminate_backend`) once its
/// statement waits for a lock, from another thread.
fn cut_when_waiting(app: &str) -> std::thread::JoinHandle<u32> {
    let app = app.to_string();
    std::thread::spawn(move || {
        let start = Instant::now();
        while shared().psql(
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE application_name = '{app}' AND wait_event_type = 'Lock'"
            ),
        ) != "1"
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the store's statement never waited for the lock"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        shared().terminate_application(&app)
    })
}

/// A connection cut while a read waits is `Unavailable`; while a write
/// waits, `Ambiguous` (it was sent; the server may have applied it). Here
/// it was not applied, and the next calls reconnect by themselves.
#[test]
fn a_cut_connection_is_reported_and_the_next_call_reconnects() {
    let app = unique("cut");
    let url = format!("{}&application_name={app}", fresh_url("cut"));
    let store = block_on(open(&url, PgOptions::default()))
        .unwrap()
        .judge_by(JudgeClock::Caller);
    let schema = store.location().schema().to_string();
    assert_eq!(
        block_on(store.put("j", &state("j", 0), None)).unwrap(),
        PutResult::Written(1)
    );
    let connections = store.requests().connections;

    let mut locker = hold_table(shared(), "postgres", &schema, 2.0);
    let cutter = cut_when_waiting(&app);
    let e = block_on(store.get("j")).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
    assert!(e.message.contains("terminating connection"), "{e}");
    assert!(e.message.contains("the next operation reconnects"), "{e}");
    assert_eq!(cutter.join().unwrap(), 1);
    locker.wait().unwrap();

    let mut locker = hold_row(shared(), "postgres", &schema, "j", 2.0);
    let cutter = cut_when_waiting(&app);
    let e = block_on(store.put("j", &state("j", 60), Some(1))).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Ambiguous, "{e}");
    assert!(
        e.message.contains("may or may not have been applied"),
        "{e}"
    );
    assert_eq!(cutter.join().unwrap(), 1);
    locker.wait().unwrap();

    // Not applied (it was cut while it waited for the lock); the store
    // reconnects and goes on.
    let read = block_on(store.get("j")).unwrap().unwrap();
    assert_eq!((read.version, &read.value), (1, &state("j", 0)));
    assert_eq!(
        block_on(store.put("j", &state("j", 60), Some(1))).unwrap(),
        PutResult::Written(2)
    );
    assert!(store.requests().connections > connections);

    // An idle connection cut between calls is noticed (its end is read
    // at once on loopback) and replaced: the next call succeeds. Were the
    // call to race the close, it would fail as unavailable, and the one
    // after it succeed.
    assert_eq!(shared().terminate_application(&app), 1);
    std::thread::sleep(Duration::from_millis(200));
    let read = match block_on(store.get("j")) {
        Ok(read) => read,
        Err(e) => {
            assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
            block_on(store.get("j")).unwrap()
        }
    };
    assert_eq!(read.unwrap().version, 2);
}

/// The coordinator turns an ambiguous write into a definite answer by
/// reading back: a claim whose write is cut is found not applied, planned
/// again and made once.
#[test]
fn the_coordinator_resolves_a_cut_claim() {
    let app = unique("cutclaim");
    let url = format!("{}&application_name={app}", fresh_url("cutclaim"));
    let store = block_on(open(&url, PgOptions::default()))
        .unwrap()
        .judge_by(JudgeClock::Caller);
    let schema = store.location().schema().to_string();
    let c = CasCoordinator::new(store.clone(), 7);
    let spec = job("pg", "cut", "schedule = \"* * * * *\"");
    let name = spec.name.as_str().to_string();
    block_on(c.claim(&spec, at(0), Trigger::Tick, "a")).unwrap();
    let writes = store.requests().writes;
    // Reads pass the row lock; the claim's write waits behind it and is
    // cut. The coordinator reads back, finds the record unchanged, and
    // writes again, which waits until the lock is gone.
    let mut locker = hold_row(shared(), "postgres", &schema, &name, 1.0);
    let cutter = cut_when_waiting(&app);
    let claimed = block_on(c.claim(&spec, at(61), Trigger::Tick, "a")).unwrap();
    assert_eq!(cutter.join().unwrap(), 1);
    locker.wait().unwrap();
    let Claim::Claimed(lease) = claimed else {
        panic!("the slot is due: {claimed:?}");
    };
    assert_eq!(lease.slot, at(60));
    assert_eq!(
        store.requests().writes - writes,
        2,
        "the cut write and the one that made it"
    );
    let status = block_on(c.status(&spec, at(62))).unwrap();
    assert_eq!(status.leases.len(), 1, "{status:?}");
    assert_eq!(status.fence, lease.fence);
}

/// A statement stuck behind a lock is cancelled by the server's statement
/// timeout: unavailable, quickly, nothing written.
#[test]
fn a_stuck_statement_times_out_as_unavailable() {
    let url = format!("{}&statement_timeout=1", fresh_url("stuck"));
    let store = block_on(open(&url, PgOptions::default())).unwrap();
    let schema = store.location().schema().to_string();
    block_on(store.put("j", &state("j", 0), None)).unwrap();
    let mut locker = hold_table(shared(), "postgres", &schema, 3.0);
    let start = Instant::now();
    let e = block_on(store.put("j", &state("j", 60), Some(1))).unwrap_err();
    let waited = start.elapsed();
    assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
    assert!(e.message.contains("statement timeout"), "{e}");
    assert!(waited < Duration::from_millis(2500), "took {waited:?}");
    locker.wait().unwrap();
    assert_eq!(block_on(store.get("j")).unwrap().unwrap().version, 1);
}

/// A server crash (`pg_ctl stop -m immediate`), on a server of its own:
/// calls fail as unavailable (nothing to connect to) while it is down, and
/// after the restart the store reconnects on its first call and finds
/// every committed write (`server_store::an_acknowledged_claim_survives_a_crash`).
#[test]
fn a_crash_and_restart() {
    let server = Server::start();
    let url = format!("{}&schema=crash&connect_timeout=2", server.url("postgres"));
    cronslot_tests::server_store::an_acknowledged_claim_survives_a_crash::<Pg>(server, &url, true);
}
