//! From TOML text to a [`Manifest`]: syntax, then each table on its own
//! (so every table's problems are reported, see `table.rs`), then
//! resolution of each job against `[defaults]` (`resolve.rs`).

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::Manifest;
use super::diagnostic::{ManifestErrors, Sink};
use super::raw;
use super::resolve::{resolve_defaults, resolve_job};
use super::table::{Checked, Level, Zones, check_table};

pub(super) fn parse(text: &str, file: &str) -> Result<Manifest, ManifestErrors> {
    let mut sink = Sink::new(text, file);
    let (root, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        report_syntax(&mut sink, &syntax);
        return Err(errors(sink));
    }
    let (defaults_table, job_tables) = split_root(&mut sink, &root);

    let mut zones = Zones::default();
    let defaults = match defaults_table {
        Some(t) => check_table(&mut sink, &mut zones, t, Level::Defaults),
        None => Checked::empty(),
    };
    let resolved_defaults = resolve_defaults(&mut sink, &defaults);
    // Each job is checked and resolved before the next one is looked at,
    // so that what its checks build is dropped at once instead of being
    // held for every job of a large manifest. Diagnostics come out in file
    // order whatever the order they were found in (`Sink::finish`).
    let mut specs = Vec::with_capacity(job_tables.len());
    let mut first_lines = BTreeMap::new();
    for t in job_tables {
        let job = check_table(&mut sink, &mut zones, t, Level::Job);
        report_duplicate(&mut sink, &mut first_lines, &job);
        if let Some(spec) = resolve_job(&mut sink, &job, &defaults) {
            specs.push(spec);
        }
    }

    if sink.errors.is_empty() {
        let (_, warnings) = sink.finish();
        Ok(Manifest {
            defaults: resolved_defaults,
            jobs: specs,
            warnings,
        })
    } else {
        Err(errors(sink))
    }
}

fn errors(sink: Sink<'_>) -> ManifestErrors {
    let (errors, warnings) = sink.finish();
    ManifestErrors { errors, warnings }
}

/// TOML syntax errors. The parser recovers and goes on, but what it reports
/// after the first error on a line is mostly an echo of it, so each line
/// gets its first error only.
fn report_syntax(sink: &mut Sink<'_>, syntax: &[toml::de::Error]) {
    let mut located: Vec<(usize, &str)> = syntax
        .iter()
        .map(|e| (e.span().map_or(0, |s| s.start), e.message()))
        .collect();
    located.sort_by_key(|(at, _)| *at);
    let mut lines = BTreeSet::new();
    for (at, message) in located {
        if lines.insert(sink.line_of(at)) {
            sink.error(at..at, format!("invalid TOML: {message}"));
        }
    }
}

/// The `[defaults]` table and the `[[job]]` tables; anything else at the
/// top level is an error.
/// The tables are borrowed from the document, not copied.
fn split_root<'r, 'i>(
    sink: &mut Sink<'_>,
    root: &'r Spanned<DeTable<'i>>,
) -> (
    Option<Spanned<&'r DeTable<'i>>>,
    Vec<Spanned<&'r DeTable<'i>>>,
) {
    let mut defaults = None;
    let mut jobs = Vec::new();
    let mut job_key_seen = false;
    for (key, value) in root.get_ref().iter() {
        match key.get_ref().as_ref() {
            "defaults" => match value.get_ref() {
                DeValue::Table(t) => defaults = Some(Spanned::new(value.span(), t)),
                _ => sink.error(
                    value.span(),
                    "defaults must be a single table, written [defaults]",
                ),
            },
            "job" => {
                job_key_seen = true;
                match value.get_ref() {
                    DeValue::Array(items) => {
                        for item in items.iter() {
                            match item.get_ref() {
                                DeValue::Table(t) => jobs.push(Spanned::new(item.span(), t)),
                                _ => sink.error(
                                    item.span(),
                                    "each job must be a table, written [[job]]",
                                ),
                            }
                        }
                        if items.is_empty() {
                            sink.error(value.span(), no_jobs_message());
                        }
                    }
                    DeValue::Table(_) => sink.error(
                        value.span(),
                        "jobs are an array of tables: write [[job]], not [job]",
                    ),
                    _ => sink.error(
                        value.span(),
                        "job must be an array of tables, written [[job]]",
                    ),
                }
            }
            other => {
                let hint = match raw::closest(other, &["defaults", "job", "jobs"]) {
                    Some("defaults") => "; did you mean [defaults]?",
                    Some(_) => "; did you mean [[job]]?",
                    None => "; a manifest holds [defaults] and [[job]] tables",
                };
                sink.error(key.span(), format!("unknown top-level key `{other}`{hint}"));
            }
        }
    }
    if !job_key_seen {
        sink.error(0..0, no_jobs_message());
    }
    (defaults, jobs)
}

fn no_jobs_message() -> &'static str {
    "no [[job]] in the manifest; add a [[job]] table with a name and a schedule"
}

/// A job whose name an earlier job has: an error at the later one, naming
/// the line of the first. `first_lines` holds the names seen so far.
fn report_duplicate(sink: &mut Sink<'_>, first_lines: &mut BTreeMap<String, usize>, job: &Checked) {
    let Some(name) = &job.name else { return };
    match first_lines.get(name.get_ref().as_str()) {
        Some(first) => sink.error(
            name.span(),
            format!(
                "duplicate job name {:?}; the first is on line {first}",
                name.get_ref().as_str()
            ),
        ),
        None => {
            let line = sink.line_of(name.span().start);
            first_lines.insert(name.get_ref().as_str().to_string(), line);
        }
    }
}
