//! Pages of records in name order ([`StateStore::records_page`]): the
//! names index for a dynamic job's records, a scan for the rest.

use super::*;

impl DynamoStore {
    /// A page of the records whose names start with `prefix`, after
    /// `after`, at most `limit`, in name order.
    ///
    /// A prefix within a dynamic job's records (`job/…`) is a range of
    /// that job's partition of the names index [`NAMES_INDEX`]: `Query`
    /// pages of its keys from the cursor on, until the page is full or
    /// the names leave the prefix, then the records themselves read
    /// consistently by key ([`get_many_raw`](Self::get_many_raw), a
    /// `BatchGetItem` per hundred). A record deleted between the two
    /// reads is left out; one written meanwhile is read as it is now.
    ///
    /// The index, like every global secondary index, trails the table by
    /// a fraction of a second: a record created that recently may be
    /// missing from the page that would hold it. So the listing's promise
    /// (every record that exists throughout is met exactly once) holds
    /// for the records that existed that fraction of a second before.
    ///
    /// Any other prefix (static jobs' records, which the index leaves
    /// out) is read from a consistent scan of the table's keys.
    pub(crate) async fn records_page_now(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        let names = match name_space(prefix) {
            Some(space) => self.indexed_names(space, prefix, after, limit).await?,
            None => {
                let mut names: Vec<String> = self
                    .jobs()
                    .await?
                    .into_iter()
                    .filter(|n| n.starts_with(prefix) && after.is_none_or(|a| n.as_str() > a))
                    .collect();
                names.truncate(limit);
                names
            }
        };
        let keys: Vec<&str> = names.iter().map(String::as_str).collect();
        let records = self.get_many_raw(&keys).await?;
        Ok(names
            .iter()
            .zip(records)
            .filter_map(|(name, record)| record.map(|r| (name.clone(), r)))
            .collect())
    }

    /// The names of [`records_page_now`](Self::records_page_now)'s page,
    /// from the names index's partition `space`.
    async fn indexed_names(
        &self,
        space: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let what = self.what(&format!("listing the records under {prefix:?}"));
        // From the cursor, or from the prefix itself: a range of the sort
        // key (a key condition has one comparison; the prefix's end is
        // checked here, on the names that come back).
        let (condition, from) = match after {
            Some(a) if a >= prefix => ("#ns = :ns AND #pk > :from", a),
            _ => ("#ns = :ns AND #pk >= :from", prefix),
        };
        let end = prefix_end(prefix).map(|end| job_pk(&end));
        let mut names = Vec::new();
        let mut start: Option<Item> = None;
        while names.len() < limit {
            let want = i32::try_from(limit - names.len()).unwrap_or(i32::MAX);
            let out = call(self.budget(), &what, Kind::Read, no_more, || {
                self.client
                    .query()
                    .table_name(&self.table)
                    .index_name(NAMES_INDEX)
                    .key_condition_expression(condition)
                    .expression_attribute_names("#ns", NAME_SPACE)
                    .expression_attribute_names("#pk", PK)
                    .expression_attribute_values(":ns", AttributeValue::S(space.to_string()))
                    .expression_attribute_values(":from", AttributeValue::S(job_pk(from)))
                    .scan_index_forward(true)
                    .limit(want)
                    .set_exclusive_start_key(start.clone())
                    .send()
            })
            .await
            .map_err(store_error)?;
            for item in out.items() {
                let pk = match item.get(PK) {
                    Some(AttributeValue::S(pk)) => pk,
                    _ => {
                        return Err(StoreError::new(
                            StoreErrorKind::Corrupt,
                            format!("{what}: an item's key is not a string"),
                        ));
                    }
                };
                if end.as_ref().is_some_and(|end| pk >= end) {
                    // Past the prefix: the rest of the partition is too.
                    return Ok(names);
                }
                if let Some(name) = pk.strip_prefix(JOB_PREFIX)
                    && name.starts_with(prefix)
                {
                    names.push(name.to_string());
                }
            }
            match out.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => break,
            }
        }
        Ok(names)
    }
}
