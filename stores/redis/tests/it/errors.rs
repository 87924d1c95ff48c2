//! Each failure the store reports: its kind, one sentence that names the
//! store and says what to do, and never the password (a distinctive one,
//! looked for in every message, `Display` and `Debug`).

use cronslot_core::coord::{StateStore, StoreError, StoreErrorKind};
use cronslot_redis::{RedisOptions, RedisStore, parse_redis_location_with_env};
use cronslot_tests::redis::{Server, unique};

use crate::support::{block_on, open};

/// The password every test here uses: it must never show.
const SECRET: &str = "Qz7-kumquat-Secret-91";
/// A wrong password: it must never show either.
const WRONG: &str = "Wx3-wrong-Guess-44";

fn assert_hidden(what: &str, texts: &[String]) {
    for text in texts {
        for secret in [SECRET, WRONG] {
            assert!(
                !text.contains(secret),
                "{what}: the password shows in: {text}"
            );
        }
    }
}

fn shown(e: &StoreError) -> Vec<String> {
    let store: StoreError = e.clone();
    vec![
        e.to_string(),
        format!("{e:?}"),
        e.message().to_string(),
        store.to_string(),
        format!("{store:?}"),
    ]
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn an_unreachable_server_is_unavailable() {
    let port = free_port();
    let url = format!("redis://:{SECRET}@127.0.0.1:{port}/0?prefix=p&connect_timeout=2");
    let e = block_on(open(&url, RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Unavailable, "{e}");
    assert!(
        e.message().starts_with(&format!(
            "Redis store redis://:***@127.0.0.1:{port}/0?prefix=p: connecting: "
        )),
        "{e}"
    );
    assert!(
        e.message().contains("check that the server is running"),
        "{e}"
    );
    assert_hidden("unreachable", &shown(&e));
}

/// A server with a password: the wrong one, none, and an ACL user's wrong
/// one are refused as `Other` with what to check, and never shown; the
/// right one opens the store, whose `Debug` hides it too.
#[test]
fn passwords_are_checked_and_never_shown() {
    let server = Server::start_with(Some(SECRET), &[]);
    let url = |auth: &str| format!("redis://{auth}127.0.0.1:{}/0?prefix=pw", server.port);

    let e = block_on(open(&url(&format!(":{WRONG}@")), RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains("check both"), "{e}");
    assert!(e.message().contains("redis://:***@127.0.0.1"), "{e}");
    assert_hidden("wrong password", &shown(&e));

    let e = block_on(open(&url(""), RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert_eq!(e.code(), Some("NOAUTH"), "{e}");
    assert!(e.message().contains("REDISCLI_AUTH"), "{e}");

    // REDISCLI_AUTH, when the URL has no password.
    let location =
        parse_redis_location_with_env(&url(""), |v| (v == "REDISCLI_AUTH").then(|| WRONG.into()))
            .unwrap();
    let e = block_on(RedisStore::connect_with(location, RedisOptions::default())).unwrap_err();
    assert!(e.message().contains("check both"), "{e}");
    assert_hidden("REDISCLI_AUTH", &shown(&e));

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
    let e = block_on(open(&url, RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert_eq!(e.code(), Some("NOPERM"), "{e}");
    assert!(e.message().contains("lacks a permission"), "{e}");
    assert_hidden("NOPERM", &shown(&e));
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
