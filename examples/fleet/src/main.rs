//! A web service that also runs scheduled jobs: run the same binary on every
//! server of a fleet, all on one PostgreSQL, and each slot runs on one of
//! them. No leader, no lock table of your own: the store's compare-and-set
//! gives every slot to one claimer and the fence shuts out a stale one.
//!
//! ```sh
//! export CRONSLOT_STORE='postgres://app@db.internal/ops?sslmode=verify-full'
//! cargo run -p fleet -- --listen 0.0.0.0:8080      # on every server
//! ```
//!
//! Routes: `GET /` (what this is), `GET /rollups` (the slots of
//! `orders-rollup` this server ran), `POST /orders` (an order's row and its
//! confirmation run in one transaction: PostgreSQL or SQLite), `GET
//! /confirmations` (the confirmations this server ran), `GET /healthz` and
//! `GET /readyz` (the runner's liveness and readiness, for a load balancer
//! or Kubernetes).
//! SIGTERM or Ctrl-C: the runner claims nothing more and lets running jobs
//! finish, the server stops accepting, and the process exits.

mod orders;
mod service;

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(about = "A web service that runs the example jobs on a shared store")]
struct Args {
    /// Where the service listens.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// The shared store: postgres://… or redis://… (a fleet), or sqlite:PATH
    /// (one machine).
    #[arg(
        long,
        env = "CRONSLOT_STORE",
        hide_env_values = true,
        default_value = "sqlite:fleet.db"
    )]
    store: String,
    /// Competing workers in this process.
    #[arg(long, default_value_t = 1)]
    workers: u32,
    /// Log one JSON object per line instead of plain text.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let options = service::Options {
        listen: args.listen,
        store: args.store,
        workers: args.workers,
        json: args.json,
    };
    match service::run(options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
