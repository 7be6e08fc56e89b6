//! `--ci` (upstream's): after a run that ended well, the test report the agents wrote
//! decides the exit code: a `FAIL` row makes it 2, and `--json` carries `ci {passed, skipped,
//! failed_criteria}`. A run without a report passes, as upstream's does.

use std::path::Path;

use serde::Serialize;
use serde_json::Value as Json;

/// Where the report is unless `Validation.TestReportPath` says otherwise.
const DEFAULT_REPORT: &str = ".fuseraft/artifacts/test-report.json";

/// The most bytes of report read.
const MAX_REPORT_BYTES: u64 = 4 * 1024 * 1024;

/// What `--ci` found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CiResult {
    pub passed: u32,
    pub skipped: u32,
    pub failed_criteria: Vec<String>,
}

impl CiResult {
    pub fn failed(&self) -> bool {
        !self.failed_criteria.is_empty()
    }
}

/// The report of `session` under `work_dir` (the path `Validation.TestReportPath` gives, inside
/// the work dir, never through a link out), read; `Ok(None)` when there is none.
pub fn read(
    validation: &fuseraft_compiler::ir::Validation,
    work_dir: &Path,
    session: &str,
) -> Result<Option<CiResult>, String> {
    let raw = (validation.test_report_path.as_deref())
        .unwrap_or(DEFAULT_REPORT)
        .replace("{session_id}", session);
    let text =
        match fuseraft_vm::confine::read_text_under(work_dir, Path::new(&raw), MAX_REPORT_BYTES) {
            Ok((text, _)) => text,
            Err(fuseraft_vm::confine::Error::NotFound) => return Ok(None),
            Err(error) => {
                return Err(format!(
                    "--ci: cannot read the test report `{raw}`: {error}"
                ))
            }
        };
    let root: Json = serde_json::from_str(&text)
        .map_err(|error| format!("--ci: the test report `{raw}` is not JSON: {error}"))?;
    let mut result = CiResult::default();
    for row in root["results"].as_array().into_iter().flatten() {
        let status = row["status"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_ascii_uppercase();
        match status.as_str() {
            "PASS" => result.passed += 1,
            "FAIL" => result.failed_criteria.push(
                row["criterion"]
                    .as_str()
                    .filter(|text| !text.trim().is_empty())
                    .unwrap_or("(unnamed)")
                    .to_string(),
            ),
            _ => result.skipped += 1,
        }
    }
    Ok(Some(result))
}
