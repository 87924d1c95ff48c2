//! The effect ledger: one row per effect, read, decided by the core's
//! rules and written in the same `BEGIN IMMEDIATE` transaction, and
//! [`EffectLedger`] over those. Apart because it touches only the
//! `effects` table, never a job's record.

use super::*;

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
    // Kept beside the record so that expired holds can be found with SQL;
    // a done effect never expires.
    let expires_at = match &record.state {
        EffectState::InProgress { expires_at } => Some(expires_at.to_string()),
        EffectState::Done { .. } => None,
    };
    let sql = format!(
        "INSERT INTO effects (key, record, expires_at, updated_at) VALUES (?1, ?2, ?3, {SQL_NOW}) \
         ON CONFLICT (key) DO UPDATE SET record = excluded.record, \
         expires_at = excluded.expires_at, updated_at = excluded.updated_at"
    );
    tx.execute(&sql, (&record.key, &text, expires_at))
        .map_err(|e| where_.error(&doing(), &e))?;
    Ok(())
}
