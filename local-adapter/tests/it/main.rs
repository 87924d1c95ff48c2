//! The integration tests of cronslot-local that can share a process, one
//! module per subject, linked into one test binary (a binary per file would
//! link the dependencies once per file). One module alone:
//! `cargo test -p cronslot-local --test it -- conformance::`.
//!
//! Two files stay binaries of their own:
//! - `tests/sqlite_store.rs`: its multi-process tests re-execute that
//!   binary and run its ignored `child_process_entry` test as the child;
//! - `tests/runner.rs`: with `CRONSLOT_LOG` set it installs the process's
//!   global `tracing` subscriber, which would log for every other test of
//!   a shared binary too.

mod conformance;
