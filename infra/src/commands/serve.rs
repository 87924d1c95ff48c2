//! `cronslot serve`: the admin routes over any job store, a tick over
//! HTTP, and with `--run` the jobs themselves, in one process.
//!
//! The routes are the Worker's, written once in `cronslot_runtime::admin`:
//! the same paths under `/cronslot`, the same JSON, the same bearer token
//! (`CRONSLOT_ADMIN_TOKEN` from the environment, compared in constant
//! time; without it every route but `health` answers 503). `POST` (or
//! `GET`) `/cronslot/tick` runs one tick, the runner's single pass as
//! `cronslot tick` runs it, for schedulers that can only call a URL
//! (Vercel Cron, Cloud Scheduler, GitHub Actions); it needs
//! `Authorization: Bearer` with `CRONSLOT_TICK_SECRET`. A tick that
//! arrives twice is harmless: claims are conditional writes.
//!
//! Each request is served on a thread of its own: the store's futures are
//! not `Send`, and a manual trigger runs its job before it answers. At
//! most [`MAX_IN_FLIGHT`] are served at once; the rest wait.

use std::net::TcpListener;
use std::rc::Rc;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use clap::Args;
use cronslot_core::coord::{CasCoordinator, CoordError, repair_wake};
use cronslot_core::manifest::{JobName, JobSpec, Manifest};
use cronslot_core::schedules::ScheduleKey;
use cronslot_runner::{Clock, LocalPlatform, Runner, RunnerStore, Summary, init_logging};
use cronslot_runtime::admin::{self, AdminHost, AdminRequest, AdminRoute, ErrorKind, Reply};
use cronslot_runtime::{Jobs, Platform};
use jiff::Timestamp;
use tokio::sync::{Semaphore, oneshot};

use super::run::{log_format, log_warnings, refuse_function_jobs, run, verdict};
use super::tick::TickDoc;
use crate::cli::{LogFormat, ManifestInput, StoreFlag};
use crate::exit::Failure;
use crate::health;
use crate::manifest::load_manifest;
use crate::store::StoreTarget;
use crate::store::jobs::{sweep_in_background, warn_durability};
use crate::store::wait;

#[derive(Debug, Args)]
#[command(
    after_help = "Example (the admin routes and the jobs, on one machine):\n  \
                        CRONSLOT_ADMIN_TOKEN=… cronslot serve cronslot.toml --run --listen 127.0.0.1:8080"
)]
pub struct ServeArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    #[command(flatten)]
    pub store: StoreFlag,
    /// The address to serve on. Anything but loopback should sit behind
    /// TLS (a reverse proxy): the bearer tokens travel in the clear here.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Also run the jobs in this process, as `cronslot run` does.
    #[arg(long)]
    pub run: bool,
    /// With --run: competing workers, each with its own owner id.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// With --run: at most this many runs at once in this process, over all its
    /// workers; a burst beyond it waits in the store (for this process's
    /// next free place, or another process). Unbounded if not given.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_running: Option<u32>,
    /// With --run and --max-running: up to this many more leases claimed
    /// ahead of the free places, each kept alive while it waits and
    /// started the moment a run ends. As many as --max-running by
    /// default; 0 for none.
    #[arg(long, value_name = "N", requires = "max_running")]
    pub claim_ahead: Option<u32>,
    /// Log lines: human-readable or JSON.
    #[arg(long, value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
}

/// Requests served at once; more wait for a turn.
pub const MAX_IN_FLIGHT: usize = 16;

pub fn exec(args: ServeArgs) -> Result<(), Failure> {
    let target = StoreTarget::parse_for_jobs(&args.store)?;
    let manifest = load_manifest(&args.manifest.path())?;
    refuse_function_jobs(&manifest, "serve")?;
    let listener = health::bind("--listen", &args.listen)?;
    let clock = Clock::real();
    let format = log_format(args.log_format);
    init_logging(format, &clock).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    log_warnings(&manifest, format);
    let secrets = Secrets {
        admin: secret(admin::TOKEN_SECRET),
        tick: secret(admin::TICK_SECRET),
    };
    for (name, set) in [
        (admin::TOKEN_SECRET, secrets.admin.is_some()),
        (admin::TICK_SECRET, secrets.tick.is_some()),
    ] {
        if !set {
            tracing::warn!(
                variable = name,
                "{name} is not set: the routes it opens answer 503 until it is"
            );
        }
    }
    let (store, clock) = target.open_for_jobs(&clock)?;
    warn_durability(&store);
    sweep_in_background(&store);
    let server = Arc::new(Server {
        manifest,
        store,
        clock,
        secrets,
    });
    if args.run {
        let mut runner = Runner::new(
            server.store.clone(),
            server.manifest.jobs.clone(),
            server.clock.clone(),
        )
        .with_templates(server.manifest.templates.clone())
        .woken_by(server.store.wake_signal())
        .workers(args.workers)
        .handle_ctrl_c(true);
        if let Some(n) = args.max_running {
            runner = runner.max_running(n);
        }
        if let Some(n) = args.claim_ahead {
            runner = runner.claim_ahead(n);
        }
        spawn_server(listener, Arc::clone(&server))?;
        let summary = run(runner)?;
        print!("{summary}");
        verdict(&summary)
    } else {
        serve_until_stopped(listener, server)
    }
}

/// A variable's value, trimmed; `None` when unset or blank.
fn secret(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The bearer secrets, read once at start.
struct Secrets {
    admin: Option<String>,
    tick: Option<String>,
}

/// What every request needs.
struct Server<S> {
    manifest: Manifest,
    store: S,
    clock: Clock,
    secrets: Secrets,
}

fn app<S: RunnerStore>(server: Arc<Server<S>>) -> Router {
    let turns = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    Router::new()
        .fallback(move |State(server): State<Arc<Server<S>>>, req: Request| {
            let turns = Arc::clone(&turns);
            async move { respond(server, turns, req).await }
        })
        .with_state(server)
}

/// Serves on the main thread until Ctrl-C or SIGTERM.
fn serve_until_stopped<S: RunnerStore>(
    listener: TcpListener,
    server: Arc<Server<S>>,
) -> Result<(), Failure> {
    let cannot =
        |e: std::io::Error| Failure::problem(format!("error: --listen: cannot start: {e}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(cannot)?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(cannot)?;
        tracing::info!(
            address = %listener.local_addr().map_err(cannot)?,
            "serving the admin routes under /cronslot"
        );
        axum::serve(listener, app(server))
            .with_graceful_shutdown(stopped())
            .await
            .map_err(cannot)
    })
}

/// Serves from a thread of its own (`--run`: the runner has the main one).
fn spawn_server<S: RunnerStore>(
    listener: TcpListener,
    server: Arc<Server<S>>,
) -> Result<(), Failure> {
    std::thread::Builder::new()
        .name("cronslot-serve".into())
        .spawn(move || {
            if let Err(e) = serve_until_stopped(listener, server) {
                tracing::error!(error = %e.message, "the admin server stopped");
            }
        })
        .map_err(|e| Failure::problem(format!("error: --listen: cannot start: {e}")))?;
    Ok(())
}

/// Ctrl-C or SIGTERM.
async fn stopped() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("stopping: requests in flight finish");
}

/// One request: the tick route, or the admin routes.
async fn respond<S: RunnerStore>(
    server: Arc<Server<S>>,
    turns: Arc<Semaphore>,
    req: Request,
) -> Response {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    let authorization = match req.headers().get("authorization").map(HeaderValue::to_str) {
        Some(Ok(v)) => Some(v.to_string()),
        Some(Err(_)) => {
            return reply(Reply::error(
                400,
                ErrorKind::BadRequest,
                "the Authorization header is not visible ASCII",
            ));
        }
        None => None,
    };
    let (if_match, if_none_match) = match (
        header_text(&req, "if-match"),
        header_text(&req, "if-none-match"),
    ) {
        (Ok(m), Ok(n)) => (m, n),
        (Err(refused), _) | (_, Err(refused)) => return reply(refused),
    };
    let limit = match admin::body_limit_for(
        admin::DEFAULT_PREFIX,
        &method,
        &path,
        authorization.as_deref(),
        server.secrets.admin.as_deref(),
    ) {
        Ok(limit) => limit,
        Err(refused) => return reply(refused),
    };
    let body = match read_body(req, limit).await {
        Ok(body) => body,
        Err(refused) => return reply(refused),
    };
    let request = AdminRequest {
        method: &method,
        path: &path,
        query: query.as_deref(),
        authorization: authorization.as_deref(),
        if_match: if_match.as_deref(),
        if_none_match: if_none_match.as_deref(),
        body: body.as_deref(),
    };
    let below = path
        .trim_end_matches('/')
        .strip_prefix(admin::DEFAULT_PREFIX);
    let work = if below == Some(admin::TICK_PATH) {
        if !admin::TICK_METHODS.contains(&method.as_str()) {
            return reply(
                Reply::error(
                    405,
                    ErrorKind::MethodNotAllowed,
                    "the tick route takes POST (or GET, for schedulers that only send GET)",
                )
                .with_header("Allow", admin::TICK_METHODS.join(", ")),
            );
        }
        if let Err(refused) = admin::authorize_bearer(
            request.authorization,
            server.secrets.tick.as_deref(),
            admin::TICK,
        ) {
            return reply(refused);
        }
        Work::Tick
    } else {
        let token = server.secrets.admin.as_deref();
        match admin::route(admin::DEFAULT_PREFIX, &server.manifest, &request, token) {
            None if path == "/" && method == "GET" => {
                // The dashboard is the one page to send a browser to.
                let dashboard = format!("{}/", admin::DEFAULT_PREFIX);
                return reply(Reply {
                    status: 308,
                    content_type: admin::TEXT,
                    headers: vec![("Location".into(), dashboard.clone())],
                    body: format!("the dashboard is at {dashboard}\n"),
                });
            }
            None => {
                return reply(Reply::error(
                    404,
                    ErrorKind::NotFound,
                    format!("not found: the routes are under {}", admin::DEFAULT_PREFIX),
                ));
            }
            Some(Err(refused)) => return reply(refused),
            Some(Ok(route)) => Work::Admin(Box::new(route)),
        }
    };
    let Ok(_turn) = turns.acquire_owned().await else {
        return reply(Reply::error(
            503,
            ErrorKind::Unavailable,
            "the server is stopping",
        ));
    };
    let (tx, rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("cronslot-request".into())
        .spawn(move || {
            let _ = tx.send(work.run(&server));
        });
    if let Err(e) = spawned {
        return reply(Reply::error(
            503,
            ErrorKind::Unavailable,
            format!("cannot start a thread for the request: {e}"),
        ));
    }
    match rx.await {
        Ok(r) => reply(r),
        Err(_) => reply(Reply::error(
            500,
            ErrorKind::Internal,
            "the request's thread ended without an answer",
        )),
    }
}

/// A header's value as text (`None` when absent); 400 naming it when it
/// is not visible ASCII.
fn header_text(req: &Request, name: &str) -> Result<Option<String>, Reply> {
    match req.headers().get(name).map(HeaderValue::to_str) {
        None => Ok(None),
        Some(Ok(v)) => Ok(Some(v.to_string())),
        Some(Err(_)) => {
            let mut doc = admin::ErrorDoc::new(
                400,
                ErrorKind::BadRequest,
                format!("the {name} header is not visible ASCII"),
            );
            doc.parameter = Some(name.to_string());
            Err(Reply::error_doc(doc))
        }
    }
}

/// The request's body as text, at most `limit` bytes
/// ([`admin::body_limit`]: a schedule's spec, or a bulk write's list; the
/// other routes take none). `None`: empty.
async fn read_body(req: Request, limit: usize) -> Result<Option<String>, Reply> {
    let bytes = axum::body::to_bytes(req.into_body(), limit)
        .await
        .map_err(|_| admin::body_too_large_for(limit))?;
    admin::body_text_within(bytes.to_vec(), limit)
}

/// What a request asks for, once it is authorised.
enum Work {
    Tick,
    // Boxed: a schedule's PUT carries its spec, and the work moves to the
    // request's thread.
    Admin(Box<AdminRoute>),
}

impl Work {
    /// Runs on the request's own thread.
    fn run<S: RunnerStore>(self, server: &Server<S>) -> Reply {
        match self {
            Work::Tick => tick(server),
            Work::Admin(route) => admin_route(server, &route),
        }
    }
}

fn admin_route<S: RunnerStore>(server: &Server<S>, route: &AdminRoute) -> Reply {
    let host = ServeHost {
        server,
        coordinator: Rc::new(CasCoordinator::new(server.store.clone(), seed())),
        jobs: Jobs::new(),
    };
    wait(admin::dispatch(
        route,
        &server.manifest,
        &host,
        server.clock.now(),
    ))
}

/// The OpenAPI document of the admin routes and the tick, served at
/// `/cronslot/openapi.json`: `docs/openapi.json` (the crate's
/// `openapi.json` links to it, so the package carries it).
const OPENAPI: &str = include_str!("../../openapi.json");

/// `cronslot serve` as the admin routes' host: the store this process
/// opened, its clock, and no Rust functions (a manual trigger runs command
/// and http jobs).
struct ServeHost<'a, S> {
    server: &'a Server<S>,
    coordinator: Rc<CasCoordinator<S>>,
    jobs: Jobs,
}

impl<S: RunnerStore> AdminHost for ServeHost<'_, S> {
    type Coordinator = CasCoordinator<S>;

    fn coordinator(&self) -> &Rc<CasCoordinator<S>> {
        &self.coordinator
    }

    fn trigger_owner(&self) -> String {
        format!("serve-{}", std::process::id())
    }

    fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    fn platform(&self) -> Rc<dyn Platform> {
        Rc::new(LocalPlatform::new(self.server.clock.clone()))
    }

    fn openapi(&self) -> Option<&'static str> {
        Some(OPENAPI)
    }

    async fn repair_wake(&self, job: &str) -> Result<Option<Timestamp>, CoordError> {
        repair_wake(&self.server.store, job)
            .await
            .map_err(CoordError::Store)
    }

    /// The schedules of the manifest's dynamic jobs, in the store this
    /// process opened.
    async fn schedule_route(
        &self,
        route: &AdminRoute,
        manifest: &Manifest,
        now: Timestamp,
    ) -> Reply {
        admin::execute_schedule(route, manifest, &*self.coordinator, now).await
    }

    async fn schedule_spec(
        &self,
        manifest: &Manifest,
        job: &JobName,
        key: &ScheduleKey,
    ) -> Result<JobSpec, Reply> {
        admin::schedule_job_spec(&*self.coordinator, manifest, job, key).await
    }

    /// The keyed runs of the manifest's dynamic jobs, in the store this
    /// process opened. A run enqueued here starts at the next tick of
    /// whichever runner serves the store.
    async fn run_route(&self, route: &AdminRoute, manifest: &Manifest, now: Timestamp) -> Reply {
        admin::execute_run(route, manifest, &*self.coordinator, now).await
    }

    async fn dead_runs(
        &self,
        doc: &mut admin::DlqDoc,
        templates: &[&cronslot_core::manifest::JobTemplate],
        now: Timestamp,
    ) -> Result<(), Reply> {
        admin::add_dead_runs(doc, &*self.coordinator, templates, now).await
    }
}

/// A seed for retry jitter, different per request.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    u64::try_from(nanos & u128::from(u64::MAX)).unwrap_or_default() ^ u64::from(std::process::id())
}

/// One tick, as `cronslot tick` runs it: 200 when every run succeeded and
/// was recorded, 500 with the same document otherwise.
fn tick<S: RunnerStore>(server: &Server<S>) -> Reply {
    let runner = Runner::new(
        server.store.clone(),
        server.manifest.jobs.clone(),
        server.clock.clone(),
    )
    .with_templates(server.manifest.templates.clone())
    .single_pass();
    let summary: Summary = match runner.run() {
        Ok(s) => s,
        Err(e) => {
            return Reply::error(
                500,
                ErrorKind::Internal,
                format!("the tick did not start: {e}"),
            );
        }
    };
    let doc = TickDoc::of(&summary);
    let ok = doc.ok(&summary);
    Reply::json(if ok { 200 } else { 500 }, &doc)
}

/// An admin reply as an HTTP response.
fn reply(r: Reply) -> Response {
    let mut response = Response::new(Body::from(r.body));
    *response.status_mut() =
        StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(r.content_type) {
        headers.insert("content-type", v);
    }
    for (name, value) in r.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(n, v);
        }
    }
    response
}
