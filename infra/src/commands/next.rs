//! `cronslot next`: the next fire instants of an expression (with `--tz`
//! and the DST policy) or of a manifest's job, as text or JSON, with the
//! wall-clock times among them that a DST gap (under `dst_gap = "skip"`) or
//! a clock change skips, which the coordinator records as missed.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use cronslot_core::coord::MissReason;
use cronslot_core::{CLOCK_CHANGE_SECONDS, Civil, GapCause, GapSkip, Occurrence, SlotKind, Zone};

use crate::cli::manifest_path;
use crate::cli::{Format, ZoneArgs};
use crate::exit::Failure;
use crate::format::{local, utc};
use crate::manifest::load_manifest;
use crate::parse::{build_schedule, parse_instant};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot next '30 2 * * *' --tz America/New_York \
                        --after 2026-03-07T00:00:00Z --count 3\n  \
                        cronslot next '@daily' --format json\n  \
                        cronslot next --job daily-report --manifest cronslot.toml"
)]
pub struct NextArgs {
    /// Cron expression (five fields), e.g. '0 9 * * MON-FRI'. Omit with --job.
    #[arg(
        value_name = "EXPR",
        required_unless_present = "job",
        conflicts_with = "job"
    )]
    pub expr: Option<String>,
    #[command(flatten)]
    pub zone: ZoneArgs,
    /// List instants strictly after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// How many instants to print.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: u32,
    /// Output format: text shows UTC and local time; json is for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Use this job's schedule, zone and DST policy from the manifest.
    #[arg(long, value_name = "NAME")]
    pub job: Option<String>,
    /// The manifest to read --job from (default: $CRONSLOT_MANIFEST, else cronslot.toml).
    #[arg(long, value_name = "FILE", requires = "job")]
    pub manifest: Option<PathBuf>,
}

/// The JSON form of `next`: keys in this order, instants in UTC. `missed`
/// is there only when a listed slot's neighbourhood has some.
#[derive(serde::Serialize)]
struct NextJson<'a> {
    expression: &'a str,
    timezone: &'a str,
    next: Vec<String>,
    /// With `--job` of a job with jitter: when each of `next` starts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    starts: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    missed: Vec<MissedJson>,
}

/// A wall-clock time that does not run: `{"local": "2011-12-30T02:00",
/// "reason": "clock_change", "transition": "2011-12-30T10:00:00Z"}`.
#[derive(serde::Serialize)]
struct MissedJson {
    local: String,
    reason: &'static str,
    transition: String,
}

pub fn exec(args: NextArgs) -> Result<(), Failure> {
    // The job, for its jitter (an expression has none).
    let mut job_spec = None;
    let (schedule, expression) = match (&args.job, &args.expr) {
        (Some(name), _) => {
            let path = manifest_path(args.manifest.as_deref());
            let manifest = load_manifest(&path)?;
            let job = manifest
                .jobs
                .into_iter()
                .find(|j| j.name.as_str() == name)
                .ok_or_else(|| {
                    Failure::bad_input(format!(
                        "error: no job named {name:?} in {}",
                        path.display()
                    ))
                })?;
            let text = job.schedule_text.clone();
            let schedule = job.schedule.clone();
            job_spec = Some(job).filter(|j| !j.jitter.is_zero());
            (schedule, text)
        }
        (None, Some(expr)) => (build_schedule(expr, &args.zone)?, expr.clone()),
        (None, None) => {
            return Err(Failure::bad_input(
                "error: give an expression or --job NAME",
            ));
        }
    };
    let after = parse_instant("--after", args.after.as_deref())?;
    let slots: Vec<_> = schedule
        .iter_after(after)
        .take(args.count as usize)
        .collect();
    // Skipped wall-clock times up to the last slot listed.
    let missed = match slots.last() {
        Some(last) => schedule.gap_skips(after, last.instant),
        None => Vec::new(),
    };

    match args.format {
        Format::Json => {
            let value = NextJson {
                expression: &expression,
                timezone: schedule.zone().name(),
                next: slots.iter().map(|o| utc(o.instant)).collect(),
                starts: match &job_spec {
                    Some(job) => slots.iter().map(|o| utc(job.start_of(o.instant))).collect(),
                    None => Vec::new(),
                },
                missed: missed
                    .iter()
                    .map(|m| MissedJson {
                        local: civil_text(m.local, 'T'),
                        reason: reason(m),
                        transition: utc(m.transition),
                    })
                    .collect(),
            };
            let line = serde_json::to_string(&value)
                .map_err(|e| Failure::bad_input(format!("error: cannot encode JSON: {e}")))?;
            println!("{line}");
        }
        Format::Text => {
            if slots.is_empty() {
                println!("{expression} never fires: no date matches it.");
                return Ok(());
            }
            let mut out = String::new();
            let mut missed = missed.iter().peekable();
            for o in &slots {
                // A missed time comes before a slot at its transition.
                while let Some(m) = missed.next_if(|m| m.transition <= o.instant) {
                    let _ = writeln!(out, "{}", missed_line(m));
                }
                let mut note = match o.kind {
                    SlotKind::Regular => String::new(),
                    SlotKind::ShiftedFromGap => shifted_note(o, schedule.zone()),
                    SlotKind::SecondPass => "  second pass (DST overlap)".to_string(),
                };
                if let Some(job) = &job_spec {
                    let _ = write!(note, "  starts {} (jitter)", utc(job.start_of(o.instant)));
                }
                let _ = writeln!(
                    out,
                    "{}  {}{note}",
                    utc(o.instant),
                    local(o.instant, schedule.zone())
                );
            }
            print!("{out}");
        }
    }
    Ok(())
}

/// Where a shifted slot comes from: `  shifted from 02:30 (DST gap)`, or,
/// under `dst_gap = "shift_always"`, from a time a clock change skipped.
fn shifted_note(o: &Occurrence, zone: &Zone) -> String {
    let at = o.instant.as_second();
    let jump = zone.offset_at(at) - zone.offset_at(at - 1);
    if jump >= CLOCK_CHANGE_SECONDS {
        format!(
            "  shifted from {} (clock change: the clock jumped {}; dst_gap = \"shift_always\")",
            civil_text(o.local, ' '),
            duration_text(jump)
        )
    } else {
        format!(
            "  shifted from {:02}:{:02} (DST gap)",
            o.local.hour, o.local.minute
        )
    }
}

/// `2011-12-30 02:00` (or with `T`).
fn civil_text(c: Civil, separator: char) -> String {
    format!(
        "{:04}-{:02}-{:02}{separator}{:02}:{:02}",
        c.year, c.month, c.day, c.hour, c.minute
    )
}

/// The miss reason, as `cronslot status` counts it.
fn reason(m: &GapSkip) -> &'static str {
    MissReason::from(m.cause).as_str()
}

/// A wall-clock time that does not run, aligned with the slots' lines:
/// `(not run)             2011-12-30 02:00  missed: clock change, …`.
fn missed_line(m: &GapSkip) -> String {
    let why = match m.cause {
        GapCause::ClockChange => format!(
            "clock change, the clock jumped {} at {}",
            duration_text(m.jump_seconds),
            utc(m.transition)
        ),
        GapCause::Dst => "DST gap under dst_gap = \"skip\"".to_string(),
    };
    format!(
        "{:<20}  {}  missed: {why} (reason {})",
        "(not run)",
        civil_text(m.local, ' '),
        reason(m)
    )
}

/// `24h`, `3h`, `2h30m`, `45m`.
fn duration_text(seconds: i32) -> String {
    let minutes = seconds / 60;
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h{m:02}m"),
    }
}
