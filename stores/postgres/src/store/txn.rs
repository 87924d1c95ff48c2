//! Keyed runs enqueued inside an application's own transaction
//! ([`PgStore::enqueue_run_in`]): the record's read and conditional write
//! of records.rs, sent on the application's `Transaction` instead of a
//! connection of the pool, around the core's decisions. The run commits
//! or rolls back with the application's rows.

use cronslot_core::coord::decide::{self, Enqueued};
use cronslot_core::coord::{CoordError, RunError};
use cronslot_core::manifest::JobTemplate;
use cronslot_core::schedules::{RunRequest, ScheduleKey, record_name};
use cronslot_store_kit::Counters;
use tokio_postgres::Transaction;
use tokio_postgres::types::ToSql;

use super::records::{Notify, put_state, read_state};
use super::*;
use crate::error::classify_in_transaction;

/// How many times an enqueue decides again after its write lost to a
/// concurrent transaction's before it gives up (each loss means another
/// transaction changed the record; two in a row are already rare).
const MAX_ATTEMPTS: u32 = 4;

/// The application's transaction as a [`Session`]: statements counted in
/// the store's [`RequestCounts`], errors classified for a transaction
/// that has not committed.
struct InTransaction<'a, 't> {
    tx: &'a Transaction<'t>,
    shown: &'a str,
    counts: &'a Counters,
}

impl Session for InTransaction<'_, '_> {
    fn store(&self) -> &str {
        self.shown
    }

    async fn statement(
        &mut self,
        phase: Phase,
        doing: &(dyn Fn() -> String + Sync),
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>, StoreError> {
        self.counts.request(false, phase == Phase::Write);
        self.tx.query_typed(sql, params).await.map_err(|e| {
            let doing = format!("{} in the application's transaction", doing());
            classify_in_transaction(self.shown, &doing, &e).with_source(e)
        })
    }
}

impl PgStore {
    /// Enqueues `request` as the keyed run `key` of the dynamic job
    /// `template`, inside the application's transaction `tx` (on a
    /// connection of its own to the store's database, not one of the
    /// store's pool): the run exists if and only if `tx` commits.
    ///
    /// One read of the record with the server's clock (the instant the
    /// run is enqueued at, whatever [`PgStore::judge_by`] says: there is
    /// no caller's instant here), the core's [`decide::enqueue_run`], and at
    /// most one conditional write: the statements of the store's own
    /// reads and writes, so the record is what the store writes (the
    /// runner's tick finds it by its wake once `tx` commits). An enqueue
    /// costs 1 read and 1 write; a key that names the same run already 1
    /// read and no write ([`Enqueued::Existing`]); a key that names a run
    /// with another payload or `at` is refused ([`RunRefusal::Differs`],
    /// nothing written).
    ///
    /// Concurrency: under READ COMMITTED (PostgreSQL's default), a
    /// transaction that enqueues a key another open transaction has just
    /// enqueued waits for it; if it commits, this one reads its run and
    /// answers `Existing` (or `Differs`), if it rolls back, this one
    /// creates the run. Under REPEATABLE READ or SERIALIZABLE the wait
    /// ends in a serialization failure instead: a
    /// [`StoreErrorKind::Unavailable`](cronslot_core::coord::StoreErrorKind::Unavailable)
    /// error that asks to roll back and run the transaction again.
    ///
    /// After any error the transaction is aborted (PostgreSQL refuses its
    /// later statements): roll it back. A lost connection is never
    /// ambiguous here: the transaction had not committed, so the server
    /// rolls it back. The statements run on the application's connection
    /// with its settings: its `statement_timeout` bounds them (a client
    /// from [`PgStore::connect_client`] has the store's).
    pub async fn enqueue_run_in(
        &self,
        tx: &Transaction<'_>,
        template: &JobTemplate,
        key: &ScheduleKey,
        request: &RunRequest,
    ) -> Result<Enqueued, RunError> {
        let job = record_name(&template.name, key);
        let mut session = InTransaction {
            tx,
            shown: &self.shared.shown,
            counts: &self.shared.counts,
        };
        // The server's clock judges (see above): the record's instants are
        // then the ones the store's readers compare with.
        let (mut current, now) = read_state(&mut session, &self.sql, &job).await?;
        for _ in 0..MAX_ATTEMPTS {
            let expected = current.as_ref().map(|v| v.version);
            let (enqueued, next) =
                decide::enqueue_sealed(template, key, current.map(|v| v.value), request, now)
                    .map_err(RunError::Refused)?;
            let Some(next) = next else {
                return Ok(enqueued);
            };
            let text = encode_state(&next);
            let wake = next.wake_at.map(PgTime);
            let written = put_state(
                &mut session,
                &self.sql,
                &job,
                &text,
                wake,
                expected,
                Notify::InStatement,
            )
            .await?;
            match written.0 {
                PutResult::Written(_) => return Ok(enqueued),
                // Another transaction wrote the record and committed; the
                // record it wrote, read after the wait: decide again.
                PutResult::Conflict(stored) => current = stored.map(|b| *b),
            }
        }
        Err(CoordError::Contention {
            attempts: MAX_ATTEMPTS,
        }
        .into())
    }

    /// A new connection to the store's database with the store's settings
    /// (host, user, password, TLS, timeouts), outside its pool: the
    /// application's own, for transactions that write its rows and
    /// enqueue runs together ([`PgStore::enqueue_run_in`]). An
    /// application with a client of its own (its pool's) uses that
    /// instead.
    ///
    /// The store's background thread drives the connection: keep the
    /// store (or a clone) while the client is in use. Dropping the client
    /// closes the connection.
    pub async fn connect_client(&self) -> Result<tokio_postgres::Client, StoreError> {
        let shared = self.shared.clone();
        self.shared
            .driver
            .run(async move { shared.connect().await })
            .await
    }
}
