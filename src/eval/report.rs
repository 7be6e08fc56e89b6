//! The report of a suite's run, and its JSON form (`--format json`), which a later run reads
//! back as its `--baseline`.

use serde_json::{json, Value as Json};

use super::baseline::Regression;
use super::stats::Rate;
use super::{CaseReport, Status};

/// The name of the JSON report's format, with its version.
pub const FORMAT: &str = "fuseraft-eval/1";

/// A suite's run.
pub struct Report {
    pub suite: String,
    pub file: String,
    /// What answered the model calls: `replay FILE`, `PROVIDER:MODEL at URL`, ...
    pub models: String,
    pub repeat: u32,
    pub cases: Vec<CaseReport>,
    /// Wall time of the whole suite.
    pub seconds: f64,
    /// `--baseline FILE` and the cases whose pass rate dropped since.
    pub baseline: Option<(String, Vec<Regression>)>,
}

/// The sums over every run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub runs: u32,
    pub passed: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub calls_without_usage: u32,
    pub cost_usd: f64,
    pub unpriced_calls: u32,
}

impl Report {
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for run in self.cases.iter().flat_map(|case| &case.runs) {
            totals.runs += 1;
            totals.passed += u32::from(run.passed);
            totals.input_tokens += run.input_tokens;
            totals.output_tokens += run.output_tokens;
            totals.calls_without_usage += run.calls_without_usage;
            totals.cost_usd += run.cost_usd;
            totals.unpriced_calls += run.unpriced_calls;
        }
        totals
    }

    pub fn regressions(&self) -> &[Regression] {
        self.baseline
            .as_ref()
            .map_or(&[][..], |(_, regressions)| regressions)
    }

    /// Every case reached its pass rate and none regressed.
    pub fn passed(&self) -> bool {
        self.regressions().is_empty()
            && self
                .cases
                .iter()
                .all(|case| matches!(case.status, Status::Passed))
    }

    pub fn json(&self) -> Json {
        let totals = self.totals();
        json!({
            "format": FORMAT,
            "suite": self.suite,
            "file": self.file,
            "models": self.models,
            "repeat": self.repeat,
            "passed": self.passed(),
            "seconds": round(self.seconds),
            "totals": {
                "runs": totals.runs,
                "passed": totals.passed,
                "input_tokens": totals.input_tokens,
                "output_tokens": totals.output_tokens,
                "calls_without_usage": totals.calls_without_usage,
                "cost_usd": round(totals.cost_usd),
                "unpriced_calls": totals.unpriced_calls,
            },
            "cases": self.cases.iter().map(case_json).collect::<Vec<_>>(),
            "baseline": self.baseline.as_ref().map(|(file, _)| file),
            "regressions": self.regressions().iter().map(Regression::json).collect::<Vec<_>>(),
        })
    }
}

/// `value` to 4 decimals: reports stay readable and stable.
pub fn round(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

/// A rate as `{passed, runs, pass_rate, ci95}`.
pub fn rate_json(rate: &Rate) -> Json {
    json!({
        "passed": rate.passed,
        "runs": rate.runs,
        "pass_rate": round(rate.value()),
        "ci95": [round(rate.low), round(rate.high)],
    })
}

fn case_json(case: &CaseReport) -> Json {
    let (status, error) = match &case.status {
        Status::Passed => ("passed", None),
        Status::Failed => ("failed", None),
        Status::Error(cannot) => ("error", Some(cannot.short.clone())),
    };
    let sum = |pick: fn(&super::run::RunResult) -> u64| case.runs.iter().map(pick).sum::<u64>();
    let mut object = json!({
        "id": case.id,
        "tags": case.tags,
        "config": case.config,
        "status": status,
        "error": error,
        "min_pass_rate": case.min_pass_rate,
        "input_tokens": sum(|run| run.input_tokens),
        "output_tokens": sum(|run| run.output_tokens),
        "cost_usd": round(case.runs.iter().map(|run| run.cost_usd).sum()),
        "seconds": round(case.seconds()),
        "results": case.runs,
    });
    if let (Some(object), Json::Object(rate)) = (object.as_object_mut(), rate_json(&case.rate)) {
        for (key, value) in rate {
            object.insert(key, value);
        }
    }
    object
}
