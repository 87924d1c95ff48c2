//! `cronslot completions SHELL`: the shell completion script, from the
//! command-line definition.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;
use crate::exit::Failure;

pub fn exec(shell: Shell) -> Result<(), Failure> {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "cronslot", &mut std::io::stdout());
    Ok(())
}
