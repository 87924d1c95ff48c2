//! The independent model the simulation checks against. It knows nothing of
//! `coord::decide`: slots are counted by arithmetic over the job's period and
//! offset (the simulated schedules are whole minutes in UTC, [`Sched`]), exclusivity
//! and catch-up are checked from the claims the workers saw, fates from the
//! records' history and dead letters, diffed after every step, and pauses,
//! schedule changes, backfills, redrives, dead letters and the cursor from
//! every write the store applied ([`Applied`], in the store's order).

use std::collections::{BTreeMap, BTreeSet};

use cronslot_core::coord::{JobState, Lease, Origin, RunOutcome};
use cronslot_core::manifest::{CatchUp, Delivery, JobSpec, Overlap};
use jiff::{SignedDuration, Timestamp};

use super::faults::Applied;

/// A schedule of whole minutes in UTC that arithmetic can count: in every
/// window of `period` minutes (counted from the Unix epoch, a midnight,
/// shifted by `offset`), the slots `offset + k * step` for each `k` that
/// stays inside the window. `offset-59/period` is one slot per window
/// (`step = period`); `*/7` is a window of an hour with nine slots, the
/// last 4 minutes before the next hour's first; `17 * * * *` and
/// `13 23 * * *` are windows of an hour and of a day with one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sched {
    period_ns: i128,
    offset_ns: i128,
    step_ns: i128,
    /// Slots per window.
    per: i128,
}

impl Sched {
    /// One slot every `period_min` minutes, at `offset_min` past the
    /// window's start.
    pub fn every(period_min: i64, offset_min: i64) -> Sched {
        Sched::steps(period_min, offset_min, period_min)
    }

    /// Slots `step_min` apart from `offset_min`, starting again every
    /// `period_min` minutes (`*/7` is `steps(60, 0, 7)`).
    pub fn steps(period_min: i64, offset_min: i64, step_min: i64) -> Sched {
        let minute = 60 * 1_000_000_000;
        let (period, step) = (i128::from(period_min), i128::from(step_min));
        Sched {
            period_ns: period * minute,
            offset_ns: i128::from(offset_min) * minute,
            step_ns: step * minute,
            per: (period + step - 1) / step,
        }
    }

    /// The number of the last slot at or before `t`, counted from any
    /// fixed origin (only differences matter).
    fn index(&self, t: Timestamp) -> i128 {
        let d = ns(t) - self.offset_ns;
        let window = d.div_euclid(self.period_ns);
        let within = d.rem_euclid(self.period_ns).div_euclid(self.step_ns);
        window * self.per + within.min(self.per - 1)
    }

    /// Slots in `(a, b]`.
    pub fn count(&self, a: Timestamp, b: Timestamp) -> u64 {
        if b <= a {
            return 0;
        }
        u64::try_from(self.index(b) - self.index(a)).unwrap_or(0)
    }

    /// The last slot at or before `t`.
    pub fn slot_at_or_before(&self, t: Timestamp) -> Timestamp {
        let i = self.index(t);
        let n = i.div_euclid(self.per) * self.period_ns
            + i.rem_euclid(self.per) * self.step_ns
            + self.offset_ns;
        Timestamp::from_nanosecond(n).unwrap_or(Timestamp::MIN)
    }

    pub fn is_slot(&self, t: Timestamp) -> bool {
        let r = (ns(t) - self.offset_ns).rem_euclid(self.period_ns);
        r % self.step_ns == 0 && r / self.step_ns < self.per
    }

    /// The usual distance between two slots.
    pub fn period(&self) -> SignedDuration {
        SignedDuration::from_nanos(i64::try_from(self.step_ns).unwrap_or(i64::MAX))
    }
}

/// What a worker saw, reported to the model.
#[derive(Debug, Clone)]
pub enum Event {
    /// A claim returned this lease; `effective_now` is the claimer's clock
    /// (or the dedicated trigger's slot when later); `sched` is the schedule
    /// of the spec the claimer used.
    Claimed {
        job: usize,
        lease: Box<Lease>,
        effective_now: Timestamp,
        sched: Sched,
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

/// Lives an operator gave to past slots, of one kind (backfill or
/// redrive): each queued life is run under fences of its own origin and
/// ends once (succeeded, dead or superseded).
#[derive(Debug, Default)]
pub struct ExtraLives {
    per_slot: BTreeMap<Timestamp, u32>,
    /// Fences of runs of these lives, with their slots.
    fences: BTreeMap<u64, Timestamp>,
    ended_per_slot: BTreeMap<Timestamp, u32>,
    pub queued: u64,
    pub succeeded: u64,
    pub dead: u64,
    pub superseded: u64,
}

impl ExtraLives {
    fn queue(&mut self, slot: Timestamp) {
        *self.per_slot.entry(slot).or_default() += 1;
        self.queued += 1;
    }

    fn of(&self, slot: Timestamp) -> u32 {
        self.per_slot.get(&slot).copied().unwrap_or(0)
    }

    fn claimed(&mut self, fence: u64, slot: Timestamp) {
        self.fences.insert(fence, slot);
    }

    fn is_run(&self, fence: u64, slot: Timestamp) -> bool {
        self.fences.get(&fence) == Some(&slot)
    }

    /// Lives queued and not ended yet.
    pub fn open(&self) -> u64 {
        self.queued - (self.succeeded + self.dead + self.superseded)
    }

    /// One of these lives of `slot` ended.
    fn end(&mut self, kind: &str, job: &str, slot: Timestamp, fate: &str, v: &mut Vec<String>) {
        let n = self.ended_per_slot.entry(slot).or_default();
        *n += 1;
        let n = *n;
        let lives = self.of(slot);
        if n > lives {
            v.push(format!(
                "{job}: {kind} slot {slot} ended {n} times ({fate}), {kind} {lives} times"
            ));
        }
        match fate {
            "succeeded" => self.succeeded += 1,
            "dead" => self.dead += 1,
            _ => self.superseded += 1,
        }
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
    /// The spec hashes the job may have, with their schedules.
    variants: Vec<(u64, Sched)>,
    /// The schedule of the stored record's spec hash, and since which
    /// cursor it holds: slots up to `seg_start` were counted under earlier
    /// schedules (`closed`), slots after it follow `sched` (DESIGN §5: on a
    /// change the cursor is kept and later slots are recomputed).
    sched: Sched,
    hash: u64,
    seg_start: Timestamp,
    closed: u64,
    created: Timestamp,
    /// The schedule the operator's current call uses (a backfill follows
    /// the operator's spec, which may be newer than the record's).
    pub operator_sched: Sched,
    /// The last applied write (the creator's record at first).
    last: Option<Applied>,
    overlap: Overlap,
    catch_up: CatchUp,
    max_catch_up: u32,
    at_most_once: bool,
    deadline: SignedDuration,
    margin: SignedDuration,
    last_cursor: Option<Timestamp>,
    last_fence: u64,
    fates: BTreeMap<u64, (Timestamp, Fate)>,
    /// Successes and dead letters per slot: a slot has one life, plus one
    /// per backfill or redrive of it, and each life ends at most once.
    pub succeeded: BTreeMap<Timestamp, u32>,
    pub dead: BTreeMap<Timestamp, u32>,
    pub succeeded_total: u64,
    pub dead_total: u64,
    /// Lives the operator's backfills and redrives gave past slots.
    pub backfill: ExtraLives,
    pub redrive: ExtraLives,
    /// Slots from before the job's creation that an operator's trigger
    /// queued (decide's "never ran" exception): a life of their own.
    extra_lives: u64,
    /// Transitions seen in the applied writes.
    pub pauses_applied: u64,
    pub resumes_applied: u64,
    pub spec_changes_applied: u64,
    pub writes_seen: u64,
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
    /// `variants`: the spec hashes the job may have and their schedules;
    /// the first is the job's at creation.
    pub fn new(spec: &JobSpec, variants: Vec<(u64, Sched)>) -> JobModel {
        let (hash, sched) = variants[0];
        JobModel {
            name: spec.name.as_str().to_string(),
            variants,
            sched,
            hash,
            seg_start: Timestamp::MIN,
            closed: 0,
            created: Timestamp::MIN,
            operator_sched: sched,
            last: None,
            overlap: spec.overlap,
            catch_up: spec.catch_up,
            max_catch_up: spec.max_catch_up,
            at_most_once: spec.delivery == Delivery::AtMostOnce,
            deadline: SignedDuration::try_from(spec.starting_deadline).unwrap_or_default(),
            margin: SignedDuration::try_from(spec.skew_margin).unwrap_or_default(),
            last_cursor: None,
            last_fence: 0,
            fates: BTreeMap::new(),
            succeeded: BTreeMap::new(),
            dead: BTreeMap::new(),
            succeeded_total: 0,
            dead_total: 0,
            backfill: ExtraLives::default(),
            redrive: ExtraLives::default(),
            extra_lives: 0,
            pauses_applied: 0,
            resumes_applied: 0,
            spec_changes_applied: 0,
            writes_seen: 0,
            first_claims: BTreeSet::new(),
            dead_seen: BTreeSet::new(),
            fences: BTreeSet::new(),
            open: BTreeMap::new(),
            late_claims: 0,
        }
    }

    /// Lives of `slot`: one, plus one per backfill and per redrive.
    fn lives(&self, slot: Timestamp) -> u32 {
        1 + self.backfill.of(slot) + self.redrive.of(slot)
    }

    fn ended(&self, slot: Timestamp) -> u32 {
        self.succeeded.get(&slot).copied().unwrap_or(0) + self.dead.get(&slot).copied().unwrap_or(0)
    }

    /// The slots of the dead letters of the last write seen (oldest first).
    pub fn dead_letters(&self) -> Vec<Timestamp> {
        self.last
            .as_ref()
            .map(|w| w.dead.iter().map(|(slot, _)| *slot).collect())
            .unwrap_or_default()
    }

    /// Backfilled and redriven lives not ended yet.
    pub fn extra_lives_open(&self) -> u64 {
        self.backfill.open() + self.redrive.open()
    }

    /// The job's record as created (before any simulated write).
    pub fn start(&mut self, created: &JobState, first: Applied, v: &mut Vec<String>) {
        self.seg_start = created.created_at;
        self.created = created.created_at;
        if first.spec_hash != self.hash {
            v.push(format!(
                "{}: created with spec hash {:016x}, expected {:016x}",
                self.name, first.spec_hash, self.hash
            ));
        }
        self.last = Some(first);
    }

    fn sched_of(&self, hash: u64) -> Option<Sched> {
        self.variants
            .iter()
            .find(|(h, _)| *h == hash)
            .map(|(_, s)| *s)
    }

    /// A schedule change the record (or `status`) shows: the slots up to
    /// the cursor it was noticed at were the old schedule's.
    fn change_schedule(&mut self, hash: u64, at_cursor: Timestamp, v: &mut Vec<String>) {
        let Some(next) = self.sched_of(hash) else {
            v.push(format!("{}: unknown spec hash {hash:016x}", self.name));
            return;
        };
        self.closed += self.sched.count(self.seg_start, at_cursor);
        self.seg_start = at_cursor;
        self.sched = next;
        self.hash = hash;
        self.spec_changes_applied += 1;
    }

    /// Checks one write the store applied against the one before it.
    pub fn observe_write(&mut self, w: &Applied, v: &mut Vec<String>) {
        let Some(prev) = self.last.take() else {
            v.push(format!("{}: a write before the job was created", self.name));
            self.last = Some(w.clone());
            return;
        };
        self.writes_seen += 1;
        let job = self.name.clone();
        if w.cursor < prev.cursor {
            v.push(format!(
                "{job}: a write moved the cursor backwards {} -> {}",
                prev.cursor, w.cursor
            ));
        }
        if w.fence < prev.fence {
            v.push(format!(
                "{job}: a write took the fence counter down {} -> {}",
                prev.fence, w.fence
            ));
        }
        if w.spec_hash != prev.spec_hash {
            self.change_schedule(w.spec_hash, prev.cursor, v);
        }
        // Paused (DESIGN §5, `pause`): while the stored record is paused no
        // claim is made (the fence counter stands still), and every slot the
        // cursor passes is skipped (reason: paused), none missed. A
        // running record never counts a slot as skipped for a pause.
        let skipped = w.skipped_paused.checked_sub(prev.skipped_paused);
        if prev.paused {
            if w.fence != prev.fence {
                v.push(format!(
                    "{job}: claimed while paused (fence {} -> {})",
                    prev.fence, w.fence
                ));
            }
            if w.missed != prev.missed {
                v.push(format!(
                    "{job}: {} slots missed while paused",
                    i128::from(w.missed) - i128::from(prev.missed)
                ));
            }
            let passed = self.sched.count(prev.cursor, w.cursor);
            if skipped != Some(passed) {
                v.push(format!(
                    "{job}: paused, the cursor passed {passed} slots ({} -> {}) but {skipped:?} were skipped",
                    prev.cursor, w.cursor
                ));
            }
            self.resumes_applied += u64::from(!w.paused);
        } else {
            if skipped != Some(0) {
                v.push(format!(
                    "{job}: slots skipped as paused by a running record ({} -> {})",
                    prev.skipped_paused, w.skipped_paused
                ));
            }
            self.pauses_applied += u64::from(w.paused);
        }
        // A claim: exactly one new fence, and its slot is either due (after
        // the cursor the claim replaced, a slot of the record's schedule,
        // and the new cursor) or a slot already in flight (a retry, a
        // backfilled or redriven slot), never a slot at or before the cursor
        // run again as a first attempt.
        if w.fence > prev.fence {
            if w.fence != prev.fence + 1 {
                v.push(format!(
                    "{job}: one write issued fences {}..={}",
                    prev.fence + 1,
                    w.fence
                ));
            }
            match &w.newest {
                None => v.push(format!("{job}: fence {} issued without a lease", w.fence)),
                Some(l) => {
                    let carried = prev
                        .pending
                        .iter()
                        .chain(prev.leases.iter())
                        .any(|(s, o, _)| *s == l.slot && *o == l.origin);
                    let first = l.attempt == 1
                        && matches!(l.origin, Origin::Schedule | Origin::Manual)
                        && !carried;
                    // An operator's trigger of a job that never ran queues
                    // its current slot although the record's creation
                    // passed it (decide's documented exception).
                    let never_ran =
                        l.origin == Origin::Manual && prev.fence == 0 && l.slot <= self.created;
                    if first && never_ran {
                        // Before the record's creation: no fate was given
                        // to it, so this run is its one life.
                        self.extra_lives += 1;
                    } else if first {
                        if l.slot <= prev.cursor {
                            v.push(format!(
                                "{job}: fence {} claimed slot {} as a first attempt, at or before the cursor {}",
                                l.fence, l.slot, prev.cursor
                            ));
                        }
                        if !self.sched.is_slot(l.slot) {
                            v.push(format!(
                                "{job}: fence {} claimed {}, not a slot of the record's schedule {:016x}",
                                l.fence, l.slot, self.hash
                            ));
                        }
                        if w.cursor != l.slot {
                            v.push(format!(
                                "{job}: fence {} claimed slot {} but the cursor is {}",
                                l.fence, l.slot, w.cursor
                            ));
                        }
                    } else if !first && !carried {
                        v.push(format!(
                            "{job}: fence {} claimed slot {} ({:?}, attempt {}), which was neither due nor in flight",
                            l.fence, l.slot, l.origin, l.attempt
                        ));
                    }
                    // A claim ends another run's lease only once it has
                    // expired (by the claimer's clock, which may lead the
                    // lease's judge by the skew margin at most), except
                    // that `replace` supersedes live runs by design.
                    if self.overlap != Overlap::Replace {
                        for (fence, expires_at) in &prev.expiries {
                            let ended = !w.expiries.iter().any(|(f, _)| f == fence);
                            if ended && l.claimed_at <= *expires_at {
                                v.push(format!(
                                    "{job}: fence {} claimed at {} ended the lease of fence {fence}, live until {expires_at}",
                                    l.fence, l.claimed_at
                                ));
                            }
                        }
                    }
                    match l.origin {
                        Origin::Backfill => self.backfill.claimed(l.fence, l.slot),
                        Origin::Redrive => self.redrive.claimed(l.fence, l.slot),
                        Origin::Schedule | Origin::Manual => {}
                    }
                }
            }
        }
        // An operator's trigger of a job that never ran may queue its current
        // slot without running it at once (another slot was picked, or the
        // job is paused): only a slot from before the record's creation,
        // which has no fate yet.
        for (slot, origin, _) in &w.pending {
            let new = *origin == Origin::Manual
                && !prev
                    .pending
                    .iter()
                    .chain(prev.leases.iter())
                    .any(|(p, _, _)| p == slot);
            if new {
                if *slot > self.created || prev.fence != 0 {
                    v.push(format!(
                        "{job}: a manual trigger queued slot {slot} again, which already has a fate"
                    ));
                }
                self.extra_lives += 1;
            }
        }
        // A backfill: each slot it queued is a new life of a past slot, of
        // the operator's schedule (or the record's), at or before the
        // cursor, and not in flight.
        if w.backfilled != prev.backfilled {
            let queued: Vec<Timestamp> = w
                .pending
                .iter()
                .filter(|(s, o, a)| {
                    *o == Origin::Backfill
                        && *a == 1
                        && !prev
                            .pending
                            .iter()
                            .chain(prev.leases.iter())
                            .any(|(p, _, _)| p == s)
                })
                .map(|(s, _, _)| *s)
                .collect();
            if w.backfilled < prev.backfilled
                || queued.len() as u64 != w.backfilled - prev.backfilled
            {
                v.push(format!(
                    "{job}: backfill counter {} -> {}, but {} slots queued",
                    prev.backfilled,
                    w.backfilled,
                    queued.len()
                ));
            }
            for s in queued {
                if s > prev.cursor {
                    v.push(format!(
                        "{job}: backfilled slot {s} is after the cursor {}",
                        prev.cursor
                    ));
                }
                if !self.operator_sched.is_slot(s) && !self.sched.is_slot(s) {
                    v.push(format!("{job}: backfilled {s}, not a slot"));
                }
                self.backfill.queue(s);
            }
        }
        self.observe_dead_and_redrives(&prev, w, v);
        self.last = Some(w.clone());
    }

    /// Dead letters and redrives in one write. Every new dead letter is a
    /// death; a redrive takes dead letters back to run, each a new life
    /// (Origin::Redrive, attempt 1) of a slot not in flight. A dead letter
    /// leaves the list only by a redrive or by being dropped (counted) to
    /// keep the list bounded. A life that died and was redriven within the
    /// same write (the redrive's own expiry pass buried it) is a death the
    /// list never shows: the slot was in flight before the write.
    fn observe_dead_and_redrives(&mut self, prev: &Applied, w: &Applied, v: &mut Vec<String>) {
        let job = self.name.clone();
        let mut gone: Vec<(Timestamp, u64)> = prev.dead.clone();
        for d in &w.dead {
            if let Some(i) = gone.iter().position(|g| g == d) {
                gone.swap_remove(i);
            } else if !prev.dead.contains(d) {
                self.saw_dead(d.0, d.1, v);
            }
        }
        let fresh = |a: &Applied, slot: Timestamp| {
            a.pending
                .iter()
                .filter(|p| **p == (slot, Origin::Redrive, 1))
                .count()
        };
        let mut redriven = Vec::new();
        for (slot, origin, attempt) in &w.pending {
            if *origin == Origin::Redrive && *attempt == 1 && !redriven.contains(slot) {
                let n = fresh(w, *slot).saturating_sub(fresh(prev, *slot));
                redriven.extend(std::iter::repeat_n(*slot, n));
            }
        }
        let counted = w.redriven.checked_sub(prev.redriven);
        if counted != Some(redriven.len() as u64) {
            v.push(format!(
                "{job}: redrive counter {} -> {}, but {} slots queued by a redrive",
                prev.redriven,
                w.redriven,
                redriven.len()
            ));
        }
        for slot in redriven {
            if let Some(i) = gone.iter().position(|(g, _)| *g == slot) {
                gone.swap_remove(i);
            } else {
                let before = prev
                    .leases
                    .iter()
                    .chain(prev.pending.iter())
                    .find(|(p, _, _)| *p == slot);
                match before {
                    Some((_, origin, _)) => self.saw_unlisted_dead(slot, *origin, v),
                    None => v.push(format!(
                        "{job}: redrove slot {slot}, which was neither a dead letter nor in flight"
                    )),
                }
            }
            // The new life is the slot's only one in flight: a slot is
            // not redriven while another life of it runs or waits.
            let lives_in_flight = w
                .leases
                .iter()
                .chain(w.pending.iter())
                .filter(|(p, _, _)| *p == slot)
                .count();
            if lives_in_flight > 1 {
                v.push(format!(
                    "{job}: redrove slot {slot} while another life of it is in flight"
                ));
            }
            self.redrive.queue(slot);
        }
        let dropped = w.dead_dropped.checked_sub(prev.dead_dropped);
        if dropped != Some(gone.len() as u64) {
            v.push(format!(
                "{job}: {} dead letters left the list ({gone:?}) without a redrive, {dropped:?} counted as dropped",
                gone.len()
            ));
        }
    }

    /// A dead letter seen for the first time (in a write or a record).
    fn saw_dead(&mut self, slot: Timestamp, fence: u64, v: &mut Vec<String>) {
        if !self.dead_seen.insert((slot, fence)) {
            return;
        }
        self.count_death(slot, "dead", v);
        self.extra_life_ended(slot, fence, "dead", v);
    }

    /// A death no list showed (buried and redriven in one write), of the
    /// life of `slot` that was in flight with `origin`.
    fn saw_unlisted_dead(&mut self, slot: Timestamp, origin: Origin, v: &mut Vec<String>) {
        self.count_death(slot, "died and was redriven", v);
        let job = self.name.clone();
        match origin {
            Origin::Backfill => self.backfill.end("backfilled", &job, slot, "dead", v),
            Origin::Redrive => self.redrive.end("redriven", &job, slot, "dead", v),
            Origin::Schedule | Origin::Manual => {}
        }
    }

    /// One more death of `slot`; it may not outnumber the slot's lives.
    fn count_death(&mut self, slot: Timestamp, what: &str, v: &mut Vec<String>) {
        *self.dead.entry(slot).or_default() += 1;
        self.dead_total += 1;
        if self.ended(slot) > self.lives(slot) {
            v.push(format!(
                "{}: slot {slot} {what}, but all its {} lives had ended",
                self.name,
                self.lives(slot)
            ));
        }
    }

    /// A backfilled or redriven life of `slot` ended, if `fence` is one of
    /// its runs. (A dead letter of a closed retry window carries the
    /// counter's fence, not its run's: the slot must match too.)
    fn extra_life_ended(&mut self, slot: Timestamp, fence: u64, fate: &str, v: &mut Vec<String>) {
        let job = self.name.clone();
        if self.backfill.is_run(fence, slot) {
            self.backfill.end("backfilled", &job, slot, fate, v);
        } else if self.redrive.is_run(fence, slot) {
            self.redrive.end("redriven", &job, slot, fate, v);
        }
    }

    /// Checks a record read after a step, and records the fates it shows.
    pub fn observe_record(&mut self, s: &JobState, v: &mut Vec<String>) {
        let job = self.name.clone();
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
                    match fate {
                        Fate::Succeeded => {
                            *self.succeeded.entry(r.slot).or_default() += 1;
                            self.succeeded_total += 1;
                            if self.ended(r.slot) > self.lives(r.slot) {
                                v.push(format!(
                                    "{job}: slot {} succeeded, but all its {} lives had ended",
                                    r.slot,
                                    self.lives(r.slot)
                                ));
                            }
                            self.extra_life_ended(r.slot, r.fence, "succeeded", v);
                        }
                        Fate::Superseded => self.extra_life_ended(r.slot, r.fence, "superseded", v),
                        Fate::Failed | Fate::LeaseExpired => {}
                    }
                }
            }
        }
        for d in &s.dead {
            self.saw_dead(d.slot, d.fence, v);
        }
    }

    /// Checks what a worker saw, after the records of the same step.
    pub fn observe_event(&mut self, e: &Event, v: &mut Vec<String>) {
        let job = self.name.clone();
        match e {
            Event::Claimed {
                lease,
                effective_now,
                sched,
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
                    let k = sched.count(
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
    /// fate per life (one, plus one per backfill and per redrive); nothing is
    /// in flight for longer than `stuck_after`; every backfilled and
    /// redriven life has ended; the job
    /// is not paused (the operator resumed every pause).
    pub fn check_end(
        &mut self,
        s: &JobState,
        end: Timestamp,
        stuck_after: SignedDuration,
        v: &mut Vec<String>,
    ) -> u64 {
        self.observe_record(s, v);
        let job = self.name.clone();
        // `status` applies the spec it is given: a change no write has
        // stored yet starts at the stored cursor.
        let hash = u64::from_str_radix(&s.spec_hash, 16).unwrap_or(u64::MAX);
        if hash != self.hash {
            let stored = self.last.as_ref().map_or(s.cursor, |l| l.cursor);
            self.change_schedule(hash, stored, v);
        }
        if s.paused {
            v.push(format!(
                "{job}: still paused at {end}, after the operator resumed it"
            ));
        }
        let due = self
            .sched
            .slot_at_or_before(end.checked_sub(self.deadline).unwrap_or(end));
        if due > s.created_at && s.cursor < due {
            v.push(format!(
                "{job}: slot {due} is older than the starting deadline at {end} but after the cursor {}",
                s.cursor
            ));
        }
        let scheduled = self.closed + self.sched.count(self.seg_start, s.cursor);
        let expected = scheduled + self.backfill.queued + self.redrive.queued + self.extra_lives;
        let mut in_flight: BTreeSet<Timestamp> = s.leases.iter().map(|l| l.slot).collect();
        in_flight.extend(s.pending.iter().map(|p| p.slot));
        for t in &in_flight {
            if self.ended(*t) >= self.lives(*t) {
                v.push(format!("{job}: slot {t} is in flight and resolved"));
            }
            if *t < end.checked_sub(stuck_after).unwrap_or(end) {
                v.push(format!("{job}: slot {t} still in flight at {end}: stuck"));
            }
        }
        for (kind, lives) in [("backfilled", &self.backfill), ("redriven", &self.redrive)] {
            if lives.open() > 0 {
                v.push(format!(
                    "{job}: {} {kind} slots never ended ({} {kind}: {} succeeded, {} dead, {} superseded)",
                    lives.open(),
                    lives.queued,
                    lives.succeeded,
                    lives.dead,
                    lives.superseded
                ));
            }
        }
        let fated = self.succeeded_total
            + self.dead_total
            + s.counters.missed_total()
            + s.counters.skipped_total()
            + in_flight.len() as u64;
        if fated != expected {
            v.push(format!(
                "{job}: {scheduled} scheduled slots in ({}, {}] + {} backfilled + {} redriven + {} queued by a manual trigger, \
                 but {fated} fates ({} succeeded, {} dead, {} missed, {} skipped, {} in flight)",
                s.created_at,
                s.cursor,
                self.backfill.queued,
                self.redrive.queued,
                self.extra_lives,
                self.succeeded_total,
                self.dead_total,
                s.counters.missed_total(),
                s.counters.skipped_total(),
                in_flight.len()
            ));
        }
        if s.counters.succeeded != self.succeeded_total {
            v.push(format!(
                "{job}: counter says {} succeeded, history showed {}",
                s.counters.succeeded, self.succeeded_total
            ));
        }
        if s.counters.dead != self.dead_total {
            v.push(format!(
                "{job}: counter says {} dead, dead letters showed {}",
                s.counters.dead, self.dead_total
            ));
        }
        if s.counters.backfilled != self.backfill.queued {
            v.push(format!(
                "{job}: counter says {} backfilled, the writes showed {}",
                s.counters.backfilled, self.backfill.queued
            ));
        }
        if s.counters.redriven != self.redrive.queued {
            v.push(format!(
                "{job}: counter says {} redriven, the writes showed {}",
                s.counters.redriven, self.redrive.queued
            ));
        }
        scheduled
    }
}

#[cfg(test)]
mod tests {
    //! The model's write checks, on hand-made write sequences: each rule
    //! fires on the transition it forbids and stays quiet on a legal one.
    use super::*;
    use crate::sim::specs;

    const OLD: u64 = 0x1111;
    const NEW: u64 = 0x2222;

    fn at(min: i64) -> Timestamp {
        Timestamp::from_second(1_767_571_200 + 60 * min).unwrap()
    }

    fn model() -> (JobModel, Applied) {
        let spec = &specs()[0];
        let mut m = JobModel::new(
            spec,
            vec![(OLD, Sched::every(1, 0)), (NEW, Sched::every(2, 1))],
        );
        let created = cronslot_core::coord::JobState::new("forbid-latest", "1111", at(0), false);
        let first = Applied::of("forbid-latest", &created);
        let mut v = Vec::new();
        m.start(&created, first.clone(), &mut v);
        assert_eq!(v, Vec::<String>::new());
        (m, first)
    }

    fn lease(slot: Timestamp, fence: u64, origin: Origin) -> Lease {
        Lease {
            owner: "w".into(),
            slot,
            fence,
            attempt: 1,
            claimed_at: slot,
            expires_at: slot,
            checkpoint: None,
            origin,
            retry_until: None,
            version: None,
        }
    }

    /// `prev` with a first claim of `slot` (fence + 1, cursor at the slot).
    fn claim(prev: &Applied, slot: Timestamp) -> Applied {
        let l = lease(slot, prev.fence + 1, Origin::Schedule);
        Applied {
            fence: l.fence,
            cursor: slot,
            leases: vec![(slot, Origin::Schedule, 1)],
            newest: Some(l),
            ..prev.clone()
        }
    }

    /// The rule whose message holds `rule` fired.
    fn assert_caught(v: &[String], rule: &str) {
        assert!(v.iter().any(|e| e.contains(rule)), "{rule:?} not in {v:?}");
    }

    fn run(m: &mut JobModel, writes: &[Applied]) -> Vec<String> {
        let mut v = Vec::new();
        for w in writes {
            m.observe_write(w, &mut v);
        }
        v
    }

    #[test]
    fn pause_skip_resume_claim_is_legal() {
        let (mut m, w0) = model();
        let paused = Applied {
            paused: true,
            ..w0.clone()
        };
        let skipping = Applied {
            cursor: at(5),
            skipped_paused: 5,
            ..paused.clone()
        };
        let resumed = Applied {
            paused: false,
            ..skipping.clone()
        };
        let claimed = claim(&resumed, at(6));
        let v = run(&mut m, &[w0.clone(), paused, skipping, resumed, claimed]);
        assert_eq!(v, Vec::<String>::new());
        assert_eq!((m.pauses_applied, m.resumes_applied), (1, 1));
    }

    #[test]
    fn claim_while_paused_is_caught() {
        let (mut m, w0) = model();
        let paused = Applied {
            paused: true,
            ..w0.clone()
        };
        let claimed = claim(&paused, at(1));
        let v = run(&mut m, &[paused, claimed]);
        assert_caught(&v, "claimed while paused");
    }

    #[test]
    fn skips_must_match_the_slots_the_cursor_passed() {
        let (mut m, w0) = model();
        let paused = Applied {
            paused: true,
            ..w0.clone()
        };
        let skipping = Applied {
            cursor: at(5),
            skipped_paused: 4,
            ..paused.clone()
        };
        let v = run(&mut m, &[paused, skipping]);
        assert_caught(&v, "passed 5 slots");
    }

    #[test]
    fn first_claim_at_or_before_the_cursor_is_caught() {
        let (mut m, w0) = model();
        let c1 = claim(&w0, at(3));
        let again = Applied {
            cursor: at(3),
            ..claim(&c1, at(2))
        };
        let v = run(&mut m, &[c1, again]);
        assert_caught(&v, "at or before the cursor");
    }

    #[test]
    fn old_schedule_slot_after_a_change_is_caught() {
        let (mut m, w0) = model();
        let c1 = claim(&w0, at(3));
        // The change is stored at cursor 3; 4 is a slot of `* * * * *`
        // only, 5 one of `1-59/2` too.
        let changed = Applied {
            spec_hash: NEW,
            ..c1.clone()
        };
        let old_slot = claim(&changed, at(4));
        let v = run(&mut m, &[c1.clone(), changed.clone(), old_slot]);
        assert_caught(&v, "not a slot of the record's schedule");
        let (mut m, _) = model();
        let new_slot = claim(&changed, at(5));
        assert_eq!(run(&mut m, &[c1, changed, new_slot]), Vec::<String>::new());
    }

    #[test]
    fn backfill_queues_and_counts_must_agree() {
        let (mut m, w0) = model();
        let c1 = claim(&w0, at(10));
        let backfilled = Applied {
            backfilled: 2,
            pending: vec![(at(4), Origin::Backfill, 1)],
            ..c1.clone()
        };
        let v = run(&mut m, &[c1, backfilled]);
        assert_caught(&v, "but 1 slots queued");
    }

    #[test]
    fn a_manual_trigger_may_not_queue_a_fated_slot() {
        // decide's exception for jobs that never ran, as it was before the
        // fix: a slot after the record's creation, already missed, queued.
        let (mut m, w0) = model();
        let missed = Applied {
            cursor: at(1),
            missed: 1,
            ..w0.clone()
        };
        let queued = Applied {
            pending: vec![(at(1), Origin::Manual, 1)],
            ..missed.clone()
        };
        let v = run(&mut m, &[missed, queued]);
        assert_caught(&v, "already has a fate");
    }

    /// `prev` with its newest lease of `slot` failed for good: a dead
    /// letter carrying the run's fence.
    fn bury(prev: &Applied, slot: Timestamp) -> Applied {
        let mut dead = prev.dead.clone();
        dead.push((slot, prev.fence));
        Applied {
            leases: prev
                .leases
                .iter()
                .filter(|l| l.0 != slot)
                .cloned()
                .collect(),
            newest: None,
            dead,
            ..prev.clone()
        }
    }

    /// `prev` with its runs finished (no lease left).
    fn finished(prev: &Applied) -> Applied {
        Applied {
            leases: vec![],
            newest: None,
            ..prev.clone()
        }
    }

    /// The model, and the writes of slot 3's first run: its claim, then
    /// its burial as a dead letter.
    fn slot_3_died() -> (JobModel, Applied, Applied) {
        let (m, w0) = model();
        let c1 = claim(&w0, at(3));
        let dead = bury(&c1, at(3));
        (m, c1, dead)
    }

    /// `prev` with `slots` sent back to run by a redrive.
    fn redrive(prev: &Applied, slots: &[Timestamp]) -> Applied {
        let mut pending = prev.pending.clone();
        pending.extend(slots.iter().map(|s| (*s, Origin::Redrive, 1)));
        Applied {
            dead: prev
                .dead
                .iter()
                .filter(|d| !slots.contains(&d.0))
                .cloned()
                .collect(),
            pending,
            redriven: prev.redriven + slots.len() as u64,
            ..prev.clone()
        }
    }

    #[test]
    fn a_redrive_gives_a_dead_slot_one_more_life() {
        let (mut m, c1, dead) = slot_3_died();
        let back = redrive(&dead, &[at(3)]);
        let v = run(&mut m, &[c1, dead, back]);
        assert_eq!(v, Vec::<String>::new());
        assert_eq!(
            (m.dead_total, m.redrive.queued, m.extra_lives_open()),
            (1, 1, 1)
        );
        assert_eq!(m.lives(at(3)), 2);
    }

    #[test]
    fn a_death_redriven_in_the_same_write_is_counted() {
        // The redrive's own expiry pass buried the run of slot 3, then sent
        // it back: no list ever shows that dead letter.
        let (mut m, w0) = model();
        let c1 = claim(&w0, at(3));
        let back = redrive(&finished(&c1), &[at(3)]);
        let v = run(&mut m, &[c1, back]);
        assert_eq!(v, Vec::<String>::new());
        assert_eq!((m.dead_total, m.redrive.queued), (1, 1));
    }

    #[test]
    fn redrive_counts_and_queues_must_agree() {
        let (mut m, c1, dead) = slot_3_died();
        let miscounted = Applied {
            redriven: 2,
            ..redrive(&dead, &[at(3)])
        };
        let v = run(&mut m, &[c1, dead, miscounted]);
        assert_caught(&v, "redrive counter 0 -> 2");
    }

    #[test]
    fn a_redrive_of_a_slot_never_dead_is_caught() {
        let (mut m, w0) = model();
        let c1 = claim(&w0, at(3));
        let done = finished(&c1);
        let v = run(&mut m, &[c1, done.clone(), redrive(&done, &[at(2)])]);
        assert_caught(&v, "neither a dead letter nor in flight");
    }

    #[test]
    fn a_dead_letter_may_leave_only_by_redrive_or_counted_drop() {
        let (mut m, c1, dead) = slot_3_died();
        let vanished = Applied {
            dead: vec![],
            ..dead.clone()
        };
        let v = run(&mut m, &[c1.clone(), dead.clone(), vanished]);
        assert_caught(&v, "left the list");
        let (mut m, _, _) = slot_3_died();
        let dropped = Applied {
            dead: vec![],
            dead_dropped: 1,
            ..dead.clone()
        };
        assert_eq!(run(&mut m, &[c1, dead, dropped]), Vec::<String>::new());
    }

    #[test]
    fn a_redrive_of_a_slot_in_flight_is_caught() {
        // Slot 3 died, then a backfill queued it again; a redrive must leave
        // its dead letter alone while that life waits.
        let (mut m, c1, dead) = slot_3_died();
        let backfilled = Applied {
            backfilled: 1,
            pending: vec![(at(3), Origin::Backfill, 1)],
            ..dead.clone()
        };
        let back = redrive(&backfilled, &[at(3)]);
        let v = run(&mut m, &[c1, dead, backfilled, back]);
        assert_caught(&v, "while another life of it is in flight");
    }

    #[test]
    fn a_redriven_life_ends_once() {
        let (mut m, c1, dead) = slot_3_died();
        let back = redrive(&dead, &[at(3)]);
        let l = lease(at(3), 2, Origin::Redrive);
        let run_it = Applied {
            fence: 2,
            pending: vec![],
            leases: vec![(at(3), Origin::Redrive, 1)],
            newest: Some(l),
            ..back.clone()
        };
        let again = bury(&run_it, at(3));
        assert_eq!(
            run(&mut m, &[c1, dead, back, run_it, again]),
            Vec::<String>::new()
        );
        assert_eq!((m.redrive.dead, m.extra_lives_open()), (1, 0));
        // A third death of a slot with two lives is one too many.
        let mut record = cronslot_core::coord::JobState::new("forbid-latest", "1111", at(0), false);
        record.dead.push(cronslot_core::coord::DeadLetter {
            slot: at(3),
            fence: 9,
            attempts: 1,
            last_error: "boom".into(),
            died_at: at(20),
            checkpoint: None,
        });
        let mut v = Vec::new();
        m.observe_record(&record, &mut v);
        assert_caught(&v, "lives had ended");
    }

    #[test]
    fn a_backfilled_life_ends_once() {
        let (mut m, w0) = model();
        let c1 = claim(&w0, at(10));
        let backfilled = Applied {
            backfilled: 1,
            pending: vec![(at(4), Origin::Backfill, 1)],
            ..c1.clone()
        };
        let l = lease(at(4), 2, Origin::Backfill);
        let run_it = Applied {
            fence: 2,
            pending: vec![],
            leases: vec![(at(10), Origin::Schedule, 1), (at(4), Origin::Backfill, 1)],
            newest: Some(l),
            ..backfilled.clone()
        };
        assert_eq!(run(&mut m, &[c1, backfilled, run_it]), Vec::<String>::new());
        assert_eq!(m.extra_lives_open(), 1);
        let mut record = cronslot_core::coord::JobState::new("forbid-latest", "1111", at(0), false);
        let ok = |fence| cronslot_core::coord::RunRecord {
            slot: at(4),
            attempt: 1,
            fence,
            owner: "w".into(),
            started_at: at(10),
            finished_at: at(10),
            outcome: RunOutcome::Succeeded { result: None },
        };
        record.history.push(ok(2));
        let mut v = Vec::new();
        m.observe_record(&record, &mut v);
        assert_eq!(v, Vec::<String>::new());
        assert_eq!(m.extra_lives_open(), 0);
        // The slot's scheduled life and its backfilled one: a third
        // success is one too many.
        record.history.push(ok(7));
        record.history.push(ok(8));
        m.observe_record(&record, &mut v);
        assert_caught(&v, "lives had ended");
    }
}
