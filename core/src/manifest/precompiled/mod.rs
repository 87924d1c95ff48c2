//! The precompiled manifest: a validated [`Manifest`] written as JSON, to
//! load where the TOML parser is not worth its size (a Lambda function
//! reads its manifest once per cold start; the TOML parser would add about
//! 200 KB to it).
//!
//! A build script parses and validates `cronslot.toml` with
//! [`super::parse_manifest`] (errors with file, line and column stay where
//! they help: at build time), writes [`Manifest::to_precompiled`], and the
//! program embeds the result and loads it with [`load_precompiled`]. The
//! JSON holds the *resolved* jobs (every policy with its value), so loading
//! merges nothing; it checks everything again, though, with the rules the
//! TOML path applies to single values and across keys (`rules.rs`: the
//! same sentences, and a problem of `[defaults]` is reported there, not at
//! every job that inherits the value). A hand-edited or truncated file is
//! refused with a sentence per problem, never a panic, and a valid one
//! gives the same [`Manifest`],
//! [`JobSpec::spec_hash`](super::JobSpec::spec_hash) included.
//!
//! The format is versioned (`"format"`, `"version"`): a file written by an
//! incompatible cronslot is refused with a message saying so. Version 2
//! writes each job's policies only where they differ from `[defaults]`
//! (and a command's timeout only where it differs from the default one),
//! on one line: a manifest of 10,000 jobs is about 1 MB instead of 8.4 MB,
//! which is what a Lambda cold start or a Worker isolate reads and keeps.
//! Version 1 files (every policy on every job) still load.
//!
//! Here: the file as a whole (its header, its zones, its warnings) and
//! loading it. The policies and their checks are in `policy.rs`, version
//! 2's patches of them in `patch.rs`, and a job with its action in
//! `job.rs`: each part of the format next to what reads it.

mod job;
mod patch;
mod policy;
#[cfg(all(test, feature = "toml"))]
mod tests;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use self::job::{JobDoc, TemplateDoc};
use self::policy::{DefaultsDoc, defaults_policy};
use super::base64;
use super::duration::parse_duration;
use super::{Diagnostic, Manifest, Severity};
use crate::schedule::{Zone, ZoneError};

/// The value of the `"format"` key.
pub const PRECOMPILED_FORMAT: &str = "cronslot-manifest";
/// The version of the layout below; a change of meaning needs a new one.
pub const PRECOMPILED_VERSION: u32 = 2;
/// The oldest version still read: version 1 is version 2 with every policy
/// written out.
const OLDEST_READ_VERSION: u32 = 1;

/// Why a precompiled manifest was refused: one sentence per problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrecompiledError {
    /// Every problem found, one sentence each; most begin with where the
    /// problem is (`jobs[2]: …`). Never empty.
    pub problems: Vec<String>,
}

impl fmt::Display for PrecompiledError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid precompiled manifest")?;
        match self.problems.as_slice() {
            [one] => write!(f, ": {one}"),
            many => {
                for p in many {
                    write!(f, "\n- {p}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for PrecompiledError {}

impl Manifest {
    /// The manifest as precompiled JSON (see the module documentation);
    /// `source` names where it came from (the TOML file), for messages.
    pub fn to_precompiled(&self, source: &str) -> String {
        let defaults = DefaultsDoc::from(&self.defaults);
        let policy = defaults_policy(&self.defaults);
        let jobs = self
            .jobs
            .iter()
            .map(|job| JobDoc::new(job, &policy, self.defaults.timeout))
            .collect();
        let templates = self
            .templates
            .iter()
            .map(|t| TemplateDoc::new(t, &policy, self.defaults.timeout))
            .collect();
        let doc = Doc {
            format: PRECOMPILED_FORMAT.into(),
            version: PRECOMPILED_VERSION,
            source: source.into(),
            defaults,
            jobs,
            templates,
            warnings: self.warnings.iter().map(DiagnosticDoc::from).collect(),
            zones: self.zone_data(),
        };
        // Plain structs, maps with string keys: serialising cannot fail.
        serde_json::to_string(&doc).unwrap_or_default()
    }

    /// The TZif data (base64) of every zone the manifest names, and of
    /// those its dynamic jobs' schedules may name
    /// ([`JobTemplate::zones`](super::JobTemplate::zones)), so that a
    /// program built without the tz database (core's feature `tzdb`) knows
    /// them when it loads the precompiled form. UTC needs none.
    fn zone_data(&self) -> BTreeMap<String, String> {
        let mut zones = BTreeMap::new();
        let named = self.jobs.iter().map(|j| j.schedule.zone());
        let carried = self.templates.iter().flat_map(|t| t.zones.iter());
        for zone in named.chain(carried) {
            if zones.contains_key(zone.name()) {
                continue;
            }
            if let Some(data) = zone.tzif() {
                zones.insert(zone.name().to_string(), base64::encode(data));
            }
        }
        if !zones.contains_key(&self.defaults.timezone) {
            if let Some(data) = Zone::get(&self.defaults.timezone)
                .ok()
                .and_then(|z| z.tzif().map(base64::encode))
            {
                zones.insert(self.defaults.timezone.clone(), data);
            }
        }
        zones
    }
}

/// Loads a manifest written by [`Manifest::to_precompiled`], checking it
/// again (see the module documentation).
pub fn load_precompiled(json: &str) -> Result<Manifest, PrecompiledError> {
    let fail = |problem: String| PrecompiledError {
        problems: vec![problem],
    };
    if !json.trim_start().starts_with('{') {
        return Err(fail(
            "not a precompiled cronslot manifest, which is a JSON object written by Manifest::to_precompiled (a TOML manifest is read by parse_manifest)".into(),
        ));
    }
    // A file of another version says so instead of failing on whichever
    // key changed: when the document does not read, its header is read on
    // its own to tell why. (The header is not read first every time: that
    // is a second pass over a file of megabytes when there are many jobs.)
    let doc = match crate::json::from_str::<DocIn>(json) {
        Ok(doc) => {
            check_header(Some(doc.format.as_str()), Some(doc.version))?;
            doc
        }
        Err(error) => {
            let header: Header = crate::json::from_str(json)
                .map_err(|e| fail(format!("the precompiled manifest is not valid JSON: {e}")))?;
            check_header(header.format.as_deref(), header.version)?;
            return Err(fail(error.to_string()));
        }
    };

    let mut problems = Problems::default();
    let mut zones = embedded_zones(&doc.zones, &mut problems);
    let defaults_policy = doc.defaults.policy.complete("[defaults]", &mut problems);
    let defaults = defaults_policy
        .as_ref()
        .and_then(|p| doc.defaults.resolve(p, &mut zones, &mut problems));
    let mut jobs = Vec::with_capacity(doc.jobs.len());
    let mut names = BTreeSet::new();
    // Each job is read from its text and resolved before the next is read:
    // what loading holds at once is the specs, not every job's document.
    let default_timeout = doc.defaults.timeout.as_deref();
    each_named(
        &doc.jobs,
        "jobs",
        |job: &JobDoc<'_>| job.name.clone(),
        &mut names,
        &mut problems,
        |i, job, problems| {
            let policy = defaults_policy.as_ref()?;
            job.resolve(i, policy, default_timeout, &mut zones, problems)
                .map(|spec| jobs.push(spec))
        },
    );
    // A build without schedules serves no dynamic job: it refuses them
    // rather than carry their code (a Worker's size, docs/performance.md).
    #[cfg(not(feature = "schedules"))]
    let templates = {
        if !doc.templates.is_empty() {
            problems.push(
                "templates".into(),
                "the manifest has dynamic jobs, and this build serves none: it is built \
                 without the feature `schedules` (a Worker: cronslot-cf's)"
                    .into(),
            );
        }
        Vec::new()
    };
    #[cfg(feature = "schedules")]
    let templates = load_templates(
        &doc,
        &defaults_policy,
        &mut names,
        &mut zones,
        &mut problems,
    );
    if doc.jobs.is_empty() && doc.templates.is_empty() {
        problems.push("jobs".into(), "there is no job".into());
    }
    let warnings = doc
        .warnings
        .into_iter()
        .map(DiagnosticDoc::into_diagnostic)
        .collect();
    if !problems.0.is_empty() {
        return Err(PrecompiledError {
            problems: problems.0,
        });
    }
    match defaults {
        Some(defaults) => Ok(Manifest {
            defaults,
            jobs,
            templates,
            warnings,
        }),
        // Not reached: a defaults table that does not resolve reports a
        // problem.
        None => Err(fail("[defaults] cannot be resolved".into())),
    }
}

/// Refuses a file that is not a precompiled manifest of this version.
fn check_header(format: Option<&str>, version: Option<u32>) -> Result<(), PrecompiledError> {
    let fail = |problem: String| PrecompiledError {
        problems: vec![problem],
    };
    if format != Some(PRECOMPILED_FORMAT) {
        return Err(fail(format!(
            "not a precompiled cronslot manifest: \"format\" is {}, expected {PRECOMPILED_FORMAT:?}",
            format.map_or_else(|| "missing".into(), |f| format!("{f:?}"))
        )));
    }
    if !version.is_some_and(|v| (OLDEST_READ_VERSION..=PRECOMPILED_VERSION).contains(&v)) {
        return Err(fail(format!(
            "the precompiled manifest has version {}, and this cronslot reads versions {OLDEST_READ_VERSION} to {PRECOMPILED_VERSION}; precompile the manifest again with this cronslot",
            version.map_or_else(|| "missing".into(), |v| v.to_string())
        )));
    }
    Ok(())
}

/// The zones jobs name, each built once and shared by the jobs in it: the
/// ones the file carries, and those looked up by name (UTC, or every zone
/// of a file written without its zones), so that loading does not build a
/// zone per job.
struct Zones(BTreeMap<String, Result<Zone, ZoneError>>);

impl Zones {
    /// The zone the file carries under `name`, else the bundled one.
    fn get(&mut self, name: &str) -> Result<Zone, ZoneError> {
        if let Some(found) = self.0.get(name) {
            return found.clone();
        }
        let found = Zone::get(name);
        self.0.insert(name.to_string(), found.clone());
        found
    }
}

/// The dynamic jobs, each read from its text and resolved with the
/// defaults, with every zone the file carries for their schedules.
#[cfg(feature = "schedules")]
fn load_templates<'a>(
    doc: &'a DocIn<'a>,
    defaults_policy: &Option<policy::PolicyDoc<'_>>,
    names: &mut BTreeSet<std::borrow::Cow<'a, str>>,
    zones: &mut Zones,
    problems: &mut Problems,
) -> Vec<crate::manifest::JobTemplate> {
    let carried: Vec<Zone> = doc
        .zones
        .keys()
        .filter_map(|name| zones.0.get(name).and_then(|z| z.clone().ok()))
        .collect();
    let mut templates = Vec::with_capacity(doc.templates.len());
    let default_timeout = doc.defaults.timeout.as_deref();
    each_named(
        &doc.templates,
        "templates",
        |template: &TemplateDoc<'_>| template.name.clone(),
        names,
        problems,
        |i, template, problems| {
            let policy = defaults_policy.as_ref()?;
            template
                .resolve(i, policy, default_timeout, &carried, zones, problems)
                .map(|t| templates.push(t))
        },
    );
    templates
}

/// Reads each document of the list `list` from its text, refuses a name
/// `names` already has, and hands it to `resolve` with its index; a text
/// that does not read is a problem at `list[i]`, and the next is read.
fn each_named<'a, D: serde::Deserialize<'a>>(
    texts: &[&'a serde_json::value::RawValue],
    list: &str,
    name: impl Fn(&D) -> Text<'a>,
    names: &mut BTreeSet<Text<'a>>,
    problems: &mut Problems,
    mut resolve: impl FnMut(usize, D, &mut Problems) -> Option<()>,
) {
    for (i, text) in texts.iter().enumerate() {
        let doc: D = match crate::json::from_str(text.get()) {
            Ok(doc) => doc,
            Err(e) => {
                problems.push(format!("{list}[{i}]"), e.to_string());
                continue;
            }
        };
        let named = name(&doc);
        if !names.insert(named.clone()) {
            problems.push(
                format!("{list}[{i}]"),
                format!("duplicate job name {named:?}"),
            );
        }
        resolve(i, doc, problems);
    }
}

/// The zones carried as TZif data, by name; a bad entry is a problem.
fn embedded_zones(data: &BTreeMap<String, String>, problems: &mut Problems) -> Zones {
    let mut zones = BTreeMap::new();
    for (name, text) in data {
        let place = format!("zones.{name:?}");
        match base64::decode(text) {
            Ok(bytes) => match Zone::from_tzif(name, &bytes) {
                Ok(zone) => {
                    zones.insert(name.clone(), Ok(zone));
                }
                Err(e) => problems.push(place, e.to_string()),
            },
            Err(e) => problems.push(place, format!("not base64 TZif data: {e}")),
        }
    }
    Zones(zones)
}

#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn push(&mut self, place: String, message: String) {
        self.0.push(format!("{place}: {message}"));
    }
}

/// The problems of one table (`place`: `[defaults]` or a job), reported
/// for the values the table writes itself (`own`), as the TOML path does:
/// a value a job inherits is checked with `[defaults]`, and its problem is
/// reported once, there.
struct Report<'p> {
    place: &'p str,
    problems: &'p mut Problems,
}

impl Report<'_> {
    /// Reports `problem` where `own`; whether there is one.
    fn problem(&mut self, own: bool, problem: Option<String>) -> bool {
        match problem {
            Some(p) => {
                if own {
                    self.problems.push(self.place.into(), p);
                }
                true
            }
            None => false,
        }
    }

    /// The duration `text` of `key`; `None` (a problem where `own`) when it
    /// does not read.
    fn duration(&mut self, own: bool, key: &str, text: &str) -> Option<Duration> {
        parse_duration(text)
            .map_err(|e| self.problem(own, Some(format!("{key}: {e}"))))
            .ok()
    }
}

#[derive(Deserialize)]
struct Header {
    format: Option<String>,
    version: Option<u32>,
}

/// The file as written.
#[derive(Serialize)]
struct Doc<'a> {
    format: String,
    version: u32,
    /// The TOML file the manifest was precompiled from.
    source: String,
    #[serde(borrow)]
    defaults: DefaultsDoc<'a>,
    #[serde(borrow)]
    jobs: Vec<JobDoc<'a>>,
    /// The dynamic jobs: templates of their schedules.
    #[serde(borrow, skip_serializing_if = "Vec::is_empty")]
    templates: Vec<TemplateDoc<'a>>,
    warnings: Vec<DiagnosticDoc>,
    /// TZif data (base64) of the zones named above ([`Manifest::zone_data`]).
    /// Optional: a file without it still loads where the tz database is
    /// linked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    zones: BTreeMap<String, String>,
}

/// The file as read: [`Doc`] with each job left as its text, read one at
/// a time.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DocIn<'a> {
    format: String,
    version: u32,
    #[serde(rename = "source")]
    _source: String,
    #[serde(borrow)]
    defaults: DefaultsDoc<'a>,
    #[serde(borrow)]
    jobs: Vec<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    templates: Vec<&'a serde_json::value::RawValue>,
    warnings: Vec<DiagnosticDoc>,
    #[serde(default)]
    zones: BTreeMap<String, String>,
}

/// Text of a job that is only read while loading (a duration, a zone name):
/// borrowed from the file where it has no escapes, so that loading
/// thousands of jobs does not copy each of their values first.
type Text<'a> = Cow<'a, str>;

/// A duration as the manifest writes it (`"15m"`), whole seconds.
type DurationText<'a> = Text<'a>;

/// A warning found when the manifest was validated, kept so the loaded
/// manifest is the validated one.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiagnosticDoc {
    warning: bool,
    line: usize,
    column: usize,
    message: String,
    source_line: String,
    span: Range<usize>,
    file: String,
}

impl From<&Diagnostic> for DiagnosticDoc {
    fn from(d: &Diagnostic) -> DiagnosticDoc {
        DiagnosticDoc {
            warning: d.severity == Severity::Warning,
            line: d.line,
            column: d.column,
            message: d.message.clone(),
            source_line: d.source_line.clone(),
            span: d.span.clone(),
            file: d.file.clone(),
        }
    }
}

impl DiagnosticDoc {
    fn into_diagnostic(self) -> Diagnostic {
        Diagnostic {
            severity: if self.warning {
                Severity::Warning
            } else {
                Severity::Error
            },
            file: self.file,
            line: self.line,
            column: self.column,
            message: self.message,
            source_line: self.source_line,
            span: self.span,
        }
    }
}
