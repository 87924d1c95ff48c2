//! Keyed runs enqueued inside an application's own transaction
//! ([`SqliteStore::enqueue_run_in`]), on its own connection to the store's
//! file: the read and the conditional write of records.rs, around the
//! core's decisions. The run commits or rolls back with the application's
//! rows.

use cronslot_core::coord::decide::{self, Enqueued};
use cronslot_core::coord::{CoordError, RunError};
use cronslot_core::manifest::JobTemplate;
use cronslot_core::schedules::{RunRequest, ScheduleKey, record_name};

use super::records::{read_state, write_state};
use super::*;

/// How many times an enqueue decides again after its write found the
/// record changed (possible only when the transaction read before it took
/// the write lock, and then SQLite reports the lock busy instead).
const MAX_ATTEMPTS: u32 = 4;

impl SqliteStore {
    /// Enqueues `request` as the keyed run `key` of the dynamic job
    /// `template` at `now` (the caller's clock, as every operation of this
    /// store), inside the application's transaction `tx` on a connection
    /// of its own to this store's file: the run exists if and only if `tx`
    /// commits.
    ///
    /// One read of the record, the core's [`decide::enqueue_run`], and at
    /// most one conditional write: the statements and the record format
    /// of the store's own writes, so that the runner's tick finds the run
    /// by its wake once `tx` commits. An enqueue costs 2 statements (a
    /// read and a write); a key that names the same run already 1 (the
    /// read: [`Enqueued::Existing`]); a key that names a run with another
    /// payload or `at` is refused with nothing written
    /// ([`RunRefusal::Differs`]). Counted in [`SqliteStore::statements`].
    ///
    /// Begin `tx` with [`TransactionBehavior::Immediate`] (or write the
    /// application's rows before enqueueing): SQLite has one writer at a
    /// time, so the transaction then holds the write lock from its first
    /// statement and the read and the write see the same record; two
    /// transactions enqueueing one key run one after the other, and the
    /// second answers the first's run. A deferred transaction that reads
    /// before its first write may find, when it writes, that another
    /// connection wrote meanwhile: SQLite answers busy at once, reported
    /// as [`StoreErrorKind::Unavailable`]: roll back and run the
    /// transaction again. Set the connection's `busy_timeout` (the store
    /// uses [`DEFAULT_BUSY_TIMEOUT`]) so that it waits for the runner's
    /// short transactions.
    ///
    /// Refused, with nothing written, when `tx` is not on this store's
    /// file (an in-memory store is never shared).
    pub fn enqueue_run_in(
        &self,
        tx: &Transaction<'_>,
        template: &JobTemplate,
        key: &ScheduleKey,
        request: &RunRequest,
        now: Timestamp,
    ) -> Result<Enqueued, RunError> {
        let where_ = self.where_();
        self.check_same_file(tx)?;
        let job = record_name(&template.name, key);
        self.count(1);
        let mut current = read_state(tx, where_, &job).map_err(in_transaction)?;
        for _ in 0..MAX_ATTEMPTS {
            let expected = current.as_ref().map(|v| v.version);
            let (enqueued, next) =
                decide::enqueue_sealed(template, key, current.map(|v| v.value), request, now)
                    .map_err(RunError::Refused)?;
            let Some(next) = next else {
                return Ok(enqueued);
            };
            self.count(1);
            let text = encode_state(&next);
            let written = write_state(tx, where_, &job, &text, next.wake_at, expected)
                .map_err(in_transaction)?;
            if written.is_some() {
                return Ok(enqueued);
            }
            // The record changed since the read: decide again over it.
            self.count(1);
            current = read_state(tx, where_, &job).map_err(in_transaction)?;
        }
        Err(CoordError::Contention {
            attempts: MAX_ATTEMPTS,
        }
        .into())
    }

    /// Refuses a transaction on another database than this store's file:
    /// the run would be written where no runner looks for it.
    fn check_same_file(&self, tx: &Transaction<'_>) -> Result<(), StoreError> {
        let where_ = self.where_();
        let theirs = tx.path().filter(|p| !p.is_empty());
        let same = match (self.inner.path.as_deref(), theirs) {
            (Some(ours), Some(theirs)) => {
                let (ours, theirs) = (ours.canonicalize(), Path::new(theirs).canonicalize());
                matches!((ours, theirs), (Ok(a), Ok(b)) if a == b)
            }
            _ => false,
        };
        if same {
            return Ok(());
        }
        let theirs = theirs.map_or("an in-memory or temporary database".to_string(), |p| {
            format!("the database {p}")
        });
        Err(StoreError::other(format!(
            "{where_}: enqueueing a run in the application's transaction: the transaction is on \
             {theirs}, not on this store's file: open the application's connection on the \
             store's file"
        )))
    }
}

/// An error of a statement in the application's transaction, saying what
/// becomes of the transaction: nothing of it is committed, so whatever the
/// error, the application rolls it back; when it is worth retrying, it
/// runs the whole transaction again.
fn in_transaction(mut e: StoreError) -> StoreError {
    let advice = if e.kind == StoreErrorKind::Unavailable {
        "roll back the application's transaction and run it again (worth retrying)"
    } else {
        "roll back the application's transaction"
    };
    e.message = format!("{} (in the application's transaction): {advice}", e.message);
    e
}
