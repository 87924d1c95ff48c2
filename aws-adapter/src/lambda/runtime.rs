//! The process: the manifest and the DynamoDB store from the environment,
//! then the Lambda runtime's loop.
//!
//! Environment: `CRONSLOT_TABLE` (required, the table's name),
//! `CRONSLOT_DYNAMODB_ENDPOINT` (optional: DynamoDB Local or moto),
//! `CRONSLOT_MANIFEST` (optional, see [`ManifestSource`]), and the usual AWS
//! variables for the region and credentials (Lambda sets them).

use std::rc::Rc;
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

use super::handler::{Handler, Host, Invocation};
use super::init::{ENDPOINT_ENV, InitError, MANIFEST_ENV, ManifestSource, TABLE_ENV};
use super::platform::RESERVE;
use cronslot_runtime::Jobs;

use crate::dynamo::DynamoStore;

/// The error `run` and `serve` return (the Lambda runtime's).
pub type Error = lambda_runtime::Error;

/// Runs the function: builds a single-threaded Tokio runtime (the core's
/// futures are not `Send`, and a Lambda invocation runs one event at a
/// time) and serves events until Lambda stops the process. Call it from a
/// plain `fn main`, not from inside another Tokio runtime (use [`serve`]
/// there).
pub fn run(jobs: Jobs, manifest: ManifestSource) -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(jobs, manifest))
}

/// [`run`] for callers that already run Tokio: loads the manifest, checks
/// it against `jobs`, connects to the table, and serves events. A problem
/// found before the first event fails the function's start, with every
/// problem in the log.
pub async fn serve(jobs: Jobs, manifest: ManifestSource) -> Result<(), Error> {
    let host = Host::system();
    let log = host.log.clone();
    let handler = match start(jobs, manifest, host).await {
        Ok(handler) => Rc::new(handler),
        Err(e) => {
            // One JSON line for log queries; `main` returning the error
            // prints the plain text too (manifest diagnostics span lines).
            log(
                &json!({"level": "error", "msg": "init_failed", "error": e.to_string()})
                    .to_string(),
            );
            return Err(Box::new(e));
        }
    };
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let handler = handler.clone();
        async move {
            let inv = Invocation {
                deadline: deadline(event.context.deadline, Timestamp::now()),
                request_id: event.context.request_id,
            };
            handler.handle(&event.payload, &inv).await
        }
    }))
    .await
}

async fn start(
    jobs: Jobs,
    manifest: ManifestSource,
    host: Host,
) -> Result<Handler<DynamoStore>, InitError> {
    let manifest_env = std::env::var(MANIFEST_ENV).ok();
    let manifest = manifest.load(manifest_env.as_deref());
    let store = store_from_env().await;
    // Report the manifest's and the store's problems together.
    let (manifest, store) = match (manifest, store) {
        (Ok(m), Ok(s)) => (m, s),
        (m, s) => {
            let mut problems = Vec::new();
            for e in [m.err(), s.err()].into_iter().flatten() {
                problems.extend(e.problems);
            }
            return Err(InitError { problems });
        }
    };
    let clock = host.clock.clone();
    Handler::new(
        manifest,
        jobs,
        move |inv: &Invocation| {
            // The store stops retrying in time for the outcome to be written.
            let left = Duration::try_from(inv.deadline.duration_since(clock()))
                .unwrap_or(Duration::ZERO)
                .saturating_sub(RESERVE);
            store.clone().with_deadline(Instant::now() + left)
        },
        host,
    )
}

async fn store_from_env() -> Result<DynamoStore, InitError> {
    let table = std::env::var(TABLE_ENV).unwrap_or_default();
    if table.is_empty() {
        return Err(InitError::one(format!(
            "{TABLE_ENV} is not set: set it to the name of the DynamoDB table that holds the jobs' state"
        )));
    }
    if let Some(problem) = table_name_problem(&table) {
        return Err(InitError::one(format!("{TABLE_ENV}={table:?}: {problem}")));
    }
    let endpoint = std::env::var(ENDPOINT_ENV).ok().filter(|e| !e.is_empty());
    let mut url = format!("dynamodb://{table}");
    if let Some(endpoint) = &endpoint {
        url.push_str("?endpoint=");
        url.push_str(&encode(endpoint));
    }
    DynamoStore::connect(&url).await.map_err(|e| {
        let endpoint = endpoint
            .map(|e| format!(", {ENDPOINT_ENV}={e:?}"))
            .unwrap_or_default();
        InitError::one(format!(
            "the state table ({TABLE_ENV}={table:?}{endpoint}): {}",
            e.message
        ))
    })
}

/// DynamoDB's rule for table names: 3 to 255 of `A-Z a-z 0-9 _ - .`.
fn table_name_problem(name: &str) -> Option<String> {
    let len = name.chars().count();
    if !(3..=255).contains(&len) {
        return Some(format!(
            "a DynamoDB table name has 3 to 255 characters, this one {len}"
        ));
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|c| {
            format!("{c:?} cannot appear in a DynamoDB table name (letters, digits, _ - . only)")
        })
}

/// Percent-encodes the characters that would end a `dynamodb://` query
/// parameter early.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '%' => out.push_str("%25"),
            '&' => out.push_str("%26"),
            '=' => out.push_str("%3D"),
            '?' => out.push_str("%3F"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Deadlines before this (2001-09-09) are not instants but durations.
const EPOCH_MS_FLOOR: u64 = 1_000_000_000_000;

/// The invocation's deadline, from the Runtime API's
/// `Lambda-Runtime-Deadline-Ms` (milliseconds since the epoch). Emulators
/// differ: `cargo lambda watch` 1.9 sends the function's timeout there
/// (`600000`), which read as an instant is in 1970 and would leave no time
/// at all; a value that small is taken as a timeout from `now`.
fn deadline(ms: u64, now: Timestamp) -> Timestamp {
    if ms < EPOCH_MS_FLOOR {
        let timeout = SignedDuration::from_millis(i64::try_from(ms).unwrap_or(i64::MAX));
        return now.checked_add(timeout).unwrap_or(Timestamp::MAX);
    }
    i64::try_from(ms)
        .ok()
        .and_then(|ms| Timestamp::from_millisecond(ms).ok())
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_survive_the_url() {
        let url = format!(
            "dynamodb://table?endpoint={}",
            encode("http://127.0.0.1:5000/?a=b&c")
        );
        let parsed = crate::dynamo::parse_dynamodb_location(&url);
        assert_eq!(
            parsed.map(|l| l.endpoint),
            Ok(Some("http://127.0.0.1:5000/?a=b&c".to_string()))
        );
    }

    #[test]
    fn deadlines_are_instants_or_emulator_timeouts() {
        let now = Timestamp::from_millisecond(1_795_955_224_595).unwrap_or(Timestamp::UNIX_EPOCH);
        let real = deadline(1_795_955_284_595, now);
        assert_eq!(real.duration_since(now), SignedDuration::from_secs(60));
        let emulated = deadline(600_000, now);
        assert_eq!(emulated.duration_since(now), SignedDuration::from_secs(600));
    }

    #[test]
    fn table_names() {
        assert_eq!(table_name_problem("cronslot-state.v1"), None);
        assert!(table_name_problem("t1").is_some());
        assert!(table_name_problem("bad/name").is_some());
    }
}
