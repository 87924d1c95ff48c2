//! The effect ledger: one hash per effect with a revision and an expiry,
//! the kit's read-decide-write loop over it, how long an entry is kept,
//! and [`EffectLedger`] over those. Apart because it touches only the
//! effects' keys, never a job's record.

use super::*;

/// The longest expiry given to an effect entry: a hundred years, well
/// inside what `PEXPIRE` accepts.
const MAX_TTL_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

impl RedisStore {
    /// Applies a ledger rule to the entry of `key` atomically: read,
    /// decide, write on condition that the entry is unchanged (one script);
    /// a lost race decides again on what won (the kit's loop).
    async fn ledger<T, F>(
        &self,
        key: &str,
        doing: &'static str,
        now: Timestamp,
        decide: F,
    ) -> Result<T, StoreError>
    where
        T: Clone + Send + 'static,
        F: Fn(Option<&EffectRecord>) -> (T, Option<EffectRecord>) + Send + 'static,
    {
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (redis_key, key) = (self.keys.effect(key), key.to_string());
        let retention = self.retention;
        let replicas = Replicas::of(self.location());
        self.shared
            .driver
            .run(async move {
                let mut entry = RedisEffect {
                    shared: &shared,
                    scripts: &scripts,
                    redis_key: &redis_key,
                    key: &key,
                    doing,
                    now,
                    retention,
                    replicas,
                };
                settle_effect(&mut entry, decide, |attempts| {
                    StoreError::unavailable(format!(
                        "Redis store {}: {doing} effect {key:?}: other writers changed the entry \
                         {attempts} times in a row (worth retrying)",
                        shared.shown
                    ))
                })
                .await
            })
            .await
    }
}

/// One effect's entry, as the kit's ledger loop reads and writes it: each
/// write one script, on condition of the entry's revision.
struct RedisEffect<'a> {
    shared: &'a Shared,
    scripts: &'a Arc<Scripts>,
    redis_key: &'a str,
    key: &'a str,
    doing: &'static str,
    now: Timestamp,
    retention: Duration,
    replicas: Replicas,
}

impl EffectEntry for RedisEffect<'_> {
    type Rev = u64;

    async fn read(&mut self) -> Result<Option<Entry<u64>>, StoreError> {
        Ok(read_effect(self.shared, self.redis_key, self.key)
            .await?
            .map(|(rev, record)| Entry { rev, record }))
    }

    async fn write(
        &mut self,
        current: Option<&Entry<u64>>,
        record: &EffectRecord,
    ) -> Result<(u64, Written<u64>), StoreError> {
        let (doing, key) = (self.doing, self.key);
        let doing = move || format!("{doing} effect {key:?}");
        let text = serde_json::to_string(record).map_err(|e| {
            StoreError::other(format!(
                "Redis store {}: {}: encoding the entry: {e}",
                self.shared.shown,
                doing()
            ))
        })?;
        let rev = current.map(|c| c.rev);
        let expected = rev.map(|r| r.to_string()).unwrap_or_default();
        let next_rev = rev.unwrap_or(0).saturating_add(1);
        let next = next_rev.to_string();
        let ttl = ttl_ms(record, self.now, self.retention).to_string();
        let replicas = self.replicas;
        let (written, acked): (i64, Option<u32>) = self
            .shared
            .request(Phase::Write, false, &doing, |mut conn| {
                let (scripts, redis_key) = (self.scripts.clone(), self.redis_key.to_string());
                async move {
                    let written: i64 = scripts
                        .effect_put
                        .key(&redis_key)
                        .arg(&expected)
                        .arg(&next)
                        .arg(&text)
                        .arg(&ttl)
                        .invoke_async(&mut conn)
                        .await?;
                    let acked = replicas.wait_if(written == 1, &mut conn).await?;
                    Ok((written, acked))
                }
            })
            .await?;
        replicas.check(&self.shared.shown, &doing(), acked)?;
        Ok(if written == 1 {
            (next_rev, Written::Yes)
        } else {
            (
                next_rev,
                Written::Lost {
                    current: None,
                    maybe_applied: false,
                },
            )
        })
    }
}

/// The entry of effect `key` (at `redis_key`) and its revision.
async fn read_effect(
    shared: &Shared,
    redis_key: &str,
    key: &str,
) -> Result<Option<(u64, EffectRecord)>, StoreError> {
    let doing = || format!("reading effect {key:?}");
    let fields: Vec<Option<String>> = shared
        .request(Phase::Read, false, &doing, |mut conn| async move {
            redis::cmd("HMGET")
                .arg(redis_key)
                .arg("rev")
                .arg("r")
                .query_async(&mut conn)
                .await
        })
        .await?;
    let corrupt = |what: String| {
        StoreError::corrupt(format!(
            "Redis store {}: effect {key:?}: {what}",
            shared.shown
        ))
    };
    let (rev, text) = match fields.as_slice() {
        [None, None] => return Ok(None),
        [Some(rev), Some(text)] => (rev, text),
        _ => {
            return Err(corrupt(
                "the entry holds a revision without a record or a record without a revision"
                    .to_string(),
            ));
        }
    };
    let rev = rev
        .parse::<u64>()
        .map_err(|_| corrupt(format!("revision {rev:?} is not a number")))?;
    let record: EffectRecord = serde_json::from_str(text)
        .map_err(|e| corrupt(format!("the record cannot be read ({e})")))?;
    if record.key != key {
        return Err(corrupt(format!(
            "the record belongs to effect {:?}",
            record.key
        )));
    }
    Ok(Some((rev, record)))
}

/// How long a ledger entry written at `now` is kept, in milliseconds: a
/// done effect `retention` after it was done, a hold `retention` after it
/// lapses. Relative to `now`, so that the server's clock and the caller's
/// need not agree; at least a millisecond.
fn ttl_ms(record: &EffectRecord, now: Timestamp, retention: Duration) -> u64 {
    let until = match &record.state {
        EffectState::InProgress { expires_at } => *expires_at,
        EffectState::Done { done_at, .. } => *done_at,
    };
    let ahead = if until > now {
        Duration::try_from(until.duration_since(now)).unwrap_or(Duration::MAX)
    } else {
        Duration::ZERO
    };
    let total = ahead.saturating_add(retention).as_millis();
    u64::try_from(total)
        .unwrap_or(u64::MAX)
        .clamp(1, MAX_TTL_MS)
}

impl EffectLedger for RedisStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        let (k, owner) = (key.to_string(), owner.to_string());
        self.ledger(key, "beginning", now, move |current| {
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
        self.ledger(key, "finishing", now, move |current| {
            decide_finish(current, fence, &result, now)
        })
        .await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        let (shared, redis_key, key) =
            (self.shared.clone(), self.keys.effect(key), key.to_string());
        self.shared
            .driver
            .run(async move {
                Ok(read_effect(&shared, &redis_key, &key)
                    .await?
                    .map(|(_, r)| r))
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_after_their_hold_or_done_plus_retention() {
        let now: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let record = |state| EffectRecord {
            key: "k".into(),
            owner: "w".into(),
            fence: 1,
            state,
        };
        let day = Duration::from_secs(86_400);
        let held = record(EffectState::InProgress {
            expires_at: "2026-01-05T00:01:00Z".parse().unwrap(),
        });
        assert_eq!(ttl_ms(&held, now, day), 86_400_000 + 60_000);
        let done = record(EffectState::Done {
            result: "r".into(),
            done_at: now,
        });
        assert_eq!(ttl_ms(&done, now, day), 86_400_000);
        // A lapsed hold: the retention from now; never zero, never past
        // what PEXPIRE takes.
        let lapsed = record(EffectState::InProgress {
            expires_at: "2026-01-04T00:00:00Z".parse().unwrap(),
        });
        assert_eq!(ttl_ms(&lapsed, now, Duration::ZERO), 1);
        let far = record(EffectState::InProgress {
            expires_at: Timestamp::MAX,
        });
        assert_eq!(ttl_ms(&far, now, Duration::MAX), MAX_TTL_MS);
    }
}
