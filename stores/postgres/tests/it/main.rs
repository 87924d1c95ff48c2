//! The integration tests of cronslot-postgres, one module per subject,
//! linked into one test binary. One module alone:
//! `cargo test -p cronslot-postgres --test it -- errors::`.
//!
//! Every test runs against a real PostgreSQL server
//! (`cronslot_tests::postgres`): most share the binary's one server, each
//! in a schema or database of its own; the tests that crash, stop or
//! reconfigure a server start their own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod conformance;
mod errors;
mod faults;
mod store;
mod tls;
mod txn;
