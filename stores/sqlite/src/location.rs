//! Where a SQLite store is: the `sqlite:PATH` syntax, its parsed form,
//! and opening a store from it ([`UrlStore`], for cronslot-stores). Apart
//! because it is about naming a file, not about what is in it.

use super::*;

const LOCATION_SYNTAX: &str = "expected sqlite:PATH (for example sqlite:cronslot.db) or sqlite://PATH (sqlite:///var/lib/cronslot.db for an absolute path)";

/// Parses the CLI's `--store` syntax for SQLite: `sqlite:PATH` or
/// `sqlite://PATH`, scheme in any case. The rest is a file path taken
/// literally (no `?query`, no `~`): `sqlite://data/c.db` is the relative
/// `data/c.db`, `sqlite:///var/c.db` the absolute `/var/c.db`.
pub fn parse_sqlite_location(input: &str) -> Result<PathBuf, LocationError> {
    let error = |message: String| LocationError {
        input: input.to_string(),
        message,
    };
    let trimmed = input.trim();
    let Some((scheme, rest)) = trimmed.split_once(':') else {
        let hint = if trimmed.is_empty() {
            String::new()
        } else {
            format!("; did you mean sqlite:{trimmed}?")
        };
        return Err(error(format!(
            "store {input:?} has no scheme: {LOCATION_SYNTAX}{hint}"
        )));
    };
    if !scheme.eq_ignore_ascii_case("sqlite") {
        return Err(error(format!(
            "store {input:?} is not a SQLite store (scheme {scheme:?}): {LOCATION_SYNTAX}"
        )));
    }
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() {
        return Err(error(format!(
            "store {input:?} names no file: {LOCATION_SYNTAX}"
        )));
    }
    if path == ":memory:" {
        return Err(error(format!(
            "store {input:?} is in memory, which lives and dies with one process and cannot be shared: {LOCATION_SYNTAX}"
        )));
    }
    Ok(PathBuf::from(path))
}

/// Where a SQLite store is: its file, as `sqlite:PATH` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteLocation(pub PathBuf);

impl fmt::Display for SqliteLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sqlite:{}", self.0.display())
    }
}

/// The error code of a store opened without `create` whose file is not
/// there ([`StoreError::code`]).
pub const MISSING: &str = "missing";

impl UrlStore for SqliteStore {
    const KIND: &'static str = "sqlite";
    const SCHEMES: &'static [&'static str] = &["sqlite"];
    const SYNTAX: &'static str = "sqlite:PATH (for example sqlite:cronslot.db)";
    type Location = SqliteLocation;

    fn parse_location(url: &str) -> Result<SqliteLocation, LocationError> {
        parse_sqlite_location(url).map(SqliteLocation)
    }

    /// Creates the file and its directory when `create` (the default);
    /// else the file must be there: a missing one is an error with code
    /// [`MISSING`], not a new empty file that no runner reads.
    async fn open_at(location: &SqliteLocation, options: OpenOptions) -> Result<Self, StoreError> {
        let path = &location.0;
        if options.creates() {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| {
                    StoreError::other(format!(
                        "SQLite store {}: cannot create the directory {}: {e}",
                        path.display(),
                        parent.display()
                    ))
                })?;
            }
        } else {
            match std::fs::metadata(path) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(StoreError::other(format!(
                        "SQLite store {} does not exist",
                        path.display()
                    ))
                    .with_code(MISSING));
                }
                Err(e) => {
                    return Err(StoreError::other(format!(
                        "SQLite store {}: cannot read it: {e}",
                        path.display()
                    )));
                }
            }
        }
        SqliteStore::open(path)
    }

    /// The effect ledger's entries whose time is up, deleted in bounded
    /// batches ([`SqliteStore::sweep_expired`]).
    async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        SqliteStore::sweep_expired(self, now, batch, max_batches).await
    }

    fn sweeps(&self) -> bool {
        true
    }

    fn wake_signal(&self) -> Option<cronslot_store_kit::WakeSignal> {
        SqliteStore::wake_signal(self)
    }
}
