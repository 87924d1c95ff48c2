//! The integration tests of cronslot-aws, one module per subject, linked
//! into one test binary (a binary per file would link the dependencies, the
//! AWS SDK among them, once per file). One module alone:
//! `cargo test -p cronslot-aws --test it -- lambda_events::`.
//!
//! The DynamoDB store's own tests are in `stores/dynamodb`.

mod fuzz_events;
mod lambda_e2e;
mod lambda_events;
// Builds the handler from TOML manifests (`ManifestSource::embedded`).
#[cfg(feature = "toml")]
mod lambda_handler;
#[cfg(feature = "toml")]
mod versions;
