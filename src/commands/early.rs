//! `exec --json` prints exactly one summary object, also when the run never started: an
//! unreadable config, compile errors or `check` errors, a bad replay file, a missing task, a bad sandbox path
//! or a command line clap refused. `exec` records the message of such a failure here (it
//! returns at once after recording, before any summary is printed), and [`exec`] prints the
//! summary of the failure: `{"succeeded": false, "outcome": "not_started",
//! "error_message": ..., "exit_code": 2, ...}`.

use std::cell::RefCell;
use std::ffi::OsString;
use std::path::Path;

use fuseraft_compiler::{Compiled, Diagnostic, SourceMap};
use serde_json::Value as Json;

use super::exit;
use crate::cli::ExecArgs;
use crate::render::Style;
use crate::terminal::json_line;

thread_local! {
    static FAILURE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Records why the run could not start (the first reason is kept).
pub fn record(message: &str) {
    FAILURE.with(|failure| {
        failure
            .borrow_mut()
            .get_or_insert_with(|| message.to_string());
    });
}

/// Records a compilation that produced no program: its first error, located.
pub fn record_compile_failure(compiled: &Compiled) {
    record_errors(
        &compiled.diagnostics,
        &compiled.sources,
        "the workflow did not compile",
    );
}

/// Records the first error among `diagnostics`, located, and how many more there are; or
/// `otherwise` when none is an error.
pub fn record_errors(diagnostics: &[Diagnostic], sources: &SourceMap, otherwise: &str) {
    let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).collect();
    let Some(first) = errors.first() else {
        record(otherwise);
        return;
    };
    let more = match errors.len() {
        1 => String::new(),
        n => format!(
            " (and {} more error{})",
            n - 1,
            if n == 2 { "" } else { "s" }
        ),
    };
    record(&format!("{}{more}", located(first, sources)));
}

/// Records a diagnostic that stopped the run (a bad replay file), located.
pub fn record_diagnostic(diag: &Diagnostic, sources: &SourceMap) {
    record(&located(diag, sources));
}

/// `FILE:LINE:COLUMN: message`, or the message alone when it has no location.
fn located(diag: &Diagnostic, sources: &SourceMap) -> String {
    let place = crate::report::primary(diag)
        .and_then(|label| crate::report::position(sources, label.span))
        .map(|at| format!("{}:{}:{}: ", at.file, at.line, at.column))
        .unwrap_or_default();
    format!("{place}{}", diag.message)
}

/// Runs `fuseraft exec`; with `--json`, a run that failed before it started still prints
/// its one summary object.
pub fn exec(args: &ExecArgs, style: Style) -> u8 {
    FAILURE.with(|failure| failure.borrow_mut().take());
    let code = super::exec::run(args, style);
    let failure = FAILURE.with(|failure| failure.borrow_mut().take());
    if let (true, Some(message)) = (args.json, failure) {
        let task = args.task.as_deref();
        let object = summary(Some(&args.input), task, &message, code);
        if let Some(failed) = super::print_or_fail(&format!("{}\n", json_line(&object))) {
            return failed;
        }
    }
    code
}

/// The summary of a run that never started, with the keys of a finished run's summary.
pub fn summary(input: Option<&Path>, task: Option<&str>, message: &str, code: u8) -> Json {
    let config = input.map(|path| {
        std::fs::canonicalize(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string()
    });
    super::exec::summary::RunSummary::not_started(config, task, message, code).json()
}

/// For a command line clap refused: when it is `exec --json` (or `run --json`), the summary
/// object of the failure, else `None`.
pub fn refused_command_line(args: &[OsString], error: &str) -> Option<String> {
    // The subcommand is the first word that is neither a flag nor `--color`'s value.
    let first_word = args
        .iter()
        .enumerate()
        .find(|(at, arg)| {
            !arg.to_string_lossy().starts_with('-') && (*at == 0 || args[at - 1] != "--color")
        })
        .map(|(_, arg)| arg);
    let is_exec = first_word.is_some_and(|word| word == "exec" || word == "run");
    if !is_exec || !args.iter().any(|arg| arg == "--json") {
        return None;
    }
    let message = error
        .lines()
        .next()
        .unwrap_or(error)
        .trim_start_matches("error: ")
        .to_string();
    Some(format!(
        "{}\n",
        json_line(&summary(None, None, &message, exit::USAGE))
    ))
}
