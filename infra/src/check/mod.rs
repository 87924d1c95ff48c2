//! Comparing a template's schedules with the manifest by the instants they
//! fire at, each read in its platform's dialect: what `cronslot check`
//! reports (the command is `commands/check.rs`).
//!
//! One module per platform, as `render/` has: [`aws`] (a SAM/CloudFormation
//! template read by [`cfn`], or a schedule group by [`live`]),
//! [`cloudflare`] (a wrangler.toml read by [`wrangler`]) and [`kubernetes`].
//! Each fills a [`Report`], and [`conclude`] prints it.
//!
//! The diff goes to stdout (one finding per line, `FILE:LINE: ...`, with
//! indented details), or with `--format json` as one document
//! ([`CheckDoc`]); exit 0 when consistent, 1 with differences (the
//! document is printed then too), 2 when the template or the manifest
//! cannot be read.

pub mod aws;
pub mod cfn;
pub mod cloudflare;
pub mod fires;
mod input;
pub mod kubernetes;
pub mod live;
pub mod wrangler;

use std::path::Path;

use serde::Serialize;

use crate::cli::Format;
use crate::exit::Failure;
use crate::format::{Ts, to_json, utc};

use fires::Span;

/// One difference (or note), at a line of the template when it has one.
#[derive(Debug)]
struct Finding {
    line: Option<usize>,
    message: String,
    details: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Report {
    problems: Vec<Finding>,
    notes: Vec<Finding>,
    /// Schedules (or crons) read from the template.
    schedules: usize,
}

impl Report {
    fn problem(&mut self, line: Option<usize>, message: impl Into<String>, details: Vec<String>) {
        self.problems.push(Finding {
            line,
            message: message.into(),
            details,
        });
    }

    fn note(&mut self, line: Option<usize>, message: impl Into<String>) {
        self.notes.push(Finding {
            line,
            message: message.into(),
            details: Vec::new(),
        });
    }
}

pub fn bad_template(file: &str, line: Option<usize>, message: &str) -> Failure {
    match line.filter(|l| *l > 0) {
        Some(line) => Failure::bad_input(format!("error: {file}:{line}: {message}")),
        None => Failure::bad_input(format!("error: {file}: {message}")),
    }
}

/// A wrangler file, or a CloudFormation/SAM template.
pub fn is_wrangler(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

/// Prints the report (as text or as a [`CheckDoc`]); exit 1 when it found
/// differences.
pub fn conclude(
    file: &str,
    manifest: &Path,
    report: &Report,
    span: Span,
    format: Format,
) -> Result<(), Failure> {
    match format {
        Format::Text => print_report(file, &manifest.display().to_string(), report, span),
        Format::Json => println!("{}", to_json(&document(file, manifest, report, span))?),
    }
    if report.problems.is_empty() {
        Ok(())
    } else {
        let n = report.problems.len();
        Err(Failure {
            code: Failure::PROBLEM,
            message: format!(
                "check: {file} differs from {}: {n} difference{}",
                manifest.display(),
                if n == 1 { "" } else { "s" }
            ),
        })
    }
}

/// `cronslot check --format json`: what was compared, the verdict, every
/// difference and note.
#[derive(Serialize)]
struct CheckDoc {
    /// The template's path, or `schedule group G` (with `(prefix "P")`)
    /// for `--live`: the name the text output gives every finding.
    checked: String,
    /// The manifest's path.
    manifest: String,
    /// True when there is no difference (exit 0).
    consistent: bool,
    /// Schedules (or crons) read from the template or the group.
    schedules: usize,
    /// The window the fire times were compared over.
    from: Ts,
    until: Ts,
    /// Each difference (exit 1 when any).
    differences: Vec<FindingDoc>,
    /// Each note (no effect on the exit code).
    notes: Vec<FindingDoc>,
}

/// One finding in a [`CheckDoc`].
#[derive(Serialize)]
struct FindingDoc {
    /// The template's line; null when the finding has none (and always
    /// for `--live`).
    line: Option<usize>,
    message: String,
    /// The indented lines under the finding in the text output.
    details: Vec<String>,
}

fn document(file: &str, manifest: &Path, report: &Report, span: Span) -> CheckDoc {
    let finding = |f: &Finding| FindingDoc {
        line: f.line.filter(|l| *l > 0),
        message: f.message.clone(),
        details: f.details.clone(),
    };
    CheckDoc {
        checked: file.to_string(),
        manifest: manifest.display().to_string(),
        consistent: report.problems.is_empty(),
        schedules: report.schedules,
        from: Ts(span.from),
        until: Ts(span.until),
        differences: report.problems.iter().map(finding).collect(),
        notes: report.notes.iter().map(finding).collect(),
    }
}

fn print_report(file: &str, manifest: &str, report: &Report, span: Span) {
    let mut out = String::new();
    let n = report.problems.len();
    let window = format!("fire times from {} to {}", utc(span.from), utc(span.until));
    if n == 0 {
        out.push_str(&format!(
            "{file} matches {manifest}: {} schedule{} compared by {window}\n",
            report.schedules,
            if report.schedules == 1 { "" } else { "s" }
        ));
    } else {
        out.push_str(&format!(
            "{file} differs from {manifest}: {n} difference{} ({window})\n",
            if n == 1 { "" } else { "s" }
        ));
    }
    let place = |line: Option<usize>| match line.filter(|l| *l > 0) {
        Some(l) => format!("{file}:{l}"),
        None => file.to_string(),
    };
    for f in &report.problems {
        out.push_str(&format!("{}: {}\n", place(f.line), f.message));
        for d in &f.details {
            out.push_str(&format!("    {d}\n"));
        }
    }
    for f in &report.notes {
        out.push_str(&format!("{}: note: {}\n", place(f.line), f.message));
    }
    print!("{out}");
}
