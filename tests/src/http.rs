//! A bare HTTP/1.1 client for tests of the routes cronslot serves (health
//! probes, the fleet example): one request on a fresh connection, no
//! library between the test and the bytes on the wire.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `GET path` on 127.0.0.1:`port`: the status and the body, or `None` when
/// nothing answers.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    Some((status, body))
}

/// A loopback port nothing listens on (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
