//! Each failure the store reports: its kind, one sentence that names the
//! store and says what to do, nothing written, and never the password
//! (a distinctive one, looked for in every message, `Display` and `Debug`).

use cronslot_core::coord::{StateStore, StoreError, StoreErrorKind};
use cronslot_postgres::{
    PgOptions, PgStore, parse_postgres_location, parse_postgres_location_with_env,
};
use cronslot_tests::postgres::{shared, unique};

use crate::support::{block_on, fresh_url, open};

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
    let url = format!(
        "postgres://someone:{SECRET}@127.0.0.1:{port}/db?sslmode=disable&connect_timeout=2&schema=s"
    );
    let e = block_on(open(&url, PgOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Unavailable, "{e}");
    assert!(
        e.message().starts_with(&format!(
            "PostgreSQL store postgres://someone:***@127.0.0.1:{port}/db?sslmode=disable&schema=s: connecting: "
        )),
        "{e}"
    );
    assert!(
        e.message().contains("check that the server is running"),
        "{e}"
    );
    assert_eq!(e.code(), None);
    assert_hidden("unreachable", &shown(&e));
}

#[test]
fn a_wrong_password_is_refused_and_never_shown() {
    let role = unique("pw");
    shared().create_role(&role, Some(SECRET));
    let url = format!(
        "{}&schema=s",
        shared().url_as(&role, Some(WRONG), "postgres")
    );
    let e = block_on(open(&url, PgOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert_eq!(e.code(), Some("28P01"), "{e}");
    assert!(
        e.message().contains("password authentication failed"),
        "{e}"
    );
    assert!(e.message().contains("check both"), "{e}");
    assert!(
        e.message().contains(&format!("postgres://{role}:***@")),
        "{e}"
    );
    assert_hidden("wrong password", &shown(&e));

    // No password at all, where the server asks for one.
    let url = format!("{}&schema=s", shared().url_as(&role, None, "postgres"));
    let e = block_on(open(&url, PgOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(
        e.message()
            .contains("asks for a password the store does not have"),
        "{e}"
    );
    assert!(e.message().contains("PGPASSWORD"), "{e}");
    // PGPASSWORD, when the URL has no password.
    let location =
        parse_postgres_location_with_env(&url, |v| (v == "PGPASSWORD").then(|| WRONG.to_string()))
            .unwrap();
    let e = block_on(PgStore::connect_with(location, PgOptions::default())).unwrap_err();
    assert_eq!(e.code(), Some("28P01"), "{e}");
    assert_hidden("PGPASSWORD", &shown(&e));
}

/// A role that may not create schemas or tables: refused with what to
/// grant, nothing half-created; once an administrator has opened the store
/// and granted the role its tables, the role uses it (opening then only
/// reads the catalog).
#[test]
fn a_role_that_may_not_create_tables() {
    let db = shared().fresh_database("perm");
    let role = unique("nocreate");
    shared().create_role(&role, Some(SECRET));
    let url = |schema: &str| {
        format!(
            "{}&schema={schema}",
            shared().url_as(&role, Some(SECRET), &db)
        )
    };

    // No CREATE on the database: the schema cannot be made.
    let e = block_on(open(&url("s"), PgOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert_eq!(e.code(), Some("42501"), "{e}");
    assert!(
        e.message().contains("permission denied for database"),
        "{e}"
    );
    assert!(e.message().contains("creating schema \"s\""), "{e}");
    assert!(e.message().contains("grant"), "{e}");
    assert_hidden("permission denied", &shown(&e));
    assert_eq!(
        shared().psql(&db, "SELECT count(*) FROM pg_namespace WHERE nspname = 's'"),
        "0",
        "nothing created"
    );

    // An empty schema it may use but not create in: the tables cannot be
    // made, and the transaction leaves nothing behind.
    shared().psql(
        &db,
        &format!("CREATE SCHEMA t; GRANT USAGE ON SCHEMA t TO {role}"),
    );
    let e = block_on(open(&url("t"), PgOptions::default())).unwrap_err();
    assert_eq!(e.code(), Some("42501"), "{e}");
    assert!(
        e.message().contains("permission denied for schema t"),
        "{e}"
    );
    assert_eq!(
        shared().psql(
            &db,
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = 't'"
        ),
        "0",
        "no table half-created"
    );

    // An administrator creates the store; the role is granted its tables.
    let admin = block_on(open(
        &format!("{}&schema=s", shared().url(&db)),
        PgOptions::default(),
    ))
    .unwrap();
    assert!(admin.opened().created_schema());
    shared().psql(
        &db,
        &format!(
            "GRANT USAGE ON SCHEMA s TO {role}; \
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA s TO {role}"
        ),
    );
    let store = block_on(open(&url("s"), PgOptions::default())).unwrap();
    assert!(store.opened().already_there());
    let state = cronslot_core::coord::JobState::new(
        "j",
        "0000000000000000",
        cronslot_core::conformance::at(0),
        false,
    );
    block_on(store.put("j", &state, None)).unwrap();
    assert_eq!(block_on(admin.jobs()).unwrap(), vec!["j".to_string()]);
    // Neither the store nor its location shows the password.
    assert_hidden(
        "an open store",
        &[
            format!("{store:?}"),
            store.location().to_string(),
            format!("{:?}", store.location()),
        ],
    );
    assert!(store.location().to_string().contains(":***@"));
}

/// A schema written by a newer cronslot is refused, by opening and by
/// `init`, with what to do, and nothing is written.
#[test]
fn a_schema_from_a_newer_cronslot_is_refused_and_nothing_written() {
    let url = fresh_url("newer");
    let store = block_on(open(&url, PgOptions::default())).unwrap();
    let schema = store.location().schema().to_string();
    let state = cronslot_core::coord::JobState::new(
        "j",
        "0000000000000000",
        cronslot_core::conformance::at(0),
        false,
    );
    block_on(store.put("j", &state, None)).unwrap();
    let newer = cronslot_postgres::STORE_SCHEMA_VERSION + 1;
    shared().psql(
        "postgres",
        &format!(
            "INSERT INTO {schema}.schema_migrations (version, applied_by) VALUES ({newer}, 'cronslot-postgres 9.0.0')"
        ),
    );
    let snapshot = || {
        shared().psql(
            "postgres",
            &format!(
                "SELECT (SELECT string_agg(job || ':' || version, ',') FROM {schema}.job_state), \
                        (SELECT string_agg(version::text, ',' ORDER BY version) FROM {schema}.schema_migrations), \
                        (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                          WHERE n.nspname = '{schema}')"
            ),
        )
    };
    let before = snapshot();
    let e = block_on(open(&url, PgOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(
        e.message().contains(&format!("at store version {newer}")),
        "{e}"
    );
    assert!(e.message().contains("upgrade cronslot"), "{e}");
    let e = block_on(store.init()).unwrap_err();
    assert!(e.message().contains("upgrade cronslot"), "{e}");
    assert_eq!(snapshot(), before, "nothing written");
}

/// A schema someone else's tables live in is not taken over.
#[test]
fn a_foreign_schema_is_not_taken_over() {
    let db = shared().fresh_database("foreign");
    shared().psql(&db, "CREATE SCHEMA app; CREATE TABLE app.users (id int)");
    let e = block_on(open(
        &format!("{}&schema=app", shared().url(&db)),
        PgOptions::default(),
    ))
    .unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(
        e.message()
            .contains("is not a cronslot store (it has users"),
        "{e}"
    );
    assert_eq!(
        shared().psql(
            &db,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'app'"
        ),
        "1"
    );
}

#[test]
fn a_missing_database() {
    let url = format!("{}&schema=s", shared().url("no_such_database"));
    let e = block_on(open(&url, PgOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert_eq!(e.code(), Some("3D000"), "{e}");
    assert!(e.message().contains("create it"), "{e}");
}

/// A URL that is not PostgreSQL's is refused by the parser, with the
/// password hidden.
#[test]
fn a_url_that_is_not_postgresql() {
    for url in [
        format!("mysql://u:{SECRET}@h/db"),
        "sqlite:cronslot.db".to_string(),
        format!("dynamodb://table?region=x&password={SECRET}"),
    ] {
        let e = parse_postgres_location(&url).unwrap_err();
        assert!(e.message.contains("is not a PostgreSQL store"), "{e}");
        assert_hidden(
            "parser",
            &[e.message.clone(), e.input.clone(), format!("{e:?}")],
        );
        let e = block_on(PgStore::connect(&url)).unwrap_err();
        assert_eq!(e.kind(), &StoreErrorKind::Other);
        assert_hidden("connect", &shown(&e));
    }
    let e =
        parse_postgres_location(&format!("postgres://u:{SECRET}@h/db?sslmod=require")).unwrap_err();
    assert!(e.message.contains("unknown parameter \"sslmod\""), "{e}");
    assert_hidden("unknown parameter", &[e.message, e.input]);
}
