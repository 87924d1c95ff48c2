//! A small W3C WebDriver client for the dashboard's browser tests: it
//! starts Debian's `chromedriver` on a free port, opens a headless
//! Chromium session (`/usr/bin/chromium`, or `CRONSLOT_CHROMIUM`), and
//! speaks the protocol's JSON over plain HTTP/1.1, one request per
//! connection, so no client library stands between the test and the wire.
//!
//! Chromium runs with the flags this machine's closed network needs
//! (no background networking, component updates or sync) and a fresh
//! profile directory, so runs share nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

/// How long a wait for the page lasts: longer than the dashboard's
/// 15-second refresh, with room for a loaded machine.
pub const WAIT_SECS: u64 = 30;

/// The element reference key of the W3C protocol.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A browser session; dropping it ends the session and the driver.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    profile: PathBuf,
}

/// An element found on the page.
#[derive(Debug, Clone)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver and a headless Chromium at `width`×`height`,
    /// with its profile under `scratch`.
    pub fn start(scratch: &Path, width: u32, height: u32) -> Browser {
        let driver_bin = std::env::var("CRONSLOT_CHROMEDRIVER")
            .unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let chromium =
            std::env::var("CRONSLOT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = crate::http::free_port();
        let mut driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {driver_bin} (scripts/setup installs chromium-driver): {e}")
            });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(v) = wire(port, "GET", "/status", None) {
                if v["value"]["ready"] == true {
                    break;
                }
            }
            if Instant::now() > deadline {
                let _ = driver.kill();
                let _ = driver.wait();
                panic!("{driver_bin} did not become ready on port {port}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = scratch.join(format!("chromium-profile-{port}"));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).expect("a profile directory");
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    format!("--user-data-dir={}", profile.display()),
                    format!("--window-size={width},{height}"),
                ],
            },
        }}});
        let answer = wire(port, "POST", "/session", Some(&caps));
        let session = match answer {
            Ok(v) => match v["value"]["sessionId"].as_str() {
                Some(id) => id.to_string(),
                None => {
                    let _ = driver.kill();
                    let _ = driver.wait();
                    panic!("no browser session: {v}");
                }
            },
            Err(e) => {
                let _ = driver.kill();
                let _ = driver.wait();
                panic!("no browser session: {e}");
            }
        };
        Browser {
            driver,
            port,
            session,
            profile,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let v = wire(self.port, method, &path, body)
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        if let Some(error) = v["value"]["error"].as_str() {
            panic!(
                "WebDriver {method} {path}: {error}: {}",
                v["value"]["message"]
            );
        }
        v["value"].clone()
    }

    /// Opens `url` and waits for the document to load.
    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(&json!({"url": url})));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and
    /// returns what it returns.
    pub fn execute(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": args})),
        )
    }

    fn try_find(&self, css: &str) -> Option<Element> {
        let path = format!("/session/{}/element", self.session);
        let v = wire(
            self.port,
            "POST",
            &path,
            Some(&json!({"using": "css selector", "value": css})),
        )
        .ok()?;
        v["value"][ELEMENT]
            .as_str()
            .map(|id| Element(id.to_string()))
    }

    /// Waits up to [`WAIT_SECS`] for an element matching `css`.
    pub fn wait_for(&self, css: &str) -> Element {
        let deadline = Instant::now() + Duration::from_secs(WAIT_SECS);
        loop {
            if let Some(e) = self.try_find(css) {
                return e;
            }
            if Instant::now() > deadline {
                let body = self.execute("return document.body.innerText", json!([]));
                panic!(
                    "no element {css:?} on the page after {WAIT_SECS} s; the page reads: {body}"
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits up to [`WAIT_SECS`] until `script` (a function body) returns true.
    pub fn wait_until(&self, what: &str, script: &str) {
        let deadline = Instant::now() + Duration::from_secs(WAIT_SECS);
        while self.execute(script, json!([])) != Value::Bool(true) {
            if Instant::now() > deadline {
                let body = self.execute("return document.body.innerText", json!([]));
                panic!("{what}: not after {WAIT_SECS} s; the page reads: {body}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Finds the element matching `css` (waiting for it) and sends it one
    /// command (`suffix` after the element's path), finding it again when
    /// the page re-rendered it in between (the dashboard refreshes itself),
    /// or was still laying it out (not interactable yet, as on a loaded
    /// machine right after a dialog closed).
    fn on_element(&self, css: &str, method: &str, suffix: &str, body: Option<&Value>) -> Value {
        for _ in 0..10 {
            let e = self.wait_for(css);
            let path = format!("/session/{}/element/{}{suffix}", self.session, e.0);
            match wire(self.port, method, &path, body) {
                Ok(v) if v["value"]["error"] == "stale element reference" => continue,
                Ok(v) if v["value"]["error"] == "element not interactable" => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Ok(v) if v["value"]["error"].is_string() => {
                    panic!("{method} {suffix} on {css:?}: {}", v["value"])
                }
                Ok(v) => return v["value"].clone(),
                Err(e) => panic!("{method} {suffix} on {css:?}: {e}"),
            }
        }
        panic!("{css:?} went stale or stayed not interactable ten times in a row");
    }

    /// Clicks the element matching `css`.
    pub fn click_on(&self, css: &str) {
        self.on_element(css, "POST", "/click", Some(&json!({})));
    }

    /// Types `text` into the element matching `css`.
    pub fn type_on(&self, css: &str, text: &str) {
        self.on_element(css, "POST", "/value", Some(&json!({"text": text})));
    }

    /// The rendered text of the element matching `css`.
    pub fn text_of(&self, css: &str) -> String {
        self.on_element(css, "GET", "/text", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Sets the window's size (a phone's width, say).
    pub fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            Some(&json!({"width": width, "height": height})),
        );
    }

    /// Waits for a `confirm()` dialog and accepts it; returns its text.
    pub fn accept_dialog(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(WAIT_SECS);
        let path = format!("/session/{}/alert/text", self.session);
        loop {
            if let Ok(v) = wire(self.port, "GET", &path, None) {
                if let Some(text) = v["value"].as_str() {
                    let text = text.to_string();
                    self.call("POST", "/alert/accept", Some(&json!({})));
                    return text;
                }
            }
            if Instant::now() > deadline {
                panic!("no dialog opened within {WAIT_SECS} s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A PNG of the viewport, written to `path`; returns its bytes.
    pub fn screenshot(&self, path: &Path) -> Vec<u8> {
        let v = self.call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .expect("a base64 screenshot");
        std::fs::write(path, &png).expect("write the screenshot");
        png
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.session);
        let _ = wire(self.port, "DELETE", &path, None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// One request to the driver: its JSON answer, whatever the status (the
/// protocol's errors are JSON too).
fn wire(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let content = if body.is_empty() && method == "GET" {
        String::new()
    } else {
        format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        )
    };
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{content}Connection: close\r\n\r\n{body}"
    )
    .map_err(|e| e.to_string())?;
    // Read to the end of the answer by its length: chromedriver may keep
    // the connection open whatever the request asked.
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        // A signal to this process (the fleet tests beside it stop and
        // continue their runners; children end) interrupts a blocking
        // read: read again, as `read_to_end` would.
        let n = match stream.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        };
        raw.extend_from_slice(&buf[..n]);
        if let Some(payload) = complete(&raw)? {
            return serde_json::from_str(&payload).map_err(|e| format!("{e}: {payload}"));
        }
        if n == 0 {
            return Err(format!(
                "the connection closed mid-answer: {}",
                String::from_utf8_lossy(&raw)
            ));
        }
    }
}

/// The body once `raw` holds a whole answer (by `Content-Length`, or a
/// chunked body's last chunk); `None` while more is to come.
fn complete(raw: &[u8]) -> Result<Option<String>, String> {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let rest = &raw[end + 4..];
    if head.contains("transfer-encoding: chunked") {
        let text = String::from_utf8_lossy(rest);
        return Ok(text
            .contains("\r\n0\r\n")
            .then(|| dechunk(&text))
            .or_else(|| text.starts_with("0\r\n").then(String::new)));
    }
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .ok_or_else(|| format!("an answer without a length: {head}"))?;
    Ok((rest.len() >= length).then(|| String::from_utf8_lossy(&rest[..length]).into_owned()))
}

/// A chunked body's data.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}
