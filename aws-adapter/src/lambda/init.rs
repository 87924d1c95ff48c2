//! Cold start: the manifest (embedded or from a file), checked against the
//! registered functions and against what can run inside Lambda. Every
//! problem is reported at once, and a function with any problem does not
//! start: a misconfiguration surfaces as a failed deployment, not as
//! slots that quietly never run.

use std::fmt;
use std::path::PathBuf;

use cronslot_core::manifest::{Manifest, Trigger, load_precompiled};

use super::event::TICK_RULE;
use super::http;
use super::platform::LambdaPlatform;
use cronslot_runtime::Jobs;
use jiff::Timestamp;
use std::rc::Rc;

/// The table's name.
pub const TABLE_ENV: &str = "CRONSLOT_TABLE";

/// An endpoint to use instead of DynamoDB's (DynamoDB Local, moto).
pub const ENDPOINT_ENV: &str = "CRONSLOT_DYNAMODB_ENDPOINT";

/// The environment variable naming a manifest file.
pub const MANIFEST_ENV: &str = "CRONSLOT_MANIFEST";

/// Why the function cannot start.
#[derive(Clone, PartialEq, Eq)]
pub struct InitError {
    /// Every problem found, one sentence each.
    pub problems: Vec<String>,
}

impl InitError {
    /// An error of a single problem.
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
///
/// A manifest is TOML (`cronslot.toml`, parsed and validated at cold
/// start; needs this crate's `toml` feature, on by default) or its
/// precompiled form: the JSON of `Manifest::to_precompiled`, validated when
/// it was written (by a build script, see `examples/aws-jobs/build.rs`) and
/// checked again when loaded, which spares the function the TOML parser. A
/// file is taken for a precompiled manifest when it begins with `{` (no
/// TOML document can).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSource {
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    #[cfg(feature = "toml")]
    Embedded {
        name: String,
        text: String,
    },
    Precompiled(String),
    Path(PathBuf),
    Env,
}

impl ManifestSource {
    /// A manifest compiled into the binary:
    /// `ManifestSource::embedded("cronslot.toml", include_str!("../cronslot.toml"))`.
    /// If `CRONSLOT_MANIFEST` is set when the function starts, the file it
    /// names is read instead (a schedule can then change without a
    /// rebuild; the registered functions must still match it).
    #[cfg(feature = "toml")]
    pub fn embedded(name: &str, text: &str) -> ManifestSource {
        ManifestSource {
            kind: Kind::Embedded {
                name: name.to_string(),
                text: text.to_string(),
            },
        }
    }

    /// A precompiled manifest compiled into the binary, as a build script
    /// wrote it:
    /// `ManifestSource::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json")))`.
    /// It needs no TOML parser, so it works without this crate's `toml`
    /// feature, and the function is smaller. `CRONSLOT_MANIFEST` overrides
    /// it as it does an embedded manifest; without the `toml` feature, the
    /// file it names must be precompiled too.
    pub fn precompiled(json: &str) -> ManifestSource {
        ManifestSource {
            kind: Kind::Precompiled(json.to_string()),
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
        let path = match (&self.kind, env) {
            (Kind::Path(path), _) => path.clone(),
            (_, Some(path)) => PathBuf::from(path),
            #[cfg(feature = "toml")]
            (Kind::Embedded { name, text }, None) => return parse_toml(name, text),
            (Kind::Precompiled(json), None) => {
                return load_precompiled(json).map_err(|e| InitError {
                    problems: vec![format!("the manifest has errors:\n{e}")],
                });
            }
            (Kind::Env, None) => {
                return Err(InitError::one(format!(
                    "{MANIFEST_ENV} is not set: set it to the manifest's path, or embed the manifest with ManifestSource::precompiled or ManifestSource::embedded"
                )));
            }
        };
        let (name, text) = read(path)?;
        // No TOML document begins with `{`.
        if text.trim_start().starts_with('{') {
            load_precompiled(&text).map_err(|e| InitError {
                problems: vec![format!("the manifest {name} has errors:\n{e}")],
            })
        } else {
            parse_toml(&name, &text)
        }
    }
}

#[cfg(feature = "toml")]
fn parse_toml(name: &str, text: &str) -> Result<Manifest, InitError> {
    cronslot_core::manifest::parse_manifest(text, name).map_err(|e| InitError {
        problems: vec![format!("the manifest has errors:\n{e}")],
    })
}

#[cfg(not(feature = "toml"))]
fn parse_toml(name: &str, _text: &str) -> Result<Manifest, InitError> {
    Err(InitError::one(format!(
        "the manifest {name} is TOML, and this function was built without a TOML parser (cronslot-aws without its `toml` feature): give it a precompiled manifest (Manifest::to_precompiled, as examples/aws-jobs/build.rs writes one), or build with the feature"
    )))
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

/// Checks the manifest against the registered functions (the runtime's
/// [`Jobs::check`], in the words every platform uses) and the Lambda
/// environment. Returns the warnings (fine to start with, worth a log line).
pub fn check(manifest: &Manifest, jobs: &Jobs) -> Result<Vec<String>, InitError> {
    let platform = LambdaPlatform::new(Rc::new(Timestamp::now), Rc::default());
    let mut problems = match jobs.check_all(&manifest.jobs, &manifest.templates, &platform) {
        Ok(()) => Vec::new(),
        Err(e) => e.problems().to_vec(),
    };
    let mut warnings = Vec::new();
    for spec in &manifest.jobs {
        let name = spec.name.as_str();
        if let Err(e) = http::validate(spec) {
            problems.push(format!("job {name:?}: its request cannot be built: {e}"));
        }
        if name == TICK_RULE.trim_start_matches(super::event::RULE_PREFIX)
            && spec.trigger == Trigger::Dedicated
        {
            warnings.push(format!(
                "job {name:?}: an EventBridge rule named {TICK_RULE:?} is the tick, not this job's trigger; trigger it with a Scheduler input or a rule whose detail names the job"
            ));
        }
    }
    if problems.is_empty() {
        Ok(warnings)
    } else {
        Err(InitError { problems })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the `toml` feature (`cargo test -p cronslot-aws
    /// --no-default-features --lib`) a TOML manifest is refused at start,
    /// saying why and what to do.
    #[cfg(not(feature = "toml"))]
    #[test]
    fn without_the_toml_feature_a_toml_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("cronslot-no-toml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("cronslot.toml");
        std::fs::write(&file, "[[job]]\nname = \"x\"\nschedule = \"* * * * *\"\n").expect("write");
        let e = ManifestSource::path(&file).load(None).expect_err("toml");
        let text = e.to_string();
        assert!(
            text.contains(
                "cronslot.toml is TOML, and this function was built without a TOML parser"
            ),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unset_variable_is_reported() {
        let e = ManifestSource::from_env()
            .load(Some(""))
            .expect_err("unset");
        assert!(
            e.to_string().contains("CRONSLOT_MANIFEST is not set"),
            "{e}"
        );
        let e = ManifestSource::precompiled("[[job]]")
            .load(None)
            .expect_err("not json");
        assert!(
            e.to_string()
                .contains("not a precompiled cronslot manifest"),
            "{e}"
        );
    }
}
