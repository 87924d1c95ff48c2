//! Orders and their confirmations: `POST /orders` stores the order's row
//! and enqueues its confirmation (a keyed run of the dynamic job
//! `order-confirmation`, key `order-ID`) in one transaction of the
//! service's own connection to the store's database. If the transaction
//! commits, both exist; if anything fails before the commit (a refused
//! enqueue, an error, the process killed), neither does. No outbox table,
//! no second system to keep in step.
//!
//! Sending the same order again is safe: its row is kept (`ON CONFLICT DO
//! NOTHING`) and the key names the run already there, so nothing is
//! confirmed twice. The same id with another total is refused (409).

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use cronslot_core::coord::RunError;
use cronslot_core::coord::decide::{Enqueued, RunRefusal};
use cronslot_core::manifest::JobTemplate;
use cronslot_core::schedules::{RunRequest, ScheduleKey};
use cronslot_postgres::PgStore;
use cronslot_postgres::tokio_postgres::Client;
use cronslot_sqlite::SqliteStore;
use cronslot_sqlite::rusqlite::{Connection, TransactionBehavior};
use cronslot_stores::AnyStore;

/// The dynamic job whose keyed runs confirm orders.
pub const CONFIRMATION_JOB: &str = "order-confirmation";

/// An order, as posted.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Order {
    pub id: i64,
    pub total_cents: i64,
}

/// Where orders are written: the store's own database, on a connection of
/// the service's own.
pub enum Orders {
    /// One client for the service's orders, opened with the store's
    /// settings (a real service would take one from its own pool);
    /// boxed, being much larger than the other variants.
    Postgres {
        store: PgStore,
        client: Box<tokio::sync::Mutex<Client>>,
    },
    /// A connection per order to the store's file.
    Sqlite { store: SqliteStore },
    /// A store without SQL transactions (Redis, DynamoDB).
    Unsupported { kind: &'static str },
}

/// Why an order was not placed: the HTTP status and what to say.
pub struct Failure {
    pub status: StatusCode,
    pub message: String,
}

fn unavailable(message: String) -> Failure {
    Failure {
        status: StatusCode::SERVICE_UNAVAILABLE,
        message,
    }
}

const CREATE_PG: &str = "BEGIN;
SELECT pg_advisory_xact_lock(hashtext('cronslot fleet example: orders'));
CREATE TABLE IF NOT EXISTS orders (
    id bigint PRIMARY KEY,
    total_cents bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMIT;";

const CREATE_SQLITE: &str = "CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY,
    total_cents INTEGER NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT";

impl Orders {
    /// The service's connection to the store's database, and its `orders`
    /// table (created if missing; servers starting at once create it
    /// once).
    pub async fn open(store: &AnyStore) -> Result<Orders, String> {
        match store {
            AnyStore::Postgres(pg) => {
                let client = pg.connect_client().await.map_err(|e| e.message)?;
                client
                    .batch_execute(CREATE_PG)
                    .await
                    .map_err(|e| format!("creating the orders table: {e}"))?;
                Ok(Orders::Postgres {
                    store: pg.clone(),
                    client: Box::new(tokio::sync::Mutex::new(client)),
                })
            }
            AnyStore::Sqlite(sqlite) => {
                let conn = sqlite_connection(sqlite)?;
                conn.execute_batch(CREATE_SQLITE)
                    .map_err(|e| format!("creating the orders table: {e}"))?;
                Ok(Orders::Sqlite {
                    store: sqlite.clone(),
                })
            }
            other => Ok(Orders::Unsupported { kind: other.kind() }),
        }
    }

    /// Stores `order` and enqueues its confirmation, in one transaction.
    pub async fn place(
        &self,
        template: Arc<JobTemplate>,
        order: Order,
    ) -> Result<Enqueued, Failure> {
        let key = ScheduleKey::new(format!("order-{}", order.id)).map_err(|e| Failure {
            status: StatusCode::BAD_REQUEST,
            message: format!("order {}: {e}", order.id),
        })?;
        let body = serde_json::json!({
            "payload": { "order": order.id, "total_cents": order.total_cents },
        });
        let request = RunRequest::from_json(&body.to_string()).map_err(|problems| Failure {
            status: StatusCode::BAD_REQUEST,
            message: problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        })?;
        match self {
            Orders::Postgres { store, client } => {
                place_pg(store, client, &template, &key, &request, &order).await
            }
            Orders::Sqlite { store } => {
                let store = store.clone();
                // rusqlite blocks: on a thread of the runtime's blocking pool.
                tokio::task::spawn_blocking(move || {
                    place_sqlite(&store, &template, &key, &request, &order)
                })
                .await
                .map_err(|e| unavailable(format!("the order's transaction did not finish: {e}")))?
            }
            Orders::Unsupported { kind } => Err(Failure {
                status: StatusCode::NOT_IMPLEMENTED,
                message: format!(
                    "orders need a SQL store (postgres:// or sqlite:) to share a transaction \
                     with their confirmation; this service runs on {kind}"
                ),
            }),
        }
    }
}

async fn place_pg(
    store: &PgStore,
    client: &tokio::sync::Mutex<Client>,
    template: &JobTemplate,
    key: &ScheduleKey,
    request: &RunRequest,
    order: &Order,
) -> Result<Enqueued, Failure> {
    let mut client = client.lock().await;
    if client.is_closed() {
        *client = store
            .connect_client()
            .await
            .map_err(|e| unavailable(e.message))?;
    }
    let tx = client
        .transaction()
        .await
        .map_err(|e| unavailable(format!("orders: beginning a transaction: {e}")))?;
    tx.execute(
        "INSERT INTO orders (id, total_cents) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
        &[&order.id, &order.total_cents],
    )
    .await
    .map_err(|e| unavailable(format!("orders: storing order {}: {e}", order.id)))?;
    // An error or a refusal drops `tx` unfinished: the server rolls the
    // order's row back with it.
    let enqueued = store
        .enqueue_run_in(&tx, template, key, request)
        .await
        .map_err(refused)?;
    tx.commit().await.map_err(|e| {
        unavailable(format!(
            "orders: committing order {}: {e}; if the commit's answer was lost, sending the \
             order again is safe",
            order.id
        ))
    })?;
    Ok(enqueued)
}

fn sqlite_connection(store: &SqliteStore) -> Result<Connection, String> {
    let path = store
        .path()
        .ok_or("an in-memory SQLite store shares no file with the service's connection")?;
    let conn =
        Connection::open(path).map_err(|e| format!("orders: opening {}: {e}", path.display()))?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(|e| format!("orders: setting the busy timeout: {e}"))?;
    Ok(conn)
}

fn place_sqlite(
    store: &SqliteStore,
    template: &JobTemplate,
    key: &ScheduleKey,
    request: &RunRequest,
    order: &Order,
) -> Result<Enqueued, Failure> {
    let mut conn = sqlite_connection(store).map_err(unavailable)?;
    // IMMEDIATE: the write lock from the first statement, so the run's
    // record read is the one written over.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| unavailable(format!("orders: beginning a transaction: {e}")))?;
    tx.execute(
        "INSERT INTO orders (id, total_cents) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING",
        (order.id, order.total_cents),
    )
    .map_err(|e| unavailable(format!("orders: storing order {}: {e}", order.id)))?;
    let enqueued = store
        .enqueue_run_in(&tx, template, key, request, jiff::Timestamp::now())
        .map_err(refused)?;
    tx.commit()
        .map_err(|e| unavailable(format!("orders: committing order {}: {e}", order.id)))?;
    Ok(enqueued)
}

/// A refused or failed enqueue, as the HTTP answer.
fn refused(e: RunError) -> Failure {
    let status = match &e {
        RunError::Refused(RunRefusal::Differs { .. } | RunRefusal::Schedule { .. }) => {
            StatusCode::CONFLICT
        }
        RunError::Refused(RunRefusal::Spec(_)) => StatusCode::BAD_REQUEST,
        RunError::Coord(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    Failure {
        status,
        message: format!("the order's confirmation: {e}"),
    }
}
