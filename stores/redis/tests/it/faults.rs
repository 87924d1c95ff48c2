//! Faults of a real server: a crash (`SIGKILL`) after acknowledged
//! writes, a connection killed by the server, a server that stops
//! answering. Each is reported with the right kind, an acknowledged claim
//! survives a crash under `appendfsync always`, and the store reconnects
//! by itself.

use std::time::{Duration, Instant};

use cronslot_core::coord::{PutResult, StateStore, StoreErrorKind};
use cronslot_redis::{RedisOptions, RedisStore, parse_redis_location_with_env};
use cronslot_tests::redis::Server;
use cronslot_tests::server_store::{self, eventually, state};

use crate::support::{Redis, block_on, open};

/// With AOF and `appendfsync always`, on a server of its own, a claim
/// the server acknowledged survives `SIGKILL`: after the restart the lease
/// is there, a second claimer is refused the slot (it would run twice
/// otherwise), and the store reconnects by itself within seconds (the
/// first calls may find the old connection gone)
/// (`server_store::an_acknowledged_claim_survives_a_crash`).
#[test]
fn an_acknowledged_claim_survives_a_crash() {
    let server = Server::start();
    let url = server.url("crash");
    server_store::an_acknowledged_claim_survives_a_crash::<Redis>(server, &url, false);
}

/// A connection the server kills (`CLIENT KILL`) is replaced on the next
/// operation; the one that found it dead is unavailable, not wrong.
#[test]
fn a_killed_connection_is_replaced() {
    let server = Server::start();
    let store = block_on(open(&server.url("kill"), RedisOptions::default())).unwrap();
    assert_eq!(
        block_on(store.put("k", &state("k", 0), None)).unwrap(),
        PutResult::Written(1)
    );
    assert_eq!(store.requests().connections, 1);
    let killed: u32 = server
        .cli(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])
        .parse()
        .unwrap();
    assert!(killed >= 1, "killed {killed}");
    let found = eventually(Duration::from_secs(5), || block_on(store.get("k")));
    assert_eq!(found.unwrap().version, 1);
    assert_eq!(store.requests().connections, 2, "one new connection");
}

/// A server that stops answering (`CLIENT PAUSE`) runs into the command
/// timeout: a read is unavailable, a write ambiguous, because the script
/// was sent and the store cannot know whether the server will run it
/// (redis-rs drops the connection, and what the server does with a paused
/// client's buffered script then is its own affair). Once the server
/// answers again, the record is whole: the old one or the new one, which
/// is what the coordinator's read-back settles.
#[test]
fn a_silent_server_makes_writes_ambiguous() {
    let server = Server::start();
    let location = parse_redis_location_with_env(&server.url("pause"), |_| None)
        .unwrap()
        .with_command_timeout(Duration::from_millis(300));
    let store = block_on(RedisStore::connect_with(location, RedisOptions::default())).unwrap();
    assert_eq!(
        block_on(store.put("p", &state("p", 0), None)).unwrap(),
        PutResult::Written(1)
    );

    server.cli(&["CLIENT", "PAUSE", "1500", "ALL"]);
    let started = Instant::now();
    let e = block_on(store.put("p", &state("p", 1), Some(1))).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Ambiguous, "{e}");
    assert!(
        e.message.contains("may or may not have been applied"),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1400),
        "the timeout, not the pause"
    );
    let e = block_on(store.get("p")).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");

    std::thread::sleep(Duration::from_millis(1600));
    let current = eventually(Duration::from_secs(5), || block_on(store.get("p")))
        .expect("the record is still there");
    match current.version {
        1 => assert_eq!(current.value, state("p", 0)),
        2 => assert_eq!(current.value, state("p", 1)),
        v => panic!("version {v} after one ambiguous write"),
    }
}
