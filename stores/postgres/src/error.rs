//! What went wrong, as the core's [`StoreError`]: one sentence that names
//! the store (its redacted location) and says what to do, the
//! [`StoreErrorKind`] that decides whether it is worth retrying, the
//! server's SQLSTATE as its code, and the client's error as its source.

use std::error::Error as _;
use std::io;

use cronslot_core::coord::{StoreError, StoreErrorKind};
use tokio_postgres::error::{DbError, SqlState};

/// What the failed request was, which decides what an interrupted one
/// means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Opening a connection: nothing was sent.
    Connect,
    /// A statement that changes nothing.
    Read,
    /// A statement that writes: if the connection fails after it was sent,
    /// it may or may not have been applied.
    Write,
}

/// Whether the connection can still be used after `e`.
pub(crate) fn connection_survives(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        // An ERROR ends the statement, not the session; FATAL and PANIC
        // end the session.
        Some(db) => db.severity() == "ERROR",
        None => false,
    }
}

/// Classifies a client error. `store` is the redacted location, `doing`
/// what was being done ("claiming job \"x\"").
pub(crate) fn classify(
    store: &str,
    doing: &str,
    phase: Phase,
    e: &tokio_postgres::Error,
) -> StoreError {
    if let Some(db) = e.as_db_error() {
        return from_db(store, doing, phase, db);
    }
    let detail = chain(e);
    let head = e.to_string();
    let (kind, advice) = if head.starts_with("error performing TLS handshake") {
        if find_cause::<rustls::Error>(e).is_some() {
            (
                StoreErrorKind::Other,
                "the server's certificate or TLS settings were refused: check sslmode and \
                 sslrootcert (or PGSSLROOTCERT)",
            )
        } else {
            (
                StoreErrorKind::Unavailable,
                "the connection failed during the TLS handshake: check that the server is reachable",
            )
        }
    } else if head.starts_with("authentication error") || head.starts_with("invalid configuration")
    {
        (
            StoreErrorKind::Other,
            "the server asks for a password the store does not have: put it in the URL \
             (postgres://USER:PASSWORD@…) or in PGPASSWORD",
        )
    } else if head.starts_with("error connecting to server") || head.starts_with("timeout") {
        (
            StoreErrorKind::Unavailable,
            "check that the server is running and accepts TCP connections at this host and port \
             (worth retrying)",
        )
    } else if e.is_closed() || find_cause::<io::Error>(e).is_some() {
        match phase {
            Phase::Write => (
                StoreErrorKind::Ambiguous,
                "the connection was lost after the write was sent, so it may or may not have been \
                 applied; the coordinator reads the record back",
            ),
            _ => (
                StoreErrorKind::Unavailable,
                "the connection was lost; the next operation reconnects",
            ),
        }
    } else {
        (
            StoreErrorKind::Other,
            "this is unexpected: report it with the server's version",
        )
    };
    StoreError::new(
        kind,
        format!("PostgreSQL store {store}: {doing}: {detail}: {advice}"),
    )
}

/// Classifies the error of a statement sent in an application's own
/// transaction (`PgStore::enqueue_run_in`). Nothing there is ambiguous: the
/// transaction has not committed, so when its connection is lost the
/// server rolls back everything it wrote. A serialization failure or a
/// deadlock aborts the transaction: the application rolls it back and runs
/// it again. Either is [`StoreErrorKind::Unavailable`] (worth retrying,
/// the whole transaction).
pub(crate) fn classify_in_transaction(
    store: &str,
    doing: &str,
    e: &tokio_postgres::Error,
) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let advice = if *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
        {
            Some((
                StoreErrorKind::Unavailable,
                "the transaction conflicted with a concurrent one and is aborted: roll it back \
                 and run it again (worth retrying)",
            ))
        } else if *code == SqlState::IN_FAILED_SQL_TRANSACTION {
            Some((
                StoreErrorKind::Other,
                "an earlier statement of the transaction failed, so it is aborted: roll it back \
                 (and handle that statement's error)",
            ))
        } else {
            None
        };
        if let Some((kind, advice)) = advice {
            return StoreError::new(
                kind,
                format!(
                    "PostgreSQL store {store}: {doing}: {}: {} ({}): {advice}",
                    db.severity(),
                    db.message(),
                    code.code()
                ),
            )
            .with_code(code.code());
        }
        return from_db(store, doing, Phase::Read, db);
    }
    if e.is_closed() || find_cause::<io::Error>(e).is_some() {
        return StoreError::unavailable(format!(
            "PostgreSQL store {store}: {doing}: {}: the connection was lost before the \
             transaction committed, so the server rolls it back and nothing it wrote exists: \
             run it again on a new connection (worth retrying)",
            chain(e)
        ));
    }
    classify(store, doing, Phase::Read, e)
}

fn from_db(store: &str, doing: &str, phase: Phase, db: &DbError) -> StoreError {
    let code = db.code();
    let class = &code.code()[..2];
    let (kind, advice): (StoreErrorKind, &str) = if *code == SqlState::INVALID_PASSWORD
        || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    {
        (
            StoreErrorKind::Other,
            "the server refused the user or the password: check both (in the URL or PGPASSWORD) \
             and the server's pg_hba.conf",
        )
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        (
            StoreErrorKind::Other,
            "the role lacks a privilege: grant it, or have a role that may create schemas and \
             tables open the store once (it creates them), then grant this role USAGE on the \
             schema and SELECT, INSERT, UPDATE, DELETE on its tables",
        )
    } else if *code == SqlState::INVALID_CATALOG_NAME {
        (
            StoreErrorKind::Other,
            "the database does not exist: create it (createdb) or fix the URL",
        )
    } else if *code == SqlState::UNDEFINED_TABLE || *code == SqlState::INVALID_SCHEMA_NAME {
        (
            StoreErrorKind::Other,
            "the store's tables are gone (was the schema dropped?): open the store again to \
             create them",
        )
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::LOCK_NOT_AVAILABLE
        || *code == SqlState::QUERY_CANCELED
        || *code == SqlState::CANNOT_CONNECT_NOW
        || *code == SqlState::READ_ONLY_SQL_TRANSACTION
        || class == "08"
        || class == "53"
    {
        (
            StoreErrorKind::Unavailable,
            "the server is busy, starting, read-only or timed the statement out; nothing was \
             written (worth retrying)",
        )
    } else if *code == SqlState::ADMIN_SHUTDOWN || *code == SqlState::CRASH_SHUTDOWN {
        match phase {
            Phase::Write => (
                StoreErrorKind::Ambiguous,
                "the server ended the connection while the write ran, so it may or may not have \
                 been applied; the coordinator reads the record back",
            ),
            _ => (
                StoreErrorKind::Unavailable,
                "the server ended the connection (shutdown or restart); the next operation \
                 reconnects",
            ),
        }
    } else if class == "XX"
        && (*code == SqlState::DATA_CORRUPTED || *code == SqlState::INDEX_CORRUPTED)
    {
        (
            StoreErrorKind::Corrupt,
            "the server reports damaged data: restore the database from a backup",
        )
    } else {
        (
            StoreErrorKind::Other,
            "this is not expected to pass by itself: check the server's log",
        )
    };
    let mut text = format!("{}: {} ({})", db.severity(), db.message(), code.code());
    if let Some(detail) = db.detail() {
        text.push_str(&format!("; {detail}"));
    }
    StoreError::new(
        kind,
        format!("PostgreSQL store {store}: {doing}: {text}: {advice}"),
    )
    .with_code(code.code())
}

/// The error and its causes, joined with `: `.
fn chain(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

fn find_cause<T: std::error::Error + 'static>(e: &tokio_postgres::Error) -> Option<&T> {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(found) = s.downcast_ref::<T>() {
            return Some(found);
        }
        // tokio-rustls wraps rustls's errors in io::Error.
        if let Some(io) = s.downcast_ref::<io::Error>() {
            if let Some(inner) = io.get_ref().and_then(|i| i.downcast_ref::<T>()) {
                return Some(inner);
            }
        }
        source = s.source();
    }
    None
}
