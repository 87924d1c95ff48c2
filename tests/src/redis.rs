//! A private Redis server for tests: `redis-server` on a free loopback
//! port with a fresh temporary directory, AOF on with `appendfsync
//! always` and no RDB snapshots, never the system's service. Every Redis
//! store test talks to one: a real server, not a mock.
//!
//! The binaries are `CRONSLOT_REDIS_BIN` (a directory holding
//! `redis-server` and `redis-cli`), else `PATH`. Missing binaries fail the
//! test with a message that says to run `scripts/setup`; they never skip
//! it.
//!
//! The shared server ([`shared`]) is every test's at once: a command that
//! changes the whole server (its configuration, its script cache, every
//! key, its clients, the default user, its role; see
//! [`server_wide_command`]) and a crash or restart of it fail the test
//! that asks, saying to start a server of its own ([`Server::start`]),
//! because one test's change would reach every test running beside it.
//!
//! Each server is watched by a small `sh` guard holding a pipe from this
//! process on its stdin: when the pipe closes (the [`Server`] is dropped,
//! or the test process ends in any way, even killed, though statics are
//! never dropped), the guard kills the server (by its pid file) and
//! removes its directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::local_server::{free_port, make_certificates, tail};

/// One private Redis server.
pub struct Server {
    /// The server's TCP port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    bin: Option<PathBuf>,
    /// `requirepass`, when the server was started with one.
    password: Option<String>,
    /// The configuration arguments it was started with.
    config: Vec<String>,
    /// The test binary's shared server ([`shared`]), which no test may
    /// change server-wide.
    shared: bool,
    server: Mutex<Option<Child>>,
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

/// Why `args` (a `redis-cli` command) changes the whole server, if it
/// does: the configuration (`CONFIG SET`), the script or function cache
/// (`SCRIPT FLUSH`), every key (`FLUSHALL`, `FLUSHDB`, `SWAPDB`), other
/// clients (`CLIENT KILL`, `CLIENT PAUSE`), the default user (`ACL
/// SETUSER default`, `ACL DELUSER`, `ACL LOAD`), the server itself
/// (`DEBUG`, `SHUTDOWN`, `MODULE`) or its role (`REPLICAOF`, `FAILOVER`).
/// A user of the test's own (`ACL SETUSER alice`) and keys under the
/// test's own prefix are the test's.
pub fn server_wide_command(args: &[&str]) -> Option<String> {
    let word = |i: usize| {
        args.get(i)
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default()
    };
    let (first, second) = (word(0), word(1));
    let wide = match first.as_str() {
        "FLUSHALL" | "FLUSHDB" | "SWAPDB" | "DEBUG" | "SHUTDOWN" | "MODULE" | "REPLICAOF"
        | "SLAVEOF" | "FAILOVER" => true,
        "CONFIG" => matches!(second.as_str(), "SET" | "RESETSTAT" | "REWRITE"),
        "SCRIPT" => matches!(second.as_str(), "FLUSH" | "KILL"),
        "FUNCTION" => matches!(
            second.as_str(),
            "FLUSH" | "DELETE" | "LOAD" | "RESTORE" | "KILL"
        ),
        "CLIENT" => matches!(second.as_str(), "KILL" | "PAUSE" | "UNPAUSE"),
        "ACL" => match second.as_str() {
            "SETUSER" => word(2) == "DEFAULT",
            "DELUSER" | "LOAD" => true,
            _ => false,
        },
        _ => false,
    };
    wide.then(|| {
        if matches!(
            first.as_str(),
            "CONFIG" | "SCRIPT" | "FUNCTION" | "CLIENT" | "ACL"
        ) {
            format!("{first} {second}")
        } else {
            first.clone()
        }
    })
}

/// A name no other call in this process returns: `prefix-PID-N` (a valid
/// key prefix for a `prefix` of letters, digits, `-`).
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

const HOW: &str = "run scripts/setup (it installs Debian's redis-server package), or set \
                   CRONSLOT_REDIS_BIN to the directory holding redis-server and redis-cli";

/// The directory of the server's binaries (`None`: found on `PATH`).
fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CRONSLOT_REDIS_BIN").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("redis-server").is_file() && dir.join("redis-cli").is_file(),
            "Redis binaries not found: CRONSLOT_REDIS_BIN={} has no redis-server and redis-cli; \
             {HOW}",
            dir.display()
        );
        return Some(dir);
    }
    let found = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| d.join("redis-server").is_file())
    });
    assert!(found, "redis-server not found on PATH: {HOW}");
    None
}

/// Waits for the pipe on its stdin to close, then kills the server whose
/// pid is in `$CRONSLOT_REDIS_DIR/redis.pid` and removes the directory.
const GUARD: &str = r#"while read -r _line; do :; done
if [ -f "$CRONSLOT_REDIS_DIR/redis.pid" ]; then kill -9 "$(cat "$CRONSLOT_REDIS_DIR/redis.pid")" 2>/dev/null; fi
rm -rf "$CRONSLOT_REDIS_DIR""#;

impl Server {
    /// Starts a new server in a fresh temporary directory (well under a
    /// second).
    pub fn start() -> Server {
        Server::start_with(None, &[])
    }

    /// Starts a new server that asks for `password` (`requirepass`, the
    /// `default` user's password), with `extra` configuration arguments
    /// (`["--maxmemory", "1mb"]`).
    pub fn start_with(password: Option<&str>, extra: &[&str]) -> Server {
        Server::start_inner(password, extra, false)
    }

    fn start_inner(password: Option<&str>, extra: &[&str], tls: bool) -> Server {
        let bin = bin_dir();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "cronslot-redis-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the server's temporary directory");
        let guard = Command::new("sh")
            .arg("-c")
            .arg(GUARD)
            .arg("cronslot-redis-guard")
            .env("CRONSLOT_REDIS_DIR", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the server's guard (sh)");
        let mut config: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        if tls {
            make_certificates(&dir);
            let file = |name: &str| dir.join(name).to_string_lossy().into_owned();
            config.extend([
                "--tls-port".to_string(),
                free_port().to_string(),
                "--tls-cert-file".to_string(),
                file("server.crt"),
                "--tls-key-file".to_string(),
                file("server.key"),
                "--tls-ca-cert-file".to_string(),
                file("ca.pem"),
                "--tls-auth-clients".to_string(),
                "no".to_string(),
            ]);
        }
        let mut server = Server {
            port: 0,
            dir,
            bin,
            password: password.map(str::to_string),
            config,
            shared: false,
            server: Mutex::new(None),
            guard: Mutex::new(Some(guard)),
        };
        // A port can be taken between choosing and binding it: try others.
        let mut last = String::new();
        for _ in 0..5 {
            server.port = free_port();
            match server.try_spawn(&[]) {
                Ok(()) => return server,
                Err(e) => last = e,
            }
        }
        panic!("the test Redis server did not start: {last}");
    }

    fn program(&self, name: &str) -> PathBuf {
        match &self.bin {
            Some(dir) => dir.join(name),
            None => PathBuf::from(name),
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    fn try_spawn(&self, extra: &[String]) -> Result<(), String> {
        let mut command = Command::new(self.program("redis-server"));
        command
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .args(["--daemonize", "no"])
            .arg("--pidfile")
            .arg(self.dir.join("redis.pid"))
            .arg("--logfile")
            .arg(self.log_path());
        if let Some(password) = &self.password {
            command.args(["--requirepass", password]);
        }
        command
            .args(&self.config)
            .args(extra)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = command
            .spawn()
            .map_err(|e| format!("running redis-server: {e}; {HOW}"))?;
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "redis-server exited ({status}) on port {}:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            if self.try_cli(&["PING"]).is_ok_and(|r| r == "PONG") {
                *self.server.lock().unwrap() = Some(child);
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "redis-server on port {} did not answer PING within 20 s:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis://127.0.0.1:PORT/0?prefix=PREFIX` (with the password when
    /// the server has one).
    pub fn url(&self, prefix: &str) -> String {
        let auth = self
            .password
            .as_ref()
            .map(|p| format!(":{p}@"))
            .unwrap_or_default();
        format!("redis://{auth}127.0.0.1:{}/0?prefix={prefix}", self.port)
    }

    /// Fails the test that asks for `what` on the shared server.
    fn refuse_on_shared(&self, what: &str) {
        assert!(
            !self.shared,
            "{what} changes the whole Redis server, and this is the test binary's shared one: \
             every test running beside this one would see it; start a server of the test's own \
             (cronslot_tests::redis::Server::start)"
        );
    }

    /// Runs one command with `redis-cli` (authenticated when the server
    /// has a password); its answer, trimmed (an error answer is an `Err`).
    /// On the shared server, a command that changes the whole server
    /// ([`server_wide_command`]) fails the test instead.
    pub fn try_cli(&self, args: &[&str]) -> Result<String, String> {
        if let Some(command) = server_wide_command(args) {
            self.refuse_on_shared(&command);
        }
        let mut command = Command::new(self.program("redis-cli"));
        command
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .env_remove("REDISCLI_AUTH");
        if let Some(password) = &self.password {
            command.env("REDISCLI_AUTH", password);
        }
        let output = command
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running redis-cli: {e}; {HOW}"))?;
        let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if !output.status.success()
            || text.starts_with("ERR")
            || text.starts_with("WRONGTYPE")
            || text.starts_with("NOAUTH")
            || text.starts_with("LOADING")
            || text.starts_with("Could not connect")
        {
            return Err(format!(
                "redis-cli {}: {}: {text}{}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(text)
    }

    /// [`Server::try_cli`], failing the test on an error.
    pub fn cli(&self, args: &[&str]) -> String {
        self.try_cli(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Crashes the server: `SIGKILL`, nothing flushed beyond what
    /// `appendfsync always` already wrote.
    pub fn crash(&self) {
        self.refuse_on_shared("a crash");
        if let Some(mut child) = self.server.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and directory (it loads
    /// its append-only file), with the configuration it had.
    pub fn restart(&self) {
        self.restart_with(&[]);
    }

    /// Starts a new server that also accepts TLS on [`Server::tls_port`]
    /// (clients need no certificate of their own), with a certificate for
    /// `localhost` (and not for `127.0.0.1`) signed by a test CA of its
    /// own ([`Server::ca_file`]); made with the `openssl` command.
    pub fn start_with_tls() -> Server {
        Server::start_inner(None, &[], true)
    }

    /// The TLS port of a server from [`Server::start_with_tls`].
    pub fn tls_port(&self) -> u16 {
        self.config
            .iter()
            .position(|a| a == "--tls-port")
            .and_then(|i| self.config.get(i + 1))
            .and_then(|p| p.parse().ok())
            .expect("a server started with start_with_tls")
    }

    /// The PEM file of the CA that signed a TLS server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// [`Server::restart`] with more configuration arguments.
    pub fn restart_with(&self, extra: &[&str]) {
        self.refuse_on_shared("a restart");
        self.crash();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        self.try_spawn(&extra).unwrap_or_else(|e| panic!("{e}"));
    }

    /// The end of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&self.log_path())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.server.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let mut guard = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut child) = guard.take() {
            // Closing stdin makes the guard remove the directory.
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_change_the_whole_server_are_known() {
        for (args, wide) in [
            (&["CONFIG", "SET", "maxmemory", "1"][..], Some("CONFIG SET")),
            (
                &["config", "set", "appendfsync", "everysec"],
                Some("CONFIG SET"),
            ),
            (&["SCRIPT", "FLUSH"], Some("SCRIPT FLUSH")),
            (&["FLUSHALL"], Some("FLUSHALL")),
            (&["FLUSHDB", "ASYNC"], Some("FLUSHDB")),
            (&["CLIENT", "KILL", "TYPE", "normal"], Some("CLIENT KILL")),
            (&["CLIENT", "PAUSE", "1500", "ALL"], Some("CLIENT PAUSE")),
            (&["ACL", "SETUSER", "default", ">pw"], Some("ACL SETUSER")),
            (&["REPLICAOF", "127.0.0.1", "6379"], Some("REPLICAOF")),
            (&["CONFIG", "GET", "appendfsync"], None),
            (&["SCRIPT", "EXISTS", "abc"], None),
            (&["CLIENT", "LIST"], None),
            (&["ACL", "SETUSER", "alice", "on"], None),
            (&["HSET", "{p:j}:state", "v", "1"], None),
            (&["--scan", "--pattern", "{p:*"], None),
        ] {
            assert_eq!(
                server_wide_command(args).as_deref(),
                wide,
                "{}",
                args.join(" ")
            );
        }
    }

    #[test]
    #[should_panic(expected = "start a server of the test's own")]
    fn the_shared_server_refuses_a_server_wide_command() {
        shared().cli(&["CONFIG", "SET", "maxmemory", "1"]);
    }

    #[test]
    #[should_panic(expected = "start a server of the test's own")]
    fn the_shared_server_refuses_a_crash() {
        shared().crash();
    }
}
