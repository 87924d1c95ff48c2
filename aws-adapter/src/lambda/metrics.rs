//! CloudWatch Embedded Metric Format: a log line that CloudWatch Logs turns
//! into metrics, so the function needs no metrics API call (and no
//! permission for one).
//!
//! Shape (the EMF specification):
//!
//! ```json
//! {"_aws": {"Timestamp": 1772953200000,
//!           "CloudWatchMetrics": [{"Namespace": "cronslot",
//!                                  "Dimensions": [["job"]],
//!                                  "Metrics": [{"Name": "RunSucceeded", "Unit": "Count"}]}]},
//!  "job": "daily-report", "RunSucceeded": 1}
//! ```

use serde_json::{Map, Value, json};

/// The metrics' namespace.
pub const NAMESPACE: &str = "cronslot";

/// The one dimension: the job's name.
pub const DIMENSION: &str = "job";

/// The dimension value of events that name no known job.
pub const NO_JOB: &str = "(none)";

/// A run succeeded (1) or not (0).
pub const RUN_SUCCEEDED: &str = "RunSucceeded";
/// A run failed (1) or not (0).
pub const RUN_FAILED: &str = "RunFailed";
/// Slots given the fate "missed" by this invocation's writes.
pub const SLOT_MISSED: &str = "SlotMissed";
/// Slots that became dead letters by this invocation's writes.
pub const SLOT_DEAD: &str = "SlotDead";
/// From the slot's scheduled instant to the run's start.
pub const LAG_MS: &str = "LagMs";
/// The run's duration.
pub const DURATION_MS: &str = "DurationMs";
/// An event refused as malformed, for an unknown job, or at a time that is
/// not a slot: refused for good, so it gets its own metric to alarm on.
pub const INVALID_EVENT: &str = "InvalidEvent";

/// A metric's EMF unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unit {
    /// A number of things (`Count`).
    Count,
    /// A duration (`Milliseconds`).
    Milliseconds,
}

impl Unit {
    /// The unit's name in the EMF document.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// One value of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// The metric's name (one of this module's constants).
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Its value.
    pub value: u64,
}

impl Metric {
    /// A count of `value` things.
    pub fn count(name: &'static str, value: u64) -> Metric {
        Metric {
            name,
            unit: Unit::Count,
            value,
        }
    }

    /// A duration of `value` milliseconds.
    pub fn millis(name: &'static str, value: u64) -> Metric {
        Metric {
            name,
            unit: Unit::Milliseconds,
            value,
        }
    }
}

/// The EMF document for `metrics` of `job` at `timestamp_ms` (milliseconds
/// since the Unix epoch). Further properties (log fields that are not
/// metrics) can be added to the returned object; they must not reuse the
/// metric names or `_aws`.
pub fn emf(job: &str, timestamp_ms: i64, metrics: &[Metric]) -> Map<String, Value> {
    let declared: Vec<Value> = metrics
        .iter()
        .map(|m| json!({"Name": m.name, "Unit": m.unit.as_str()}))
        .collect();
    let mut doc = Map::new();
    doc.insert(
        "_aws".to_string(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[DIMENSION]],
                "Metrics": declared,
            }],
        }),
    );
    doc.insert(DIMENSION.to_string(), Value::from(job));
    for m in metrics {
        doc.insert(m.name.to_string(), Value::from(m.value));
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_emf_shape() {
        let doc = emf(
            "report",
            1_772_953_200_000,
            &[Metric::count(RUN_SUCCEEDED, 1), Metric::millis(LAG_MS, 250)],
        );
        let want = json!({
            "_aws": {
                "Timestamp": 1_772_953_200_000_i64,
                "CloudWatchMetrics": [{
                    "Namespace": "cronslot",
                    "Dimensions": [["job"]],
                    "Metrics": [
                        {"Name": "RunSucceeded", "Unit": "Count"},
                        {"Name": "LagMs", "Unit": "Milliseconds"}
                    ]
                }]
            },
            "job": "report",
            "RunSucceeded": 1,
            "LagMs": 250
        });
        assert_eq!(Value::Object(doc), want);
    }
}
