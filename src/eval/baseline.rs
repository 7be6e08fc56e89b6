//! `--baseline FILE`: an earlier run's JSON report. A case whose pass rate is lower now than
//! there is a regression, named in the report; one whose 95% intervals no longer overlap is
//! marked as beyond chance. Cases the baseline does not have are new, not regressions.

use std::path::Path;

use serde_json::{json, Value as Json};

use super::report::{rate_json, FORMAT};
use super::stats::Rate;
use super::CaseReport;

/// A case that passes less often than in the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Regression {
    pub id: String,
    pub before: Rate,
    pub after: Rate,
}

impl Regression {
    /// The drop is larger than the runs' uncertainty explains.
    pub fn beyond_chance(&self) -> bool {
        self.after.clearly_below(&self.before)
    }

    pub fn json(&self) -> Json {
        json!({
            "id": self.id,
            "before": rate_json(&self.before),
            "after": rate_json(&self.after),
            "beyond_chance": self.beyond_chance(),
        })
    }
}

/// The pass rates of a baseline report, by case id.
pub fn read(path: &Path) -> Result<Vec<(String, Rate)>, String> {
    let name = path.display();
    let text = crate::disk::read(path)
        .map_err(|error| format!("cannot read the baseline `{name}`: {error}"))?;
    let report: Json = serde_json::from_str(&text).map_err(|error| {
        format!("the baseline `{name}` is not a JSON report (`eval run --format json`): {error}")
    })?;
    if report["format"] != FORMAT {
        return Err(format!(
            "the baseline `{name}` is not a report of `fuseraft eval run --format json` (its `format` is not `{FORMAT}`)"
        ));
    }
    let Some(cases) = report["cases"].as_array() else {
        return Err(format!("the baseline `{name}` has no `cases` list"));
    };
    cases
        .iter()
        .enumerate()
        .map(|(idx, case)| {
            let id = case["id"].as_str();
            let count = |key: &str| case[key].as_u64().and_then(|n| u32::try_from(n).ok());
            match (id, count("passed"), count("runs")) {
                (Some(id), Some(passed), Some(runs)) if passed <= runs => {
                    Ok((id.to_string(), Rate::of(passed, runs)))
                }
                _ => Err(format!(
                    "the baseline `{name}`: case {} lacks its `id`, `passed` or `runs`",
                    idx + 1
                )),
            }
        })
        .collect()
}

/// The cases of `now` that pass less often than in `before`.
pub fn compare(before: &[(String, Rate)], now: &[CaseReport]) -> Vec<Regression> {
    now.iter()
        .filter_map(|case| {
            let (_, rate) = before.iter().find(|(id, _)| *id == case.id)?;
            (case.rate.value() + 1e-9 < rate.value()).then(|| Regression {
                id: case.id.clone(),
                before: *rate,
                after: case.rate,
            })
        })
        .collect()
}
