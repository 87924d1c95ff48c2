//! `cronslot trigger`: run the current slot of a job now, once.
//!
//! On a SQLite or DynamoDB store this claims the job's latest slot at or
//! before now as a runner would, and runs it here with the runtime's run
//! loop and the local runner's process runner (the same code as `cronslot
//! run`: its process group, time limit, environment, exit codes and stderr
//! excerpt), which records the outcome; on a Worker's admin URL the Worker
//! claims, runs and records the slot itself.
//!
//! Exit codes: 0 the run succeeded; 1 nothing ran (the slot already ran,
//! is running, or the job is paused), the run failed, or the store failed;
//! 2 bad input, or a job kind that cannot be run here.
//!
//! `--format json` prints the admin route's [`TriggerDoc`] for every
//! outcome it describes, failures included (the exit code and the stderr
//! message stay those of the text output); a failure before an outcome
//! (bad input, a store that cannot be opened) prints no document.

use std::io::Write as _;
use std::rc::Rc;
use std::time::Instant;

use clap::Args;
use cronslot_core::coord::Trigger as ClaimTrigger;
use cronslot_core::coord::{Claim, Coordinator, FailOutcome, Idle};
use cronslot_core::manifest::{Action, JobSpec};
use cronslot_runner::{Clock, LocalPlatform};
use cronslot_runtime::admin::{
    TriggerDoc, TriggerKind, TriggerOutcome, trigger_doc, trigger_outcome,
};
use cronslot_runtime::{Jobs, Outcome, Platform, run_lease};

use crate::cli::{Format, JobArgs};
use crate::exit::{Failure, coord_failure};
use crate::format::{ERROR_CELL_CHARS, format_took, one_line, shell_words, slot_id, to_json, utc};
use crate::store::admin::AdminStore;
use crate::store::{Backend, Session, wait};

/// `trigger`: the job, and how to say what happened.
#[derive(Debug, Args)]
pub struct TriggerArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Output format: text, or json (the admin API's trigger document,
    /// printed also when the run failed or nothing ran).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// `cli-<hostname>-<pid>`: who holds a lease taken by `trigger`.
fn owner_id() -> String {
    let host = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "local".to_string());
    format!("cli-{host}-{}", std::process::id())
}

/// Prints the trigger document when `--format json` asked for it.
fn print_doc(format: Format, doc: &TriggerDoc) -> Result<(), Failure> {
    if format == Format::Json {
        println!("{}", to_json(doc)?);
    }
    Ok(())
}

pub fn exec(args: TriggerArgs) -> Result<(), Failure> {
    let format = args.format;
    let args = &args.job;
    let (session, key) = Session::open_operand(&args.store, &args.job, args.key.as_deref())?;
    let spec = session.operand(&args.job, key.as_ref())?;
    let spec: &JobSpec = &spec;
    if let Backend::Admin(worker) = &session.backend {
        // The Worker runs the job (it has the functions and the fetch).
        return on_worker(worker, &session.store, spec, format);
    }
    // Refuse what this command cannot run before claiming anything: a
    // claimed slot that nobody runs would wait for its lease to expire.
    let refused = |reason: String, message: String| -> Result<(), Failure> {
        let doc = trigger_doc(spec, &TriggerOutcome::CannotRun { reason });
        print_doc(format, &doc)?;
        Err(Failure::bad_input(message))
    };
    let argv = match &spec.action {
        Action::Command { argv, .. } => argv,
        Action::Http { url, .. } => {
            return refused(
                format!("it is an http job ({url}), and `cronslot trigger` runs command jobs only"),
                format!(
                    "error: job {:?} is an http job ({url}); `cronslot trigger` runs command jobs only \
                     (`cronslot run` runs http jobs on their schedule). Nothing was claimed.",
                    spec.name.as_str()
                ),
            );
        }
        Action::Function => {
            return refused(
                "it runs a Rust function, which the cronslot CLI does not contain".to_string(),
                format!(
                    "error: job {:?} runs a Rust function registered in your own program, which the cronslot CLI \
                     does not contain; `cronslot trigger` runs command jobs only. Nothing was claimed.",
                    spec.name.as_str()
                ),
            );
        }
    };
    match &session.backend {
        Backend::Store(c) => {
            // The run is timed by the clock that judges its lease.
            let clock = Clock::real().timed_by(c.store());
            trigger_on(c, &session, spec, argv, clock, format)
        }
        Backend::Admin(worker) => on_worker(worker, &session.store, spec, format),
    }
}

fn trigger_on<C: Coordinator + 'static>(
    c: &Rc<C>,
    session: &Session,
    spec: &JobSpec,
    argv: &[String],
    clock: Clock,
    format: Format,
) -> Result<(), Failure> {
    let job = spec.name.as_str();
    let store = &session.store;
    let owner = owner_id();
    let claim = match wait(c.claim(spec, session.now, ClaimTrigger::Manual, &owner)) {
        Ok(claim) => claim,
        Err(e) => {
            let failure = coord_failure(store, "claiming a slot of", job, &e);
            print_doc(format, &trigger_doc(spec, &TriggerOutcome::ClaimFailed(e)))?;
            return Err(failure);
        }
    };
    let lease = match claim {
        Claim::Claimed(lease) => lease,
        Claim::Idle(idle) => {
            let message = idle_message(&**c, session, spec, &idle);
            let mut doc = trigger_doc(spec, &TriggerOutcome::NotClaimed(idle));
            // This command's own account of why, which reads the store.
            doc.message.clone_from(&message);
            print_doc(format, &doc)?;
            return Err(Failure::problem(message));
        }
    };
    let id = slot_id(spec, lease.slot);
    if format == Format::Text {
        println!(
            "claimed {id} (attempt {}, fence {}, owner {owner}, lease until {}); running: {}",
            lease.attempt,
            lease.fence,
            utc(lease.expires_at),
            shell_words(argv)
        );
        let _ = std::io::stdout().flush();
    }
    let started = Instant::now();
    let platform: Rc<dyn Platform> = Rc::new(LocalPlatform::new(clock));
    let spec = Rc::new(spec.clone());
    let report = wait(run_lease(c, &spec, lease.clone(), &Jobs::new(), &platform));
    let took = format_took(started.elapsed());
    if format == Format::Json {
        let mut doc = trigger_doc(&spec, &trigger_outcome(lease.clone(), report.clone()));
        doc.duration_ms = Some(report.duration_ms());
        print_doc(format, &doc)?;
    }
    let error = report.job_error.as_ref();
    let what = |e: &cronslot_runtime::JobError| {
        let kind = if e.is_permanent() {
            "permanent"
        } else {
            "transient"
        };
        format!("({kind}): {}", e.message())
    };
    match report.outcome {
        Outcome::Succeeded => {
            if format == Format::Text {
                println!(
                    "{id} succeeded in {took}; recorded with fence {}",
                    lease.fence
                );
            }
            Ok(())
        }
        Outcome::Retrying { at } => Err(Failure::problem(format!(
            "error: {id} failed in {took} {}\nattempt {} is due at {} (a runner on the store retries it)",
            error.map(what).unwrap_or_default(),
            lease.attempt + 1,
            utc(at)
        ))),
        Outcome::Dead => Err(Failure::problem(format!(
            "error: {id} failed in {took} {}\nthe slot is now a dead letter (cronslot dlq list --job {job}; cronslot dlq redrive {job} --slot {})",
            error.map(what).unwrap_or_default(),
            utc(lease.slot)
        ))),
        _ => {
            let how = match error {
                None => "succeeded".to_string(),
                Some(e) => format!("failed {}", what(e)),
            };
            Err(Failure::problem(format!(
                "error: {id} {how} in {took}, but store {store} did not record it: {}",
                report.record_error.as_deref().unwrap_or("no reason given")
            )))
        }
    }
}

/// Why a trigger found nothing to run, with what to do about it.
fn idle_message<C: Coordinator>(c: &C, session: &Session, spec: &JobSpec, idle: &Idle) -> String {
    let job = spec.name.as_str();
    match idle {
        Idle::Paused => format!("job {job} is paused; nothing ran (cronslot resume {job} first)"),
        Idle::Busy { live } => format!(
            "job {job} already has {live} run{} in progress and its overlap policy ({}) allows no more; nothing ran (cronslot status --job {job})",
            if *live == 1 { "" } else { "s" },
            spec.overlap
        ),
        Idle::InProgress { slot, fence } => format!(
            "the current slot {} is running now (fence {fence}); nothing ran",
            slot_id(spec, *slot)
        ),
        Idle::RetryLater { slot, not_before } => format!(
            "the current slot {} waits for its retry at {}; nothing ran",
            slot_id(spec, *slot),
            utc(*not_before)
        ),
        Idle::NotYetDue { slot } => {
            format!("slot {} is not due yet; nothing ran", slot_id(spec, *slot))
        }
        Idle::NothingDue { next_slot, .. } => match next_slot {
            Some(t) => format!(
                "job {job} has no slot at or before now to run; its next slot is {}",
                utc(*t)
            ),
            None => format!("job {job} has no slot to run: its schedule has none left"),
        },
        Idle::AlreadyResolved { slot } => {
            let id = slot_id(spec, *slot);
            let Ok(state) = wait(c.status(spec, session.now)) else {
                return format!("the current slot {id} is already resolved; nothing ran");
            };
            if state.paused {
                return format!("job {job} is paused; nothing ran (cronslot resume {job} first)");
            }
            if let Some(run) = state
                .history
                .iter()
                .rev()
                .chain(state.last_success.iter())
                .find(|r| r.slot == *slot && r.outcome.succeeded())
            {
                return format!(
                    "the current slot {id} already ran: it succeeded at {} (fence {}); nothing ran",
                    utc(run.finished_at),
                    run.fence
                );
            }
            if let Some(d) = state.dead.iter().find(|d| d.slot == *slot) {
                return format!(
                    "the current slot {id} already ran and is a dead letter ({} attempt{}: {}); \
                     send it back with: cronslot dlq redrive {job} --slot {}",
                    d.attempts,
                    if d.attempts == 1 { "" } else { "s" },
                    one_line(&d.last_error, ERROR_CELL_CHARS),
                    utc(*slot)
                );
            }
            if *slot < state.created_at {
                return format!(
                    "the current slot {id} came before job {job} was first recorded in this store ({}): \
                     cronslot does not run slots from before a job existed. To run it anyway: \
                     cronslot backfill {job} --from {t} --to {t}, then cronslot trigger {job}",
                    utc(state.created_at),
                    t = utc(*slot)
                );
            }
            format!(
                "the current slot {id} is already resolved (it ran, or was missed or skipped: cronslot status --job {job}); nothing ran"
            )
        }
        // A reason newer than this CLI.
        other => format!("job {job} has nothing to run now ({other:?}); nothing ran"),
    }
}

/// `cronslot trigger JOB --store https://…`: the Worker claims the current
/// slot, runs it and records the outcome. Exit 0 when the run succeeded, 1
/// when nothing ran or it failed, 2 when the Worker cannot run the job.
fn on_worker(
    store: &AdminStore,
    label: &str,
    spec: &JobSpec,
    format: Format,
) -> Result<(), Failure> {
    let job = spec.name.as_str();
    let doc = wait(store.trigger(spec)).map_err(|e| coord_failure(label, "triggering", job, &e))?;
    print_doc(format, &doc)?;
    match doc.outcome {
        TriggerKind::Succeeded => {
            if format == Format::Text {
                println!("{} (run by the Worker at {label})", doc.message);
            }
            Ok(())
        }
        TriggerKind::CannotRun => Err(Failure::bad_input(format!("error: {}", doc.message))),
        TriggerKind::Failed => {
            let hint = match &doc.fate {
                Some(FailOutcome::Dead) => format!(
                    "\nsend it back with: cronslot dlq redrive {job} --slot {} --store {label} --token-env {}",
                    doc.slot.map(|s| s.to_string()).unwrap_or_default(),
                    store.token_env()
                ),
                _ => String::new(),
            };
            Err(Failure::problem(format!("error: {}{hint}", doc.message)))
        }
        TriggerKind::NotClaimed
        | TriggerKind::ClaimFailed
        | TriggerKind::NotRecorded
        | TriggerKind::Unknown => Err(Failure::problem(format!("error: {}", doc.message))),
        // An outcome newer than this CLI: not a success.
        _ => Err(Failure::problem(format!("error: {}", doc.message))),
    }
}
