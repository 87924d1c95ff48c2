//! The core conformance suite (docs/design.md §5) against `PgStore` on the
//! test server, through the generic compare-and-set coordinator: the same
//! test functions that memory, SQLite, DynamoDB and the Durable Object
//! pass. Each test gets a schema of its own, and judges leases by the
//! suite's (virtual) clock.

use crate::support;

cronslot_core::conformance_suite!(support::conformance_coordinator(), support::block_on, "pg");
cronslot_core::schedules_suite!(support::conformance_coordinator(), support::block_on, "pg");
cronslot_core::runs_suite!(support::conformance_coordinator(), support::block_on, "pg");

/// A schema-1 record written straight into the table (as an older cronslot
/// left it) loads, and the job runs on from it.
#[test]
fn schema_1_record_loads() {
    let store = support::fresh_store("schema1");
    let schema = store.location().schema().to_string();
    let coordinator = cronslot_core::coord::CasCoordinator::new(store, 7);
    support::block_on(cronslot_core::conformance::schema_1_record_loads(
        &coordinator,
        "pg",
        |job, text| {
            let sql = format!(
                "INSERT INTO {schema}.job_state (job, version, state) VALUES ('{job}', 1, '{}')",
                text.replace('\'', "''")
            );
            cronslot_tests::postgres::shared().psql("postgres", &sql);
            std::future::ready(())
        },
    ));
}

/// The tick index's contract (`TickIndex`) on a fresh schema.
#[test]
fn tick_index_contract() {
    support::block_on(cronslot_core::conformance::tick_index_contract(
        support::fresh_store("tick"),
        "pg",
    ));
}
