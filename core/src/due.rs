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
        let mut by_name = HashMap::with_capacity(specs.len());
        for (index, spec) in specs.iter().enumerate() {
            let spec = spec.borrow();
            by_name.insert(spec.name.as_str().to_string(), index);
            if !include(spec) || spec.schedule.never_fires() {
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
        self.groups.iter().map(|g| g.jobs.len()).sum()
    }

    /// Whether the planner plans no job.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.jobs.is_empty())
    }

    /// Every planned job with a slot in `(after, until]` inside its active
    /// window, with its first such slot, ordered by slot and then job.
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
        let minutes = minute_starts(after, until);
        for group in &self.groups {
            let fast = minutes
                .as_deref()
                .filter(|_| !changes_near(&group.zone, after, until));
            if let Some(minutes) = fast {
                match_minutes(group, specs, minutes, &mut due);
            } else {
                for &job in &group.jobs {
                    if let Some(slot) = first_slot(specs[job].borrow(), after, until) {
                        due.push(Due { slot, job });
                    }
                }
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

/// Whether the zone changes its offset within the margin of the window.
/// A zone whose offset is not whole minutes (historical local mean times)
/// counts as changing: its wall-clock minutes do not start on UTC minutes.
fn changes_near(zone: &Zone, after: Timestamp, until: Timestamp) -> bool {
    if zone.offset_at(after.as_second()) % 60 != 0 {
        return true;
    }
    if zone.is_fixed() {
        return false;
    }
    let from = after.as_second().saturating_sub(TRANSITION_MARGIN_SECONDS);
    let to = until.as_second().saturating_add(TRANSITION_MARGIN_SECONDS);
    zone.next_transition(from).is_some_and(|(at, _)| at <= to)
}

/// The fast path: the group's wall-clock minute of each window minute,
/// matched against each job's cron fields.
fn match_minutes<S: Borrow<JobSpec>>(
    group: &ZoneGroup,
    specs: &[S],
    minutes: &[i64],
    due: &mut Vec<Due>,
) {
    let civil: Vec<_> = minutes.iter().map(|&m| group.zone.civil_at(m).0).collect();
    for &job in &group.jobs {
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
