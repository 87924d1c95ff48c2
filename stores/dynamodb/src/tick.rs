//! The tick index (docs/design.md §11) in the wake index.

use super::*;

/// The tick index (docs/design.md §11) in the wake index [`WAKE_INDEX`].
///
/// A job's wake travels in its state item (`wk` and `wake`, written by the
/// same conditional write as the record, absent when the record has no
/// wake), so the index is only ever behind the records, never ahead or
/// apart. The tick mark is one item (`tick#mark`) that is in the index
/// too, with the lowest sort value ([`MARK_SORT`]) and its `mark`
/// projected: one `Query` of `wk = "w" AND wake <= now` returns the mark
/// first, then the woken jobs, earliest wake first.
///
/// **Eventual consistency.** A global secondary index cannot be read
/// consistently; it trails the table by a fraction of a second. Neither
/// way it can trail loses anything:
/// - a stale (earlier) mark makes the tick's window longer: the jobs it
///   plans again were served already, and their claims find the slots
///   resolved (the compare-and-set refuses a second run);
/// - a stale wake that a later write removed wakes a job with nothing to
///   do: its claim reads the record and finds nothing;
/// - a wake that has not arrived yet stays in the index: the next tick
///   serves it.
///
/// The one stale answer that would cost something is a missing mark (the
/// first `tick_end` of a store not yet in the index): the tick would take
/// itself for the store's first and plan an empty window, skipping the
/// slots since that first mark. So when the index shows no mark,
/// `tick_start` reads the mark's item consistently (a second request, made
/// only until the store's first mark has reached the index).
///
/// **Throughput.** The index has one partition key value, so every write
/// that sets, moves or clears a wake (a claim and its completion, about
/// two per run) lands on one index partition, which DynamoDB documents at
/// about 1,000 write units a second; beyond a few hundred runs a second,
/// throttled index writes slow the table's writes (retried here like any
/// throttling). More shard values would spread them, at the price of one
/// `Query` per shard.
///
/// **Pages.** A `Query` page holds at most 1 MB; the index projects a
/// job's key and the two small index attributes, so the runtime's limit
/// (`MAX_WOKEN_PER_TICK`, 1000) fits in one page for job names of up to
/// about 1 KB. If a page ends early anyway, `tick_start` stops there: the
/// jobs left out have later wakes than those returned and stay in the
/// index, so the next tick serves them, exactly as for the jobs beyond
/// the limit.
impl TickIndex for DynamoStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let what = self.what("reading the tick mark and the woken jobs");
        // One more than the limit: the mark's item comes first.
        let page = i32::try_from(limit.saturating_add(1)).unwrap_or(i32::MAX);
        // Floored like the wakes: every wake at or before `now` is in,
        // plus those later within the same millisecond (woken a fraction
        // of a millisecond early, which a claim judges by its own clock).
        let until = AttributeValue::N(floor_millis(now).to_string());
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .query()
                .table_name(&self.table)
                .index_name(WAKE_INDEX)
                .key_condition_expression("#wk = :shard AND #wake <= :until")
                .expression_attribute_names("#wk", WAKE_SHARD)
                .expression_attribute_names("#wake", WAKE)
                .expression_attribute_values(
                    ":shard",
                    AttributeValue::S(WAKE_SHARD_VALUE.to_string()),
                )
                .expression_attribute_values(":until", until.clone())
                .scan_index_forward(true)
                .limit(page)
                .send()
        })
        .await
        .map_err(store_error)?;
        let mut start = TickStart {
            mark: None,
            now,
            woken: Vec::new(),
            records: Vec::new(),
            carried: Vec::new(),
            // The wake index is a GSI read by range: its next entry would
            // be another request.
            next_wake: None,
        };
        for item in out.items() {
            match item.get(PK) {
                Some(AttributeValue::S(pk)) if pk == TICK_MARK_PK => {
                    start.mark = Some(read_mark(&self.table, item)?);
                }
                Some(AttributeValue::S(pk)) => {
                    // Items of the jobs' own in this table that happen to
                    // carry `wk` and `wake` are none of the index's.
                    if let Some(job) = pk.strip_prefix(JOB_PREFIX) {
                        if start.woken.len() < limit {
                            start.woken.push(job.to_string());
                        }
                    }
                }
                _ => {
                    return Err(StoreError::new(
                        StoreErrorKind::Corrupt,
                        format!("{what}: an item's key is not a string"),
                    ));
                }
            }
        }
        if start.mark.is_none() {
            start.mark = self.read_mark_consistently().await?;
        }
        Ok(start)
    }

    /// One conditional `PutItem` of the mark's item, on condition that the
    /// stored mark is earlier (or absent). A failed condition means the
    /// mark is already there or later: success. Repeating it is harmless
    /// for the same reason, so it is retried like a read.
    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        let what = self.what("moving the tick mark");
        let item = mark_item(mark, Timestamp::now().to_string());
        let result = call(self.budget(), &what, Kind::IdempotentWrite, no_more, || {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item.clone()))
                .condition_expression("attribute_not_exists(#mark) OR #mark < :mark")
                .expression_attribute_names("#mark", MARK)
                .expression_attribute_values(
                    ":mark",
                    AttributeValue::N(mark.as_nanosecond().to_string()),
                )
                .send()
        })
        .await;
        match result {
            Ok(_)
            | Err(CallError::Service {
                err: PutItemError::ConditionalCheckFailedException(_),
                ..
            }) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }
}

impl DynamoStore {
    /// The tick mark from its item, read consistently (see [`TickIndex`]).
    async fn read_mark_consistently(&self) -> Result<Option<Timestamp>, StoreError> {
        let what = self.what("reading the tick mark");
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key_of(TICK_MARK_PK.to_string())))
                .consistent_read(true)
                .send()
        })
        .await
        .map_err(store_error)?;
        match out.item() {
            Some(item) if !item.is_empty() => Ok(Some(read_mark(&self.table, item)?)),
            _ => Ok(None),
        }
    }
}
