//! The store's location: a libpq-style URL, parsed once, shown only with
//! its password replaced by `***`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use cronslot_core::coord::LocationError;
use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};

/// The schema used when the URL names none.
pub const DEFAULT_SCHEMA: &str = "cronslot";

/// The port used when the URL names none.
pub const DEFAULT_PORT: u16 = 5432;

/// How long connecting (TCP, TLS and authentication) may take before the
/// store reports itself unavailable, unless the URL says
/// `connect_timeout=SECONDS`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one statement may run (the server cancels it after that, and
/// the client gives up shortly after), unless the URL says
/// `statement_timeout=SECONDS`.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

const SYNTAX: &str = "expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE\
[?sslmode=disable|prefer|require|verify-ca|verify-full][&sslrootcert=FILE][&schema=NAME]\
[&connect_timeout=SECONDS][&statement_timeout=SECONDS][&application_name=NAME] \
(or postgresql://…)";

const PARAMETERS: &str =
    "sslmode, sslrootcert, schema, connect_timeout, statement_timeout, application_name";

/// How the connection is encrypted and what is checked of the server's
/// certificate, as libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SslMode {
    /// Plain TCP, never TLS.
    Disable,
    /// TLS when the server offers it, plain TCP otherwise; the certificate
    /// is not checked (libpq's default).
    Prefer,
    /// TLS or no connection. The certificate is checked against the root
    /// certificates only when `sslrootcert` (or `PGSSLROOTCERT`) names
    /// some, as libpq does; otherwise it is not checked.
    Require,
    /// TLS, with a certificate that chains to a trusted root; the host name
    /// is not compared.
    VerifyCa,
    /// TLS, with a certificate that chains to a trusted root and names the
    /// host.
    VerifyFull,
}

impl SslMode {
    /// The name in a URL (`verify-full`).
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(s: &str) -> Option<SslMode> {
        Some(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }
}

/// Where the trusted root certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RootCerts {
    /// The Mozilla roots bundled with cronslot (`webpki-roots`): the
    /// default, and `sslrootcert=system`.
    Bundled,
    /// The PEM file given by `sslrootcert=FILE` or `PGSSLROOTCERT`.
    File(PathBuf),
}

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PgHost {
    /// A host name or an IP address, over TCP.
    Tcp(String),
    /// A directory holding the server's Unix socket (a host that starts
    /// with `/`, percent-encoded in the URL: `%2Fvar%2Frun%2Fpostgresql`).
    Socket(PathBuf),
}

/// A parsed PostgreSQL store location. Its `Display` and `Debug` show the
/// URL with the password replaced by `***`; nothing in this crate shows
/// the password.
#[derive(Clone, PartialEq, Eq)]
pub struct PgLocation {
    user: String,
    password: Option<Secret>,
    host: PgHost,
    port: u16,
    dbname: String,
    sslmode: SslMode,
    sslmode_given: bool,
    root_certs: RootCerts,
    /// Whether the roots were named (`sslrootcert` or `PGSSLROOTCERT`),
    /// which turns `require` into checking the chain, as in libpq.
    root_certs_given: bool,
    schema: String,
    connect_timeout: Duration,
    statement_timeout: Duration,
    application_name: String,
}

/// A password: compared, never shown.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// What a user name, database or host may contain unencoded in the shown
/// URL.
const COMPONENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b':')
    .add(b'?')
    .add(b'@')
    .add(b'[')
    .add(b']')
    .add(b'&')
    .add(b'=');

impl PgLocation {
    /// The role to log in as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Whether a password is known (from the URL or `PGPASSWORD`).
    pub fn has_password(&self) -> bool {
        self.password.is_some()
    }

    pub(crate) fn password(&self) -> Option<&Secret> {
        self.password.as_ref()
    }

    /// The server.
    pub fn host(&self) -> &PgHost {
        &self.host
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The database.
    pub fn dbname(&self) -> &str {
        &self.dbname
    }

    /// The PostgreSQL schema holding the store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The TLS mode.
    pub fn sslmode(&self) -> SslMode {
        self.sslmode
    }

    /// Where trusted roots come from.
    pub fn root_certs(&self) -> &RootCerts {
        &self.root_certs
    }

    pub(crate) fn root_certs_given(&self) -> bool {
        self.root_certs_given
    }

    /// How long connecting may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// How long one statement may run.
    pub fn statement_timeout(&self) -> Duration {
        self.statement_timeout
    }

    /// The `application_name` the server shows for the store's
    /// connections (`pg_stat_activity`); `cronslot` by default.
    pub fn application_name(&self) -> &str {
        &self.application_name
    }

    /// The same location in another schema (a validated name).
    pub fn with_schema(mut self, schema: &str) -> Result<PgLocation, LocationError> {
        check_schema(schema).map_err(|message| LocationError {
            input: self.to_string(),
            message: format!("store {self}: {message}"),
        })?;
        self.schema = schema.to_string();
        Ok(self)
    }

    /// The same location with another connect timeout (at least a
    /// millisecond).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> PgLocation {
        self.connect_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The same location with another statement timeout (at least a
    /// millisecond).
    pub fn with_statement_timeout(mut self, timeout: Duration) -> PgLocation {
        self.statement_timeout = timeout.max(Duration::from_millis(1));
        self
    }
}

impl fmt::Display for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "postgres://{}",
            utf8_percent_encode(&self.user, COMPONENT)
        )?;
        if self.password.is_some() {
            f.write_str(":***")?;
        }
        f.write_str("@")?;
        match &self.host {
            PgHost::Tcp(h) if h.contains(':') => write!(f, "[{h}]")?,
            PgHost::Tcp(h) => write!(f, "{}", utf8_percent_encode(h, COMPONENT))?,
            PgHost::Socket(p) => write!(
                f,
                "{}",
                utf8_percent_encode(&p.to_string_lossy(), COMPONENT)
            )?,
        }
        write!(
            f,
            ":{}/{}",
            self.port,
            utf8_percent_encode(&self.dbname, COMPONENT)
        )?;
        let mut sep = '?';
        if self.sslmode_given {
            write!(f, "{sep}sslmode={}", self.sslmode.as_str())?;
            sep = '&';
        }
        write!(f, "{sep}schema={}", self.schema)
    }
}

impl fmt::Debug for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgLocation({self})")
    }
}

/// Parses a store URL in libpq's form:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE?QUERY` (or
/// `postgresql://`), percent-decoding each part. The query may hold
/// `sslmode` (`disable`, `prefer` (the default), `require`, `verify-ca`,
/// `verify-full`), `sslrootcert` (a PEM file, or `system` for the bundled
/// roots), `schema` (the PostgreSQL schema of the store's tables, default
/// `cronslot`; lowercase letters, digits and `_`), `connect_timeout` and
/// `statement_timeout` (whole seconds, default 5 each) and
/// `application_name`; any other parameter is an error that names it.
///
/// Without a password in the URL, `PGPASSWORD` is used if set; without
/// `sslrootcert`, `PGSSLROOTCERT`. A URL without a database names the
/// user's database, as libpq does.
///
/// Errors never show the password: the location is quoted with it
/// replaced by `***`.
pub fn parse_postgres_location(url: &str) -> Result<PgLocation, LocationError> {
    parse_postgres_location_with_env(url, |name| std::env::var(name).ok())
}

/// [`parse_postgres_location`] with the environment read through `env`
/// (`PGPASSWORD`, `PGSSLROOTCERT`), for callers and tests that must not
/// depend on the process's environment.
pub fn parse_postgres_location_with_env(
    url: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<PgLocation, LocationError> {
    let shown = redact_url(url);
    let error = |message: String| LocationError {
        input: shown.clone(),
        message,
    };
    let trimmed = url.trim();
    let Some((scheme, rest)) = trimmed.split_once(':') else {
        return Err(error(format!("store {shown:?} has no scheme: {SYNTAX}")));
    };
    if !(scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")) {
        return Err(error(format!(
            "store {shown:?} is not a PostgreSQL store (scheme {scheme:?}): {SYNTAX}"
        )));
    }
    let Some(rest) = rest.strip_prefix("//") else {
        return Err(error(format!(
            "store {shown:?} lacks the // after {scheme}: {SYNTAX}"
        )));
    };
    if rest.contains('#') {
        return Err(error(format!(
            "store {shown:?} has a #fragment, which means nothing here (a # in a password is written %23): {SYNTAX}"
        )));
    }
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    // The user information ends at the last '@' before the query, so that a
    // password holding an unencoded '/' or '@' is still taken as a
    // password, never quoted as a host or a database in an error.
    let (userinfo, hostpath) = match before_query.rfind('@') {
        Some(at) => (Some(&before_query[..at]), &before_query[at + 1..]),
        None => (None, before_query),
    };
    let (hostport, path) = match hostpath.find('/') {
        Some(slash) => (&hostpath[..slash], &hostpath[slash + 1..]),
        None => (hostpath, ""),
    };

    let (user, password) = match userinfo {
        None => (String::new(), None),
        Some(info) => {
            let (user, password) = match info.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (info, None),
            };
            let user = decode(user).ok_or_else(|| {
                error(format!(
                    "store {shown:?}: the user name is not valid percent-encoded UTF-8"
                ))
            })?;
            let password = match password {
                None => None,
                Some(p) => Some(Secret(decode(p).ok_or_else(|| {
                    error(format!(
                        "store {shown:?}: the password is not valid percent-encoded UTF-8 \
                         (write %25 for a % in it)"
                    ))
                })?)),
            };
            (user, password)
        }
    };
    if user.is_empty() {
        return Err(error(format!("store {shown:?} names no user: {SYNTAX}")));
    }
    let password = password.or_else(|| env("PGPASSWORD").filter(|p| !p.is_empty()).map(Secret));

    let (host, port) =
        parse_hostport(hostport).map_err(|m| error(format!("store {shown:?}: {m}: {SYNTAX}")))?;

    let dbname = decode(path).ok_or_else(|| {
        error(format!(
            "store {shown:?}: the database name is not valid percent-encoded UTF-8"
        ))
    })?;
    if dbname.contains('/') {
        return Err(error(format!(
            "store {shown:?}: the database name {dbname:?} contains '/': {SYNTAX}"
        )));
    }
    let dbname = if dbname.is_empty() {
        user.clone()
    } else {
        dbname
    };

    let mut location = PgLocation {
        user,
        password,
        host,
        port,
        dbname,
        sslmode: SslMode::Prefer,
        sslmode_given: false,
        root_certs: RootCerts::Bundled,
        root_certs_given: false,
        schema: DEFAULT_SCHEMA.to_string(),
        connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
        application_name: "cronslot".to_string(),
    };

    let mut seen: Vec<String> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key).ok_or_else(|| {
            error(format!(
                "store {shown:?}: a parameter name is not valid percent-encoded UTF-8"
            ))
        })?;
        let known = matches!(
            key.as_str(),
            "sslmode"
                | "sslrootcert"
                | "schema"
                | "connect_timeout"
                | "statement_timeout"
                | "application_name"
        );
        if !known {
            unknown.push(key);
            continue;
        }
        if seen.contains(&key) {
            return Err(error(format!(
                "store {shown:?} gives parameter {key:?} twice"
            )));
        }
        let value = decode(value).ok_or_else(|| {
            error(format!(
                "store {shown:?}: the value of {key} is not valid percent-encoded UTF-8"
            ))
        })?;
        match key.as_str() {
            "sslmode" => {
                location.sslmode = SslMode::parse(&value).ok_or_else(|| {
                    error(format!(
                        "store {shown:?}: sslmode {value:?} is not one of disable, prefer, require, verify-ca, verify-full"
                    ))
                })?;
                location.sslmode_given = true;
            }
            "sslrootcert" => {
                if value.is_empty() {
                    return Err(error(format!(
                        "store {shown:?}: sslrootcert is empty; give a PEM file or \"system\""
                    )));
                }
                location.root_certs = if value == "system" {
                    RootCerts::Bundled
                } else {
                    RootCerts::File(PathBuf::from(value))
                };
                location.root_certs_given = true;
            }
            "schema" => {
                check_schema(&value).map_err(|m| error(format!("store {shown:?}: {m}")))?;
                location.schema = value;
            }
            "connect_timeout" | "statement_timeout" => {
                let secs = value
                    .parse::<u64>()
                    .ok()
                    .filter(|s| (1..=86_400).contains(s));
                let Some(secs) = secs else {
                    return Err(error(format!(
                        "store {shown:?}: {key} {value:?} is not a whole number of seconds from 1 to 86400"
                    )));
                };
                if key == "connect_timeout" {
                    location.connect_timeout = Duration::from_secs(secs);
                } else {
                    location.statement_timeout = Duration::from_secs(secs);
                }
            }
            "application_name" => {
                if value.is_empty() || value.len() > 63 || !value.is_ascii() {
                    return Err(error(format!(
                        "store {shown:?}: application_name must be 1 to 63 ASCII characters"
                    )));
                }
                location.application_name = value;
            }
            _ => {}
        }
        seen.push(key);
    }
    if !unknown.is_empty() {
        let names = unknown
            .iter()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let hint = if unknown.iter().any(|k| k == "password") {
            " (a password goes in the URL's user part, postgres://USER:PASSWORD@HOST/DB, or in PGPASSWORD)"
        } else {
            ""
        };
        let plural = if unknown.len() == 1 { "" } else { "s" };
        return Err(error(format!(
            "store {shown:?} has unknown parameter{plural} {names}{hint}; known are {PARAMETERS}"
        )));
    }
    if !location.root_certs_given {
        if let Some(file) = env("PGSSLROOTCERT").filter(|f| !f.is_empty()) {
            location.root_certs = if file == "system" {
                RootCerts::Bundled
            } else {
                RootCerts::File(PathBuf::from(file))
            };
            location.root_certs_given = true;
        }
    }
    if matches!(location.host, PgHost::Socket(_)) && location.sslmode != SslMode::Disable {
        // libpq never uses TLS on a Unix socket.
        if matches!(
            location.sslmode,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        ) {
            return Err(error(format!(
                "store {shown:?}: sslmode={} over a Unix socket: TLS is only used over TCP",
                location.sslmode.as_str()
            )));
        }
        location.sslmode = SslMode::Disable;
    }
    Ok(location)
}

fn parse_hostport(hostport: &str) -> Result<(PgHost, u16), String> {
    if hostport.is_empty() {
        return Err("names no host".to_string());
    }
    if hostport.contains(',') {
        return Err("names several hosts; the store connects to one".to_string());
    }
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return Err("an IPv6 host lacks its closing ']'".to_string());
        };
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| "unexpected text after the IPv6 host".to_string())?,
            ),
        };
        (PgHost::Tcp(v6.to_string()), port)
    } else {
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        };
        let host = decode(host)
            .ok_or_else(|| "the host is not valid percent-encoded UTF-8".to_string())?;
        if host.is_empty() {
            return Err("names no host".to_string());
        }
        let host = if host.starts_with('/') {
            PgHost::Socket(PathBuf::from(host))
        } else {
            PgHost::Tcp(host)
        };
        (host, port)
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("port {p:?} is not a number from 1 to 65535"))?,
    };
    Ok((host, port))
}

/// Percent-decodes `s`; `None` for a `%` not followed by two hex digits
/// or bytes that are not UTF-8.
fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
        {
            return None;
        }
    }
    percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// A schema name the store accepts: a lowercase identifier PostgreSQL
/// would not fold or reserve.
fn check_schema(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid_start = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let valid_rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid_start || !valid_rest || name.len() > 63 {
        return Err(format!(
            "schema {name:?} is not a valid name: use 1 to 63 lowercase letters, digits and _, \
             starting with a letter or _"
        ));
    }
    if name.starts_with("pg_") || name == "information_schema" {
        return Err(format!(
            "schema {name:?} is reserved by PostgreSQL; choose another name"
        ));
    }
    Ok(())
}

/// `url` with any password replaced by `***`, whatever else is wrong with
/// it: the text between the first ':' after `//` (or, without `//`, the
/// first ':') and the last '@', and any
/// `password=` parameter's value.
pub(crate) fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    // Without `//` (a mistyped URL), from the start: better to hide too
    // much than a password.
    let start = out.find("://").map_or(0, |i| i + 3);
    if let Some(at) = out.rfind('@').filter(|at| *at >= start) {
        if let Some(colon) = out[start..at].find(':').map(|c| start + c) {
            out.replace_range(colon + 1..at, "***");
        }
    }
    // A password given as a parameter (which is refused) is hidden too.
    let mut from = 0;
    while let Some(found) = out[from..].find("password=") {
        let begin = from + found + "password=".len();
        let end = out[begin..].find('&').map_or(out.len(), |e| begin + e);
        out.replace_range(begin..end, "***");
        from = begin + 3;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_full_url_parses_and_shows_without_its_password() {
        let l = parse_postgres_location_with_env(
            "postgresql://al%40ice:s%3Acret@db.example:6543/my%20db?sslmode=verify-full&schema=team_a&connect_timeout=3",
            no_env,
        )
        .unwrap();
        assert_eq!(l.user(), "al@ice");
        assert_eq!(l.password().map(Secret::expose), Some("s:cret"));
        assert_eq!(l.host(), &PgHost::Tcp("db.example".into()));
        assert_eq!(l.port(), 6543);
        assert_eq!(l.dbname(), "my db");
        assert_eq!(l.schema(), "team_a");
        assert_eq!(l.sslmode(), SslMode::VerifyFull);
        assert_eq!(l.connect_timeout(), Duration::from_secs(3));
        assert_eq!(
            l.to_string(),
            "postgres://al%40ice:***@db.example:6543/my%20db?sslmode=verify-full&schema=team_a"
        );
        assert_eq!(format!("{l:?}"), format!("PgLocation({l})"));
    }

    #[test]
    fn defaults_and_environment() {
        let env = |k: &str| match k {
            "PGPASSWORD" => Some("from-env".to_string()),
            "PGSSLROOTCERT" => Some("/etc/ca.pem".to_string()),
            _ => None,
        };
        let l = parse_postgres_location_with_env("postgres://bob@[::1]", env).unwrap();
        assert_eq!(l.host(), &PgHost::Tcp("::1".into()));
        assert_eq!(l.port(), DEFAULT_PORT);
        assert_eq!(l.dbname(), "bob");
        assert_eq!(l.schema(), DEFAULT_SCHEMA);
        assert_eq!(l.sslmode(), SslMode::Prefer);
        assert_eq!(l.password().map(Secret::expose), Some("from-env"));
        assert_eq!(l.root_certs(), &RootCerts::File("/etc/ca.pem".into()));
        assert_eq!(
            l.to_string(),
            "postgres://bob:***@[::1]:5432/bob?schema=cronslot"
        );
        // The URL's password wins over PGPASSWORD.
        let l = parse_postgres_location_with_env("postgres://bob:url@h/db", env).unwrap();
        assert_eq!(l.password().map(Secret::expose), Some("url"));
    }

    #[test]
    fn a_unix_socket_host() {
        let l =
            parse_postgres_location_with_env("postgres://u@%2Frun%2Fpg:5433/d", no_env).unwrap();
        assert_eq!(l.host(), &PgHost::Socket("/run/pg".into()));
        assert_eq!(l.sslmode(), SslMode::Disable);
    }

    #[test]
    fn errors_name_the_problem_and_never_the_password() {
        let secret = "Zx9-very-secret";
        let cases = [
            (
                format!("sqlite://u:{secret}@h/db"),
                "not a PostgreSQL store",
            ),
            (
                format!("postgres://u:{secret}@h/db?bogus=1&other=2"),
                "unknown parameters \"bogus\", \"other\"",
            ),
            (
                format!("postgres://u:{secret}@h/db?password={secret}"),
                "in the URL's user part",
            ),
            (
                format!("postgres://u:{secret}@h:99999/db"),
                "port \"99999\"",
            ),
            (format!("postgres://u:{secret}@/db"), "names no host"),
            (
                format!("postgres://u:{secret}@h/db?schema=Bad-Name"),
                "not a valid name",
            ),
            (
                format!("postgres://u:{secret}@h/db?schema=pg_x"),
                "reserved",
            ),
            (
                format!("postgres://u:{secret}@h/db?sslmode=always"),
                "sslmode \"always\"",
            ),
            (
                format!("postgres://u:{secret}@h/db?schema=a&schema=b"),
                "twice",
            ),
            (
                format!("postgres://u:{secret}@h/db?connect_timeout=0"),
                "connect_timeout",
            ),
            (format!("postgres://u:{secret}/x@h/db#frag"), "fragment"),
            (format!("postgres://:{secret}@h/db"), "names no user"),
            (
                format!("postgres://u:{secret}%zz@h/db"),
                "password is not valid",
            ),
            (format!("postgres:u:{secret}@h/db"), "lacks the //"),
            (format!("u:{secret}@h"), "not a PostgreSQL store"),
            (format!("postgres://u:{secret}@h1,h2/db"), "several hosts"),
        ];
        for (url, expected) in cases {
            let e = parse_postgres_location_with_env(&url, no_env).unwrap_err();
            assert!(e.message.contains(expected), "{url}: {e}");
            for shown in [&e.message, &e.input, &format!("{e:?}")] {
                assert!(
                    !shown.contains(secret),
                    "{url}: the password shows in {shown}"
                );
            }
        }
    }

    #[test]
    fn a_password_with_unencoded_slash_and_at_stays_a_password() {
        let l = parse_postgres_location_with_env("postgres://u:a/b@c@host/db", no_env).unwrap();
        assert_eq!(l.password().map(Secret::expose), Some("a/b@c"));
        assert_eq!(l.host(), &PgHost::Tcp("host".into()));
        assert_eq!(
            redact_url("postgres://u:a/b@c@host/db"),
            "postgres://u:***@host/db"
        );
    }
}
