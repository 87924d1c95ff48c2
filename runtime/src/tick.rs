//! A tick, written once (docs/design.md §11): the store says how far
//! earlier ticks planned (the tick mark) and which jobs its wake index
//! names; the manifest says which jobs have a slot since; only those jobs'
//! records are read. A tick with nothing due costs the store two requests,
//! [`TickIndex::tick_start`] and [`TickIndex::tick_end`], whatever the
//! number of jobs.
//!
//! The mark moves only past slots whose jobs were served: a planned job
//! whose claim failed, or that the platform's deadline left unserved,
//! holds the mark just before its slot, so the next tick plans it again.
//! A woken job needs nothing of the sort: its wake stays in the index
//! until a write of its record moves it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{
    Coordinator, JobState, StoreError, TickIndex, TickStart, Trigger, Versioned,
};
use cronslot_core::due::DuePlanner;
use cronslot_core::manifest::{JobSpec, JobTemplate};
use cronslot_core::schedules::ScheduleKey;
use jiff::{SignedDuration, Timestamp};

use crate::run::{MoreDue, ServeOptions, Served, serve};
use crate::{Jobs, Platform};

/// Most woken jobs one tick takes from the index. The rest keep their
/// wakes and are served by the next ticks, earliest first.
pub const MAX_WOKEN_PER_TICK: usize = 1000;

/// A tick is not started with less than this left before the platform's
/// deadline: the claims and their records need the time.
const START_MARGIN: SignedDuration = SignedDuration::from_secs(5);

/// The jobs a tick may serve and the planner over them, built once per
/// manifest (a Lambda's cold start, a Worker isolate, a runner's start).
pub struct TickPlan {
    specs: Vec<Rc<JobSpec>>,
    planner: DuePlanner,
    /// The dynamic jobs: the wake index names their schedules' records
    /// (`job/key`), whose specs are read from the store.
    templates: Vec<Rc<JobTemplate>>,
}

/// On a store's first tick (no mark yet) the window reaches back this far:
/// a deployment that ran before ticks kept a mark (an upgrade) has its
/// current slots served, as every tick served them then.
const FIRST_WINDOW: SignedDuration = SignedDuration::from_secs(60);

/// One job a tick serves.
#[derive(Debug, Clone)]
pub struct TickJob {
    /// The job.
    pub spec: Rc<JobSpec>,
    /// Its first slot in the tick's window, when the manifest planned it;
    /// `None` when only the wake index named it.
    pub planned: Option<Timestamp>,
    /// Whether a record the claim creates starts just before the planned
    /// slot (every tick but a store's first, whose window reaches back
    /// before the store had any mark: there a new record starts now, so a
    /// slot from before the deployment does not run).
    pub from_slot: bool,
}

impl TickJob {
    /// The trigger to claim the job with: a planned job's record, if it has
    /// none yet, starts just before its planned slot.
    pub fn trigger(&self) -> Trigger {
        match self.planned {
            Some(slot) if self.from_slot => Trigger::Planned(slot),
            _ => Trigger::Tick,
        }
    }
}

/// What a tick serves, from the store's [`TickStart`].
#[derive(Debug, Clone)]
pub struct TickWork {
    /// The mark the store held when the tick started (`None` on a store's
    /// first tick).
    pub start_mark: Option<Timestamp>,
    /// The window's start: the mark, or (on a store's first tick) a minute
    /// before its end.
    pub after: Timestamp,
    /// The window's end, the instant the store judges by.
    pub now: Timestamp,
    /// The jobs to serve: planned ones by slot, then woken ones by wake,
    /// then (once [`tick_with`] has read their specs) woken schedules.
    pub jobs: Vec<TickJob>,
    /// The schedules of dynamic jobs the wake index named, by wake: their
    /// specs are in their records, which [`TickServer::resolve`] reads.
    #[cfg(feature = "schedules")]
    pub schedules: Vec<WokenSchedule>,
    /// Jobs the wake index named that this manifest does not have (another
    /// manifest's, or removed): left alone.
    pub unknown: Vec<String>,
    /// The index's earliest wake after the window, where the store said
    /// ([`TickStart::next_wake`]): when a runner should look again.
    pub next_wake: Option<Timestamp>,
}

impl TickWork {
    /// Whether this tick took as many jobs as one tick takes
    /// ([`MAX_WOKEN_PER_TICK`]): the wake index may hold more that are due,
    /// and a tick right after this one serves them (the runner ticks again
    /// at once; a Lambda invocation while it has time).
    pub fn took_all_it_could(&self) -> bool {
        // A woken schedule, once resolved, is a job too: counted once.
        #[cfg(feature = "schedules")]
        let schedules = self.schedules.len();
        #[cfg(not(feature = "schedules"))]
        let schedules = 0;
        let jobs = self.jobs.iter().filter(|j| j.spec.key.is_none()).count();
        jobs + schedules + self.unknown.len() >= MAX_WOKEN_PER_TICK
    }
}

/// A schedule of a dynamic job that the wake index named.
#[derive(Debug, Clone)]
pub struct WokenSchedule {
    /// Its job.
    pub template: Rc<JobTemplate>,
    /// Its key.
    pub key: ScheduleKey,
    /// Its record's name, `job/key`, as the index named it.
    pub name: String,
    /// Its record as the store returned it with the index read
    /// ([`TickStart::records`]), with the instant the store judged that
    /// read by; `None`: the tick reads it ([`TickServer::resolve`]).
    pub record: Option<(Versioned<JobState>, Timestamp)>,
}

impl TickWork {
    /// Where the mark may move once the jobs are served, given the jobs
    /// that were not: just before the earliest unserved planned slot, or
    /// the window's end when every planned job was served.
    pub fn mark(&self, unserved: &HashSet<&str>) -> Timestamp {
        self.jobs
            .iter()
            .filter(|j| unserved.contains(j.spec.record_name().as_ref()))
            .filter_map(|j| j.planned)
            .min()
            .map_or(self.now, |slot| {
                slot.checked_sub(SignedDuration::from_nanos(1))
                    .unwrap_or(slot)
                    .max(self.after)
            })
    }
}

impl TickPlan {
    /// A plan over `specs`; the manifest plans the slots of the jobs that
    /// `planned` accepts, and the wake index may name any of them.
    pub fn new(specs: Vec<Rc<JobSpec>>, planned: impl Fn(&JobSpec) -> bool) -> TickPlan {
        let planner = DuePlanner::new(&specs, planned);
        TickPlan {
            specs,
            planner,
            templates: Vec::new(),
        }
    }

    /// The plan with the dynamic jobs `templates`, whose schedules the wake
    /// index names.
    pub fn with_templates(mut self, templates: Vec<Rc<JobTemplate>>) -> TickPlan {
        self.templates = templates;
        self
    }

    /// The dynamic jobs of the plan.
    pub fn templates(&self) -> &[Rc<JobTemplate>] {
        &self.templates
    }

    /// The schedule a record name of the wake index names, when it is one
    /// of a dynamic job of the plan (never, in a build without the feature
    /// `schedules`: the name is then unknown to it).
    #[cfg(not(feature = "schedules"))]
    fn woken_schedule(&self, _name: &str) -> Option<WokenSchedule> {
        None
    }

    /// The schedule a record name of the wake index names, when it is one
    /// of a dynamic job of the plan.
    #[cfg(feature = "schedules")]
    fn woken_schedule(&self, name: &str) -> Option<WokenSchedule> {
        let (job, key) = cronslot_core::schedules::split_record_name(name)?;
        let template = self.templates.iter().find(|t| t.name == job)?;
        Some(WokenSchedule {
            template: Rc::clone(template),
            key,
            name: name.to_string(),
            record: None,
        })
    }

    /// The jobs of the plan.
    pub fn specs(&self) -> &[Rc<JobSpec>] {
        &self.specs
    }

    /// The index in [`specs`](TickPlan::specs) of the job named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.planner.position(name)
    }

    /// How many jobs the manifest plans.
    pub fn planned_jobs(&self) -> usize {
        self.planner.len()
    }

    /// The jobs to serve for a tick that started with `start`: the
    /// planned jobs an earlier tick left (at their slots), every planned
    /// job with a slot after the mark, then every woken job not already
    /// among them.
    pub fn work(&self, start: &TickStart) -> TickWork {
        let first = start.mark.is_none();
        let after = match start.mark {
            Some(mark) => mark.min(start.now),
            None => start.now.checked_sub(FIRST_WINDOW).unwrap_or(start.now),
        };
        let mut seen: HashSet<usize> = HashSet::new();
        let mut unknown = Vec::new();
        let mut carried: Vec<&(String, Timestamp)> = start.carried.iter().collect();
        // The key is the whole entry: equal keys are equal entries, so an
        // unstable sort orders them as a stable one would.
        carried.sort_unstable_by_key(|(name, slot)| (*slot, name.as_str()));
        let mut jobs: Vec<TickJob> = Vec::new();
        for (name, slot) in carried {
            match self.planner.position(name) {
                Some(i) if seen.insert(i) => jobs.push(TickJob {
                    spec: Rc::clone(&self.specs[i]),
                    planned: Some(*slot),
                    from_slot: true,
                }),
                Some(_) => {}
                None => unknown.push(name.clone()),
            }
        }
        for d in self.planner.due(&self.specs, after, start.now) {
            if seen.insert(d.job) {
                jobs.push(TickJob {
                    spec: Rc::clone(&self.specs[d.job]),
                    planned: Some(d.slot),
                    from_slot: !first,
                });
            }
        }
        #[cfg(feature = "schedules")]
        let mut schedules = Vec::new();
        // The records that came with the index read, by name.
        #[cfg(feature = "schedules")]
        let records: std::collections::HashMap<&str, &Versioned<JobState>> = start
            .records
            .iter()
            .map(|r| (r.value.job.as_str(), r))
            .collect();
        for name in &start.woken {
            match self.planner.position(name) {
                Some(i) if seen.insert(i) => jobs.push(TickJob {
                    spec: Rc::clone(&self.specs[i]),
                    planned: None,
                    from_slot: false,
                }),
                Some(_) => {}
                None => match self.woken_schedule(name) {
                    #[cfg(feature = "schedules")]
                    Some(mut woken) => {
                        woken.record = records
                            .get(woken.name.as_str())
                            .map(|r| ((*r).clone(), start.now));
                        schedules.push(woken);
                    }
                    _ => unknown.push(name.clone()),
                },
            }
        }
        TickWork {
            start_mark: start.mark,
            after,
            now: start.now,
            jobs,
            #[cfg(feature = "schedules")]
            schedules,
            unknown,
            next_wake: start.next_wake,
        }
    }
}

/// How [`tick`] serves its jobs.
pub struct TickOptions<'a> {
    /// The owner of every lease taken.
    pub owner: &'a str,
    /// Serve at most this many jobs (planned ones first, by slot): a
    /// platform's limit on requests per invocation (a Worker's
    /// subrequests). The rest are left for the next tick: the mark stays
    /// before the first planned slot left, and woken jobs keep their wakes.
    pub max_jobs: Option<usize>,
    /// See [`ServeOptions::retry_within`].
    pub retry_within: Duration,
    /// See [`ServeOptions::more_due`].
    pub more_due: Option<MoreDue<'a>>,
}

/// How a platform serves a tick's jobs: which of them it admits, and how it
/// claims and runs them. The tick itself (the store's mark and wake index,
/// the manifest's plan, the bound on jobs, the deadline's margin, where the
/// mark moves) is [`tick_with`]'s, the same on every platform.
#[allow(async_fn_in_trait)]
pub trait TickServer {
    /// What serving one job came to.
    type Served;
    /// Why a job is not served on this platform (a configuration that the
    /// next tick would refuse again, so it does not hold the mark).
    type Refusal;

    /// Whether `job` may be served here.
    fn admit(&self, job: &TickJob) -> Result<(), Self::Refusal>;

    /// Serves `jobs` (the admitted ones within the bound, in the tick's
    /// order), at once or in turn; one answer per job, in order. Called
    /// once per tick, with no jobs too.
    async fn serve(&mut self, work: &TickWork, jobs: &[&TickJob]) -> Vec<Self::Served>;

    /// Whether a job's claim failed on the store before it ran anything:
    /// the job holds the mark, so the next tick plans it again.
    fn claim_failed(served: &Self::Served) -> bool;

    /// Puts the woken schedules in the order this server takes them (when
    /// the bound on jobs leaves room for some, the first ones): several
    /// servers ticking on one store at once (a runner's workers) each
    /// start at a different place, so that they do not all read and claim
    /// the same records while the rest wait. The store's order (earliest
    /// wake first) by default.
    fn order_woken(&self, woken: &mut [WokenSchedule]) {
        let _ = woken;
    }

    /// How many woken jobs the tick reads from the index (at most
    /// [`MAX_WOKEN_PER_TICK`], the default): a server that will serve only
    /// a few (a runner with few free places) reads only as many as it may
    /// use, rather than a thousand names each time a run ends.
    fn woken_wanted(&self) -> Option<usize> {
        None
    }

    /// The spec a woken schedule's slots run with now, read from its
    /// record (its claim then starts from that read:
    /// [`Schedules::schedule_for_claim`]); `None` when it is deleted or
    /// gone. A platform that serves no schedules refuses: the schedule
    /// keeps its wake.
    ///
    /// [`Schedules::schedule_for_claim`]: cronslot_core::coord::Schedules
    async fn resolve(
        &self,
        woken: &WokenSchedule,
        now: Timestamp,
    ) -> Result<Option<Rc<JobSpec>>, String> {
        let _ = now;
        Err(format!(
            "{}: this platform does not serve the schedules of dynamic jobs",
            woken.name
        ))
    }
}

/// Where a tick reads a woken schedule's spec: a coordinator over a store
/// that keeps schedules (feature `schedules`).
#[allow(async_fn_in_trait)]
pub trait ScheduleSource {
    /// As [`TickServer::resolve`]: from `read` (the record the tick's
    /// index read returned, judged at the instant with it) when there is
    /// one, without reading it again; a source that cannot use it reads.
    async fn schedule_spec(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        read: Option<(&Versioned<JobState>, Timestamp)>,
        now: Timestamp,
    ) -> Result<Option<JobSpec>, String>;
}

impl<S: cronslot_core::coord::StateStore> ScheduleSource
    for cronslot_core::coord::CasCoordinator<S>
{
    async fn schedule_spec(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        read: Option<(&Versioned<JobState>, Timestamp)>,
        now: Timestamp,
    ) -> Result<Option<JobSpec>, String> {
        #[cfg(feature = "schedules")]
        {
            use cronslot_core::coord::Schedules;
            let spec = match read {
                Some((record, judged)) => {
                    self.schedule_for_claim_from(template, key, Some(record), judged, now)
                        .await
                }
                None => self.schedule_for_claim(template, key, now).await,
            };
            spec.map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "schedules"))]
        {
            let _ = (template, read, now);
            Err(format!(
                "{}/{key}: this build serves no schedules (feature `schedules`)",
                template.name
            ))
        }
    }
}

/// Reads the spec of a woken schedule through `source` (a coordinator):
/// what a [`TickServer::resolve`] on a store that keeps schedules does.
///
/// # Errors
///
/// The read's failure, as text.
pub async fn resolve_with<C: ScheduleSource>(
    source: &C,
    woken: &WokenSchedule,
    now: Timestamp,
) -> Result<Option<Rc<JobSpec>>, String> {
    let read = woken
        .record
        .as_ref()
        .map(|(record, judged)| (record, *judged));
    source
        .schedule_spec(&woken.template, &woken.key, read, now)
        .await
        .map(|spec| spec.map(Rc::new))
}

/// What one tick did.
#[derive(Debug)]
pub struct TickReport<S = Served, R = std::convert::Infallible> {
    /// The window and the jobs it served.
    pub work: TickWork,
    /// Each served job's answer, in the order of the admitted jobs of
    /// `work.jobs`. Shorter than them when the platform's deadline or the
    /// bound on jobs left jobs unserved.
    pub served: Vec<S>,
    /// The jobs the platform refused, with why (they do not hold the mark).
    pub refused: Vec<R>,
    /// Woken schedules this tick could not serve, with why (their read
    /// failed): they keep their wakes, so a next tick reads them again.
    pub unresolved: Vec<(String, String)>,
    /// Woken schedules the bound on jobs left for the next tick (counted
    /// in `left` too); they keep their wakes.
    pub schedules_left: usize,
    /// The mark the tick reached: written, unless the window planned no
    /// slot and the stored mark is younger than [`MARK_REFRESH`].
    pub mark: Timestamp,
    /// Why the mark could not be written (the next tick plans a longer
    /// window, which serves the same jobs again: nothing is lost).
    pub mark_error: Option<StoreError>,
    /// Jobs left for the next tick, and why.
    pub left: Option<(usize, String)>,
}

/// One tick: reads the mark and the woken jobs, serves every job with
/// something due (all at once, each as [`serve`] does), and moves the mark.
///
/// # Errors
///
/// Only when the store cannot say where to start ([`TickIndex::tick_start`]
/// failed): then nothing was claimed.
pub async fn tick<C, I>(
    plan: &TickPlan,
    coordinator: &Rc<C>,
    index: &I,
    jobs: &Jobs,
    platform: &Rc<dyn Platform>,
    options: &TickOptions<'_>,
) -> Result<TickReport, StoreError>
where
    C: Coordinator + ScheduleSource + 'static,
    I: TickIndex,
{
    let mut server = ServeAtOnce {
        coordinator,
        jobs,
        platform,
        options,
    };
    tick_with(plan, index, &**platform, options.max_jobs, &mut server).await
}

/// The runtime's own way of serving a tick: every job at once, each as
/// [`serve`] does (claim, run, record, until nothing is due).
struct ServeAtOnce<'a, C> {
    coordinator: &'a Rc<C>,
    jobs: &'a Jobs,
    platform: &'a Rc<dyn Platform>,
    options: &'a TickOptions<'a>,
}

impl<C: Coordinator + ScheduleSource + 'static> TickServer for ServeAtOnce<'_, C> {
    type Served = Served;
    type Refusal = std::convert::Infallible;

    fn admit(&self, _job: &TickJob) -> Result<(), Self::Refusal> {
        Ok(())
    }

    async fn serve(&mut self, _work: &TickWork, jobs: &[&TickJob]) -> Vec<Served> {
        let (coordinator, registry, platform) = (self.coordinator, self.jobs, self.platform);
        let serving = jobs.iter().map(|job| {
            let serve_options = ServeOptions {
                owner: self.options.owner,
                trigger: job.trigger(),
                retry_within: self.options.retry_within,
                more_due: self.options.more_due,
            };
            async move { serve(coordinator, &job.spec, registry, platform, &serve_options).await }
        });
        join_all(serving.collect()).await
    }

    fn claim_failed(served: &Served) -> bool {
        served.claim_error.is_some() && served.runs.is_empty()
    }

    async fn resolve(
        &self,
        woken: &WokenSchedule,
        now: Timestamp,
    ) -> Result<Option<Rc<JobSpec>>, String> {
        resolve_with(&**self.coordinator, woken, now).await
    }
}

/// One tick, served by `server`: reads the mark and the woken jobs (one
/// request), plans the jobs with something due, lets `server` admit and
/// serve them (at most `max_jobs`, none when the platform's deadline is too
/// close), and moves the mark past every slot whose job was served (one
/// request). A job the server refused does not hold the mark.
///
/// # Errors
///
/// Only when the store cannot say where to start ([`TickIndex::tick_start`]
/// failed): then nothing was claimed.
pub async fn tick_with<I, T>(
    plan: &TickPlan,
    index: &I,
    platform: &dyn Platform,
    max_jobs: Option<usize>,
    server: &mut T,
) -> Result<TickReport<T::Served, T::Refusal>, StoreError>
where
    I: TickIndex,
    T: TickServer,
{
    let wanted = server
        .woken_wanted()
        .map_or(MAX_WOKEN_PER_TICK, |n| n.clamp(1, MAX_WOKEN_PER_TICK));
    let start = index.tick_start(platform.now(), wanted).await?;
    #[cfg_attr(not(feature = "schedules"), allow(unused_mut))]
    let mut work = plan.work(&start);
    #[cfg(feature = "schedules")]
    let (unresolved, schedules_left) =
        resolve_schedules(&mut work, max_jobs, platform.now(), server).await;
    #[cfg(not(feature = "schedules"))]
    let (unresolved, schedules_left): (Vec<(String, String)>, Vec<String>) =
        (Vec::new(), Vec::new());
    let too_late = platform
        .deadline()
        .is_some_and(|d| d.cut_runs_at.duration_since(platform.now()) < START_MARGIN);
    let mut refused = Vec::new();
    let mut admitted: Vec<&TickJob> = Vec::new();
    for job in &work.jobs {
        match server.admit(job) {
            Ok(()) => admitted.push(job),
            Err(why) => refused.push(why),
        }
    }
    let mut left = None;
    let budget = max_jobs.unwrap_or(usize::MAX).min(admitted.len());
    let beyond = admitted.len() - budget + schedules_left.len();
    if beyond > 0 {
        let most = max_jobs.unwrap_or(budget);
        left = Some((
            beyond,
            format!("a tick serves at most {most} jobs here: the next tick serves the rest"),
        ));
    }
    let serving: &[&TickJob] = if too_late {
        left = Some((
            admitted.len(),
            "the invocation's deadline is too close to start: the next tick serves them".into(),
        ));
        &[]
    } else {
        &admitted[..budget]
    };
    let mut served = server.serve(&work, serving).await;
    served.truncate(serving.len());
    // By record name: a schedule's (`job/key`) is not its job's.
    let names: Vec<Cow<'_, str>> = admitted.iter().map(|j| j.spec.record_name()).collect();
    let mut unserved: HashSet<&str> = names[served.len()..].iter().map(AsRef::as_ref).collect();
    for (name, s) in names.iter().zip(&served) {
        if T::claim_failed(s) {
            unserved.insert(name.as_ref());
        }
    }
    for name in unresolved.iter().map(|(n, _)| n).chain(&schedules_left) {
        unserved.insert(name.as_str());
    }
    let failed = unserved
        .len()
        .saturating_sub(admitted.len() - served.len())
        .saturating_sub(unresolved.len());
    if failed > 0 && left.is_none() {
        left = Some((
            failed,
            "their claims failed on the store: the next tick plans them again".into(),
        ));
    }
    // Jobs left: a store that keeps them as wakes lets the mark pass their
    // slots. Otherwise the mark stays before the earliest, and the next
    // tick plans them again, with the jobs of that slot already served
    // (claims that find nothing to do).
    let planned_left: Vec<(&str, Timestamp)> = work
        .jobs
        .iter()
        .filter(|j| unserved.contains(j.spec.name.as_str()))
        .filter_map(|j| Some((j.spec.name.as_str(), j.planned?)))
        .collect();
    let woken_left: Vec<&str> = start
        .woken
        .iter()
        .map(String::as_str)
        .filter(|name| unserved.contains(name))
        .collect();
    let kept = index.leave(&planned_left, &woken_left);
    let mark = if kept {
        work.mark(&HashSet::new())
    } else {
        work.mark(&unserved)
    };
    let mark_error = if mark_write_needed(&work, index.tick_end_moves_only_the_mark(), mark) {
        index.tick_end(mark).await.err()
    } else {
        None
    };
    Ok(TickReport {
        work,
        served,
        refused,
        unresolved,
        schedules_left: schedules_left.len(),
        mark,
        mark_error,
        left,
    })
}

/// How old a mark may grow before a tick that planned no slot moves it
/// anyway: ticks a minute apart (the platforms' triggers) always write it;
/// ticks a fraction of a second apart (a runner woken by every enqueued
/// run) do not write it each time.
pub const MARK_REFRESH: SignedDuration = SignedDuration::from_secs(30);

/// Whether the tick must write its mark: it planned a slot (the mark
/// passes it, or is held before it), the store has no mark yet, the mark
/// is [`MARK_REFRESH`] old, or the store's `tick_end` does more than move
/// the mark ([`TickIndex::tick_end_moves_only_the_mark`]: the Cloudflare
/// tick object's lets go of the woken jobs). Otherwise the old mark stays
/// true (every slot at or before it was planned), and the window from it
/// to `mark` holds no slot of the manifest: the next tick plans that
/// window again and finds the same nothing. So the write is saved, and a
/// tick with no slot planned (nothing due, or only woken records: keyed
/// runs, retries) costs the mark's read alone.
fn mark_write_needed(work: &TickWork, moves_only_the_mark: bool, mark: Timestamp) -> bool {
    let planned = work.jobs.iter().any(|j| j.planned.is_some());
    let fresh = work
        .start_mark
        .is_some_and(|old| mark.duration_since(old) < MARK_REFRESH);
    planned || !fresh || !moves_only_the_mark
}

/// Reads the specs of the schedules the wake index named, all at once
/// (within what `max_jobs` leaves after the manifest's jobs), and adds the
/// live ones to the work, in the server's order ([`TickServer::order_woken`];
/// wake order by default). A deleted schedule has no wake and is not
/// named. Returns those whose read failed, with why, and those the bound
/// left no room for.
#[cfg(feature = "schedules")]
async fn resolve_schedules<T: TickServer>(
    work: &mut TickWork,
    max_jobs: Option<usize>,
    now: Timestamp,
    server: &T,
) -> (Vec<(String, String)>, Vec<String>) {
    server.order_woken(&mut work.schedules);
    let room = max_jobs
        .unwrap_or(usize::MAX)
        .saturating_sub(work.jobs.len())
        .min(work.schedules.len());
    let reads = work.schedules[..room]
        .iter()
        .map(|woken| server.resolve(woken, now))
        .collect();
    let mut unresolved = Vec::new();
    for (woken, read) in work.schedules.iter().zip(join_all(reads).await) {
        match read {
            Ok(Some(spec)) => work.jobs.push(TickJob {
                spec,
                planned: None,
                from_slot: false,
            }),
            Ok(None) => {}
            Err(why) => unresolved.push((woken.name.clone(), why)),
        }
    }
    let left = work.schedules[room..]
        .iter()
        .map(|woken| woken.name.clone())
        .collect();
    (unresolved, left)
}
