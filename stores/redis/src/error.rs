//! What went wrong, in one sentence that names the store (its redacted
//! location) and says what to do, with the core's [`StoreErrorKind`] that
//! decides whether it is worth retrying.

use cronslot_core::coord::{StoreError, StoreErrorKind};
use redis::ErrorKind;

/// What the failed request was, which decides what an interrupted one
/// means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Opening a connection: nothing was sent.
    Connect,
    /// A command that changes nothing.
    Read,
    /// A script that writes: if the connection fails after it was sent, it
    /// may or may not have been applied.
    Write,
}

/// Whether the connection should be replaced after `e` (its stream is
/// gone, or its state unknown after a timeout).
pub(crate) fn connection_broken(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error()
}

/// Classifies a client error. `store` is the redacted location, `doing`
/// what was being done ("writing the state of job \"x\""), `secret` the
/// password (removed from the client's text, should it ever echo it).
pub(crate) fn classify(
    store: &str,
    doing: &str,
    phase: Phase,
    secret: Option<&str>,
    e: &redis::RedisError,
) -> StoreError {
    let code = e.code().map(str::to_string);
    let code_is = |c: &str| code.as_deref() == Some(c);
    let (kind, advice) = if e.kind() == ErrorKind::AuthenticationFailed
        || code_is("WRONGPASS")
        || code_is("NOAUTH")
    {
        (
            StoreErrorKind::Other,
            if code_is("NOAUTH") {
                "the server asks for a password the store does not have: put it in the URL \
                 (redis://:PASSWORD@HOST, or redis://USER:PASSWORD@HOST for an ACL user) or in \
                 REDISCLI_AUTH"
            } else {
                "the server refused the user or the password: check both (in the URL or \
                 REDISCLI_AUTH) and the server's ACL"
            },
        )
    } else if code_is("NOPERM") {
        (
            StoreErrorKind::Other,
            "the ACL user lacks a permission: it needs the commands GET, SET, HGET, HMGET, HSET, \
             ZADD, ZRANGE, ZRANGEBYSCORE, PEXPIRE, TIME, PING, EVALSHA, SCRIPT and the keys \
             under the store's prefix",
        )
    } else if e.kind() == ErrorKind::Moved
        || e.kind() == ErrorKind::Ask
        || e.kind() == ErrorKind::CrossSlot
        || e.kind() == ErrorKind::ClusterDown
    {
        (
            StoreErrorKind::Other,
            "this is a Redis Cluster, which this store does not support yet (its writes touch a \
             job's keys and the deployment's wake index in one script): use a standalone server \
             or a primary with replicas",
        )
    } else if e.kind() == ErrorKind::BusyLoadingError
        || e.kind() == ErrorKind::TryAgain
        || e.kind() == ErrorKind::MasterDown
        || e.kind() == ErrorKind::ReadOnly
        || code_is("OOM")
        || code_is("BUSY")
        || code_is("MISCONF")
    {
        (
            StoreErrorKind::Unavailable,
            "the server is loading its data, out of memory, a read-only replica, unable to \
             persist, or busy with a script; nothing was written (worth retrying)",
        )
    } else if e.kind() == ErrorKind::NoScriptError {
        // redis-rs answers `NOSCRIPT` by loading the script and sending
        // `EVALSHA` once more: this is the second `NOSCRIPT`, the cache
        // emptied again in between (`SCRIPT FLUSH`, a restart, a
        // failover). The script did not run.
        (
            StoreErrorKind::Unavailable,
            "the server lost the store's scripts again right after they were loaded (SCRIPT \
             FLUSH, a restart or a failover); nothing was written (worth retrying)",
        )
    } else if code_is("WRONGTYPE") {
        (
            StoreErrorKind::Corrupt,
            "a key under the store's prefix holds another kind of value: another program \
             writes under this prefix; give the store a prefix of its own (?prefix=NAME)",
        )
    } else if tls_refused(e) {
        (
            StoreErrorKind::Other,
            "the server's certificate was refused: check that it names the host in the URL, and \
             that tlsrootcert gives the CA that signed it (the bundled Mozilla roots are used \
             otherwise)",
        )
    } else if e.is_connection_refusal() {
        (
            StoreErrorKind::Unavailable,
            "check that the server is running and accepts TCP connections at this host and port \
             (worth retrying)",
        )
    } else if e.is_timeout() || e.is_io_error() || e.is_connection_dropped() {
        match phase {
            Phase::Write => (
                StoreErrorKind::Ambiguous,
                "the connection was lost or timed out after the write was sent, so it may or may \
                 not have been applied; the coordinator reads the record back",
            ),
            Phase::Read => (
                StoreErrorKind::Unavailable,
                "the connection was lost or timed out; the next operation reconnects (worth \
                 retrying)",
            ),
            Phase::Connect => (
                StoreErrorKind::Unavailable,
                "check that the server is running and reachable at this host and port (worth \
                 retrying)",
            ),
        }
    } else if e.kind() == ErrorKind::InvalidClientConfig && phase == Phase::Connect {
        (
            StoreErrorKind::Other,
            "the connection could not be set up: check the URL, and for rediss:// the \
             server's certificate and tlsrootcert",
        )
    } else {
        (
            StoreErrorKind::Other,
            "this is not expected to pass by itself: check the server's log, and report it \
             with the server's version",
        )
    };
    let mut detail = e.to_string();
    if let Some(secret) = secret.filter(|s| !s.is_empty()) {
        detail = detail.replace(secret, "***");
    }
    let error = StoreError::new(
        kind,
        format!("Redis store {store}: {doing}: {detail}: {advice}"),
    );
    match code {
        Some(code) => error.with_code(code),
        None => error,
    }
}

/// [`classify`], with the client's error attached as the source, unless
/// its text (or a cause's) holds the password: a source is printed by
/// whoever walks the chain, and the password must reach no output.
pub(crate) fn classify_owned(
    store: &str,
    doing: &str,
    phase: Phase,
    secret: Option<&str>,
    e: redis::RedisError,
) -> StoreError {
    let error = classify(store, doing, phase, secret, &e);
    let leaks = secret.is_some_and(|secret| {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        std::iter::from_fn(|| {
            let here = cause?;
            cause = here.source();
            Some(here.to_string())
        })
        .any(|text| text.contains(secret))
    });
    if leaks { error } else { error.with_source(e) }
}

/// Whether `e` is rustls refusing the server's certificate or TLS
/// settings (which retrying does not mend). redis-rs hands the I/O error
/// of tokio-rustls only through the older `cause`, which cannot be
/// downcast, so this reads rustls's own wording of those errors.
fn tls_refused(e: &redis::RedisError) -> bool {
    if !e.is_io_error() {
        return false;
    }
    let text = e.to_string();
    [
        "invalid peer certificate",
        "peer is incompatible",
        "peer misbehaved",
        "received fatal alert",
    ]
    .iter()
    .any(|words| text.contains(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: ErrorKind, detail: &str) -> redis::RedisError {
        redis::RedisError::from((kind, "test", detail.to_string()))
    }

    #[test]
    fn kinds_follow_what_the_server_or_the_connection_said() {
        let io = redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert_eq!(
            classify("s", "d", Phase::Write, None, &io).kind(),
            &StoreErrorKind::Ambiguous
        );
        assert_eq!(
            classify("s", "d", Phase::Read, None, &io).kind(),
            &StoreErrorKind::Unavailable
        );
        let timeout =
            redis::RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, "slow"));
        assert!(connection_broken(&timeout));
        assert_eq!(
            classify("s", "d", Phase::Write, None, &timeout).kind(),
            &StoreErrorKind::Ambiguous
        );
        let loading = error(ErrorKind::BusyLoadingError, "loading");
        assert_eq!(
            classify("s", "d", Phase::Write, None, &loading).kind(),
            &StoreErrorKind::Unavailable
        );
        // A second NOSCRIPT (redis-rs has loaded the script once): the
        // script did not run.
        let noscript = error(ErrorKind::NoScriptError, "No matching script");
        let e = classify("s", "d", Phase::Write, None, &noscript);
        assert_eq!(e.kind(), &StoreErrorKind::Unavailable);
        assert!(e.message().contains("nothing was written"), "{e}");
        let auth = error(
            ErrorKind::AuthenticationFailed,
            "Password authentication failed",
        );
        let e = classify(
            "redis://:***@h:1/0?prefix=p",
            "connecting",
            Phase::Connect,
            None,
            &auth,
        );
        assert_eq!(e.kind(), &StoreErrorKind::Other);
        assert!(
            e.message()
                .starts_with("Redis store redis://:***@h:1/0?prefix=p: connecting: ")
        );
        assert!(e.message().contains("check both"), "{e}");
    }

    #[test]
    fn a_password_echoed_by_the_client_is_hidden() {
        let e = error(ErrorKind::ResponseError, "something about Hunter2-secret");
        let e = classify("s", "d", Phase::Read, Some("Hunter2-secret"), &e);
        assert!(!e.message().contains("Hunter2-secret"), "{e}");
        assert!(e.message().contains("something about ***"), "{e}");
    }
}
