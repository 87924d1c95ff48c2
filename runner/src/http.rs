//! The local runner's HTTP client for `http` jobs (the rules it follows
//! are the runtime's: `cronslot_runtime::http`): reqwest with rustls and
//! the bundled webpki roots, redirects never followed.

use std::cell::OnceCell;
use std::error::Error as _;

use cronslot_runtime::http::{BODY_EXCERPT, HttpFailure, HttpRequest, HttpResponse};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Method};

/// One worker's HTTP client, built on first use (a worker with no http job
/// never loads the TLS roots) and then reused for its connection pool.
#[derive(Default)]
pub(crate) struct HttpClient {
    client: OnceCell<Result<Client, String>>,
}

impl HttpClient {
    fn client(&self) -> Result<Client, HttpFailure> {
        self.client
            .get_or_init(|| {
                Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("the HTTP client could not start: {}", chain(&e)))
            })
            .clone()
            .map_err(|message| HttpFailure {
                permanent: true,
                message,
            })
    }

    /// Sends `request` (the runtime bounds it by its timeout).
    pub(crate) fn send(
        &self,
        request: HttpRequest,
    ) -> impl std::future::Future<Output = Result<HttpResponse, HttpFailure>> + 'static {
        let client = self.client();
        async move {
            let client = client?;
            let method = Method::from_bytes(request.method.as_str().as_bytes())
                .map_err(|e| permanent(format!("method {}: {e}", request.method)))?;
            let headers = headers(&request.headers)?;
            let mut outgoing = client.request(method, &request.url).headers(headers);
            if let Some(body) = request.body {
                outgoing = outgoing.body(body);
            }
            let mut response = outgoing.send().await.map_err(|e| HttpFailure {
                // The URL or a header is unusable: the next attempt is
                // no better.
                permanent: e.is_builder(),
                message: chain(&e),
            })?;
            let status = response.status().as_u16();
            let mut body = Vec::new();
            if !response.status().is_success() {
                while body.len() < BODY_EXCERPT {
                    match response.chunk().await {
                        Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                        _ => break,
                    }
                }
            }
            Ok(HttpResponse { status, body })
        }
    }
}

fn permanent(message: String) -> HttpFailure {
    HttpFailure {
        permanent: true,
        message,
    }
}

fn headers(pairs: &[(String, String)]) -> Result<HeaderMap, HttpFailure> {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| permanent(format!("header name {name:?}: {e}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| permanent(format!("value of header {name:?}: {e}")))?;
        headers.insert(header, value);
    }
    Ok(headers)
}

/// An error and its causes, `a: b: c` (reqwest's own message is terse).
fn chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
