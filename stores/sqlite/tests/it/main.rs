//! The integration tests of cronslot-sqlite that can share a process,
//! linked into one test binary. `tests/sqlite_store.rs` stays a binary of
//! its own: its multi-process tests re-execute that binary and run its
//! ignored `child_process_entry` test as the child.

mod conformance;
mod sweep;
