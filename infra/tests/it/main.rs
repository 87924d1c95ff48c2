//! The integration tests of the `cronslot` command, one module per subject,
//! linked into one test binary (a binary per file would link the
//! dependencies, the AWS SDK among them, once per file). One module alone:
//! `cargo test -p cronslot-cli --test it -- render::`.
//!
//! The tests drive the built binary (`CARGO_BIN_EXE_cronslot`); those on
//! moto share the test binary's one moto server, each with a table or
//! schedule group of its own.

mod check;
mod cli;
mod dashboard;
mod fleet;
mod new;
mod openapi;
mod render;
mod roll;
mod run;
mod schedule_cmds;
mod serve;
mod server_cmds;
mod store_admin;
mod store_cmds;
mod store_dynamo;
mod store_postgres;
mod store_redis;
mod sync_aws;
mod tick;
