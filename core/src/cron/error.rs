//! Errors of the cron parsers: every error names the field, the token and the
//! column, and where it can, suggests the fix.

use std::fmt;

use super::Field;

/// What was wrong with a cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronErrorKind {
    /// The expression is empty or only whitespace.
    Empty,
    /// The expression has the wrong number of fields.
    FieldCount {
        /// Fields in the text.
        found: usize,
        /// Fields the dialect has (5, or 6 for EventBridge).
        expected: usize,
    },
    /// A field (or a list item) is empty, as in `1,,2`.
    EmptyItem,
    /// A value is not a number or a name this field accepts.
    InvalidValue,
    /// A number outside the field's range.
    OutOfRange {
        /// The number as written (one of more than six digits reads as
        /// `u32::MAX`).
        value: u32,
        /// The smallest number the field accepts.
        min: u32,
        /// The largest number the field accepts.
        max: u32,
    },
    /// `a-b` with `a > b`.
    DescendingRange {
        /// The value before the `-`.
        start: u32,
        /// The value after the `-`, smaller than `start`.
        end: u32,
    },
    /// A step of zero (`*/0`).
    ZeroStep,
    /// A step larger than the field's span, which would select one value at most.
    InvalidStep,
    /// A character or construct this field does not accept here.
    Unsupported,
    /// Something after a complete token, as in `5x`.
    TrailingGarbage,
    /// `@reboot`, `@every` or any other unknown macro.
    UnknownMacro,
    /// A construct the target dialect requires but the text lacks
    /// (EventBridge: exactly one of the day fields must be `?`).
    DialectRule,
}

/// A typed parse error: which field, which token, which column (1-based, in
/// characters of the original text), and a hint.
///
/// `Display` puts it together in one line, for instance
/// `"8" in day-of-week (column 9) is out of range 0-7; weekdays are 0-7 (0
/// and 7 are Sunday) or SUN-SAT` (see [`CronExpr::parse`] for examples);
/// the fields are there for callers that point at the column themselves.
///
/// [`CronExpr::parse`]: super::CronExpr::parse
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronError {
    /// What was wrong, for callers that branch on it.
    pub kind: CronErrorKind,
    /// The field the problem is in; `None` for problems of the whole
    /// expression (empty, wrong number of fields, a macro, an EventBridge
    /// `cron(...)` wrapper where none belongs).
    pub field: Option<Field>,
    /// The offending text as written; empty when there is none to quote (an
    /// empty expression, too few fields, a missing value).
    pub token: String,
    /// 1-based column of the problem, in characters of the text as given
    /// (leading whitespace included).
    pub column: usize,
    /// What is wrong, as the end of a sentence about the token or field
    /// (`"is out of range 0-7"`).
    pub message: String,
    /// How to fix it, when there is a likely fix.
    pub hint: Option<String>,
}

impl CronError {
    pub(crate) fn new(
        kind: CronErrorKind,
        field: Option<Field>,
        token: &str,
        column: usize,
        message: impl Into<String>,
    ) -> Self {
        CronError {
            kind,
            field,
            token: token.to_string(),
            column,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.field, self.token.is_empty()) {
            (Some(field), false) => write!(
                f,
                "{:?} in {} (column {}) {}",
                self.token,
                field.name(),
                self.column,
                self.message
            )?,
            (Some(field), true) => write!(
                f,
                "{} (column {}) {}",
                field.name(),
                self.column,
                self.message
            )?,
            (None, false) => write!(
                f,
                "{:?} (column {}) {}",
                self.token, self.column, self.message
            )?,
            (None, true) => write!(f, "the expression {}", self.message)?,
        }
        if let Some(hint) = &self.hint {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CronError {}
