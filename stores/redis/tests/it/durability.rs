//! What the store says of its server's durability (`CONFIG GET`, `INFO
//! replication`), and `WAIT` for replicas (`?wait_replicas=N`): on real
//! servers, one of them a real replica.

use std::time::Duration;

use cronslot_core::coord::{PutResult, StateStore, StoreErrorKind};
use cronslot_redis::RedisOptions;
use cronslot_tests::redis::{Server, shared, unique};

use crate::support::{block_on, open};

fn state(job: &str) -> cronslot_core::coord::JobState {
    cronslot_core::coord::JobState::new(
        job,
        "0000000000000000",
        cronslot_core::conformance::at(0),
        false,
    )
}

/// The tests' servers run with AOF and `appendfsync always`, no eviction
/// policy and no replica: nothing to warn of.
#[test]
fn a_server_that_keeps_claims_has_no_warning() {
    let store = block_on(open(&shared().url(&unique("dur")), RedisOptions::default())).unwrap();
    let d = block_on(store.durability());
    assert_eq!(d.appendonly.as_deref(), Some("yes"));
    assert_eq!(d.appendfsync.as_deref(), Some("always"));
    assert_eq!(d.maxmemory_policy.as_deref(), Some("noeviction"));
    assert_eq!(d.role.as_deref(), Some("master"));
    assert_eq!(d.replicas, Some(0));
    assert_eq!(d.unchecked, None);
    assert_eq!(d.warnings(), Vec::<String>::new());
}

/// Each setting that can lose an acknowledged claim is named, with what
/// to set instead, once the server runs with it.
#[test]
fn unsafe_settings_are_named() {
    let server = Server::start();
    let store = block_on(open(&server.url("dur"), RedisOptions::default())).unwrap();
    server.cli(&["CONFIG", "SET", "appendfsync", "everysec"]);
    server.cli(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]);
    let warnings = block_on(store.durability()).warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("appendfsync is everysec"),
        "{warnings:?}"
    );
    assert!(
        warnings[0].contains("set appendfsync always"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("maxmemory-policy is volatile-lru"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("set maxmemory-policy noeviction"),
        "{warnings:?}"
    );

    server.cli(&["CONFIG", "SET", "appendonly", "no"]);
    let warnings = block_on(store.durability()).warnings();
    assert!(warnings[0].contains("appendonly is no"), "{warnings:?}");
    assert!(warnings[0].contains("set appendonly yes"), "{warnings:?}");
}

/// A user the ACL denies `CONFIG` (as managed services do) gets one
/// warning saying what could not be checked, not an error.
#[test]
fn a_server_that_hides_its_configuration_gets_a_warning_not_an_error() {
    let server = Server::start();
    server.cli(&[
        "ACL",
        "SETUSER",
        "jobs",
        "on",
        ">jobs-pass",
        "~*",
        "+@all",
        "-config",
    ]);
    let url = server
        .url("dur")
        .replacen("redis://", "redis://jobs:jobs-pass@", 1);
    let store = block_on(open(&url, RedisOptions::default())).unwrap();
    let d = block_on(store.durability());
    assert_eq!(d.appendonly, None);
    let warnings = d.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("cannot read the server's persistence settings"),
        "{warnings:?}"
    );
    assert!(!warnings[0].contains("jobs-pass"), "{warnings:?}");
}

/// A primary with a real replica: without `wait_replicas` the store warns
/// that a failover can lose a claim; with it, each write waits for the
/// replica (and is on it when the write answers); with more replicas
/// asked for than exist, a write is refused as unavailable (not acted
/// on) once `wait_timeout` has passed.
#[test]
fn writes_wait_for_the_replicas_asked_for() {
    // No wait before the primary streams its snapshot to the replica.
    let primary = Server::start_with(None, &["--repl-diskless-sync-delay", "0"]);
    let replica = Server::start_with(
        None,
        &["--replicaof", "127.0.0.1", &primary.port.to_string()],
    );
    // The replica has synchronised once the primary counts it online
    // (connected at first, it waits for the primary's snapshot).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !primary
        .cli(&["INFO", "replication"])
        .contains("state=online")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the replica did not connect: {}",
            replica.log_tail()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let unwaited = block_on(open(&primary.url("w0"), RedisOptions::default())).unwrap();
    let d = block_on(unwaited.durability());
    assert_eq!(d.replicas, Some(1));
    let warnings = d.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("has 1 replica and each write waits for none"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("?wait_replicas=1"), "{warnings:?}");

    let url = format!("{}&wait_replicas=1", primary.url("w1"));
    let waited = block_on(open(&url, RedisOptions::default())).unwrap();
    assert_eq!(
        block_on(waited.durability()).warnings(),
        Vec::<String>::new()
    );
    let written = block_on(waited.put("payroll", &state("payroll"), None)).unwrap();
    assert!(matches!(written, PutResult::Written(1)), "{written:?}");
    // Acknowledged by the replica before the write answered.
    let on_replica = replica.cli(&["HGET", "{w1:payroll}:state", "v"]);
    assert_eq!(on_replica.trim(), "1");

    let url = format!("{}&wait_replicas=2&wait_timeout=1", primary.url("w2"));
    let wanting = block_on(open(&url, RedisOptions::default())).unwrap();
    let started = std::time::Instant::now();
    let e = block_on(wanting.put("payroll", &state("payroll"), None)).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
    assert!(
        e.message
            .contains("reached 1 of the 2 replicas wait_replicas asks for within 1 s"),
        "{e}"
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
}
