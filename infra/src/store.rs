//! Opening the store named by `--store`, for the store commands (`status`,
//! `dlq`, `pause`, `resume`, `backfill`, `trigger`).
//!
//! `--store` is parsed into a [`StoreTarget`] and opened into a
//! [`Backend`]; the commands themselves are generic over
//! [`Coordinator`](cronslot_core::coord::Coordinator) + [`Records`], so a
//! new kind of store (DynamoDB, the Worker's admin URL) is one more variant
//! of each enum and one more arm in [`with_backend!`], nothing else. Today:
//! `sqlite:PATH`, `postgres://USER@HOST[:PORT]/DB[?sslmode=…&schema=…]`
//! (the password from the URL or `PGPASSWORD`; messages show the URL
//! without it), `redis://[USER:PASSWORD@]HOST[:PORT]/DB[?prefix=…]` or
//! `rediss://…` (the password from the URL or `REDISCLI_AUTH`, shown
//! nowhere), `dynamodb://TABLE?region=R[&endpoint=URL]` (credentials
//! from the usual AWS environment) and `https://HOST/PREFIX --token-env
//! VAR`: a Cloudflare Worker's admin routes (see [`admin`]), where the
//! Worker's clock, not this machine's, decides what is due, and `trigger`
//! asks the Worker to run the job.
//!
//! Every command requires the store to exist already: `cronslot run` creates
//! it. A mistyped `--store` path therefore fails with a message instead of
//! creating an empty file that no runner reads (where a `pause` would then
//! "succeed" while the real job keeps running).
//!
//! A [`Session`] is what every store command starts from: the manifest
//! (the coordinator needs each job's spec), the opened store and the clock
//! read once (the CLI is the only place that reads it).

pub mod admin;
pub mod jobs;
mod records;
mod runtime;

use std::path::PathBuf;
use std::rc::Rc;

use cronslot_core::coord::CasCoordinator;
use cronslot_core::manifest::{JobSpec, Manifest};
use cronslot_dynamodb::{DynamoStore, parse_dynamodb_location};
use cronslot_postgres::{PgLocation, PgOptions, PgStore, parse_postgres_location};
use cronslot_redis::{RedisLocation, RedisOptions, RedisStore, parse_redis_location};
use cronslot_sqlite::{SqliteStore, parse_sqlite_location};
use jiff::Timestamp;

use crate::cli::StoreArgs;
use crate::exit::Failure;
use crate::manifest::{find_job, load_manifest};

pub use records::Records;
pub use runtime::wait;

/// Where job state lives, parsed from `--store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreTarget {
    /// `sqlite:PATH`: one SQLite file on this machine.
    Sqlite(PathBuf),
    /// `postgres://…`: a PostgreSQL database a fleet shares (its `Debug`
    /// and `Display` hide the password).
    Postgres(PgLocation),
    /// `redis://…` or `rediss://…`: a Redis server a fleet shares (its
    /// `Debug` and `Display` hide the password).
    Redis(RedisLocation),
    /// `dynamodb://TABLE?region=R[&endpoint=URL]`: the AWS adapter's table.
    Dynamo(String),
    /// `https://HOST/PREFIX`: a Cloudflare Worker's admin routes, with the
    /// token from the environment variable named by `--token-env`.
    Admin(admin::Target),
}

const STORE_SYNTAX: &str = "expected sqlite:PATH (for example sqlite:cronslot.db), \
                            postgres://USER@HOST[:PORT]/DB[?sslmode=MODE&schema=NAME], \
                            redis://[USER:PASSWORD@]HOST[:PORT]/DB[?prefix=NAME] (or rediss://), \
                            dynamodb://TABLE?region=REGION[&endpoint=URL] or \
                            https://HOST/PREFIX --token-env VAR (a Cloudflare Worker's admin URL)";

impl StoreTarget {
    /// Parses `--store` (with `--token-env`, which only an https:// store
    /// takes). Reads the token from the environment; touches nothing else.
    pub fn parse(url: &str, token_env: Option<&str>) -> Result<StoreTarget, Failure> {
        let target = StoreTarget::parse_url(url, token_env)?;
        if let (
            Some(var),
            StoreTarget::Sqlite(_)
            | StoreTarget::Postgres(_)
            | StoreTarget::Redis(_)
            | StoreTarget::Dynamo(_),
        ) = (token_env, &target)
        {
            return Err(Failure::bad_input(format!(
                "error: --token-env {var}: only an https:// store (a Worker's admin URL) takes a token; \
                 store {} does not",
                target.label()
            )));
        }
        Ok(target)
    }

    fn parse_url(url: &str, token_env: Option<&str>) -> Result<StoreTarget, Failure> {
        let trimmed = url.trim();
        let Some((scheme, _)) = trimmed.split_once(':') else {
            let hint = if trimmed.is_empty() {
                String::new()
            } else {
                format!("; did you mean sqlite:{trimmed}?")
            };
            return Err(Failure::bad_input(format!(
                "error: --store: unsupported store URL {url:?} (no scheme); {STORE_SYNTAX}{hint}"
            )));
        };
        let scheme = scheme.to_ascii_lowercase();
        match scheme.as_str() {
            "sqlite" => parse_sqlite_location(trimmed)
                .map(StoreTarget::Sqlite)
                .map_err(|e| Failure::bad_input(format!("error: --store: {e}"))),
            "postgres" | "postgresql" => parse_postgres_location(trimmed)
                .map(StoreTarget::Postgres)
                .map_err(|e| Failure::bad_input(format!("error: --store: {}", e.message))),
            "redis" | "rediss" => parse_redis_location(trimmed)
                .map(StoreTarget::Redis)
                .map_err(|e| Failure::bad_input(format!("error: --store: {}", e.message))),
            "dynamodb" => parse_dynamodb_location(trimmed)
                .map(|_| StoreTarget::Dynamo(trimmed.to_string()))
                .map_err(|e| Failure::bad_input(format!("error: --store: {}", e.message))),
            "http" | "https" => admin::parse_target(trimmed, token_env).map(StoreTarget::Admin),
            _ => Err(Failure::bad_input(format!(
                "error: --store: unsupported store URL {url:?} (scheme {scheme:?}); {STORE_SYNTAX}"
            ))),
        }
    }

    /// The store as messages name it.
    pub fn label(&self) -> String {
        match self {
            StoreTarget::Sqlite(path) => format!("sqlite:{}", path.display()),
            StoreTarget::Postgres(location) => location.to_string(),
            StoreTarget::Redis(location) => location.to_string(),
            StoreTarget::Dynamo(url) => url.clone(),
            StoreTarget::Admin(target) => target.base_url.clone(),
        }
    }

    /// Opens an existing store. A missing one is an error, not a new empty
    /// file (see the module documentation).
    fn open(&self) -> Result<Backend, Failure> {
        match self {
            StoreTarget::Sqlite(path) => {
                match std::fs::metadata(path) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        let cwd = std::env::current_dir()
                            .map(|d| format!(" (relative paths start at {})", d.display()))
                            .unwrap_or_default();
                        return Err(Failure::bad_input(format!(
                            "error: store {} does not exist yet: `cronslot init --store {}` creates it \
                             (so does `cronslot run`); or check the path{cwd}",
                            self.label(),
                            self.label()
                        )));
                    }
                    Err(e) => {
                        return Err(Failure::bad_input(format!(
                            "error: store {}: cannot read {}: {e}",
                            self.label(),
                            path.display()
                        )));
                    }
                }
                let store = SqliteStore::open(path).map_err(|e| {
                    Failure::bad_input(format!("error: store {}: {e}", self.label()))
                })?;
                Ok(Backend::Sqlite(Rc::new(CasCoordinator::new(
                    store,
                    jitter_seed(),
                ))))
            }
            StoreTarget::Postgres(location) => {
                // The schema must exist (`run` and `init` create it): a
                // mistyped ?schema= fails instead of creating an empty one.
                let options = PgOptions::default().create(false);
                let store = wait(PgStore::connect_with(location.clone(), options))
                    .map_err(|e| jobs::store_failure(e.kind(), &e))?;
                Ok(Backend::Postgres(Rc::new(CasCoordinator::new(
                    store,
                    jitter_seed(),
                ))))
            }
            StoreTarget::Redis(location) => {
                // The store must exist (`run` and `init` mark it): a
                // mistyped database number or ?prefix= fails instead of
                // starting an empty store no runner reads.
                let options = RedisOptions::default().create(false);
                let store = wait(RedisStore::connect_with(location.clone(), options))
                    .map_err(|e| jobs::store_failure(e.kind(), e.message()))?;
                Ok(Backend::Redis(Rc::new(CasCoordinator::new(
                    store,
                    jitter_seed(),
                ))))
            }
            StoreTarget::Dynamo(url) => {
                // The table must exist (the deployed template creates it);
                // a missing one fails on first use with the store's hint.
                let store = wait(DynamoStore::connect(url)).map_err(|e| {
                    Failure::bad_input(format!("error: store {}: {e}", self.label()))
                })?;
                Ok(Backend::Dynamo(Rc::new(CasCoordinator::new(
                    store,
                    jitter_seed(),
                ))))
            }
            StoreTarget::Admin(target) => admin::AdminStore::new(target)
                .map(Backend::Admin)
                .map_err(|e| Failure::problem(format!("error: store {}: {e}", target.base_url))),
        }
    }
}

/// An opened store and the coordinator over it.
pub enum Backend {
    Sqlite(Rc<CasCoordinator<SqliteStore>>),
    Postgres(Rc<CasCoordinator<PgStore>>),
    Redis(Rc<CasCoordinator<RedisStore>>),
    Dynamo(Rc<CasCoordinator<DynamoStore>>),
    Admin(admin::AdminStore),
}

/// Runs `$body` with `$c` bound to the backend's coordinator, whatever its
/// type: the one place that lists every kind of store.
macro_rules! with_backend {
    ($backend:expr, $c:ident => $body:expr) => {
        match $backend {
            $crate::store::Backend::Sqlite(coordinator) => {
                let $c = &**coordinator;
                $body
            }
            $crate::store::Backend::Postgres(coordinator) => {
                let $c = &**coordinator;
                $body
            }
            $crate::store::Backend::Redis(coordinator) => {
                let $c = &**coordinator;
                $body
            }
            $crate::store::Backend::Dynamo(coordinator) => {
                let $c = &**coordinator;
                $body
            }
            $crate::store::Backend::Admin($c) => $body,
        }
    };
}
pub(crate) use with_backend;

fn jitter_seed() -> u64 {
    let nanos = Timestamp::now().as_nanosecond();
    (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
}

/// What every store command starts from: the manifest, the store and `now`.
pub struct Session {
    pub manifest: Manifest,
    pub manifest_path: PathBuf,
    /// The store as messages name it ([`StoreTarget::label`]).
    pub store: String,
    pub backend: Backend,
    pub now: Timestamp,
}

impl Session {
    /// Parses `--store`, reads the manifest, checks `job` (when given), and
    /// only then opens the store: bad input never touches a file.
    pub fn open(args: &StoreArgs, job: Option<&str>) -> Result<Session, Failure> {
        let target = StoreTarget::parse(&args.store, args.token_env.as_deref())?;
        let manifest_path = args.manifest.path();
        let manifest = load_manifest(&manifest_path)?;
        if let Some(name) = job {
            find_job(&manifest, &manifest_path, name)?;
        }
        let backend = target.open()?;
        Ok(Session {
            manifest,
            manifest_path,
            store: target.label(),
            backend,
            now: Timestamp::now(),
        })
    }

    pub fn job(&self, name: &str) -> Result<&JobSpec, Failure> {
        find_job(&self.manifest, &self.manifest_path, name)
    }

    /// One job, or every job of the manifest in file order.
    pub fn jobs(&self, only: Option<&str>) -> Result<Vec<&JobSpec>, Failure> {
        match only {
            Some(name) => Ok(vec![self.job(name)?]),
            None => Ok(self.manifest.jobs.iter().collect()),
        }
    }
}
