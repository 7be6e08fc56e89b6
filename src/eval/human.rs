//! The report for people: a row per case (runs passed, pass rate with its 95% interval,
//! tokens, cost, time), then why each failed case failed, the regressions against the
//! baseline and the totals.

use super::report::{Report, Totals};
use super::stats::percent;
use super::{CaseReport, Status};

/// A cost in words: `$0.0123`, `$0.0123+` when some calls had no known price, `—` when none had.
fn cost(usd: f64, unpriced: u32, any_priced: bool) -> String {
    match (any_priced, unpriced) {
        (false, _) => "—".to_string(),
        (true, 0) => format!("${usd:.4}"),
        (true, _) => format!("${usd:.4}+"),
    }
}

fn row(case: &CaseReport) -> String {
    let id = format!("{:<20}", case.id);
    if let Status::Error(_) = case.status {
        return format!("ERROR  {id} cannot run\n");
    }
    let rate = &case.rate;
    let input: u64 = case.runs.iter().map(|run| run.input_tokens).sum();
    let output: u64 = case.runs.iter().map(|run| run.output_tokens).sum();
    let usd: f64 = case.runs.iter().map(|run| run.cost_usd).sum();
    let unpriced: u32 = case.runs.iter().map(|run| run.unpriced_calls).sum();
    let priced = usd > 0.0;
    let mark = match case.status {
        Status::Passed => "ok",
        _ => "FAILED",
    };
    format!(
        "{mark:<6} {id} {:<7} {:>4}  {:<11} {:<15} {:<9} {:.1}s\n",
        format!("{}/{}", rate.passed, rate.runs),
        percent(rate.value()),
        format!("{}–{}", percent(rate.low), percent(rate.high)),
        format!("{input} / {output}"),
        cost(usd, unpriced, priced),
        case.seconds()
    )
}

/// Why a case failed or could not run.
fn details(case: &CaseReport) -> String {
    match &case.status {
        Status::Passed => String::new(),
        Status::Error(cannot) => format!(
            "\n── {}: cannot run\n{}\n",
            case.id,
            cannot.message.trim_end()
        ),
        Status::Failed => {
            let mut out = format!(
                "\n── {}: passed {} of {} runs ({}), needs {}\n",
                case.id,
                case.rate.passed,
                case.rate.runs,
                percent(case.rate.value()),
                percent(case.min_pass_rate)
            );
            for run in case.runs.iter().filter(|run| !run.passed) {
                for failure in &run.failures {
                    out.push_str(&format!("   run {}: {failure}\n", run.run));
                }
            }
            out
        }
    }
}

fn totals_line(report: &Report, totals: &Totals) -> String {
    let tokens = if totals.calls_without_usage > 0 {
        format!(
            "tokens in {}+ / out {}+ ({} calls reported no usage)",
            totals.input_tokens, totals.output_tokens, totals.calls_without_usage
        )
    } else {
        format!(
            "tokens in {} / out {}",
            totals.input_tokens, totals.output_tokens
        )
    };
    let spent = match cost(
        totals.cost_usd,
        totals.unpriced_calls,
        totals.cost_usd > 0.0,
    )
    .as_str()
    {
        "—" => "cost unknown".to_string(),
        known => format!("cost {known}"),
    };
    format!(
        "\ntotals: {} runs, {} passed · {tokens} · {spent} · {:.1}s\n",
        totals.runs, totals.passed, report.seconds
    )
}

/// The whole report.
pub fn render(report: &Report) -> String {
    let cases = report.cases.len();
    let mut out = format!(
        "eval {} · {cases} case{} × {} run{} · {}\n\n",
        report.suite,
        if cases == 1 { "" } else { "s" },
        report.repeat,
        if report.repeat == 1 { "" } else { "s" },
        report.models
    );
    out.push_str(&format!(
        "{:<6} {:<20} {:<7} {:>4}  {:<11} {:<15} {:<9} time\n",
        "", "case", "passed", "rate", "95% CI", "tokens in/out", "cost"
    ));
    for case in &report.cases {
        out.push_str(&row(case));
    }
    for case in &report.cases {
        out.push_str(&details(case));
    }
    if let Some((file, regressions)) = &report.baseline {
        if regressions.is_empty() {
            out.push_str(&format!("\nno regression against {file}\n"));
        } else {
            out.push_str(&format!("\nregressions against {file}:\n"));
        }
        for regression in regressions {
            let (before, after) = (&regression.before, &regression.after);
            out.push_str(&format!(
                "   {}: {} ({}/{}) → {} ({}/{}){}\n",
                regression.id,
                percent(before.value()),
                before.passed,
                before.runs,
                percent(after.value()),
                after.passed,
                after.runs,
                if regression.beyond_chance() {
                    ", beyond chance"
                } else {
                    ", within chance at 95%"
                }
            ));
        }
    }
    out.push_str(&totals_line(report, &report.totals()));
    out.push_str(&verdict(report));
    out
}

fn verdict(report: &Report) -> String {
    let count = |pick: fn(&Status) -> bool| report.cases.iter().filter(|c| pick(&c.status)).count();
    let passed = count(|status| matches!(status, Status::Passed));
    let failed = count(|status| matches!(status, Status::Failed));
    let errors = count(|status| matches!(status, Status::Error(_)));
    let mut parts = vec![format!("{passed} passed")];
    if failed > 0 {
        parts.push(format!("{failed} failed"));
    }
    if errors > 0 {
        parts.push(format!("{errors} could not run"));
    }
    let regressed = report.regressions().len();
    if regressed > 0 {
        parts.push(format!("{regressed} regressed"));
    }
    let result = if report.passed() { "ok" } else { "FAILED" };
    format!("eval result: {result}. {}\n", parts.join(", "))
}
