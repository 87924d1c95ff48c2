//! The store's location: a `redis://` or `rediss://` URL, parsed once,
//! shown only with its password replaced by `***`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use cronslot_core::coord::LocationError;
use cronslot_core::coord::location::{
    BareUserinfo, QueryParams, Secret, StoreUrl, UrlForm, encode_component, host_in_url,
    parse_host_port, parse_seconds, parse_userinfo,
};

/// The key prefix used when the URL names none.
pub const DEFAULT_PREFIX: &str = "cronslot";

/// The port used when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;

/// How long connecting (TCP, TLS and authentication) may take before the
/// store reports itself unavailable, unless the URL says
/// `connect_timeout=SECONDS`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the store waits for the answer to one command or script,
/// unless the URL says `command_timeout=SECONDS`.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a write waits for its replicas (`WAIT`) when the URL asks
/// for some (`wait_replicas=N`), unless it says `wait_timeout=SECONDS`.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(2);

/// The most replicas `wait_replicas` may name.
const MAX_WAIT_REPLICAS: u32 = 64;

const SYNTAX: &str = "expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]\
[?prefix=NAME][&connect_timeout=SECONDS][&command_timeout=SECONDS]\
[&wait_replicas=N][&wait_timeout=SECONDS] \
(or rediss://… for TLS, which also takes &tlsrootcert=FILE)";

const URL_FORM: UrlForm<'static> = UrlForm {
    kind: "Redis",
    schemes: &["redis", "rediss"],
    syntax: SYNTAX,
    // `redis://TEXT@HOST` is refused, and TEXT may well be a password.
    bare_userinfo: BareUserinfo::Hide,
    fragment_note: "; certificate checks are never turned off",
};

const PARAMETERS: &str = "prefix, connect_timeout, command_timeout, wait_replicas, wait_timeout, \
                          tlsrootcert (rediss:// only)";

const KNOWN: &[&str] = &[
    "prefix",
    "connect_timeout",
    "command_timeout",
    "wait_replicas",
    "wait_timeout",
    "tlsrootcert",
];

/// Where the trusted root certificates of a `rediss://` store come from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedisRootCerts {
    /// The Mozilla roots bundled with cronslot (`webpki-roots`): the
    /// default.
    Bundled,
    /// The PEM file given by `tlsrootcert=FILE` (a private CA).
    File(PathBuf),
}

/// A parsed Redis store location. Its `Display` and `Debug` show the URL
/// with the password replaced by `***`; nothing in this crate shows the
/// password.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisLocation {
    tls: bool,
    user: Option<String>,
    password: Option<Secret>,
    host: String,
    port: u16,
    db: u32,
    prefix: String,
    root_certs: RedisRootCerts,
    connect_timeout: Duration,
    command_timeout: Duration,
    wait_replicas: u32,
    wait_timeout: Duration,
}

impl RedisLocation {
    /// Whether the connection uses TLS (`rediss://`).
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// The ACL user to log in as; `None` for the `default` user.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// Whether a password is known (from the URL or `REDISCLI_AUTH`).
    pub fn has_password(&self) -> bool {
        self.password.is_some()
    }

    pub(crate) fn password(&self) -> Option<&Secret> {
        self.password.as_ref()
    }

    /// The server's host name or IP address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The logical database (`SELECT`), 0 by default.
    pub fn db(&self) -> u32 {
        self.db
    }

    /// The prefix of every key the store writes.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Where the trusted roots come from (for `rediss://`).
    pub fn root_certs(&self) -> &RedisRootCerts {
        &self.root_certs
    }

    /// How long connecting may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// How long one command or script may take to answer.
    pub fn command_timeout(&self) -> Duration {
        self.command_timeout
    }

    /// How many replicas must have each write before the store counts it
    /// as done (`WAIT`); 0, the default, waits for none.
    pub fn wait_replicas(&self) -> u32 {
        self.wait_replicas
    }

    /// How long a write waits for [`wait_replicas`](Self::wait_replicas).
    pub fn wait_timeout(&self) -> Duration {
        self.wait_timeout
    }

    /// The same location under another key prefix (a validated one).
    pub fn with_prefix(mut self, prefix: &str) -> Result<RedisLocation, LocationError> {
        check_prefix(prefix).map_err(|message| LocationError {
            input: self.to_string(),
            message: format!("store {self}: {message}"),
        })?;
        self.prefix = prefix.to_string();
        Ok(self)
    }

    /// The same location with another connect timeout (at least a
    /// millisecond).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> RedisLocation {
        self.connect_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The same location with another command timeout (at least a
    /// millisecond).
    pub fn with_command_timeout(mut self, timeout: Duration) -> RedisLocation {
        self.command_timeout = timeout.max(Duration::from_millis(1));
        self
    }
}

impl fmt::Display for RedisLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.tls { "rediss://" } else { "redis://" })?;
        if let Some(user) = &self.user {
            write!(f, "{}", encode_component(user))?;
        }
        if self.password.is_some() {
            f.write_str(":***")?;
        }
        if self.user.is_some() || self.password.is_some() {
            f.write_str("@")?;
        }
        write!(
            f,
            "{}:{}/{}?prefix={}",
            host_in_url(&self.host),
            self.port,
            self.db,
            self.prefix
        )?;
        if self.wait_replicas > 0 {
            write!(f, "&wait_replicas={}", self.wait_replicas)?;
        }
        Ok(())
    }
}

impl fmt::Debug for RedisLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisLocation({self})")
    }
}

/// Parses a store URL: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]?QUERY`
/// (or `rediss://` for TLS), percent-decoding the user, password and host.
/// The query may hold `prefix` (the prefix of every key, default
/// `cronslot`: 1 to 64 ASCII letters, digits and `_ - . :`),
/// `connect_timeout` and `command_timeout` (whole seconds, default 5
/// each) and, for `rediss://`, `tlsrootcert` (a PEM file of the CA that
/// signed the server's certificate; the bundled Mozilla roots otherwise),
/// `wait_replicas` (how many replicas must have each write before it
/// counts as done, through `WAIT`: 0 to 64, default 0) and `wait_timeout`
/// (how long a write waits for them, whole seconds, default 2); any other
/// parameter is an error that names it.
///
/// `redis://:PASSWORD@HOST` logs in as the `default` user,
/// `redis://USER:PASSWORD@HOST` as an ACL user. Without a password in the
/// URL, `REDISCLI_AUTH` is used if set (as `redis-cli` does).
///
/// Errors never show the password: the location is quoted with it
/// replaced by `***`.
pub fn parse_redis_location(url: &str) -> Result<RedisLocation, LocationError> {
    parse_redis_location_with_env(url, |name| std::env::var(name).ok())
}

/// [`parse_redis_location`] with the environment read through `env`
/// (`REDISCLI_AUTH`), for callers and tests that must not depend on the
/// process's environment.
pub fn parse_redis_location_with_env(
    url: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<RedisLocation, LocationError> {
    let url = StoreUrl::parse(url, &URL_FORM)?;
    let shown = &url.shown;
    let error = |message: String| url.error(message);
    let parts = url.parts;
    let tls = url.scheme.eq_ignore_ascii_case("rediss");

    let (user, password) = match parts.userinfo {
        None => (None, None),
        Some(info) => {
            if !info.contains(':') {
                return Err(error(format!(
                    "store {shown:?} names a user without a password (Redis logs in with both; \
                     for the default user write redis://:PASSWORD@HOST): {SYNTAX}"
                )));
            }
            let (user, password) =
                parse_userinfo(info).map_err(|m| error(format!("store {shown:?}: {m}")))?;
            if password.as_ref().is_none_or(|p| p.expose().is_empty()) {
                return Err(error(format!(
                    "store {shown:?} has an empty password: give one, or leave out the \
                     user part: {SYNTAX}"
                )));
            }
            ((!user.is_empty()).then_some(user), password)
        }
    };
    let password = password.or_else(|| {
        env("REDISCLI_AUTH")
            .filter(|p| !p.is_empty())
            .map(Secret::new)
    });

    let (host, port) = parse_host_port(parts.hostport, DEFAULT_PORT)
        .and_then(|(host, port)| {
            if host.starts_with('/') {
                Err(
                    "names a Unix socket, which this store does not connect to; give a TCP host"
                        .to_string(),
                )
            } else {
                Ok((host, port))
            }
        })
        .map_err(|m| error(format!("store {shown:?}: {m}: {SYNTAX}")))?;

    let db = match parts.path {
        "" => 0,
        p => p
            .parse::<u32>()
            .ok()
            .filter(|_| p.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                error(format!(
                    "store {shown:?}: the database {p:?} is not a number (Redis databases are \
                     numbered from 0): {SYNTAX}"
                ))
            })?,
    };

    let mut location = RedisLocation {
        tls,
        user,
        password,
        host,
        port,
        db,
        prefix: DEFAULT_PREFIX.to_string(),
        root_certs: RedisRootCerts::Bundled,
        connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        command_timeout: DEFAULT_COMMAND_TIMEOUT,
        wait_replicas: 0,
        wait_timeout: DEFAULT_WAIT_TIMEOUT,
    };

    let mut params = QueryParams::new(parts.query, KNOWN);
    for param in &mut params {
        let (key, value) = param.map_err(|e| error(e.message(shown)))?;
        match key.as_str() {
            "prefix" => {
                check_prefix(&value).map_err(|m| error(format!("store {shown:?}: {m}")))?;
                location.prefix = value;
            }
            "wait_replicas" => {
                let n = value.parse::<u32>().ok().filter(|n| {
                    *n <= MAX_WAIT_REPLICAS && value.bytes().all(|b| b.is_ascii_digit())
                });
                let Some(n) = n else {
                    return Err(error(format!(
                        "store {shown:?}: wait_replicas {value:?} is not a whole number from 0 \
                         to {MAX_WAIT_REPLICAS}"
                    )));
                };
                location.wait_replicas = n;
            }
            "connect_timeout" | "command_timeout" | "wait_timeout" => {
                let timeout = parse_seconds(&key, &value)
                    .map_err(|m| error(format!("store {shown:?}: {m}")))?;
                match key.as_str() {
                    "connect_timeout" => location.connect_timeout = timeout,
                    "command_timeout" => location.command_timeout = timeout,
                    _ => location.wait_timeout = timeout,
                }
            }
            "tlsrootcert" => {
                if !tls {
                    return Err(error(format!(
                        "store {shown:?}: tlsrootcert is for TLS connections: write rediss:// \
                         to use TLS"
                    )));
                }
                if value.is_empty() {
                    return Err(error(format!(
                        "store {shown:?}: tlsrootcert is empty; give a PEM file"
                    )));
                }
                location.root_certs = RedisRootCerts::File(PathBuf::from(value));
            }
            _ => {}
        }
    }
    let password_hint = " (a password goes in the URL's user part, redis://:PASSWORD@HOST, or in \
                         REDISCLI_AUTH)";
    if let Some(message) = params.unknown_message(shown, password_hint, PARAMETERS) {
        return Err(error(message));
    }
    Ok(location)
}

/// A key prefix the store accepts: no braces (they would change the hash
/// tag that keeps one job's keys in one Redis Cluster slot), nothing a
/// person cannot type.
fn check_prefix(prefix: &str) -> Result<(), String> {
    let valid = !prefix.is_empty()
        && prefix.len() <= 64
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "prefix {prefix:?} is not a valid key prefix: use 1 to 64 ASCII letters, digits and \
             _ - . :"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::coord::location::redact_url;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_full_url_parses_and_shows_without_its_password() {
        let l = parse_redis_location_with_env(
            "rediss://al%40ice:s%3Acret@cache.example:6380/3?prefix=team.a&connect_timeout=3&command_timeout=7&tlsrootcert=%2Fetc%2Fca.pem",
            no_env,
        )
        .unwrap();
        assert!(l.tls());
        assert_eq!(l.user(), Some("al@ice"));
        assert_eq!(l.password().map(Secret::expose), Some("s:cret"));
        assert_eq!(l.host(), "cache.example");
        assert_eq!(l.port(), 6380);
        assert_eq!(l.db(), 3);
        assert_eq!(l.prefix(), "team.a");
        assert_eq!(l.connect_timeout(), Duration::from_secs(3));
        assert_eq!(l.command_timeout(), Duration::from_secs(7));
        assert_eq!(l.root_certs(), &RedisRootCerts::File("/etc/ca.pem".into()));
        assert_eq!(
            l.to_string(),
            "rediss://al%40ice:***@cache.example:6380/3?prefix=team.a"
        );
        assert_eq!(format!("{l:?}"), format!("RedisLocation({l})"));
        assert!(!format!("{l:?}").contains("cret"));
    }

    #[test]
    fn defaults_and_environment() {
        let env = |k: &str| (k == "REDISCLI_AUTH").then(|| "from-env".to_string());
        let l = parse_redis_location_with_env("redis://[::1]", env).unwrap();
        assert!(!l.tls());
        assert_eq!(l.user(), None);
        assert_eq!(l.host(), "::1");
        assert_eq!(l.port(), DEFAULT_PORT);
        assert_eq!(l.db(), 0);
        assert_eq!(l.prefix(), DEFAULT_PREFIX);
        assert_eq!(l.root_certs(), &RedisRootCerts::Bundled);
        assert_eq!(l.connect_timeout(), DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(l.command_timeout(), DEFAULT_COMMAND_TIMEOUT);
        assert_eq!(l.wait_replicas(), 0);
        assert_eq!(l.wait_timeout(), DEFAULT_WAIT_TIMEOUT);
        assert_eq!(l.password().map(Secret::expose), Some("from-env"));
        assert_eq!(l.to_string(), "redis://:***@[::1]:6379/0?prefix=cronslot");
        // The URL's password wins over REDISCLI_AUTH; the default user.
        let l = parse_redis_location_with_env("redis://:url@h/", env).unwrap();
        assert_eq!(l.password().map(Secret::expose), Some("url"));
        assert_eq!(l.user(), None);
        let l = parse_redis_location_with_env("REDIS://h:7000", no_env).unwrap();
        assert_eq!((l.host(), l.port(), l.has_password()), ("h", 7000, false));
        assert_eq!(l.to_string(), "redis://h:7000/0?prefix=cronslot");
    }

    #[test]
    fn replicas_to_wait_for() {
        let l = parse_redis_location_with_env("redis://h/1?wait_replicas=2&wait_timeout=5", no_env)
            .unwrap();
        assert_eq!(l.wait_replicas(), 2);
        assert_eq!(l.wait_timeout(), Duration::from_secs(5));
        assert_eq!(
            l.to_string(),
            "redis://h:6379/1?prefix=cronslot&wait_replicas=2"
        );
        let l = parse_redis_location_with_env("redis://h/1?wait_replicas=0", no_env).unwrap();
        assert_eq!(l.to_string(), "redis://h:6379/1?prefix=cronslot");
    }

    #[test]
    fn with_prefix_validates() {
        let l = parse_redis_location_with_env("redis://h", no_env).unwrap();
        assert_eq!(l.clone().with_prefix("p:1").unwrap().prefix(), "p:1");
        let e = l.with_prefix("{x}").unwrap_err();
        assert!(e.message.contains("not a valid key prefix"), "{e}");
    }

    #[test]
    fn errors_name_the_problem_and_never_the_password() {
        let secret = "Zx9-very-secret";
        let cases = [
            (format!("postgres://u:{secret}@h/db"), "not a Redis store"),
            (
                format!("redis://u:{secret}@h/0?bogus=1&other=2"),
                "unknown parameters \"bogus\", \"other\"",
            ),
            (
                format!("redis://u:{secret}@h/0?password={secret}"),
                "in the URL's user part",
            ),
            (format!("redis://u:{secret}@h:99999/0"), "port \"99999\""),
            (format!("redis://u:{secret}@h:0/0"), "port \"0\""),
            (format!("redis://u:{secret}@/0"), "names no host"),
            (
                format!("redis://u:{secret}@h/zero"),
                "the database \"zero\"",
            ),
            (format!("redis://u:{secret}@h/-1"), "the database \"-1\""),
            (format!("redis://u:{secret}@h/0/1"), "the database \"0/1\""),
            (
                format!("redis://u:{secret}@h/0?prefix=%7Bp%7D"),
                "not a valid key prefix",
            ),
            (
                format!("redis://u:{secret}@h/0?prefix="),
                "not a valid key prefix",
            ),
            (format!("redis://u:{secret}@h/0?prefix=a&prefix=b"), "twice"),
            (
                format!("redis://u:{secret}@h/0?connect_timeout=0"),
                "connect_timeout \"0\"",
            ),
            (
                format!("redis://u:{secret}@h/0?command_timeout=x"),
                "command_timeout \"x\"",
            ),
            (
                format!("redis://u:{secret}@h/0?wait_replicas=65"),
                "wait_replicas \"65\" is not a whole number from 0 to 64",
            ),
            (
                format!("redis://u:{secret}@h/0?wait_replicas=+1"),
                "wait_replicas \"+1\"",
            ),
            (
                format!("redis://u:{secret}@h/0?wait_timeout=0"),
                "wait_timeout \"0\"",
            ),
            (
                format!("redis://u:{secret}@h/0?tlsrootcert=/ca.pem"),
                "write rediss://",
            ),
            (
                format!("rediss://u:{secret}@h/0?tlsrootcert="),
                "tlsrootcert is empty",
            ),
            (format!("rediss://u:{secret}/x@h/0#insecure"), "fragment"),
            (
                format!("redis://u:{secret}%zz@h/0"),
                "password is not valid",
            ),
            (format!("redis:u:{secret}@h/0"), "lacks the //"),
            (format!("u:{secret}@h"), "not a Redis store"),
            (format!("redis://u:{secret}@h1,h2/0"), "several hosts"),
            (format!("redis://u:{secret}@[::1/0"), "closing ']'"),
            (
                format!("redis://u:{secret}@%2Frun%2Fredis.sock/0"),
                "Unix socket",
            ),
            (format!("redis://{secret}@h/0"), "a user without a password"),
            ("redis://u:@h/0".to_string(), "empty password"),
        ];
        for (url, expected) in cases {
            let e = parse_redis_location_with_env(&url, no_env).unwrap_err();
            assert!(e.message.contains(expected), "{url}: {e}");
            for shown in [&e.message, &e.input, &format!("{e:?}"), &e.to_string()] {
                assert!(
                    !shown.contains(secret),
                    "{url}: the password shows in {shown}"
                );
            }
        }
    }

    #[test]
    fn a_password_with_unencoded_slash_and_at_stays_a_password() {
        let l = parse_redis_location_with_env("redis://:a/b@c@host/2", no_env).unwrap();
        assert_eq!(l.password().map(Secret::expose), Some("a/b@c"));
        assert_eq!(l.host(), "host");
        assert_eq!(l.db(), 2);
        assert_eq!(
            redact_url("redis://:a/b@c@host/2", BareUserinfo::Hide),
            "redis://:***@host/2"
        );
        assert_eq!(
            redact_url("redis://u:p@h/0", BareUserinfo::Hide),
            "redis://u:***@h/0"
        );
        assert_eq!(
            redact_url("redis://secret@h/0", BareUserinfo::Hide),
            "redis://***@h/0"
        );
        assert_eq!(redact_url("redis://h/0", BareUserinfo::Hide), "redis://h/0");
    }
}
