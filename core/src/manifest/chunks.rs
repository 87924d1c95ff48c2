//! Cutting a manifest into pieces that parse on their own, so that a
//! manifest of thousands of jobs is never held as one document tree: the
//! tree of 10,000 jobs took 35 MB, and one job's takes a few KB.
//!
//! A piece starts at each `[[job]]` header (the first piece is what comes
//! before the first one: usually `[defaults]`). A job's sub-tables
//! (`[job.http]`) and anything else up to the next `[[job]]` stay in its
//! piece, so each piece means what it meant in the whole document. Headers
//! are found with the TOML lexer, which knows strings and comments; a
//! `[` only starts a header at the start of a line outside any value (a
//! multi-line array's nested `[` does not).

use std::ops::Range;

use toml_parser::Source;
use toml_parser::lexer::TokenKind;

/// One piece of the manifest, by byte range in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Chunk {
    pub range: Range<usize>,
    /// A header in the piece names `defaults` (`[defaults]`,
    /// `[defaults.retry]`): the defaults are read from it before any job.
    pub has_defaults: bool,
}

/// What a header line says about the piece it is in.
enum Header {
    /// `[[job]]`: a new piece starts here.
    Job,
    /// A table under `defaults`.
    Defaults,
    Other,
}

/// The header starting at `at` (a `[` at the start of a line), read from
/// the text of its line: the lexer already placed it outside any string.
fn header_at(text: &str, at: usize) -> Header {
    let line = text[at..].split('\n').next().unwrap_or("");
    let line = line.split('#').next().unwrap_or("").trim_end();
    let (array, inner) = match line.strip_prefix("[[") {
        Some(rest) => (true, rest.strip_suffix("]]")),
        None => (false, line.get(1..).and_then(|r| r.strip_suffix(']'))),
    };
    let Some(inner) = inner else {
        return Header::Other;
    };
    let first = inner.split('.').next().unwrap_or("").trim();
    let first = first
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .or_else(|| first.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')))
        .unwrap_or(first);
    match (array, first, inner.contains('.')) {
        (true, "job", false) => Header::Job,
        (_, "defaults", _) => Header::Defaults,
        _ => Header::Other,
    }
}

/// The pieces of `text`, in order, covering it entirely.
pub(super) fn chunks(text: &str) -> Vec<Chunk> {
    let mut out = vec![Chunk {
        range: 0..text.len(),
        has_defaults: false,
    }];
    let mut line_start = true;
    let mut in_header = false;
    // Brackets and braces open inside a value: a newline within them does
    // not end the value.
    let mut depth = 0usize;
    for token in Source::new(text).lex() {
        let kind = token.kind();
        match kind {
            TokenKind::Whitespace | TokenKind::Comment => continue,
            TokenKind::Newline => {
                if depth == 0 {
                    line_start = true;
                    in_header = false;
                }
                continue;
            }
            TokenKind::Eof => break,
            _ => {}
        }
        if line_start && depth == 0 && kind == TokenKind::LeftSquareBracket {
            let at = token.span().start();
            match header_at(text, at) {
                Header::Job => {
                    if let Some(last) = out.last_mut() {
                        last.range.end = at;
                    }
                    out.push(Chunk {
                        range: at..text.len(),
                        has_defaults: false,
                    });
                }
                Header::Defaults => {
                    if let Some(last) = out.last_mut() {
                        last.has_defaults = true;
                    }
                }
                Header::Other => {}
            }
            in_header = true;
        } else if !in_header {
            match kind {
                TokenKind::LeftSquareBracket | TokenKind::LeftCurlyBracket => depth += 1,
                TokenKind::RightSquareBracket | TokenKind::RightCurlyBracket => {
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
        }
        line_start = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<(&str, bool)> {
        chunks(text)
            .into_iter()
            .map(|c| (&text[c.range], c.has_defaults))
            .collect()
    }

    #[test]
    fn a_piece_starts_at_each_job_header() {
        let text = "# jobs\n[defaults]\nlease = \"2m\"\n\n[[job]]\nname = \"a\"\n[job.http]\nurl = \"x\"\n  [[ \"job\" ]] # b\nname = \"b\"\n";
        assert_eq!(
            pieces(text),
            [
                ("# jobs\n[defaults]\nlease = \"2m\"\n\n", true),
                ("[[job]]\nname = \"a\"\n[job.http]\nurl = \"x\"\n  ", false),
                ("[[ \"job\" ]] # b\nname = \"b\"\n", false),
            ]
        );
    }

    #[test]
    fn brackets_inside_values_strings_and_comments_are_not_headers() {
        let text = "[[job]]\nname = \"a\"\ncommand = [\n[\"x\"],\n\"[[job]]\",\n]\nnote = \"\"\"\n[[job]]\n\"\"\"\n# [[job]]\n[[job]]\nname = \"b\"\n";
        let found = pieces(text);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].0, "", "nothing before the first job");
        assert!(found[1].0.ends_with("# [[job]]\n"));
        assert!(found[2].0.starts_with("[[job]]\nname = \"b\""));
    }

    #[test]
    fn defaults_anywhere_are_noticed_and_other_headers_do_not_cut() {
        let text = "[[job]]\nname = \"a\"\n[defaults.retry]\nmax_attempts = 1\n[[job.x]]\n[jobs]\n";
        let found = pieces(text);
        assert_eq!(found, [("", false), (text, true)]);
    }

    #[test]
    fn broken_text_is_one_piece_or_more_and_never_panics() {
        for text in [
            "",
            "[",
            "[[",
            "[[job",
            "a = [\n[[job]]\n",
            "\"unterminated\n[[job]]\n",
        ] {
            let found = chunks(text);
            assert_eq!(found.first().map(|c| c.range.start), Some(0));
            assert_eq!(found.last().map(|c| c.range.end), Some(text.len()));
        }
    }
}
