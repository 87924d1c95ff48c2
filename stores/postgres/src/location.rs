//! The store's location: a libpq-style URL, parsed once, shown only with
//! its password replaced by `***`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use cronslot_core::coord::LocationError;
use cronslot_core::coord::location::{
    BareUserinfo, QueryParams, Secret, StoreUrl, UrlForm, decode_component, encode_component,
    host_in_url, parse_host_port, parse_seconds, parse_userinfo,
};

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

const URL_FORM: UrlForm<'static> = UrlForm {
    kind: "PostgreSQL",
    schemes: &["postgres", "postgresql"],
    syntax: SYNTAX,
    // `postgres://USER@HOST`: a user name, not a secret.
    bare_userinfo: BareUserinfo::User,
    fragment_note: "",
};

const PARAMETERS: &str =
    "sslmode, sslrootcert, schema, connect_timeout, statement_timeout, application_name";

const KNOWN: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "schema",
    "connect_timeout",
    "statement_timeout",
    "application_name",
];

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
        write!(f, "postgres://{}", encode_component(&self.user))?;
        if self.password.is_some() {
            f.write_str(":***")?;
        }
        f.write_str("@")?;
        match &self.host {
            PgHost::Tcp(h) => write!(f, "{}", host_in_url(h))?,
            PgHost::Socket(p) => write!(f, "{}", encode_component(&p.to_string_lossy()))?,
        }
        write!(f, ":{}/{}", self.port, encode_component(&self.dbname))?;
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
    let url = StoreUrl::parse(url, &URL_FORM)?;
    let shown = &url.shown;
    let error = |message: String| url.error(message);
    let parts = url.parts;

    let (user, password) = match parts.userinfo {
        None => (String::new(), None),
        Some(info) => parse_userinfo(info).map_err(|m| error(format!("store {shown:?}: {m}")))?,
    };
    if user.is_empty() {
        return Err(error(format!("store {shown:?} names no user: {SYNTAX}")));
    }
    let password =
        password.or_else(|| env("PGPASSWORD").filter(|p| !p.is_empty()).map(Secret::new));

    let (host, port) = parse_host_port(parts.hostport, DEFAULT_PORT)
        .map_err(|m| error(format!("store {shown:?}: {m}: {SYNTAX}")))?;
    // libpq's rule: a host that starts with '/' is the directory of a Unix
    // socket.
    let host = if host.starts_with('/') {
        PgHost::Socket(PathBuf::from(host))
    } else {
        PgHost::Tcp(host)
    };

    let dbname = decode_component(parts.path).map_err(|_| {
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

    let mut params = QueryParams::new(parts.query, KNOWN);
    for param in &mut params {
        let (key, value) = param.map_err(|e| error(e.message(shown)))?;
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
                let timeout = parse_seconds(&key, &value)
                    .map_err(|m| error(format!("store {shown:?}: {m}")))?;
                if key == "connect_timeout" {
                    location.connect_timeout = timeout;
                } else {
                    location.statement_timeout = timeout;
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
    }
    let password_hint = " (a password goes in the URL's user part, postgres://USER:PASSWORD@HOST/DB, or in PGPASSWORD)";
    if let Some(message) = params.unknown_message(shown, password_hint, PARAMETERS) {
        return Err(error(message));
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

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::coord::location::redact_url;

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
            (format!("postgres://u:{secret}@[]/db"), "names no host"),
            (format!("postgres://u:{secret}@[::1/db"), "closing ']'"),
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
            redact_url("postgres://u:a/b@c@host/db", BareUserinfo::User),
            "postgres://u:***@host/db"
        );
    }
}
