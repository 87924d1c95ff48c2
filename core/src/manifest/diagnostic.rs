//! Diagnostics with file, line and column, shown the way rustc and the toml
//! crate show them: a `file:line:column: message` header, the offending
//! source line, and a caret under the column.

use std::fmt;
use std::ops::Range;

/// How serious a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The manifest is invalid: it is refused.
    Error,
    /// Valid, but probably not what was meant (a dedicated trigger on an
    /// every-minute job, retries that cannot fit before the next slot…).
    Warning,
}

/// One problem in a manifest.
///
/// `Display` shows it the way rustc does: a `file:line:column: message`
/// header (with `warning: ` before a warning's message), the source line,
/// and a caret under the column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file name given to [`super::parse_manifest`].
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// One sentence naming what is wrong.
    pub message: String,
    /// The text of `line`, without its line ending; control characters other
    /// than tabs are replaced so the line is safe to print.
    pub source_line: String,
    /// Byte range in the manifest text the diagnostic is about.
    pub span: Range<usize>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "",
            Severity::Warning => "warning: ",
        };
        writeln!(
            f,
            "{}:{}:{}: {level}{}",
            self.file, self.line, self.column, self.message
        )?;
        let number = self.line.to_string();
        let pad = " ".repeat(number.len());
        // Tabs stay tabs under the caret so it lines up however wide the
        // terminal draws them.
        let caret_pad: String = self
            .source_line
            .chars()
            .take(self.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        writeln!(f, "{pad} |")?;
        writeln!(f, "{number} | {}", self.source_line)?;
        write!(f, "{pad} | {caret_pad}^")
    }
}

/// Every error of a manifest that failed to validate, and the warnings found
/// along the way. `Display` shows the errors, separated by blank lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestErrors {
    /// Every error, in file order; never empty when returned by
    /// [`super::parse_manifest`].
    pub errors: Vec<Diagnostic>,
    /// The warnings found along the way (none after a TOML syntax error),
    /// in file order.
    pub warnings: Vec<Diagnostic>,
}

impl fmt::Display for ManifestErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ManifestErrors {}

/// Turns byte offsets into lines and columns, and collects diagnostics.
#[cfg(feature = "toml")]
pub(super) struct Sink<'a> {
    text: &'a str,
    file: &'a str,
    /// Where the piece of text being checked starts (see `chunks.rs`):
    /// spans given to the sink are relative to it, and kept absolute.
    base: usize,
    /// Where each line starts, counted at the first diagnostic: a clean
    /// manifest of 10,000 jobs (60,000 lines) never needs it.
    line_starts: std::cell::OnceCell<Vec<usize>>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

#[cfg(feature = "toml")]
impl<'a> Sink<'a> {
    pub fn new(text: &'a str, file: &'a str) -> Sink<'a> {
        Sink {
            text,
            file,
            base: 0,
            line_starts: std::cell::OnceCell::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Spans given from now on are relative to `base`.
    pub fn set_base(&mut self, base: usize) {
        self.base = base.min(self.text.len());
    }

    /// The text from the base on (what spans index).
    pub fn text(&self) -> &'a str {
        self.text.get(self.base..).unwrap_or("")
    }

    /// The nearest char boundary at or before `offset`, within the text.
    fn boundary(&self, offset: usize) -> usize {
        let mut at = offset.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(self.text.match_indices('\n').map(|(i, _)| i + 1));
            starts
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn position(&self, offset: usize) -> (usize, usize) {
        let at = self.boundary(offset);
        let line_starts = self.line_starts();
        let index = line_starts.partition_point(|&s| s <= at).saturating_sub(1);
        let start = line_starts.get(index).copied().unwrap_or(0);
        let column = self.text.get(start..at).map_or(0, |s| s.chars().count()) + 1;
        (index + 1, column)
    }

    /// The line of an offset in the whole text.
    pub fn absolute_line(&self, offset: usize) -> usize {
        self.position(offset).0
    }

    /// The line of `offset` (relative to the base).
    pub fn line_of(&self, offset: usize) -> usize {
        self.position(self.base + offset).0
    }

    fn source_line(&self, line: usize) -> String {
        let line_starts = self.line_starts();
        let start = line_starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(0);
        let end = line_starts
            .get(line)
            .map_or(self.text.len(), |next| next.saturating_sub(1));
        let raw = self.text.get(start..end.max(start)).unwrap_or("");
        raw.trim_end_matches('\r')
            .chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect()
    }

    pub fn diagnostic(
        &self,
        severity: Severity,
        span: Range<usize>,
        message: String,
    ) -> Diagnostic {
        let (line, column) = self.position(span.start);
        Diagnostic {
            severity,
            file: self.file.to_string(),
            line,
            column,
            message,
            source_line: self.source_line(line),
            span,
        }
    }

    fn absolute(&self, span: Range<usize>) -> Range<usize> {
        self.base + span.start..self.base + span.end
    }

    pub fn error(&mut self, span: Range<usize>, message: impl Into<String>) {
        let d = self.diagnostic(Severity::Error, self.absolute(span), message.into());
        self.errors.push(d);
    }

    pub fn warning(&mut self, span: Range<usize>, message: impl Into<String>) {
        let d = self.diagnostic(Severity::Warning, self.absolute(span), message.into());
        self.warnings.push(d);
    }

    /// Diagnostics in file order, so a reader fixes them top to bottom.
    pub fn finish(mut self) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
        let key = |d: &Diagnostic| (d.line, d.column);
        self.errors.sort_by_key(key);
        self.warnings.sort_by_key(key);
        self.errors.dedup();
        self.warnings.dedup();
        (self.errors, self.warnings)
    }
}

#[cfg(all(test, feature = "toml"))]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters_from_one() {
        let sink = Sink::new("a = 1\nné = \"x\"\r\nlast", "f.toml");
        assert_eq!(sink.position(0), (1, 1));
        assert_eq!(sink.position(6), (2, 1));
        // "é" is two bytes but one column.
        assert_eq!(sink.position(11), (2, 5));
        assert_eq!(sink.position(sink.text().len()), (3, 5));
        assert_eq!(sink.source_line(2), "né = \"x\"");
        assert_eq!(sink.position(10_000), (3, 5));
    }

    #[test]
    fn display_shows_line_and_caret() {
        let sink = Sink::new("[[job]]\n\tname = 1\n", "c.toml");
        let d = sink.diagnostic(Severity::Error, 16..17, "bad".into());
        assert_eq!(
            d.to_string(),
            "c.toml:2:9: bad\n  |\n2 | \tname = 1\n  | \t       ^"
        );
    }
}
