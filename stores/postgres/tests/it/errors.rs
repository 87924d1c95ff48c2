//! Each failure the store reports: its kind, one sentence that names the
//! store and says what to do, nothing written, and never the password
//! (a distinctive one, looked for in every message, `Display` and `Debug`).
//! What every server store's errors share is written once
//! (`cronslot_tests::server_store`); here it gets PostgreSQL's URLs,
//! codes and phrases.

use cronslot_core::coord::{StateStore, StoreErrorKind};
use cronslot_postgres::{PgOptions, parse_postgres_location};
use cronslot_tests::postgres::{shared, unique};
use cronslot_tests::server_store::{self, Passwords, SECRET, assert_hidden, free_port};

use crate::support::{Pg, block_on, open};

#[test]
fn an_unreachable_server_is_unavailable() {
    let port = free_port();
    server_store::an_unreachable_server_is_unavailable::<Pg>(
        &format!(
            "postgres://someone:{SECRET}@127.0.0.1:{port}/db?sslmode=disable&connect_timeout=2&schema=s"
        ),
        &format!(
            "PostgreSQL store postgres://someone:***@127.0.0.1:{port}/db?sslmode=disable&schema=s: connecting: "
        ),
    );
}

/// A role whose password is checked (scram-sha-256): the wrong one, none,
/// and a wrong one in PGPASSWORD are refused, and never shown.
#[test]
fn a_wrong_password_is_refused_and_never_shown() {
    let role = unique("pw");
    shared().create_role(&role, Some(SECRET));
    let url = |password: Option<&str>| {
        format!("{}&schema=s", shared().url_as(&role, password, "postgres"))
    };
    server_store::passwords_are_checked_and_never_shown::<Pg>(Passwords {
        url: &url,
        variable: "PGPASSWORD",
        redacted: format!("postgres://{role}:***@"),
        refused_code: Some("28P01"),
        refused_says: &["password authentication failed"],
        missing_code: None,
    });
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
    server_store::a_user_without_a_permission_is_told_what_to_grant::<Pg>(
        &url("s"),
        "42501",
        &[
            "permission denied for database",
            "creating schema \"s\"",
            "grant",
        ],
    );
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
    let newer = cronslot_postgres::STORE_SCHEMA_VERSION + 1;
    let snapshot = |store: &cronslot_postgres::PgStore| {
        let schema = store.location().schema();
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
    let (store, before) =
        server_store::a_store_from_a_newer_cronslot_is_refused_and_nothing_written::<Pg>(
            |store| {
                let schema = store.location().schema();
                shared().psql(
                    "postgres",
                    &format!(
                        "INSERT INTO {schema}.schema_migrations (version, applied_by) VALUES ({newer}, 'cronslot-postgres 9.0.0')"
                    ),
                );
            },
            snapshot,
            &[&format!("at store version {newer}"), "upgrade cronslot"],
        );
    let e = block_on(store.init()).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains("upgrade cronslot"), "{e}");
    assert_eq!(snapshot(&store), before, "init wrote nothing");
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

/// A URL that is not PostgreSQL's is refused by the parser and by
/// `connect`, with the password hidden; so is an unknown parameter.
#[test]
fn a_url_that_is_not_postgresql() {
    server_store::a_url_of_another_store_is_refused::<Pg>("is not a PostgreSQL store");
    let e =
        parse_postgres_location(&format!("postgres://u:{SECRET}@h/db?sslmod=require")).unwrap_err();
    assert!(e.message.contains("unknown parameter \"sslmod\""), "{e}");
    assert_hidden("unknown parameter", &[e.message, e.input]);
}
