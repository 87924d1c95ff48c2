//! The store's own runtime and its connection.
//!
//! One multiplexed connection (redis-rs pipelines concurrent requests over
//! it) is opened, driven and used on one background thread with a
//! current-thread tokio runtime that the store owns: callers may sit on any
//! runtime (the local runner's per-worker runtimes, the CLI's, the core's
//! test executor) and only await a task's answer, so a caller's runtime
//! ending never strands the connection. The thread ends when the last
//! clone of the store is dropped.
//!
//! A connection that failed (its stream ended, or a command timed out, so
//! its state is unknown) is dropped; the next operation opens a new one.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::SignedDuration;
use redis::aio::MultiplexedConnection;
use redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, ConnectionInfo, RedisConnectionInfo, RedisResult,
};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::error::{Phase, classify_owned, connection_broken};
use crate::location::{RedisLocation, RedisRootCerts};
use cronslot_core::coord::StoreError;

/// Requests sent, by kind (see [`RedisStore::commands`](crate::RedisStore::commands)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandCounts {
    /// Round trips that read (a record with the server's clock, the job
    /// list, an effect, the tick's start).
    pub reads: u64,
    /// Round trips that write: each one script (a record, an effect, the
    /// tick mark).
    pub writes: u64,
    /// Round trips that checked or wrote the store's layout (opening).
    pub setup: u64,
    /// Connections opened.
    pub connections: u64,
}

impl CommandCounts {
    /// What was counted since `earlier` (a reading of the same store).
    pub fn since(&self, earlier: &CommandCounts) -> CommandCounts {
        CommandCounts {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            setup: self.setup.saturating_sub(earlier.setup),
            connections: self.connections.saturating_sub(earlier.connections),
        }
    }
}

#[derive(Default)]
struct Counters {
    reads: AtomicU64,
    writes: AtomicU64,
    setup: AtomicU64,
    connections: AtomicU64,
}

/// What every clone of a store shares.
pub(crate) struct Shared {
    pub(crate) location: RedisLocation,
    /// The location as shown in messages (redacted).
    pub(crate) shown: String,
    client: Client,
    handle: Handle,
    /// Dropping it ends the background thread (and the connection).
    _stop: oneshot::Sender<()>,
    /// The open connection and its number (so that a failure drops only
    /// the connection it happened on). Only locked on the store's thread.
    current: tokio::sync::Mutex<Option<(u64, MultiplexedConnection)>>,
    counts: Counters,
    offset: Mutex<Option<SignedDuration>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing in this crate panics while holding this lock; if something
    // did, the data (an offset) is still sound.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Starts the background thread; opens no connection yet.
    pub(crate) fn new(location: RedisLocation) -> Result<Shared, StoreError> {
        let shown = location.to_string();
        let addr = if location.tls() {
            ConnectionAddr::TcpTls {
                host: location.host().to_string(),
                port: location.port(),
                insecure: false,
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(location.host().to_string(), location.port())
        };
        let info = ConnectionInfo {
            addr,
            redis: RedisConnectionInfo {
                db: i64::from(location.db()),
                username: location.user().map(str::to_string),
                password: location.password().map(|p| p.expose().to_string()),
                ..RedisConnectionInfo::default()
            },
        };
        let client = match location.root_certs() {
            RedisRootCerts::File(path) if location.tls() => {
                let pem = std::fs::read(path).map_err(|e| {
                    StoreError::other(format!(
                        "Redis store {shown}: cannot read tlsrootcert {}: {e}",
                        path.display()
                    ))
                })?;
                Client::build_with_tls(
                    info,
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem),
                    },
                )
            }
            _ => Client::open(info),
        }
        .map_err(|e| {
            StoreError::other(format!(
                "Redis store {shown}: setting up the client: {e}: check the URL and, for \
                 rediss://, the PEM file of tlsrootcert"
            ))
        })?;
        if location.tls() {
            // redis-rs builds its rustls configuration with the process's
            // default crypto provider: make it `ring` (the provider the
            // rest of cronslot uses) unless the program chose one.
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
        }
        let (handle, stop) = background().map_err(|e| {
            StoreError::other(format!(
                "Redis store {shown}: cannot start the store's background thread: {e}"
            ))
        })?;
        Ok(Shared {
            location,
            shown,
            client,
            handle,
            _stop: stop,
            current: tokio::sync::Mutex::new(None),
            counts: Counters::default(),
            offset: Mutex::new(None),
        })
    }

    /// Runs `task` on the store's runtime and waits for its answer, from
    /// whatever executor the caller is on.
    pub(crate) async fn run<T, F>(self: &Arc<Self>, task: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        match self.handle.spawn(task).await {
            Ok(answer) => answer,
            Err(e) => Err(StoreError::other(format!(
                "Redis store {}: the store's background task ended without an answer ({e}): \
                 this is a bug",
                self.shown
            ))),
        }
    }

    pub(crate) fn commands(&self) -> CommandCounts {
        CommandCounts {
            reads: self.counts.reads.load(Ordering::Relaxed),
            writes: self.counts.writes.load(Ordering::Relaxed),
            setup: self.counts.setup.load(Ordering::Relaxed),
            connections: self.counts.connections.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn clock_offset(&self) -> Option<SignedDuration> {
        *lock(&self.offset)
    }

    pub(crate) fn set_clock_offset(&self, offset: SignedDuration) {
        *lock(&self.offset) = Some(offset);
    }

    fn secret(&self) -> Option<&str> {
        self.location.password().map(|p| p.expose())
    }

    /// The open connection, or a new one. Must run on the store's runtime
    /// (inside [`Shared::run`]).
    async fn connection(&self) -> Result<(u64, MultiplexedConnection), StoreError> {
        let mut current = self.current.lock().await;
        if let Some((n, conn)) = current.as_ref() {
            return Ok((*n, conn.clone()));
        }
        let n = self.counts.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let limit = self.location.connect_timeout();
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(limit)
            .set_response_timeout(self.location.command_timeout());
        // The connect timeout covers TCP; the whole handshake (TLS, AUTH,
        // SELECT) gets it once more.
        let connecting = self
            .client
            .get_multiplexed_async_connection_with_config(&config);
        match tokio::time::timeout(limit.saturating_mul(2), connecting).await {
            Ok(Ok(conn)) => {
                *current = Some((n, conn.clone()));
                Ok((n, conn))
            }
            Ok(Err(e)) => Err(classify_owned(
                &self.shown,
                "connecting",
                Phase::Connect,
                self.secret(),
                e,
            )),
            Err(_) => Err(StoreError::unavailable(format!(
                "Redis store {}: connecting: no answer within {} (connect_timeout): check that \
                 the server is running and reachable at this host and port (worth retrying)",
                self.shown,
                seconds(limit)
            ))),
        }
    }

    /// One request (a command, a pipeline or a script) on the connection,
    /// counted as `phase` (`setup` for opening); a failure that leaves the
    /// connection unusable drops it.
    pub(crate) async fn request<T, F, Fut>(
        &self,
        phase: Phase,
        setup: bool,
        doing: &(dyn Fn() -> String + Sync),
        send: F,
    ) -> Result<T, StoreError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let (n, conn) = self.connection().await?;
        let counter = match (setup, phase) {
            (true, _) => &self.counts.setup,
            (false, Phase::Write) => &self.counts.writes,
            (false, _) => &self.counts.reads,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        match send(conn).await {
            Ok(value) => Ok(value),
            Err(e) => {
                if connection_broken(&e) {
                    let mut current = self.current.lock().await;
                    if current.as_ref().is_some_and(|(m, _)| *m == n) {
                        *current = None;
                    }
                }
                Err(classify_owned(
                    &self.shown,
                    &doing(),
                    phase,
                    self.secret(),
                    e,
                ))
            }
        }
    }
}

/// The background thread and its runtime; the sender ends it.
fn background() -> std::io::Result<(Handle, oneshot::Sender<()>)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let handle = runtime.handle().clone();
    let (stop, stopped) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("cronslot-redis".to_string())
        .spawn(move || {
            // Runs the connection and the store's tasks until every clone
            // of the store is gone; dropping the runtime then closes the
            // connection.
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })?;
    Ok((handle, stop))
}

/// `5 s`, `1.5 s`.
pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}
