//! The store's small connection pool, on the store's own background
//! thread (the kit's [`Driver`]): callers on any runtime only await
//! answers.
//!
//! The pool is a list of idle clients and a semaphore bounding how many
//! exist. A client whose connection has ended is dropped when it is taken
//! from the list; one that failed mid-statement or timed out is dropped
//! instead of returned.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cronslot_core::coord::StoreErrorKind;
use cronslot_store_kit::{ClockOffset, Counters, Driver, WakeSender, WakeSignal, seconds};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls, Row};

use crate::error::{Phase, classify, connection_survives};
use crate::location::{PgHost, PgLocation};
use crate::tls::{Tls, tls_for};
use cronslot_core::coord::StoreError;

/// What every clone of a store shares.
pub(crate) struct Shared {
    pub(crate) location: PgLocation,
    /// The location as shown in messages (redacted).
    pub(crate) shown: String,
    config: tokio_postgres::Config,
    tls: Tls,
    /// The store's background thread: every request runs there
    /// (`driver.run`), whatever executor the caller is on.
    pub(crate) driver: Driver,
    idle: Mutex<Vec<Client>>,
    permits: Arc<Semaphore>,
    max_connections: usize,
    pub(crate) counts: Counters,
    pub(crate) offset: ClockOffset,
    /// The wake signal, once a runner asked for it (`store/wake.rs`):
    /// one listening connection for every clone.
    pub(crate) wakes: std::sync::OnceLock<WakeSignal>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing in this crate panics while holding these locks; if something
    // did, the data (a list of clients, an offset) is still sound.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Starts the background thread; opens no connection yet.
    pub(crate) fn new(location: PgLocation, max_connections: usize) -> Result<Shared, StoreError> {
        let shown = location.to_string();
        let (tls, ssl_mode) = tls_for(&location)?;
        let mut config = tokio_postgres::Config::new();
        config
            .user(location.user())
            .dbname(location.dbname())
            .port(location.port())
            .application_name(location.application_name())
            .ssl_mode(ssl_mode)
            .connect_timeout(location.connect_timeout())
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .keepalives_interval(Duration::from_secs(10))
            .keepalives_retries(3)
            // The server cancels a statement after this (57014, reported
            // as unavailable, nothing written); the idle-in-transaction
            // limit ends a schema creation whose client vanished.
            .options(format!(
                "-c statement_timeout={} -c idle_in_transaction_session_timeout={}",
                millis(location.statement_timeout()),
                millis(location.statement_timeout().saturating_mul(4)),
            ));
        #[cfg(target_os = "linux")]
        config.tcp_user_timeout(location.statement_timeout() + location.connect_timeout());
        if let Some(password) = location.password() {
            config.password(password.expose());
        }
        match location.host() {
            PgHost::Tcp(host) => {
                config.host(host);
            }
            #[cfg(unix)]
            PgHost::Socket(dir) => {
                config.host_path(dir);
            }
            #[allow(unreachable_patterns)]
            _ => {
                return Err(StoreError::other(format!(
                    "PostgreSQL store {shown}: Unix sockets exist only on Unix: give a TCP host"
                )));
            }
        }
        let driver = Driver::start("cronslot-postgres", format!("PostgreSQL store {shown}"))?;
        let max_connections = max_connections.max(1);
        Ok(Shared {
            location,
            shown,
            config,
            tls,
            driver,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max_connections)),
            max_connections,
            counts: Counters::default(),
            offset: ClockOffset::default(),
            wakes: std::sync::OnceLock::new(),
        })
    }

    /// How long the client waits for a statement's answer: the server's
    /// statement timeout and a margin, so that a live server answers
    /// first (with a clean "canceled"); only a silent one hits this.
    pub(crate) fn answer_timeout(&self) -> Duration {
        let statement = self.location.statement_timeout();
        statement + (statement / 4).clamp(Duration::from_millis(500), Duration::from_secs(5))
    }

    /// A connection from the pool, or a new one. Must run on the store's
    /// runtime (inside [`Shared::run`]).
    pub(crate) async fn checkout(&self) -> Result<Conn<'_>, StoreError> {
        let wait = self.location.connect_timeout();
        let permit = match tokio::time::timeout(wait, self.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => {
                return Err(StoreError::other(format!(
                    "PostgreSQL store {}: the connection pool is closed: this is a bug",
                    self.shown
                )));
            }
            Err(_) => {
                return Err(StoreError::unavailable(format!(
                    "PostgreSQL store {}: all {} connections stayed busy for {}: the server is \
                     slow or the store is shared by too many tasks (worth retrying; or raise \
                     max_connections)",
                    self.shown,
                    self.max_connections,
                    seconds(wait)
                )));
            }
        };
        let reused = loop {
            let next = lock(&self.idle).pop();
            match next {
                Some(client) if client.is_closed() => continue,
                other => break other,
            }
        };
        let client = match reused {
            Some(client) => client,
            None => self.connect().await?,
        };
        Ok(Conn {
            shared: self,
            client: Some(client),
            _permit: permit,
            broken: false,
        })
    }

    /// A new connection, driven by a task on the current runtime (the
    /// store's, inside [`Driver::run`]).
    pub(crate) async fn connect(&self) -> Result<Client, StoreError> {
        self.counts.connection();
        self.connect_apart().await
    }

    /// A new connection outside the pool and its count (the wake
    /// notifier's, `store/wake.rs`), driven by a task on the current
    /// runtime.
    pub(crate) async fn connect_apart(&self) -> Result<Client, StoreError> {
        let limit = self.location.connect_timeout();
        let connecting = async {
            match &self.tls {
                Tls::Off => {
                    let (client, connection) = self.config.connect(NoTls).await?;
                    tokio::spawn(async move {
                        let _ = connection.await;
                    });
                    Ok::<Client, tokio_postgres::Error>(client)
                }
                Tls::Rustls(make) => {
                    let (client, connection) = self.config.connect(make.clone()).await?;
                    tokio::spawn(async move {
                        let _ = connection.await;
                    });
                    Ok(client)
                }
            }
        };
        match tokio::time::timeout(limit, connecting).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => {
                Err(classify(&self.shown, "connecting", Phase::Connect, &e).with_source(e))
            }
            Err(_) => Err(StoreError::unavailable(format!(
                "PostgreSQL store {}: connecting: no answer within {} (connect_timeout): check \
                 that the server is running and reachable at this host and port (worth \
                 retrying)",
                self.shown,
                seconds(limit)
            ))),
        }
    }
}

impl Shared {
    /// What the wake listener needs to connect, apart from the store, so
    /// that it never keeps the store alive.
    pub(crate) fn listener(&self) -> Listener {
        Listener {
            shown: self.shown.clone(),
            config: self.config.clone(),
            tls: self.tls.clone(),
            connect_timeout: self.location.connect_timeout(),
        }
    }
}

/// How the wake listener connects (`store/wake.rs`).
pub(crate) struct Listener {
    shown: String,
    config: tokio_postgres::Config,
    tls: Tls,
    connect_timeout: Duration,
}

impl Listener {
    /// Opens a connection of its own (not one of the pool's), sends
    /// `LISTEN channel` on it and wakes `wakes` at every notification,
    /// until the connection ends (an error naming the store). Must run on
    /// the store's runtime.
    pub(crate) async fn listen(&self, channel: &str, wakes: &WakeSender) -> Result<(), StoreError> {
        let limit = self.connect_timeout;
        let failed = |e: tokio_postgres::Error| {
            classify(&self.shown, "listening for wakes", Phase::Connect, &e).with_source(e)
        };
        let timed_out = || {
            StoreError::unavailable(format!(
                "PostgreSQL store {}: listening for wakes: no answer within {} \
                 (connect_timeout)",
                self.shown,
                seconds(limit)
            ))
        };
        match &self.tls {
            Tls::Off => {
                let (client, connection) = tokio::time::timeout(limit, self.config.connect(NoTls))
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(failed)?;
                listen_on(&self.shown, client, connection, channel, wakes).await
            }
            Tls::Rustls(make) => {
                let (client, connection) =
                    tokio::time::timeout(limit, self.config.connect(make.clone()))
                        .await
                        .map_err(|_| timed_out())?
                        .map_err(failed)?;
                listen_on(&self.shown, client, connection, channel, wakes).await
            }
        }
    }
}

/// Drives `connection` (its messages are the notifications), sends
/// `LISTEN` through `client`, and wakes `wakes` at each notification until
/// the connection ends.
async fn listen_on<S, T>(
    shown: &str,
    client: Client,
    mut connection: Connection<S, T>,
    channel: &str,
    wakes: &WakeSender,
) -> Result<(), StoreError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    enum Event {
        Listened(Result<(), tokio_postgres::Error>),
        Notified,
        /// A notice (a warning from the server): nothing to do.
        Noticed,
        Failed(tokio_postgres::Error),
        Closed,
    }
    // The channel is a lowercase identifier (`wake_channel`): it needs no
    // quoting.
    let command = format!("LISTEN {channel}");
    let mut listen = std::pin::pin!(client.batch_execute(&command));
    let mut listening = false;
    let failed = |e: tokio_postgres::Error| {
        classify(shown, "listening for wakes", Phase::Read, &e).with_source(e)
    };
    loop {
        let event = std::future::poll_fn(|cx| {
            if !listening {
                if let std::task::Poll::Ready(answer) = listen.as_mut().poll(cx) {
                    return std::task::Poll::Ready(Event::Listened(answer));
                }
            }
            connection.poll_message(cx).map(|message| match message {
                Some(Ok(AsyncMessage::Notification(_))) => Event::Notified,
                Some(Ok(_)) => Event::Noticed,
                Some(Err(e)) => Event::Failed(e),
                None => Event::Closed,
            })
        })
        .await;
        match event {
            Event::Listened(Ok(())) => {
                listening = true;
                wakes.listening();
            }
            Event::Listened(Err(e)) | Event::Failed(e) => return Err(failed(e)),
            Event::Notified => wakes.wake(),
            Event::Noticed => {}
            Event::Closed => {
                return Err(StoreError::unavailable(format!(
                    "PostgreSQL store {shown}: listening for wakes: the server closed the \
                     connection"
                )));
            }
        }
    }
}

/// A connection taken from the pool; back into it when dropped, unless
/// it failed.
pub(crate) struct Conn<'a> {
    shared: &'a Shared,
    client: Option<Client>,
    _permit: OwnedSemaphorePermit,
    broken: bool,
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            if !self.broken && !client.is_closed() {
                lock(&self.shared.idle).push(client);
            }
        }
    }
}

impl Conn<'_> {
    /// Closes this connection instead of returning it (what it was doing
    /// is rolled back by the server).
    pub(crate) fn discard(&mut self) {
        self.broken = true;
    }

    /// Whether this connection is closed or in an unknown state (it is not
    /// returned to the pool).
    pub(crate) fn broken(&self) -> bool {
        self.broken || self.client.as_ref().is_none_or(Client::is_closed)
    }

    fn client(&self) -> Result<&Client, StoreError> {
        self.client.as_ref().ok_or_else(|| {
            StoreError::other(format!(
                "PostgreSQL store {}: a connection was used after it was closed: this is a bug",
                self.shared.shown
            ))
        })
    }

    fn count(&self, phase: Phase, setup: bool) {
        self.shared.counts.request(setup, phase == Phase::Write);
    }

    /// Counts `n` writes that went in the statement just counted.
    pub(crate) fn count_grouped(&self, n: u64) {
        self.shared.counts.grouped(n);
    }

    /// One statement in one round trip (parse, bind and execute sent
    /// together), with the client's answer timeout.
    pub(crate) async fn query(
        &mut self,
        phase: Phase,
        setup: bool,
        doing: &(dyn Fn() -> String + Sync),
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>, StoreError> {
        self.count(phase, setup);
        let limit = self.shared.answer_timeout();
        let answer = {
            let client = self.client()?;
            tokio::time::timeout(limit, client.query_typed(sql, params)).await
        };
        self.settle(phase, doing, limit, answer)
    }

    /// Statements without parameters or rows, as one simple query
    /// (`BEGIN`, DDL).
    pub(crate) async fn batch(
        &mut self,
        setup: bool,
        doing: &(dyn Fn() -> String + Sync),
        sql: &str,
    ) -> Result<(), StoreError> {
        self.count(Phase::Write, setup);
        let limit = self.shared.answer_timeout();
        let answer = {
            let client = self.client()?;
            tokio::time::timeout(limit, client.batch_execute(sql)).await
        };
        self.settle(Phase::Write, doing, limit, answer)
    }

    fn settle<T>(
        &mut self,
        phase: Phase,
        doing: &(dyn Fn() -> String + Sync),
        limit: Duration,
        answer: Result<Result<T, tokio_postgres::Error>, tokio::time::error::Elapsed>,
    ) -> Result<T, StoreError> {
        match answer {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                if !connection_survives(&e) {
                    self.broken = true;
                }
                Err(classify(&self.shared.shown, &doing(), phase, &e).with_source(e))
            }
            Err(_) => {
                // The connection's state is unknown: never reuse it.
                self.broken = true;
                let (kind, what) = match phase {
                    Phase::Write => (
                        StoreErrorKind::Ambiguous,
                        "the write may or may not have been applied; the coordinator reads the \
                         record back",
                    ),
                    _ => (
                        StoreErrorKind::Unavailable,
                        "the server or the network is stuck; the next operation reconnects",
                    ),
                };
                Err(StoreError::new(
                    kind,
                    format!(
                        "PostgreSQL store {}: {}: no answer within {}: {what}",
                        self.shared.shown,
                        doing(),
                        seconds(limit)
                    ),
                ))
            }
        }
    }
}

/// Column `i` of `row`, or a corrupt-record error naming it and the store.
pub(crate) fn column<'r, T: FromSql<'r>>(
    store: &str,
    row: &'r Row,
    i: usize,
    doing: &(dyn Fn() -> String + Sync),
) -> Result<T, StoreError> {
    row.try_get::<_, T>(i).map_err(|e| {
        StoreError::corrupt(format!(
            "PostgreSQL store {store}: {}: column {i} of the answer cannot be read ({e}): the \
             tables do not have the layout this cronslot expects",
            doing()
        ))
    })
}

/// Where the statements on a job's record run: a connection of the
/// store's pool ([`Conn`]), or an application's own transaction
/// (`store/txn.rs`). The record's read and conditional write are written
/// once, over this.
pub(crate) trait Session {
    /// The store, as shown in messages (never with a password).
    fn store(&self) -> &str;

    /// One statement, counted as a read or a write by `phase`.
    fn statement(
        &mut self,
        phase: Phase,
        doing: &(dyn Fn() -> String + Sync),
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> impl Future<Output = Result<Vec<Row>, StoreError>> + Send;

    /// Column `i` of `row`, or a corrupt-record error naming it.
    fn column<'r, T: FromSql<'r>>(
        &self,
        row: &'r Row,
        i: usize,
        doing: &(dyn Fn() -> String + Sync),
    ) -> Result<T, StoreError> {
        column(self.store(), row, i, doing)
    }
}

impl Session for Conn<'_> {
    fn store(&self) -> &str {
        &self.shared.shown
    }

    async fn statement(
        &mut self,
        phase: Phase,
        doing: &(dyn Fn() -> String + Sync),
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>, StoreError> {
        self.query(phase, false, doing, sql, params).await
    }
}

/// The background thread and its runtime; the sender ends it.
fn millis(d: Duration) -> u128 {
    d.as_millis().max(1)
}
