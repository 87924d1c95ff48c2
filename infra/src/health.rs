//! `cronslot run --health-listen ADDR`: the runner's health over HTTP, for
//! a process supervisor's probes (a Kubernetes Deployment's liveness and
//! readiness probes, a load balancer's health check).
//!
//! `GET /healthz`: 200 while every worker makes progress, 503 with the
//! reason when one is stuck (a silent scheduler death: the process lives
//! and runs nothing), so the supervisor restarts it. `GET /readyz`: 200
//! while the store answers, 503 when its last operation failed or the
//! runner is stopping. The server runs on a thread of its own, so a stuck
//! worker cannot stall the probe that reports it.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use cronslot_runner::{Health, Verdict};

use crate::exit::Failure;

/// A worker that has made no progress for this long is stuck: longer than
/// any store operation's timeouts and retries, and than a worker's poll.
pub const LIVENESS_BOUND: Duration = Duration::from_secs(120);

/// Binds `addr` (given as `flag`) now, so that a bad or busy address is
/// bad input before anything runs.
pub fn bind(flag: &str, addr: &str) -> Result<TcpListener, Failure> {
    let bad = |why: String| Failure::bad_input(format!("error: {flag} {addr:?}: {why}"));
    let parsed: SocketAddr = addr
        .parse()
        .map_err(|_| bad("expected IP:PORT, for example 0.0.0.0:8080 or 127.0.0.1:8080".into()))?;
    let listener = TcpListener::bind(parsed).map_err(|e| bad(format!("cannot listen: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| bad(format!("cannot listen: {e}")))?;
    Ok(listener)
}

/// Serves the probes on `listener` from a thread of its own, for as long as
/// the process lives.
pub fn serve(listener: TcpListener, health: Arc<Health>) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::problem(format!("error: --health-listen: cannot start: {e}")))?;
    let listener = {
        let _entered = runtime.enter();
        tokio::net::TcpListener::from_std(listener)
            .map_err(|e| Failure::problem(format!("error: --health-listen: cannot start: {e}")))?
    };
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health);
    std::thread::Builder::new()
        .name("cronslot-health".into())
        .spawn(move || {
            if let Err(e) = runtime.block_on(async { axum::serve(listener, app).await }) {
                tracing::error!(error = %e, "the health server stopped");
            }
        })
        .map_err(|e| Failure::problem(format!("error: --health-listen: cannot start: {e}")))?;
    Ok(())
}

async fn healthz(State(health): State<Arc<Health>>) -> (StatusCode, String) {
    answer(health.liveness(LIVENESS_BOUND))
}

async fn readyz(State(health): State<Arc<Health>>) -> (StatusCode, String) {
    answer(health.readiness())
}

fn answer(verdict: Verdict) -> (StatusCode, String) {
    match verdict {
        Verdict::Ok => (StatusCode::OK, "ok\n".into()),
        Verdict::Failing(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
    }
}
