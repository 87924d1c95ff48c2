//! The core conformance suite (docs/design.md §5) against `DynamoStore` on moto,
//! through the generic compare-and-set coordinator: the same test functions
//! that memory, SQLite and the Durable Object pass. Each test gets a table
//! of its own on the binary's moto server.

use crate::support;

cronslot_core::conformance_suite!(
    support::conformance_coordinator(),
    support::block_on,
    "dynamo"
);
cronslot_core::schedules_suite!(
    support::conformance_coordinator(),
    support::block_on,
    "dynamo"
);
cronslot_core::runs_suite!(
    support::conformance_coordinator(),
    support::block_on,
    "dynamo"
);

/// A schema-1 record put straight into the table (as an older cronslot left
/// it) loads, and the job runs on from it.
#[test]
fn schema_1_record_loads() {
    use aws_sdk_dynamodb::types::AttributeValue;
    support::block_on(async {
        let setup = support::Setup::new();
        let store = setup.fresh_store("schema-1").await;
        let (client, table) = (store.client().clone(), store.table().to_string());
        let coordinator = cronslot_core::coord::CasCoordinator::new(store, 7);
        cronslot_core::conformance::schema_1_record_loads(&coordinator, "dynamo", |job, text| {
            let (client, table) = (client.clone(), table.clone());
            async move {
                client
                    .put_item()
                    .table_name(table)
                    .item("pk", AttributeValue::S(format!("job#{job}")))
                    .item("ver", AttributeValue::N("1".into()))
                    .item("state", AttributeValue::S(text))
                    .send()
                    .await
                    .expect("raw put");
            }
        })
        .await;
    });
}
