//! JUnit XML for CI systems: one `testsuite` (the suite, with the model and totals as
//! properties), one `testcase` per case. A case below its pass rate is a `failure` listing
//! its failed runs, a regression against the baseline a `failure` of type `regression`, a
//! case that cannot run an `error`; each case's pass rate and interval are in its
//! `system-out`.

use super::report::Report;
use super::stats::percent;
use super::{CaseReport, Status};
use crate::scenario::junit::escape;

fn seconds(value: f64) -> String {
    format!("{value:.3}")
}

/// The pass rate line of a case.
fn rate_line(case: &CaseReport) -> String {
    let rate = &case.rate;
    format!(
        "passed {} of {} runs ({}, 95% CI {}–{}); needs {}",
        rate.passed,
        rate.runs,
        percent(rate.value()),
        percent(rate.low),
        percent(rate.high),
        percent(case.min_pass_rate)
    )
}

fn body(case: &CaseReport, report: &Report) -> String {
    let mut out = String::new();
    match &case.status {
        Status::Passed => {}
        Status::Failed => {
            let mut text = String::new();
            for run in case.runs.iter().filter(|run| !run.passed) {
                for failure in &run.failures {
                    text.push_str(&format!("run {}: {failure}\n", run.run));
                }
            }
            out.push_str(&format!(
                "      <failure type=\"pass-rate\" message=\"{}\">{}</failure>\n",
                escape(&rate_line(case)),
                escape(&text)
            ));
        }
        Status::Error(cannot) => out.push_str(&format!(
            "      <error type=\"cannot-run\" message=\"{}\">{}</error>\n",
            escape(&cannot.short),
            escape(&cannot.message)
        )),
    }
    if let Some(regression) = report.regressions().iter().find(|r| r.id == case.id) {
        let message = format!(
            "the pass rate dropped from {} ({}/{}) to {} ({}/{}) since the baseline",
            percent(regression.before.value()),
            regression.before.passed,
            regression.before.runs,
            percent(regression.after.value()),
            regression.after.passed,
            regression.after.runs
        );
        out.push_str(&format!(
            "      <failure type=\"regression\" message=\"{}\"/>\n",
            escape(&message)
        ));
    }
    if !matches!(case.status, Status::Error(_)) {
        out.push_str(&format!(
            "      <system-out>{}</system-out>\n",
            escape(&rate_line(case))
        ));
    }
    out
}

/// The JUnit document of `report`.
pub fn render(report: &Report) -> String {
    let count = |pick: fn(&CaseReport, &Report) -> bool| {
        report
            .cases
            .iter()
            .filter(|case| pick(case, report))
            .count()
    };
    let tests = report.cases.len();
    let failures = count(|case, report| {
        matches!(case.status, Status::Failed)
            || report.regressions().iter().any(|r| r.id == case.id)
    });
    let errors = count(|case, _| matches!(case.status, Status::Error(_)));
    let time = seconds(report.seconds);
    let name = escape(&report.suite);
    let totals = report.totals();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"fuseraft eval\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time}\">\n"
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{time}\">\n"
    ));
    out.push_str("    <properties>\n");
    for (key, value) in [
        ("models", report.models.clone()),
        ("repeat", report.repeat.to_string()),
        ("runs", totals.runs.to_string()),
        ("runs_passed", totals.passed.to_string()),
        ("input_tokens", totals.input_tokens.to_string()),
        ("output_tokens", totals.output_tokens.to_string()),
        ("cost_usd", format!("{:.4}", totals.cost_usd)),
    ] {
        out.push_str(&format!(
            "      <property name=\"{key}\" value=\"{}\"/>\n",
            escape(&value)
        ));
    }
    out.push_str("    </properties>\n");
    for case in &report.cases {
        out.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"fuseraft.eval.{name}\" time=\"{}\">\n{}    </testcase>\n",
            escape(&case.id),
            seconds(case.seconds()),
            body(case, report)
        ));
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
