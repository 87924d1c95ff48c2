//! `Schedule::next_after` against croner's `find_next_occurrence`, on the
//! same mixed corpus and the same start instants, in one run.
//!
//! Run with `cargo bench -p cronslot-core --bench next_after`. After criterion
//! has measured both, the last line printed is the ratio croner / cronslot of
//! the mean time per call, read from criterion's `estimates.json` files
//! (falling back to an interleaved timing loop in this binary when they are
//! missing or stale, e.g. when a filter skipped one of the two).
//!
//! croner's own `jiff` feature links jiff 0.2 without a time zone database,
//! so croner is driven through its public `CronDateTime` trait implemented
//! for jiff 1.0's `ZonedDateTime` (`Zt`, a port of croner's
//! `time/jiff_impl.rs`): both engines use the same bundled tz data. Schedules,
//! crons and start values are all built before the timed loops.

use std::hint::black_box;
use std::time::{Instant, SystemTime};

use criterion::{Criterion, Throughput};
use croner::Cron;
use croner::parser::CronParser;
use cronslot_core::{CronExpr, DstPolicy, Schedule, Zone};
use jiff::Timestamp;
use jiff::tz::TimeZone;

#[path = "common/criterion_out.rs"]
mod criterion_out;

const GROUP: &str = "next_after";

const EXPRESSIONS: [&str; 30] = [
    // Every minute, every few minutes, hourly.
    "* * * * *",
    "*/5 * * * *",
    "*/15 * * * *",
    "0 * * * *",
    "30 */2 * * *",
    "*/10 9-17 * * 1-5",
    // Daily.
    "0 0 * * *",
    "30 2 * * *",
    "0 9 * * *",
    "15 14 * * *",
    "0 8,12,18 * * *",
    // Weekdays and weekends.
    "0 9 * * MON-FRI",
    "0 8 * * 1-5",
    "30 18 * * SAT,SUN",
    "0 12 * * WED",
    // Monthly, with L, W and #.
    "0 0 1 * *",
    "0 0 L * *",
    "0 9 LW * *",
    "0 9 15W * *",
    "0 10 * * MON#1",
    "0 10 * * FRI#L",
    "0 10 * * 5L",
    "0 0 1,15 * *",
    "0 6 1 */3 *",
    "0 0 1 * MON",
    // Yearly and sparse.
    "0 0 1 1 *",
    "0 12 25 12 *",
    "0 0 1 JAN,JUL *",
    "0 0 13 * +FRI",
    "0 0 29 2 *",
];

const ZONES: [&str; 4] = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
];

/// Start instants: ordinary ones and some next to DST changes.
const STARTS: [&str; 8] = [
    "2025-06-15T12:34:56Z",
    "2026-03-08T06:59:30Z", // just before New York springs forward
    "2026-03-29T00:30:00Z", // just before Berlin does
    "2026-10-03T15:00:00Z", // just before Lord Howe's half-hour gap
    "2026-11-01T05:30:00Z", // inside New York's repeated hour
    "2027-01-01T00:00:00Z",
    "2028-02-28T23:59:00Z",
    "2030-07-04T08:00:00Z",
];

// ------------------------------------------------------------ croner adapter

#[path = "../tests/common/croner_jiff.rs"]
mod croner_jiff;
use croner_jiff::Zt;

// ------------------------------------------------------------ corpus

struct Corpus {
    schedules: Vec<Schedule>,
    crons: Vec<Cron>,
    /// Per zone: the start instants as timestamps and as croner values.
    starts: Vec<Vec<Timestamp>>,
    zoned: Vec<Vec<Zt>>,
    /// `(expression, zone)` index pairs, in the same order for both.
    pairs: Vec<(usize, usize)>,
}

impl Corpus {
    fn new() -> Corpus {
        let parser = CronParser::builder().build();
        let mut schedules = Vec::new();
        let mut crons = Vec::new();
        let mut pairs = Vec::new();
        for (z, zone) in ZONES.iter().enumerate() {
            for text in EXPRESSIONS {
                let i = schedules.len();
                schedules.push(Schedule::new(
                    CronExpr::parse(text).expect("corpus expression"),
                    Zone::get(zone).expect("zone"),
                    DstPolicy::default(),
                ));
                crons.push(parser.parse(text).expect("croner parses the corpus"));
                pairs.push((i, z));
            }
        }
        let starts: Vec<Vec<Timestamp>> = ZONES
            .iter()
            .map(|_| STARTS.iter().map(|s| s.parse().expect("instant")).collect())
            .collect();
        let zoned = ZONES
            .iter()
            .zip(&starts)
            .map(|(zone, ts)| {
                let tz = TimeZone::get(zone).expect("zone");
                ts.iter()
                    .map(|t| Zt(t.to_zoned_datetime(tz.clone())))
                    .collect()
            })
            .collect();
        Corpus {
            schedules,
            crons,
            starts,
            zoned,
            pairs,
        }
    }

    fn calls(&self) -> usize {
        self.pairs.len() * STARTS.len()
    }

    fn run_cronslot(&self) -> i64 {
        let mut acc = 0i64;
        for &(i, z) in &self.pairs {
            let s = &self.schedules[i];
            for t in &self.starts[z] {
                if let Some(n) = s.next_after(black_box(*t)) {
                    acc = acc.wrapping_add(n.as_second());
                }
            }
        }
        acc
    }

    fn run_croner(&self) -> i64 {
        let mut acc = 0i64;
        for &(i, z) in &self.pairs {
            let c = &self.crons[i];
            for t in &self.zoned[z] {
                if let Ok(n) = c.find_next_occurrence(black_box(t), false) {
                    acc = acc.wrapping_add(n.0.timestamp().as_second());
                }
            }
        }
        acc
    }

    /// How many calls give the same instant in both (they differ by design
    /// where croner's fixed-time and day rules differ, see
    /// tests/it/differential.rs).
    fn agreement(&self) -> (usize, usize) {
        let mut same = 0;
        for &(i, z) in &self.pairs {
            for (t, zt) in self.starts[z].iter().zip(&self.zoned[z]) {
                let a = self.schedules[i].next_after(*t).map(|n| n.as_second());
                let b = self.crons[i]
                    .find_next_occurrence(zt, false)
                    .ok()
                    .map(|n| n.0.timestamp().as_second());
                same += usize::from(a == b);
            }
        }
        (same, self.calls())
    }
}

// ------------------------------------------------------------ the ratio

/// Fallback: alternate the two sweeps and keep the fastest of each.
fn interleaved(corpus: &Corpus) -> (f64, f64) {
    let (mut best_a, mut best_b) = (f64::MAX, f64::MAX);
    let deadline = Instant::now() + std::time::Duration::from_secs(6);
    let mut rounds = 0;
    while rounds < 5 || (Instant::now() < deadline && rounds < 200) {
        let t0 = Instant::now();
        black_box(corpus.run_cronslot());
        let t1 = Instant::now();
        black_box(corpus.run_croner());
        let t2 = Instant::now();
        best_a = best_a.min((t1 - t0).as_nanos() as f64);
        best_b = best_b.min((t2 - t1).as_nanos() as f64);
        rounds += 1;
    }
    (best_a, best_b)
}

/// With `CRONSLOT_BENCH_BREAKDOWN=1`: time per call of each engine by zone
/// and by expression, to see where the time goes.
fn breakdown(corpus: &Corpus) {
    let time = |f: &dyn Fn() -> i64| {
        let mut best = f64::MAX;
        for _ in 0..15 {
            let t0 = Instant::now();
            black_box(f());
            best = best.min(t0.elapsed().as_nanos() as f64);
        }
        best / STARTS.len() as f64
    };
    println!(
        "per call (ns), best of 15 sweeps over the {} start instants:",
        STARTS.len()
    );
    for (z, zone) in ZONES.iter().enumerate() {
        let (mut ours, mut theirs) = (0.0, 0.0);
        for &(i, zz) in corpus.pairs.iter().filter(|p| p.1 == z) {
            let a = time(&|| {
                let mut acc = 0;
                for t in &corpus.starts[zz] {
                    acc += corpus.schedules[i]
                        .next_after(black_box(*t))
                        .map_or(0, |n| n.as_second());
                }
                acc
            });
            let b = time(&|| {
                let mut acc = 0;
                for t in &corpus.zoned[zz] {
                    acc += corpus.crons[i]
                        .find_next_occurrence(black_box(t), false)
                        .map_or(0, |n| n.0.timestamp().as_second());
                }
                acc
            });
            ours += a;
            theirs += b;
            println!(
                "  {zone:<20} {:<20} cronslot {a:>8.0}  croner {b:>9.0}  ({:.1}x)",
                EXPRESSIONS[i % EXPRESSIONS.len()],
                b / a
            );
        }
        // What the zone lookups alone cost per call: the offset, the
        // previous and the next transition, as `Schedule::next_after` asks.
        let tz = TimeZone::get(zone).expect("zone");
        let lookups = time(&|| {
            let mut acc = 0i64;
            for t in &corpus.starts[z] {
                let t = black_box(*t);
                acc += i64::from(tz.to_offset(t).seconds());
                acc += tz
                    .preceding(t)
                    .next()
                    .map_or(0, |x| x.timestamp().as_second());
                acc += tz
                    .following(t)
                    .next()
                    .map_or(0, |x| x.timestamp().as_second());
            }
            acc
        });
        // And the civil search alone (UTC wall clock, same expressions).
        let civil = time(&|| {
            let mut acc = 0i64;
            for &(i, zz) in corpus.pairs.iter().filter(|p| p.1 == z) {
                let cron = corpus.schedules[i].cron();
                for t in &corpus.starts[zz] {
                    let from =
                        cronslot_core::Civil::from_minutes(black_box(t.as_second()) / 60 + 1);
                    acc += cron
                        .next_civil(from, cronslot_core::Civil::MAX)
                        .map_or(0, |c| c.to_minutes());
                }
            }
            acc
        }) / EXPRESSIONS.len() as f64;
        println!(
            "{zone:<22} jiff offset+preceding+following: {lookups:.0} ns per call; civil search alone: {civil:.0} ns per call"
        );
        let n = EXPRESSIONS.len() as f64;
        println!(
            "{zone:<22} mean: cronslot {:.0} ns, croner {:.0} ns ({:.1}x)",
            ours / n,
            theirs / n,
            theirs / ours
        );
    }
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
    let corpus = Corpus::new();
    let calls = corpus.calls();
    // Both sweeps must do real work.
    assert_ne!(corpus.run_cronslot(), 0);
    assert_ne!(corpus.run_croner(), 0);

    let mut c = Criterion::default()
        .sample_size(50)
        .warm_up_time(std::time::Duration::from_secs(2))
        .measurement_time(std::time::Duration::from_secs(6))
        .configure_from_args();
    {
        let mut group = c.benchmark_group(GROUP);
        group.throughput(Throughput::Elements(calls as u64));
        group.bench_function("cronslot", |b| b.iter(|| corpus.run_cronslot()));
        group.bench_function("croner", |b| b.iter(|| corpus.run_croner()));
        group.finish();
    }
    c.final_summary();

    if !benchmark_mode() {
        return;
    }
    if std::env::var_os("CRONSLOT_BENCH_BREAKDOWN").is_some() {
        breakdown(&corpus);
    }
    let (same, total) = corpus.agreement();
    println!(
        "corpus: {} expressions x {} zones x {} start instants = {calls} calls per sweep; \
         {same}/{total} give the same instant in both",
        EXPRESSIONS.len(),
        ZONES.len(),
        STARTS.len()
    );
    let (ours, theirs, source) = match (
        criterion_out::criterion_mean(GROUP, "cronslot", started),
        criterion_out::criterion_mean(GROUP, "croner", started),
    ) {
        (Some(a), Some(b)) => (a, b, "criterion mean"),
        _ => {
            let (a, b) = interleaved(&corpus);
            (a, b, "interleaved loop, best of rounds")
        }
    };
    let per_call = |ns: f64| ns / calls as f64;
    println!(
        "ratio croner/cronslot next_after: {:.1}x (cronslot {:.0} ns, croner {:.0} ns per call; {source})",
        theirs / ours,
        per_call(ours),
        per_call(theirs)
    );
}
