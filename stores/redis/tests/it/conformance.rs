//! The core conformance suite (docs/design.md §5) against `RedisStore` on
//! the test server, through the generic compare-and-set coordinator: the
//! same test functions that memory, SQLite, PostgreSQL, DynamoDB and the
//! Durable Object pass. Each test gets a key prefix of its own, and judges
//! leases by the suite's (virtual) clock.

use crate::support;

cronslot_core::conformance_suite!(
    support::conformance_coordinator(),
    support::block_on,
    "redis"
);
cronslot_core::schedules_suite!(
    support::conformance_coordinator(),
    support::block_on,
    "redis"
);
cronslot_core::runs_suite!(
    support::conformance_coordinator(),
    support::block_on,
    "redis"
);

/// A schema-1 record written straight into the record's key (as an older
/// cronslot left it) loads, and the job runs on from it.
#[test]
fn schema_1_record_loads() {
    let store = support::fresh_store("schema1");
    let prefix = store.location().prefix().to_string();
    let coordinator = cronslot_core::coord::CasCoordinator::new(store, 7);
    support::block_on(cronslot_core::conformance::schema_1_record_loads(
        &coordinator,
        "redis",
        |job, text| {
            let key = format!("{{{prefix}:{job}}}:state");
            cronslot_tests::redis::shared().cli(&["HSET", &key, "v", "1", "s", &text]);
            std::future::ready(())
        },
    ));
}

/// The tick index's contract (`TickIndex`) under a fresh prefix.
#[test]
fn tick_index_contract() {
    support::block_on(cronslot_core::conformance::tick_index_contract(
        support::fresh_store("tick"),
        "redis",
    ));
}
