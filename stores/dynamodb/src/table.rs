//! The table: creating it with its wake index and TTL, adding what an
//! older table lacks, and repairing records from before the wake index.

use super::*;

/// How long [`DynamoStore::create_table`] waits for a new table to become
/// active.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long [`DynamoStore::create_table`] waits for the wake index added to
/// an existing table to become active (DynamoDB builds it from the table's
/// items: minutes for a small table, longer for a large one).
const INDEX_ACTIVE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

impl DynamoStore {
    /// Creates the table if it does not exist: on-demand billing, key `pk`
    /// (string), the wake index [`WAKE_INDEX`], TTL on [`TTL_ATTRIBUTE`];
    /// waits until it is active. An existing table is fine if its key is
    /// `pk` (string); TTL is switched on if it is off, and a table made
    /// before the wake index (by an older cronslot) gets it: the index is
    /// added and waited for until it is active, so running `cronslot init`
    /// again is the whole upgrade. Point-in-time recovery and encryption
    /// settings are left to the deployment template.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let what = self.what("creating the table");
        let definitions =
            wake_index_definitions().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let pk_key = key_element(PK, KeyType::Hash)
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let index = wake_index().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        // Safe to repeat: a repeat finds the table and reports it in use.
        let created = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .create_table()
                .table_name(&self.table)
                .set_attribute_definitions(Some(definitions.clone()))
                .key_schema(pk_key.clone())
                .global_secondary_indexes(index.clone())
                .billing_mode(BillingMode::PayPerRequest)
                .send()
        })
        .await;
        match created {
            Ok(_) => {}
            Err(CallError::Service {
                err: CreateTableError::ResourceInUseException(_),
                ..
            }) => {}
            Err(e) => return Err(store_error(e)),
        }
        let table = self.wait_active().await?;
        self.ensure_wake_index(&table).await?;
        self.repair_wakes().await?;
        self.enable_ttl().await
    }

    /// Waits for the table to be active and checks its key; returns its
    /// description.
    async fn wait_active(&self) -> Result<TableDescription, StoreError> {
        let started = Instant::now();
        loop {
            let table = self.describe().await?;
            let key: Vec<(&str, &KeyType)> = table
                .key_schema()
                .iter()
                .map(|k| (k.attribute_name(), k.key_type()))
                .collect();
            let pk_is_string = table
                .attribute_definitions()
                .iter()
                .any(|d| d.attribute_name() == PK && *d.attribute_type() == ScalarAttributeType::S);
            if key != [(PK, &KeyType::Hash)] || !pk_is_string {
                return Err(StoreError::other(format!(
                    "DynamoDB table {}: exists with another key ({key:?}); cronslot needs a table whose only key is the string partition key \"pk\": choose another table name",
                    self.table
                )));
            }
            match table.table_status() {
                Some(TableStatus::Active) | None => return Ok(table),
                Some(TableStatus::Creating) | Some(TableStatus::Updating) => {}
                Some(other) => {
                    return Err(StoreError::other(format!(
                        "DynamoDB table {}: is {}, not usable",
                        self.table,
                        other.as_str()
                    )));
                }
            }
            if started.elapsed() > TABLE_ACTIVE_TIMEOUT {
                return Err(StoreError::unavailable(format!(
                    "DynamoDB table {}: still not active after {TABLE_ACTIVE_TIMEOUT:?}",
                    self.table
                )));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    async fn describe(&self) -> Result<TableDescription, StoreError> {
        let what = self.what("describing the table");
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client.describe_table().table_name(&self.table).send()
        })
        .await
        .map_err(store_error)?;
        out.table()
            .cloned()
            .ok_or_else(|| StoreError::other(format!("{what}: no description returned")))
    }

    /// Gives each record written before the wake index that needs a wake
    /// (a waiting run or a live lease shows in its text) its
    /// [`decide::migrated_wake`], with the record's own conditional write:
    /// the bounded repair of docs/design.md §11, run by every `init` (so an
    /// interrupted one is finished by the next). One filtered `Scan` over
    /// the table (records with a wake are skipped), then [`repair_wake`]
    /// for each record found; one that does not decode is left as it is.
    async fn repair_wakes(&self) -> Result<(), StoreError> {
        let filter = format!(
            "attribute_not_exists(#{WAKE}) \
             AND (contains(#{STATE}, :pending) OR contains(#{STATE}, :leases))"
        );
        let values = [(":pending", "\"pending\":[{"), (":leases", "\"leases\":[{")];
        let found = self
            .scan_jobs(
                "finding records that need a wake",
                Some(ScanFilter {
                    expression: &filter,
                    names: &[(WAKE, WAKE), (STATE, STATE)],
                    values: &values,
                }),
            )
            .await?;
        for job in found {
            match repair_wake(self, &job).await {
                // Reading it reports it.
                Err(e) if e.kind == StoreErrorKind::Corrupt => {}
                other => {
                    other?;
                }
            }
        }
        Ok(())
    }

    /// Adds the wake index to a table that lacks it (made by a cronslot
    /// from before it), checks the shape of one that has it, and waits
    /// until it is active: DynamoDB refuses queries of an index that is
    /// still being built, so a tick would fail until then.
    async fn ensure_wake_index(&self, table: &TableDescription) -> Result<(), StoreError> {
        let mut table = table.clone();
        if find_wake_index(&table).is_none() {
            let what = self.what(&format!("adding the wake index {WAKE_INDEX:?}"));
            let definitions =
                wake_index_definitions().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
            let index = wake_index().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
            let create = CreateGlobalSecondaryIndexAction::builder()
                .index_name(WAKE_INDEX)
                .set_key_schema(Some(index.key_schema().to_vec()))
                .set_projection(index.projection().cloned())
                .build()
                .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
            let update = GlobalSecondaryIndexUpdate::builder().create(create).build();
            // Repeating it is harmless: a repeat (or a concurrent `init`)
            // is refused because the index exists, and the description
            // read next shows it.
            let added = call(self.budget(), &what, Kind::Read, no_more, || {
                self.client
                    .update_table()
                    .table_name(&self.table)
                    .set_attribute_definitions(Some(definitions.clone()))
                    .global_secondary_index_updates(update.clone())
                    .send()
            })
            .await;
            table = self.describe().await?;
            if let Err(e) = added {
                // Another `init` may have added it meanwhile.
                if find_wake_index(&table).is_none() {
                    let e = store_error(e);
                    return Err(StoreError::new(
                        e.kind,
                        format!(
                            "{}; ticks need this index: update the stack from the rendered template (it declares the index) if a stack owns the table, else run `cronslot init` with permission for dynamodb:UpdateTable",
                            e.message
                        ),
                    ));
                }
            }
            tracing::info!(
                table = %self.table,
                index = WAKE_INDEX,
                "added the wake index; waiting until DynamoDB has built it"
            );
        }
        let started = Instant::now();
        loop {
            match find_wake_index(&table) {
                None => {
                    return Err(StoreError::other(format!(
                        "DynamoDB table {}: the wake index {WAKE_INDEX:?} was added but is not described; run `cronslot init` again",
                        self.table
                    )));
                }
                Some(index) => {
                    check_wake_index(&self.table, index)?;
                    match index.index_status() {
                        Some(IndexStatus::Active) | None => return Ok(()),
                        Some(IndexStatus::Creating) | Some(IndexStatus::Updating) => {}
                        Some(other) => {
                            return Err(StoreError::other(format!(
                                "DynamoDB table {}: the wake index {WAKE_INDEX:?} is {}; cronslot's ticks need it: once it is gone, run `cronslot init` to add it again",
                                self.table,
                                other.as_str()
                            )));
                        }
                    }
                }
            }
            if started.elapsed() > INDEX_ACTIVE_TIMEOUT {
                return Err(StoreError::unavailable(format!(
                    "DynamoDB table {}: the wake index {WAKE_INDEX:?} is still being built after {INDEX_ACTIVE_TIMEOUT:?} (a large table takes longer); ticks fail until it is active: run `cronslot init` again later to wait for it",
                    self.table
                )));
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            table = self.describe().await?;
        }
    }

    async fn enable_ttl(&self) -> Result<(), StoreError> {
        let what = self.what("reading the TTL setting");
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .describe_time_to_live()
                .table_name(&self.table)
                .send()
        })
        .await
        .map_err(store_error)?;
        let description = out.time_to_live_description();
        let status = description.and_then(|d| d.time_to_live_status());
        let attribute = description.and_then(|d| d.attribute_name());
        match status {
            Some(TimeToLiveStatus::Enabled) | Some(TimeToLiveStatus::Enabling) => {
                return match attribute {
                    Some(TTL_ATTRIBUTE) | None => Ok(()),
                    Some(other) => Err(StoreError::other(format!(
                        "DynamoDB table {}: TTL is enabled on attribute {other:?}, but cronslot's effect ledger expires items through {TTL_ATTRIBUTE:?}; use a table of cronslot's own",
                        self.table
                    ))),
                };
            }
            Some(TimeToLiveStatus::Disabling) => {
                return Err(StoreError::unavailable(format!(
                    "DynamoDB table {}: TTL is being disabled; DynamoDB allows enabling it again only when that finishes (up to an hour)",
                    self.table
                )));
            }
            _ => {}
        }
        let spec = TimeToLiveSpecification::builder()
            .enabled(true)
            .attribute_name(TTL_ATTRIBUTE)
            .build()
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let what = self.what("enabling TTL");
        // Repeating it is harmless: a repeat that finds TTL enabled by the
        // first attempt (or by a concurrent setup) is success.
        let enabled = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .update_time_to_live()
                .table_name(&self.table)
                .time_to_live_specification(spec.clone())
                .send()
        })
        .await;
        match enabled {
            Ok(_) => Ok(()),
            Err(CallError::Service { err, .. })
                if err.code() == Some("ValidationException")
                    && err.message().is_some_and(|m| m.contains("already enabled")) =>
            {
                Ok(())
            }
            Err(e) => Err(store_error(e)),
        }
    }
}

fn key_element(name: &str, key_type: KeyType) -> Result<KeySchemaElement, BuildError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
}

fn attribute(name: &str, kind: ScalarAttributeType) -> Result<AttributeDefinition, BuildError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
}

/// The table's key attribute and the wake index's two.
fn wake_index_definitions() -> Result<Vec<AttributeDefinition>, BuildError> {
    Ok(vec![
        attribute(PK, ScalarAttributeType::S)?,
        attribute(WAKE_SHARD, ScalarAttributeType::S)?,
        attribute(WAKE, ScalarAttributeType::N)?,
    ])
}

/// The wake index: `wk` (the one shard) and `wake` (in order), projecting
/// the table's key (the job) and the tick mark. With on-demand billing it
/// needs no capacity of its own.
fn wake_index() -> Result<GlobalSecondaryIndex, BuildError> {
    GlobalSecondaryIndex::builder()
        .index_name(WAKE_INDEX)
        .key_schema(key_element(WAKE_SHARD, KeyType::Hash)?)
        .key_schema(key_element(WAKE, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::Include)
                .non_key_attributes(MARK)
                .build(),
        )
        .build()
}

fn find_wake_index(table: &TableDescription) -> Option<&GlobalSecondaryIndexDescription> {
    table
        .global_secondary_indexes()
        .iter()
        .find(|i| i.index_name() == Some(WAKE_INDEX))
}

/// An index named like the wake index must be the wake index: keyed on
/// `wk` and `wake`, projecting the mark.
fn check_wake_index(
    table: &str,
    index: &GlobalSecondaryIndexDescription,
) -> Result<(), StoreError> {
    let key: Vec<(&str, &KeyType)> = index
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type()))
        .collect();
    let projection = index.projection();
    let projects_mark = match projection.and_then(|p| p.projection_type()) {
        Some(ProjectionType::All) => true,
        Some(ProjectionType::Include) => {
            projection.is_some_and(|p| p.non_key_attributes().iter().any(|a| a == MARK))
        }
        _ => false,
    };
    if key != [(WAKE_SHARD, &KeyType::Hash), (WAKE, &KeyType::Range)] || !projects_mark {
        return Err(StoreError::other(format!(
            "DynamoDB table {table}: has an index named {WAKE_INDEX:?} that is not cronslot's wake index (key {key:?}, projection {:?}); cronslot needs {WAKE_INDEX:?} keyed on {WAKE_SHARD:?} (S, hash) and {WAKE:?} (N, range), projecting {MARK:?}: delete that index and run `cronslot init`, or use a table of cronslot's own",
            projection
                .and_then(|p| p.projection_type())
                .map(|t| t.as_str())
        )));
    }
    Ok(())
}
