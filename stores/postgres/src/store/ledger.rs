//! The effect ledger: one row per effect with a revision, the kit's
//! read-decide-write loop over it, sweeping entries whose time is up, and
//! [`EffectLedger`] over those. Apart because it touches only the
//! `effects` table, never a job's record.

use super::*;

impl PgStore {
    /// Deletes at most `limit` ledger entries whose time is up before
    /// `older_than`, and says how many it deleted. An entry's time is up
    /// when a hold lapses (`expires_at` of an effect in progress: a
    /// missing entry reads like a lapsed hold) or, for a done effect, when
    /// the retention ([`PgOptions::effect_retention`], 30 days by default)
    /// after `done_at` has passed; the same rule as the DynamoDB store's
    /// TTL. Call it periodically with the current time and a limit that
    /// keeps each statement short (a few thousand); several callers at
    /// once skip each other's rows instead of waiting.
    pub async fn sweep_effects(
        &self,
        older_than: Timestamp,
        limit: u32,
    ) -> Result<u64, StoreError> {
        if limit == 0 {
            return Ok(0);
        }
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        self.shared
            .driver
            .run(async move {
                let doing = || "sweeping the effect ledger".to_string();
                let mut conn = shared.checkout().await?;
                let before = PgTime(older_than);
                let limit = i64::from(limit);
                let rows = conn
                    .query(
                        Phase::Write,
                        false,
                        &doing,
                        &sql.sweep,
                        &[(&before, Type::TIMESTAMPTZ), (&limit, Type::INT8)],
                    )
                    .await?;
                let count = match rows.first() {
                    Some(row) => conn.column::<i64>(row, 0, &doing)?,
                    None => 0,
                };
                Ok(u64::try_from(count).unwrap_or(0))
            })
            .await
    }

    /// [`PgStore::sweep_effects`] in batches of `batch` until a batch
    /// deletes fewer than that, or `max_batches` have run: what a periodic
    /// sweeper calls. Returns how many entries it deleted.
    pub async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        let mut total = 0;
        for _ in 0..max_batches {
            let deleted = self.sweep_effects(now, batch).await?;
            total += deleted;
            if deleted < u64::from(batch) {
                break;
            }
        }
        Ok(total)
    }

    /// Applies a ledger rule to the entry of `key` atomically: read,
    /// decide, write on condition that the entry is unchanged; a lost race
    /// decides again on what won.
    async fn ledger<T, F>(&self, key: &str, doing: &'static str, decide: F) -> Result<T, StoreError>
    where
        T: Clone + Send + 'static,
        F: Fn(Option<&EffectRecord>) -> (T, Option<EffectRecord>) + Send + 'static,
    {
        let (shared, sql, key) = (self.shared.clone(), self.sql.clone(), key.to_string());
        let retention = self.retention;
        self.shared
            .driver.run(async move {
                let shown = shared.shown.clone();
                let mut entry = PgEffect {
                    conn: shared.checkout().await?,
                    sql: &sql,
                    key: &key,
                    doing,
                    retention,
                };
                settle_effect(&mut entry, decide, |attempts| {
                    StoreError::unavailable(format!(
                        "PostgreSQL store {shown}: {doing} effect {key:?}: other writers changed the \
                         entry {attempts} times in a row (worth retrying)"
                    ))
                })
                .await
            })
            .await
    }
}

/// One effect's row, as the kit's ledger loop reads and writes it.
struct PgEffect<'a> {
    conn: Conn<'a>,
    sql: &'a Sql,
    key: &'a str,
    doing: &'static str,
    retention: Duration,
}

impl EffectEntry for PgEffect<'_> {
    type Rev = i64;

    async fn read(&mut self) -> Result<Option<Entry<i64>>, StoreError> {
        Ok(read_effect(&mut self.conn, self.sql, self.key)
            .await?
            .map(|(rev, record)| Entry { rev, record }))
    }

    async fn write(
        &mut self,
        current: Option<&Entry<i64>>,
        record: &EffectRecord,
    ) -> Result<(i64, Written<i64>), StoreError> {
        let (doing, key) = (self.doing, self.key);
        let doing = move || format!("{doing} effect {key:?}");
        let rev = current.map(|c| c.rev);
        let written = write_effect(
            &mut self.conn,
            self.sql,
            &doing,
            rev,
            record,
            self.retention,
        )
        .await?;
        let next = rev.map_or(1, |r| r.saturating_add(1));
        Ok(if written {
            (next, Written::Yes)
        } else {
            (
                next,
                Written::Lost {
                    current: None,
                    maybe_applied: false,
                },
            )
        })
    }
}

async fn read_effect(
    conn: &mut Conn<'_>,
    sql: &Sql,
    key: &str,
) -> Result<Option<(i64, EffectRecord)>, StoreError> {
    let doing = || format!("reading effect {key:?}");
    let rows = conn
        .query(
            Phase::Read,
            false,
            &doing,
            &sql.effect_get,
            &[(&key, Type::TEXT)],
        )
        .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let rev = conn.column::<i64>(row, 0, &doing)?;
    let text = conn.column::<String>(row, 1, &doing)?;
    let corrupt = |what: String| {
        StoreError::corrupt(format!(
            "PostgreSQL store {}: effect {key:?}: {what}",
            conn.store()
        ))
    };
    let record: EffectRecord = serde_json::from_str(&text)
        .map_err(|e| corrupt(format!("the record cannot be read ({e})")))?;
    if record.key != key {
        return Err(corrupt(format!(
            "the record belongs to effect {:?}",
            record.key
        )));
    }
    Ok(Some((rev, record)))
}

/// Writes `record` if the entry is still at `rev` (`None`: still absent).
/// `false` when another writer got there first.
async fn write_effect(
    conn: &mut Conn<'_>,
    sql: &Sql,
    doing: &(dyn Fn() -> String + Sync),
    rev: Option<i64>,
    record: &EffectRecord,
    retention: Duration,
) -> Result<bool, StoreError> {
    let text = serde_json::to_string(record).map_err(|e| {
        StoreError::other(format!(
            "PostgreSQL store {}: {}: encoding the record: {e}",
            conn.store(),
            doing()
        ))
    })?;
    let sweep_at = PgTime(record.sweep_at(retention));
    let key = record.key.as_str();
    let rows = match rev {
        None => {
            conn.query(
                Phase::Write,
                false,
                doing,
                &sql.effect_insert,
                &[
                    (&key, Type::TEXT),
                    (&text, Type::TEXT),
                    (&sweep_at, Type::TIMESTAMPTZ),
                ],
            )
            .await?
        }
        Some(rev) => {
            conn.query(
                Phase::Write,
                false,
                doing,
                &sql.effect_update,
                &[
                    (&key, Type::TEXT),
                    (&text, Type::TEXT),
                    (&sweep_at, Type::TIMESTAMPTZ),
                    (&rev, Type::INT8),
                ],
            )
            .await?
        }
    };
    Ok(!rows.is_empty())
}

impl EffectLedger for PgStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        let (k, owner) = (key.to_string(), owner.to_string());
        self.ledger(key, "beginning", move |current| {
            decide_begin(current, &k, &owner, fence, now, hold)
        })
        .await
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        let result = result.to_string();
        self.ledger(key, "finishing", move |current| {
            decide_finish(current, fence, &result, now)
        })
        .await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        let (shared, sql, key) = (self.shared.clone(), self.sql.clone(), key.to_string());
        self.shared
            .driver
            .run(async move {
                let mut conn = shared.checkout().await?;
                Ok(read_effect(&mut conn, &sql, &key).await?.map(|(_, r)| r))
            })
            .await
    }
}
