//! From TOML text to a [`Manifest`]: syntax, then each table on its own
//! (so every table's problems are reported, see `table.rs`), then
//! resolution of each job against `[defaults]` (`resolve.rs`).

use std::collections::BTreeSet;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::chunks::{Chunk, chunks};
use super::diagnostic::{ManifestErrors, Sink};
use super::gaps::ZoneOffsets;
use super::raw;
use super::resolve::{Resolved, resolve_defaults, resolve_job};
use super::table::{Checked, Level, Zones, check_table};
use super::{JobSpec, Manifest};

pub(super) fn parse(text: &str, file: &str) -> Result<Manifest, ManifestErrors> {
    let mut sink = Sink::new(text, file);
    // The manifest is parsed piece by piece (`chunks.rs`), each job's
    // piece checked and resolved before the next is parsed: what a large
    // manifest holds at once is its jobs' specs, not its document tree.
    let pieces = chunks(text);
    let mut syntax_failed = false;
    let mut zones = Zones::default();
    let mut offsets = ZoneOffsets::default();

    // `[defaults]` first, wherever it is, since every job resolves against
    // it.
    let mut defaults: Option<Checked> = None;
    for (_, piece) in pieces
        .iter()
        .enumerate()
        .filter(|(i, piece)| *i == 0 || piece.has_defaults)
    {
        let Some(root) = parse_piece(&mut sink, text, piece, &mut syntax_failed) else {
            continue;
        };
        let Some(table) = defaults_of(&mut sink, &root) else {
            continue;
        };
        match &defaults {
            Some(first) => {
                let line = sink.absolute_line(first.at(first.header.clone()).start);
                sink.error(
                    table.span(),
                    format!(
                        "[defaults] is already written on line {line}; write all of it in one place"
                    ),
                );
            }
            None => {
                let checked = check_table(
                    &mut sink,
                    &mut zones,
                    table,
                    Level::Defaults,
                    piece.range.start,
                );
                defaults = Some(checked);
            }
        }
    }
    sink.set_base(0);
    let defaults = defaults.unwrap_or_else(Checked::empty);
    let resolved_defaults = resolve_defaults(&mut sink, &defaults);

    // One job per piece, as a manifest is usually written: the vector is
    // not grown (and copied) on the way.
    let mut specs = Vec::with_capacity(pieces.len());
    let mut spec_names = Vec::with_capacity(pieces.len());
    let mut others = Vec::new();
    let mut templates = Vec::new();
    let mut job_key_seen = false;
    for piece in &pieces {
        let Some(root) = parse_piece(&mut sink, text, piece, &mut syntax_failed) else {
            continue;
        };
        let job_tables = jobs_of(&mut sink, &root, &mut job_key_seen);
        for t in job_tables {
            sink.set_base(piece.range.start);
            let job = check_table(&mut sink, &mut zones, t, Level::Job, piece.range.start);
            sink.set_base(0);
            let name_at = job.name.as_ref().map(|n| job.at(n.span()));
            match (
                resolve_job(&mut sink, &job, &defaults, &mut offsets),
                name_at,
            ) {
                (Some(Resolved::Job(spec)), Some(at)) => {
                    specs.push(spec);
                    spec_names.push(at);
                }
                (Some(Resolved::Template(template)), Some(at)) => {
                    others.push((template.name.as_str().to_string(), at));
                    templates.push(template);
                }
                (None, Some(at)) => {
                    if let Some(name) = &job.name {
                        others.push((name.get_ref().as_str().to_string(), at));
                    }
                }
                // A spec has a name; a job without one has no duplicate.
                (_, None) => {}
            }
        }
    }
    sink.set_base(0);
    if !syntax_failed {
        report_duplicates(&mut sink, &specs, &spec_names, &others);
    }
    if !job_key_seen && !syntax_failed {
        sink.error(0..0, no_jobs_message());
    }

    if sink.errors.is_empty() {
        let (_, warnings) = sink.finish();
        Ok(Manifest {
            defaults: resolved_defaults,
            jobs: specs,
            templates,
            warnings,
        })
    } else {
        Err(errors(sink))
    }
}

/// Parses one piece of the manifest, the sink's base set to it. On a
/// syntax error, the manifest's report becomes its syntax errors alone
/// (what other checks found is dropped: they may be echoes of it), and
/// later pieces are only parsed for theirs: `None`.
fn parse_piece<'t>(
    sink: &mut Sink<'_>,
    text: &'t str,
    piece: &Chunk,
    syntax_failed: &mut bool,
) -> Option<Spanned<DeTable<'t>>> {
    let source = text.get(piece.range.clone()).unwrap_or("");
    if source.trim().is_empty() {
        return None;
    }
    sink.set_base(piece.range.start);
    let (root, syntax) = DeTable::parse_recoverable(source);
    if !syntax.is_empty() {
        if !*syntax_failed {
            *syntax_failed = true;
            sink.errors.clear();
            sink.warnings.clear();
        }
        report_syntax(sink, &syntax);
        return None;
    }
    (!*syntax_failed).then_some(root)
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

/// The `[defaults]` table of a piece, if it has one.
fn defaults_of<'r, 'i>(
    sink: &mut Sink<'_>,
    root: &'r Spanned<DeTable<'i>>,
) -> Option<Spanned<&'r DeTable<'i>>> {
    let value = root.get_ref().get("defaults")?;
    match value.get_ref() {
        DeValue::Table(t) => Some(Spanned::new(value.span(), t)),
        _ => {
            sink.error(
                value.span(),
                "defaults must be a single table, written [defaults]",
            );
            None
        }
    }
}

/// The `[[job]]` tables of a piece; any top-level key other than `job`
/// and `defaults` is an error. The tables are borrowed from the piece's
/// document, not copied.
fn jobs_of<'r, 'i>(
    sink: &mut Sink<'_>,
    root: &'r Spanned<DeTable<'i>>,
    job_key_seen: &mut bool,
) -> Vec<Spanned<&'r DeTable<'i>>> {
    let mut jobs = Vec::new();
    for (key, value) in root.get_ref().iter() {
        match key.get_ref().as_ref() {
            "defaults" => {}
            "job" => {
                *job_key_seen = true;
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
    jobs
}

fn no_jobs_message() -> &'static str {
    "no [[job]] in the manifest; add a [[job]] table with a name and a schedule"
}

/// Every job whose name an earlier job has: an error at the later one,
/// naming the line of the first. `specs` (with `spec_names`, where each
/// spec's name is written) are the jobs that resolved, `others` the named
/// jobs that did not. Checked once all jobs are read: the names are then
/// in the specs already, so the check keeps an index of them rather than a
/// map of every name while the manifest is read.
fn report_duplicates(
    sink: &mut Sink<'_>,
    specs: &[JobSpec],
    spec_names: &[Range<usize>],
    others: &[(String, Range<usize>)],
) {
    let entry = |i: usize| -> (&str, &Range<usize>) {
        match specs.get(i) {
            Some(spec) => (spec.name.as_str(), &spec_names[i]),
            None => {
                let (name, at) = &others[i - specs.len()];
                (name.as_str(), at)
            }
        }
    };
    let mut order: Vec<usize> = (0..specs.len() + others.len()).collect();
    order.sort_unstable_by_key(|&i| {
        let (name, at) = entry(i);
        (name, at.start)
    });
    let mut first: Option<(&str, usize)> = None;
    for i in order {
        let (name, at) = entry(i);
        match first {
            Some((first_name, first_at)) if first_name == name => {
                let line = sink.absolute_line(first_at);
                sink.error(
                    at.clone(),
                    format!("duplicate job name {name:?}; the first is on line {line}"),
                );
            }
            _ => first = Some((name, at.start)),
        }
    }
}
