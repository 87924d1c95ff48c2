//! Durations as the manifest writes them: `"90s"`, `"15m"`, `"2h"`, `"1d"`,
//! or combinations from the largest unit down, such as `"1h30m"`.
//!
//! Whole seconds only: every platform cronslot targets schedules by the
//! minute, so sub-second precision would only suggest an accuracy nobody
//! delivers.

use std::fmt;
use std::time::Duration;

/// The units a duration accepts, largest first, with their length in seconds.
const UNITS: [(char, u64); 4] = [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];

/// The longest duration a manifest may hold: far beyond any useful lease or
/// staleness bound, and small enough that adding it to any instant of the
/// supported calendar cannot overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(36_500 * 86_400);

const ACCEPTED: &str =
    "durations are written like \"90s\", \"15m\", \"2h\", \"1d\" or \"1h30m\" (units d, h, m, s)";

/// Why a duration string was refused; `Display` is one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    /// The text that was refused.
    pub text: String,
    /// What is wrong and how durations are written, in one sentence.
    pub message: String,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DurationError {}

fn error(text: &str, message: String) -> DurationError {
    DurationError {
        text: text.to_string(),
        message,
    }
}

/// Parses a manifest duration. Zero (`"0s"`) parses; whether zero makes
/// sense is for the field to decide.
///
/// Units are `d`, `h`, `m` and `s`, each at most once, largest first, whole
/// numbers only, no spaces; the total is at most [`MAX_DURATION`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use cronslot_core::manifest::{format_duration, parse_duration};
///
/// assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
/// assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m");
/// assert!(parse_duration("1.5h").is_err());
/// assert!(parse_duration("90").unwrap_err().to_string().contains("has no unit"));
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    if text.is_empty() {
        return Err(error(text, format!("the duration is empty; {ACCEPTED}")));
    }
    if text.chars().any(char::is_whitespace) {
        return Err(error(text, format!("{text:?} contains spaces; {ACCEPTED}")));
    }
    if text.starts_with('-') {
        return Err(error(
            text,
            format!("{text:?} is negative; durations cannot be"),
        ));
    }
    if text.starts_with('+') {
        return Err(error(
            text,
            format!("{text:?} has a sign; write the duration without it"),
        ));
    }
    let mut total: u64 = 0;
    // Index into UNITS of the last unit used: each later unit must be smaller.
    let mut previous: Option<usize> = None;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            let bad: String = rest.chars().take_while(|c| !c.is_ascii_digit()).collect();
            return Err(error(
                text,
                format!("{text:?} has {bad:?} where a number belongs; {ACCEPTED}"),
            ));
        }
        let (number, after) = rest.split_at(digits);
        let unit_len = after.len()
            - after
                .trim_start_matches(|c: char| !c.is_ascii_digit())
                .len();
        let (unit, next) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(error(text, format!("{text:?} has no unit; {ACCEPTED}")));
        }
        if unit.starts_with('.') || unit.starts_with(',') {
            return Err(error(
                text,
                format!(
                    "{text:?} has a fraction; write whole units instead, such as \"1h30m\" for 1.5h"
                ),
            ));
        }
        let Some(index) = UNITS
            .iter()
            .position(|(u, _)| unit.len() == 1 && unit.starts_with(*u))
        else {
            return Err(error(
                text,
                format!("{text:?} has the unknown unit {unit:?}; the units are d, h, m and s"),
            ));
        };
        if previous.is_some_and(|p| p >= index) {
            return Err(error(
                text,
                format!(
                    "{text:?} repeats a unit or puts a smaller one first; write units from largest to smallest, each once, as in \"1h30m\""
                ),
            ));
        }
        previous = Some(index);
        let too_long = || {
            error(
                text,
                format!(
                    "{text:?} is too long; the longest duration is {}",
                    format_duration(MAX_DURATION)
                ),
            )
        };
        let value: u64 = number.parse().map_err(|_| too_long())?;
        let seconds = value.checked_mul(UNITS[index].1).ok_or_else(too_long)?;
        total = total.checked_add(seconds).ok_or_else(too_long)?;
        if total > MAX_DURATION.as_secs() {
            return Err(too_long());
        }
        rest = next;
    }
    Ok(Duration::from_secs(total))
}

/// The canonical text of a duration (`5400s` → `"1h30m"`, zero → `"0s"`):
/// what [`parse_duration`] reads back to the same value. Sub-second parts are
/// dropped, as manifests never hold them.
pub fn format_duration(duration: Duration) -> String {
    let mut seconds = duration.as_secs();
    if seconds == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, length) in UNITS {
        let count = seconds / length;
        if count > 0 {
            out.push_str(&count.to_string());
            out.push(unit);
            seconds %= length;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_combinations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1d2h3m4s"), Ok(Duration::from_secs(93_784)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_malformed_text() {
        for bad in [
            "",
            "90",
            "-5m",
            "+5m",
            "1.5h",
            "5x",
            "5ms",
            "1m1h",
            "1m1m",
            " 5m",
            "5 m",
            "m",
            "h5",
            "99999999999999999999d",
            "36501d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn messages_name_the_accepted_units() {
        let e = parse_duration("5ms")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("d, h, m and s"), "{e}");
        let e = parse_duration("90")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("no unit"), "{e}");
    }

    #[test]
    fn formats_canonically_and_round_trips() {
        for (secs, text) in [(0, "0s"), (90, "1m30s"), (5400, "1h30m"), (86_400, "1d")] {
            let d = Duration::from_secs(secs);
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
    }
}
