//! Which jobs a tick must look at, decided from the manifest alone
//! (docs/design.md §11): a tick reads only the records of jobs that have a
//! slot in its window, plus those the store's wake index names
//! ([`JobState::wake_at`](crate::coord::JobState::wake_at)).
//!
//! A tick's window is usually a minute, so the common path matches each of
//! its few minutes against every job's cron fields in the job's wall-clock
//! time, computed once per zone: a few nanoseconds per job. Near a zone's
//! offset change (where DST policies move, drop or double slots) and for
//! long windows (after an outage), each job's next slot is computed
//! exactly instead. Either way the answer is exact: a job is due when
//! [`Schedule::next_after`](crate::Schedule::next_after) of the window's
//! start falls inside it (and inside the job's active window).

use std::borrow::Borrow;
use std::collections::HashMap;

use jiff::{SignedDuration, Timestamp};

use crate::cron::Civil;
use crate::manifest::JobSpec;
use crate::schedule::Zone;

/// Windows of more minutes than this are planned job by job: matching each
/// minute would cost more than one exact search per job.
const FAST_MINUTES: i64 = 16;

/// A zone with an offset change this close to a window is planned job by
/// job there: DST policies shift slots out of a gap by up to its length
/// and drop a pass of an overlap, so a minute's fields no longer tell.
const TRANSITION_MARGIN_SECONDS: i64 = 26 * 3600;

/// A job with a slot in a tick's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Due {
    /// The job's first slot in the window.
    pub slot: Timestamp,
    /// The job's index in the specs the planner was built from.
    pub job: usize,
}

/// The jobs of one zone, planned together: their wall-clock minute is
/// computed once.
#[derive(Debug, Clone)]
struct ZoneGroup {
    zone: Zone,
    jobs: Vec<usize>,
}

/// Finds the jobs due in a window without touching a store. Built once
/// per manifest (a Lambda's cold start, a Worker isolate, a runner's
/// start); answering costs no allocation per job that is not due.
#[derive(Debug, Clone)]
pub struct DuePlanner {
    groups: Vec<ZoneGroup>,
    /// Jobs with jitter: due when a slot's start (not its instant) falls
    /// in the window, found job by job ([`JobSpec::next_start_after`]).
    jittered: Vec<usize>,
    /// How many specs the planner was built from, to catch a caller that
    /// hands [`due`](DuePlanner::due) another list.
    specs: usize,
    /// Every job's index by name (planned or not), for the jobs a store's
    /// wake index names.
    by_name: HashMap<String, usize>,
}

impl DuePlanner {
    /// A planner for the jobs of `specs` that `include` accepts (a Lambda's
    /// tick serves tick-mode jobs only; a Worker's tick every job). Jobs
    /// that never fire are left out.
    pub fn new<S: Borrow<JobSpec>>(specs: &[S], include: impl Fn(&JobSpec) -> bool) -> DuePlanner {
        let mut groups: Vec<ZoneGroup> = Vec::new();
        let mut jittered = Vec::new();
        let mut by_name = HashMap::with_capacity(specs.len());
        for (index, spec) in specs.iter().enumerate() {
            let spec = spec.borrow();
            by_name.insert(spec.name.as_str().to_string(), index);
            if !include(spec) || spec.schedule.never_fires() {
                continue;
            }
            if !spec.jitter.is_zero() {
                jittered.push(index);
                continue;
            }
            let zone = spec.schedule.zone();
            match groups.iter_mut().find(|g| g.zone == *zone) {
                Some(group) => group.jobs.push(index),
                None => groups.push(ZoneGroup {
                    zone: zone.clone(),
                    jobs: vec![index],
                }),
            }
        }
        DuePlanner {
            groups,
            jittered,
            specs: specs.len(),
            by_name,
        }
    }

    /// The index of the job named `name`, planned or not.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// How many jobs the planner plans.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.jobs.len()).sum::<usize>() + self.jittered.len()
    }

    /// Whether the planner plans no job.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.jobs.is_empty()) && self.jittered.is_empty()
    }

    /// Every planned job with a slot in `(after, until]` inside its active
    /// window, with its first such slot, ordered by slot and then job. A
    /// job with jitter is due when a slot's start is in the window (the
    /// slot itself may be before it), and is given with that slot.
    /// `specs` must be the list the planner was built from.
    pub fn due<S: Borrow<JobSpec>>(
        &self,
        specs: &[S],
        after: Timestamp,
        until: Timestamp,
    ) -> Vec<Due> {
        let mut due = Vec::new();
        if until <= after || specs.len() != self.specs {
            return due;
        }
        for &job in &self.jittered {
            if let Some(slot) = first_start(specs[job].borrow(), after, until) {
                due.push(Due { slot, job });
            }
        }
        let minutes = minute_starts(after, until);
        for group in &self.groups {
            let Some(minutes) = minutes.as_deref() else {
                exact(&group.jobs, specs, after, until, &mut due);
                continue;
            };
            match changes_near(&group.zone, after, until) {
                Near::No => match_minutes(&group.zone, &group.jobs, specs, minutes, &mut due),
                Near::Affecting(walls) => {
                    // Only a job that fires at a wall-clock minute the
                    // change skips or repeats (or that follows real time)
                    // can have slots the minute matching misses or doubles.
                    let (searched, matched): (Vec<usize>, Vec<usize>) =
                        group.jobs.iter().partition(|&&job| {
                            let schedule = &specs[job].borrow().schedule;
                            schedule.follows_real_time()
                                || walls.iter().any(|w| schedule.cron().matches(*w))
                        });
                    exact(&searched, specs, after, until, &mut due);
                    match_minutes(&group.zone, &matched, specs, minutes, &mut due);
                }
                Near::Unknown => exact(&group.jobs, specs, after, until, &mut due),
            }
        }
        due.sort_unstable();
        due
    }
}

/// The whole-minute instants in `(after, until]`, as Unix seconds; `None`
/// when there are more than [`FAST_MINUTES`] of them.
fn minute_starts(after: Timestamp, until: Timestamp) -> Option<Vec<i64>> {
    // The first whole minute strictly after `after`.
    let from = after.as_second().div_euclid(60) * 60 + 60;
    let last = until.as_second().div_euclid(60) * 60;
    let count = (last - from).div_euclid(60) + 1;
    if count > FAST_MINUTES {
        return None;
    }
    Some((0..count.max(0)).map(|i| from + 60 * i).collect())
}

/// What a zone's offset changes near a window mean for planning it.
enum Near {
    /// No change within the margin: minute matching is exact for every job.
    No,
    /// Changes within the margin; these are the wall-clock minutes they
    /// skip or repeat (a minute more on each side). A job that matches none
    /// of them, and does not follow real time, has its slots exactly where
    /// minute matching finds them.
    Affecting(Vec<Civil>),
    /// Search every job exactly: offsets that are not whole minutes
    /// (historical local mean times), or changes of more than two hours
    /// (Apia's lost day), whose minutes would cost more to test than the
    /// searches.
    Unknown,
}

/// Wall-clock minutes one change may skip or repeat, at most.
const MAX_AFFECTED_MINUTES: i64 = 2 * 60 + 2;

fn changes_near(zone: &Zone, after: Timestamp, until: Timestamp) -> Near {
    if zone.offset_at(after.as_second()) % 60 != 0 {
        return Near::Unknown;
    }
    if zone.is_fixed() {
        return Near::No;
    }
    let from = after.as_second().saturating_sub(TRANSITION_MARGIN_SECONDS);
    let to = until.as_second().saturating_add(TRANSITION_MARGIN_SECONDS);
    let mut walls = Vec::new();
    let mut cursor = from;
    while let Some((at, after_offset)) = zone.next_transition(cursor).filter(|(at, _)| *at <= to) {
        let before_offset = zone.offset_at(at.saturating_sub(1));
        if before_offset % 60 != 0 || after_offset % 60 != 0 {
            return Near::Unknown;
        }
        // The wall-clock times between the two offsets' readings of the
        // change: skipped (a gap) or read twice (an overlap).
        let low = at.saturating_add(i64::from(before_offset.min(after_offset)));
        let high = at.saturating_add(i64::from(before_offset.max(after_offset)));
        let first = low.div_euclid(60) * 60 - 60;
        let last = high.div_euclid(60) * 60 + 60;
        if (last - first) / 60 > MAX_AFFECTED_MINUTES {
            return Near::Unknown;
        }
        let utc = Zone::utc();
        walls.extend((0..=(last - first) / 60).map(|i| utc.civil_at(first + 60 * i).0));
        cursor = at;
    }
    if walls.is_empty() {
        Near::No
    } else {
        Near::Affecting(walls)
    }
}

/// The exact path for `jobs`: each one's first slot in the window.
fn exact<S: Borrow<JobSpec>>(
    jobs: &[usize],
    specs: &[S],
    after: Timestamp,
    until: Timestamp,
    due: &mut Vec<Due>,
) {
    for &job in jobs {
        if let Some(slot) = first_slot(specs[job].borrow(), after, until) {
            due.push(Due { slot, job });
        }
    }
}

/// The fast path: the zone's wall-clock minute of each window minute,
/// matched against each job's cron fields.
fn match_minutes<S: Borrow<JobSpec>>(
    zone: &Zone,
    jobs: &[usize],
    specs: &[S],
    minutes: &[i64],
    due: &mut Vec<Due>,
) {
    if jobs.is_empty() {
        return;
    }
    let civil: Vec<_> = minutes.iter().map(|&m| zone.civil_at(m).0).collect();
    for &job in jobs {
        let spec = specs[job].borrow();
        let cron = spec.schedule.cron();
        let first = minutes
            .iter()
            .zip(&civil)
            .filter(|(_, c)| cron.matches(**c))
            .filter_map(|(&m, _)| Timestamp::from_second(m).ok())
            .find(|slot| spec.in_window(*slot));
        if let Some(slot) = first {
            due.push(Due { slot, job });
        }
    }
}

/// A jittered job's first slot inside its active window whose start is in
/// `(after, until]`.
fn first_start(spec: &JobSpec, after: Timestamp, until: Timestamp) -> Option<Timestamp> {
    let (mut slot, mut start) = spec.next_start_after(after)?;
    if let Some(window_start) = spec.start_at
        && slot < window_start
    {
        slot = spec.schedule.next_after(
            window_start
                .checked_sub(SignedDuration::from_nanos(1))
                .ok()?,
        )?;
        start = spec.start_of(slot);
    }
    (start > after && start <= until && spec.in_window(slot)).then_some(slot)
}

/// The exact path: the job's first slot in `(after, until]` inside its
/// active window.
fn first_slot(spec: &JobSpec, after: Timestamp, until: Timestamp) -> Option<Timestamp> {
    let after = match spec.start_at {
        Some(start) if start > after => start
            .checked_sub(SignedDuration::from_nanos(1))
            .unwrap_or(after),
        _ => after,
    };
    spec.schedule
        .next_after(after)
        .filter(|slot| *slot <= until && spec.in_window(*slot))
}
