//! The integration tests of cronslot-cf, one module per subject, linked into
//! one test binary (a binary per file would link the dependencies once per
//! file). One module alone:
//! `cargo test -p cronslot-cf --test it -- object_native::`.

mod fuzz_protocol;
mod ledger_native;
mod object_native;
mod run_native;
mod tick_native;
