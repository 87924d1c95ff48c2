//! The integration tests of cronslot-runtime, one module per subject, linked
//! into one test binary (a binary per file would link the dependencies once
//! per file). One module alone:
//! `cargo test -p cronslot-runtime --test it -- run_loop::`.

mod admin;
mod admin_runs;
mod admin_schedules;
mod run_loop;
mod schedules;
mod tick;
