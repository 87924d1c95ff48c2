//! The effect ledger: one row per effect, read, decided by the core's
//! rules and written in the same `BEGIN IMMEDIATE` transaction, and
//! [`EffectLedger`] over those; and the sweep that deletes the entries
//! whose time is up, in bounded batches. Apart because it touches only the
//! `effects` table, never a job's record.

use cronslot_core::coord::DEFAULT_EFFECT_RETENTION;

use super::*;

/// The sweep time given to an entry whose record does not read (written by
/// something else, damaged): never. Reading it reports it; a sweep does not
/// delete what it cannot judge.
const NEVER: i64 = i64::MAX;

impl SqliteStore {
    fn begin_effect_now(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        let where_ = self.where_();
        let doing = || format!("beginning effect {key:?}");
        let mut conn = self.lock();
        let tx = begin_immediate(&mut conn, where_, &doing)?;
        let current = read_effect(&tx, where_, key)?;
        let (decision, write) = decide_begin(current.as_ref(), key, owner, fence, now, hold);
        if let Some(record) = write {
            write_effect(&tx, where_, &record, &doing)?;
            commit(tx, where_, &doing)?;
        }
        Ok(decision)
    }

    fn finish_effect_now(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        let where_ = self.where_();
        let doing = || format!("finishing effect {key:?}");
        let mut conn = self.lock();
        let tx = begin_immediate(&mut conn, where_, &doing)?;
        let current = read_effect(&tx, where_, key)?;
        let (decision, write) = decide_finish(current.as_ref(), fence, result, now);
        if let Some(record) = write {
            write_effect(&tx, where_, &record, &doing)?;
            commit(tx, where_, &doing)?;
        }
        Ok(decision)
    }

    fn read_effect_now(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        let conn = self.lock();
        read_effect(&conn, self.where_(), key)
    }

    /// Deletes the effect ledger's entries whose time is up at `now`
    /// ([`EffectRecord::sweep_at`]: a hold once it lapses, a done effect
    /// [`DEFAULT_EFFECT_RETENTION`] after it was done), in at most
    /// `max_batches` batches of at most `batch` entries, until a batch
    /// finds fewer; returns how many it deleted. Each batch is one short
    /// `BEGIN IMMEDIATE` transaction of two statements, each reading only
    /// its part of the index on the sweep time: the entries of store
    /// schema 2 without a sweep time (at most `batch`, given theirs from
    /// their record, one more statement each), then the entries due. An
    /// old store's entries thus join the rule a batch at a time, and a
    /// sweep never holds the file for long. What a sweep may not judge
    /// (a record that does not read) is kept. `async` as the store's other
    /// operations (and PostgreSQL's sweep) are; it runs inline.
    pub async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        let mut total = 0;
        for _ in 0..max_batches {
            let (timed, deleted) = self.sweep_batch(now, batch)?;
            total += deleted;
            if timed < u64::from(batch) && deleted < u64::from(batch) {
                break;
            }
        }
        Ok(total)
    }

    /// One batch of [`SqliteStore::sweep_expired`]: how many entries
    /// without a sweep time were given one, and how many were deleted.
    fn sweep_batch(&self, now: Timestamp, batch: u32) -> Result<(u64, u64), StoreError> {
        if batch == 0 {
            return Ok((0, 0));
        }
        let where_ = self.where_();
        let doing = || "sweeping the effect ledger".to_string();
        let fail = |e: rusqlite::Error| where_.error(&doing(), &e);
        let limit = i64::from(batch);
        let mut conn = self.lock();
        let tx = begin_immediate(&mut conn, where_, &doing)?;
        let untimed: Vec<(String, Value)> = {
            let mut stmt = tx
                .prepare_cached("SELECT key, record FROM effects WHERE sweep_at IS NULL LIMIT ?1")
                .map_err(fail)?;
            let rows = stmt
                .query_map([limit], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(fail)?;
            rows.collect::<rusqlite::Result<_>>().map_err(fail)?
        };
        self.count(1);
        for (key, record) in &untimed {
            let sweep_at = match record {
                Value::Text(text) => serde_json::from_str::<EffectRecord>(text)
                    .ok()
                    .filter(|r| r.key == *key)
                    .map_or(NEVER, |r| nanos(r.sweep_at(DEFAULT_EFFECT_RETENTION))),
                _ => NEVER,
            };
            tx.execute(
                "UPDATE effects SET sweep_at = ?2 WHERE key = ?1",
                rusqlite::params![key, sweep_at],
            )
            .map_err(fail)?;
            self.count(1);
        }
        let deleted = tx
            .execute(
                "DELETE FROM effects WHERE key IN (SELECT key FROM effects \
                 WHERE sweep_at <= ?1 ORDER BY sweep_at LIMIT ?2)",
                rusqlite::params![nanos(now), limit],
            )
            .map_err(fail)?;
        self.count(1);
        commit(tx, where_, &doing)?;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Ok((count(untimed.len()), count(deleted)))
    }
}

impl EffectLedger for SqliteStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.begin_effect_now(key, owner, fence, now, hold)
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        self.finish_effect_now(key, fence, result, now)
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.read_effect_now(key)
    }
}

fn read_effect(
    conn: &Connection,
    where_: Where<'_>,
    key: &str,
) -> Result<Option<EffectRecord>, StoreError> {
    let text: Option<Value> = conn
        .query_row("SELECT record FROM effects WHERE key = ?1", [key], |row| {
            row.get(0)
        })
        .optional()
        .map_err(|e| where_.error(&format!("reading effect {key:?}"), &e))?;
    let what = format!("effect {key:?}");
    let text = match text {
        None => return Ok(None),
        Some(Value::Text(text)) => text,
        Some(_) => return Err(where_.corrupt(&what, "the record is not text")),
    };
    let record: EffectRecord = serde_json::from_str(&text)
        .map_err(|e| where_.corrupt(&what, format!("the record cannot be read ({e})")))?;
    if record.key != key {
        return Err(where_.corrupt(
            &what,
            format!("the record belongs to effect {:?}", record.key),
        ));
    }
    Ok(Some(record))
}

fn write_effect(
    tx: &Transaction<'_>,
    where_: Where<'_>,
    record: &EffectRecord,
    doing: &dyn Fn() -> String,
) -> Result<(), StoreError> {
    let text = serde_json::to_string(record).map_err(|e| {
        StoreError::other(format!("{where_}: {}: encoding the record: {e}", doing()))
    })?;
    // Kept beside the record for a person with a table browser: a hold's
    // lapse. The sweep reads `sweep_at`, the instant the entry may go.
    let expires_at = match &record.state {
        EffectState::InProgress { expires_at } => Some(expires_at.to_string()),
        EffectState::Done { .. } => None,
    };
    let sweep_at = nanos(record.sweep_at(DEFAULT_EFFECT_RETENTION));
    let sql = format!(
        "INSERT INTO effects (key, record, expires_at, updated_at, sweep_at) \
         VALUES (?1, ?2, ?3, {SQL_NOW}, ?4) \
         ON CONFLICT (key) DO UPDATE SET record = excluded.record, \
         expires_at = excluded.expires_at, updated_at = excluded.updated_at, \
         sweep_at = excluded.sweep_at"
    );
    tx.execute(&sql, (&record.key, &text, expires_at, sweep_at))
        .map_err(|e| where_.error(&doing(), &e))?;
    Ok(())
}
