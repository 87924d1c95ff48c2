//! Each failure the store reports: its kind, one sentence that names the
//! store and says what to do, and never the password (a distinctive one,
//! looked for in every message, `Display` and `Debug`). What every server
//! store's errors share is written once (`cronslot_tests::server_store`);
//! here it gets Redis's URLs, codes and phrases.

use cronslot_core::coord::{StateStore, StoreErrorKind};
use cronslot_redis::RedisOptions;
use cronslot_tests::redis::{Server, unique};
use cronslot_tests::server_store::{
    self, Passwords, SECRET, WRONG, assert_hidden, free_port, shown,
};

use crate::support::{Redis, block_on, open};

#[test]
fn an_unreachable_server_is_unavailable() {
    let port = free_port();
    server_store::an_unreachable_server_is_unavailable::<Redis>(
        &format!("redis://:{SECRET}@127.0.0.1:{port}/0?prefix=p&connect_timeout=2"),
        &format!("Redis store redis://:***@127.0.0.1:{port}/0?prefix=p: connecting: "),
    );
}

/// A server with a password (of its own: `requirepass` is the whole
/// server's): the wrong one, none, a wrong one in REDISCLI_AUTH, and an ACL
/// user's wrong one are refused as `Other` with what to check, and never
/// shown; the right one opens the store, whose `Debug` hides it too.
#[test]
fn passwords_are_checked_and_never_shown() {
    let server = Server::start_with(Some(SECRET), &[]);
    let url = |auth: &str| format!("redis://{auth}127.0.0.1:{}/0?prefix=pw", server.port);
    let with = |password: Option<&str>| match password {
        Some(password) => url(&format!(":{password}@")),
        None => url(""),
    };
    server_store::passwords_are_checked_and_never_shown::<Redis>(Passwords {
        url: &with,
        variable: "REDISCLI_AUTH",
        redacted: "redis://:***@127.0.0.1".to_string(),
        refused_code: None,
        refused_says: &["the server's ACL"],
        missing_code: Some("NOAUTH"),
    });

    // An ACL user.
    server.cli(&[
        "ACL",
        "SETUSER",
        "alice",
        "on",
        &format!(">{SECRET}"),
        "~*",
        "+@all",
    ]);
    let e = block_on(open(
        &url(&format!("alice:{WRONG}@")),
        RedisOptions::default(),
    ))
    .unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains("redis://alice:***@"), "{e}");
    assert_hidden("ACL user", &shown(&e));

    let store = block_on(open(
        &url(&format!("alice:{SECRET}@")),
        RedisOptions::default(),
    ))
    .unwrap();
    assert!(block_on(store.get("x")).unwrap().is_none());
    assert_hidden(
        "an open store",
        &[format!("{store:?}"), store.location().to_string()],
    );
}

/// An ACL user that may not run scripts is refused with what to grant,
/// and nothing is written.
#[test]
fn a_user_without_permissions_is_told_what_to_grant() {
    let server = Server::start();
    let user = unique("ro");
    server.cli(&[
        "ACL",
        "SETUSER",
        &user,
        "on",
        &format!(">{SECRET}"),
        "~*",
        "+@read",
        "+@connection",
    ]);
    let url = format!(
        "redis://{user}:{SECRET}@127.0.0.1:{}/0?prefix=perm",
        server.port
    );
    server_store::a_user_without_a_permission_is_told_what_to_grant::<Redis>(
        &url,
        "NOPERM",
        &["lacks a permission", "EVALSHA"],
    );
    assert_eq!(
        server.cli(&["EXISTS", "{perm}:layout"]),
        "0",
        "nothing written"
    );
}

/// A database number the server does not have is refused on connecting.
#[test]
fn a_database_out_of_range_is_refused() {
    let server = Server::start();
    let url = format!("redis://127.0.0.1:{}/99?prefix=p", server.port);
    let e = block_on(open(&url, RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains("connecting"), "{e}");
}

/// A URL that is not Redis's is refused by the parser and by `connect`,
/// with the password hidden.
#[test]
fn a_url_that_is_not_redis() {
    server_store::a_url_of_another_store_is_refused::<Redis>("not a Redis store");
}

/// A full server under `maxmemory-policy noeviction` refuses writes with
/// `OOM`: unavailable (nothing written, worth retrying), and reads go on.
#[test]
fn a_full_server_refuses_writes_as_unavailable() {
    use cronslot_core::coord::{JobState, PutResult};
    let server = Server::start_with(None, &["--maxmemory-policy", "noeviction"]);
    let store = block_on(open(&server.url("full"), RedisOptions::default())).unwrap();
    let state = |s: i64| {
        JobState::new(
            "j",
            "0000000000000000",
            cronslot_core::conformance::at(s),
            false,
        )
    };
    assert_eq!(
        block_on(store.put("j", &state(0), None)).unwrap(),
        PutResult::Written(1)
    );
    server.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    let e = block_on(store.put("j", &state(1), Some(1))).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
    assert!(e.message.contains("OOM"), "{e}");
    assert!(e.message.contains("nothing was written"), "{e}");
    let current = block_on(store.get("j")).unwrap().unwrap();
    assert_eq!(
        (current.version, current.value),
        (1, state(0)),
        "nothing written"
    );
    server.cli(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(
        block_on(store.put("j", &state(1), Some(1))).unwrap(),
        PutResult::Written(2),
        "writes again once there is room"
    );
}
