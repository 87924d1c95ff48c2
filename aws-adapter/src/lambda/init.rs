//! Cold start: the manifest (embedded or from a file), checked against the
//! registered functions and against what can run inside Lambda. Every
//! problem is reported at once, and a function with any problem does not
//! start: a misconfiguration surfaces as a failed deployment, not as
//! slots that quietly never run.

use std::fmt;
use std::path::PathBuf;

use cronslot_core::manifest::{Action, Manifest, Trigger, parse_manifest};

use super::event::TICK_RULE;
use super::http;
use super::jobs::Jobs;

/// The environment variable naming a manifest file.
pub const MANIFEST_ENV: &str = "CRONSLOT_MANIFEST";

/// Why the function cannot start.
#[derive(Clone, PartialEq, Eq)]
pub struct InitError {
    pub problems: Vec<String>,
}

impl InitError {
    pub fn one(problem: impl Into<String>) -> InitError {
        InitError {
            problems: vec![problem.into()],
        }
    }
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "cronslot cannot start: {one}"),
            many => {
                f.write_str("cronslot cannot start:")?;
                for p in many {
                    write!(f, "\n- {p}")?;
                }
                Ok(())
            }
        }
    }
}

/// The same text as `Display`: a `main` that returns this error prints it
/// with `Debug`, and the log should read the same either way.
impl fmt::Debug for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for InitError {}

/// Where the manifest comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSource {
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Embedded { name: String, text: String },
    Path(PathBuf),
    Env,
}

impl ManifestSource {
    /// A manifest compiled into the binary:
    /// `ManifestSource::embedded("cronslot.toml", include_str!("../cronslot.toml"))`.
    /// If `CRONSLOT_MANIFEST` is set when the function starts, the file it
    /// names is read instead (a schedule can then change without a
    /// rebuild; the registered functions must still match it).
    pub fn embedded(name: &str, text: &str) -> ManifestSource {
        ManifestSource {
            kind: Kind::Embedded {
                name: name.to_string(),
                text: text.to_string(),
            },
        }
    }

    /// A manifest file (relative paths are relative to the working
    /// directory: `/var/task` in Lambda, where the package is unpacked).
    pub fn path(path: impl Into<PathBuf>) -> ManifestSource {
        ManifestSource {
            kind: Kind::Path(path.into()),
        }
    }

    /// The file named by `CRONSLOT_MANIFEST` (required).
    pub fn from_env() -> ManifestSource {
        ManifestSource { kind: Kind::Env }
    }

    /// Reads and validates the manifest; `env` is the value of
    /// `CRONSLOT_MANIFEST`, if set.
    pub fn load(&self, env: Option<&str>) -> Result<Manifest, InitError> {
        let env = env.filter(|v| !v.is_empty());
        let (name, text) = match (&self.kind, env) {
            (Kind::Embedded { .. } | Kind::Env, Some(path)) => read(PathBuf::from(path))?,
            (Kind::Embedded { name, text }, None) => (name.clone(), text.clone()),
            (Kind::Path(path), _) => read(path.clone())?,
            (Kind::Env, None) => {
                return Err(InitError::one(format!(
                    "{MANIFEST_ENV} is not set: set it to the manifest's path, or embed the manifest with ManifestSource::embedded"
                )));
            }
        };
        parse_manifest(&text, &name).map_err(|e| InitError {
            problems: vec![format!("the manifest has errors:\n{e}")],
        })
    }
}

fn read(path: PathBuf) -> Result<(String, String), InitError> {
    let name = path.display().to_string();
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((name, text)),
        Err(e) => Err(InitError::one(format!(
            "cannot read the manifest {name}: {e}"
        ))),
    }
}

/// Checks the manifest against the registered functions and the Lambda
/// environment. Returns the warnings (fine to start with, worth a log line).
pub fn check(manifest: &Manifest, jobs: &Jobs) -> Result<Vec<String>, InitError> {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut missing = Vec::new();
    for spec in &manifest.jobs {
        let name = spec.name.as_str();
        match &spec.action {
            Action::Function => {
                if jobs.get(name).is_none() {
                    missing.push(name);
                }
            }
            Action::Command { .. } => problems.push(format!(
                "job {name:?} is a command job: commands do not run in Lambda (the provided.al2023 runtime has no tools a command could rely on, and the package holds only the bootstrap); run it with the local runner, or make it an http job or a Rust function"
            )),
            Action::Http {
                url,
                method,
                headers,
                ..
            } => {
                if let Err(e) = http::validate(url, *method, headers) {
                    problems.push(format!("job {name:?}: its request cannot be built: {e}"));
                }
            }
        }
        if name == TICK_RULE.trim_start_matches(super::event::RULE_PREFIX)
            && spec.trigger == Trigger::Dedicated
        {
            warnings.push(format!(
                "job {name:?}: an EventBridge rule named {TICK_RULE:?} is the tick, not this job's trigger; trigger it with a Scheduler input or a rule whose detail names the job"
            ));
        }
    }
    if !missing.is_empty() {
        problems.push(format!(
            "no function is registered for the manifest's function jobs {}: register each with Jobs::register(\"<name>\", |ctx| async move {{ … }}), or give the job an http action",
            quoted(&missing)
        ));
    }
    let mut stray = Vec::new();
    let mut shadowed = Vec::new();
    for name in jobs.names() {
        match manifest.job(name).map(|s| &s.action) {
            None => stray.push(name),
            Some(Action::Function) => {}
            Some(_) => shadowed.push(name),
        }
    }
    if !stray.is_empty() {
        problems.push(format!(
            "functions are registered for jobs the manifest does not have: {} (a typo, or a job removed from the manifest?)",
            quoted(&stray)
        ));
    }
    if !shadowed.is_empty() {
        problems.push(format!(
            "functions are registered for jobs the manifest runs as http or command jobs, so they would never run: {}",
            quoted(&shadowed)
        ));
    }
    let twice: Vec<&str> = jobs.registered_twice().iter().map(String::as_str).collect();
    if !twice.is_empty() {
        problems.push(format!(
            "functions registered more than once (the last one would win): {}",
            quoted(&twice)
        ));
    }
    if problems.is_empty() {
        Ok(warnings)
    } else {
        Err(InitError { problems })
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
