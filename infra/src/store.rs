//! Opening the store named by `--store`, for the store commands (`status`,
//! `dlq`, `pause`, `resume`, `backfill`, `trigger`).
//!
//! `--store` is parsed into a [`StoreTarget`] and opened into a
//! [`Backend`]: a store this process opens (through `cronslot-stores`, the
//! one place that knows every kind of store), or a Worker's admin routes.
//! The commands themselves are generic over
//! [`Coordinator`](cronslot_core::coord::Coordinator) + [`Records`].
//! Today:
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

use std::borrow::Cow;
use std::path::PathBuf;
use std::rc::Rc;

use cronslot_core::coord::{CasCoordinator, StoreError, StoreErrorKind};
use cronslot_core::manifest::{JobSpec, Manifest};
use cronslot_core::schedules::ScheduleKey;
use cronslot_stores::{AnyStore, OpenOptions, StoreUrl};
use jiff::Timestamp;

use crate::cli::StoreArgs;
use crate::exit::Failure;
use crate::manifest::{find_job, find_template, load_manifest};

pub use records::Records;
pub use runtime::wait;

/// Where job state lives, parsed from `--store`.
#[derive(Debug, Clone)]
pub enum StoreTarget {
    /// A store this process opens (`sqlite:`, `postgres://`, `redis://`,
    /// `dynamodb://`): one place opens them all (`cronslot-stores`). Its
    /// `Display` hides the password.
    Store(StoreUrl),
    /// `https://HOST/PREFIX`: a Cloudflare Worker's admin routes, with the
    /// token from the environment variable named by `--token-env`.
    Admin(admin::Target),
}

/// The URLs `--store` takes, for messages.
fn store_syntax() -> String {
    format!(
        "expected {}, or https://HOST/PREFIX --token-env VAR (a Cloudflare Worker's admin URL)",
        StoreUrl::syntaxes().join(", ")
    )
}

impl StoreTarget {
    /// Parses `--store` (with `--token-env`, which only an https:// store
    /// takes). Reads the token from the environment; touches nothing else.
    pub fn parse(url: &str, token_env: Option<&str>) -> Result<StoreTarget, Failure> {
        let target = StoreTarget::parse_url(url, token_env)?;
        if let (Some(var), StoreTarget::Store(_)) = (token_env, &target) {
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
                "error: --store: unsupported store URL {url:?} (no scheme); {}{hint}",
                store_syntax()
            )));
        };
        let scheme = scheme.to_ascii_lowercase();
        if matches!(scheme.as_str(), "http" | "https") {
            return admin::parse_target(trimmed, token_env).map(StoreTarget::Admin);
        }
        if !StoreUrl::schemes().contains(&scheme.as_str()) {
            return Err(Failure::bad_input(format!(
                "error: --store: unsupported store URL {url:?} (scheme {scheme:?}); {}",
                store_syntax()
            )));
        }
        StoreUrl::parse(trimmed)
            .map(StoreTarget::Store)
            .map_err(|e| Failure::bad_input(format!("error: --store: {}", e.message)))
    }

    /// The store as messages name it.
    pub fn label(&self) -> String {
        match self {
            StoreTarget::Store(url) => url.to_string(),
            StoreTarget::Admin(target) => target.base_url.clone(),
        }
    }

    /// Opens an existing store. A missing one is an error, not a new empty
    /// file or schema (see the module documentation).
    fn open(&self) -> Result<Backend, Failure> {
        match self {
            StoreTarget::Store(url) => {
                let store = wait(url.open(OpenOptions::default().create(false)))
                    .map_err(|e| missing_or(&self.label(), &e))?;
                Ok(Backend::Store(Rc::new(CasCoordinator::new(
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

/// A store opened without creating it failed: a SQLite file that is not
/// there gets the advice of what creates it; anything else is
/// [`store_failure`].
fn missing_or(label: &str, e: &StoreError) -> Failure {
    if e.code() != Some(cronslot_sqlite::MISSING) {
        return store_failure(e);
    }
    let cwd = std::env::current_dir()
        .map(|d| format!(" (relative paths start at {})", d.display()))
        .unwrap_or_default();
    Failure::bad_input(format!(
        "error: store {label} does not exist yet: `cronslot init --store {label}` creates it \
         (so does `cronslot run`); or check the path{cwd}"
    ))
}

/// A store that cannot be opened or used: a server that does not answer
/// (worth trying again: exit 1), or a location, password, privilege or
/// schema that will not work as given (exit 2). The store's message names
/// the store without its password and says what to do.
pub fn store_failure(e: &StoreError) -> Failure {
    let message = format!("error: {}", e.message);
    match e.kind {
        StoreErrorKind::Unavailable | StoreErrorKind::Ambiguous => Failure::problem(message),
        _ => Failure::bad_input(message),
    }
}

/// An opened store and the coordinator over it.
pub enum Backend {
    Store(Rc<CasCoordinator<AnyStore>>),
    Admin(admin::AdminStore),
}

/// Runs `$body` with `$c` bound to the backend's coordinator, whatever its
/// type: a store this process opened, or a Worker's admin routes.
macro_rules! with_backend {
    ($backend:expr, $c:ident => $body:expr) => {
        match $backend {
            $crate::store::Backend::Store(coordinator) => {
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
        Session::open_checked(args, |manifest, path| match job {
            Some(name) => find_job(manifest, path, name).map(|_| ()),
            None => Ok(()),
        })
    }

    /// [`open`](Session::open) with the manifest checked by `check` (the
    /// manifest, its path) before the store is opened.
    pub fn open_checked(
        args: &StoreArgs,
        check: impl FnOnce(&Manifest, &std::path::Path) -> Result<(), Failure>,
    ) -> Result<Session, Failure> {
        let target = StoreTarget::parse(&args.store, args.token_env.as_deref())?;
        let manifest_path = args.manifest.path();
        let manifest = load_manifest(&manifest_path)?;
        check(&manifest, &manifest_path)?;
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

    /// [`open`](Session::open) for an operation on a job's record, or with
    /// `--key` on one schedule of a dynamic job: the job (dynamic when a
    /// key is given) and the key are checked before the store is opened.
    pub fn open_operand(
        args: &StoreArgs,
        job: &str,
        key: Option<&str>,
    ) -> Result<(Session, Option<ScheduleKey>), Failure> {
        let Some(key) = key else {
            return Ok((Session::open(args, Some(job))?, None));
        };
        let key =
            ScheduleKey::new(key).map_err(|e| Failure::bad_input(format!("error: --key: {e}")))?;
        let session = Session::open_checked(args, |manifest, path| {
            find_template(manifest, path, job).map(|_| ())
        })?;
        Ok((session, Some(key)))
    }

    /// The spec an operation acts through: the job's, or with `key` the
    /// schedule's as the store holds it (read now: its version in force).
    /// A schedule that does not exist, or was deleted, is a problem (exit
    /// 1), named.
    pub fn operand(
        &self,
        job: &str,
        key: Option<&ScheduleKey>,
    ) -> Result<Cow<'_, JobSpec>, Failure> {
        let Some(key) = key else {
            return self.job(job).map(Cow::Borrowed);
        };
        let template = find_template(&self.manifest, &self.manifest_path, job)?;
        let read = match &self.backend {
            Backend::Store(c) => wait(cronslot_runtime::admin::schedule_job_spec(
                &**c,
                &self.manifest,
                &template.name,
                key,
            ))
            .map_err(|reply| {
                serde_json::from_str::<cronslot_runtime::admin::ErrorDoc>(&reply.body)
                    .map_or(reply.body, |doc| doc.message)
            }),
            Backend::Admin(a) => wait(a.schedule_spec(template, key)).map_err(|e| e.to_string()),
        };
        read.map(Cow::Owned)
            .map_err(|message| Failure::problem(format!("error: {message} (store {})", self.store)))
    }

    /// One job, or every job of the manifest in file order.
    pub fn jobs(&self, only: Option<&str>) -> Result<Vec<&JobSpec>, Failure> {
        match only {
            Some(name) => Ok(vec![self.job(name)?]),
            None => Ok(self.manifest.jobs.iter().collect()),
        }
    }
}
