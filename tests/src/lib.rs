//! Cross-crate tests for cronslot: the store conformance suite on every
//! store, simulations, and emulator end-to-end tests. The tests live in
//! `tests/`; this library holds what they share (the moto, workerd,
//! PostgreSQL and Redis harnesses among it, and `server_store`, the tests
//! every server store runs, written once).

pub mod baseline;
pub mod burst;
pub mod counting_proxy;
pub mod fuzz;
pub mod http;
pub mod keyed_bench;
pub mod local_server;
pub mod moto;
pub mod postgres;
pub mod redis;
pub mod scale;
pub mod schedule_counts;
pub mod server_store;
pub mod sim;
pub mod sim_backends;
pub mod webdriver;
pub mod workerd;
