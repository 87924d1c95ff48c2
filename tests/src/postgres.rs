//! A private PostgreSQL server for tests: `initdb` into a fresh temporary
//! directory, started with `pg_ctl` on a free loopback port, never the
//! system's service. Every PostgreSQL store test talks to one: a real
//! server, not a mock.
//!
//! The binaries are `CRONSLOT_PG_BIN` (a directory holding `initdb`,
//! `pg_ctl`, `postgres`, `psql`), else the highest
//! `/usr/lib/postgresql/*/bin`, else `PATH`. Missing binaries fail the
//! test with a message that says to run `scripts/setup`; they never skip
//! it. Run as root, the server runs as the `postgres` user (`runuser`),
//! because PostgreSQL refuses to run as root.
//!
//! Authentication: `trust` on 127.0.0.1 and the Unix socket, except for
//! members of the role `cronslot_password`, which must give their password
//! (scram-sha-256): [`Server::create_role`] makes either kind.
//!
//! The shared server ([`shared`]) is every test's at once: SQL that changes
//! the whole server (its configuration, the superuser or the password
//! group, the `postgres` database every test's schema lives in, other
//! tests' connections; see [`server_wide_sql`]), and a crash, stop or
//! restart of it, fail the test that asks, saying to start a server of its
//! own ([`Server::start`]), because one test's change would reach every
//! test running beside it. A role, a database or a schema of the test's
//! own is the test's.
//!
//! Each server runs under a small `sh` guard holding a pipe from this
//! process on its stdin: when the pipe closes (the [`Server`] is dropped,
//! or the test process ends in any way, even killed, though statics are
//! never dropped), the guard stops the server (`pg_ctl stop -m fast`) and
//! removes its directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::local_server::{free_port, make_certificates, tail};

/// The group role whose members must authenticate with a password.
pub const PASSWORD_GROUP: &str = "cronslot_password";

/// One private PostgreSQL server.
pub struct Server {
    /// The server's TCP port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    /// Run the server's programs as `postgres` (this process is root).
    as_postgres: bool,
    /// The test binary's shared server ([`shared`]), which no test may
    /// change server-wide.
    shared: bool,
    guard: Mutex<Option<Child>>,
}

static SHARED: OnceLock<Server> = OnceLock::new();

/// The server this test process shares among its tests, started on first
/// use. Tests that crash, stop or reconfigure a server start their own
/// ([`Server::start`]): this one refuses it.
pub fn shared() -> &'static Server {
    SHARED.get_or_init(|| {
        let mut server = Server::start();
        server.shared = true;
        server
    })
}

/// What in `sql` changes the whole server, if anything does: its
/// configuration (`ALTER SYSTEM`, `pg_reload_conf`), the superuser every
/// test connects as or the password group (`ALTER ROLE postgres`, `ALTER
/// ROLE ALL`, `ALTER ROLE cronslot_password`, `DROP ROLE …`), the
/// `postgres` database every test's schema lives in (`ALTER DATABASE
/// postgres`, `DROP DATABASE postgres`), or other tests' connections
/// (`pg_terminate_backend`: [`Server::terminate_application`] ends only a
/// test's own). Read by words, case aside (a guard against accidents, not
/// a parser).
pub fn server_wide_sql(sql: &str) -> Option<String> {
    let words: Vec<String> = sql
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_uppercase())
        .collect();
    let everyones = ["POSTGRES", "ALL", "CRONSLOT_PASSWORD"];
    words.iter().enumerate().find_map(|(i, w)| {
        let next = |k: usize| words.get(i + k).map(String::as_str).unwrap_or("");
        let wide = match w.as_str() {
            "PG_RELOAD_CONF" | "PG_TERMINATE_BACKEND" => return Some(w.to_lowercase()),
            "ALTER" | "DROP" => match next(1) {
                "SYSTEM" => w == "ALTER",
                "ROLE" | "USER" => everyones.contains(&next(2)),
                "DATABASE" => next(2) == "POSTGRES",
                _ => false,
            },
            _ => false,
        };
        wide.then(|| format!("{w} {} {}", next(1), next(2)).trim().to_string())
    })
}

/// A name no other call in this process returns: `prefix_PID_N` (a valid
/// database, role and schema name for a lowercase `prefix`).
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The directory of the server's binaries.
fn bin_dir() -> PathBuf {
    const HOW: &str = "run scripts/setup (it installs Debian's postgresql package), or set \
                       CRONSLOT_PG_BIN to the directory holding initdb and pg_ctl";
    if let Some(dir) = std::env::var_os("CRONSLOT_PG_BIN").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("initdb").is_file() && dir.join("pg_ctl").is_file(),
            "PostgreSQL server binaries not found: CRONSLOT_PG_BIN={} has no initdb and pg_ctl; {HOW}",
            dir.display()
        );
        return dir;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return dir;
            }
        }
    }
    panic!("PostgreSQL server binaries (initdb, pg_ctl) not found: {HOW}");
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn id_of(flag: &str) -> u32 {
    let out = Command::new("id")
        .args([flag, "postgres"])
        .output()
        .expect("running id");
    assert!(
        out.status.success(),
        "running as root, the test server needs the user `postgres` (PostgreSQL refuses to run \
         as root): run scripts/setup, which installs the postgresql package that creates it"
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a numeric id")
}

/// Waits for the pipe on its stdin to close, then runs its arguments (the
/// stop command) and removes `$CRONSLOT_PG_DIR`.
const GUARD: &str = r#"while read -r _line; do :; done
"$@" >/dev/null 2>&1
rm -rf "$CRONSLOT_PG_DIR""#;

impl Server {
    /// Starts a new server in a fresh temporary directory (about 1.5 s).
    pub fn start() -> Server {
        Server::start_inner(false)
    }

    /// Starts a new server that also accepts TLS, with a certificate for
    /// `localhost` (and not for `127.0.0.1`) signed by a test CA of its own
    /// ([`Server::ca_file`]); made with the `openssl` command.
    pub fn start_with_tls() -> Server {
        Server::start_inner(true)
    }

    /// The PEM file of the CA that signed a TLS server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    fn start_inner(tls: bool) -> Server {
        let bin = bin_dir();
        let as_postgres = is_root();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "cronslot-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the server's temporary directory");
        if as_postgres {
            std::os::unix::fs::chown(&dir, Some(id_of("-u")), Some(id_of("-g")))
                .expect("handing the server's directory to the postgres user");
        }
        let mut server = Server {
            port: 0,
            dir,
            bin,
            as_postgres,
            shared: false,
            guard: Mutex::new(None),
        };
        // The guard first, so that even a failed start is cleaned up.
        let stop = server.command("pg_ctl", &[]);
        let child = Command::new("sh")
            .arg("-c")
            .arg(GUARD)
            .arg("cronslot-pg-guard")
            .arg(stop.get_program())
            .args(stop.get_args())
            .args([
                "-D",
                &server.data().to_string_lossy(),
                "-m",
                "fast",
                "-w",
                "stop",
            ])
            .env("CRONSLOT_PG_DIR", &server.dir)
            .current_dir(&server.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the server's guard (sh)");
        *server.guard.lock().unwrap() = Some(child);

        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            ],
        );
        let conf = format!(
            "\n# cronslot tests\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = off\nfull_page_writes = off\n\
             max_connections = 300\nshared_buffers = 32MB\n\
             password_encryption = 'scram-sha-256'\n",
            server.dir.display()
        );
        append(&data.join("postgresql.conf"), &conf);
        if tls {
            server.make_certificates();
            append(
                &data.join("postgresql.conf"),
                &format!(
                    "ssl = on\nssl_cert_file = '{0}/server.crt'\nssl_key_file = '{0}/server.key'\n",
                    server.dir.display()
                ),
            );
        }
        std::fs::write(
            data.join("pg_hba.conf"),
            format!(
                "local all all trust\n\
                 host all +{PASSWORD_GROUP} 127.0.0.1/32 scram-sha-256\n\
                 host all all 127.0.0.1/32 trust\n"
            ),
        )
        .expect("writing pg_hba.conf");

        // A port can be taken between choosing and binding it: try others.
        let mut last = String::new();
        for _ in 0..5 {
            server.port = free_port();
            match server.try_pg_ctl_start() {
                Ok(()) => {
                    server.psql("postgres", &format!("CREATE ROLE {PASSWORD_GROUP} NOLOGIN"));
                    return server;
                }
                Err(e) => last = e,
            }
        }
        panic!("the test PostgreSQL server did not start: {last}");
    }

    /// A CA and a server certificate for `localhost`
    /// ([`make_certificates`]), which PostgreSQL reads as its own.
    fn make_certificates(&self) {
        make_certificates(&self.dir);
        // PostgreSQL refuses a key others can read, or one not its own.
        use std::os::unix::fs::PermissionsExt;
        for file in ["server.key", "server.crt"] {
            let path = self.dir.join(file);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .expect("chmod 600");
            if self.as_postgres {
                std::os::unix::fs::chown(&path, Some(id_of("-u")), Some(id_of("-g")))
                    .expect("handing the key to the postgres user");
            }
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("log")
    }

    /// The directory of the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// A command running the server's program `name`, as `postgres` when
    /// this process is root.
    fn command(&self, name: &str, args: &[&str]) -> Command {
        let program = self.bin.join(name);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        command.args(args).current_dir(&self.dir);
        without_libpq_environment(&mut command);
        command
    }

    fn try_run(&self, name: &str, args: &[&str]) -> Result<Output, String> {
        let output = self
            .command(name, args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running {name}: {e}"))?;
        if output.status.success() {
            Ok(output)
        } else {
            Err(format!(
                "{name} {}: {}\n{}{}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    fn run(&self, name: &str, args: &[&str]) -> Output {
        self.try_run(name, args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_pg_ctl_start(&self) -> Result<(), String> {
        let data = self.data();
        let log = self.log_path();
        let options = format!("-p {}", self.port);
        self.try_run(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-l",
                &log.to_string_lossy(),
                "-w",
                "-t",
                "60",
                "-o",
                &options,
                "start",
            ],
        )
        .map(|_| ())
        .map_err(|e| format!("{e}\nserver log:\n{}", self.log_tail()))
    }

    /// Fails the test that asks for `what` on the shared server.
    fn refuse_on_shared(&self, what: &str) {
        assert!(
            !self.shared,
            "{what} changes the whole PostgreSQL server, and this is the test binary's shared \
             one: every test running beside this one would see it; start a server of the test's \
             own (cronslot_tests::postgres::Server::start)"
        );
    }

    fn pg_ctl_stop(&self, mode: &str) {
        self.refuse_on_shared(&format!("pg_ctl stop -m {mode}"));
        let data = self.data();
        self.run(
            "pg_ctl",
            &["-D", &data.to_string_lossy(), "-m", mode, "-w", "stop"],
        );
    }

    /// Crashes the server: `pg_ctl stop -m immediate` (no checkpoint;
    /// the next start recovers from the write-ahead log).
    pub fn crash(&self) {
        self.pg_ctl_stop("immediate");
    }

    /// Stops the server cleanly (`-m fast`).
    pub fn stop(&self) {
        self.pg_ctl_stop("fast");
    }

    /// Starts the server again on the same port and data directory.
    pub fn restart(&self) {
        self.refuse_on_shared("a restart");
        self.try_pg_ctl_start().unwrap_or_else(|e| panic!("{e}"));
    }

    /// `postgres://postgres@127.0.0.1:PORT/DB?sslmode=disable`: the
    /// superuser, trusted.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// The URL of `user` (with `password` if given), without TLS.
    pub fn url_as(&self, user: &str, password: Option<&str>, db: &str) -> String {
        let password = password.map(|p| format!(":{p}")).unwrap_or_default();
        format!(
            "postgres://{user}{password}@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// Runs `sql` in database `db` as the superuser with `psql`; the rows,
    /// unaligned, `|` between columns, one line each. On the shared
    /// server, SQL that changes the whole server ([`server_wide_sql`])
    /// fails the test instead.
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String, String> {
        if let Some(what) = server_wide_sql(sql) {
            self.refuse_on_shared(&what);
        }
        self.run_psql(db, sql)
    }

    /// [`Server::try_psql`] without the guard, for the harness's own
    /// statements.
    fn run_psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let output = self
            .psql_command(db, sql)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running psql: {e}"))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        } else {
            Err(format!(
                "psql -c {sql:?}: {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }

    /// [`Server::try_psql`], failing the test on an error.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.try_psql(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Creates a new, empty database named `unique(prefix)` and returns
    /// its name.
    pub fn fresh_database(&self, prefix: &str) -> String {
        let name = unique(prefix);
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        name
    }

    /// Creates a login role. With a password it is a member of
    /// [`PASSWORD_GROUP`] and must give it (scram-sha-256); without, it is
    /// trusted. It may connect to every database but owns none.
    pub fn create_role(&self, name: &str, password: Option<&str>) {
        let sql = match password {
            Some(p) => format!(
                "CREATE ROLE {name} LOGIN PASSWORD '{}' IN ROLE {PASSWORD_GROUP}",
                p.replace('\'', "''")
            ),
            None => format!("CREATE ROLE {name} LOGIN"),
        };
        self.psql("postgres", &sql);
    }

    /// Ends every client connection to database `db` (other than the
    /// `psql` doing it) with `pg_terminate_backend`; returns how many. Not
    /// of the shared server's `postgres` database, where every test's
    /// schema lives.
    pub fn terminate_connections(&self, db: &str) -> u32 {
        if db == "postgres" {
            self.refuse_on_shared("ending every connection to the database postgres");
        }
        let sql = format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() \
             AND datname = '{db}'"
        );
        self.run_psql("postgres", &sql)
            .unwrap_or_else(|e| panic!("{e}"))
            .parse()
            .unwrap_or(0)
    }

    /// Ends every client connection whose `application_name` is `name`
    /// with `pg_terminate_backend`; returns how many.
    pub fn terminate_application(&self, name: &str) -> u32 {
        let sql = format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() \
             AND application_name = '{name}'"
        );
        self.run_psql("postgres", &sql)
            .unwrap_or_else(|e| panic!("{e}"))
            .parse()
            .unwrap_or(0)
    }

    /// Starts `psql` running `sql` in database `db` in the background (for
    /// holding a lock while a test does something else); wait for it with
    /// [`Child::wait`].
    pub fn spawn_psql(&self, db: &str, sql: &str) -> Child {
        if let Some(what) = server_wide_sql(sql) {
            self.refuse_on_shared(&what);
        }
        self.psql_command(db, sql)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting psql")
    }

    /// `psql` running `sql` in database `db` as the superuser, rows
    /// unaligned, stopping at the first error.
    fn psql_command(&self, db: &str, sql: &str) -> Command {
        let mut command = Command::new(self.psql_program());
        without_libpq_environment(&mut command);
        command
            .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "postgres", "-d", db, "-c", sql]);
        command
    }

    fn psql_program(&self) -> PathBuf {
        let psql = self.bin.join("psql");
        if psql.is_file() {
            psql
        } else {
            PathBuf::from("psql")
        }
    }

    /// The end of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&self.log_path())
    }

    /// Waits until the server accepts connections again (after a
    /// restart), at most `limit`.
    pub fn wait_ready(&self, limit: Duration) {
        let start = Instant::now();
        while self.try_psql("postgres", "SELECT 1").is_err() {
            assert!(
                start.elapsed() < limit,
                "the test PostgreSQL server is not ready after {limit:?}:\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut guard = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut child) = guard.take() {
            // Closing stdin makes the guard stop the server and remove the
            // directory.
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

/// Leaves out of `command`'s environment the variables libpq reads
/// (a developer's PGPASSWORD or PGHOST must not change a test).
fn without_libpq_environment(command: &mut Command) {
    for var in [
        "PGPASSWORD",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGOPTIONS",
    ] {
        command.env_remove(var);
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
    f.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_that_changes_the_whole_server_is_known() {
        for (sql, wide) in [
            ("ALTER SYSTEM SET fsync = on", Some("ALTER SYSTEM SET")),
            ("SELECT pg_reload_conf()", Some("pg_reload_conf")),
            (
                "alter role postgres password 'x'",
                Some("ALTER ROLE POSTGRES"),
            ),
            (
                "ALTER USER ALL SET work_mem = '1MB'",
                Some("ALTER USER ALL"),
            ),
            (
                "DROP ROLE cronslot_password",
                Some("DROP ROLE CRONSLOT_PASSWORD"),
            ),
            (
                "ALTER DATABASE postgres SET statement_timeout = 1",
                Some("ALTER DATABASE POSTGRES"),
            ),
            (
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity",
                Some("pg_terminate_backend"),
            ),
            ("ALTER ROLE pw_1_2 PASSWORD 'x'", None),
            ("ALTER ROLE postgres_like LOGIN", None),
            ("CREATE SCHEMA t; GRANT USAGE ON SCHEMA t TO r", None),
            ("DROP TABLE s.job_state", None),
            ("ALTER DATABASE perm_1_2 OWNER TO r", None),
        ] {
            assert_eq!(server_wide_sql(sql).as_deref(), wide, "{sql}");
        }
    }

    #[test]
    #[should_panic(expected = "start a server of the test's own")]
    fn the_shared_server_refuses_server_wide_sql() {
        shared().psql("postgres", "ALTER SYSTEM SET fsync = on");
    }

    #[test]
    #[should_panic(expected = "start a server of the test's own")]
    fn the_shared_server_refuses_a_crash() {
        shared().crash();
    }
}
