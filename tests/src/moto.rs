//! A moto server (the AWS API emulator) for tests: started on a free
//! loopback port on first use, stopped when the test binary exits. Every
//! DynamoDB and EventBridge test talks to it: a real emulator, not a mock.
//!
//! The binary is `MOTO_SERVER`, else `moto_server` on `PATH`, else the
//! virtualenv `scripts/setup` creates. A missing emulator fails the test
//! with a message; it never skips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::local_server::{free_port, tail};

/// The moto server of this test binary. It is started on first use and
/// stops when the binary exits: it runs under a small `sh` guard that kills
/// it once its stdin (a pipe held by this process) closes, which the OS
/// does at exit even though statics are never dropped.
pub struct Moto {
    pub endpoint: String,
    child: Mutex<Child>,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        // Closing stdin makes the guard kill moto and exit.
        drop(child.stdin.take());
        let _ = child.wait();
    }
}

static MOTO: OnceLock<Moto> = OnceLock::new();

/// The moto endpoint, starting the server if needed.
pub fn moto() -> &'static Moto {
    MOTO.get_or_init(start_moto)
}

/// `MOTO_SERVER`, else `moto_server` on `PATH`, else the virtualenv that
/// `scripts/setup` creates. Never skips: a missing emulator fails the test.
fn moto_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MOTO_SERVER").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "moto_server not found: MOTO_SERVER={} does not exist; run scripts/setup",
            path.display()
        );
        return path;
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("moto_server");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")));
    if let Some(cache) = cache {
        let candidate = cache.join("cronslot/venv/bin/moto_server");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "moto_server not found: run scripts/setup (or set MOTO_SERVER to the moto_server binary)"
    );
}

const GUARD: &str = r#""$@" </dev/null & child=$!
trap 'kill $child 2>/dev/null' EXIT INT TERM HUP
while read -r _line; do :; done
kill $child 2>/dev/null
wait $child 2>/dev/null"#;

fn start_moto() -> Moto {
    let binary = moto_binary();
    let port = free_port();
    let log_path = std::env::temp_dir().join(format!("moto-{}-{port}.log", std::process::id()));
    let log = std::fs::File::create(&log_path).expect("moto log file");
    let child = Command::new("sh")
        .arg("-c")
        .arg(GUARD)
        .arg("moto-guard")
        .arg(&binary)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    let moto = Moto {
        endpoint: format!("http://127.0.0.1:{port}"),
        child: Mutex::new(child),
    };
    let started = Instant::now();
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            // The log was only needed to explain a failed start; moto keeps
            // writing to the unlinked file until it exits, so nothing piles
            // up in the target directory.
            let _ = std::fs::remove_file(&log_path);
            return moto;
        }
        let exited = moto.child.lock().unwrap().try_wait().ok().flatten();
        if exited.is_some() || started.elapsed() > Duration::from_secs(60) {
            panic!(
                "moto_server ({}) did not open port {port} ({}); its log:\n{}",
                binary.display(),
                match exited {
                    Some(status) => format!("exited with {status}"),
                    None => "still not listening after 60 s".to_string(),
                },
                tail(&log_path)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
