//! The integration tests of cronslot-dynamodb, one module per subject,
//! linked into one test binary (a binary per file would link the AWS SDK
//! once per file). One module alone:
//! `cargo test -p cronslot-dynamodb --test it -- requests::`.
//!
//! The tests share the binary's one moto server (`support::moto`); each
//! test makes a table of its own.

mod support;

mod conformance;
mod faults;
mod requests;
mod store;
mod tick;
