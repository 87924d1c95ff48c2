//! Job names: the key of a job everywhere (slot ids, store records, events,
//! templates), so they are restricted to what every one of those accepts
//! unescaped.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A valid job name: 1 to 64 characters from lowercase ASCII letters,
/// digits, `-` and `_`, starting with a letter or a digit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct JobName(String);

/// What is wrong with a job name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobNameErrorKind {
    /// The name is empty.
    Empty,
    /// The name is longer than [`JobName::MAX_CHARS`].
    TooLong {
        /// Its length, in characters.
        chars: usize,
    },
    /// The first character is `-` or `_`.
    BadStart {
        /// The first character.
        ch: char,
    },
    /// A character outside `a-z 0-9 - _`.
    BadChar {
        /// The first such character.
        ch: char,
    },
}

/// A refused job name, with the 1-based character position of the problem.
///
/// `Display` is one sentence, with a valid name close to the refused one
/// when there is one (`invalid job name "Daily Report": 'D' is uppercase;
/// names are lowercase (did you mean "daily-report"?)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobNameError {
    /// The refused name, as given.
    pub name: String,
    /// What is wrong with it.
    pub kind: JobNameErrorKind,
    /// 1-based position (in characters) of the offending character, or of
    /// the first character past the limit for a name that is too long.
    pub column: usize,
}

impl JobName {
    /// The longest a name may be, in characters.
    pub const MAX_CHARS: usize = 64;

    /// Checks `name` ([`validate_job_name`]) and wraps it.
    ///
    /// # Examples
    ///
    /// ```
    /// use cronslot_core::manifest::JobName;
    ///
    /// let name = JobName::new("daily-report")?;
    /// assert_eq!(name.as_str(), "daily-report");
    ///
    /// let err = JobName::new("Daily Report").unwrap_err();
    /// assert_eq!(err.column, 1);
    /// assert_eq!(
    ///     err.to_string(),
    ///     "invalid job name \"Daily Report\": 'D' is uppercase; names are lowercase \
    ///      (did you mean \"daily-report\"?)",
    /// );
    /// # Ok::<(), cronslot_core::manifest::JobNameError>(())
    /// ```
    pub fn new(name: impl Into<String>) -> Result<JobName, JobNameError> {
        let name = name.into();
        validate_job_name(&name)?;
        Ok(JobName(name))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as an owned `String`, without copying.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Checks a job name without allocating a [`JobName`].
pub fn validate_job_name(name: &str) -> Result<(), JobNameError> {
    let fail = |kind, column| {
        Err(JobNameError {
            name: name.to_string(),
            kind,
            column,
        })
    };
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return fail(JobNameErrorKind::Empty, 1);
    };
    if first == '-' || first == '_' {
        return fail(JobNameErrorKind::BadStart { ch: first }, 1);
    }
    for (i, ch) in name.chars().enumerate() {
        if !allowed(ch) {
            return fail(JobNameErrorKind::BadChar { ch }, i + 1);
        }
    }
    let count = name.chars().count();
    if count > JobName::MAX_CHARS {
        return fail(
            JobNameErrorKind::TooLong { chars: count },
            JobName::MAX_CHARS + 1,
        );
    }
    Ok(())
}

fn allowed(ch: char) -> bool {
    ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' || ch == '_'
}

/// A valid name close to `name`: lowercased, other characters turned into
/// `-`, leading separators dropped, cut to the limit.
fn suggestion(name: &str) -> Option<String> {
    let mut out = String::new();
    for ch in name.chars().flat_map(char::to_lowercase) {
        let ch = if allowed(ch) { ch } else { '-' };
        if ch == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        out.push(ch);
    }
    let mut out: String = out
        .trim_start_matches(['-', '_'])
        .chars()
        .take(JobName::MAX_CHARS)
        .collect();
    while out.ends_with('-') {
        out.pop();
    }
    (validate_job_name(&out).is_ok() && out != name).then_some(out)
}

impl fmt::Display for JobNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid job name {:?}: ", self.name)?;
        match &self.kind {
            JobNameErrorKind::Empty => f.write_str("it is empty")?,
            JobNameErrorKind::TooLong { chars } => write!(
                f,
                "it has {chars} characters, the limit is {}",
                JobName::MAX_CHARS
            )?,
            JobNameErrorKind::BadStart { ch } => {
                write!(f, "it starts with {ch:?}; start with a letter or a digit")?
            }
            JobNameErrorKind::BadChar { ch } if ch.is_ascii_uppercase() => {
                write!(f, "{ch:?} is uppercase; names are lowercase")?
            }
            JobNameErrorKind::BadChar { ch } => write!(
                f,
                "{ch:?} is not allowed; use lowercase letters, digits, '-' and '_'"
            )?,
        }
        if let Some(s) = suggestion(&self.name) {
            write!(f, " (did you mean {s:?}?)")?;
        }
        Ok(())
    }
}

impl std::error::Error for JobNameError {}

impl fmt::Display for JobName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for JobName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for JobName {
    type Err = JobNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobName::new(s)
    }
}

impl TryFrom<String> for JobName {
    type Error = JobNameError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        JobName::new(s)
    }
}

impl TryFrom<&str> for JobName {
    type Error = JobNameError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        JobName::new(s)
    }
}

impl From<JobName> for String {
    fn from(name: JobName) -> String {
        name.0
    }
}

impl PartialEq<str> for JobName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for JobName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet() {
        for ok in ["a", "0", "daily-report", "x_1", "9lives", &"a".repeat(64)] {
            assert!(JobName::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_with_position_and_suggestion() {
        let e = JobName::new("Daily Report").err();
        assert_eq!(e.as_ref().map(|e| e.column), Some(1));
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("\"daily-report\""), "{text}");
        assert_eq!(JobName::new("ab.c").err().map(|e| e.column), Some(3));
        assert_eq!(JobName::new("-a").err().map(|e| e.column), Some(1));
        assert_eq!(
            JobName::new("").err().map(|e| e.kind),
            Some(JobNameErrorKind::Empty)
        );
        assert_eq!(
            JobName::new("a".repeat(65)).err().map(|e| e.column),
            Some(65)
        );
    }
}
