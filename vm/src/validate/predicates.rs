//! Contract predicates (`Contracts: - Requires: - Type: ...`): FilesWritten,
//! CommandSucceeded, FileExists and TestReport. (RelatedTestsPass lives with its validator
//! in `related.rs`.) A contract ANDs its predicates; the machine stops at the first
//! failure, so each message here explains one predicate.

use serde_json::Value as Json;

use crate::effect::CheckResult;

use super::artifacts::{
    contains_ci, kind, member, normalize_path, path_list, paths_match, read_text, Artifact, Env,
    ReadError, DEFAULT_BRIEF_PATH,
};
use super::brief;
use super::test_report::{self, ReportError, Row};

/// Reads a JSON object artifact for predicate `what`; the error is the whole message.
fn read_object(artifact: &Artifact, what: &str, missing: &str) -> Result<Json, CheckResult> {
    let shown = &artifact.shown;
    let text = match read_text(artifact) {
        Ok(text) => text,
        Err(ReadError::Missing) => {
            return Err(CheckResult::fail(format!("{what} failed — {missing}")))
        }
        Err(ReadError::Unreadable(error)) => {
            return Err(CheckResult::fail(format!(
                "{what} error — could not read `{shown}`: {error}"
            )))
        }
    };
    let unparsable = |error: String| {
        CheckResult::fail(format!("{what} error — could not parse `{shown}`: {error}"))
    };
    let root: Json = serde_json::from_str(&text).map_err(|error| unparsable(error.to_string()))?;
    if !root.is_object() {
        return Err(unparsable(format!(
            "expected a JSON object, found {}",
            kind(&root)
        )));
    }
    Ok(root)
}

/// `FilesWritten` (`Source`, `Field` required): the array `Field` of the JSON at `Source`
/// lists paths (strings or `{path}` objects); each must be recorded as written in the
/// active session's change log or exist on disk under the work dir. An empty list passes.
/// Elements of any other type fail (upstream skips them silently).
pub(super) fn files_written(env: &Env) -> CheckResult {
    let (Some(source), Some(field)) = (
        env.params().source.as_deref(),
        env.params().field.as_deref(),
    ) else {
        return CheckResult::fail(
            "FilesWritten config error: it requires 'Source' (JSON path) and 'Field' (array field name).",
        );
    };
    let artifact = match env.resolve(source, "FilesWritten source") {
        Ok(artifact) => artifact,
        Err(error) => return CheckResult::fail(format!("FilesWritten failed — {error}")),
    };
    let shown = &artifact.shown;
    let missing_source = format!("source `{shown}` does not exist. Write it before handing off.");
    let root = match read_object(&artifact, "FilesWritten", &missing_source) {
        Ok(root) => root,
        Err(failure) => return failure,
    };
    let Some(value) = member(&root, field) else {
        return CheckResult::fail(format!(
            "FilesWritten failed — `{shown}` has no field '{field}'."
        ));
    };
    let expected = match path_list(value, field) {
        Ok(paths) => paths,
        Err(error) => {
            return CheckResult::fail(format!(
                "FilesWritten error — `{shown}` is invalid: {error}"
            ))
        }
    };
    if expected.is_empty() {
        return CheckResult::pass();
    }
    let written: Vec<String> = match env.change_log() {
        Ok(Some(log)) => log
            .session_entries()
            .flat_map(|entry| entry.files_written.iter())
            .filter(|path| !path.trim().is_empty())
            .map(|path| normalize_path(path))
            .collect(),
        Ok(None) => Vec::new(),
        Err(error) => return CheckResult::fail(format!("FilesWritten error — {error}")),
    };
    let missing: Vec<String> = expected
        .iter()
        .map(|path| normalize_path(path))
        .filter(|path| !written.iter().any(|written| paths_match(written, path)))
        .filter(|path| {
            !env.listed_file(path)
                .is_some_and(|on_disk| on_disk.is_file())
        })
        .collect();
    if missing.is_empty() {
        return CheckResult::pass();
    }
    CheckResult::fail(format!(
        "FilesWritten failed — files from `{shown}`['{field}'] not written:\n{}\n\nWrite them with write_file before handing off.",
        missing.iter().map(|path| format!("  ✗ {path}")).collect::<Vec<_>>().join("\n")
    ))
}

/// One `|` alternative is satisfied when each of its `&&`-separated parts appears (ignoring
/// case) in some succeeded command; each part may come from a separate run.
fn alternative_satisfied(alternative: &str, commands: &[&str]) -> bool {
    let parts: Vec<&str> = alternative
        .split("&&")
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    !parts.is_empty()
        && parts
            .iter()
            .all(|part| commands.iter().any(|command| contains_ci(command, part)))
}

/// `CommandSucceeded`: the pattern is `Pattern`, or with `PatternField` the string field of
/// that name in the JSON at `PatternSource` (default `Validation.BriefPath`, then the default
/// brief path). Some succeeded command of the active session in the change log must match
/// one of its `|`-separated alternatives (trimmed, empty ones dropped, ignoring case); an
/// alternative chained with `&&` needs every part matched, as the newer upstream engine does.
///
/// Choice: when the source has no usable `PatternField` (absent, `null`, not a string or
/// blank) the literal `Pattern` is the fallback, as the seed configs' comments document
/// ("Fallback literal pattern for configs that omit verify_command from the brief");
/// upstream's code fails on an absent field. A missing source file still fails.
pub(super) fn command_succeeded(env: &Env) -> CheckResult {
    let literal = env.params().pattern.as_deref();
    let mut pattern: Option<String> = None;
    let mut resolved_from = String::new();
    if let Some(field) = env.params().pattern_field.as_deref() {
        let raw = env
            .params()
            .pattern_source
            .as_deref()
            .or_else(|| env.validation().brief_path.as_deref())
            .unwrap_or(DEFAULT_BRIEF_PATH);
        let artifact = match env.resolve(raw, "PatternSource") {
            Ok(artifact) => artifact,
            Err(error) => return CheckResult::fail(format!("CommandSucceeded failed — {error}")),
        };
        let shown = &artifact.shown;
        let missing = format!(
            "PatternSource `{shown}` does not exist. The planner must write '{field}' to this file before the developer hands off."
        );
        let root = match read_object(&artifact, "CommandSucceeded", &missing) {
            Ok(root) => root,
            Err(failure) => return failure,
        };
        pattern = member(&root, field)
            .and_then(Json::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_string);
        if pattern.is_none() && literal.is_none() {
            return CheckResult::fail(format!(
                "CommandSucceeded failed — `{shown}` has no field '{field}' (a non-empty string). The planner must \
                 include '{field}' in the brief (e.g. the command to check or run the implementation)."
            ));
        }
        if pattern.is_some() {
            resolved_from = format!(" (read from `{shown}` field '{field}')");
        }
    }
    let Some(pattern) = pattern.or_else(|| literal.map(str::to_string)) else {
        return CheckResult::fail(
            "CommandSucceeded config error: it requires 'Pattern' or 'PatternField' (pointing to a non-empty string \
             field in the brief).",
        );
    };
    let log = match env.change_log() {
        Ok(log) => log,
        Err(error) => return CheckResult::fail(format!("CommandSucceeded error — {error}")),
    };
    let commands: Vec<&str> = log
        .iter()
        .flat_map(|log| log.session_entries())
        .flat_map(|entry| entry.commands_run.iter())
        .filter(|command| command.succeeded && !command.command.trim().is_empty())
        .map(|command| command.command.as_str())
        .collect();
    let found = pattern
        .split('|')
        .map(str::trim)
        .filter(|alternative| !alternative.is_empty())
        .any(|alternative| alternative_satisfied(alternative, &commands));
    if found {
        return CheckResult::pass();
    }
    CheckResult::fail(format!(
        "CommandSucceeded failed — no shell command matching '{pattern}'{resolved_from} in the session log.\n\n\
         Run `{pattern}` with shell_run and confirm it exits 0 before handing off."
    ))
}

/// `FileExists` (`Path` required): a regular file at `Path` under the work dir.
pub(super) fn file_exists(env: &Env) -> CheckResult {
    let Some(path) = env.params().path.as_deref() else {
        return CheckResult::fail("FileExists config error: it requires 'Path'.");
    };
    let artifact = match env.resolve(path, "FileExists") {
        Ok(artifact) => artifact,
        Err(error) => return CheckResult::fail(format!("FileExists failed — {error}")),
    };
    if artifact.path.is_file() {
        return CheckResult::pass();
    }
    let note = if artifact.path.is_dir() {
        " (it is a directory, not a file)"
    } else {
        ""
    };
    CheckResult::fail(format!(
        "FileExists failed — `{}` does not exist{note}. Create it before handing off.",
        artifact.shown
    ))
}

fn report_template(shown: &str) -> String {
    format!(
        "\n  write_file(\"{shown}\",\n  {{\n    \"results\": [\n      {{\n        \
         \"criterion\": \"<exact text from the brief's acceptance_criteria>\",\n        \"status\": \"PASS\",\n        \
         \"command\": \"<exact shell command you ran to verify it>\",\n        \"exit_code\": 0\n      }}\n    ],\n    \
         \"fake_test_files\": []\n  }})"
    )
}

/// The brief's criteria as a hint (best effort: nothing when the brief is absent or bad).
fn criteria_hint(env: &Env, note: &str) -> String {
    let Some(criteria) = env
        .brief()
        .ok()
        .and_then(|artifact| brief::load(&artifact).ok())
        .and_then(|brief| brief.acceptance_criteria)
        .filter(|criteria| !criteria.is_empty())
    else {
        return String::new();
    };
    let listed: Vec<String> = criteria
        .iter()
        .enumerate()
        .map(|(idx, criterion)| format!("  {}. {}", idx + 1, criterion.text))
        .collect();
    format!(
        "\n\nThe brief's acceptance_criteria ({} — {note}):\n{}",
        criteria.len(),
        listed.join("\n")
    )
}

/// `TestReport`: the report at `Validation.TestReportPath` (or the default) exists and has
/// at least one result; `NoFailures: true` ⇒ no FAIL row; `HasAssertions: true` ⇒ when the
/// change log exists, every PASS row's command is a substring (ignoring case) of a succeeded
/// command of the active session, all offending rows listed (no log ⇒ lenient pass).
///
/// Choices: control characters in strings are escaped before parsing, as `TestReportValid`
/// does; under `HasAssertions` a PASS row with a blank command is offending (it names no
/// run that could back it).
pub(super) fn test_report(env: &Env) -> CheckResult {
    let artifact = match env.test_report() {
        Ok(artifact) => artifact,
        Err(error) => return CheckResult::fail(format!("TestReport failed — {error}")),
    };
    let shown = &artifact.shown;
    let report = match test_report::load(&artifact) {
        Ok(report) => report,
        Err(ReportError::Missing) => {
            return CheckResult::fail(format!(
                "TestReport failed — test report `{shown}` not found.\n\nWrite it with write_file using this schema:\n{}{}",
                report_template(shown),
                criteria_hint(env, "you need one result entry per criterion")
            ))
        }
        Err(ReportError::Invalid(error)) => return CheckResult::fail(format!("TestReport error — {error}")),
    };
    let results = report.results.unwrap_or_default();
    if results.is_empty() {
        return CheckResult::fail(format!(
            "TestReport failed — test report `{shown}` has no results.\n\nThe 'results' array is empty or missing. \
             Add one entry per acceptance criterion:\n{}{}",
            report_template(shown),
            criteria_hint(env, "you need one result per criterion")
        ));
    }
    if env.params().no_failures {
        let fails: Vec<&Row> = results.iter().filter(|row| row.is_fail()).collect();
        if !fails.is_empty() {
            return CheckResult::fail(format!(
                "TestReport failed — test report contains {} FAIL result(s):\n{}",
                fails.len(),
                fails
                    .iter()
                    .map(|row| format!("  ✗ {}: FAIL", row.criterion_text()))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    if env.params().has_assertions {
        let log = match env.change_log() {
            Ok(log) => log,
            Err(error) => return CheckResult::fail(format!("TestReport error — {error}")),
        };
        if let Some(log) = log {
            let succeeded: Vec<&str> = log
                .session_entries()
                .flat_map(|entry| entry.commands_run.iter())
                .filter(|command| command.succeeded && !command.command.trim().is_empty())
                .map(|command| command.command.as_str())
                .collect();
            let offending: Vec<String> = results
                .iter()
                .filter(|row| row.is_pass())
                .filter(|row| {
                    let command = row.command_text();
                    command.is_empty() || !succeeded.iter().any(|real| contains_ci(real, command))
                })
                .map(|row| {
                    let command = row.command_text();
                    format!(
                        "  ✗ {}: {}",
                        row.criterion_text(),
                        if command.is_empty() {
                            "(empty command)"
                        } else {
                            command
                        }
                    )
                })
                .collect();
            if !offending.is_empty() {
                return CheckResult::fail(format!(
                    "TestReport failed — {} PASS row(s) whose command is not in change log as a succeeded command \
                     (possible fabrication):\n{}\n\nRe-run the tests with shell_run and update the report.",
                    offending.len(),
                    offending.join("\n")
                ));
            }
        }
    }
    CheckResult::pass()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;

    const BRIEF: &str = ".fuseraft/artifacts/brief.json";
    const REPORT: &str = ".fuseraft/artifacts/test-report.json";

    // FilesWritten

    fn files(fx: &Fixture) -> crate::effect::CheckResult {
        fx.predicate(
            "FilesWritten",
            &[("Source", BRIEF), ("Field", "files_to_change")],
        )
    }

    #[test]
    fn files_written_passes_when_the_log_records_each_file() {
        let fx = Fixture::new("fw-log");
        fx.write_json(
            BRIEF,
            &json!({"files_to_change": ["src/a.rs", {"path": "./src/b.rs", "reason": "r"}]}),
        );
        fx.change_log(&[entry("Dev", 1, &["src/a.rs", "/abs/work/src/b.rs"], &[])]);
        assert_pass(&files(&fx));
    }

    #[test]
    fn files_written_passes_when_files_exist_on_disk() {
        let fx = Fixture::new("fw-disk");
        fx.write_json(BRIEF, &json!({"files_to_change": ["src/a.rs"]}));
        fx.write("src/a.rs", "fn a() {}");
        assert_pass(&files(&fx));
    }

    #[test]
    fn files_written_passes_on_an_empty_list() {
        let fx = Fixture::new("fw-empty");
        fx.write_json(BRIEF, &json!({"files_to_change": []}));
        assert_pass(&files(&fx));
    }

    #[test]
    fn files_written_fails_on_files_neither_logged_nor_on_disk() {
        let fx = Fixture::new("fw-missing");
        fx.write_json(
            BRIEF,
            &json!({"files_to_change": ["src/a.rs", "src/b.rs", "../escape.rs"]}),
        );
        fx.change_log(&[entry("Dev", 1, &["src/a.rs"], &[])]);
        std::fs::create_dir_all(fx.dir().join("src/b.rs")).unwrap(); // a directory is not a file
        let result = files(&fx);
        assert_fail(&result, &["FilesWritten failed — files from `.fuseraft/artifacts/brief.json`['files_to_change'] not written", "✗ src/b.rs", "✗ ../escape.rs"]);
        assert!(!result.error.contains("✗ src/a.rs"));
    }

    #[test]
    fn files_written_needs_source_and_field() {
        let fx = Fixture::new("fw-config");
        assert_fail(
            &fx.predicate("FilesWritten", &[("Source", BRIEF)]),
            &["requires 'Source' (JSON path) and 'Field'"],
        );
        assert_fail(
            &fx.predicate(
                "FilesWritten",
                &[("Field", "files_to_change"), ("Source", " ")],
            ),
            &["requires 'Source'"],
        );
    }

    #[test]
    fn files_written_fails_when_the_source_does_not_exist() {
        let fx = Fixture::new("fw-no-source");
        assert_fail(
            &files(&fx),
            &["source `.fuseraft/artifacts/brief.json` does not exist"],
        );
    }

    #[test]
    fn files_written_fails_when_the_field_is_missing() {
        let fx = Fixture::new("fw-no-field");
        fx.write_json(BRIEF, &json!({"goal": "g"}));
        assert_fail(&files(&fx), &["has no field 'files_to_change'"]);
    }

    #[test]
    fn files_written_fails_on_malformed_json() {
        let fx = Fixture::new("fw-malformed");
        fx.write(BRIEF, "{\"files_to_change\": [\"a\"");
        assert_fail(
            &files(&fx),
            &["FilesWritten error — could not parse `.fuseraft/artifacts/brief.json`"],
        );
        fx.write(BRIEF, "[\"a\"]");
        assert_fail(&files(&fx), &["expected a JSON object, found an array"]);
    }

    #[test]
    fn files_written_fails_on_wrong_element_types() {
        let fx = Fixture::new("fw-types");
        fx.write_json(BRIEF, &json!({"files_to_change": "src/a.rs"}));
        assert_fail(
            &files(&fx),
            &["`files_to_change` must be an array, found a string"],
        );
        fx.write_json(BRIEF, &json!({"files_to_change": [null]}));
        assert_fail(
            &files(&fx),
            &["`files_to_change[0]` must be a path string or an object"],
        );
    }

    #[test]
    fn files_written_expands_the_session_id_in_source() {
        let fx = Fixture::new("fw-session").with_session("abc");
        fx.write_json(
            "sessions/abc/brief.json",
            &json!({"files_to_change": ["x.rs"]}),
        );
        fx.write("x.rs", "");
        assert_pass(&fx.predicate(
            "FilesWritten",
            &[
                ("Source", "sessions/{session_id}/brief.json"),
                ("Field", "files_to_change"),
            ],
        ));
    }

    #[test]
    fn files_written_fails_on_a_malformed_change_log() {
        let fx = Fixture::new("fw-log-bad");
        fx.write_json(BRIEF, &json!({"files_to_change": ["x.rs"]}));
        fx.write(".fuseraft/state/changes.json", "{]");
        assert_fail(
            &files(&fx),
            &["change log `.fuseraft/state/changes.json` is not valid"],
        );
    }

    // CommandSucceeded

    #[test]
    fn command_succeeded_passes_on_a_matching_succeeded_command() {
        let fx = Fixture::new("cs-ok");
        fx.change_log(&[entry(
            "Dev",
            1,
            &[],
            &[("cd app && CARGO TEST --all", true, "")],
        )]);
        assert_pass(&fx.predicate("CommandSucceeded", &[("Pattern", "go test | cargo test")]));
    }

    #[test]
    fn command_succeeded_fails_on_failed_or_other_commands() {
        let fx = Fixture::new("cs-fail");
        fx.change_log(&[entry(
            "Dev",
            1,
            &[],
            &[("cargo test", false, ""), ("ls", true, "")],
        )]);
        let result = fx.predicate("CommandSucceeded", &[("Pattern", "cargo test")]);
        assert_fail(
            &result,
            &[
                "no shell command matching 'cargo test' in the session log",
                "Run `cargo test` with shell_run",
            ],
        );
    }

    #[test]
    fn command_succeeded_fails_without_a_change_log() {
        let fx = Fixture::new("cs-no-log");
        assert_fail(
            &fx.predicate("CommandSucceeded", &[("Pattern", "make")]),
            &["no shell command matching 'make'"],
        );
    }

    #[test]
    fn command_succeeded_ignores_other_sessions() {
        let fx = Fixture::new("cs-session");
        fx.write(
            ".fuseraft/state/changes.json",
            r#"{"activeSessionId":"s1","entries":[{"agent":"D","turnIndex":1,"sessionId":"old","commandsRun":[{"command":"make","succeeded":true}]}]}"#,
        );
        assert_fail(
            &fx.predicate("CommandSucceeded", &[("Pattern", "make")]),
            &["no shell command matching"],
        );
    }

    #[test]
    fn command_succeeded_drops_empty_alternatives() {
        let fx = Fixture::new("cs-empty-alt");
        fx.change_log(&[entry("Dev", 1, &[], &[("ls", true, "")])]);
        assert_fail(
            &fx.predicate("CommandSucceeded", &[("Pattern", "cargo test| |")]),
            &["no shell command matching"],
        );
    }

    #[test]
    fn command_succeeded_and_chains_need_every_part() {
        let fx = Fixture::new("cs-and");
        fx.change_log(&[entry(
            "Dev",
            1,
            &[],
            &[("cargo build", true, ""), ("cargo test", true, "")],
        )]);
        assert_pass(&fx.predicate(
            "CommandSucceeded",
            &[("Pattern", "cargo build && cargo test")],
        ));
        assert_fail(
            &fx.predicate(
                "CommandSucceeded",
                &[("Pattern", "cargo build && cargo clippy")],
            ),
            &["no shell command matching"],
        );
    }

    #[test]
    fn command_succeeded_reads_the_pattern_from_the_brief() {
        let fx = Fixture::new("cs-field");
        fx.write_json(BRIEF, &json!({"verify_command": "pytest -q"}));
        fx.change_log(&[entry("Dev", 1, &[], &[("pytest -q tests", true, "")])]);
        assert_pass(&fx.predicate(
            "CommandSucceeded",
            &[("PatternField", "verify_command"), ("Pattern", "build")],
        ));
        fx.change_log(&[entry("Dev", 1, &[], &[("build", true, "")])]);
        let result = fx.predicate(
            "CommandSucceeded",
            &[("PatternField", "verify_command"), ("Pattern", "build")],
        );
        assert_fail(&result, &["no shell command matching 'pytest -q' (read from `.fuseraft/artifacts/brief.json` field 'verify_command')"]);
    }

    #[test]
    fn command_succeeded_reads_pattern_source_then_brief_path_setting() {
        let fx = Fixture::new("cs-source").with_setting("Validation.BriefPath", "plan.json");
        fx.write_json("plan.json", &json!({"verify": "make check"}));
        fx.write_json("other.json", &json!({"verify": "npm test"}));
        fx.change_log(&[entry("Dev", 1, &[], &[("make check", true, "")])]);
        assert_pass(&fx.predicate("CommandSucceeded", &[("PatternField", "verify")]));
        assert_fail(
            &fx.predicate(
                "CommandSucceeded",
                &[("PatternField", "verify"), ("PatternSource", "other.json")],
            ),
            &["'npm test'"],
        );
    }

    #[test]
    fn command_succeeded_falls_back_to_pattern_when_the_field_is_absent() {
        let fx = Fixture::new("cs-fallback");
        fx.write_json(BRIEF, &json!({"goal": "g", "verify_command": 3}));
        fx.change_log(&[entry("Dev", 1, &[], &[("go build ./...", true, "")])]);
        assert_pass(&fx.predicate(
            "CommandSucceeded",
            &[
                ("PatternField", "verify_command"),
                ("Pattern", "build|test"),
            ],
        ));
    }

    #[test]
    fn command_succeeded_fails_when_the_field_is_absent_without_pattern() {
        let fx = Fixture::new("cs-no-field");
        fx.write_json(BRIEF, &json!({"goal": "g"}));
        assert_fail(
            &fx.predicate("CommandSucceeded", &[("PatternField", "verify_command")]),
            &["has no field 'verify_command'"],
        );
    }

    #[test]
    fn command_succeeded_fails_when_the_pattern_source_does_not_exist() {
        let fx = Fixture::new("cs-no-source");
        let result = fx.predicate(
            "CommandSucceeded",
            &[("PatternField", "verify_command"), ("Pattern", "build")],
        );
        assert_fail(
            &result,
            &["PatternSource `.fuseraft/artifacts/brief.json` does not exist"],
        );
    }

    #[test]
    fn command_succeeded_fails_on_a_malformed_pattern_source() {
        let fx = Fixture::new("cs-bad-source");
        fx.write(BRIEF, "{\"verify_command\": ");
        assert_fail(
            &fx.predicate("CommandSucceeded", &[("PatternField", "verify_command")]),
            &["could not parse `.fuseraft/artifacts/brief.json`"],
        );
    }

    #[test]
    fn command_succeeded_needs_a_pattern() {
        let fx = Fixture::new("cs-config");
        assert_fail(
            &fx.predicate("CommandSucceeded", &[]),
            &["requires 'Pattern' or 'PatternField'"],
        );
    }

    #[test]
    fn command_succeeded_fails_on_a_malformed_change_log() {
        let fx = Fixture::new("cs-log-bad");
        fx.write(".fuseraft/state/changes.json", "nope");
        assert_fail(
            &fx.predicate("CommandSucceeded", &[("Pattern", "make")]),
            &["change log `.fuseraft/state/changes.json` is not valid"],
        );
    }

    // FileExists

    #[test]
    fn file_exists_passes_on_a_file() {
        let fx = Fixture::new("fe-ok");
        fx.write("research/raw_data.txt", "data");
        assert_pass(&fx.predicate("FileExists", &[("Path", "research/raw_data.txt")]));
    }

    #[test]
    fn file_exists_fails_on_a_missing_file() {
        let fx = Fixture::new("fe-missing");
        assert_fail(
            &fx.predicate("FileExists", &[("Path", "research/raw_data.txt")]),
            &["`research/raw_data.txt` does not exist"],
        );
    }

    #[test]
    fn file_exists_fails_on_a_directory() {
        let fx = Fixture::new("fe-dir");
        std::fs::create_dir_all(fx.dir().join("research")).unwrap();
        assert_fail(
            &fx.predicate("FileExists", &[("Path", "research")]),
            &["does not exist (it is a directory, not a file)"],
        );
    }

    #[test]
    fn file_exists_needs_a_path() {
        let fx = Fixture::new("fe-config");
        assert_fail(
            &fx.predicate("FileExists", &[]),
            &["FileExists config error: it requires 'Path'"],
        );
    }

    // TestReport

    fn report_check(fx: &Fixture, params: &[(&str, &str)]) -> crate::effect::CheckResult {
        fx.predicate("TestReport", params)
    }

    #[test]
    fn test_report_predicate_passes_with_a_result() {
        let fx = Fixture::new("tp-ok");
        fx.write_json(
            REPORT,
            &json!({"results": [{"criterion": "c", "status": "FAIL"}]}),
        );
        assert_pass(&report_check(&fx, &[]));
    }

    #[test]
    fn test_report_predicate_fails_when_not_found() {
        let fx = Fixture::new("tp-missing");
        fx.write_json(
            BRIEF,
            &json!({"acceptance_criteria": ["prints hi", {"criterion": "exits 0"}]}),
        );
        let result = report_check(&fx, &[]);
        assert_fail(
            &result,
            &[
                "test report `.fuseraft/artifacts/test-report.json` not found",
                "write_file(",
                "1. prints hi",
                "2. exits 0",
            ],
        );
    }

    #[test]
    fn test_report_predicate_fails_on_no_results() {
        let fx = Fixture::new("tp-empty");
        fx.write_json(REPORT, &json!({"results": []}));
        assert_fail(&report_check(&fx, &[]), &["has no results"]);
    }

    #[test]
    fn test_report_predicate_fails_on_malformed_json() {
        let fx = Fixture::new("tp-malformed");
        fx.write(REPORT, "{\"results\": [}");
        assert_fail(&report_check(&fx, &[]), &["TestReport error — test report `.fuseraft/artifacts/test-report.json` could not be parsed"]);
        fx.write(REPORT, "{\"results\": [{\"status\": 1}]}");
        assert_fail(
            &report_check(&fx, &[]),
            &["`results[0].status` must be a string"],
        );
    }

    #[test]
    fn test_report_predicate_reads_the_configured_path() {
        let fx = Fixture::new("tp-path")
            .with_setting("Validation.TestReportPath", "reports/{session_id}.json");
        fx.write_json(
            "reports/s1.json",
            &json!({"results": [{"status": "PASS", "command": "make"}]}),
        );
        assert_pass(&report_check(&fx, &[]));
    }

    #[test]
    fn test_report_predicate_no_failures_passes_without_fail_rows() {
        let fx = Fixture::new("tp-nofail-ok");
        fx.write_json(
            REPORT,
            &json!({"results": [{"criterion": "c", "status": "PASS", "command": "make"}]}),
        );
        assert_pass(&report_check(&fx, &[("NoFailures", "true")]));
    }

    #[test]
    fn test_report_predicate_no_failures_fails_on_fail_rows() {
        let fx = Fixture::new("tp-nofail");
        fx.write_json(REPORT, &json!({"results": [{"criterion": "a", "status": "PASS", "command": "make"}, {"criterion": "b", "status": "fail"}]}));
        assert_fail(
            &report_check(&fx, &[("NoFailures", "True")]),
            &["contains 1 FAIL result(s)", "✗ b: FAIL"],
        );
        assert_pass(&report_check(&fx, &[("NoFailures", "false")]));
    }

    #[test]
    fn test_report_predicate_has_assertions_passes_on_logged_commands() {
        let fx = Fixture::new("tp-assert-ok");
        fx.write_json(REPORT, &json!({"results": [{"criterion": "a", "status": "PASS", "command": "cargo test --test cli"}, {"criterion": "b", "status": "FAIL", "command": "never ran"}]}));
        fx.change_log(&[entry(
            "Tester",
            2,
            &[],
            &[("cd x && Cargo Test --test cli -q", true, "")],
        )]);
        assert_pass(&report_check(&fx, &[("HasAssertions", "true")]));
    }

    #[test]
    fn test_report_predicate_has_assertions_fails_on_fabricated_commands() {
        let fx = Fixture::new("tp-assert");
        fx.write_json(
            REPORT,
            &json!({"results": [
                {"criterion": "a", "status": "PASS", "command": "cargo test --test cli"},
                {"criterion": "b", "status": "PASS", "command": "pytest -q"},
                {"criterion": "c", "status": "PASS"},
            ]}),
        );
        fx.change_log(&[entry(
            "Tester",
            2,
            &[],
            &[
                ("cargo test --test cli", true, ""),
                ("pytest -q", false, "1 failed"),
            ],
        )]);
        let result = report_check(&fx, &[("HasAssertions", "yes")]);
        assert_fail(
            &result,
            &[
                "2 PASS row(s) whose command is not in change log",
                "possible fabrication",
                "✗ b: pytest -q",
                "✗ c: (empty command)",
            ],
        );
        assert!(!result.error.contains("✗ a"));
    }

    #[test]
    fn test_report_predicate_has_assertions_is_lenient_without_a_log() {
        let fx = Fixture::new("tp-assert-nolog");
        fx.write_json(
            REPORT,
            &json!({"results": [{"criterion": "a", "status": "PASS", "command": "anything"}]}),
        );
        assert_pass(&report_check(&fx, &[("HasAssertions", "true")]));
    }

    #[test]
    fn test_report_predicate_has_assertions_fails_on_a_malformed_log() {
        let fx = Fixture::new("tp-assert-badlog");
        fx.write_json(
            REPORT,
            &json!({"results": [{"criterion": "a", "status": "PASS", "command": "anything"}]}),
        );
        fx.write(".fuseraft/state/changes.json", "{\"entries\": \"x\"}");
        assert_fail(
            &report_check(&fx, &[("HasAssertions", "true")]),
            &["`entries` must be an array"],
        );
    }
}
