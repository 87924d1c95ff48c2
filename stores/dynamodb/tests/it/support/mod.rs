//! Shared helpers of the DynamoDB tests: a moto server per test binary, a
//! fresh table per test, an SDK client with a request counter and a
//! fault-injecting HTTP connector, and a tokio runtime for the conformance
//! macro.
//!
//! Everything talks to a real emulator (moto); faults are injected on top
//! of it, in the HTTP layer under the SDK, so the SDK parses them exactly
//! as it would DynamoDB's.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse, Metadata};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::ConfigBag;
use cronslot_core::coord::{CasCoordinator, RandomSource, SplitMix64};
use cronslot_dynamodb::DynamoStore;

// ---------------------------------------------------------------- moto ----

pub use cronslot_tests::moto::moto;

// ------------------------------------------------------ request counts ----

/// Requests sent, by operation name (`GetItem`, `PutItem`, ...), counted by
/// an interceptor on the SDK client: one per attempt that reached the HTTP
/// layer.
#[derive(Debug, Default)]
pub struct Counts(Mutex<BTreeMap<String, u64>>);

impl Counts {
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap().clone()
    }

    pub fn get(&self, operation: &str) -> u64 {
        self.0.lock().unwrap().get(operation).copied().unwrap_or(0)
    }

    pub fn reset(&self) {
        self.0.lock().unwrap().clear();
    }

    /// Reads (`GetItem`, `Query`, `Scan`) and writes (`PutItem`,
    /// `UpdateItem`, `DeleteItem`, `TransactWriteItems`).
    pub fn reads_writes(&self) -> (u64, u64) {
        let c = self.snapshot();
        let sum = |ops: &[&str]| ops.iter().map(|o| c.get(*o).copied().unwrap_or(0)).sum();
        (
            sum(&["GetItem", "Query", "Scan", "BatchGetItem"]),
            sum(&[
                "PutItem",
                "UpdateItem",
                "DeleteItem",
                "TransactWriteItems",
                "BatchWriteItem",
            ]),
        )
    }
}

#[derive(Debug)]
struct CountingInterceptor(Arc<Counts>);

impl Intercept for CountingInterceptor {
    fn name(&self) -> &'static str {
        "cronslot-test-request-counter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let name = cfg
            .load::<Metadata>()
            .map_or_else(|| "unknown".to_string(), |m| m.name().to_string());
        *self.0.0.lock().unwrap().entry(name).or_default() += 1;
        Ok(())
    }
}

// -------------------------------------------------------------- faults ----

/// A fault the connector injects into one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// Answered `400 ProvisionedThroughputExceededException` without
    /// reaching moto.
    Throttle,
    /// Answered `500 InternalServerError` without reaching moto.
    ServerError,
    /// Sent to moto (so applied), then answered `500 InternalServerError`:
    /// DynamoDB documents that a 500 may come after the write happened.
    AppliedThenServerError,
    /// Sent to moto (so applied), then the response is lost as a timeout.
    AppliedThenTimeout,
    /// Times out without reaching moto: the outcome is just as unknown to
    /// the client, but nothing was applied.
    TimeoutUnapplied,
}

#[derive(Debug, Default)]
struct FaultState {
    /// Faults for the next requests of an operation, in order.
    script: VecDeque<(String, Fault)>,
    /// Random faults: (generator, percent of requests, kinds, operations).
    random: Option<(SplitMix64, u64, Vec<Fault>, Vec<String>)>,
    injected: BTreeMap<(String, Fault), u64>,
}

/// The fault plan of one client.
#[derive(Debug, Default)]
pub struct Faults(Mutex<FaultState>);

impl Faults {
    /// The next request of `operation` gets `fault` (queued after earlier
    /// entries for the same operation).
    pub fn script(&self, operation: &str, fault: Fault) {
        self.0
            .lock()
            .unwrap()
            .script
            .push_back((operation.to_string(), fault));
    }

    /// From now on, `percent` % of requests to `operations` get a fault
    /// drawn from `kinds` (seeded: a failure replays).
    pub fn random(&self, seed: u64, percent: u64, kinds: &[Fault], operations: &[&str]) {
        self.0.lock().unwrap().random = Some((
            SplitMix64::new(seed),
            percent,
            kinds.to_vec(),
            operations.iter().map(|o| o.to_string()).collect(),
        ));
    }

    pub fn stop(&self) {
        let mut s = self.0.lock().unwrap();
        s.random = None;
        s.script.clear();
    }

    /// Scripted faults not yet used.
    pub fn pending(&self) -> usize {
        self.0.lock().unwrap().script.len()
    }

    /// Faults injected so far, by operation and kind.
    pub fn injected(&self) -> BTreeMap<(String, Fault), u64> {
        self.0.lock().unwrap().injected.clone()
    }

    pub fn injected_total(&self) -> u64 {
        self.0.lock().unwrap().injected.values().sum()
    }

    fn next(&self, operation: &str) -> Option<Fault> {
        let mut s = self.0.lock().unwrap();
        let scripted = s
            .script
            .iter()
            .position(|(op, _)| op == operation)
            .and_then(|i| s.script.remove(i))
            .map(|(_, f)| f);
        let fault = scripted.or_else(|| {
            let (rng, percent, kinds, ops) = s.random.as_mut()?;
            if !ops.iter().any(|o| o == operation) || kinds.is_empty() {
                return None;
            }
            if rng.below_or_equal(99) >= *percent {
                return None;
            }
            let i = rng.below_or_equal(kinds.len() as u64 - 1) as usize;
            Some(kinds[i])
        })?;
        *s.injected
            .entry((operation.to_string(), fault))
            .or_default() += 1;
        Some(fault)
    }
}

/// The HTTP client under the SDK: moto through a plain-HTTP client, with
/// faults injected per the plan, and one write at a time per client.
///
/// The write gate is there because moto's writes are not atomic against
/// each other: its threaded server evaluates a conditional put's condition
/// and then stores the item without a lock (atomic only as far as the
/// GIL's timing happens to make it), and a cancelled transaction restores
/// the whole table from a copy taken when it started, which would undo
/// another client's write made in between. DynamoDB guarantees both;
/// serialising the writes of a client gives moto the same. Reads still run
/// concurrently, and coordinators still interleave between requests (a
/// read, another worker's write, then the stale write), which is the
/// concurrency the tests are about.
#[derive(Debug, Clone)]
struct TestHttpClient {
    inner: SharedHttpClient,
    faults: Arc<Faults>,
    gate: Arc<tokio::sync::Mutex<()>>,
}

impl HttpClient for TestHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(TestConnector {
            inner: self.inner.http_connector(settings, components),
            faults: self.faults.clone(),
            gate: self.gate.clone(),
        })
    }
}

#[derive(Debug)]
struct TestConnector {
    inner: SharedHttpConnector,
    faults: Arc<Faults>,
    gate: Arc<tokio::sync::Mutex<()>>,
}

fn is_read(operation: &str) -> bool {
    matches!(
        operation,
        "GetItem" | "BatchGetItem" | "Query" | "Scan" | "DescribeTable" | "DescribeTimeToLive"
    )
}

fn error_response(status: u16, code: &str, message: &str) -> HttpResponse {
    let body =
        format!(r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{code}","message":"{message}"}}"#);
    let mut response = HttpResponse::new(
        StatusCode::try_from(status).expect("status"),
        SdkBody::from(body),
    );
    response
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    response
        .headers_mut()
        .insert("x-amzn-requestid", "injected-fault");
    response
}

impl HttpConnector for TestConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown")
            .to_string();
        let fault = self.faults.next(&operation);
        let inner = self.inner.clone();
        let gate = self.gate.clone();
        HttpConnectorFuture::new(async move {
            match fault {
                Some(Fault::Throttle) => {
                    return Ok(error_response(
                        400,
                        "ProvisionedThroughputExceededException",
                        "injected: the level of configured provisioned throughput for the table was exceeded",
                    ));
                }
                Some(Fault::ServerError) => {
                    return Ok(error_response(
                        500,
                        "InternalServerError",
                        "injected: internal server error",
                    ));
                }
                Some(Fault::TimeoutUnapplied) => {
                    return Err(ConnectorError::timeout(
                        "injected: read timeout (the request never reached moto)".into(),
                    ));
                }
                _ => {}
            }
            let response = if is_read(&operation) {
                inner.call(request).await
            } else {
                let _one_write_at_a_time = gate.lock().await;
                inner.call(request).await
            };
            match fault {
                Some(Fault::AppliedThenTimeout) => Err(ConnectorError::timeout(
                    "injected: the request reached moto, the response was lost (read timeout)"
                        .into(),
                )),
                Some(Fault::AppliedThenServerError) => Ok(error_response(
                    500,
                    "InternalServerError",
                    "injected: internal server error after the write",
                )),
                _ => response,
            }
        })
    }
}

// -------------------------------------------------------------- setup ----

/// One SDK client on moto with its request counts and fault plan. Clients
/// of one `Setup` share the gate, so every request to its tables is
/// serialised.
#[derive(Debug, Clone)]
pub struct Setup {
    pub client: Client,
    pub counts: Arc<Counts>,
    pub faults: Arc<Faults>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup::new()
    }
}

impl Setup {
    pub fn new() -> Setup {
        let moto = moto();
        let counts = Arc::new(Counts::default());
        let faults = Arc::new(Faults::default());
        let http = TestHttpClient {
            inner: aws_smithy_http_client::Builder::new().build_http(),
            faults: faults.clone(),
            gate: Arc::new(tokio::sync::Mutex::new(())),
        };
        // Static dummy credentials and a fixed region: nothing is looked up
        // in the environment, and the SDK never asks the instance metadata
        // service.
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(&moto.endpoint)
            .credentials_provider(Credentials::new(
                "test",
                "test",
                None,
                None,
                "cronslot-tests",
            ))
            .interceptor(CountingInterceptor(counts.clone()))
            .http_client(http)
            .build();
        Setup {
            client: Client::from_conf(config),
            counts,
            faults,
        }
    }

    /// A store on a new, empty table of its own.
    pub async fn fresh_store(&self, label: &str) -> DynamoStore {
        let store = DynamoStore::new(self.client.clone(), unique_table(label));
        store.create_table().await.expect("create table");
        self.counts.reset();
        store
    }
}

/// A table name no other test uses: label, process, sequence.
pub fn unique_table(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let label: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(120)
        .collect();
    format!(
        "cronslot-{label}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

// --------------------------------------------------------- raw items ----

/// A string attribute.
pub fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_string())
}

/// An item read straight from `table` (consistently), where its key
/// attribute `key` is `value`: what the store wrote, as DynamoDB holds it.
pub async fn raw_item(
    client: &Client,
    table: &str,
    key: &str,
    value: &str,
) -> Option<HashMap<String, AttributeValue>> {
    client
        .get_item()
        .table_name(table)
        .key(key, s(value))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item()
        .cloned()
}

/// A new table named after `label`, keyed by the string attribute `key`
/// alone, without index or TTL (a user's own table, or one an older
/// cronslot made); answers its name.
pub async fn table_keyed_by(client: &Client, label: &str, key: &str) -> String {
    let name = unique_table(label);
    client
        .create_table()
        .table_name(&name)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(key)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(key)
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
    name
}

// ------------------------------------------------------------ runtime ----

thread_local! {
    /// One current-thread runtime per test thread: the table is created and
    /// the test runs on the same runtime, so the client's pooled
    /// connections stay valid.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
}

/// Drives a future to completion on this thread's runtime (the
/// coordinator is not `Sync`, so everything stays on one thread).
pub fn block_on<F: Future>(future: F) -> F::Output {
    RUNTIME.with(|rt| rt.block_on(future))
}

/// The coordinator of one conformance test: a fresh table on moto.
pub fn conformance_coordinator() -> CasCoordinator<DynamoStore> {
    block_on(async {
        let setup = Setup::new();
        let store = setup.fresh_store("conformance").await;
        CasCoordinator::new(store, 0x5EED)
    })
}
