//! Manifests of many jobs, for the scale tests and benchmarks (issue 14):
//! the same generator feeds the load and planning benchmarks and the
//! request-counting tests, so their numbers describe the same manifests.

use std::fmt::Write;

/// The zones jobs are spread over: UTC and five zones with and without
/// DST, in both hemispheres.
pub const ZONES: [&str; 6] = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Asia/Tokyo",
    "Australia/Sydney",
    "America/Sao_Paulo",
];

/// Which schedules a generated manifest's jobs have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// Every job hourly, at minutes spread over the hour: about `jobs / 60`
    /// due at each minute.
    Hourly,
    /// Every job every minute.
    Minutely,
    /// Varied schedules (daily, hourly, weekdays, every five minutes,
    /// monthly on the last day), the shape of a real manifest.
    Varied,
    /// `due` jobs every minute (`j1`..), all the others once a day at a
    /// minute no test ticks at (03:17 in their zone).
    DueEachMinute(usize),
}

/// The `[[job]]` schedule of job `i` (0-based) under `mix`.
fn schedule(i: usize, mix: Mix) -> String {
    match mix {
        Mix::Hourly => format!("{} * * * *", i % 60),
        Mix::Minutely => "* * * * *".to_string(),
        Mix::DueEachMinute(due) if i < due => "* * * * *".to_string(),
        Mix::DueEachMinute(_) => "17 3 * * *".to_string(),
        Mix::Varied => {
            let (m, h) = (i % 60, (i / 60) % 24);
            match i % 5 {
                0 => format!("{m} {h} * * *"),
                1 => format!("{m} * * * *"),
                2 => format!("{m} {h} * * MON-FRI"),
                3 => format!("{}-59/5 * * * *", i % 5),
                _ => format!("{m} {h} L * *"),
            }
        }
    }
}

/// A manifest of `jobs` command jobs named `j1`..`jN`, in [`ZONES`] in
/// turn (all in UTC when `one_zone`), with `mix`'s schedules.
pub fn manifest(jobs: usize, mix: Mix, one_zone: bool) -> String {
    let mut out =
        String::from("[defaults]\nlease = \"2m\"\nstarting_deadline = \"5m\"\ntimeout = \"30s\"\n");
    for i in 0..jobs {
        let zone = if one_zone {
            ZONES[0]
        } else {
            ZONES[i % ZONES.len()]
        };
        let _ = write!(
            out,
            "\n[[job]]\nname = \"j{}\"\nschedule = \"{}\"\ntimezone = \"{zone}\"\ncommand = [\"true\"]\n",
            i + 1,
            schedule(i, mix),
        );
    }
    out
}
