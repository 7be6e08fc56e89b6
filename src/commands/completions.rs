//! `fuseraft completions SHELL`: the completion script of bash, zsh, fish, elvish or
//! PowerShell, generated from the clap types by `clap_complete`.

use clap::CommandFactory;

use super::exit;
use crate::cli::{Cli, CompletionsArgs};

pub fn run(args: &CompletionsArgs) -> u8 {
    super::print_or_fail(&script(args.shell)).unwrap_or(exit::OK)
}

/// The completion script for `shell`.
pub fn script(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "fuseraft", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}
