//! The integration tests of cronslot-aws, one module per subject, linked
//! into one test binary (a binary per file would link the dependencies, the
//! AWS SDK among them, once per file). One module alone:
//! `cargo test -p cronslot-aws --test it -- dynamo_requests::`.
//!
//! The DynamoDB tests share the binary's one moto server (`support::moto`);
//! each test makes a table of its own.

mod support;

mod dynamo_conformance;
mod dynamo_faults;
mod dynamo_requests;
mod dynamo_store;
mod dynamo_tick;
mod fuzz_events;
mod lambda_e2e;
mod lambda_events;
// Builds the handler from TOML manifests (`ManifestSource::embedded`).
#[cfg(feature = "toml")]
mod lambda_handler;
