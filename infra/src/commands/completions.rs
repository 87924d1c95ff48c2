//! `cronslot completions SHELL`: the shell completion script, from the
//! command-line definition.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::Cli;
use crate::exit::Failure;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn exec(args: CompletionsArgs) -> Result<(), Failure> {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "cronslot", &mut std::io::stdout());
    Ok(())
}
