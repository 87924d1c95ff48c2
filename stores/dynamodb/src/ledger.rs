//! The effect ledger: one item per effect, read, decided by the core's
//! rules and written by the kit's loop on condition of its revision.

use super::*;

impl DynamoStore {
    async fn read_effect_raw(&self, key: &str) -> Result<Option<StoredEffect>, StoreError> {
        let pk = self.effect_pk_checked(key)?;
        let what = self.what(&format!("reading effect {key:?}"));
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key_of(pk.clone())))
                .consistent_read(true)
                .send()
        })
        .await
        .map_err(store_error)?;
        match out.item() {
            Some(item) if !item.is_empty() => Ok(Some(read_effect_item(&self.table, key, item)?)),
            _ => Ok(None),
        }
    }

    fn effect_pk_checked(&self, key: &str) -> Result<String, StoreError> {
        let pk = effect_pk(key);
        if pk.len() > MAX_PARTITION_KEY_BYTES {
            return Err(StoreError::other(format!(
                "DynamoDB table {}: effect key {key:?} is too long ({} bytes with its prefix; DynamoDB allows {MAX_PARTITION_KEY_BYTES})",
                self.table,
                pk.len()
            )));
        }
        Ok(pk)
    }

    /// The effect ledger's read-decide-write (the kit's loop): `decide`
    /// sees the current entry and says what to answer and what to store;
    /// the store happens only if the entry is still the one decided on.
    async fn ledger_update<D: Clone>(
        &self,
        key: &str,
        doing: &str,
        decide: impl Fn(Option<&EffectRecord>) -> (D, Option<EffectRecord>),
    ) -> Result<D, StoreError> {
        self.effect_pk_checked(key)?;
        let what = self.what(&format!("{doing} effect {key:?}"));
        let mut entry = DynamoEffect {
            store: self,
            key,
            what: &what,
        };
        settle_effect(&mut entry, decide, |attempts| {
            StoreError::unavailable(format!(
                "{what}: the entry changed under {attempts} writes in a row; too many workers on one effect"
            ))
        })
        .await
    }
}

/// One effect's item, as the kit's ledger loop reads and writes it: each
/// write a conditional `PutItem` on the item's `rev`, which hands back the
/// item that beat it.
struct DynamoEffect<'a> {
    store: &'a DynamoStore,
    key: &'a str,
    what: &'a str,
}

impl EffectEntry for DynamoEffect<'_> {
    type Rev = u64;

    async fn read(&mut self) -> Result<Option<Entry<u64>>, StoreError> {
        Ok(self.store.read_effect_raw(self.key).await?.map(|e| Entry {
            rev: e.rev,
            record: e.record,
        }))
    }

    async fn write(
        &mut self,
        current: Option<&Entry<u64>>,
        record: &EffectRecord,
    ) -> Result<(u64, Written<u64>), StoreError> {
        let what = self.what;
        let text = serde_json::to_string(record)
            .map_err(|e| StoreError::other(format!("{what}: encoding the record: {e}")))?;
        // DynamoDB refuses placeholders the expression does not use, and an
        // empty value map.
        let (rev, condition, names, values) = match current {
            None => (
                1,
                format!("attribute_not_exists(#{PK})"),
                HashMap::from([(format!("#{PK}"), PK.to_string())]),
                None,
            ),
            Some(c) => (
                c.rev.saturating_add(1),
                format!("#{REV} = :rev"),
                HashMap::from([(format!("#{REV}"), REV.to_string())]),
                Some(HashMap::from([(
                    ":rev".to_string(),
                    AttributeValue::N(c.rev.to_string()),
                )])),
            ),
        };
        let store = self.store;
        let item = effect_item(record, &text, rev, store.effect_retention);
        let result = call(store.budget(), what, Kind::Write, no_more, || {
            store
                .conditional_put(&item, &condition, &names, &values)
                .send()
        })
        .await;
        let written = match result {
            Ok(_) => Written::Yes,
            Err(CallError::Service {
                err: PutItemError::ConditionalCheckFailedException(e),
                maybe_applied,
                ..
            }) => {
                let current = match e.item().filter(|i| !i.is_empty()) {
                    Some(item) => Some(read_effect_item(&store.table, self.key, item)?),
                    None => None,
                };
                Written::Lost {
                    current: Some(current.map(|c| Entry {
                        rev: c.rev,
                        record: c.record,
                    })),
                    maybe_applied,
                }
            }
            // The write may have landed: the loop reads back and judges
            // again (and recognises our own record).
            Err(CallError::Store(e)) if e.kind == StoreErrorKind::Ambiguous => Written::InDoubt(e),
            Err(e) => return Err(store_error(e)),
        };
        Ok((rev, written))
    }
}

impl EffectLedger for DynamoStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.ledger_update(key, "beginning", |current| {
            decide_begin(current, key, owner, fence, now, hold)
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
        self.ledger_update(key, "finishing", |current| {
            decide_finish(current, fence, result, now)
        })
        .await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        Ok(self.read_effect_raw(key).await?.map(|e| e.record))
    }
}
