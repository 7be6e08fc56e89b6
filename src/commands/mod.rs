//! One module per subcommand. Each returns the process exit code.

pub mod audit;
pub mod check;
pub mod compile;
pub mod completions;
pub mod config;
pub mod early;
pub mod eval;
pub mod exec;
pub mod init;
pub mod inputs;
pub mod log;
pub mod man;
pub mod models;
pub mod plugins;
pub mod remote;
pub mod run_line;
pub mod schedule;
pub mod schema;
pub mod sessions;
pub mod sessions_remove;
mod streamed;
pub mod test;
pub mod ui;

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit codes shared by every command (README.md lists them per command).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Findings: the input has errors, or a run stopped stuck, over budget or on error.
    pub const FINDINGS: u8 = 1;
    /// Usage error or unreadable input.
    pub const USAGE: u8 = 2;
    /// Standard output was closed under a write that nothing could catch (128 + SIGPIPE,
    /// what a shell reports for a process that SIGPIPE ended).
    pub const CLOSED_STDOUT: u8 = 141;
}

/// Says what was wrong with the command line (control characters neutralised); the usage
/// exit code.
pub fn usage(message: &str) -> u8 {
    eprintln!("error: {}", crate::terminal::neutralise(message));
    exit::USAGE
}

/// Set once a write to standard output found its reader gone.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes a command's result to standard output. A reader that went away (`| head -1`) is
/// not an error: nothing more is written, and the command ends with the exit code it would
/// have had. Any other failure (a full disk behind `> file`) is returned.
pub fn print(text: &str) -> std::io::Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        other => other,
    }
}

/// Whether standard output was found closed.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// [`print`], reporting a failed write on standard error: the exit code of the failure, or
/// `None` when the text was written (or its reader is gone).
pub fn print_or_fail(text: &str) -> Option<u8> {
    match print(text) {
        Ok(()) => None,
        Err(error) => {
            eprintln!("error: cannot write to standard output: {error}");
            Some(exit::USAGE)
        }
    }
}
