//! The core conformance suite (DESIGN.md §5) against `DynamoStore` on moto,
//! through the generic compare-and-set coordinator: the same test functions
//! that memory, SQLite and the Durable Object pass. Each test gets a table
//! of its own on the binary's moto server.

mod support;

cronslot_core::conformance_suite!(
    support::conformance_coordinator(),
    support::block_on,
    "dynamo"
);
