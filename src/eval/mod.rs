//! Eval suites (`fuseraft eval run`): how a workflow does against a real model, measured.
//!
//! ```text
//!  suite::load ─▶ prepare (compile, check, MCP, judge) ─▶ run × --repeat, up to --jobs at once
//!  (case.rs)                                              (a project copy each, the VM's driver)
//!                                                                  │
//!                                score (checks) + judge ◀──────────┘
//!                                        │
//!                 stats (pass rate, Wilson 95%) ─▶ baseline (regressions) ─▶ human | junit | json
//! ```
//!
//! `fuseraft test` pins routing with scripted replies and snapshots; an eval runs the real
//! model (or, with `--replay`, a recording of one) several times and reports how often each
//! case passes. [`run_all`] ties the parts together.

pub mod baseline;
pub mod case;
pub mod copy;
pub mod human;
pub mod judge;
pub mod junit;
pub mod prepare;
pub mod report;
pub mod run;
pub mod scoped;
pub mod score;
pub mod stats;
pub mod suite;
mod values;

use std::sync::atomic::{AtomicUsize, Ordering};

use prepare::{CannotRun, Given, Ready};
use run::{RunResult, Shared};
use stats::Rate;
use suite::Suite;

/// How a case came out.
#[derive(Clone, Debug)]
pub enum Status {
    /// Its pass rate reached its `min_pass_rate`.
    Passed,
    /// It did not.
    Failed,
    /// It could not run: its workflow does not compile, a key is missing, ...
    Error(CannotRun),
}

/// One case's runs and what they add up to.
#[derive(Clone, Debug)]
pub struct CaseReport {
    pub id: String,
    pub tags: Vec<String>,
    /// The workflow it ran.
    pub config: String,
    pub min_pass_rate: f64,
    pub status: Status,
    pub runs: Vec<RunResult>,
    pub rate: Rate,
}

impl CaseReport {
    pub fn seconds(&self) -> f64 {
        self.runs.iter().map(|run| run.seconds).sum()
    }
}

/// The cases of `suite` that `--tag` and `--filter` keep.
pub fn selected<'a>(
    suite: &'a Suite,
    tags: &[String],
    filter: Option<&str>,
) -> Vec<&'a case::Case> {
    let filter = filter.map(str::to_lowercase);
    suite
        .cases
        .iter()
        .filter(|case| tags.is_empty() || case.tags.iter().any(|tag| tags.contains(tag)))
        .filter(|case| {
            filter.as_ref().is_none_or(|filter| {
                case.id.to_lowercase().contains(filter)
                    || case
                        .tags
                        .iter()
                        .any(|tag| tag.to_lowercase().contains(filter))
            })
        })
        .collect()
}

/// Runs every case `repeat` times on up to `jobs` threads; reports in the cases' order.
pub fn run_all(
    suite: &Suite,
    cases: &[&case::Case],
    given: &Given<'_>,
    shared: &Shared<'_>,
    repeat: u32,
    jobs: usize,
) -> Vec<CaseReport> {
    let prepared: Vec<Result<Ready<'_>, CannotRun>> = cases
        .iter()
        .map(|case| prepare::prepare(case, suite, given))
        .collect();
    let units: Vec<(usize, u32)> = prepared
        .iter()
        .enumerate()
        .filter(|(_, ready)| ready.is_ok())
        .flat_map(|(idx, _)| (1..=repeat).map(move |run| (idx, run)))
        .collect();
    let done = AtomicUsize::new(0);
    let results = crate::scenario::pool::map(&units, jobs, |(idx, number)| {
        let Ok(ready) = &prepared[*idx] else {
            return Err("not prepared".to_string());
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run::run(ready, *number, shared)
        }))
        .unwrap_or_else(|_| Err("the run crashed (a fuseraft bug)".to_string()));
        let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
        progress(
            ready.case,
            *number,
            repeat,
            &result,
            (finished, units.len()),
        );
        result
    });
    let mut by_case: Vec<Vec<Result<RunResult, String>>> =
        cases.iter().map(|_| Vec::new()).collect();
    for ((idx, _), result) in units.iter().zip(results) {
        by_case[*idx].push(result);
    }
    cases
        .iter()
        .zip(prepared)
        .zip(by_case)
        .map(|((case, ready), results)| report(case, suite, given, ready, results))
        .collect()
}

/// One line on standard error as each run ends.
fn progress(
    case: &case::Case,
    number: u32,
    repeat: u32,
    result: &Result<RunResult, String>,
    (done, all): (usize, usize),
) {
    let turns = |run: &RunResult| match run.turns {
        1 => "1 turn".to_string(),
        n => format!("{n} turns"),
    };
    let what = match result {
        Ok(run) if run.passed => format!("passed ({}, {:.1}s)", turns(run), run.seconds),
        Ok(run) => format!(
            "FAILED ({}, {:.1}s): {}",
            turns(run),
            run.seconds,
            run.failures.first().map(String::as_str).unwrap_or_default()
        ),
        Err(message) => format!("cannot run: {message}"),
    };
    eprintln!(
        "eval [{done}/{all}] {} run {number}/{repeat}: {what}",
        case.id
    );
}

fn report(
    case: &case::Case,
    suite: &Suite,
    given: &Given<'_>,
    ready: Result<Ready<'_>, CannotRun>,
    results: Vec<Result<RunResult, String>>,
) -> CaseReport {
    let config = match &ready {
        Ok(ready) => ready.config.clone(),
        Err(_) => prepare::config_of(case, suite, given),
    };
    // Relative to the project, so reports read the same on every machine.
    let config = config
        .strip_prefix(&suite.root)
        .unwrap_or(&config)
        .display()
        .to_string();
    let mut runs = Vec::new();
    let mut status = match ready {
        Ok(_) => None,
        Err(cannot) => Some(Status::Error(cannot)),
    };
    for result in results {
        match result {
            Ok(run) => runs.push(run),
            Err(message) => {
                status.get_or_insert_with(|| {
                    Status::Error(CannotRun::plain(format!("case `{}`: {message}", case.id)))
                });
            }
        }
    }
    let passed = runs.iter().filter(|run| run.passed).count() as u32;
    let rate = Rate::of(passed, runs.len() as u32);
    let status = status.unwrap_or(if rate.value() + 1e-9 >= case.min_pass_rate {
        Status::Passed
    } else {
        Status::Failed
    });
    CaseReport {
        id: case.id.clone(),
        tags: case.tags.clone(),
        config,
        min_pass_rate: case.min_pass_rate,
        status,
        runs,
        rate,
    }
}
