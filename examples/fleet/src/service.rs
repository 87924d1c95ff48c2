//! The service: its routes, its own job function, and the runner beside
//! them on a thread of its own.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use cronslot_core::manifest::parse_manifest;
use cronslot_runner::{
    Clock, Health, Jobs, LogFormat, RunContext, Runner, RunnerStore, StopHandle, Summary, Verdict,
    init_logging,
};
use cronslot_runtime::JobResult;
use cronslot_stores::{OpenOptions, StoreUrl};

/// The manifest, embedded: the service and its jobs ship together.
const MANIFEST: &str = include_str!("../cronslot.toml");

/// How many rollups `GET /rollups` remembers.
const KEEP: usize = 100;

/// What the service is started with.
pub struct Options {
    pub listen: String,
    pub store: String,
    pub workers: u32,
    pub json: bool,
}

/// The slots of `orders-rollup` this server ran, newest last.
type Rollups = Arc<Mutex<VecDeque<serde_json::Value>>>;

#[derive(Clone)]
struct AppState {
    health: Arc<Health>,
    rollups: Rollups,
}

/// Runs the service until SIGTERM or Ctrl-C; `Ok(false)` when the runner
/// reported a problem (a slot that ran twice, a worker that failed).
pub fn run(options: Options) -> Result<bool, String> {
    let listen: SocketAddr = options
        .listen
        .parse()
        .map_err(|_| format!("--listen {:?}: expected IP:PORT", options.listen))?;
    let manifest = parse_manifest(MANIFEST, "cronslot.toml").map_err(|e| e.to_string())?;
    let clock = Clock::real();
    let format = if options.json {
        LogFormat::Json
    } else {
        LogFormat::Pretty
    };
    init_logging(format, &clock).map_err(|e| e.to_string())?;
    let rollups: Rollups = Arc::default();
    let jobs = jobs(Arc::clone(&rollups));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(listen))
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let specs = manifest.jobs;
    // Any store, from its URL; created on first use.
    let url = StoreUrl::parse(&options.store).map_err(|e| format!("--store: {}", e.message))?;
    let store = runtime
        .block_on(url.open(OpenOptions::default()))
        .map_err(|e| e.message.clone())?;
    // Time runs by the clock that judges the leases (the database's).
    let clock = clock.timed_by(&store);
    let runner = Runner::new(store, specs, clock);
    serve(runtime, listener, runner, jobs, options.workers, rollups)
}

/// This service's jobs: the shared example functions, and one of its own.
fn jobs(rollups: Rollups) -> Jobs {
    example_jobs::jobs().register("orders-rollup", move |ctx: RunContext| {
        let rollups = Arc::clone(&rollups);
        async move { orders_rollup(ctx, rollups).await }
    })
}

/// Rolls up a minute of orders. A real one would sum the minute's rows into
/// a table keyed by the slot (so a retry overwrites, never adds twice) and
/// pass `ctx.fence()` along so the table can refuse a stale writer.
async fn orders_rollup(ctx: RunContext, rollups: Rollups) -> JobResult {
    let entry = serde_json::json!({
        "slot": ctx.slot_id().to_string(),
        "fence": ctx.fence(),
        "attempt": ctx.attempt(),
        "owner": ctx.owner(),
    });
    let mut kept = rollups.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() == KEEP {
        kept.pop_front();
    }
    kept.push_back(entry);
    Ok(())
}

fn serve<S: RunnerStore>(
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    runner: Runner<S>,
    jobs: Jobs,
    workers: u32,
    rollups: Rollups,
) -> Result<bool, String> {
    let runner = runner.with_jobs(jobs).workers(workers);
    let health = runner.health();
    let stop = runner.stop_handle();
    // The runner has threads of its own; this one only waits for it.
    let jobs_thread = std::thread::Builder::new()
        .name("cronslot-runner".into())
        .spawn(move || runner.run())
        .map_err(|e| format!("cannot start the runner: {e}"))?;
    let app = Router::new()
        .route("/", get(index))
        .route("/rollups", get(list_rollups))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState { health, rollups });
    let served = runtime.block_on(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown(stop))
            .await
    });
    let summary: Summary = jobs_thread
        .join()
        .map_err(|_| "the runner panicked".to_string())?
        .map_err(|e| e.to_string())?;
    served.map_err(|e| format!("the HTTP server failed: {e}"))?;
    print!("{summary}");
    Ok(summary.ok())
}

/// Resolves at SIGTERM or Ctrl-C, after asking the runner to drain.
async fn shutdown(stop: StopHandle) {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::warn!("stopping: claiming nothing more, waiting for running jobs");
    stop.stop();
}

async fn index() -> &'static str {
    "cronslot fleet example: a web service that also runs scheduled jobs.\n\
     GET /rollups, /healthz, /readyz\n"
}

async fn list_rollups(State(state): State<AppState>) -> Json<Vec<serde_json::Value>> {
    let kept = state.rollups.lock().unwrap_or_else(|p| p.into_inner());
    Json(kept.iter().cloned().collect())
}

async fn healthz(State(state): State<AppState>) -> (StatusCode, String) {
    answer(state.health.liveness(std::time::Duration::from_secs(120)))
}

async fn readyz(State(state): State<AppState>) -> (StatusCode, String) {
    answer(state.health.readiness())
}

fn answer(verdict: Verdict) -> (StatusCode, String) {
    match verdict {
        Verdict::Ok => (StatusCode::OK, "ok\n".into()),
        Verdict::Failing(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
    }
}
