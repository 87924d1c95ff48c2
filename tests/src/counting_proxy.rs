//! An HTTP/1.1 forwarder that counts the requests passing through it, by
//! AWS operation (the `X-Amz-Target` header, e.g.
//! `DynamoDB_20120810.GetItem`): put between a `cronslot` process and moto,
//! it counts what the process asks of DynamoDB, which the SDK's own
//! interceptor can only do inside the test's process.
//!
//! Requests and responses are forwarded byte for byte, one at a time per
//! connection (the SDK does not pipeline); bodies are framed by
//! `Content-Length` or chunked encoding.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

/// The forwarder, listening on loopback until the test process ends.
pub struct CountingProxy {
    /// `http://127.0.0.1:PORT`, to give as the endpoint.
    pub endpoint: String,
    counts: Counts,
}

impl CountingProxy {
    /// Forwards to `upstream` (`http://host:port`).
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound or `upstream` has no host:port.
    pub fn start(upstream: &str) -> CountingProxy {
        let target = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        assert!(target.contains(':'), "upstream {upstream:?} has no port");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let endpoint = format!(
            "http://{}",
            listener.local_addr().expect("the bound address")
        );
        let counts: Counts = Arc::default();
        let shared = Arc::clone(&counts);
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (target, counts) = (target.clone(), Arc::clone(&shared));
                thread::spawn(move || {
                    if let Ok(upstream) = TcpStream::connect(&target) {
                        let _ = forward(client, upstream, &counts);
                    }
                });
            }
        });
        CountingProxy { endpoint, counts }
    }

    /// The requests counted since the last call, by operation (`other`
    /// for requests without `X-Amz-Target`), and starts counting afresh.
    pub fn take(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.counts.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Forwards each request of `client` to `upstream` and its response back,
/// until either side closes.
fn forward(client: TcpStream, upstream: TcpStream, counts: &Counts) -> std::io::Result<()> {
    let mut client_in = BufReader::new(client.try_clone()?);
    let mut client_out = client;
    let mut upstream_in = BufReader::new(upstream.try_clone()?);
    let mut upstream_out = upstream;
    loop {
        let Some(request) = read_message(&mut client_in)? else {
            return Ok(());
        };
        let operation = header(&request.head, "x-amz-target").unwrap_or_else(|| "other".into());
        *counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(operation)
            .or_default() += 1;
        upstream_out.write_all(&request.bytes)?;
        let Some(response) = read_message(&mut upstream_in)? else {
            return Ok(());
        };
        client_out.write_all(&response.bytes)?;
    }
}

/// One request or response: its head (lines, for headers) and every byte
/// of it as read.
struct Message {
    head: String,
    bytes: Vec<u8>,
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_string())
    })
}

/// Reads one message; `None` at a clean end of the connection.
fn read_message(input: &mut impl BufRead) -> std::io::Result<Option<Message>> {
    let mut bytes = Vec::new();
    loop {
        let before = bytes.len();
        if input.read_until(b'\n', &mut bytes)? == 0 {
            return Ok(None);
        }
        if &bytes[before..] == b"\r\n" {
            break;
        }
    }
    let head = String::from_utf8_lossy(&bytes).into_owned();
    if header(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let start = bytes.len();
            input.read_until(b'\n', &mut bytes)?;
            let size_line = String::from_utf8_lossy(&bytes[start..]).into_owned();
            let size = usize::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            // The chunk and its CRLF (the last chunk: just the CRLF).
            let mut chunk = vec![0; size + 2];
            input.read_exact(&mut chunk)?;
            bytes.extend_from_slice(&chunk);
            if size == 0 {
                break;
            }
        }
    } else if let Some(length) = header(&head, "content-length") {
        let length: usize = length
            .parse()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let start = bytes.len();
        bytes.resize(start + length, 0);
        input.read_exact(&mut bytes[start..])?;
    }
    Ok(Some(Message { head, bytes }))
}
