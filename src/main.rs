//! The `fuseraft` binary: parse the command line, run, exit with the command's code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = match fuseraft::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return std::process::ExitCode::from(code);
        }
    };
    std::process::ExitCode::from(fuseraft::run(&cli))
}
