//! The store's connection, on the store's own background thread (the
//! kit's [`Driver`]): one multiplexed connection (redis-rs pipelines
//! concurrent requests over it); callers on any runtime only await
//! answers.
//!
//! A connection that failed (its stream ended, or a command timed out, so
//! its state is unknown) is dropped; the next operation opens a new one.

use cronslot_store_kit::{ClockOffset, Counters, Driver, WakeSender, WakeSignal, seconds};
use redis::aio::MultiplexedConnection;
use redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, ConnectionInfo, RedisConnectionInfo, RedisResult,
};

use crate::error::{Phase, classify_owned, connection_broken};
use crate::location::{RedisLocation, RedisRootCerts};
use cronslot_core::coord::StoreError;

/// What every clone of a store shares.
pub(crate) struct Shared {
    pub(crate) location: RedisLocation,
    /// The location as shown in messages (redacted).
    pub(crate) shown: String,
    client: Client,
    /// The store's background thread: every request runs there
    /// (`driver.run`), whatever executor the caller is on.
    pub(crate) driver: Driver,
    /// The open connection and its number (so that a failure drops only
    /// the connection it happened on). Only locked on the store's thread.
    current: tokio::sync::Mutex<Option<(u64, MultiplexedConnection)>>,
    pub(crate) counts: Counters,
    pub(crate) offset: ClockOffset,
    /// The wake signal, once a runner asked for it (`store/wake.rs`):
    /// one subscribed connection for every clone.
    pub(crate) wakes: std::sync::OnceLock<WakeSignal>,
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
        let driver = Driver::start("cronslot-redis", format!("Redis store {shown}"))?;
        Ok(Shared {
            location,
            shown,
            client,
            driver,
            current: tokio::sync::Mutex::new(None),
            counts: Counters::default(),
            offset: ClockOffset::default(),
            wakes: std::sync::OnceLock::new(),
        })
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
        let n = self.counts.connection();
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
        self.counts.request(setup, phase == Phase::Write);
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

impl Shared {
    /// What the wake listener needs to connect, apart from the store, so
    /// that it never keeps the store alive.
    pub(crate) fn listener(&self) -> Listener {
        Listener {
            shown: self.shown.clone(),
            client: self.client.clone(),
            secret: self.secret().map(str::to_string),
            connect_timeout: self.location.connect_timeout(),
        }
    }
}

/// How the wake listener connects (`store/wake.rs`).
pub(crate) struct Listener {
    shown: String,
    client: Client,
    /// Only to keep it out of messages.
    secret: Option<String>,
    connect_timeout: std::time::Duration,
}

impl Listener {
    /// Opens a connection of its own (not the store's multiplexed one),
    /// subscribes it to `channel` and wakes `wakes` at every message,
    /// until the connection ends (an error naming the store). Must run on
    /// the store's runtime.
    pub(crate) async fn listen(&self, channel: &str, wakes: &WakeSender) -> Result<(), StoreError> {
        let doing = "subscribing to the wake channel";
        let failed = |e| {
            classify_owned(
                &self.shown,
                doing,
                Phase::Connect,
                self.secret.as_deref(),
                e,
            )
        };
        let limit = self.connect_timeout.saturating_mul(2);
        let subscribing = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = match tokio::time::timeout(limit, subscribing).await {
            Ok(Ok(pubsub)) => pubsub,
            Ok(Err(e)) => return Err(failed(e)),
            Err(_) => {
                return Err(StoreError::unavailable(format!(
                    "Redis store {}: {doing}: no answer within {} (twice connect_timeout)",
                    self.shown,
                    seconds(limit)
                )));
            }
        };
        wakes.listening();
        let mut messages = std::pin::pin!(pubsub.into_on_message());
        while std::future::poll_fn(|cx| futures_core::Stream::poll_next(messages.as_mut(), cx))
            .await
            .is_some()
        {
            wakes.wake();
        }
        Err(StoreError::unavailable(format!(
            "Redis store {}: {doing}: the connection ended",
            self.shown
        )))
    }
}
