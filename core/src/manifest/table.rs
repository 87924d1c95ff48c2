//! The checks of one table on its own: each value is checked once, in the
//! table that holds it, so a bad lease in `[defaults]` is one error, not one
//! per job. A refused value *poisons* its key: checks across keys that
//! involve it stay quiet rather than report consequences of the same mistake.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::time::Duration;

use toml::Spanned;
use toml::de::DeTable;

use super::diagnostic::Sink;
use super::raw::{self, JOB_ONLY_KEYS, RawTable};
use super::rules::{
    self, ArgvPart, command_problems, env_name_problem, env_value_problem, header_name_problem,
    header_value_problem, history_problem, http_method, lease_problem, max_attempts_problem,
    max_concurrency_problem, stale_after_problem, starting_deadline_problem, timeout_problem,
    url_problem, zone_problem,
};
use super::{HttpMethod, JobName, defaults};
use crate::cron::CronExpr;
use crate::schedule::{Zone, ZoneError};

/// The zones a manifest names, each looked up once: loading a zone parses
/// its TZif data (and keeps a copy of it), which for a manifest of
/// thousands of jobs in a few zones cost most of the time and memory of
/// loading it. Jobs in one zone share one loaded zone; a bad name is looked
/// up once too, and still reported at every table that writes it.
#[derive(Default)]
pub(super) struct Zones(BTreeMap<String, Result<Zone, ZoneError>>);

impl Zones {
    fn get(&mut self, name: &str) -> Result<Zone, ZoneError> {
        if let Some(found) = self.0.get(name) {
            return found.clone();
        }
        let found = Zone::get(name);
        self.0.insert(name.to_string(), found.clone());
        found
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Defaults,
    Job,
}

impl Level {
    fn label(self) -> &'static str {
        match self {
            Level::Defaults => "[defaults]",
            Level::Job => "[[job]]",
        }
    }
}

/// A validated HTTP request.
pub(super) struct Http {
    pub url: String,
    pub method: HttpMethod,
    pub headers: BTreeMap<String, String>,
}

/// One table after its own checks: the raw values, what its checks turned
/// into typed values, and which keys are bad.
pub(super) struct Checked {
    pub raw: RawTable,
    pub poisoned: BTreeSet<String>,
    /// The table's header (`[[job]]`), where problems of the whole table go.
    pub header: Range<usize>,
    /// Where each known key is written (an unknown key is reported when
    /// the table is read, and never pointed at again).
    pub key_spans: Vec<(&'static str, Range<usize>)>,
    pub name: Option<Spanned<JobName>>,
    pub cron: Option<CronExpr>,
    pub zone: Option<Spanned<Zone>>,
    pub command: Option<Vec<String>>,
    pub http: Option<Http>,
    pub env: Option<BTreeMap<String, String>>,
    /// Errors the table's own checks reported.
    pub errors: usize,
    /// Where the piece of the manifest the table was parsed from starts:
    /// every span above is relative to it ([`Checked::at`]).
    pub base: usize,
}

impl Checked {
    /// Whether the table says `dynamic = true`: a template whose schedules
    /// are data.
    pub(super) fn is_dynamic(&self) -> bool {
        self.raw.dynamic.as_ref().is_some_and(|d| *d.get_ref())
    }

    pub(super) fn empty() -> Checked {
        Checked {
            raw: RawTable::default(),
            poisoned: BTreeSet::new(),
            header: 0..0,
            key_spans: Vec::new(),
            name: None,
            cron: None,
            zone: None,
            command: None,
            http: None,
            env: None,
            errors: 0,
            base: 0,
        }
    }

    /// A span of this table in the whole manifest.
    pub(super) fn at(&self, span: Range<usize>) -> Range<usize> {
        self.base + span.start..self.base + span.end
    }

    fn poison(&mut self, key: &str) {
        self.poisoned.insert(key.to_string());
    }

    pub(super) fn key_span(&self, key: &str) -> Range<usize> {
        self.key_spans
            .iter()
            .find(|(known, _)| *known == key)
            .map_or(self.header.clone(), |(_, span)| span.clone())
    }

    fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("job {:?}", n.get_ref().as_str()),
            None => "this [[job]]".into(),
        }
    }
}

/// The byte offset of the 1-based character `column` inside a string
/// value, when the source spells the value verbatim between one pair of
/// quotes (`"..."` or `'...'`);
/// otherwise (escapes, multi-line strings) the start of the value.
fn inner_offset(text: &str, span: &Range<usize>, value: &str, column: usize) -> usize {
    let source = text.get(span.clone()).unwrap_or("");
    let verbatim = source.len() == value.len() + 2
        && source.get(1..source.len() - 1) == Some(value)
        && (source.starts_with('"') || source.starts_with('\''));
    if !verbatim {
        return span.start;
    }
    let within = value
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(value.len(), |(i, _)| i);
    span.start + 1 + within
}

/// Checks one table, parsed from the piece of the manifest at `base` (the
/// sink's base: spans are relative to it).
pub(super) fn check_table(
    sink: &mut Sink<'_>,
    zones: &mut Zones,
    table: Spanned<&DeTable<'_>>,
    level: Level,
    base: usize,
) -> Checked {
    let before = sink.errors.len();
    let outcome = raw::deserialize_table(&table, level.label());
    for (span, message) in outcome.problems {
        sink.error(span, message);
    }
    let mut c = Checked {
        base,
        raw: outcome.raw,
        poisoned: outcome.poisoned,
        header: table.span(),
        key_spans: table
            .get_ref()
            .iter()
            .filter_map(|(k, _)| {
                let known = raw::KEYS
                    .iter()
                    .find(|known| **known == k.get_ref().as_ref())?;
                Some((*known, k.span()))
            })
            .collect(),
        ..Checked::empty()
    };
    match level {
        Level::Defaults => {
            let present: Vec<&'static str> = c.raw.present().into_iter().map(|(k, _)| k).collect();
            for key in JOB_ONLY_KEYS {
                if present.contains(&key) {
                    sink.error(
                        c.key_span(key),
                        format!("`{key}` belongs in a [[job]], not in [defaults]"),
                    );
                    c.poison(key);
                }
            }
        }
        Level::Job => {
            check_name(sink, &mut c);
            check_schedule(sink, &mut c);
            check_key_retention(sink, &mut c);
            check_command(sink, &mut c);
            check_http(sink, &mut c);
            check_env(sink, &mut c);
        }
    }
    check_timezone(sink, zones, &mut c);
    check_values(sink, &mut c);
    c.errors = sink.errors.len() - before;
    c
}

fn check_name(sink: &mut Sink<'_>, c: &mut Checked) {
    let Some(name) = &c.raw.name else {
        if !c.poisoned.contains("name") {
            sink.error(
                c.header.clone(),
                "this [[job]] has no name; add name = \"...\" (lowercase letters, digits, '-' and '_')",
            );
        }
        return;
    };
    match JobName::new(name.get_ref().as_str()) {
        Ok(n) => c.name = Some(Spanned::new(name.span(), n)),
        Err(e) => {
            let at = inner_offset(sink.text(), &name.span(), name.get_ref(), e.column);
            sink.error(at..name.span().end, e.to_string());
            c.poison("name");
        }
    }
}

/// `key_retention`: a dynamic job's, and long enough
/// ([`rules::key_retention_problem`]).
fn check_key_retention(sink: &mut Sink<'_>, c: &mut Checked) {
    let Some(retention) = &c.raw.key_retention else {
        return;
    };
    let problem = if !c.is_dynamic() {
        Some(
            "key_retention applies only to a dynamic job (dynamic = true), whose keyed runs \
             it keeps; remove it"
                .to_string(),
        )
    } else {
        rules::key_retention_problem(retention.get_ref().0)
    };
    if let Some(problem) = problem {
        sink.error(retention.span(), problem);
        c.poison("key_retention");
    }
}

fn check_schedule(sink: &mut Sink<'_>, c: &mut Checked) {
    if c.is_dynamic() {
        if let Some(schedule) = &c.raw.schedule {
            sink.error(
                schedule.span(),
                "a dynamic job has no schedule: its schedules are data, each written at run \
                 time by the application; remove schedule, or dynamic = true",
            );
            c.poison("schedule");
        }
        return;
    }
    let Some(schedule) = &c.raw.schedule else {
        if !c.poisoned.contains("schedule") {
            sink.error(
                c.header.clone(),
                format!(
                    "{} has no schedule; add a five-field cron expression such as schedule = \"0 9 * * *\"",
                    c.label()
                ),
            );
        }
        return;
    };
    let text = schedule.get_ref();
    match rules::schedule(text) {
        Ok(expr) => c.cron = Some(expr),
        Err(problem) => {
            let at = match problem.column {
                Some(column) => inner_offset(sink.text(), &schedule.span(), text, column),
                None => schedule.span().start,
            };
            sink.error(at..schedule.span().end, problem.message);
            c.poison("schedule");
        }
    }
}

fn check_timezone(sink: &mut Sink<'_>, zones: &mut Zones, c: &mut Checked) {
    let Some(tz) = &c.raw.timezone else { return };
    match zones.get(tz.get_ref()) {
        Ok(zone) => c.zone = Some(Spanned::new(tz.span(), zone)),
        Err(e) => {
            sink.error(tz.span(), zone_problem(tz.get_ref(), &e));
            c.poison("timezone");
        }
    }
}

/// A rule on one duration (`rules.rs`): why it cannot be the value, if it
/// cannot.
type DurationRule = fn(Duration) -> Option<String>;

/// Checks of single values that hold wherever the value is written (the
/// rules are in `rules.rs`).
fn check_values(sink: &mut Sink<'_>, c: &mut Checked) {
    let mut bad: Vec<&'static str> = Vec::new();
    if let Some(lease) = &c.raw.lease {
        if let Some(problem) = lease_problem(lease.get_ref().0) {
            sink.error(lease.span(), problem);
            bad.push("lease");
        }
    }
    let positive: [(&str, _, DurationRule); 4] = [
        (
            "starting_deadline",
            &c.raw.starting_deadline,
            starting_deadline_problem,
        ),
        ("timeout", &c.raw.timeout, timeout_problem),
        ("stale_after", &c.raw.stale_after, stale_after_problem),
        ("jitter", &c.raw.jitter, super::rules::jitter_problem),
    ];
    for (key, value, problem) in positive {
        if let Some(v) = value {
            if let Some(problem) = problem(v.get_ref().0) {
                sink.error(v.span(), problem);
                bad.push(key);
            }
        }
    }
    if let Some(m) = &c.raw.max_concurrency {
        if let Some(problem) = max_concurrency_problem(*m.get_ref()) {
            sink.error(m.span(), problem);
            bad.push("max_concurrency");
        }
    }
    if let Some(retry) = &c.raw.retry {
        if let Some(a) = &retry.get_ref().max_attempts {
            if let Some(problem) = max_attempts_problem(*a.get_ref()) {
                sink.error(a.span(), problem);
                bad.push("retry");
            }
        }
    }
    if let Some(history) = &c.raw.history {
        let h = history.get_ref();
        for (key, value) in [("succeeded", &h.succeeded), ("failed", &h.failed)] {
            if let Some(v) = value {
                if let Some(problem) = history_problem(key, *v.get_ref()) {
                    sink.error(v.span(), problem);
                    bad.push("history");
                }
            }
        }
    }
    for key in bad {
        c.poison(key);
    }
}

fn check_command(sink: &mut Sink<'_>, c: &mut Checked) {
    let Some(command) = &c.raw.command else {
        return;
    };
    let argv = command.get_ref();
    let mut ok = true;
    command_problems(
        argv.iter().map(|a| a.get_ref().as_str()),
        |part, problem| {
            let at = match part {
                ArgvPart::Whole => command.span(),
                ArgvPart::Arg(i) => argv[i].span(),
            };
            sink.error(at, problem);
            ok = false;
        },
    );
    if ok {
        c.command = Some(argv.iter().map(|a| a.get_ref().clone()).collect());
    } else {
        c.poison("command");
    }
}

fn check_http(sink: &mut Sink<'_>, c: &mut Checked) {
    let Some(http) = &c.raw.http else { return };
    let h = http.get_ref();
    let mut ok = true;
    let url = match &h.url {
        None => {
            sink.error(http.span(), "http has no url; add url = \"https://...\"");
            ok = false;
            String::new()
        }
        Some(u) => {
            if let Some(problem) = url_problem(u.get_ref()) {
                sink.error(u.span(), format!("http.url {:?} {problem}", u.get_ref()));
                ok = false;
            }
            u.get_ref().clone()
        }
    };
    let method = match &h.method {
        None => defaults::HTTP_METHOD,
        Some(m) => match http_method(m.get_ref()) {
            Ok(method) => method,
            Err(problem) => {
                sink.error(m.span(), problem);
                ok = false;
                defaults::HTTP_METHOD
            }
        },
    };
    let mut headers = BTreeMap::new();
    if let Some(hs) = &h.headers {
        for (name, value) in hs.get_ref() {
            let n = name.get_ref();
            if let Some(problem) = header_name_problem(n) {
                sink.error(name.span(), problem);
                ok = false;
            }
            let v = value.get_ref();
            if let Some(problem) = header_value_problem(n, v) {
                sink.error(value.span(), problem);
                ok = false;
            }
            headers.insert(n.clone(), v.clone());
        }
    }
    if ok {
        c.http = Some(Http {
            url,
            method,
            headers,
        });
    } else {
        c.poison("http");
    }
}

fn check_env(sink: &mut Sink<'_>, c: &mut Checked) {
    let Some(env) = &c.raw.env else { return };
    let mut ok = true;
    let mut vars = BTreeMap::new();
    for (name, value) in env.get_ref() {
        let n = name.get_ref();
        if let Some(problem) = env_name_problem(n) {
            sink.error(name.span(), problem);
            ok = false;
        }
        if let Some(problem) = env_value_problem(n, value.get_ref()) {
            sink.error(value.span(), problem);
            ok = false;
        }
        vars.insert(n.clone(), value.get_ref().clone());
    }
    if ok {
        c.env = Some(vars);
    } else {
        c.poison("env");
    }
}

#[cfg(test)]
mod tests {
    use crate::manifest::parse_manifest;

    fn job(name: &str, zone: &str) -> String {
        format!("[[job]]\nname = \"{name}\"\nschedule = \"0 9 * * *\"\ntimezone = \"{zone}\"\n\n")
    }

    /// Jobs in one zone share one loaded zone (its TZif data is not copied
    /// per job); a zone is loaded once per manifest.
    #[test]
    fn jobs_in_one_zone_share_one_loaded_zone() {
        let text = [
            job("a", "America/New_York"),
            job("b", "Europe/Berlin"),
            job("c", "America/New_York"),
        ]
        .concat();
        let m = parse_manifest(&text, "zones.toml").expect("valid");
        let data = |i: usize| {
            m.jobs[i]
                .schedule
                .zone()
                .tzif()
                .expect("tzif data")
                .as_ptr()
        };
        assert_eq!(data(0), data(2), "one New York for both jobs");
        assert_ne!(data(0), data(1));
        assert_eq!(m.jobs[2].timezone, "America/New_York");
        assert_eq!(
            m.jobs[2].schedule.zone().offset_at(1_780_000_000),
            -4 * 3600
        );
    }

    /// A bad zone is looked up once but reported at every job that names
    /// it, each at its own line and column.
    #[test]
    fn a_bad_zone_is_reported_once_per_job() {
        let text = [
            job("a", "Mars/Olympus"),
            job("b", "UTC"),
            job("c", "Mars/Olympus"),
        ]
        .concat();
        let errors = parse_manifest(&text, "zones.toml").expect_err("bad zone");
        let found: Vec<String> = errors
            .errors
            .iter()
            .map(|e| format!("{}:{}:{}: {}", e.file, e.line, e.column, e.message))
            .collect();
        assert_eq!(
            found,
            [
                "zones.toml:4:12: unknown time zone \"Mars/Olympus\"",
                "zones.toml:14:12: unknown time zone \"Mars/Olympus\"",
            ]
        );
    }
}
