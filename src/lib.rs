//! The `fuseraft` command line: the only place that knows clap, the terminal, environment
//! variables and exit codes. The work is done by `fuseraft-compiler` and `fuseraft-vm`.

pub mod cli;
pub mod commands;
pub mod disk;
pub mod events;
pub mod render;
pub mod replay_file;
pub mod report;
pub mod scenario;
pub mod session;
pub mod terminal;
pub mod ui;

use std::io::IsTerminal;

use cli::{Cli, ColorChoice, Command};

/// Runs a parsed command line and returns the process exit code.
pub fn run(cli: &Cli) -> u8 {
    let color = match cli.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let width = if color { 100 } else { 80 };
    let style = render::Style { color, width };
    match &cli.command {
        Command::Compile(args) => commands::compile::run(args, style),
        Command::Check(args) => commands::check::run(args, style),
        Command::Exec(args) => commands::exec::run(args, style),
        Command::Test(args) => commands::test::run(args, style),
        Command::Sessions(args) => commands::sessions::run(args),
        Command::Ui(args) => commands::ui::run(args),
    }
}
