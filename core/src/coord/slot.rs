//! The slot: one scheduled occurrence of a job, `(job, instant)`. Its id is
//! stable across retries and is the idempotency key handed to the job.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;

use crate::instant::parse_instant;
use crate::manifest::{JobSpec, validate_job_name};
use crate::schedules::ScheduleKey;

/// The identity of one slot: a job's name and the slot's scheduled instant.
///
/// It displays as `job@2026-03-08T07:00:00Z` (see [`format_instant`]), or
/// `job/key@2026-03-08T07:00:00Z` for a schedule of a dynamic job, and
/// parses back from that text. It is the same for every attempt of the slot,
/// which makes it the idempotency key a run hands to the APIs it calls.
///
/// ```
/// use cronslot_core::coord::SlotId;
///
/// let id: SlotId = "daily-report@2026-03-08T07:00:00Z".parse()?;
/// assert_eq!(id.job(), "daily-report");
/// assert_eq!(id.at().as_second(), 1_772_953_200);
/// assert_eq!(id.to_string(), "daily-report@2026-03-08T07:00:00Z");
/// # Ok::<(), cronslot_core::coord::SlotIdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlotId {
    job: String,
    at: Timestamp,
}

impl SlotId {
    /// The slot of the job (or the schedule) `spec` is of, at `at`.
    pub fn new(spec: &JobSpec, at: Timestamp) -> SlotId {
        SlotId {
            job: spec.record_name().into_owned(),
            at,
        }
    }

    /// The job's name, or `job/key` for a schedule of a dynamic job (its
    /// [record name](JobSpec::record_name)).
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The slot's scheduled instant.
    pub fn at(&self) -> Timestamp {
        self.at
    }
}

/// RFC 3339 UTC with seconds precision and a `Z` suffix (slots are whole
/// seconds): `2026-03-08T07:00:00Z`. Written out rather than with
/// `strftime`, whose formatter is ≈ 15 KB of a Worker for one pattern.
pub fn format_instant(t: Timestamp) -> String {
    let d = jiff::tz::Offset::UTC.to_datetime(t);
    // `{:04}` pads to four characters with the sign counted, as strftime's
    // %Y does for the years before 0 (only the Timestamp range reaches them).
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        d.year(),
        d.month(),
        d.day(),
        d.hour(),
        d.minute(),
        d.second()
    )
}

impl fmt::Display for SlotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.job, format_instant(self.at))
    }
}

/// A slot id that cannot be read; the text says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotIdError(pub String);

impl fmt::Display for SlotIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SlotIdError {}

impl FromStr for SlotId {
    type Err = SlotIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (job, at) = s.rsplit_once('@').ok_or_else(|| {
            SlotIdError(format!(
                "{s:?} is not a slot id (write job@2026-03-08T07:00:00Z)"
            ))
        })?;
        match job.split_once('/') {
            None => validate_job_name(job).map(drop).map_err(|e| e.to_string()),
            Some((name, key)) => validate_job_name(name)
                .map(drop)
                .map_err(|e| e.to_string())
                .and_then(|()| ScheduleKey::new(key).map(drop).map_err(|e| e.to_string())),
        }
        .map_err(|e| SlotIdError(format!("{s:?}: {e}")))?;
        let at = parse_instant(at).map_err(|e| SlotIdError(format!("{s:?}: {e}")))?;
        Ok(SlotId {
            job: job.to_string(),
            at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let id: SlotId = "daily-report@2026-03-08T07:00:00Z".parse().expect("valid");
        assert_eq!(id.job(), "daily-report");
        assert_eq!(id.to_string(), "daily-report@2026-03-08T07:00:00Z");
        let id: SlotId = "invoice/tenant:42@2026-03-08T07:00:00Z"
            .parse()
            .expect("a schedule's slot");
        assert_eq!(id.job(), "invoice/tenant:42");
        assert_eq!(id.to_string(), "invoice/tenant:42@2026-03-08T07:00:00Z");
        for bad in [
            "Invoice/t@2026-03-08T07:00:00Z",
            "invoice/t/u@2026-03-08T07:00:00Z",
            "invoice/@2026-03-08T07:00:00Z",
        ] {
            assert!(bad.parse::<SlotId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn instants_are_written_as_strftime_would() {
        let mut second = Timestamp::MIN.as_second();
        let step = (Timestamp::MAX.as_second() - second) / 20_011;
        while second <= Timestamp::MAX.as_second() {
            let t = Timestamp::from_second(second).expect("in range");
            assert_eq!(
                format_instant(t),
                t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                "{second}"
            );
            second += step;
        }
        let t: Timestamp = "2026-03-08T07:00:00Z".parse().expect("valid");
        assert_eq!(format_instant(t), "2026-03-08T07:00:00Z");
    }

    #[test]
    fn refuses_bad_ids() {
        assert!("no-at-sign".parse::<SlotId>().is_err());
        assert!("Bad Name@2026-03-08T07:00:00Z".parse::<SlotId>().is_err());
        assert!("job@yesterday".parse::<SlotId>().is_err());
    }
}
