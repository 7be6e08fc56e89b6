//! The `fuseraft` command line: the only place that knows clap, the terminal, environment
//! variables and exit codes. The work is done by `fuseraft-compiler` and `fuseraft-vm`.

pub mod audit;
pub mod cli;
pub mod commands;
pub mod disk;
pub mod eval;
pub mod events;
pub mod mcp_trust;
pub mod render;
pub mod replay_file;
pub mod report;
pub mod scenario;
pub mod serve;
pub mod session;
pub mod stream_text;
pub mod telemetry;
pub mod terminal;
pub mod ui;

use std::io::IsTerminal;

use cli::{Cli, ColorChoice, Command};

/// Runs a parsed command line and returns the process exit code.
pub fn run(cli: &Cli) -> u8 {
    let forced = match cli.color {
        ColorChoice::Always => Some(true),
        ColorChoice::Never => Some(false),
        ColorChoice::Auto => None,
    };
    let mut style = render::Style {
        color: false,
        width: 80,
        forced,
    };
    style.color = style.colour_for(std::io::stderr().is_terminal());
    if style.color {
        style.width = 100;
    }
    match &cli.command {
        Command::Compile(args) => {
            let input = commands::inputs::workflow_in(&args.input);
            commands::compile::run(
                &cli::CompileArgs {
                    input,
                    ..args.clone()
                },
                style,
            )
        }
        Command::Check(args) => commands::check::run(args, style),
        Command::Exec(args) => {
            let mut args = match commands::run_line::read((**args).clone()) {
                Ok(args) => args,
                Err(message) => {
                    eprintln!("error: {message}");
                    return commands::exit::USAGE;
                }
            };
            args.input = commands::inputs::workflow_in(&args.input);
            commands::early::exec(&args, style)
        }
        Command::Test(args) => commands::test::run(args, style),
        Command::Eval(args) => commands::eval::run(args, style),
        Command::Sessions(args) => commands::sessions::run(args),
        Command::Init(args) => commands::init::run(args),
        Command::Completions(args) => commands::completions::run(args),
        Command::Schema => commands::schema::run(),
        Command::Plugins(args) => commands::plugins::run(args),
        Command::Models(args) => commands::models::run(args),
        Command::Log(args) => commands::log::run(args),
        Command::Audit(args) => commands::audit::run(args),
        Command::Config(args) => commands::config::run(args, style),
        Command::Man(args) => commands::man::run(args),
        Command::Ui(args) => commands::ui::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Approve(args) => commands::remote::approve(args),
        Command::Schedule(args) => commands::schedule::run(args, style),
    }
}

/// A write to a closed standard output that a command did not catch (a `println!`) ends
/// the process quietly with [`commands::exit::CLOSED_STDOUT`] instead of a panic's message
/// and exit code 101. Other panics are reported as before.
pub fn quiet_closed_stdout() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        // std's `print!` family panics with "failed printing to stdout: <error>"; EPIPE is
        // os error 32 on Linux and macOS alike.
        if message.starts_with("failed printing to stdout") && message.contains("os error 32") {
            std::process::exit(i32::from(commands::exit::CLOSED_STDOUT));
        }
        report(info);
    }));
}
