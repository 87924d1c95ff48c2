//! The job registry: Rust functions by job name, checked against the
//! manifest once, at start-up, with the same words on every platform.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use cronslot_core::manifest::{Action, JobSpec, JobTemplate};

use crate::platform::{LocalFuture, Platform};
use crate::{JobResult, RunContext};

/// A registered function, boxed. `Send + Sync` because the local runner
/// shares one registry among its worker threads; the futures it returns
/// stay on the thread that polls them.
pub(crate) type JobFn = Arc<dyn Fn(RunContext) -> LocalFuture<'static, JobResult> + Send + Sync>;

/// One registered function and its time limit.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) run: JobFn,
    /// `None`: the job's lease.
    pub(crate) timeout: Option<Duration>,
}

/// The Rust functions of a deployment, by job name. A manifest job with
/// neither `command` nor `http` runs the function registered under its
/// name; every platform runs the same functions with the same
/// [`RunContext`].
///
/// Registering is infallible so that it chains; mistakes (a name
/// registered twice, a function without a job, a job without a function)
/// are reported together by [`Jobs::check`], which every platform calls
/// before it runs anything.
#[derive(Clone, Default)]
pub struct Jobs {
    /// By name, sorted, one entry per name. (A sorted list rather than a
    /// map: a handful of entries, and one map type fewer in a Worker.)
    registered: Vec<(String, Registered)>,
    twice: Vec<String>,
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

impl Jobs {
    /// An empty registry.
    pub fn new() -> Jobs {
        Jobs::default()
    }

    /// Registers `run` for the manifest job `name`. A run may take the
    /// job's lease at most (the runner stops it there and counts a
    /// transient failure) unless the platform's deadline comes first.
    pub fn register<F, Fut>(self, name: &str, run: F) -> Jobs
    where
        F: Fn(RunContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + 'static,
    {
        self.insert(name, None, run)
    }

    /// Like [`Jobs::register`] with another time limit. A run longer than
    /// its lease keeps the lease by heartbeats, where the platform allows
    /// a run that long at all.
    pub fn register_with_timeout<F, Fut>(self, name: &str, timeout: Duration, run: F) -> Jobs
    where
        F: Fn(RunContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + 'static,
    {
        self.insert(name, Some(timeout), run)
    }

    fn insert<F, Fut>(mut self, name: &str, timeout: Option<Duration>, run: F) -> Jobs
    where
        F: Fn(RunContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + 'static,
    {
        let run: JobFn = Arc::new(move |ctx| Box::pin(run(ctx)));
        self.put(name, Registered { run, timeout });
        self
    }

    /// Registers `entry` under `name`, replacing (and noting) an earlier one.
    fn put(&mut self, name: &str, entry: Registered) {
        match self.position(name) {
            Ok(i) => {
                self.registered[i].1 = entry;
                if !self.twice.iter().any(|n| n == name) {
                    self.twice.push(name.to_string());
                }
            }
            Err(i) => self.registered.insert(i, (name.to_string(), entry)),
        }
    }

    /// Where `name` is in the sorted list, or where it belongs.
    fn position(&self, name: &str) -> Result<usize, usize> {
        self.registered
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    /// Whether a function is registered under `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.registered.iter().map(|(n, _)| n.as_str())
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Registered> {
        self.position(name).ok().map(|i| &self.registered[i].1)
    }

    /// Checks the registry against the manifest's jobs and against what
    /// `platform` can run. Every problem is reported at once: a name
    /// registered twice, a function job with no function, a function with
    /// no job (a typo that would leave the real job without its code), a
    /// function registered for an `http` or `command` job, and a `command`
    /// job on a platform without processes.
    pub fn check(&self, specs: &[JobSpec], platform: &dyn Platform) -> Result<(), RegistryError> {
        self.check_all(specs, &[], platform)
    }

    /// [`check`](Jobs::check) against the manifest's jobs and its dynamic
    /// jobs (`templates`), whose schedules run the same actions.
    pub fn check_all(
        &self,
        specs: &[JobSpec],
        templates: &[JobTemplate],
        platform: &dyn Platform,
    ) -> Result<(), RegistryError> {
        let mut problems = Vec::new();
        for name in &self.twice {
            problems.push(format!(
                "job {name:?} is registered more than once; register each job's function once"
            ));
        }
        let jobs = || {
            specs
                .iter()
                .map(|s| (s.name.as_str(), &s.action))
                .chain(templates.iter().map(|t| (t.name.as_str(), &t.action)))
        };
        for (name, action) in jobs() {
            let registered = self.contains(name);
            match action {
                Action::Function if !registered => problems.push(format!(
                    "job {name:?} runs a Rust function, but none is registered under that name; \
                     register one (Jobs::register) or give the job {} in the manifest",
                    if platform.runs_commands() {
                        "a command or an http request"
                    } else {
                        "an http request"
                    }
                )),
                Action::Command { .. } if !platform.runs_commands() => problems.push(format!(
                    "job {name:?} is a command job, and {} has no processes to run it; \
                     use a Rust function or an http job",
                    platform.name()
                )),
                Action::Command { .. } | Action::Http { .. } if registered => {
                    let kind = if matches!(action, Action::Http { .. }) {
                        "an http"
                    } else {
                        "a command"
                    };
                    problems.push(format!(
                        "job {name:?} is {kind} job, but a function is also registered under its name"
                    ));
                }
                _ => {}
            }
        }
        for name in self.names() {
            if !jobs().any(|(job, _)| job == name) {
                problems.push(format!(
                    "a function is registered for {name:?}, but the manifest has no such job"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(RegistryError { problems })
        }
    }
}

/// Why the registered functions and the manifest do not fit together.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryError {
    problems: Vec<String>,
}

impl RegistryError {
    /// One sentence per problem.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "the jobs do not match the manifest: {one}"),
            many => {
                f.write_str("the jobs do not match the manifest:")?;
                for p in many {
                    write!(f, "\n- {p}")?;
                }
                Ok(())
            }
        }
    }
}

/// The same text as `Display`: a `main` that returns this error prints it
/// with `Debug`.
impl fmt::Debug for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for RegistryError {}
