//! The service: its routes, its own job function, and the runner beside
//! them on a thread of its own.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use cronslot_core::coord::decide::{Enqueued, Precondition, ScheduleWrite};
use cronslot_core::coord::{CasCoordinator, Schedules};
use cronslot_core::manifest::{JobTemplate, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_runner::{
    Clock, Health, Jobs, LogFormat, RunContext, Runner, RunnerStore, StopHandle, Summary, Verdict,
    init_logging,
};
use cronslot_runtime::JobResult;
use cronslot_stores::{OpenOptions, StoreUrl};

use crate::orders::{CONFIRMATION_JOB, Order, Orders};

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

/// The slots of `orders-rollup`, `tenant-invoice` and
/// `order-confirmation` this server ran, newest last.
type Rollups = Arc<Mutex<VecDeque<serde_json::Value>>>;

/// The dynamic job whose schedules the service writes, one per tenant.
const INVOICE_JOB: &str = "tenant-invoice";

#[derive(Clone)]
struct AppState<S> {
    health: Arc<Health>,
    rollups: Rollups,
    invoices: Rollups,
    confirmations: Rollups,
    /// Where the schedules are written: the runners' store.
    store: S,
    invoice: Arc<JobTemplate>,
    /// Where orders are written with their confirmation runs.
    orders: Arc<Orders>,
    confirmation: Arc<JobTemplate>,
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
    let invoices: Rollups = Arc::default();
    let confirmations: Rollups = Arc::default();
    let jobs = jobs(
        Arc::clone(&rollups),
        Arc::clone(&invoices),
        Arc::clone(&confirmations),
    );
    let template = |name: &str| {
        manifest
            .template(name)
            .cloned()
            .ok_or_else(|| format!("cronslot.toml has no dynamic job {name:?}"))
    };
    let (invoice, confirmation) = (template(INVOICE_JOB)?, template(CONFIRMATION_JOB)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(listen))
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let (specs, templates) = (manifest.jobs, manifest.templates);
    // Any store, from its URL; created on first use.
    let url = StoreUrl::parse(&options.store).map_err(|e| format!("--store: {}", e.message))?;
    let store = runtime
        .block_on(url.open(OpenOptions::default()))
        .map_err(|e| e.message.clone())?;
    let orders = runtime.block_on(Orders::open(&store))?;
    // Time runs by the clock that judges the leases (the database's).
    let clock = clock.timed_by(&store);
    // The store's wake signal: an order's keyed run (POST /orders) starts
    // at once, whichever instance enqueued it.
    let runner = Runner::new(store.clone(), specs, clock)
        .with_templates(templates)
        .woken_by(store.wake_signal());
    let state = AppState {
        health: runner.health(),
        rollups,
        invoices,
        confirmations,
        store,
        invoice: Arc::new(invoice),
        orders: Arc::new(orders),
        confirmation: Arc::new(confirmation),
    };
    serve(runtime, listener, runner, jobs, options.workers, state)
}

/// This service's jobs: the shared example functions, and three of its own.
fn jobs(rollups: Rollups, invoices: Rollups, confirmations: Rollups) -> Jobs {
    example_jobs::jobs()
        .register("orders-rollup", move |ctx: RunContext| {
            let rollups = Arc::clone(&rollups);
            async move { orders_rollup(ctx, rollups).await }
        })
        .register(INVOICE_JOB, move |ctx: RunContext| {
            let invoices = Arc::clone(&invoices);
            async move { tenant_invoice(ctx, invoices).await }
        })
        .register(CONFIRMATION_JOB, move |ctx: RunContext| {
            let confirmations = Arc::clone(&confirmations);
            async move { confirm_order(ctx, confirmations).await }
        })
}

/// Confirms one order, whose row was committed with this run. A real one
/// would send the mail with `ctx.idempotency_key()` as the mail
/// provider's idempotency key, so a retry never mails twice.
async fn confirm_order(ctx: RunContext, confirmations: Rollups) -> JobResult {
    let payload: serde_json::Value = ctx
        .payload()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| cronslot_runtime::JobError::permanent(format!("the payload: {e}")))?
        .unwrap_or_default();
    remember(
        &confirmations,
        serde_json::json!({
            "slot": ctx.slot_id().to_string(),
            "order": payload["order"],
            "owner": ctx.owner(),
        }),
    );
    Ok(())
}

/// Invoices one tenant for one slot of its schedule. A real one would
/// bill the tenant named in the payload with `ctx.idempotency_key()` as
/// the payment provider's idempotency key, so a retry never bills twice.
async fn tenant_invoice(ctx: RunContext, invoices: Rollups) -> JobResult {
    let payload: serde_json::Value = ctx
        .payload()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| cronslot_runtime::JobError::permanent(format!("the payload: {e}")))?
        .unwrap_or_default();
    remember(
        &invoices,
        serde_json::json!({
            "slot": ctx.slot_id().to_string(),
            "tenant": payload["tenant"],
            "owner": ctx.owner(),
        }),
    );
    Ok(())
}

fn remember(kept: &Rollups, entry: serde_json::Value) {
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() == KEEP {
        kept.pop_front();
    }
    kept.push_back(entry);
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
    remember(&rollups, entry);
    Ok(())
}

fn serve<S: RunnerStore>(
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    runner: Runner<S>,
    jobs: Jobs,
    workers: u32,
    mut state: AppState<S>,
) -> Result<bool, String> {
    let runner = runner.with_jobs(jobs).workers(workers);
    state.health = runner.health();
    let stop = runner.stop_handle();
    // The runner has threads of its own; this one only waits for it.
    let jobs_thread = std::thread::Builder::new()
        .name("cronslot-runner".into())
        .spawn(move || runner.run())
        .map_err(|e| format!("cannot start the runner: {e}"))?;
    let app = Router::new()
        .route("/", get(index))
        .route("/rollups", get(list_rollups))
        .route("/invoices", get(list_invoices))
        .route("/confirmations", get(list_confirmations))
        .route("/orders", post(post_order))
        .route(
            "/tenants/{tenant}/invoice-schedule",
            put(put_invoice_schedule),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state);
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
     GET /rollups, /invoices, /confirmations, /healthz, /readyz\n\
     POST /orders {\"id\": 123, \"total_cents\": 4250}\n\
     PUT /tenants/{tenant}/invoice-schedule {\"cron\": \"0 9 1 * *\", \"timezone\": \"Europe/Berlin\"}\n"
}

async fn list_rollups<S>(State(state): State<AppState<S>>) -> Json<Vec<serde_json::Value>> {
    let kept = state.rollups.lock().unwrap_or_else(|p| p.into_inner());
    Json(kept.iter().cloned().collect())
}

async fn list_invoices<S>(State(state): State<AppState<S>>) -> Json<Vec<serde_json::Value>> {
    let kept = state.invoices.lock().unwrap_or_else(|p| p.into_inner());
    Json(kept.iter().cloned().collect())
}

async fn list_confirmations<S>(State(state): State<AppState<S>>) -> Json<Vec<serde_json::Value>> {
    let kept = state
        .confirmations
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    Json(kept.iter().cloned().collect())
}

/// Stores an order and enqueues its confirmation in one transaction
/// (orders.rs): 202 with the run when created, 200 with it when the order
/// was placed already (a retried request), 409 when the id was placed
/// with another total.
async fn post_order<S>(
    State(state): State<AppState<S>>,
    Json(order): Json<Order>,
) -> (StatusCode, Json<serde_json::Value>) {
    let id = order.id;
    match state
        .orders
        .place(Arc::clone(&state.confirmation), order)
        .await
    {
        Ok(enqueued) => {
            let (status, created) = match &enqueued {
                Enqueued::Created(_) => (StatusCode::ACCEPTED, true),
                Enqueued::Existing(_) => (StatusCode::OK, false),
            };
            let view = enqueued.view();
            (
                status,
                Json(serde_json::json!({
                    "order": id,
                    "run": view.run,
                    "status": view.status.as_str(),
                    "created": created,
                })),
            )
        }
        Err(failure) => (
            failure.status,
            Json(serde_json::json!({ "error": failure.message })),
        ),
    }
}

/// What a tenant's invoice schedule is sent as: when, in the tenant's
/// zone. The service adds the tenant as the payload.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct InvoiceSchedule {
    cron: String,
    timezone: String,
}

/// Creates or changes a tenant's invoice schedule: every server of the
/// fleet may receive it, at once, for the same tenant (a sign-up retried,
/// a deploy that re-upserts every tenant); the store's compare-and-set
/// leaves one schedule, at one version, and a slot due meanwhile runs
/// once.
async fn put_invoice_schedule<S: RunnerStore>(
    State(state): State<AppState<S>>,
    Path(tenant): Path<String>,
    Json(body): Json<InvoiceSchedule>,
) -> (StatusCode, Json<serde_json::Value>) {
    let refused =
        |status: StatusCode, error: String| (status, Json(serde_json::json!({ "error": error })));
    let key = match ScheduleKey::new(format!("tenant:{tenant}")) {
        Ok(key) => key,
        Err(e) => return refused(StatusCode::BAD_REQUEST, format!("tenant {tenant:?}: {e}")),
    };
    let spec = serde_json::json!({
        "cron": body.cron,
        "timezone": body.timezone,
        "payload": { "tenant": tenant },
    });
    let spec = match ScheduleSpec::from_json(&spec.to_string()) {
        Ok(spec) => spec,
        Err(problems) => {
            let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return refused(StatusCode::BAD_REQUEST, text.join("; "));
        }
    };
    // The coordinator's futures stay on one thread (as on a Worker): the
    // write runs on a blocking thread of the runtime, driven there.
    let (store, template) = (state.store.clone(), Arc::clone(&state.invoice));
    let handle = tokio::runtime::Handle::current();
    let written = tokio::task::spawn_blocking(move || {
        handle.block_on(async {
            let coordinator = CasCoordinator::new(store, u64::from(std::process::id()));
            let now = jiff::Timestamp::now();
            coordinator
                .put_schedule(&template, &key, spec, Precondition::None, now)
                .await
        })
    })
    .await;
    match written {
        Ok(Ok(write)) => {
            let (status, version, changed) = match write {
                ScheduleWrite::Created { version } => (StatusCode::CREATED, version, true),
                ScheduleWrite::Changed { version } => (StatusCode::OK, version, true),
                ScheduleWrite::Unchanged { version } => (StatusCode::OK, version, false),
                ScheduleWrite::Deleted { version } => (StatusCode::OK, version, true),
            };
            (
                status,
                Json(
                    serde_json::json!({ "job": INVOICE_JOB, "tenant": tenant, "version": version, "changed": changed }),
                ),
            )
        }
        Ok(Err(e)) => refused(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Err(e) => refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the write did not finish: {e}"),
        ),
    }
}

async fn healthz<S>(State(state): State<AppState<S>>) -> (StatusCode, String) {
    answer(state.health.liveness(std::time::Duration::from_secs(120)))
}

async fn readyz<S>(State(state): State<AppState<S>>) -> (StatusCode, String) {
    answer(state.health.readiness())
}

fn answer(verdict: Verdict) -> (StatusCode, String) {
    match verdict {
        Verdict::Ok => (StatusCode::OK, "ok\n".into()),
        Verdict::Failing(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
    }
}
