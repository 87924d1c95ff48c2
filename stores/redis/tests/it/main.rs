//! The integration tests of cronslot-redis, one module per subject,
//! linked into one test binary. One module alone:
//! `cargo test -p cronslot-redis --test it -- errors::`.
//!
//! Every test runs against a real Redis server (`cronslot_tests::redis`):
//! most share the binary's one server, each under a key prefix of its
//! own; the tests that crash, pause or reconfigure a server start their
//! own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod conformance;
mod durability;
mod errors;
mod faults;
mod store;
mod tls;
