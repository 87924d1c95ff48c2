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
//! TOML path applies to single values and across keys (a hand-edited or
//! truncated file is refused with a sentence per problem, never a panic),
//! and gives the same [`Manifest`], [`JobSpec::spec_hash`] included.
//!
//! The format is versioned (`"format"`, `"version"`): a file written by an
//! incompatible cronslot is refused with a message saying so. Version 2
//! writes each job's policies only where they differ from `[defaults]`
//! (and a command's timeout only where it differs from the default one),
//! on one line: a manifest of 10,000 jobs is about 1 MB instead of 8.4 MB,
//! which is what a Lambda cold start or a Worker isolate reads and keeps.
//! Version 1 files (every policy on every job) still load.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::base64;
use super::duration::{format_duration, parse_duration};
use super::rules::{
    env_name_problem, env_value_problem, header_name_problem, header_value_problem, url_problem,
};
use super::{
    Action, CatchUp, Defaults, Delivery, Diagnostic, HistoryLimits, HttpMethod, JobName, JobSpec,
    Manifest, Overlap, RetryPolicy, Severity, Trigger, defaults,
};
use crate::cron::CronExpr;
use crate::schedule::{DstGap, DstOverlap, DstPolicy, Schedule, Zone, ZoneError};

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
        let doc = Doc {
            format: PRECOMPILED_FORMAT.into(),
            version: PRECOMPILED_VERSION,
            source: source.into(),
            defaults,
            jobs,
            warnings: self.warnings.iter().map(DiagnosticDoc::from).collect(),
            zones: self.zone_data(),
        };
        // Plain structs, maps with string keys: serialising cannot fail.
        serde_json::to_string(&doc).unwrap_or_default()
    }

    /// The TZif data (base64) of every zone the manifest names, so that a
    /// program built without the tz database (core's feature `tzdb`) knows
    /// them when it loads the precompiled form. UTC needs none.
    fn zone_data(&self) -> BTreeMap<String, String> {
        let mut zones = BTreeMap::new();
        for zone in self.jobs.iter().map(|j| j.schedule.zone()) {
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
    for (i, text) in doc.jobs.iter().enumerate() {
        let job: JobDoc<'_> = match crate::json::from_str(text.get()) {
            Ok(job) => job,
            Err(e) => {
                problems.push(format!("jobs[{i}]"), e.to_string());
                continue;
            }
        };
        if !names.insert(job.name.clone()) {
            problems.push(
                format!("jobs[{i}]"),
                format!("duplicate job name {:?}", job.name),
            );
        }
        let Some(policy) = &defaults_policy else {
            continue;
        };
        let default_timeout = doc.defaults.timeout.as_deref();
        if let Some(spec) = job.resolve(i, policy, default_timeout, &mut zones, &mut problems) {
            jobs.push(spec);
        }
    }
    if doc.jobs.is_empty() {
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

fn duration(problems: &mut Problems, place: &str, key: &str, text: &str) -> Option<Duration> {
    match parse_duration(text) {
        Ok(d) => Some(d),
        Err(e) => {
            problems.push(place.into(), format!("{key}: {e}"));
            None
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OverlapMode {
    Forbid,
    Allow,
    Replace,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryDoc<'a> {
    max_attempts: u32,
    #[serde(borrow)]
    backoff: DurationText<'a>,
    #[serde(borrow)]
    max_backoff: DurationText<'a>,
    past_next_slot: bool,
}

#[derive(Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryDoc {
    succeeded: u32,
    failed: u32,
}

/// The policies a job and `[defaults]` share, every one of them, as text:
/// a job's is its [`PolicyPatch`] over the defaults'.
struct PolicyDoc<'a> {
    timezone: Text<'a>,
    trigger: Trigger,
    lease: DurationText<'a>,
    starting_deadline: DurationText<'a>,
    catch_up: CatchUp,
    max_catch_up: u32,
    overlap: OverlapMode,
    /// Only with `overlap = "allow"`.
    max_concurrency: Option<u32>,
    retry: RetryDoc<'a>,
    delivery: Delivery,
    dst_gap: DstGap,
    dst_overlap: DstOverlap,
    skew_margin: DurationText<'a>,
    paused: bool,
    stale_after: Option<DurationText<'a>>,
    history: HistoryDoc,
}

/// [`PolicyDoc`] checked.
struct Policy {
    zone: Zone,
    trigger: Trigger,
    lease: Duration,
    starting_deadline: Duration,
    catch_up: CatchUp,
    max_catch_up: u32,
    overlap: Overlap,
    retry: RetryPolicy,
    delivery: Delivery,
    dst: DstPolicy,
    skew_margin: Duration,
    paused: bool,
    stale_after: Option<Duration>,
    history: HistoryLimits,
}

#[allow(clippy::too_many_arguments)]
impl PolicyDoc<'_> {
    fn new(
        timezone: &str,
        trigger: Trigger,
        lease: Duration,
        starting_deadline: Duration,
        catch_up: CatchUp,
        max_catch_up: u32,
        overlap: Overlap,
        retry: &RetryPolicy,
        delivery: Delivery,
        dst: DstPolicy,
        skew_margin: Duration,
        paused: bool,
        stale_after: Option<Duration>,
        history: HistoryLimits,
    ) -> PolicyDoc<'static> {
        let (overlap, max_concurrency) = match overlap {
            Overlap::Forbid => (OverlapMode::Forbid, None),
            Overlap::Allow { max_concurrency } => (OverlapMode::Allow, Some(max_concurrency)),
            Overlap::Replace => (OverlapMode::Replace, None),
        };
        PolicyDoc {
            timezone: timezone.to_string().into(),
            trigger,
            lease: format_duration(lease).into(),
            starting_deadline: format_duration(starting_deadline).into(),
            catch_up,
            max_catch_up,
            overlap,
            max_concurrency,
            retry: RetryDoc {
                max_attempts: retry.max_attempts,
                backoff: format_duration(retry.backoff).into(),
                max_backoff: format_duration(retry.max_backoff).into(),
                past_next_slot: retry.past_next_slot,
            },
            delivery,
            dst_gap: dst.gap,
            dst_overlap: dst.overlap,
            skew_margin: format_duration(skew_margin).into(),
            paused,
            stale_after: stale_after.map(|d| format_duration(d).into()),
            history: HistoryDoc {
                succeeded: history.succeeded,
                failed: history.failed,
            },
        }
    }

    /// Checks the values on their own and across keys, as the TOML path
    /// does; `None` when a value is bad (reported under `place`).
    fn resolve(&self, place: &str, zones: &mut Zones, problems: &mut Problems) -> Option<Policy> {
        let before = problems.0.len();
        let mut report = |message: String| problems.push(place.into(), message);
        let zone = match zones.get(&self.timezone) {
            Ok(zone) if zone.name() == self.timezone => Some(zone),
            Ok(zone) => {
                report(format!(
                    "timezone {:?} is not written by its canonical name {:?}",
                    self.timezone,
                    zone.name()
                ));
                None
            }
            Err(e) => {
                report(format!("unknown time zone: {e}"));
                None
            }
        };
        let lease = duration(problems, place, "lease", &self.lease);
        let starting_deadline = duration(
            problems,
            place,
            "starting_deadline",
            &self.starting_deadline,
        );
        let backoff = duration(problems, place, "retry.backoff", &self.retry.backoff);
        let max_backoff = duration(
            problems,
            place,
            "retry.max_backoff",
            &self.retry.max_backoff,
        );
        let skew_margin = duration(problems, place, "skew_margin", &self.skew_margin);
        let stale_after = self
            .stale_after
            .as_ref()
            .map(|text| duration(problems, place, "stale_after", text));
        let mut report = |message: String| problems.push(place.into(), message);
        if let Some(lease) = lease.filter(|l| *l < defaults::MIN_LEASE) {
            report(format!(
                "lease {} is shorter than the minimum of {}",
                format_duration(lease),
                format_duration(defaults::MIN_LEASE)
            ));
        }
        if starting_deadline == Some(Duration::ZERO) {
            report("starting_deadline must be longer than 0s".into());
        }
        if stale_after == Some(Some(Duration::ZERO)) {
            report("stale_after must be longer than 0s".into());
        }
        let overlap = match (self.overlap, self.max_concurrency) {
            (OverlapMode::Forbid, None) => Overlap::Forbid,
            (OverlapMode::Replace, None) => Overlap::Replace,
            (OverlapMode::Allow, Some(n)) if (1..=defaults::MAX_CONCURRENCY_LIMIT).contains(&n) => {
                Overlap::Allow { max_concurrency: n }
            }
            (OverlapMode::Allow, Some(n)) => {
                report(format!(
                    "max_concurrency {n} is outside 1 to {}",
                    defaults::MAX_CONCURRENCY_LIMIT
                ));
                Overlap::Forbid
            }
            (OverlapMode::Allow, None) => {
                report("overlap \"allow\" needs its max_concurrency".into());
                Overlap::Forbid
            }
            (_, Some(_)) => {
                report("max_concurrency applies only to overlap \"allow\"".into());
                Overlap::Forbid
            }
        };
        if self.retry.max_attempts == 0 {
            report("retry.max_attempts must be at least 1 (the first attempt counts)".into());
        }
        if let (Some(b), Some(m)) = (backoff, max_backoff) {
            if b > m {
                report(format!(
                    "retry.backoff {} is longer than retry.max_backoff {}",
                    format_duration(b),
                    format_duration(m)
                ));
            }
        }
        if let (Some(s), Some(l)) = (skew_margin, lease) {
            if s >= l {
                report(format!(
                    "skew_margin {} must be shorter than the lease {}",
                    format_duration(s),
                    format_duration(l)
                ));
            }
        }
        if self.catch_up == CatchUp::All && self.max_catch_up == 0 {
            report("max_catch_up = 0 with catch_up = \"all\" catches up nothing".into());
        }
        for (key, n) in [
            ("history.succeeded", self.history.succeeded),
            ("history.failed", self.history.failed),
        ] {
            if n > defaults::HISTORY_LIMIT {
                report(format!(
                    "{key} {n} is above the limit of {}",
                    defaults::HISTORY_LIMIT
                ));
            }
        }
        if problems.0.len() > before {
            return None;
        }
        Some(Policy {
            zone: zone?,
            trigger: self.trigger,
            lease: lease?,
            starting_deadline: starting_deadline?,
            catch_up: self.catch_up,
            max_catch_up: self.max_catch_up,
            overlap,
            retry: RetryPolicy {
                max_attempts: self.retry.max_attempts,
                backoff: backoff?,
                max_backoff: max_backoff?,
                past_next_slot: self.retry.past_next_slot,
            },
            delivery: self.delivery,
            dst: DstPolicy {
                gap: self.dst_gap,
                overlap: self.dst_overlap,
            },
            skew_margin: skew_margin?,
            paused: self.paused,
            stale_after: stale_after.flatten(),
            history: HistoryLimits {
                succeeded: self.history.succeeded,
                failed: self.history.failed,
            },
        })
    }
}

/// The policies as the file writes them: every one in `[defaults]`, and in
/// a job only those that differ from the defaults' (version 1 wrote them
/// all, which reads the same). In a job, `stale_after` has three states:
/// absent (the default's), `null` (none, where the default has one) or a
/// duration.
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyPatch<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    timezone: Option<Text<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trigger: Option<Trigger>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    lease: Option<DurationText<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    starting_deadline: Option<DurationText<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    catch_up: Option<CatchUp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_catch_up: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    overlap: Option<OverlapMode>,
    /// Written with `overlap`, whenever either differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_concurrency: Option<u32>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    retry: Option<RetryDoc<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delivery: Option<Delivery>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dst_gap: Option<DstGap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dst_overlap: Option<DstOverlap>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    skew_margin: Option<DurationText<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paused: Option<bool>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    stale_after: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<HistoryDoc>,
}

/// The text of `t`, borrowed.
fn borrowed<'b>(t: &'b Option<Text<'_>>) -> Option<Text<'b>> {
    t.as_deref().map(Cow::Borrowed)
}

/// A key that is present, even as `null`, is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `job` where it differs from `default`.
fn differing<T: PartialEq + Clone>(job: &T, default: &T) -> Option<T> {
    (job != default).then(|| job.clone())
}

impl PolicyPatch<'_> {
    /// `[defaults]`' policy as written: every key (`stale_after` and
    /// `max_concurrency` only when they have a value).
    fn whole(p: &PolicyDoc<'static>) -> PolicyPatch<'static> {
        PolicyPatch {
            timezone: Some(p.timezone.clone()),
            trigger: Some(p.trigger),
            lease: Some(p.lease.clone()),
            starting_deadline: Some(p.starting_deadline.clone()),
            catch_up: Some(p.catch_up),
            max_catch_up: Some(p.max_catch_up),
            overlap: Some(p.overlap),
            max_concurrency: p.max_concurrency,
            retry: Some(p.retry.clone()),
            delivery: Some(p.delivery),
            dst_gap: Some(p.dst_gap),
            dst_overlap: Some(p.dst_overlap),
            skew_margin: Some(p.skew_margin.clone()),
            paused: Some(p.paused),
            stale_after: p.stale_after.as_ref().map(|t| Some(t.to_string())),
            history: Some(p.history),
        }
    }

    /// `[defaults]`' whole policy; `None` when a key is missing (each one
    /// reported under `place`).
    fn complete(&self, place: &str, problems: &mut Problems) -> Option<PolicyDoc<'_>> {
        let before = problems.0.len();
        let mut need = |key: &str, present: bool| {
            if !present {
                problems.push(place.into(), format!("{key} is missing"));
            }
        };
        need("timezone", self.timezone.is_some());
        need("trigger", self.trigger.is_some());
        need("lease", self.lease.is_some());
        need("starting_deadline", self.starting_deadline.is_some());
        need("catch_up", self.catch_up.is_some());
        need("max_catch_up", self.max_catch_up.is_some());
        need("overlap", self.overlap.is_some());
        need("retry", self.retry.is_some());
        need("delivery", self.delivery.is_some());
        need("dst_gap", self.dst_gap.is_some());
        need("dst_overlap", self.dst_overlap.is_some());
        need("skew_margin", self.skew_margin.is_some());
        need("paused", self.paused.is_some());
        need("history", self.history.is_some());
        if problems.0.len() > before {
            return None;
        }
        let retry = self.retry.as_ref()?;
        Some(PolicyDoc {
            timezone: borrowed(&self.timezone)?,
            trigger: self.trigger?,
            lease: borrowed(&self.lease)?,
            starting_deadline: borrowed(&self.starting_deadline)?,
            catch_up: self.catch_up?,
            max_catch_up: self.max_catch_up?,
            overlap: self.overlap?,
            max_concurrency: self.max_concurrency,
            retry: RetryDoc {
                max_attempts: retry.max_attempts,
                backoff: Cow::Borrowed(&retry.backoff),
                max_backoff: Cow::Borrowed(&retry.max_backoff),
                past_next_slot: retry.past_next_slot,
            },
            delivery: self.delivery?,
            dst_gap: self.dst_gap?,
            dst_overlap: self.dst_overlap?,
            skew_margin: borrowed(&self.skew_margin)?,
            paused: self.paused?,
            stale_after: self
                .stale_after
                .as_ref()
                .and_then(|t| t.as_deref().map(Cow::Borrowed)),
            history: self.history?,
        })
    }

    /// What `job` changes of `defaults`.
    fn between(job: &PolicyDoc<'static>, defaults: &PolicyDoc<'_>) -> PolicyPatch<'static> {
        let overlap_differs =
            job.overlap != defaults.overlap || job.max_concurrency != defaults.max_concurrency;
        PolicyPatch {
            timezone: (job.timezone != defaults.timezone).then(|| job.timezone.clone()),
            trigger: differing(&job.trigger, &defaults.trigger),
            lease: (job.lease != defaults.lease).then(|| job.lease.clone()),
            starting_deadline: (job.starting_deadline != defaults.starting_deadline)
                .then(|| job.starting_deadline.clone()),
            catch_up: differing(&job.catch_up, &defaults.catch_up),
            max_catch_up: differing(&job.max_catch_up, &defaults.max_catch_up),
            overlap: overlap_differs.then_some(job.overlap),
            max_concurrency: job.max_concurrency.filter(|_| overlap_differs),
            retry: (job.retry != defaults.retry).then(|| job.retry.clone()),
            delivery: differing(&job.delivery, &defaults.delivery),
            dst_gap: differing(&job.dst_gap, &defaults.dst_gap),
            dst_overlap: differing(&job.dst_overlap, &defaults.dst_overlap),
            skew_margin: (job.skew_margin != defaults.skew_margin).then(|| job.skew_margin.clone()),
            paused: differing(&job.paused, &defaults.paused),
            stale_after: (job.stale_after != defaults.stale_after)
                .then(|| job.stale_after.as_ref().map(|t| t.to_string())),
            history: differing(&job.history, &defaults.history),
        }
    }

    fn is_empty(&self) -> bool {
        let PolicyPatch {
            timezone,
            trigger,
            lease,
            starting_deadline,
            catch_up,
            max_catch_up,
            overlap,
            max_concurrency,
            retry,
            delivery,
            dst_gap,
            dst_overlap,
            skew_margin,
            paused,
            stale_after,
            history,
        } = self;
        timezone.is_none()
            && trigger.is_none()
            && lease.is_none()
            && starting_deadline.is_none()
            && catch_up.is_none()
            && max_catch_up.is_none()
            && overlap.is_none()
            && max_concurrency.is_none()
            && retry.is_none()
            && delivery.is_none()
            && dst_gap.is_none()
            && dst_overlap.is_none()
            && skew_margin.is_none()
            && paused.is_none()
            && stale_after.is_none()
            && history.is_none()
    }

    /// The job's whole policy: this patch over the defaults'.
    fn over<'b>(&'b self, d: &'b PolicyDoc<'_>) -> PolicyDoc<'b> {
        let text = |own: &'b Option<Text<'_>>, default: &'b Text<'_>| -> Text<'b> {
            Cow::Borrowed(own.as_deref().unwrap_or(default))
        };
        let (overlap, max_concurrency) = match self.overlap {
            Some(mode) => (mode, self.max_concurrency),
            None => (d.overlap, self.max_concurrency.or(d.max_concurrency)),
        };
        let retry = self.retry.as_ref().unwrap_or(&d.retry);
        PolicyDoc {
            timezone: text(&self.timezone, &d.timezone),
            trigger: self.trigger.unwrap_or(d.trigger),
            lease: text(&self.lease, &d.lease),
            starting_deadline: text(&self.starting_deadline, &d.starting_deadline),
            catch_up: self.catch_up.unwrap_or(d.catch_up),
            max_catch_up: self.max_catch_up.unwrap_or(d.max_catch_up),
            overlap,
            max_concurrency,
            retry: RetryDoc {
                max_attempts: retry.max_attempts,
                backoff: Cow::Borrowed(&retry.backoff),
                max_backoff: Cow::Borrowed(&retry.max_backoff),
                past_next_slot: retry.past_next_slot,
            },
            delivery: self.delivery.unwrap_or(d.delivery),
            dst_gap: self.dst_gap.unwrap_or(d.dst_gap),
            dst_overlap: self.dst_overlap.unwrap_or(d.dst_overlap),
            skew_margin: text(&self.skew_margin, &d.skew_margin),
            paused: self.paused.unwrap_or(d.paused),
            stale_after: match &self.stale_after {
                Some(own) => own.as_deref().map(Cow::Borrowed),
                None => d.stale_after.as_deref().map(Cow::Borrowed),
            },
            history: self.history.unwrap_or(d.history),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DefaultsDoc<'a> {
    #[serde(borrow)]
    policy: PolicyPatch<'a>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout: Option<DurationText<'a>>,
}

/// `[defaults]`' whole policy.
fn defaults_policy(d: &Defaults) -> PolicyDoc<'static> {
    PolicyDoc::new(
        &d.timezone,
        d.trigger,
        d.lease,
        d.starting_deadline,
        d.catch_up,
        d.max_catch_up,
        d.overlap,
        &d.retry,
        d.delivery,
        d.dst,
        d.skew_margin,
        d.paused,
        d.stale_after,
        d.history,
    )
}

impl From<&Defaults> for DefaultsDoc<'static> {
    fn from(d: &Defaults) -> DefaultsDoc<'static> {
        DefaultsDoc {
            policy: PolicyPatch::whole(&defaults_policy(d)),
            timeout: d.timeout.map(|t| format_duration(t).into()),
        }
    }
}

impl DefaultsDoc<'_> {
    /// The defaults, `policy` being their whole policy
    /// ([`PolicyPatch::complete`]).
    fn resolve(
        &self,
        policy: &PolicyDoc<'_>,
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<Defaults> {
        let place = "[defaults]";
        let timeout = self
            .timeout
            .as_ref()
            .map(|text| duration(problems, place, "timeout", text));
        if timeout == Some(Some(Duration::ZERO)) {
            problems.push(place.into(), "timeout must be longer than 0s".into());
        }
        let p = policy.resolve(place, zones, problems)?;
        // A bad timeout was reported above.
        let timeout = match timeout {
            Some(None) => return None,
            t => t.flatten(),
        };
        if let Some(t) = timeout.filter(|t| *t > p.lease) {
            problems.push(
                place.into(),
                format!(
                    "timeout {} is longer than the lease {}",
                    format_duration(t),
                    format_duration(p.lease)
                ),
            );
        }
        Some(Defaults {
            timezone: p.zone.name().to_string(),
            trigger: p.trigger,
            lease: p.lease,
            starting_deadline: p.starting_deadline,
            catch_up: p.catch_up,
            max_catch_up: p.max_catch_up,
            overlap: p.overlap,
            retry: p.retry,
            delivery: p.delivery,
            dst: p.dst,
            skew_margin: p.skew_margin,
            paused: p.paused,
            stale_after: p.stale_after,
            history: p.history,
            timeout,
        })
    }
}

/// What runs for a slot; `"function"`, `{"command": {…}}` or
/// `{"http": {…}}`. A timeout is left out where it is `[defaults]`'
/// `timeout`; an empty `env` or `headers` is left out.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum ActionDoc<'a> {
    Function,
    Command {
        argv: Vec<String>,
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        timeout: Option<DurationText<'a>>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    Http {
        #[serde(borrow)]
        url: Text<'a>,
        #[serde(borrow)]
        method: Text<'a>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        timeout: Option<DurationText<'a>>,
    },
}

impl ActionDoc<'_> {
    /// `a` as written, its timeout left out when it is `default_timeout`.
    fn new(a: &Action, default_timeout: Option<Duration>) -> ActionDoc<'static> {
        let timeout =
            |t: &Duration| (Some(*t) != default_timeout).then(|| Cow::Owned(format_duration(*t)));
        match a {
            Action::Function => ActionDoc::Function,
            Action::Command {
                argv,
                timeout: t,
                env,
            } => ActionDoc::Command {
                argv: argv.clone(),
                timeout: timeout(t),
                env: env.clone(),
            },
            Action::Http {
                url,
                method,
                headers,
                timeout: t,
            } => ActionDoc::Http {
                url: url.clone().into(),
                method: method.as_str().into(),
                headers: headers.clone(),
                timeout: timeout(t),
            },
        }
    }

    /// The action, checked with the rules of the TOML path; a timeout left
    /// out is `default_timeout` (`[defaults]`' own, as written).
    fn resolve(
        &self,
        place: &str,
        lease: Duration,
        default_timeout: Option<&str>,
        problems: &mut Problems,
    ) -> Option<Action> {
        let before = problems.0.len();
        let timeout_of = |own: &Option<DurationText<'_>>, problems: &mut Problems| {
            let Some(text) = own.as_deref().or(default_timeout) else {
                problems.push(
                    place.into(),
                    "timeout is missing, and [defaults] has none".into(),
                );
                return None;
            };
            let t = duration(problems, place, "timeout", text)?;
            if t.is_zero() {
                problems.push(place.into(), "timeout must be longer than 0s".into());
            } else if t > lease {
                problems.push(
                    place.into(),
                    format!(
                        "timeout {} is longer than the lease {}",
                        format_duration(t),
                        format_duration(lease)
                    ),
                );
            }
            Some(t)
        };
        let action = match self {
            ActionDoc::Function => Action::Function,
            ActionDoc::Command { argv, timeout, env } => {
                let timeout = timeout_of(timeout, problems);
                let mut report = |message: String| problems.push(place.into(), message);
                match argv.first() {
                    None => report("command is empty".into()),
                    Some(program) if program.is_empty() => {
                        report("command[0], the program to run, is empty".into())
                    }
                    Some(_) => {}
                }
                for (i, arg) in argv.iter().enumerate() {
                    if arg.contains('\0') {
                        report(format!("command[{i}] contains a NUL character"));
                    }
                }
                for (name, value) in env {
                    if let Some(p) =
                        env_name_problem(name).or_else(|| env_value_problem(name, value))
                    {
                        report(p);
                    }
                }
                Action::Command {
                    argv: argv.clone(),
                    timeout: timeout?,
                    env: env.clone(),
                }
            }
            ActionDoc::Http {
                url,
                method,
                headers,
                timeout,
            } => {
                let timeout = timeout_of(timeout, problems);
                let mut report = |message: String| problems.push(place.into(), message);
                if let Some(problem) = url_problem(url) {
                    report(format!("http.url {url:?} {problem}"));
                }
                let parsed = HttpMethod::parse(method);
                if parsed.is_none() {
                    let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
                    report(format!(
                        "unknown HTTP method {method:?}; expected one of {}",
                        known.join(", ")
                    ));
                }
                for (name, value) in headers {
                    if let Some(p) =
                        header_name_problem(name).or_else(|| header_value_problem(name, value))
                    {
                        report(p);
                    }
                }
                Action::Http {
                    url: url.to_string(),
                    method: parsed?,
                    headers: headers.clone(),
                    timeout: timeout?,
                }
            }
        };
        (problems.0.len() == before).then_some(action)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobDoc<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    /// As written in the manifest (the spec hash reads it).
    #[serde(borrow)]
    schedule: Text<'a>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    start_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    end_at: Option<Timestamp>,
    #[serde(borrow)]
    action: ActionDoc<'a>,
    #[serde(borrow, default, skip_serializing_if = "PolicyPatch::is_empty")]
    policy: PolicyPatch<'a>,
}

impl JobDoc<'_> {
    /// `j` as written: what it shares with the defaults (their whole
    /// policy, their timeout) is left out.
    fn new(
        j: &JobSpec,
        defaults: &PolicyDoc<'_>,
        default_timeout: Option<Duration>,
    ) -> JobDoc<'static> {
        let policy = PolicyDoc::new(
            &j.timezone,
            j.trigger,
            j.lease,
            j.starting_deadline,
            j.catch_up,
            j.max_catch_up,
            j.overlap,
            &j.retry,
            j.delivery,
            j.schedule.policy(),
            j.skew_margin,
            j.paused,
            j.stale_after,
            j.history,
        );
        JobDoc {
            name: j.name.as_str().to_string().into(),
            schedule: j.schedule_text.clone().into(),
            start_at: j.start_at,
            end_at: j.end_at,
            action: ActionDoc::new(&j.action, default_timeout),
            policy: PolicyPatch::between(&policy, defaults),
        }
    }

    fn resolve(
        &self,
        index: usize,
        defaults: &PolicyDoc<'_>,
        default_timeout: Option<&str>,
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<JobSpec> {
        let place = format!("job {:?} (jobs[{index}])", self.name);
        let before = problems.0.len();
        let name = JobName::new(&*self.name)
            .map_err(|e| problems.push(place.clone(), e.to_string()))
            .ok();
        let cron = match CronExpr::parse(&self.schedule) {
            Ok(expr) if expr.never_fires() => {
                problems.push(
                    place.clone(),
                    format!(
                        "schedule {:?} never fires: no date matches it",
                        self.schedule
                    ),
                );
                None
            }
            Ok(expr) => Some(expr),
            Err(e) => {
                problems.push(
                    place.clone(),
                    format!("invalid schedule {:?}: {e}", self.schedule),
                );
                None
            }
        };
        if let (Some(s), Some(e)) = (self.start_at, self.end_at) {
            if s >= e {
                problems.push(
                    place.clone(),
                    format!("start_at {s} is not before end_at {e}"),
                );
            }
        }
        let p = self.policy.over(defaults).resolve(&place, zones, problems);
        let action = match &p {
            Some(p) => self
                .action
                .resolve(&place, p.lease, default_timeout, problems),
            None => None,
        };
        if problems.0.len() > before {
            return None;
        }
        let p = p?;
        Some(JobSpec {
            name: name?,
            schedule: Schedule::new(cron?, p.zone.clone(), p.dst),
            schedule_text: self.schedule.to_string(),
            timezone: p.zone.name().to_string(),
            trigger: p.trigger,
            lease: p.lease,
            starting_deadline: p.starting_deadline,
            catch_up: p.catch_up,
            max_catch_up: p.max_catch_up,
            overlap: p.overlap,
            retry: p.retry,
            delivery: p.delivery,
            skew_margin: p.skew_margin,
            paused: p.paused,
            start_at: self.start_at,
            end_at: self.end_at,
            stale_after: p.stale_after,
            history: p.history,
            action: action?,
        })
    }
}

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

#[cfg(all(test, feature = "toml"))]
mod tests {
    use super::*;
    use crate::manifest::parse_manifest;

    /// Every kind of value the manifest has, warnings included.
    const RICH: &str = r#"[defaults]
timezone = "Europe/Berlin"
trigger = "dedicated"
lease = "20m"
starting_deadline = "1h30m"
catch_up = "all"
max_catch_up = 500
overlap = "allow"
max_concurrency = 4
retry = { max_attempts = 5, backoff = "10s", max_backoff = "2m", past_next_slot = true }
delivery = "at_most_once"
dst_gap = "skip"
dst_overlap = "twice"
skew_margin = "7s"
paused = true
stale_after = "2d"
history = { succeeded = 9, failed = 0 }
timeout = "3m"

[[job]]
name = "night-batch"
schedule = "30  2 * * mon-FRI"
start_at = 2026-01-01T00:00:00.5Z
end_at = "2027-06-30T12:00:00+02:00"
command = ["./batch.sh", "--fast", "ünïcode"]
env = { REGION = "eu", EMPTY = "" }

[[job]]
name = "ping"
schedule = "* * * * *"
trigger = "dedicated"
timezone = "America/New_York"
overlap = "replace"
retry = { max_attempts = 1 }
http = { url = "https://example.com/hook?x=1", method = "put", headers = { "X-Source" = "cronslot", Authorization = "Bearer t" } }

[[job]]
name = "report"
schedule = "0 0 L * *"
timezone = "UTC"
overlap = "forbid"
catch_up = "latest"
paused = false
dst_gap = "shift_always"
"#;

    const DESIGN: &str = r#"[defaults]
timezone = "UTC"
lease = "15m"
starting_deadline = "10m"
catch_up = "latest"
max_catch_up = 10
overlap = "forbid"
retry = { max_attempts = 3, backoff = "30s", max_backoff = "10m" }

[[job]]
name = "daily-report"
schedule = "0 9 * * MON-FRI"
timezone = "America/New_York"
trigger = "dedicated"

[[job]]
name = "invoice-run"
schedule = "0 0 L * *"
catch_up = "all"

[[job]]
name = "cleanup"
schedule = "*/5 * * * *"
command = ["./scripts/cleanup.sh", "--fast"]

[[job]]
name = "ping"
schedule = "0 * * * *"
http = { url = "https://example.com/hook", method = "POST" }
"#;

    fn manifests() -> Vec<(&'static str, &'static str)> {
        vec![("rich.toml", RICH), ("design.toml", DESIGN)]
    }

    fn parse(file: &str, text: &str) -> Manifest {
        parse_manifest(text, file).unwrap_or_else(|e| panic!("{file}:\n{e}"))
    }

    fn rich_json() -> String {
        parse("rich.toml", RICH).to_precompiled("rich.toml")
    }

    fn problems(json: &str) -> Vec<String> {
        match load_precompiled(json) {
            Ok(m) => panic!("accepted: {m:?}\n{json}"),
            Err(e) => {
                // Display never panics and names the file kind.
                assert!(e.to_string().starts_with("invalid precompiled manifest"));
                e.problems
            }
        }
    }

    fn assert_problem(json: &str, needle: &str) {
        let found = problems(json);
        assert!(
            found.iter().any(|p| p.contains(needle)),
            "no problem mentions {needle:?}: {found:#?}"
        );
    }

    #[test]
    fn round_trip_gives_the_parsed_manifest_and_its_spec_hashes() {
        for (file, text) in manifests() {
            let parsed = parse(file, text);
            let json = parsed.to_precompiled(file);
            let loaded = load_precompiled(&json).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(loaded, parsed, "{file}");
            assert_eq!(loaded.jobs.len(), parsed.jobs.len());
            for (l, p) in loaded.jobs.iter().zip(&parsed.jobs) {
                assert_eq!(l.spec_hash(), p.spec_hash(), "{file}: {}", p.name.as_str());
                assert_eq!(l.schedule_text, p.schedule_text);
                assert_eq!(l.action, p.action);
            }
            // Writing the loaded manifest again gives the same text.
            assert_eq!(loaded.to_precompiled(file), json, "{file}");
        }
    }

    /// The zones travel with the file: a program without the tz database
    /// (a Worker) builds them from the file's TZif data, not by name.
    #[test]
    fn zones_are_carried_as_tzif_data_and_used_when_loading() {
        let json = rich_json();
        let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
        let zones = doc["zones"].as_object().expect("a zones table");
        let names: Vec<&str> = zones.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["America/New_York", "Europe/Berlin"],
            "UTC needs none"
        );
        let data = base64::decode(zones["America/New_York"].as_str().expect("text")).expect("b64");
        assert_eq!(&data[..4], b"TZif");

        // Proof that loading uses the carried data: give New York Tokyo's
        // rules under New York's name, and the job's offsets are Tokyo's.
        let tokyo = Zone::get("Asia/Tokyo").expect("zone");
        let mut swapped = doc.clone();
        swapped["zones"]["America/New_York"] = base64::encode(tokyo.tzif().expect("data")).into();
        let loaded = load_precompiled(&swapped.to_string()).expect("loads");
        let ping = loaded.job("ping").expect("job");
        assert_eq!(ping.schedule.zone().name(), "America/New_York");
        assert_eq!(ping.schedule.zone().offset_at(1_780_000_000), 9 * 3600);

        for (bad, expected) in [
            (
                "not base64!",
                "zones.\"America/New_York\": not base64 TZif data",
            ),
            (
                "VFppZg==",
                "zones.\"America/New_York\": \"America/New_York\" is not an IANA time zone; its TZif data does not parse",
            ),
        ] {
            let mut broken = doc.clone();
            broken["zones"]["America/New_York"] = bad.into();
            let e = load_precompiled(&broken.to_string()).expect_err(bad);
            assert!(
                e.problems.iter().any(|p| p.starts_with(expected)),
                "{bad}: {e}"
            );
        }
    }

    /// Jobs in one zone share the zone built from the file's data, and a
    /// zone looked up by name (UTC, or any zone of a file without a zones
    /// table) is looked up once too.
    #[test]
    fn jobs_in_one_zone_share_one_loaded_zone() {
        let job = |name: &str, zone: &str| {
            format!(
                "[[job]]\nname = \"{name}\"\nschedule = \"0 9 * * *\"\ntimezone = \"{zone}\"\n\n"
            )
        };
        let text = [
            job("a", "America/New_York"),
            job("b", "UTC"),
            job("c", "America/New_York"),
            job("d", "UTC"),
        ]
        .concat();
        let json = parse("zones.toml", &text).to_precompiled("zones.toml");
        let mut without_zones: serde_json::Value = serde_json::from_str(&json).expect("json");
        let doc = without_zones.as_object_mut().expect("an object");
        assert!(doc.remove("zones").is_some());
        let without_zones = without_zones.to_string();
        for json in [json, without_zones] {
            let m = load_precompiled(&json).expect("loads");
            let data = |i: usize| m.jobs[i].schedule.zone().tzif().map(<[u8]>::as_ptr);
            assert!(data(0).is_some());
            assert_eq!(data(0), data(2), "one New York for both jobs");
            let name = |i: usize| m.jobs[i].schedule.zone().name().as_ptr();
            assert_eq!(name(1), name(3), "one UTC for both jobs");
            assert_eq!(
                m.jobs[2].schedule.zone().offset_at(1_780_000_000),
                -4 * 3600
            );
        }
    }

    #[test]
    fn rich_manifest_keeps_every_value() {
        let parsed = parse("rich.toml", RICH);
        assert!(!parsed.warnings.is_empty(), "RICH is meant to warn");
        let loaded = load_precompiled(&rich_json()).expect("loads");
        let batch = loaded.job("night-batch").expect("job");
        assert_eq!(batch.schedule_text, "30  2 * * mon-FRI");
        assert_eq!(
            batch.start_at.map(|t| t.subsec_nanosecond()),
            Some(500_000_000)
        );
        assert_eq!(batch.overlap, Overlap::Allow { max_concurrency: 4 });
        assert_eq!(
            batch.dst_policy(),
            DstPolicy {
                gap: DstGap::Skip,
                overlap: DstOverlap::Twice,
            }
        );
        assert_eq!(loaded.defaults, parsed.defaults);
        assert_eq!(loaded.warnings, parsed.warnings);
        let ping = loaded.job("ping").expect("job");
        assert_eq!(ping.schedule.zone().name(), "America/New_York");
        assert!(matches!(
            &ping.action,
            Action::Http { method: HttpMethod::Put, headers, .. } if headers.len() == 2
        ));
        // Pinned: the spec hash of a job does not depend on the form it was
        // loaded from (it is stored in every job's state record).
        let report = loaded.job("report").expect("job");
        assert_eq!(report.dst_policy().gap, DstGap::ShiftAlways);
        let reparsed = parse("rich.toml", RICH);
        assert_eq!(
            report.spec_hash(),
            reparsed.job("report").expect("job").spec_hash()
        );
    }

    #[test]
    fn not_a_precompiled_manifest() {
        assert_problem(RICH, "not a precompiled cronslot manifest");
        assert_problem("", "not a precompiled cronslot manifest");
        assert_problem("[1, 2]", "not a precompiled cronslot manifest");
        assert_problem("{}", "\"format\" is missing");
        assert_problem(r#"{"format": "other"}"#, "\"format\" is \"other\"");
        let json = rich_json().replace("\"version\":2", "\"version\":99");
        assert_problem(&json, "version 99, and this cronslot reads versions 1 to 2");
    }

    #[test]
    fn damaged_json_is_refused_with_its_position() {
        let json = rich_json();
        assert_problem(
            &json[..json.len() / 2],
            "is not valid JSON: EOF while parsing",
        );
        let renamed = json.replacen("\"lease\"", "\"leese\"", 1);
        assert_problem(&renamed, "unknown field `leese`");
        let typed = json.replacen("\"max_catch_up\":500", "\"max_catch_up\":\"500\"", 1);
        assert_problem(&typed, "line ");
        // Every prefix is refused, none panics.
        for end in (0..json.len()).filter(|i| json.is_char_boundary(*i)) {
            assert!(load_precompiled(&json[..end]).is_err());
        }
    }

    #[test]
    fn values_the_toml_path_refuses_are_refused() {
        let json = rich_json();
        let cases = [
            (
                "\"30  2 * * mon-FRI\"",
                "\"61 2 * * *\"",
                "invalid schedule \"61 2 * * *\"",
            ),
            ("\"30  2 * * mon-FRI\"", "\"0 0 31 2 *\"", "never fires"),
            (
                "\"name\":\"ping\"",
                "\"name\":\"Ping\"",
                "invalid job name \"Ping\"",
            ),
            (
                "\"name\":\"ping\"",
                "\"name\":\"night-batch\"",
                "duplicate job name",
            ),
            (
                "\"America/New_York\"",
                "\"Mars/Olympus\"",
                "unknown time zone",
            ),
            (
                "\"America/New_York\"",
                "\"america/new_york\"",
                "canonical name",
            ),
            (
                "\"lease\":\"20m\"",
                "\"lease\":\"30s\"",
                "shorter than the minimum",
            ),
            ("\"lease\":\"20m\"", "\"lease\":\"20 minutes\"", "lease:"),
            (
                "\"max_concurrency\":4",
                "\"max_concurrency\":0",
                "max_concurrency 0",
            ),
            (
                "\"max_attempts\":5",
                "\"max_attempts\":0",
                "max_attempts must be at least 1",
            ),
            (
                "\"backoff\":\"10s\"",
                "\"backoff\":\"1h\"",
                "longer than retry.max_backoff",
            ),
            (
                "\"skew_margin\":\"7s\"",
                "\"skew_margin\":\"1h\"",
                "shorter than the lease",
            ),
            ("\"succeeded\":9", "\"succeeded\":101", "above the limit"),
            (
                "\"max_catch_up\":500",
                "\"max_catch_up\":0",
                "catches up nothing",
            ),
            (
                "\"stale_after\":\"2d\"",
                "\"stale_after\":\"0s\"",
                "stale_after must be longer",
            ),
            (
                "\"timeout\":\"3m\"",
                "\"timeout\":\"3h\"",
                "longer than the lease",
            ),
            (
                "\"method\":\"PUT\"",
                "\"method\":\"FETCH\"",
                "unknown HTTP method \"FETCH\"",
            ),
            (
                "https://example.com/hook?x=1",
                "ftp://example.com",
                "is not an http:// or https:// URL",
            ),
            ("\"X-Source\"", "\"Idempotency-Key\"", "set by cronslot"),
            ("\"REGION\"", "\"CRONSLOT_REGION\"", "is reserved"),
            ("\"./batch.sh\"", "\"\"", "the program to run, is empty"),
            (
                "2027-06-30T10:00:00Z",
                "2025-01-01T00:00:00Z",
                "is not before end_at",
            ),
            ("\"Europe/Berlin\"", "\"EST\"", "unknown time zone"),
        ];
        for (from, to, needle) in cases {
            assert!(json.contains(from), "the fixture has no {from}:\n{json}");
            assert_problem(&json.replacen(from, to, 1), needle);
        }
        let no_jobs = {
            let mut doc: serde_json::Value = serde_json::from_str(&json).expect("json");
            doc["jobs"] = serde_json::json!([]);
            doc.to_string()
        };
        assert_problem(&no_jobs, "there is no job");
    }

    #[test]
    fn every_problem_is_reported_with_its_job() {
        let json = rich_json()
            .replacen("\"30  2 * * mon-FRI\"", "\"61 2 * * *\"", 1)
            .replacen("\"America/New_York\"", "\"Nowhere\"", 1);
        let found = problems(&json);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with("job \"night-batch\" (jobs[0]): invalid schedule"));
        assert!(found[1].starts_with("job \"ping\" (jobs[1]): unknown time zone"));
    }

    /// The manifest of `precompiled-v1.json`, written by cronslot 0.1's
    /// version 1 writer (every policy on every job, pretty-printed).
    const V1_SOURCE: &str = r#"[defaults]
timeout = "2m"
stale_after = "3h"

[[job]]
name = "daily-report"
schedule = "0 9 * * MON-FRI"
timezone = "America/New_York"
command = ["./report.sh"]
overlap = "allow"
max_concurrency = 2

[[job]]
name = "ping"
schedule = "*/5 * * * *"
http = { url = "https://example.com/hook" }
"#;

    #[test]
    fn a_version_1_file_still_loads_as_the_same_manifest() {
        let v1 = include_str!("testdata/precompiled-v1.json");
        let loaded = load_precompiled(v1).expect("version 1 loads");
        let parsed = parse("v1.toml", V1_SOURCE);
        assert_eq!(loaded, parsed);
        for (l, p) in loaded.jobs.iter().zip(&parsed.jobs) {
            assert_eq!(l.spec_hash(), p.spec_hash());
        }
        // And it is written again as version 2.
        let v2 = loaded.to_precompiled("v1.toml");
        assert!(v2.contains("\"version\":2"), "{v2}");
        assert_eq!(load_precompiled(&v2).expect("v2 loads"), parsed);
    }

    /// A job that keeps every default is its name, schedule and action;
    /// what differs is written, and only that.
    #[test]
    fn version_2_writes_only_what_a_job_changes() {
        let m = parse("v1.toml", V1_SOURCE);
        let json = m.to_precompiled("v1.toml");
        let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(
            doc["jobs"][1],
            serde_json::json!({
                "name": "ping",
                "schedule": "*/5 * * * *",
                "action": {"http": {"url": "https://example.com/hook", "method": "POST"}},
            })
        );
        assert_eq!(
            doc["jobs"][0]["policy"],
            serde_json::json!({
                "timezone": "America/New_York",
                "overlap": "allow",
                "max_concurrency": 2,
            })
        );
        assert_eq!(
            doc["jobs"][0]["action"],
            serde_json::json!({"command": {"argv": ["./report.sh"]}})
        );
        assert!(!json.contains('\n'), "one line");
    }

    /// Values no TOML file writes, but a program may build: a job without
    /// the defaults' `stale_after` (written `null`), another concurrency
    /// under the same overlap mode, no default timeout.
    #[test]
    fn every_difference_from_the_defaults_round_trips() {
        let mut m = parse("v1.toml", V1_SOURCE);
        m.jobs[0].stale_after = None;
        m.jobs[0].overlap = Overlap::Allow { max_concurrency: 7 };
        m.defaults.overlap = Overlap::Allow { max_concurrency: 2 };
        m.jobs[1].stale_after = Some(Duration::from_secs(60));
        let json = m.to_precompiled("v1.toml");
        let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(
            doc["jobs"][0]["policy"]["stale_after"],
            serde_json::Value::Null
        );
        assert!(doc["jobs"][0]["policy"].get("stale_after").is_some());
        assert_eq!(load_precompiled(&json).expect("loads"), m);

        m.defaults.timeout = None;
        let json = m.to_precompiled("v1.toml");
        let loaded = load_precompiled(&json).expect("loads");
        assert_eq!(loaded, m);
        // A timeout left out, with none in [defaults], is a problem.
        let mut doc: serde_json::Value = serde_json::from_str(&json).expect("json");
        doc["jobs"][0]["action"]["command"]
            .as_object_mut()
            .expect("command")
            .remove("timeout");
        assert_problem(
            &doc.to_string(),
            "timeout is missing, and [defaults] has none",
        );

        // [defaults] writes every policy: one left out is a problem.
        let mut doc: serde_json::Value = serde_json::from_str(&json).expect("json");
        doc["defaults"]["policy"]
            .as_object_mut()
            .expect("policy")
            .remove("lease");
        assert_problem(&doc.to_string(), "[defaults]: lease is missing");
    }
}
