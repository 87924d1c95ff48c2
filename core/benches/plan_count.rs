//! `Schedule::count_between`, the planner's way of counting missed slots
//! (docs/design.md §5), over a 1-minute and a 1-year span: counting by arithmetic
//! must cost about the same whatever the span.
//!
//! Run with `cargo bench -p cronslot-core --bench plan_count`. After
//! criterion has measured everything, the last line printed is the ratio
//! 1-year / 1-minute of the mean time per call for a per-minute job, in UTC
//! and in America/New_York, read from criterion's `estimates.json` files
//! (falling back to an interleaved timing loop in this binary when they are
//! missing or stale, e.g. when a filter skipped some). The line before it
//! gives the same ratio for a job whose days need the per-month masks
//! (`0 9 1,15 * *`), which the per-minute job's weekday shortcut skips.

use std::hint::black_box;
use std::time::{Instant, SystemTime};

use criterion::Criterion;
use cronslot_core::{CronExpr, DstPolicy, Schedule, Zone};
use jiff::Timestamp;

#[path = "common/criterion_out.rs"]
mod criterion_out;

const GROUP: &str = "plan_count";

struct Case {
    id: &'static str,
    schedule: Schedule,
    after: Timestamp,
    until: Timestamp,
    expected: u64,
}

impl Case {
    fn run(&self) -> u64 {
        self.schedule
            .count_between(black_box(self.after), black_box(self.until))
    }
}

fn t(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn cases() -> Vec<Case> {
    let schedule = |expr: &str, zone: &str| {
        Schedule::new(
            CronExpr::parse(expr).expect("expression"),
            Zone::get(zone).expect("zone"),
            DstPolicy::default(),
        )
    };
    let minute = (t("2026-06-15T12:00:00Z"), t("2026-06-15T12:01:00Z"));
    let utc_year = (t("2026-01-01T00:00:00Z"), t("2027-01-01T00:00:00Z"));
    // Local midnight to local midnight: both DST changes inside.
    let ny_year = (t("2026-01-01T05:00:00Z"), t("2027-01-01T05:00:00Z"));
    let case =
        |id, expr: &str, zone: &str, (after, until): (Timestamp, Timestamp), expected| Case {
            id,
            schedule: schedule(expr, zone),
            after,
            until,
            expected,
        };
    vec![
        case("utc/1-minute", "* * * * *", "UTC", minute, 1),
        case("utc/1-year", "* * * * *", "UTC", utc_year, 525_600),
        case(
            "new_york/1-minute",
            "* * * * *",
            "America/New_York",
            minute,
            1,
        ),
        case(
            "new_york/1-year",
            "* * * * *",
            "America/New_York",
            ny_year,
            525_600,
        ),
        case(
            "days_masks/1-minute",
            "0 9 1,15 * *",
            "America/New_York",
            minute,
            0,
        ),
        case(
            "days_masks/1-year",
            "0 9 1,15 * *",
            "America/New_York",
            ny_year,
            24,
        ),
    ]
}

// ------------------------------------------------------------ the ratio

/// Fallback: time every case in turn, many rounds, keep the fastest of each.
fn interleaved(cases: &[Case]) -> Vec<f64> {
    const CALLS: u32 = 2_000;
    let mut best = vec![f64::MAX; cases.len()];
    let deadline = Instant::now() + std::time::Duration::from_secs(4);
    let mut rounds = 0;
    while rounds < 5 || (Instant::now() < deadline && rounds < 200) {
        for (case, best) in cases.iter().zip(best.iter_mut()) {
            let start = Instant::now();
            for _ in 0..CALLS {
                black_box(case.run());
            }
            *best = best.min(start.elapsed().as_nanos() as f64 / f64::from(CALLS));
        }
        rounds += 1;
    }
    best
}

fn benchmark_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench")
        && !args
            .iter()
            .any(|a| a == "--test" || a == "--list" || a.starts_with("--profile-time"))
}

fn main() {
    let started = SystemTime::now();
    let cases = cases();
    for case in &cases {
        assert_eq!(case.run(), case.expected, "{}", case.id);
    }

    let mut c = Criterion::default()
        .sample_size(50)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
        .configure_from_args();
    {
        let mut group = c.benchmark_group(GROUP);
        for case in &cases {
            group.bench_function(case.id, |b| b.iter(|| case.run()));
        }
        group.finish();
    }
    c.final_summary();

    if !benchmark_mode() {
        return;
    }
    let from_criterion: Option<Vec<f64>> = cases
        .iter()
        .map(|case| criterion_out::criterion_mean(GROUP, case.id, started))
        .collect();
    let (means, source) = match from_criterion {
        Some(means) => (means, "criterion mean"),
        None => (interleaved(&cases), "interleaved loop, best of rounds"),
    };
    let mean = |id: &str| {
        cases
            .iter()
            .position(|c| c.id == id)
            .map_or(f64::NAN, |i| means[i])
    };
    let ratio = |zone: &str| {
        let (minute, year) = (
            mean(&format!("{zone}/1-minute")),
            mean(&format!("{zone}/1-year")),
        );
        (year / minute, minute, year)
    };
    let (masks, masks_minute, masks_year) = ratio("days_masks");
    println!(
        "count_between 1-year/1-minute, `0 9 1,15 * *` in America/New_York: {masks:.2}x \
         ({masks_minute:.0} ns vs {masks_year:.0} ns; {source})"
    );
    let (utc, utc_minute, utc_year) = ratio("utc");
    let (ny, ny_minute, ny_year) = ratio("new_york");
    println!(
        "ratio count_between 1-year/1-minute, `* * * * *`: UTC {utc:.2}x ({utc_minute:.0} ns vs \
         {utc_year:.0} ns), America/New_York {ny:.2}x ({ny_minute:.0} ns vs {ny_year:.0} ns); {source}"
    );
}
