//! Text the commands print: instants (UTC and local), durations, slot ids,
//! one-line excerpts, argv as a shell line, and JSON.

use std::time::Duration;

use cronslot_core::Zone;
use cronslot_core::coord::{SlotId, format_instant};
use cronslot_core::manifest::{JobSpec, format_duration};
use jiff::{SignedDuration, Timestamp};
use serde::{Serialize, Serializer};

use crate::exit::Failure;

/// Longest error text printed in a table cell or a status line (JSON has
/// it whole).
pub const ERROR_CELL_CHARS: usize = 120;

/// RFC 3339, UTC, seconds precision, `Z` suffix: the form scripts rely on.
pub fn utc(instant: Timestamp) -> String {
    instant.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// "2026-03-08 03:00 EDT (-04:00)".
pub fn local(instant: Timestamp, zone: &Zone) -> String {
    instant
        .to_zoned_datetime(zone.time_zone().clone())
        .strftime("%Y-%m-%d %H:%M %Z (%:z)")
        .to_string()
}

/// "2026-03-08T07:00:00Z  2026-03-08 02:00 EST (-05:00)", or just UTC when
/// the job's zone is UTC.
pub fn instant_text(t: Timestamp, zone: &Zone) -> String {
    if zone.is_utc() {
        utc(t)
    } else {
        format!("{}  {}", utc(t), local(t, zone))
    }
}

/// A duration to the precision a person reads: seconds under an hour,
/// minutes under a day, hours beyond.
pub fn approx(d: SignedDuration) -> String {
    let secs = d.unsigned_abs().as_secs();
    let shown = if secs >= 86_400 {
        secs - secs % 3600
    } else if secs >= 3600 {
        secs - secs % 60
    } else {
        secs
    };
    format_duration(Duration::from_secs(shown))
}

/// "3m20s ago", or "in 5m" for an instant after `now`.
pub fn relative(now: Timestamp, t: Timestamp) -> String {
    let d = now.duration_since(t);
    if d.is_negative() {
        format!("in {}", approx(d))
    } else {
        format!("{} ago", approx(d))
    }
}

/// How long a run took: tenths of a second under a minute.
pub fn format_took(d: Duration) -> String {
    if d < Duration::from_secs(60) {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format_duration(Duration::from_secs(d.as_secs()))
    }
}

/// `job@2026-03-08T07:00:00Z`.
pub fn slot_id(spec: &JobSpec, slot: Timestamp) -> String {
    SlotId::new(spec, slot).to_string()
}

/// One line, at most `max` characters: control characters become spaces.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= max {
        flat.to_string()
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The argv as one could paste it into a shell.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An instant in JSON: RFC 3339, UTC, seconds precision, `Z` suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ts(pub Timestamp);

impl Serialize for Ts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_instant(self.0))
    }
}

/// A report as one line of JSON; failing to encode it is a problem (1).
pub fn to_json<T: Serialize>(value: &T) -> Result<String, Failure> {
    serde_json::to_string(value)
        .map_err(|e| Failure::problem(format!("error: cannot encode JSON: {e}")))
}
