//! `fuseraft test [PATH...] [--accept] [--format human|junit] [--coverage]`: snapshot-test
//! routing. Each scenario runs with scripted replies in a fresh temporary work dir; its
//! routing trace is compared with the reviewed snapshot beside it.
//!
//! Exit codes: 0 every scenario passed (or was accepted); 1 a trace changed or a snapshot is
//! missing; 2 a usage error, or a scenario that cannot be read or run.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use super::exit;
use crate::cli::{TestArgs, TestFormat};
use crate::render::Style;
use crate::scenario::{self, coverage, junit, pool, Report, Settings, Verdict};

pub fn run(args: &TestArgs, style: Style) -> u8 {
    let started = Instant::now();
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let scenarios = match scenario::discover::discover(&paths) {
        Ok(scenarios) => scenarios,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::USAGE;
        }
    };
    if scenarios.is_empty() {
        let searched: Vec<String> = paths.iter().map(|p| format!("`{}`", p.display())).collect();
        eprintln!(
            "error: no scenarios (`*.scenario.yaml`) under {}",
            searched.join(", ")
        );
        return exit::USAGE;
    }
    let settings = Settings {
        accept: args.accept,
        coverage: args.coverage,
        style,
        threads: pool::default_threads(),
        trust_mcp: args.trust_mcp,
    };
    crate::mcp_trust::allow_variables(&args.mcp_env);
    let reports = scenario::run_all(&scenarios, settings);
    let elapsed = started.elapsed();
    let report = match args.format {
        TestFormat::Junit => junit::render(&reports, elapsed),
        TestFormat::Human => human(&reports, settings, elapsed.as_secs_f64()),
    };
    if let Some(code) = super::print_or_fail(&report) {
        return code;
    }
    let mut err = std::io::stderr().lock();
    for report in &reports {
        if let Verdict::Error { message, .. } = &report.verdict {
            let _ = writeln!(err, "{}", message.trim_end());
        }
    }
    if args.coverage {
        let text = coverage::render(&coverage::collect(&reports));
        // JUnit owns standard output; the coverage report then goes to standard error.
        match args.format {
            TestFormat::Junit => {
                let _ = write!(err, "{text}");
            }
            TestFormat::Human => {
                drop(err);
                if let Some(code) = super::print_or_fail(&format!("\n{text}")) {
                    return code;
                }
            }
        }
    }
    if reports.iter().any(|r| r.verdict.is_error()) {
        exit::USAGE
    } else if reports.iter().any(|r| r.verdict.is_failure()) {
        exit::FINDINGS
    } else {
        exit::OK
    }
}

fn paint(text: &str, code: &str, style: Style) -> String {
    if style.color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The report for people: a status line per scenario, then the details of each failure.
fn human(reports: &[Report], settings: Settings, seconds: f64) -> String {
    let style = settings.style;
    let mut out = format!(
        "running {} scenario{}\n",
        reports.len(),
        if reports.len() == 1 { "" } else { "s" }
    );
    for report in reports {
        let status = match &report.verdict {
            Verdict::Passed => paint("ok      ", "32", style),
            Verdict::Changed { .. } => paint("CHANGED ", "31", style),
            Verdict::Missing { .. } => paint("NEW     ", "33", style),
            Verdict::Accepted { created: true } => paint("WRITTEN ", "32", style),
            Verdict::Accepted { created: false } => paint("ACCEPTED", "32", style),
            Verdict::Error { .. } => paint("ERROR   ", "31", style),
        };
        out.push_str(&format!("{status} {}\n", report.path.display()));
    }
    for report in reports {
        match &report.verdict {
            Verdict::Changed { diff, pending } => {
                out.push_str(&format!(
                    "\n── {}: the routing trace changed\n{diff}the new trace is in {}; if the change is intended: fuseraft test --accept\n",
                    report.path.display(),
                    pending.display()
                ));
            }
            Verdict::Missing { pending } => {
                out.push_str(&format!(
                    "\n── {}: no snapshot yet\n{}review {} and accept it: fuseraft test --accept\n",
                    report.path.display(),
                    report.trace,
                    pending.display()
                ));
            }
            _ => {}
        }
    }
    let count = |pick: fn(&Verdict) -> bool| reports.iter().filter(|r| pick(&r.verdict)).count();
    let passed = count(|v| matches!(v, Verdict::Passed));
    let changed = count(|v| matches!(v, Verdict::Changed { .. }));
    let missing = count(|v| matches!(v, Verdict::Missing { .. }));
    let accepted = count(|v| matches!(v, Verdict::Accepted { .. }));
    let errors = count(|v| matches!(v, Verdict::Error { .. }));
    let result = if changed + missing + errors == 0 {
        paint("ok", "32", style)
    } else {
        paint("FAILED", "31", style)
    };
    let mut parts = vec![format!("{passed} passed")];
    if changed > 0 {
        parts.push(format!("{changed} changed"));
    }
    if missing > 0 {
        parts.push(format!("{missing} without snapshot"));
    }
    if accepted > 0 {
        parts.push(format!("{accepted} accepted"));
    }
    if errors > 0 {
        parts.push(format!("{errors} could not run"));
    }
    out.push_str(&format!(
        "\ntest result: {result}. {}; finished in {seconds:.2}s\n",
        parts.join(", ")
    ));
    out
}
