//! A schedule's key: what names one schedule of a dynamic job.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A valid schedule key: 1 to [`ScheduleKey::MAX_CHARS`] characters from
/// ASCII letters, digits and `-_.:`.
///
/// The alphabet leaves out `/` and `@` on purpose: a schedule's record is
/// named `job/key` and its slots `job/key@instant`, and neither a job name
/// nor a key can hold the separators, so every such name reads back one
/// way. It also leaves out everything a URL path, a Redis key or a
/// DynamoDB key would need to escape.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ScheduleKey(String);

/// A refused key: the key as given (cut to 64 characters for display) and
/// what is wrong, as one sentence that states the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The refused key, as given.
    pub key: String,
    /// 1-based position of the first character at fault (for a key that
    /// is too long, the first one past the limit; 0 for an empty key).
    pub column: usize,
    reason: String,
}

impl ScheduleKey {
    /// The longest a key may be, in characters.
    pub const MAX_CHARS: usize = 200;

    /// Checks `key` and wraps it.
    ///
    /// ```
    /// use cronslot_core::schedules::ScheduleKey;
    ///
    /// assert_eq!(ScheduleKey::new("tenant:42.invoice")?.as_str(), "tenant:42.invoice");
    /// let err = ScheduleKey::new("tenant/42").unwrap_err();
    /// assert!(err.to_string().contains("letters, digits and - _ . :"));
    /// # Ok::<(), cronslot_core::schedules::KeyError>(())
    /// ```
    pub fn new(key: impl Into<String>) -> Result<ScheduleKey, KeyError> {
        let key = key.into();
        let refuse = |column: usize, reason: String| KeyError {
            key: key.clone(),
            column,
            reason,
        };
        if key.is_empty() {
            return Err(refuse(0, "it is empty".to_string()));
        }
        for (i, ch) in key.chars().enumerate() {
            if i == Self::MAX_CHARS {
                let chars = key.chars().count();
                return Err(refuse(
                    i + 1,
                    format!("it has {chars} characters, more than {}", Self::MAX_CHARS),
                ));
            }
            if !(ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.' | ':')) {
                return Err(refuse(i + 1, format!("{ch:?} at character {}", i + 1)));
            }
        }
        Ok(ScheduleKey(key))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ScheduleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for ScheduleKey {
    type Error = KeyError;
    fn try_from(key: String) -> Result<ScheduleKey, KeyError> {
        ScheduleKey::new(key)
    }
}

impl From<ScheduleKey> for String {
    fn from(key: ScheduleKey) -> String {
        key.0
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: String = self.key.chars().take(64).collect();
        let more = if shown.len() < self.key.len() {
            "…"
        } else {
            ""
        };
        write!(
            f,
            "invalid schedule key {shown:?}{more}: {}; a key is 1 to {} characters of ASCII \
             letters, digits and - _ . :",
            self.reason,
            ScheduleKey::MAX_CHARS
        )
    }
}

impl std::error::Error for KeyError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alphabet_and_the_length_are_the_rule() {
        for ok in ["a", "Tenant-42", "t_1.invoice:2026", &"k".repeat(200)] {
            assert_eq!(ScheduleKey::new(ok).map(String::from).as_deref(), Ok(ok));
        }
        let err = ScheduleKey::new("").unwrap_err();
        assert_eq!(err.column, 0);
        assert!(err.to_string().contains("it is empty"), "{err}");
        let err = ScheduleKey::new("k".repeat(201)).unwrap_err();
        assert_eq!(err.column, 201);
        assert!(err.to_string().contains("201 characters"), "{err}");
        assert!(err.to_string().contains('…'), "a long key is cut: {err}");
        for (bad, column) in [("a/b", 2), ("a@b", 2), ("a b", 2), ("é", 1), ("x%2F", 2)] {
            let err = ScheduleKey::new(bad).unwrap_err();
            assert_eq!(err.column, column, "{bad}");
            assert!(err.to_string().contains("- _ . :"), "{err}");
        }
    }

    #[test]
    fn keys_read_from_json_are_checked() {
        let key: ScheduleKey = serde_json::from_str("\"t-1\"").unwrap();
        assert_eq!(key.as_str(), "t-1");
        assert!(serde_json::from_str::<ScheduleKey>("\"t/1\"").is_err());
    }
}
