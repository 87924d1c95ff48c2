//! The table: creating it with its wake index and TTL, adding what an
//! older table lacks, and repairing records from before the wake index.

use super::*;

/// How long [`DynamoStore::create_table`] waits for a new table to become
/// active.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long [`DynamoStore::create_table`] waits for an index added to
/// an existing table to become active (DynamoDB builds it from the table's
/// items: minutes for a small table, longer for a large one).
const INDEX_ACTIVE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

impl DynamoStore {
    /// Creates the table if it does not exist: on-demand billing, key `pk`
    /// (string), the wake index [`WAKE_INDEX`] and the names index
    /// [`NAMES_INDEX`], TTL on [`TTL_ATTRIBUTE`]; waits until it is active.
    /// An existing table is fine if its key is `pk` (string); TTL is
    /// switched on if it is off, and a table made before an index (by an
    /// older cronslot) gets it: the index is added and waited for until it
    /// is active, and the records written before it are given what it
    /// reads ([`repair_wakes`](Self::repair_wakes),
    /// [`repair_name_spaces`](Self::repair_name_spaces)), so running
    /// `cronslot init` again is the whole upgrade. Point-in-time recovery and encryption
    /// settings are left to the deployment template.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let what = self.what("creating the table");
        let definitions =
            table_definitions().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let pk_key = key_element(PK, KeyType::Hash)
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let indexes: Vec<GlobalSecondaryIndex> = indexes()
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?
            .into_iter()
            .map(|w| w.index)
            .collect();
        // Safe to repeat: a repeat finds the table and reports it in use.
        let created = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .create_table()
                .table_name(&self.table)
                .set_attribute_definitions(Some(definitions.clone()))
                .key_schema(pk_key.clone())
                .set_global_secondary_indexes(Some(indexes.clone()))
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
        self.ensure_indexes(&table).await?;
        self.repair_wakes().await?;
        self.repair_name_spaces().await?;
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

    /// Gives each record named `job/key` written before the names index
    /// its [`NAME_SPACE`], so that listings find it: one filtered `Scan`
    /// of the table, then one `UpdateItem` per record found, which sets
    /// only that attribute (derived from the record's name, so it is right
    /// whatever the record holds; the record's version and text are left
    /// alone). Run by every `init`, so an interrupted one is finished by
    /// the next.
    async fn repair_name_spaces(&self) -> Result<(), StoreError> {
        let filter = format!("contains(#{PK}, :slash) AND attribute_not_exists(#{NAME_SPACE})");
        let found = self
            .scan_jobs(
                "finding records not yet in the names index",
                Some(ScanFilter {
                    expression: &filter,
                    names: &[(NAME_SPACE, NAME_SPACE)],
                    values: &[(":slash", "/")],
                }),
            )
            .await?;
        for name in found {
            let Some(space) = name_space(&name) else {
                continue;
            };
            let what = self.what(&format!("adding the record of {name:?} to the names index"));
            let updated = call(self.budget(), &what, Kind::Read, no_more, || {
                self.client
                    .update_item()
                    .table_name(&self.table)
                    .set_key(Some(key_of(job_pk(&name))))
                    .update_expression("SET #ns = :ns")
                    .condition_expression("attribute_exists(#pk)")
                    .expression_attribute_names("#ns", NAME_SPACE)
                    .expression_attribute_names("#pk", PK)
                    .expression_attribute_values(":ns", AttributeValue::S(space.to_string()))
                    .send()
            })
            .await;
            match updated {
                // Deleted since the scan: nothing to list.
                Ok(_)
                | Err(CallError::Service {
                    err: UpdateItemError::ConditionalCheckFailedException(_),
                    ..
                }) => {}
                Err(e) => return Err(store_error(e)),
            }
        }
        Ok(())
    }

    /// Adds each index cronslot needs ([`indexes`]) to a table that lacks
    /// it (made by a cronslot from before it), checks the shape of one
    /// that has it, and waits until it is active: DynamoDB refuses queries
    /// of an index that is still being built, and builds one index at a
    /// time.
    async fn ensure_indexes(&self, table: &TableDescription) -> Result<(), StoreError> {
        let wanted = indexes().map_err(|e| StoreError::other(self.what(&e.to_string())))?;
        let mut table = table.clone();
        for index in &wanted {
            table = self.ensure_index(&table, index).await?;
        }
        Ok(())
    }

    /// [`ensure_indexes`](Self::ensure_indexes) for one index; returns the
    /// table's description once the index is active.
    async fn ensure_index(
        &self,
        table: &TableDescription,
        wanted: &WantedIndex,
    ) -> Result<TableDescription, StoreError> {
        let name = wanted.name();
        let mut table = table.clone();
        if find_index(&table, name).is_none() {
            let what = self.what(&format!("adding the {} {name:?}", wanted.what));
            // The table's definitions as they are, and the new index's
            // key attributes: DynamoDB refuses a definition no key uses.
            let mut definitions = table.attribute_definitions().to_vec();
            for definition in
                table_definitions().map_err(|e| StoreError::other(format!("{what}: {e}")))?
            {
                let name = definition.attribute_name();
                let keyed = wanted
                    .index
                    .key_schema()
                    .iter()
                    .any(|k| k.attribute_name() == name);
                if keyed && !definitions.iter().any(|d| d.attribute_name() == name) {
                    definitions.push(definition);
                }
            }
            let create = CreateGlobalSecondaryIndexAction::builder()
                .index_name(name)
                .set_key_schema(Some(wanted.index.key_schema().to_vec()))
                .set_projection(wanted.index.projection().cloned())
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
                if find_index(&table, name).is_none() {
                    let e = store_error(e);
                    return Err(StoreError::new(
                        e.kind,
                        format!(
                            "{}; {} need this index: update the stack from the rendered template (it declares the index) if a stack owns the table, else run `cronslot init` with permission for dynamodb:UpdateTable",
                            e.message, wanted.needed_by
                        ),
                    ));
                }
            }
            tracing::info!(
                table = %self.table,
                index = name,
                "added the {}; waiting until DynamoDB has built it",
                wanted.what
            );
        }
        let started = Instant::now();
        loop {
            match find_index(&table, name) {
                None => {
                    return Err(StoreError::other(format!(
                        "DynamoDB table {}: the {} {name:?} was added but is not described; run `cronslot init` again",
                        self.table, wanted.what
                    )));
                }
                Some(index) => {
                    wanted.check(&self.table, index)?;
                    match index.index_status() {
                        Some(IndexStatus::Active) | None => return Ok(table),
                        Some(IndexStatus::Creating) | Some(IndexStatus::Updating) => {}
                        Some(other) => {
                            return Err(StoreError::other(format!(
                                "DynamoDB table {}: the {} {name:?} is {}; cronslot's {} need it: once it is gone, run `cronslot init` to add it again",
                                self.table,
                                wanted.what,
                                other.as_str(),
                                wanted.needed_by
                            )));
                        }
                    }
                }
            }
            if started.elapsed() > INDEX_ACTIVE_TIMEOUT {
                return Err(StoreError::unavailable(format!(
                    "DynamoDB table {}: the {} {name:?} is still being built after {INDEX_ACTIVE_TIMEOUT:?} (a large table takes longer); {} fail until it is active: run `cronslot init` again later to wait for it",
                    self.table, wanted.what, wanted.needed_by
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

/// The table's key attribute and its indexes' key attributes.
fn table_definitions() -> Result<Vec<AttributeDefinition>, BuildError> {
    Ok(vec![
        attribute(PK, ScalarAttributeType::S)?,
        attribute(WAKE_SHARD, ScalarAttributeType::S)?,
        attribute(WAKE, ScalarAttributeType::N)?,
        attribute(NAME_SPACE, ScalarAttributeType::S)?,
    ])
}

/// A global secondary index of the table, and what it serves (for errors).
pub(crate) struct WantedIndex {
    index: GlobalSecondaryIndex,
    /// What the index is, in a sentence: "wake index".
    what: &'static str,
    /// What fails without it: "ticks".
    needed_by: &'static str,
}

impl WantedIndex {
    fn name(&self) -> &str {
        self.index.index_name()
    }

    /// An index of this name must be this index: the same key, and a
    /// projection that holds at least the attributes this one projects.
    fn check(
        &self,
        table: &str,
        found: &GlobalSecondaryIndexDescription,
    ) -> Result<(), StoreError> {
        let pairs = |key: &[KeySchemaElement]| -> Vec<(String, KeyType)> {
            key.iter()
                .map(|k| (k.attribute_name().to_string(), k.key_type().clone()))
                .collect()
        };
        let key = pairs(found.key_schema());
        let wanted_key = pairs(self.index.key_schema());
        let projection = found.projection();
        let wanted = self.index.projection();
        let projects_enough = match (
            wanted.and_then(|p| p.projection_type()),
            projection.and_then(|p| p.projection_type()),
        ) {
            (_, Some(ProjectionType::All)) | (Some(ProjectionType::KeysOnly), _) => true,
            (Some(ProjectionType::Include), Some(ProjectionType::Include)) => {
                wanted.is_some_and(|w| {
                    w.non_key_attributes()
                        .iter()
                        .all(|a| projection.is_some_and(|p| p.non_key_attributes().contains(a)))
                })
            }
            _ => false,
        };
        if key == wanted_key && projects_enough {
            return Ok(());
        }
        let shape = |key: &[(String, KeyType)]| -> String {
            key.iter()
                .map(|(name, kind)| format!("{name:?} ({})", kind.as_str()))
                .collect::<Vec<_>>()
                .join(" and ")
        };
        let projected = |p: Option<&Projection>| -> String {
            match p.and_then(|p| p.projection_type()) {
                Some(ProjectionType::Include) => format!(
                    "{:?}",
                    p.map(|p| p.non_key_attributes().to_vec())
                        .unwrap_or_default()
                ),
                Some(other) => other.as_str().to_string(),
                None => "nothing".to_string(),
            }
        };
        Err(StoreError::other(format!(
            "DynamoDB table {table}: has an index named {name:?} that is not cronslot's {what} (keyed on {found_key}, projecting {found_projection}); cronslot needs {name:?} keyed on {wanted_key}, projecting {wanted_projection}: delete that index and run `cronslot init`, or use a table of cronslot's own",
            name = self.name(),
            what = self.what,
            found_key = shape(&key),
            found_projection = projected(projection),
            wanted_key = shape(&wanted_key),
            wanted_projection = projected(wanted),
        )))
    }
}

/// The table's global secondary indexes, each needing no capacity of its
/// own with on-demand billing:
/// - the wake index [`WAKE_INDEX`]: `wk` (the one shard) and `wake` (in
///   order), projecting the table's key (the job) and the tick mark;
/// - the names index [`NAMES_INDEX`]: `ns` (a dynamic job) and `pk` (its
///   records in name order), keys only: a listing reads the records of
///   its page consistently by key.
pub(crate) fn indexes() -> Result<Vec<WantedIndex>, BuildError> {
    let wake = GlobalSecondaryIndex::builder()
        .index_name(WAKE_INDEX)
        .key_schema(key_element(WAKE_SHARD, KeyType::Hash)?)
        .key_schema(key_element(WAKE, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::Include)
                .non_key_attributes(MARK)
                .build(),
        )
        .build()?;
    let names = GlobalSecondaryIndex::builder()
        .index_name(NAMES_INDEX)
        .key_schema(key_element(NAME_SPACE, KeyType::Hash)?)
        .key_schema(key_element(PK, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )
        .build()?;
    Ok(vec![
        WantedIndex {
            index: wake,
            what: "wake index",
            needed_by: "ticks",
        },
        WantedIndex {
            index: names,
            what: "names index",
            needed_by: "listings of schedules and runs",
        },
    ])
}

fn find_index<'a>(
    table: &'a TableDescription,
    name: &str,
) -> Option<&'a GlobalSecondaryIndexDescription> {
    table
        .global_secondary_indexes()
        .iter()
        .find(|i| i.index_name() == Some(name))
}
