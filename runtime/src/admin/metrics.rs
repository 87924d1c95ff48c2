//! The status in the Prometheus text exposition format (version 0.0.4).

use std::fmt::Write as _;

use jiff::Timestamp;

use super::{JobReport, StatusDoc};

/// One sample: its labels besides `job`, and its value.
type Sample = (Vec<(&'static str, String)>, String);

/// One metric family: its name, type, help, and how a job gives samples
/// (extra labels, value).
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: fn(&JobReport) -> Vec<Sample>,
}

fn one(value: impl ToString) -> Vec<Sample> {
    vec![(Vec::new(), value.to_string())]
}

fn flag(b: bool) -> Vec<Sample> {
    one(u8::from(b))
}

fn seconds(t: Timestamp) -> String {
    // In integers: float formatting would add ≈ 10 KB to the Worker.
    let ms = t.as_millisecond();
    let (secs, frac) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    if frac == 0 {
        secs.to_string()
    } else if secs < 0 {
        // -1.250 is -2 s + 750 ms.
        let (whole, frac) = (-(secs + 1), 1000 - frac);
        format!("-{whole}.{frac:03}")
    } else {
        format!("{secs}.{frac:03}")
    }
}

const FAMILIES: &[Family] = &[
    Family {
        name: "cronslot_runs_total",
        kind: "counter",
        help: "Runs started (claims), retries included.",
        samples: |j| one(j.runs),
    },
    Family {
        name: "cronslot_succeeded_total",
        kind: "counter",
        help: "Runs that succeeded.",
        samples: |j| one(j.succeeded),
    },
    Family {
        name: "cronslot_failed_total",
        kind: "counter",
        help: "Failed attempts (each failed retry counts).",
        samples: |j| one(j.failed),
    },
    Family {
        name: "cronslot_dead_total",
        kind: "counter",
        help: "Slots that became dead letters.",
        samples: |j| one(j.record.counters.dead),
    },
    Family {
        name: "cronslot_dead_letters",
        kind: "gauge",
        help: "Dead letters held now (redrive removes them).",
        samples: |j| one(j.dead_letters),
    },
    Family {
        name: "cronslot_missed_total",
        kind: "counter",
        help: "Slots that did not run, by reason (downtime, overlap, catch_up, dst, clock_change).",
        samples: |j| {
            j.missed
                .iter()
                .map(|(reason, n)| (vec![("reason", reason.clone())], n.to_string()))
                .collect()
        },
    },
    Family {
        name: "cronslot_skipped_total",
        kind: "counter",
        help: "Slots not due to run, by reason (paused, outside_window).",
        samples: |j| {
            j.skipped
                .iter()
                .map(|(reason, n)| (vec![("reason", reason.clone())], n.to_string()))
                .collect()
        },
    },
    Family {
        name: "cronslot_last_success_timestamp_seconds",
        kind: "gauge",
        help: "When the last successful run finished (Unix seconds); absent when none has.",
        samples: |j| j.last_success.map(seconds).map(one).unwrap_or_default(),
    },
    Family {
        name: "cronslot_next_slot_timestamp_seconds",
        kind: "gauge",
        help: "The next slot in the job's active window (Unix seconds); absent when none is left.",
        samples: |j| j.next_slot.map(seconds).map(one).unwrap_or_default(),
    },
    Family {
        name: "cronslot_fence",
        kind: "gauge",
        help: "The highest fence issued.",
        samples: |j| one(j.fence),
    },
    Family {
        name: "cronslot_live_leases",
        kind: "gauge",
        help: "Runs holding a live lease now.",
        samples: |j| one(j.live_leases),
    },
    Family {
        name: "cronslot_pending_runs",
        kind: "gauge",
        help: "Retries, backfills and redrives waiting for a runner.",
        samples: |j| one(j.pending),
    },
    Family {
        name: "cronslot_paused",
        kind: "gauge",
        help: "1 when the job is paused.",
        samples: |j| flag(j.paused),
    },
    Family {
        name: "cronslot_stale",
        kind: "gauge",
        help: "1 when the job has not succeeded within its staleness bound.",
        samples: |j| flag(j.stale),
    },
    Family {
        name: "cronslot_stale_after_seconds",
        kind: "gauge",
        help: "The job's staleness bound; absent when it has none.",
        samples: |j| j.stale_after_seconds.map(one).unwrap_or_default(),
    },
];

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Every family with its `# HELP` and `# TYPE` lines, then one sample per
/// job (and reason), labelled `job="…"`.
pub fn prometheus_text(doc: &StatusDoc) -> String {
    let mut out = String::new();
    for family in FAMILIES {
        let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(out, "# TYPE {} {}", family.name, family.kind);
        for job in &doc.jobs {
            for (labels, value) in (family.samples)(job) {
                let _ = write!(out, "{}{{job=\"{}\"", family.name, escape(&job.job));
                for (name, value) in labels {
                    let _ = write!(out, ",{name}=\"{}\"", escape(&value));
                }
                let _ = writeln!(out, "}} {value}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_label_values() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("a\nb"), r"a\nb");
    }

    #[test]
    fn seconds_are_exact() {
        let t: Timestamp = "2026-03-08T07:00:00Z".parse().unwrap();
        assert_eq!(seconds(t), "1772953200");
        let t: Timestamp = "2026-03-08T07:00:00.25Z".parse().unwrap();
        assert_eq!(seconds(t), "1772953200.250");
        for (ms, text) in [
            (-1250, "-1.250"),
            (-250, "-0.250"),
            (-1000, "-1"),
            (1, "0.001"),
        ] {
            let t = Timestamp::from_millisecond(ms).unwrap();
            assert_eq!(seconds(t), text, "{ms} ms");
        }
    }
}
