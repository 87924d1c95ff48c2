//! The `cronslot` command on a real PostgreSQL server: the fleet of
//! [`crate::fleet`] (issue 13, docs/reliability.md "A fleet on
//! PostgreSQL"; the crash is `pg_ctl stop -m immediate`, the restart
//! recovers from the write-ahead log, the cut is `pg_terminate_backend` of
//! every connection), the store commands of [`crate::server_cmds`], and
//! the errors.

use std::time::Duration;

use cronslot_tests::postgres::Server;

use crate::fleet::{self, FleetStore};
use crate::server_cmds::{self, CliStore};

/// A database of a server.
struct Pg<'s> {
    server: &'s Server,
    db: String,
}

impl FleetStore for Pg<'_> {
    fn crash(&self) {
        self.server.crash();
    }

    fn restart(&self) {
        self.server.restart();
        self.server.wait_ready(Duration::from_secs(30));
    }

    fn cut_connections(&self) -> u32 {
        self.server.terminate_connections(&self.db)
    }

    fn cut_name(&self) -> &'static str {
        "pg_terminate_backend"
    }
}

impl CliStore for Pg<'_> {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn found_there(&self) -> &'static str {
        "already"
    }

    fn label_start(&self) -> String {
        "postgres://postgres@127.0.0.1:".into()
    }

    fn check_init_document(&self, v: &serde_json::Value) {
        assert_eq!(v["schema"], "ops");
        assert_eq!(v["applied_migrations"], serde_json::json!([]));
        assert!(v["version"].as_i64().is_some_and(|n| n >= 1), "{v}");
    }

    fn records(&self) -> usize {
        let n = self
            .server
            .psql(&self.db, "SELECT count(*) FROM ops.job_state");
        n.parse().expect("a count")
    }

    fn paused(&self) -> usize {
        let sql = "SELECT count(*) FROM ops.job_state WHERE state LIKE '%\"paused\":true%'";
        self.server.psql(&self.db, sql).parse().expect("a count")
    }

    fn rewind_two_minutes(&self) {
        self.server.psql(
            &self.db,
            "UPDATE ops.job_state SET state = regexp_replace(state, \
             '\"(created_at|cursor)\":\"[^\"]*\"', \
             '\"\\1\":\"' || to_char((now() - interval '2 minutes') at time zone 'UTC', \
             'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || '\"', 'g')",
        );
        self.server.psql(
            &self.db,
            "UPDATE ops.tick_mark SET mark = now() - interval '2 minutes'",
        );
    }
}

#[test]
fn a_fleet_on_postgres_runs_every_slot_once_through_kills_freezes_crashes_and_cuts() {
    // A server of its own: this test crashes it.
    let server = Server::start();
    let db = server.fresh_database("fleet");
    let url = server.url(&db);
    let pg = Pg {
        server: &server,
        db,
    };
    fleet::runs_every_slot_once_through_faults(&pg, &url, "fleet-pg");
}

/// `init`, `tick`, the store commands and `serve` on PostgreSQL, in a
/// schema of its own (`ops`).
#[test]
fn init_tick_and_the_store_commands_work_on_postgres() {
    let server = cronslot_tests::postgres::shared();
    let db = server.fresh_database("cli");
    let url = format!("{}&schema=ops", server.url(&db));
    let pg = Pg { server, db };
    server_cmds::init_tick_and_the_store_commands_work(
        &pg,
        &url,
        &server_cmds::scratch("pg", "cli"),
    );
}

/// Bad input on PostgreSQL: a wrong password, a closed port and a bad
/// `sslmode`.
#[test]
fn postgres_errors_name_the_store_and_never_the_password() {
    let server = cronslot_tests::postgres::shared();
    let db = server.fresh_database("cli_errors");
    let secret = "Sw0rdfish-9f3e";
    let user = cronslot_tests::postgres::unique("wrongpw");
    server.create_role(&user, Some("the-right-one"));
    let closed = server_cmds::closed_port();
    let cases = [
        (server.url_as(&user, Some(secret), &db), 2, "password"),
        (
            format!("postgres://u:{secret}@127.0.0.1:{closed}/x?sslmode=disable&connect_timeout=2"),
            1,
            "127.0.0.1",
        ),
        (
            format!("postgres://u:{secret}@127.0.0.1:{closed}/x?sslmode=sometimes"),
            2,
            "sslmode",
        ),
    ];
    server_cmds::errors_name_the_store_and_never_the_password(
        &server_cmds::scratch("pg", "errors"),
        secret,
        &cases,
    );
}

/// Eight processes enqueue one key at once on PostgreSQL: one run.
#[test]
fn eight_processes_enqueueing_one_key_make_one_run_on_postgres() {
    let server = cronslot_tests::postgres::shared();
    let db = server.fresh_database("runs");
    let url = server.url(&db);
    let dir = server_cmds::scratch("pg", "runs");
    let init = server_cmds::cronslot(&dir, &["init"], &url);
    assert!(init.status.success(), "{init:?}");
    server_cmds::eight_processes_enqueueing_one_key_make_one_run(&dir, &url);
}
