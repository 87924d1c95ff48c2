//! One module per subcommand, as cargo's `commands/` has: each holds the
//! command's arguments (`XArgs`, a clap `Args` struct) and its entry point
//! (`exec`; `pause` and `resume` share one module), and [`exec`] dispatches
//! a parsed command line to it. The top-level command and the argument
//! types several commands share are in `cli.rs`.

pub mod backfill;
pub mod check;
pub mod completions;
pub mod dlq;
pub mod explain;
pub mod init;
pub mod new;
pub mod next;
pub mod pause;
pub mod render;
pub mod run;
pub mod runs;
pub mod schedule;
pub mod serve;
pub mod status;
pub mod sync;
pub mod tick;
pub mod translate;
pub mod trigger;
pub mod validate;

use crate::cli::Command;
use crate::exit::Failure;

/// Runs the command.
pub fn exec(command: Command) -> Result<(), Failure> {
    match command {
        Command::Next(args) => next::exec(args),
        Command::Explain(args) => explain::exec(args),
        Command::Translate(args) => translate::exec(args),
        Command::Validate(args) => validate::exec(args),
        Command::Run(args) => run::exec(args),
        Command::Tick(args) => tick::exec(args),
        Command::Serve(args) => serve::exec(args),
        Command::Init(args) => init::exec(args),
        Command::Status(args) => status::exec(args),
        Command::Dlq(args) => dlq::exec(args),
        Command::Pause(args) => pause::pause(args),
        Command::Resume(args) => pause::resume(args),
        Command::Backfill(args) => backfill::exec(args),
        Command::Schedule(args) => schedule::exec(args),
        Command::Runs(args) => runs::exec(args),
        Command::Trigger(args) => trigger::exec(args),
        Command::Render(args) => render::exec(args),
        Command::Check(args) => check::exec(args),
        Command::Sync(args) => sync::exec(args),
        Command::New(args) => new::exec(args),
        Command::Completions(args) => completions::exec(args),
    }
}
