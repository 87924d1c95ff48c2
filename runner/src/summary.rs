//! What a runner did, counted across its workers, and the summary it
//! prints when it stops.
//!
//! Runs, successes, retries and lost leases are counted by the runner as
//! they happen. Missed, skipped and dead slots are fates the coordinator
//! gives (some without any run: a slot missed during downtime), so they come
//! from the store's counters, compared between start and stop.
//!
//! The tally also watches the guarantee itself: every claim is recorded per
//! slot across all workers of the process, and a slot that runs twice —
//! two runs of it at once, or a scheduled run after it already succeeded —
//! is reported as an error (and makes `cronslot run` exit non-zero).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

use cronslot_core::coord::{
    DeadLetter, JobState, Lease, MissReason, Origin, SkipReason, format_instant,
};
use cronslot_core::manifest::format_duration;
use cronslot_runtime::Outcome;
use jiff::{SignedDuration, Timestamp};
use serde::{Serialize, Serializer};

/// Slot records older than this (clock time) are forgotten once there are
/// many, so a runner that runs for months stays small. Only a backfill or a
/// redrive runs a slot that old again, and neither is a duplicate.
const SLOT_MEMORY: SignedDuration = SignedDuration::from_hours(7 * 24);
const PRUNE_ABOVE: usize = 20_000;

/// A summary lists every job of a manifest up to this size; a larger one
/// lists the jobs with something to report.
const ALL_ROWS_UP_TO: usize = 50;

#[derive(Debug, Default)]
struct JobTally {
    slots_run: u64,
    runs: u64,
    succeeded: u64,
    retries: u64,
    dead: u64,
    lease_lost: u64,
    unrecorded: u64,
}

#[derive(Debug)]
struct SlotTally {
    first_owner: String,
    in_flight: u32,
    succeeded: u32,
}

/// The process-wide record of claims and runs, shared by the workers.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    jobs: BTreeMap<String, JobTally>,
    slots: HashMap<(String, Timestamp), SlotTally>,
    /// Workers that woke for a due slot and did not get it, by slot.
    lost: HashMap<(String, Timestamp), Vec<String>>,
    duplicates_refused: u64,
    claim_conflicts: u64,
    store_errors: u64,
    run_twice: BTreeSet<String>,
}

impl Tally {
    /// A claim; returns the slot id if this run makes the slot run twice.
    pub(crate) fn claimed(&mut self, job: &str, lease: &Lease) -> Option<String> {
        let stats = self.jobs.entry(job.to_string()).or_default();
        stats.runs += 1;
        if lease.attempt > 1 {
            stats.retries += 1;
        }
        let key = (job.to_string(), lease.slot);
        let slot = self.slots.entry(key).or_insert_with(|| {
            stats.slots_run += 1;
            SlotTally {
                first_owner: lease.owner.clone(),
                in_flight: 0,
                succeeded: 0,
            }
        });
        // An operator may ask for a finished slot again (backfill); that is
        // a second run by request, not a duplicate.
        let rerun_on_request = matches!(lease.origin, Origin::Backfill | Origin::Manual);
        let twice = slot.in_flight > 0 || (slot.succeeded > 0 && !rerun_on_request);
        slot.in_flight += 1;
        twice.then(|| self.note_twice(job, lease.slot))
    }

    /// The run's work is over (its outcome not yet recorded). Called before
    /// the outcome goes to the store: once it is there, another worker may
    /// rightly claim the slot's retry, and must not look like a second copy
    /// running at the same time.
    pub(crate) fn work_ended(&mut self, job: &str, slot: Timestamp) {
        if let Some(slot) = self.slots.get_mut(&(job.to_string(), slot)) {
            slot.in_flight = slot.in_flight.saturating_sub(1);
        }
    }

    /// A run's recorded outcome; returns the slot id if this success is the
    /// slot's second.
    pub(crate) fn finished(
        &mut self,
        job: &str,
        lease: &Lease,
        end: Outcome,
        now: Timestamp,
    ) -> Option<String> {
        let stats = self.jobs.entry(job.to_string()).or_default();
        match end {
            Outcome::Succeeded => stats.succeeded += 1,
            Outcome::Dead => stats.dead += 1,
            Outcome::LeaseLost => stats.lease_lost += 1,
            Outcome::Unrecorded => stats.unrecorded += 1,
            _ => {}
        }
        let mut twice = None;
        if let Some(slot) = self.slots.get_mut(&(job.to_string(), lease.slot)) {
            if end == Outcome::Succeeded {
                slot.succeeded += 1;
                let by_request = matches!(lease.origin, Origin::Backfill | Origin::Manual);
                if slot.succeeded > 1 && !by_request {
                    twice = Some(self.note_twice(job, lease.slot));
                }
            }
        }
        self.prune(now);
        twice
    }

    fn note_twice(&mut self, job: &str, slot: Timestamp) -> String {
        let id = format!("{job}@{}", format_instant(slot));
        self.run_twice.insert(id.clone());
        id
    }

    /// `owner` woke for `slot` of `job` and did not get it.
    pub(crate) fn lost(&mut self, job: &str, slot: Timestamp, owner: &str) {
        self.lost
            .entry((job.to_string(), slot))
            .or_default()
            .push(owner.to_string());
    }

    /// A duplicate delivery answered without a run (`InProgress`,
    /// `AlreadyResolved`).
    pub(crate) fn refused(&mut self) {
        self.duplicates_refused += 1;
    }

    pub(crate) fn claim_conflicts(&mut self, n: u64) {
        self.claim_conflicts += n;
    }

    pub(crate) fn store_error(&mut self) {
        self.store_errors += 1;
    }

    /// Turns every "woke for it and did not get it" whose slot another
    /// worker of this process claimed into a refused duplicate. Slots
    /// nobody here claimed (missed, or run by another process) are left.
    fn settle_lost(&mut self) {
        let slots = &self.slots;
        let mut refused = 0;
        self.lost.retain(|key, owners| match slots.get(key) {
            Some(slot) => {
                refused += owners.iter().filter(|o| **o != slot.first_owner).count() as u64;
                false
            }
            None => true,
        });
        self.duplicates_refused += refused;
    }

    fn prune(&mut self, now: Timestamp) {
        if self.slots.len() <= PRUNE_ABOVE {
            return;
        }
        self.settle_lost();
        let horizon = now.checked_sub(SLOT_MEMORY).unwrap_or(Timestamp::MIN);
        self.slots
            .retain(|(_, at), slot| slot.in_flight > 0 || *at >= horizon);
        self.lost.retain(|(_, at), _| *at >= horizon);
    }
}

/// One job's part of the summary.
/// Serialised as `cronslot run --format json` prints each job: `missed`
/// and `skipped` hold every reason (0 when none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobSummary {
    /// The job's name.
    pub job: String,
    /// Distinct slots this runner ran (claimed at least once).
    pub slots_run: u64,
    /// Runs (attempts), retries included.
    pub runs: u64,
    /// Runs that succeeded and whose success was recorded.
    pub succeeded: u64,
    /// Runs that were a retry of their slot (attempt 2 or later).
    pub retries: u64,
    /// Slots that became dead letters while the runner ran (from the store).
    pub dead: u64,
    /// Runs that lost their lease (`lease_lost`): superseded, or expired
    /// and refused; their outcome was not recorded.
    pub lease_lost: u64,
    /// Runs whose outcome could not be written to the store.
    pub unrecorded: u64,
    /// Slots given the fate "missed" while the runner ran, by reason.
    #[serde(serialize_with = "every_missed")]
    pub missed: BTreeMap<MissReason, u64>,
    /// Slots skipped while the runner ran, by reason.
    #[serde(serialize_with = "every_skipped")]
    pub skipped: BTreeMap<SkipReason, u64>,
    /// The dead letters that appeared while the runner ran.
    pub dead_letters: Vec<DeadLetter>,
}

fn instant<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_instant(*t))
}

fn every_missed<S: Serializer>(
    missed: &BTreeMap<MissReason, u64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(
        MissReason::ALL
            .iter()
            .map(|r| (r.as_str(), missed.get(r).copied().unwrap_or(0))),
    )
}

fn every_skipped<S: Serializer>(
    skipped: &BTreeMap<SkipReason, u64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(
        [SkipReason::Paused, SkipReason::OutsideWindow]
            .iter()
            .map(|r| (r.as_str(), skipped.get(r).copied().unwrap_or(0))),
    )
}

impl JobSummary {
    /// Slots missed while the runner ran, whatever the reason.
    pub fn missed_total(&self) -> u64 {
        self.missed.values().sum()
    }

    /// Slots skipped while the runner ran, whatever the reason.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
}

/// What a runner did, returned when it stops (and printed by `cronslot run`;
/// serialised as `cronslot run --format json` prints it, instants in
/// RFC 3339 UTC to the second).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// When the runner started, by its clock.
    #[serde(serialize_with = "instant")]
    pub started_at: Timestamp,
    /// When every worker had ended, by its clock.
    #[serde(serialize_with = "instant")]
    pub stopped_at: Timestamp,
    /// The clock's speed (1 for the real clock).
    pub speed: f64,
    /// The workers the runner started.
    pub workers: u32,
    /// One entry per job of the manifest, in manifest order.
    pub jobs: Vec<JobSummary>,
    /// Claims of a slot that lost it to another worker of this process:
    /// a worker woke for a due slot and the store gave it to another one
    /// (or answered a duplicate delivery without a run).
    pub duplicates_refused: u64,
    /// Conditional writes of claims that another writer beat (each made the
    /// claimer re-plan from the record that won).
    pub claim_conflicts: u64,
    /// Store operations that failed and were tried again later.
    pub store_errors: u64,
    /// Slot ids that ran more than once. Always empty unless cronslot is
    /// broken.
    pub slots_run_twice: Vec<String>,
    /// Workers that ended abnormally (a bug), with what happened.
    pub worker_failures: Vec<String>,
}

impl Summary {
    /// No slot ran twice and every worker ended normally.
    pub fn ok(&self) -> bool {
        self.slots_run_twice.is_empty() && self.worker_failures.is_empty()
    }

    /// The summary of the job `name`, if the runner had it.
    pub fn job(&self, name: &str) -> Option<&JobSummary> {
        self.jobs.iter().find(|j| j.job == name)
    }

    /// Distinct slots run, over all jobs.
    pub fn slots_run(&self) -> u64 {
        self.jobs.iter().map(|j| j.slots_run).sum()
    }
}

/// Builds the summary from the tally and the job records at start and stop
/// (`None`: the job had no record, or it could not be read).
pub(crate) struct SummaryInput<'a> {
    pub started_at: Timestamp,
    pub stopped_at: Timestamp,
    pub speed: f64,
    pub workers: u32,
    pub jobs: &'a [String],
    /// The dynamic jobs: each gets one entry for all its schedules' and
    /// keyed runs' records (`job/key`), after the jobs.
    pub templates: &'a [String],
    pub before: &'a HashMap<String, JobState>,
    pub after: &'a HashMap<String, JobState>,
    pub worker_failures: Vec<String>,
}

pub(crate) fn summarize(mut tally: Tally, input: SummaryInput<'_>) -> Summary {
    tally.settle_lost();
    let jobs = input
        .jobs
        .iter()
        .map(|name| {
            let t = tally.jobs.remove(name).unwrap_or_default();
            let before = input.before.get(name);
            let after = input.after.get(name);
            let counter = |f: fn(&JobState) -> u64| {
                let b = before.map(f).unwrap_or(0);
                after.map(f).map(|a| a.saturating_sub(b))
            };
            let dead_letters = after
                .map(|s| {
                    s.dead
                        .iter()
                        .filter(|d| d.died_at >= input.started_at)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            JobSummary {
                job: name.clone(),
                slots_run: t.slots_run,
                runs: t.runs,
                succeeded: t.succeeded,
                retries: t.retries,
                // The store also knows deaths without a run of ours (a
                // crashed worker's expired lease, a closed retry window).
                dead: counter(|s| s.counters.dead).unwrap_or(t.dead),
                lease_lost: t.lease_lost,
                unrecorded: t.unrecorded,
                missed: grown(
                    before.map(|s| &s.counters.missed),
                    after.map(|s| &s.counters.missed),
                ),
                skipped: grown(
                    before.map(|s| &s.counters.skipped),
                    after.map(|s| &s.counters.skipped),
                ),
                dead_letters,
            }
        })
        .collect::<Vec<_>>();
    let mut jobs = jobs;
    for template in input.templates {
        jobs.push(dynamic_summary(&mut tally, template));
    }
    Summary {
        started_at: input.started_at,
        stopped_at: input.stopped_at,
        speed: input.speed,
        workers: input.workers,
        jobs,
        duplicates_refused: tally.duplicates_refused,
        claim_conflicts: tally.claim_conflicts,
        store_errors: tally.store_errors,
        slots_run_twice: tally.run_twice.into_iter().collect(),
        worker_failures: input.worker_failures,
    }
}

/// A dynamic job's part of the summary: the runs of all its records
/// (`job/key`) together, as this runner counted them. (Its records' fates
/// are each schedule's; `cronslot status` and the schedule routes show
/// them.)
fn dynamic_summary(tally: &mut Tally, template: &str) -> JobSummary {
    let prefix = format!("{template}/");
    let records: Vec<String> = tally
        .jobs
        .keys()
        .filter(|name| name.starts_with(&prefix))
        .cloned()
        .collect();
    let mut summary = JobSummary {
        job: template.to_string(),
        ..JobSummary::default()
    };
    for name in records {
        let Some(t) = tally.jobs.remove(&name) else {
            continue;
        };
        summary.slots_run += t.slots_run;
        summary.runs += t.runs;
        summary.succeeded += t.succeeded;
        summary.retries += t.retries;
        summary.dead += t.dead;
        summary.lease_lost += t.lease_lost;
        summary.unrecorded += t.unrecorded;
    }
    summary
}

/// Per reason, how much a counter grew from `before` to `after`.
fn grown<K: Ord + Copy>(
    before: Option<&BTreeMap<K, u64>>,
    after: Option<&BTreeMap<K, u64>>,
) -> BTreeMap<K, u64> {
    let mut out = BTreeMap::new();
    for (reason, n) in after.into_iter().flatten() {
        let was = before.and_then(|b| b.get(reason)).copied().unwrap_or(0);
        let n = n.saturating_sub(was);
        if n > 0 {
            out.insert(*reason, n);
        }
    }
    out
}

fn reasons_text<K: Copy>(map: &BTreeMap<K, u64>, name: fn(K) -> &'static str) -> String {
    if map.is_empty() {
        return "0".to_string();
    }
    map.iter()
        .map(|(k, n)| format!("{n} {}", name(*k)))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Whole seconds, rounded: the clock is read a little after the
        // instant the runner stopped at.
        let span_ms = self
            .stopped_at
            .duration_since(self.started_at)
            .as_millis()
            .max(0);
        let span = Duration::from_secs(u64::try_from((span_ms + 500) / 1000).unwrap_or(0));
        writeln!(
            f,
            "cronslot run: {} → {} ({} of clock time at speed {}, {} worker{})",
            format_instant(self.started_at),
            format_instant(self.stopped_at),
            format_duration(span),
            self.speed,
            self.workers,
            if self.workers == 1 { "" } else { "s" },
        )?;
        let width = self
            .jobs
            .iter()
            .map(|j| j.job.len())
            .max()
            .unwrap_or(0)
            .max(3);
        writeln!(
            f,
            "\n{:<width$}  {:>5}  {:>5}  {:>9}  {:>7}  {:>4}  missed / skipped",
            "job", "slots", "runs", "succeeded", "retries", "dead"
        )?;
        // A manifest of thousands of jobs prints the ones with something
        // to report; a small one prints every job, quiet ones too.
        let quiet = |j: &&JobSummary| {
            self.jobs.len() > ALL_ROWS_UP_TO
                && j.slots_run == 0
                && j.runs == 0
                && j.dead == 0
                && j.missed.is_empty()
                && j.skipped.is_empty()
        };
        let left_out = self.jobs.iter().filter(quiet).count();
        for j in self.jobs.iter().filter(|j| !quiet(j)) {
            writeln!(
                f,
                "{:<width$}  {:>5}  {:>5}  {:>9}  {:>7}  {:>4}  {} / {}",
                j.job,
                j.slots_run,
                j.runs,
                j.succeeded,
                j.retries,
                j.dead,
                reasons_text(&j.missed, MissReason::as_str),
                reasons_text(&j.skipped, SkipReason::as_str),
            )?;
        }
        if left_out > 0 {
            writeln!(f, "… and {left_out} jobs with nothing to report")?;
        }
        let letters: Vec<(&str, &DeadLetter)> = self
            .jobs
            .iter()
            .flat_map(|j| j.dead_letters.iter().map(move |d| (j.job.as_str(), d)))
            .collect();
        if !letters.is_empty() {
            writeln!(f, "\ndead letters (`cronslot dlq list` shows them all):")?;
            for (job, d) in letters.iter().take(10) {
                writeln!(
                    f,
                    "  {job}@{}  attempts {}, fence {}: {}",
                    format_instant(d.slot),
                    d.attempts,
                    d.fence,
                    d.last_error
                )?;
            }
            if letters.len() > 10 {
                writeln!(f, "  … and {} more", letters.len() - 10)?;
            }
        }
        let lease_lost: u64 = self.jobs.iter().map(|j| j.lease_lost).sum();
        let unrecorded: u64 = self.jobs.iter().map(|j| j.unrecorded).sum();
        writeln!(f)?;
        writeln!(
            f,
            "slots run: {} ({} runs)",
            self.slots_run(),
            self.jobs.iter().map(|j| j.runs).sum::<u64>()
        )?;
        writeln!(
            f,
            "duplicates refused: {} (claims that lost their slot to another worker; {} compare-and-set conflicts)",
            self.duplicates_refused, self.claim_conflicts
        )?;
        if lease_lost > 0 {
            writeln!(
                f,
                "runs that lost their lease (superseded, or expired and refused): {lease_lost}"
            )?;
        }
        if unrecorded > 0 {
            writeln!(
                f,
                "runs whose outcome the store did not take (their leases expire into retries): {unrecorded}"
            )?;
        }
        if self.store_errors > 0 {
            writeln!(f, "store errors (retried): {}", self.store_errors)?;
        }
        if self.slots_run_twice.is_empty() {
            writeln!(f, "slots run more than once: 0")?;
        } else {
            writeln!(
                f,
                "ERROR: slots run more than once: {} ({})",
                self.slots_run_twice.len(),
                self.slots_run_twice.join(", ")
            )?;
        }
        for failure in &self.worker_failures {
            writeln!(f, "ERROR: {failure}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(owner: &str, slot: &str, attempt: u32, origin: Origin) -> Lease {
        let slot: Timestamp = slot.parse().unwrap();
        Lease {
            owner: owner.into(),
            slot,
            fence: 1,
            attempt,
            claimed_at: slot,
            expires_at: slot,
            checkpoint: None,
            origin,
            retry_until: None,
            version: None,
        }
    }

    #[test]
    fn a_second_success_of_a_scheduled_slot_is_a_duplicate() {
        let mut t = Tally::default();
        let now: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let a = lease("w1", "2030-01-01T00:00:00Z", 1, Origin::Schedule);
        assert_eq!(t.claimed("j", &a), None);
        t.work_ended("j", a.slot);
        assert_eq!(t.finished("j", &a, Outcome::Succeeded, now), None);
        let b = lease("w2", "2030-01-01T00:00:00Z", 1, Origin::Schedule);
        assert_eq!(
            t.claimed("j", &b).as_deref(),
            Some("j@2030-01-01T00:00:00Z")
        );
        // A backfill of the same slot is a run by request.
        let mut t = Tally::default();
        t.claimed("j", &a);
        t.work_ended("j", a.slot);
        t.finished("j", &a, Outcome::Succeeded, now);
        let c = lease("w2", "2030-01-01T00:00:00Z", 1, Origin::Backfill);
        assert_eq!(t.claimed("j", &c), None);
    }

    #[test]
    fn a_retry_claimed_after_the_work_ended_is_no_duplicate() {
        let mut t = Tally::default();
        let a = lease("w1", "2030-01-01T00:00:00Z", 1, Origin::Schedule);
        t.claimed("j", &a);
        // The first attempt still runs: a second claim is a second copy.
        let b = lease("w2", "2030-01-01T00:00:00Z", 2, Origin::Schedule);
        assert!(t.claimed("j", &b).is_some());
        let mut t = Tally::default();
        t.claimed("j", &a);
        t.work_ended("j", a.slot);
        // Its failure is being recorded; the retry may already be claimed.
        assert_eq!(t.claimed("j", &b), None);
    }

    #[test]
    fn lost_slots_count_when_another_worker_ran_them() {
        let mut t = Tally::default();
        let a = lease("w1", "2030-01-01T00:00:00Z", 1, Origin::Schedule);
        t.claimed("j", &a);
        t.lost("j", a.slot, "w2");
        t.lost("j", a.slot, "w3");
        // A slot nobody here ran (missed, or another process's) is not
        // counted.
        t.lost("j", "2030-01-01T00:01:00Z".parse().unwrap(), "w2");
        t.settle_lost();
        assert_eq!(t.duplicates_refused, 2);
    }
}
