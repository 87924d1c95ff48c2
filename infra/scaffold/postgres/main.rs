//! This project's jobs on a fleet of servers sharing one PostgreSQL: run
//! the same build on every server with the same store, and each slot runs
//! on one of them. No leader: the store's compare-and-set gives every slot
//! to one claimer, and the fence shuts out a stale one.
//!
//! `CRONSLOT_STORE=postgres://… cargo run --release` runs until SIGTERM or
//! Ctrl-C (first: finish the running jobs; second: stop them).
//! `--store sqlite:PATH` runs on one machine instead, to try it out.
//! `--health-listen 0.0.0.0:8080` serves `GET /healthz` and `GET /readyz`
//! for a load balancer or Kubernetes (kubernetes.yaml).

mod jobs;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cronslot_core::coord::exec::block_on;
use cronslot_core::manifest::{parse_duration, parse_manifest};
use cronslot_runner::{Clock, Health, LogFormat, Runner, RunnerStore, Verdict, init_logging};
use cronslot_stores::{OpenOptions, StoreUrl};

/// The manifest, embedded: the program and its jobs ship together.
const MANIFEST: &str = include_str!("../cronslot.toml");

#[derive(Parser)]
#[command(about = "Runs this project's jobs on a store shared by a fleet, each slot once")]
struct Args {
    /// The shared store: postgres://USER@HOST/DB (the password in
    /// PGPASSWORD), or sqlite:PATH on one machine.
    #[arg(long, env = "CRONSLOT_STORE", hide_env_values = true)]
    store: String,
    /// Competing workers in this process.
    #[arg(long, default_value_t = 1)]
    workers: u32,
    /// Serve GET /healthz (200 while every worker makes progress) and
    /// GET /readyz (200 while the store answers) on this address.
    #[arg(long, value_name = "ADDR")]
    health_listen: Option<SocketAddr>,
    /// Stop after this much time, in seconds or with a unit (`2h`).
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
    let format = if args.json {
        LogFormat::Json
    } else {
        LogFormat::Pretty
    };
    init_logging(format, &Clock::real()).map_err(|e| e.to_string())?;
    // Any store from its URL (postgres://… for the fleet, sqlite:PATH to
    // try it on one machine); what is missing is created on first use.
    let url = StoreUrl::parse(&args.store).map_err(|e| format!("--store: {}", e.message))?;
    let store = block_on(url.open(OpenOptions::default())).map_err(|e| e.message.clone())?;
    // Leases are judged by the database server's clock: run by it too.
    let clock = Clock::real().timed_by(&store);
    // A run enqueued or a slot triggered by anyone starts at once (the
    // store's wake signal), not at the next poll.
    let wakes = store.wake_signal();
    drive(Runner::new(store, manifest.jobs, clock).woken_by(wakes), &args)
}

fn drive<S: RunnerStore>(runner: Runner<S>, args: &Args) -> Result<ExitCode, String> {
    let mut runner = runner
        .with_jobs(jobs::jobs())
        .workers(args.workers)
        .handle_ctrl_c(true);
    if let Some(text) = &args.run_for {
        runner = runner.run_for(parse_duration(text).map_err(|e| format!("--run-for: {e}"))?);
    }
    if let Some(addr) = args.health_listen {
        let listener =
            TcpListener::bind(addr).map_err(|e| format!("--health-listen {addr}: {e}"))?;
        let health = runner.health();
        std::thread::Builder::new()
            .name("health".into())
            .spawn(move || serve_health(&listener, &health))
            .map_err(|e| format!("cannot start the health server: {e}"))?;
    }
    let summary = runner.run().map_err(|e| e.to_string())?;
    print!("{summary}");
    Ok(if summary.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Answers the probes, one connection at a time (they are small and rare).
fn serve_health(listener: &TcpListener, health: &Health) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
        let mut request = [0u8; 1024];
        let n = stream.read(&mut request).unwrap_or(0);
        let request = String::from_utf8_lossy(&request[..n]);
        let verdict = match request.split_whitespace().nth(1) {
            Some("/healthz") => Some(health.liveness(Duration::from_secs(120))),
            Some("/readyz") => Some(health.readiness()),
            _ => None,
        };
        let (status, body) = match verdict {
            Some(Verdict::Ok) => ("200 OK", "ok\n".to_string()),
            Some(Verdict::Failing(why)) => ("503 Service Unavailable", format!("{why}\n")),
            None => ("404 Not Found", "not found\n".to_string()),
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}
