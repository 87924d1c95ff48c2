//! One module per subcommand, each with the command's entry point (`exec`;
//! `pause` and `resume` share one module), and [`exec`], which dispatches
//! a parsed command line to it. The arguments are defined in `cli.rs`.

mod backfill;
mod check;
mod completions;
mod dlq;
mod explain;
mod init;
mod new;
mod next;
mod pause;
mod render;
mod run;
mod serve;
mod status;
mod sync;
mod tick;
mod translate;
mod trigger;
mod validate;

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
        Command::Trigger(args) => trigger::exec(args),
        Command::Render(args) => render::exec(args),
        Command::Check(args) => check::exec(args),
        Command::Sync(args) => sync::exec(args),
        Command::New(args) => new::exec(args),
        Command::Completions { shell } => completions::exec(shell),
    }
}
