//! `http` jobs in the Lambda: the runtime's request
//! (`cronslot_runtime::http`, whose rules every platform shares) sent with
//! the connector the AWS SDK itself uses (hyper 1, rustls with aws-lc, the
//! system's root certificates), so webhooks add no second HTTP or TLS
//! stack to the bootstrap.

use std::cell::OnceCell;
use std::future::Future;
use std::time::Duration;

use aws_smithy_async::rt::sleep::{SharedAsyncSleep, TokioSleep};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest as SdkRequest;
use aws_smithy_types::body::SdkBody;
use cronslot_core::manifest::JobSpec;
use cronslot_runtime::http::{BODY_EXCERPT, HttpFailure, HttpRequest, HttpResponse, plan_sample};
use http_body_util::BodyExt;

/// The longest a connection attempt may take (the whole request is bounded
/// by the job's timeout as well).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client of the function: built on first use (a function whose
/// jobs never call out never loads the root certificates), then reused for
/// its connection pool.
#[derive(Default)]
pub struct HttpRunner {
    connector: OnceCell<Option<SharedHttpConnector>>,
}

impl HttpRunner {
    /// A client that connects on first use.
    pub fn new() -> HttpRunner {
        HttpRunner::default()
    }

    fn connector(&self) -> Result<SharedHttpConnector, HttpFailure> {
        self.connector
            .get_or_init(|| {
                let settings = HttpConnectorSettings::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .build();
                let sleep = SharedAsyncSleep::new(TokioSleep::new());
                aws_smithy_http_client::default_connector(&settings, Some(sleep))
            })
            .clone()
            .ok_or_else(|| HttpFailure {
                permanent: true,
                message: "this build has no HTTPS connector (aws-smithy-http-client without rustls-aws-lc)".to_string(),
            })
    }

    /// Sends `request` (the runtime bounds it by its timeout) and reads the
    /// start of a failed response's body.
    pub fn send(
        &self,
        request: HttpRequest,
    ) -> impl Future<Output = Result<HttpResponse, HttpFailure>> + 'static {
        let connector = self.connector();
        async move {
            let sdk_request = build_request(&request).map_err(|message| HttpFailure {
                permanent: true,
                message,
            })?;
            let response = connector?
                .call(sdk_request)
                .await
                .map_err(|e| HttpFailure {
                    // The request itself is unusable: the next attempt is no
                    // better.
                    permanent: e.is_user(),
                    message: chain(&e),
                })?;
            let status = response.status().as_u16();
            let mut body = Vec::new();
            if !(200..300).contains(&status) {
                let mut stream = response.into_body();
                while body.len() < BODY_EXCERPT {
                    match stream.frame().await {
                        Some(Ok(frame)) => {
                            if let Some(data) = frame.data_ref() {
                                body.extend_from_slice(data);
                            }
                        }
                        _ => break,
                    }
                }
            }
            Ok(HttpResponse { status, body })
        }
    }
}

/// Checks that a job's request can be built (URL, method, header names and
/// values), so that a bad one is refused when the function starts.
pub fn validate(spec: &JobSpec) -> Result<(), String> {
    match plan_sample(spec) {
        Some(request) => build_request(&request).map(|_| ()),
        None => Ok(()),
    }
}

/// The runtime's request as the SDK connector's.
fn build_request(request: &HttpRequest) -> Result<SdkRequest, String> {
    let body = match &request.body {
        Some(body) => SdkBody::from(body.as_str()),
        None => SdkBody::empty(),
    };
    let mut sdk = SdkRequest::new(body);
    sdk.set_method(request.method.as_str())
        .map_err(|e| format!("method {}: {}", request.method, chain(&e)))?;
    sdk.set_uri(request.url.as_str())
        .map_err(|e| format!("url {:?}: {}", request.url, chain(&e)))?;
    let headers = sdk.headers_mut();
    for (name, value) in &request.headers {
        headers
            .try_insert(name.clone(), value.clone())
            .map_err(|e| format!("header {name:?}: {}", chain(&e)))?;
    }
    Ok(sdk)
}

/// An error and its causes, `a: b: c`.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use cronslot_core::manifest::{Action, HttpMethod, parse_manifest};

    use super::*;

    fn hook(url: &str, headers: BTreeMap<String, String>) -> JobSpec {
        let mut spec = parse_manifest(
            "[[job]]\nname = \"hook\"\nschedule = \"* * * * *\"\nhttp = { url = \"https://example.com/hook\" }\n",
            "m.toml",
        )
        .unwrap()
        .jobs
        .remove(0);
        spec.action = Action::Http {
            url: url.to_string(),
            method: HttpMethod::Post,
            headers,
            timeout: Duration::from_secs(5),
        };
        spec
    }

    #[test]
    fn bad_requests_are_refused_up_front() {
        assert!(validate(&hook("https://example.com/hook", BTreeMap::new())).is_ok());
        assert!(validate(&hook("not a url", BTreeMap::new())).is_err());
        let bad = BTreeMap::from([("bad header".to_string(), "v".to_string())]);
        let e = validate(&hook("https://example.com/", bad)).unwrap_err();
        assert!(e.contains("bad header"), "{e}");
    }
}
