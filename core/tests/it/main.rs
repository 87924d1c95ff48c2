//! The integration tests of cronslot-core, one module per subject, linked
//! into one test binary (a binary per file would link the dependencies once
//! per file). One module alone:
//! `cargo test -p cronslot-core --test it -- manifest::`.

mod count;
// Needs Node and croner from npm (scripts/setup installs them).
mod croner_npm;
mod differential;
mod dst;
mod due;
mod dynamic;
mod fuzz_dialects;
mod jitter;
mod schedule_changes;
mod wake;
// These two read manifests from TOML text (`parse_manifest`).
#[cfg(feature = "toml")]
mod fuzz_manifest;
#[cfg(feature = "toml")]
mod manifest;
mod parse_props;
mod translate;
mod tzdb;
