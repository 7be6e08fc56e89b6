//! Scenario testing (`fuseraft test`): scripted replies in, a reviewed routing trace out.
//!
//! ```text
//!  discover ─▶ spec::load ─▶ run::run (replay provider, temp work dir) ─▶ trace::render
//!                                         │                                   │
//!                                  route::infer (which exit)        snapshot::check (diff)
//!                                         ▼                                   ▼
//!                                  coverage::collect                 junit / human report
//! ```
//!
//! Each file holds one idea; [`run_all`] ties them together and runs scenarios on a bounded
//! pool of threads, each with its own current-thread tokio runtime.

pub mod coverage;
pub mod diff;
pub mod discover;
pub mod junit;
pub mod pool;
pub mod route;
pub mod run;
pub mod snapshot;
pub mod spec;
pub mod trace;
pub mod within;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::render::{self, Style};

/// What became of one scenario.
#[derive(Debug)]
pub enum Verdict {
    /// The trace equals the snapshot.
    Passed,
    /// The trace differs from the snapshot; `diff` is unified, `pending` holds the new trace.
    Changed { diff: String, pending: PathBuf },
    /// No snapshot yet; the trace was written to `pending` for review.
    Missing { pending: PathBuf },
    /// `--accept` wrote the trace as the snapshot (`created`: there was none before).
    Accepted { created: bool },
    /// The scenario could not run: unreadable, invalid, its config does not compile, or an
    /// IO error while writing snapshots. The message is rendered (file, line, column).
    Error { message: String, short: String },
}

impl Verdict {
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::Changed { .. } | Verdict::Missing { .. })
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Verdict::Error { .. })
    }
}

/// One scenario's result.
#[derive(Debug)]
pub struct Report {
    /// The scenario file as discovered (relative to where `fuseraft test` ran).
    pub path: PathBuf,
    pub verdict: Verdict,
    /// The rendered trace (empty when the scenario could not run).
    pub trace: String,
    /// Which exits the run took, for `--coverage`.
    pub coverage: Option<coverage::Taken>,
    pub elapsed: Duration,
}

/// Settings of one `fuseraft test` invocation.
#[derive(Copy, Clone, Debug)]
pub struct Settings {
    pub accept: bool,
    /// Collect which exits each run took.
    pub coverage: bool,
    pub style: Style,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// `--trust-mcp`: start the MCP servers a config declares.
    pub trust_mcp: bool,
}

/// Runs every scenario (in parallel, results in input order). A scenario that fails or
/// errors never stops the others.
pub fn run_all(scenarios: &[PathBuf], settings: Settings) -> Vec<Report> {
    pool::map(scenarios, settings.threads, |path| {
        let started = Instant::now();
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_one(path, settings)));
        let mut report = outcome.unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            let message = format!("{}: the scenario crashed: {what}", path.display());
            Report {
                path: path.clone(),
                verdict: Verdict::Error {
                    short: message.clone(),
                    message,
                },
                trace: String::new(),
                coverage: None,
                elapsed: Duration::ZERO,
            }
        });
        report.elapsed = started.elapsed();
        report
    })
}

fn error_report(path: &Path, message: String, short: String) -> Report {
    Report {
        path: path.to_path_buf(),
        verdict: Verdict::Error { message, short },
        trace: String::new(),
        coverage: None,
        elapsed: Duration::ZERO,
    }
}

fn run_one(path: &Path, settings: Settings) -> Report {
    let scenario = match spec::load(path) {
        Ok(scenario) => scenario,
        Err(failure) => {
            return error_report(
                path,
                render::human(&failure.diag, &failure.sources, settings.style),
                render::short(&failure.diag, &failure.sources),
            )
        }
    };
    let ran = match run::run(&scenario, settings.trust_mcp) {
        Ok(ran) => ran,
        Err(failure) => {
            return error_report(path, failure.message, failure.short);
        }
    };
    let trace = trace::render(&ran);
    let verdict = match snapshot::check(path, &trace, settings.accept) {
        Ok(verdict) => verdict,
        Err(error) => {
            let message = format!("{}: snapshot refused: {error}", path.display());
            Verdict::Error {
                short: message.clone(),
                message,
            }
        }
    };
    let coverage = settings.coverage.then(|| coverage::taken(&scenario, &ran));
    Report {
        path: path.to_path_buf(),
        verdict,
        trace,
        coverage,
        elapsed: Duration::ZERO,
    }
}
