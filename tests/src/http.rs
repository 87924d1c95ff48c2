//! A bare HTTP/1.1 client for tests of the routes cronslot serves (health
//! probes, the fleet example): one request on a fresh connection, no
//! library between the test and the bytes on the wire.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `GET path` on 127.0.0.1:`port`: the status and the body, or `None` when
/// nothing answers.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    request(port, "GET", path, None).map(|r| (r.status, r.body))
}

/// An answer: its status, header lines (`name: value`, names lower-cased)
/// and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<String>,
    pub body: String,
}

impl Answer {
    /// A header's value, by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|h| {
            let (n, v) = h.split_once(':')?;
            (n == name).then(|| v.trim())
        })
    }
}

/// `method path` on 127.0.0.1:`port`, with `Authorization: Bearer
/// token` when a token is given and an empty body; `None` when nothing
/// answers. Reads to the end of the connection (the request asks the
/// server to close it), so a chunked body keeps its chunk lines.
pub fn request(port: u16, method: &str, path: &str, token: Option<&str>) -> Option<Answer> {
    request_with(port, method, path, token, &[], "")
}

/// [`request`] with more header lines (`(name, value)`) and a body (sent
/// with its `Content-Length`; empty: none).
pub fn request_with(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<Answer> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let length = body.len();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}{extra}Content-Length: {length}\r\nConnection: close\r\n\r\n{body}"
    )
    .ok()?;
    read_answer(&mut stream)
}

/// Reads an answer to the end of the connection.
fn read_answer(stream: &mut TcpStream) -> Option<Answer> {
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .map(|l| match l.split_once(':') {
            Some((n, v)) => format!("{}:{v}", n.to_ascii_lowercase()),
            None => l.to_string(),
        })
        .collect();
    Some(Answer {
        status,
        headers,
        body: body.to_string(),
    })
}

/// A loopback port nothing listens on (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `method path` on 127.0.0.1:`port` with a JSON `body` and no token;
/// `None` when nothing answers.
pub fn send_json(port: u16, method: &str, path: &str, body: &str) -> Option<Answer> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    read_answer(&mut stream)
}
