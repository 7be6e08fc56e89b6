//! `RequireWriteFile` (upstream's HandoffToTesterValidator) and `RequireAllFilesWritten`.

use crate::effect::CheckResult;

use super::artifacts::{normalize_path, paths_match, Env};
use super::brief::{self, BriefError};
use super::shell::{command_of, matches_pattern, succeeded, turn_calls};
use super::test_report;

/// `RequireWriteFile` (+ `ShellFallbackPattern`): the current turn has a `write_file` or
/// `patch_file` result, a successful `git_commit`, or (with the pattern) a successful
/// matching `shell_run`; else the change log records, for the active session, a git commit
/// or a written file.
///
/// Choices: a write counts only when it succeeded (upstream counts any `write_file` result,
/// even a denied one; a denied write is no evidence of work). The change-log fallback
/// accepts written files as well as commits: that is the newer upstream version, which
/// widened the commit-only rule for sandboxes that are not git repositories.
pub(super) fn require_write_file(env: &Env) -> CheckResult {
    let fallback = env.params().shell_fallback_pattern.as_deref();
    let worked = turn_calls(env).any(|call| {
        if !succeeded(call) {
            return false;
        }
        if call.is("write_file") || call.is("patch_file") || call.is("git_commit") {
            return true;
        }
        call.is("shell_run")
            && fallback.is_some_and(|pattern| {
                command_of(call).is_some_and(|command| matches_pattern(command, pattern))
            })
    });
    if worked {
        return CheckResult::pass();
    }
    match env.change_log() {
        Ok(Some(log)) => {
            if log
                .session_entries()
                .any(|entry| !entry.git_commits.is_empty() || !entry.files_written.is_empty())
            {
                return CheckResult::pass();
            }
        }
        Ok(None) => {}
        Err(error) => return CheckResult::fail(format!("Handoff blocked: {error}")),
    }
    CheckResult::fail(format!(
        "Handoff blocked: no evidence of real work this turn\n\
         (no write_file, no patch_file, no git_commit, no shell fallback matched).\n\n\
         You must write at least one file before handing off. Use write_file for new files\n\
         or patch_file for surgical edits to existing files. Code blocks in your response\n\
         are NOT saved to disk — you must call the tool.{}",
        fail_detail(env)
    ))
}

/// The test report's FAIL rows, so the developer knows what to fix. Best effort: this only
/// enriches the message, so a missing or unreadable report adds nothing.
fn fail_detail(env: &Env) -> String {
    let Ok(artifact) = env.test_report() else {
        return String::new();
    };
    let Ok(report) = test_report::load(&artifact) else {
        return String::new();
    };
    let fails: Vec<_> = report
        .results
        .iter()
        .flatten()
        .filter(|row| row.is_fail())
        .collect();
    if fails.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "\n\nThe Tester found {} failing criterion/criteria that you must fix:\n",
        fails.len()
    );
    for row in fails {
        text.push_str(&format!("\n  FAIL: {}", row.criterion_text()));
        if let Some(notes) = row
            .notes
            .as_deref()
            .filter(|notes| !notes.trim().is_empty())
        {
            text.push_str(&format!("\n        Notes: {}", notes.trim()));
        }
        if let Some(stderr) = row
            .stderr
            .as_deref()
            .filter(|stderr| !stderr.trim().is_empty())
        {
            text.push_str(&format!("\n        stderr: {}", stderr.trim()));
        }
    }
    text.push_str("\n\nFix each failing criterion, then call write_file for every changed file.");
    text
}

/// `RequireAllFilesWritten`: the brief exists; every `files_to_change` path (string or
/// `{path}`) is among the files written: the active session's `filesWritten` in the change
/// log, or, when there is no change log file, the current turn's successful `write_file`
/// calls. Paths are normalised and match ignoring case or by `/`-suffix.
///
/// Choice: the current-turn fallback also counts `patch_file` (a patched file is written;
/// the change log records both the same way).
pub(super) fn require_all_files_written(env: &Env) -> CheckResult {
    let artifact = match env.brief() {
        Ok(artifact) => artifact,
        Err(error) => return CheckResult::fail(format!("Handoff blocked: {error}")),
    };
    let brief = match brief::load(&artifact) {
        Ok(brief) => brief,
        Err(BriefError::Missing) => {
            return CheckResult::fail(format!(
                "Handoff blocked: brief `{}` does not exist. Write the brief (with 'files_to_change') first, then retry.",
                artifact.shown
            ))
        }
        Err(BriefError::Invalid(error)) => return CheckResult::fail(format!("Handoff blocked: {error}. Fix JSON and retry.")),
    };
    let required: Vec<String> = brief
        .files_to_change
        .unwrap_or_default()
        .iter()
        .map(|path| normalize_path(path))
        .collect();
    if required.is_empty() {
        return CheckResult::pass();
    }
    let mut written: Vec<String> = match env.change_log() {
        Ok(Some(log)) => log
            .session_entries()
            .flat_map(|entry| entry.files_written.iter())
            .filter(|path| !path.trim().is_empty())
            .map(|path| normalize_path(path))
            .collect(),
        Ok(None) => turn_calls(env)
            .filter(|call| (call.is("write_file") || call.is("patch_file")) && succeeded(call))
            .filter(|call| {
                !call
                    .result
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("[NOT FOUND]")
            })
            .filter_map(|call| call.arg("path"))
            .filter(|path| !path.trim().is_empty())
            .map(normalize_path)
            .collect(),
        Err(error) => return CheckResult::fail(format!("Handoff blocked: {error}")),
    };
    written.sort_by_key(|path| path.to_lowercase());
    written.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    let missing: Vec<&String> = required
        .iter()
        .filter(|required| !written.iter().any(|written| paths_match(written, required)))
        .collect();
    if missing.is_empty() {
        return CheckResult::pass();
    }
    let written_list = if written.is_empty() {
        "  (none)".to_string()
    } else {
        written
            .iter()
            .map(|path| format!("  ✓ {path}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    CheckResult::fail(format!(
        "Handoff blocked: these files from brief `{}` were not written this session:\n\n{}\n\n\
         To resolve, either:\n\
         \x20 A. Modify each missing file with write_file or patch_file.\n\
         \x20 B. If a file does not actually need changes, update the brief to remove it\n\
         \x20    from files_to_change, then retry the handoff.\n\n\
         Written this session:\n{written_list}",
        artifact.shown,
        missing
            .iter()
            .map(|path| format!("  ✗ {path}"))
            .collect::<Vec<_>>()
            .join("\n"),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;

    const BRIEF: &str = ".fuseraft/artifacts/brief.json";

    fn write_check(
        fx: &Fixture,
        params: &[(&str, &str)],
        calls: Vec<crate::history::ToolCall>,
    ) -> crate::effect::CheckResult {
        fx.validator("RequireWriteFile", params, vec![assistant(calls)])
    }

    #[test]
    fn write_file_passes_on_a_write_file_result() {
        let fx = Fixture::new("wf-write");
        assert_pass(&write_check(&fx, &[], vec![write_file("src/a.rs")]));
    }

    #[test]
    fn write_file_passes_on_a_prefixed_patch_file_result() {
        let fx = Fixture::new("wf-patch");
        let call = tool(
            "FileSystem-patch_file",
            json!({"path": "a"}),
            "Patched",
            true,
        );
        assert_pass(&write_check(&fx, &[], vec![call]));
    }

    #[test]
    fn write_file_fails_without_any_write() {
        let fx = Fixture::new("wf-none");
        let result = write_check(
            &fx,
            &[],
            vec![tool("read_file", json!({"path": "a"}), "text", true)],
        );
        assert_fail(
            &result,
            &["no evidence of real work this turn", "no write_file"],
        );
    }

    #[test]
    fn write_file_fails_on_a_denied_write() {
        let fx = Fixture::new("wf-denied");
        let call = tool(
            "write_file",
            json!({"path": "../x"}),
            "[DENIED: sandbox] ../x",
            false,
        );
        assert_fail(
            &write_check(&fx, &[], vec![call]),
            &["no evidence of real work"],
        );
    }

    #[test]
    fn write_file_passes_on_a_successful_git_commit() {
        let fx = Fixture::new("wf-commit");
        let call = tool(
            "Git-git_commit",
            json!({"message": "m"}),
            "[main abc123] m",
            true,
        );
        assert_pass(&write_check(&fx, &[], vec![call]));
    }

    #[test]
    fn write_file_fails_on_a_failed_git_commit() {
        let fx = Fixture::new("wf-commit-failed");
        let call = tool(
            "git_commit",
            json!({"message": "m"}),
            "[ERROR] nothing to commit",
            true,
        );
        assert_fail(&write_check(&fx, &[], vec![call]), &["no git_commit"]);
    }

    #[test]
    fn write_file_passes_on_a_matching_shell_fallback() {
        let fx = Fixture::new("wf-fallback");
        let calls = vec![shell("go mod tidy", "")];
        assert_pass(&write_check(
            &fx,
            &[("ShellFallbackPattern", "npm install|go mod tidy")],
            calls,
        ));
    }

    #[test]
    fn write_file_fails_on_a_shell_run_without_fallback_pattern() {
        let fx = Fixture::new("wf-no-fallback");
        assert_fail(
            &write_check(&fx, &[], vec![shell("go mod tidy", "")]),
            &["no shell fallback matched"],
        );
    }

    #[test]
    fn write_file_fails_on_a_non_matching_or_failed_shell_fallback() {
        let fx = Fixture::new("wf-fallback-bad");
        let params = [("ShellFallbackPattern", "go mod tidy")];
        assert_fail(
            &write_check(&fx, &params, vec![shell("ls", "")]),
            &["no evidence"],
        );
        let failed = shell_with("go mod tidy", "[EXIT 1] no go.mod", false);
        assert_fail(&write_check(&fx, &params, vec![failed]), &["no evidence"]);
    }

    #[test]
    fn write_file_falls_back_to_a_commit_in_the_change_log() {
        let fx = Fixture::new("wf-log-commit");
        fx.change_log(&[entry_with("Dev", 1, &[], &[], &["abc123"])]);
        assert_pass(&write_check(&fx, &[], vec![]));
    }

    #[test]
    fn write_file_falls_back_to_a_written_file_in_the_change_log() {
        let fx = Fixture::new("wf-log-file");
        fx.change_log(&[entry("Dev", 1, &["src/a.rs"], &[])]);
        assert_pass(&write_check(&fx, &[], vec![]));
    }

    #[test]
    fn write_file_log_fallback_ignores_other_sessions_and_commands() {
        let fx = Fixture::new("wf-log-other");
        fx.write(
            ".fuseraft/state/changes.json",
            r#"{"activeSessionId":"s1","entries":[
                {"agent":"Dev","turnIndex":1,"sessionId":"s1","commandsRun":[{"command":"ls","succeeded":true}]},
                {"agent":"Dev","turnIndex":2,"sessionId":"old","filesWritten":["a.rs"],"gitCommits":["abc"]}]}"#,
        );
        assert_fail(
            &write_check(&fx, &[], vec![]),
            &["no evidence of real work"],
        );
    }

    #[test]
    fn write_file_failure_lists_the_test_report_fails() {
        let fx = Fixture::new("wf-detail");
        fx.write_json(".fuseraft/artifacts/test-report.json", &json!({"results": [
            {"criterion": "prints hi", "status": "FAIL", "notes": "printed ho", "stderr": "assert failed\n"},
            {"criterion": "exits 0", "status": "PASS", "command": "cargo run"},
        ]}));
        let result = write_check(&fx, &[], vec![]);
        assert_fail(
            &result,
            &[
                "1 failing criterion",
                "FAIL: prints hi",
                "Notes: printed ho",
                "stderr: assert failed",
            ],
        );
        assert!(!result.error.contains("exits 0"));
    }

    #[test]
    fn write_file_ignores_a_malformed_test_report_in_the_detail() {
        let fx = Fixture::new("wf-detail-bad");
        fx.write(".fuseraft/artifacts/test-report.json", "{oops");
        let result = write_check(&fx, &[], vec![]);
        assert_fail(&result, &["no evidence of real work"]);
        assert!(!result.error.contains("Tester found"));
    }

    #[test]
    fn write_file_fails_on_a_malformed_change_log() {
        let fx = Fixture::new("wf-log-bad");
        fx.write(".fuseraft/state/changes.json", "not json");
        assert_fail(
            &write_check(&fx, &[], vec![]),
            &["change log `.fuseraft/state/changes.json` is not valid"],
        );
    }

    fn all_check(fx: &Fixture, calls: Vec<crate::history::ToolCall>) -> crate::effect::CheckResult {
        fx.validator("RequireAllFilesWritten", &[], vec![assistant(calls)])
    }

    #[test]
    fn all_files_fails_when_the_brief_is_missing() {
        let fx = Fixture::new("af-no-brief");
        assert_fail(
            &all_check(&fx, vec![]),
            &["brief `.fuseraft/artifacts/brief.json` does not exist"],
        );
    }

    #[test]
    fn all_files_fails_on_a_malformed_brief() {
        let fx = Fixture::new("af-bad-brief");
        fx.write(BRIEF, "{\"files_to_change\": [");
        assert_fail(
            &all_check(&fx, vec![]),
            &["brief `.fuseraft/artifacts/brief.json` is invalid JSON"],
        );
        fx.write_json(BRIEF, &json!({"files_to_change": [true]}));
        assert_fail(
            &all_check(&fx, vec![]),
            &["`files_to_change[0]` must be a path string"],
        );
    }

    #[test]
    fn all_files_passes_with_nothing_to_write() {
        let fx = Fixture::new("af-empty");
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": []}));
        assert_pass(&all_check(&fx, vec![]));
    }

    #[test]
    fn all_files_passes_when_the_log_records_every_file() {
        let fx = Fixture::new("af-log-ok");
        fx.write_json(
            BRIEF,
            &json!({"files_to_change": ["./src/a.rs", {"path": "SRC\\b.rs", "reason": "r"}]}),
        );
        fx.change_log(&[
            entry("Dev", 1, &["/srv/proj/src/a.rs"], &[]),
            entry("Dev", 2, &["src/B.rs"], &[]),
        ]);
        assert_pass(&all_check(&fx, vec![]));
    }

    #[test]
    fn all_files_fails_listing_files_the_log_lacks() {
        let fx = Fixture::new("af-log-missing");
        fx.write_json(BRIEF, &json!({"files_to_change": ["src/a.rs", "src/b.rs"]}));
        fx.change_log(&[entry("Dev", 1, &["src/a.rs"], &[])]);
        // A write in the current turn does not count when the change log exists.
        let result = all_check(&fx, vec![write_file("src/b.rs")]);
        assert_fail(
            &result,
            &["were not written this session", "✗ src/b.rs", "✓ src/a.rs"],
        );
        assert!(!result.error.contains("✗ src/a.rs"));
    }

    #[test]
    fn all_files_does_not_match_on_a_partial_name() {
        let fx = Fixture::new("af-partial");
        fx.write_json(BRIEF, &json!({"files_to_change": ["a.rs"]}));
        fx.change_log(&[entry("Dev", 1, &["src/ba.rs"], &[])]);
        assert_fail(&all_check(&fx, vec![]), &["✗ a.rs"]);
    }

    #[test]
    fn all_files_ignores_other_sessions_in_the_log() {
        let fx = Fixture::new("af-log-session");
        fx.write_json(BRIEF, &json!({"files_to_change": ["a.rs"]}));
        fx.write(
            ".fuseraft/state/changes.json",
            r#"{"activeSessionId":"s1","entries":[{"agent":"Dev","turnIndex":1,"sessionId":"old","filesWritten":["a.rs"]}]}"#,
        );
        assert_fail(&all_check(&fx, vec![]), &["✗ a.rs", "(none)"]);
    }

    #[test]
    fn all_files_without_a_log_passes_on_current_turn_writes() {
        let fx = Fixture::new("af-turn-ok");
        fx.write_json(BRIEF, &json!({"files_to_change": ["a.rs", "b.rs"]}));
        let patch = tool("patch_file", json!({"path": "./b.rs"}), "Patched", true);
        assert_pass(&all_check(&fx, vec![write_file("a.rs"), patch]));
    }

    #[test]
    fn all_files_without_a_log_fails_on_missing_or_failed_writes() {
        let fx = Fixture::new("af-turn-missing");
        fx.write_json(BRIEF, &json!({"files_to_change": ["a.rs", "b.rs"]}));
        let denied = tool(
            "write_file",
            json!({"path": "b.rs"}),
            "[DENIED: sandbox] b.rs",
            false,
        );
        let result = all_check(&fx, vec![write_file("a.rs"), denied]);
        assert_fail(&result, &["✗ b.rs"]);
    }

    #[test]
    fn all_files_fails_on_a_malformed_change_log() {
        let fx = Fixture::new("af-log-bad");
        fx.write_json(BRIEF, &json!({"files_to_change": ["a.rs"]}));
        fx.write(".fuseraft/state/changes.json", "{\"entries\": 3}");
        assert_fail(&all_check(&fx, vec![]), &["`entries` must be an array"]);
    }
}
