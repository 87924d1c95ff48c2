//! The cross-crate tests, one module per subject, linked into one test
//! binary (a binary per file would link the dependencies, the AWS SDK among
//! them, once per file). One module alone:
//! `cargo test -p cronslot-tests --test it -- simulation_stores::`.
//!
//! The tests on moto share the binary's one moto server, each with a table
//! of its own; the PostgreSQL simulation runs on the binary's private
//! PostgreSQL server, in a schema of its own; the Redis simulation on the
//! binary's private Redis server, under a key prefix of its own; the
//! workerd tests start a `wrangler dev` each.

mod bad_input;
mod burst;
mod cf_workerd;
mod conformance_memory;
mod crash_points;
mod examples;
mod keyed_run_wakes;
mod memory_store;
mod policies;
mod simulation_runs;
mod simulation_schedules;
mod simulation_stores;
mod simulation_ticks;
mod tick_costs;
