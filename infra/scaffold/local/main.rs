//! This project's jobs on one machine: a program that embeds the local
//! runner (SQLite store, competing workers, structured logs).
//!
//! `cargo run --release` runs until Ctrl-C (first: finish the running jobs;
//! second: stop them). `--speed 60 --run-for 10m` runs ten minutes of slots
//! in ten seconds, as a demo.

mod jobs;

use std::process::ExitCode;

use clap::Parser;
use cronslot_core::manifest::{parse_duration, parse_manifest};
use cronslot_runner::{Clock, LogFormat, Runner, SqliteStore, init_logging};

/// The manifest, embedded: the program and its jobs ship together.
const MANIFEST: &str = include_str!("../cronslot.toml");

#[derive(Parser)]
#[command(about = "Runs this project's jobs on this machine, each slot once")]
struct Args {
    /// The SQLite file that holds the jobs' state (created if missing).
    #[arg(long, default_value = "{{name}}.db")]
    store: String,
    /// Competing workers (they may also be other processes on the file).
    #[arg(long, default_value_t = 1)]
    workers: u32,
    /// Run the clock this many times faster than real time (a demo).
    #[arg(long)]
    speed: Option<f64>,
    /// Stop after this much clock time, in seconds or with a unit (`2h`).
    #[arg(long)]
    run_for: Option<String>,
    /// Log one JSON object per line instead of plain text.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<ExitCode, String> {
    let manifest = parse_manifest(MANIFEST, "cronslot.toml").map_err(|e| e.to_string())?;
    let clock = match args.speed {
        Some(speed) => Clock::accelerated(speed).map_err(|e| format!("--speed: {e}"))?,
        None => Clock::real(),
    };
    let format = if args.json {
        LogFormat::Json
    } else {
        LogFormat::Pretty
    };
    init_logging(format, &clock).map_err(|e| e.to_string())?;
    let store =
        SqliteStore::open(&args.store).map_err(|e| format!("--store {}: {e}", args.store))?;
    // Another process's trigger or enqueued run starts within a second
    // (the store's wake signal), not at the next poll.
    let wakes = store.wake_signal();
    let mut runner = Runner::new(store, manifest.jobs, clock)
        .woken_by(wakes)
        .with_jobs(jobs::jobs())
        .workers(args.workers)
        .handle_ctrl_c(true);
    if let Some(text) = &args.run_for {
        runner = runner.run_for(parse_duration(text).map_err(|e| format!("--run-for: {e}"))?);
    }
    let summary = runner.run().map_err(|e| e.to_string())?;
    print!("{summary}");
    Ok(if summary.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
