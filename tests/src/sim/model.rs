//! The independent model the simulation checks against. It knows nothing of
//! `decide.rs`: slots are counted by arithmetic over the job's period (the
//! simulated schedules are `*/N` minutes in UTC), exclusivity and catch-up
//! are checked from the claims the workers saw, and fates from the records'
//! history and dead letters, diffed after every step.

use std::collections::{BTreeMap, BTreeSet};

use cronslot_core::coord::{JobState, Lease, Origin, RunOutcome};
use cronslot_core::manifest::{CatchUp, Delivery, JobSpec, Overlap};
use jiff::{SignedDuration, Timestamp};

/// What a worker saw, reported to the model.
#[derive(Debug, Clone)]
pub enum Event {
    /// A claim returned this lease; `effective_now` is the claimer's clock
    /// (or the dedicated trigger's slot when later).
    Claimed {
        job: usize,
        lease: Lease,
        effective_now: Timestamp,
    },
    /// `complete` returned `Ok`.
    Completed { job: usize, fence: u64 },
    /// `fail` returned `Ok`.
    Failed { job: usize, fence: u64 },
    /// `heartbeat` returned `Ok` with this expiry.
    Heartbeat {
        job: usize,
        fence: u64,
        expires_at: Timestamp,
    },
    /// The job's side effect really ran; `recorded_done` tells whether the
    /// ledger already had it as done at that moment.
    EffectRan { key: String, recorded_done: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Succeeded,
    Failed,
    LeaseExpired,
    Superseded,
}

fn fate_of(o: &RunOutcome) -> Fate {
    match o {
        RunOutcome::Succeeded { .. } => Fate::Succeeded,
        RunOutcome::Failed { .. } => Fate::Failed,
        RunOutcome::LeaseExpired => Fate::LeaseExpired,
        RunOutcome::Superseded => Fate::Superseded,
    }
}

#[derive(Debug, Clone)]
struct Open {
    slot: Timestamp,
    expires_at: Timestamp,
}

/// The model of one job.
#[derive(Debug)]
pub struct JobModel {
    pub name: String,
    period_ns: i128,
    overlap: Overlap,
    catch_up: CatchUp,
    max_catch_up: u32,
    at_most_once: bool,
    deadline: SignedDuration,
    margin: SignedDuration,
    last_cursor: Option<Timestamp>,
    last_fence: u64,
    fates: BTreeMap<u64, (Timestamp, Fate)>,
    pub succeeded: BTreeSet<Timestamp>,
    pub dead: BTreeSet<Timestamp>,
    first_claims: BTreeSet<Timestamp>,
    dead_seen: BTreeSet<(Timestamp, u64)>,
    fences: BTreeSet<u64>,
    open: BTreeMap<u64, Open>,
    /// Claims of slots that were already late (a newer slot was due).
    pub late_claims: u64,
}

fn ns(t: Timestamp) -> i128 {
    t.as_nanosecond()
}

impl JobModel {
    /// `period_min`: the schedule is `*/period_min * * * *` in UTC (a
    /// divisor of 60).
    pub fn new(spec: &JobSpec, period_min: i64) -> JobModel {
        JobModel {
            name: spec.name.as_str().to_string(),
            period_ns: i128::from(period_min) * 60 * 1_000_000_000,
            overlap: spec.overlap,
            catch_up: spec.catch_up,
            max_catch_up: spec.max_catch_up,
            at_most_once: spec.delivery == Delivery::AtMostOnce,
            deadline: SignedDuration::try_from(spec.starting_deadline).unwrap_or_default(),
            margin: SignedDuration::try_from(spec.skew_margin).unwrap_or_default(),
            last_cursor: None,
            last_fence: 0,
            fates: BTreeMap::new(),
            succeeded: BTreeSet::new(),
            dead: BTreeSet::new(),
            first_claims: BTreeSet::new(),
            dead_seen: BTreeSet::new(),
            fences: BTreeSet::new(),
            open: BTreeMap::new(),
            late_claims: 0,
        }
    }

    /// Slots in `(a, b]`, by arithmetic.
    pub fn count(&self, a: Timestamp, b: Timestamp) -> u64 {
        if b <= a {
            return 0;
        }
        let n = ns(b).div_euclid(self.period_ns) - ns(a).div_euclid(self.period_ns);
        u64::try_from(n).unwrap_or(0)
    }

    /// The last slot at or before `t`.
    pub fn slot_at_or_before(&self, t: Timestamp) -> Timestamp {
        let n = ns(t).div_euclid(self.period_ns) * self.period_ns;
        Timestamp::from_nanosecond(n).unwrap_or(Timestamp::MIN)
    }

    /// Checks a record read after a step, and records the fates it shows.
    pub fn observe_record(&mut self, s: &JobState, v: &mut Vec<String>) {
        let job = &self.name;
        if let Some(c) = self.last_cursor {
            if s.cursor < c {
                v.push(format!("{job}: cursor moved backwards {c} -> {}", s.cursor));
            }
        }
        self.last_cursor = Some(s.cursor);
        if s.fence < self.last_fence {
            v.push(format!(
                "{job}: fence counter went down {} -> {}",
                self.last_fence, s.fence
            ));
        }
        self.last_fence = s.fence;
        // At most one lease per slot; per job under forbid; max under allow.
        let mut slots = BTreeSet::new();
        for l in &s.leases {
            if !slots.insert(l.slot) {
                v.push(format!(
                    "{job}: two leases of slot {} in the record",
                    l.slot
                ));
            }
            if l.fence > s.fence {
                v.push(format!("{job}: lease fence {} above counter", l.fence));
            }
        }
        let cap = match self.overlap {
            Overlap::Forbid => Some(1),
            Overlap::Allow { max_concurrency } => Some(max_concurrency as usize),
            Overlap::Replace => Some(1),
        };
        if let Some(cap) = cap {
            if s.leases.len() > cap {
                v.push(format!(
                    "{job}: {} leases in the record, at most {cap} allowed",
                    s.leases.len()
                ));
            }
        }
        for r in &s.history {
            let fate = fate_of(&r.outcome);
            match self.fates.get(&r.fence) {
                Some(&(slot, f)) => {
                    if f != fate || slot != r.slot {
                        v.push(format!(
                            "{job}: fence {} has two fates: {f:?} and {fate:?}",
                            r.fence
                        ));
                    }
                }
                None => {
                    self.fates.insert(r.fence, (r.slot, fate));
                    self.open.remove(&r.fence);
                    if fate == Fate::Succeeded {
                        if !self.succeeded.insert(r.slot) {
                            v.push(format!("{job}: slot {} succeeded twice", r.slot));
                        }
                        if self.dead.contains(&r.slot) {
                            v.push(format!("{job}: slot {} succeeded after dying", r.slot));
                        }
                    }
                }
            }
        }
        for d in &s.dead {
            if !self.dead_seen.insert((d.slot, d.fence)) {
                continue;
            }
            if !self.dead.insert(d.slot) {
                v.push(format!("{job}: slot {} dead twice", d.slot));
            }
            if self.succeeded.contains(&d.slot) {
                v.push(format!("{job}: slot {} dead after succeeding", d.slot));
            }
        }
    }

    /// Checks what a worker saw, after the records of the same step.
    pub fn observe_event(&mut self, e: &Event, v: &mut Vec<String>) {
        let job = self.name.clone();
        match e {
            Event::Claimed {
                lease,
                effective_now,
                ..
            } => {
                let c = *effective_now;
                if !self.fences.insert(lease.fence) {
                    v.push(format!("{job}: fence {} granted twice", lease.fence));
                }
                if self.at_most_once && lease.attempt > 1 {
                    v.push(format!(
                        "{job}: at-most-once slot {} retried (attempt {})",
                        lease.slot, lease.attempt
                    ));
                }
                // Exclusivity as the claimer's clock sees it: every other
                // lease still open must be past its expiry plus the margin.
                let mut live_others = 0usize;
                for (f, o) in &self.open {
                    let same_slot = o.slot == lease.slot;
                    let per_job = matches!(self.overlap, Overlap::Forbid);
                    let expired = c > o
                        .expires_at
                        .checked_add(self.margin)
                        .unwrap_or(Timestamp::MAX);
                    if !expired {
                        live_others += 1;
                    }
                    if (same_slot || per_job) && !expired {
                        v.push(format!(
                            "{job}: fence {} claimed slot {} at {c} while fence {f} (slot {}) is live until {}",
                            lease.fence, lease.slot, o.slot, o.expires_at
                        ));
                    }
                }
                if let Overlap::Allow { max_concurrency } = self.overlap {
                    if live_others >= max_concurrency as usize {
                        v.push(format!(
                            "{job}: fence {} claimed at {c} with {live_others} other live leases (max {max_concurrency})",
                            lease.fence
                        ));
                    }
                }
                if lease.attempt == 1 && lease.origin == Origin::Schedule {
                    if !self.first_claims.insert(lease.slot) {
                        v.push(format!(
                            "{job}: slot {} claimed as a first attempt twice",
                            lease.slot
                        ));
                    }
                    // Catch-up: the due slots from this one up to now.
                    let k = self.count(
                        lease
                            .slot
                            .checked_sub(SignedDuration::from_nanos(1))
                            .unwrap_or(lease.slot),
                        c,
                    );
                    if k > 1 {
                        self.late_claims += 1;
                    }
                    let limit = match self.catch_up {
                        CatchUp::All => u64::from(self.max_catch_up),
                        CatchUp::Latest | CatchUp::None => 1,
                    };
                    if k > limit {
                        v.push(format!(
                            "{job}: slot {} claimed at {c} with {k} due slots from it, catch-up allows {limit}",
                            lease.slot
                        ));
                    }
                    let oldest = c.checked_sub(self.deadline).unwrap_or(c);
                    if lease.slot < oldest {
                        v.push(format!(
                            "{job}: stale slot {} claimed at {c} (starting deadline)",
                            lease.slot
                        ));
                    }
                    if matches!(self.catch_up, CatchUp::None) {
                        let on_time = lease
                            .slot
                            .checked_add(SignedDuration::from_secs(60))
                            .and_then(|t| t.checked_add(self.margin))
                            .unwrap_or(Timestamp::MAX);
                        if c > on_time {
                            v.push(format!(
                                "{job}: catch_up none ran slot {} late at {c}",
                                lease.slot
                            ));
                        }
                    }
                }
                if !self.fates.contains_key(&lease.fence) {
                    self.open.insert(
                        lease.fence,
                        Open {
                            slot: lease.slot,
                            expires_at: lease.expires_at,
                        },
                    );
                }
            }
            Event::Completed { fence, .. } => match self.fates.get(fence) {
                Some((_, Fate::Succeeded)) => {}
                other => v.push(format!(
                    "{job}: completion of fence {fence} accepted, but its fate is {other:?}"
                )),
            },
            Event::Failed { fence, .. } => match self.fates.get(fence) {
                Some((_, Fate::Failed)) => {}
                other => v.push(format!(
                    "{job}: failure of fence {fence} accepted, but its fate is {other:?}"
                )),
            },
            Event::Heartbeat {
                fence, expires_at, ..
            } => {
                if let Some(o) = self.open.get_mut(fence) {
                    o.expires_at = *expires_at;
                }
            }
            Event::EffectRan { .. } => {}
        }
    }

    /// The end of a run: `s` is the record brought up to `end` (status).
    /// Every slot from creation to `end − starting deadline` has exactly one
    /// fate; nothing is in flight for longer than `stuck_after`.
    pub fn check_end(
        &mut self,
        s: &JobState,
        end: Timestamp,
        stuck_after: SignedDuration,
        v: &mut Vec<String>,
    ) -> u64 {
        self.observe_record(s, v);
        let job = self.name.clone();
        let due = self.slot_at_or_before(end.checked_sub(self.deadline).unwrap_or(end));
        if due > s.created_at && s.cursor < due {
            v.push(format!(
                "{job}: slot {due} is older than the starting deadline at {end} but after the cursor {}",
                s.cursor
            ));
        }
        let expected = self.count(s.created_at, s.cursor);
        let in_range = |t: &Timestamp| *t > s.created_at && *t <= s.cursor;
        let succeeded = self.succeeded.iter().filter(|t| in_range(t)).count() as u64;
        let dead = self.dead.iter().filter(|t| in_range(t)).count() as u64;
        let mut in_flight: BTreeSet<Timestamp> = s.leases.iter().map(|l| l.slot).collect();
        in_flight.extend(s.pending.iter().map(|p| p.slot));
        for t in &in_flight {
            if self.succeeded.contains(t) || self.dead.contains(t) {
                v.push(format!("{job}: slot {t} is in flight and resolved"));
            }
            if *t < end.checked_sub(stuck_after).unwrap_or(end) {
                v.push(format!("{job}: slot {t} still in flight at {end}: stuck"));
            }
        }
        let fated = succeeded
            + dead
            + s.counters.missed_total()
            + s.counters.skipped_total()
            + in_flight.iter().filter(|t| in_range(t)).count() as u64;
        if fated != expected {
            v.push(format!(
                "{job}: {expected} slots in ({}, {}], but {fated} fates \
                 ({succeeded} succeeded, {dead} dead, {} missed, {} skipped, {} in flight)",
                s.created_at,
                s.cursor,
                s.counters.missed_total(),
                s.counters.skipped_total(),
                in_flight.len()
            ));
        }
        if s.counters.succeeded != self.succeeded.len() as u64 {
            v.push(format!(
                "{job}: counter says {} succeeded, history showed {}",
                s.counters.succeeded,
                self.succeeded.len()
            ));
        }
        if s.counters.dead != self.dead.len() as u64 {
            v.push(format!(
                "{job}: counter says {} dead, dead letters showed {}",
                s.counters.dead,
                self.dead.len()
            ));
        }
        expected
    }
}
