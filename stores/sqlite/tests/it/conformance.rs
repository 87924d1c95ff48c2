//! The store conformance suite (the same functions the memory store, and
//! later DynamoDB and the Durable Object, run) on SQLite: once on a private
//! in-memory database, once on one file shared by every test, each test
//! through its own connection, so the tests running in parallel threads
//! also contend for the file's lock.

use std::path::PathBuf;
use std::sync::OnceLock;

use cronslot_core::coord::CasCoordinator;
use cronslot_sqlite::SqliteStore;

mod in_memory {
    use super::*;

    cronslot_core::conformance_suite!(
        CasCoordinator::new(SqliteStore::open_in_memory().unwrap(), 7),
        cronslot_core::coord::exec::block_on,
        "sqlite-mem"
    );
}

/// One file per run of this binary, started afresh so that the suite's
/// fixed job names do not meet a previous run's records.
fn shared_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("conformance");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("conformance.db")
    })
}

mod on_file {
    use super::*;

    cronslot_core::conformance_suite!(
        CasCoordinator::new(SqliteStore::open(shared_file()).unwrap(), 7),
        cronslot_core::coord::exec::block_on,
        "sqlite-file"
    );
    cronslot_core::schedules_suite!(
        CasCoordinator::new(SqliteStore::open(shared_file()).unwrap(), 7),
        cronslot_core::coord::exec::block_on,
        "sqlite-file"
    );
    cronslot_core::runs_suite!(
        CasCoordinator::new(SqliteStore::open(shared_file()).unwrap(), 7),
        cronslot_core::coord::exec::block_on,
        "sqlite-file"
    );
}

/// A schema-1 record written straight into the file (as an older cronslot
/// left it) loads, and the job runs on from it.
#[test]
fn schema_1_record_loads() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("conformance-schema-1");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    let coordinator = CasCoordinator::new(SqliteStore::open(&path).unwrap(), 7);
    cronslot_core::coord::exec::block_on(cronslot_core::conformance::schema_1_record_loads(
        &coordinator,
        "sqlite",
        |job, text| {
            let raw = rusqlite::Connection::open(&path).unwrap();
            raw.execute(
                "INSERT INTO job_state (job, version, state, updated_at) VALUES (?1, 1, ?2, '2026-01-05T01:00:00Z')",
                rusqlite::params![job, text],
            )
            .unwrap();
            std::future::ready(())
        },
    ));
}

/// The tick index's contract (`TickIndex`), on a fresh in-memory store and
/// on a fresh file.
#[test]
fn tick_index_contract() {
    use cronslot_core::conformance::tick_index_contract;
    use cronslot_core::coord::exec::block_on;
    block_on(tick_index_contract(
        SqliteStore::open_in_memory().unwrap(),
        "sqlite-mem",
    ));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("conformance-tick");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    block_on(tick_index_contract(
        SqliteStore::open(dir.join("tick.db")).unwrap(),
        "sqlite-file",
    ));
}
