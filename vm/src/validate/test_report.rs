//! The test report (`test-report.json`) as the validators read it, and `TestReportValid`
//! (upstream's HandoffToReviewerValidator).

use serde_json::Value as Json;

use crate::effect::CheckResult;

use super::artifacts::{
    contains_ci, kind, member, opt_string, read_path, read_text, Artifact, Env, ReadError,
};
use super::brief::{self, BriefError};

/// A parsed test report.
pub(super) struct Report {
    /// `None` when `results` is absent or `null`.
    pub results: Option<Vec<Row>>,
    pub fake_test_files: Vec<String>,
}

/// One row of `results`; string fields, absent or `null` as `None`.
pub(super) struct Row {
    pub criterion: Option<String>,
    pub status: Option<String>,
    pub command: Option<String>,
    pub notes: Option<String>,
    pub stderr: Option<String>,
}

impl Row {
    fn status_is(&self, status: &str) -> bool {
        self.status
            .as_deref()
            .is_some_and(|own| own.trim().eq_ignore_ascii_case(status))
    }

    /// `status` is `FAIL` (any case).
    pub(super) fn is_fail(&self) -> bool {
        self.status_is("FAIL")
    }

    /// `status` is `PASS` (any case).
    pub(super) fn is_pass(&self) -> bool {
        self.status_is("PASS")
    }

    pub(super) fn criterion_text(&self) -> &str {
        self.criterion
            .as_deref()
            .filter(|text| !text.trim().is_empty())
            .unwrap_or("(unnamed)")
    }

    /// The trimmed command, empty when absent.
    pub(super) fn command_text(&self) -> &str {
        self.command.as_deref().unwrap_or_default().trim()
    }
}

/// Why a report could not be used.
pub(super) enum ReportError {
    Missing,
    /// Unreadable or unparsable; the message names the file.
    Invalid(String),
}

/// Reads and parses the report at `artifact`. Raw control characters inside JSON strings
/// (shell output pasted into `stdout`) are escaped before parsing, as upstream does.
pub(super) fn load(artifact: &Artifact) -> Result<Report, ReportError> {
    let text = match read_text(artifact) {
        Ok(text) => text,
        Err(ReadError::Missing) => return Err(ReportError::Missing),
        Err(ReadError::Unreadable(error)) => {
            return Err(ReportError::Invalid(format!(
                "could not read test report `{}`: {error}",
                artifact.shown
            )))
        }
    };
    parse(&escape_control_chars(&text)).map_err(|error| {
        ReportError::Invalid(format!(
            "test report `{}` could not be parsed: {error}",
            artifact.shown
        ))
    })
}

fn parse(text: &str) -> Result<Report, String> {
    let root: Json = serde_json::from_str(text).map_err(|error| error.to_string())?;
    if !root.is_object() {
        return Err(format!("expected a JSON object, found {}", kind(&root)));
    }
    let results = match member(&root, "results") {
        None | Some(Json::Null) => None,
        Some(Json::Array(items)) => {
            let mut rows = Vec::new();
            for (idx, item) in items.iter().enumerate() {
                if !item.is_object() {
                    return Err(format!(
                        "`results[{idx}]` must be an object, found {}",
                        kind(item)
                    ));
                }
                let at = format!("results[{idx}].");
                rows.push(Row {
                    criterion: opt_string(item, "criterion", &at)?,
                    status: opt_string(item, "status", &at)?,
                    command: opt_string(item, "command", &at)?,
                    notes: opt_string(item, "notes", &at)?,
                    stderr: opt_string(item, "stderr", &at)?,
                });
            }
            Some(rows)
        }
        Some(other) => return Err(format!("`results` must be an array, found {}", kind(other))),
    };
    let fake_test_files = match member(&root, "fake_test_files") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(idx, item)| match item {
                Json::String(path) => Ok(path.clone()),
                other => Err(format!(
                    "`fake_test_files[{idx}]` must be a string, found {}",
                    kind(other)
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "`fake_test_files` must be an array, found {}",
                kind(other)
            ))
        }
    };
    Ok(Report {
        results,
        fake_test_files,
    })
}

/// Escapes raw U+0000–U+001F characters inside JSON strings (a minimal string-state
/// machine: never inside an escape sequence, never outside strings).
pub(super) fn escape_control_chars(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            out.push(c);
            escaped = in_string;
        } else if c == '"' {
            in_string = !in_string;
            out.push(c);
        } else if in_string && c < '\u{20}' {
            match c {
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                _ => out.push_str(&format!("\\u{:04x}", c as u32)),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Plugin prefixes of tool-call strings; a PASS "command" starting with one (ignoring case)
/// is a file read or search, not a test run.
const TOOL_PREFIXES: &[&str] = &[
    "FileSystem-",
    "Search-",
    "Git-",
    "Scratchpad-",
    "Changes-",
    "MCP-",
];

/// PASS commands shorter than this are not cross-checked against the change log (too short
/// to mean anything; upstream's `MinCommandLen`).
const MIN_COMMAND_LEN: usize = 8;

/// Words too common to tie a reported command to a logged one.
const COMMON_TOKENS: &[&str] = &[
    "build", "clean", "install", "cargo", "dotnet", "python", "node", "npm", "npx",
];

fn looks_like_tool_call(command: &str) -> bool {
    TOOL_PREFIXES.iter().any(|prefix| {
        command
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
    })
}

fn significant_tokens(command: &str) -> Vec<String> {
    const SEPARATORS: &[char] = &[
        ' ', '\t', '/', '\\', '-', '_', '.', ';', '|', '&', '<', '>', '(', ')', '{', '}', '!', '?',
        '=', '"', '\'', '[', ']', '*', '#', '`', ',',
    ];
    command
        .split(SEPARATORS)
        .filter(|token| token.chars().count() > 4)
        .map(str::to_lowercase)
        .filter(|token| !COMMON_TOKENS.contains(&token.as_str()))
        .collect()
}

/// A reported command is backed by a logged one: either contains the other (ignoring
/// case), or they share a significant token (longer than 4 characters, not a common verb).
fn backed_by(reported: &str, logged: &str) -> bool {
    if contains_ci(logged, reported) || contains_ci(reported, logged) {
        return true;
    }
    let tokens = significant_tokens(logged);
    significant_tokens(reported)
        .iter()
        .any(|token| tokens.contains(token))
}

fn bullets<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|item| format!("  ✗ {item}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `TestReportValid`, its checks in upstream's order:
/// 1. the report exists ("not found");
/// 2. it parses, control characters escaped first ("could not be parsed");
/// 3. `results` is non-empty ("no results");
/// 4. no `FAIL` row;
/// 5. every PASS row has a non-blank `command` ("empty" — fabricated);
/// 6. no PASS command is a tool-call string ("tool call");
/// 7. `fake_test_files` is empty ("fake");
/// 8. when the brief exists: it has `acceptance_criteria` and the report has at least as
///    many results; test files among `files_to_change` (paths containing "test") contain
///    one of `Validation.TestAssertionPatterns` ("assertion");
/// 9. when the change log exists: there are recorded commands if there are PASS rows, and
///    each PASS command (8+ characters) is backed by a logged command of the session
///    (failed runs count; a PASS row may test an expected failure). Non-zero `exit_code`
///    on PASS rows is allowed.
///
/// Choices: a malformed brief fails the check (upstream skips the brief checks); test files
/// may be listed as strings or `{path}` objects; an unverified PASS is reported as looking
/// fabricated, so the classifier treats it as conflicting evidence.
pub(super) fn test_report_valid(env: &Env) -> CheckResult {
    let fail = |message: String| CheckResult::fail(format!("Handoff blocked: {message}"));
    let artifact = match env.test_report() {
        Ok(artifact) => artifact,
        Err(error) => return fail(error),
    };
    let shown = &artifact.shown;
    let report = match load(&artifact) {
        Ok(report) => report,
        Err(ReportError::Missing) => {
            return fail(format!(
                "test report not found at `{shown}`.\n\nWrite it with write_file:\n  \
                 {{ \"results\": [{{ \"criterion\": \"...\", \"status\": \"PASS\", \"command\": \"<shell>\", \
                 \"exit_code\": 0 }}], \"fake_test_files\": [] }}"
            ))
        }
        Err(ReportError::Invalid(error)) => {
            return fail(format!(
                "{error}\n\nRebuild it from scratch (do NOT patch the existing file):\n\
                 \x20 1. Re-run all shell_run commands.\n\
                 \x20 2. Limit 'stdout' to 200 chars; replace literal '\"' with single quotes.\n\
                 \x20 3. write_file the corrected report, then retry the handoff."
            ))
        }
    };
    let results = report.results.unwrap_or_default();
    if results.is_empty() {
        return fail(format!(
            "test report `{shown}` has no results. Every acceptance criterion needs an entry."
        ));
    }
    let fails: Vec<&Row> = results.iter().filter(|row| row.is_fail()).collect();
    if !fails.is_empty() {
        return fail(format!(
            "{} FAIL(s) in test report `{shown}`:\n{}\n\nSend the work back to the developer to fix them.",
            fails.len(),
            bullets(fails.iter().map(|row| row.criterion_text()))
        ));
    }
    let passes: Vec<&Row> = results.iter().filter(|row| row.is_pass()).collect();
    let empty: Vec<&&Row> = passes
        .iter()
        .filter(|row| row.command_text().is_empty())
        .collect();
    if !empty.is_empty() {
        return fail(format!(
            "{} PASS result(s) with empty 'command' — fabricated results:\n{}",
            empty.len(),
            bullets(empty.iter().map(|row| row.criterion_text()))
        ));
    }
    let tool_calls: Vec<String> = passes
        .iter()
        .filter(|row| looks_like_tool_call(row.command_text()))
        .map(|row| format!("{}: {}", row.criterion_text(), row.command_text()))
        .collect();
    if !tool_calls.is_empty() {
        return fail(format!(
            "{} PASS result(s) with a tool call in 'command' instead of a real shell command:\n{}",
            tool_calls.len(),
            bullets(tool_calls.iter().map(String::as_str))
        ));
    }
    if !report.fake_test_files.is_empty() {
        return fail(format!(
            "{} declared fake test file(s). Rewrite them with real assertions:\n{}",
            report.fake_test_files.len(),
            bullets(report.fake_test_files.iter().map(String::as_str))
        ));
    }
    if let Err(message) = check_against_brief(env, &results) {
        return fail(message);
    }
    if let Err(message) = check_against_change_log(env, &passes) {
        return fail(message);
    }
    CheckResult::pass()
}

fn check_against_brief(env: &Env, results: &[Row]) -> Result<(), String> {
    let artifact = env.brief()?;
    let brief = match brief::load(&artifact) {
        Ok(brief) => brief,
        Err(BriefError::Missing) => return Ok(()),
        Err(BriefError::Invalid(error)) => return Err(error),
    };
    let Some(criteria) = &brief.acceptance_criteria else {
        return Err(format!(
            "brief `{}` has no 'acceptance_criteria'. The planner must add a non-empty list before \
             the tester can produce a valid test report.",
            artifact.shown
        ));
    };
    if results.len() < criteria.len() {
        return Err(format!(
            "brief has {} criteria but the report has only {}. Missing coverage:\n{}",
            criteria.len(),
            results.len(),
            bullets(
                criteria[results.len()..]
                    .iter()
                    .map(|criterion| criterion.text.as_str())
            )
        ));
    }
    let patterns = env.assertion_patterns()?;
    if patterns.is_empty() {
        return Ok(());
    }
    let mut fake = Vec::new();
    for path in brief.files_to_change.iter().flatten() {
        if !contains_ci(path, "test") {
            continue;
        }
        // Files outside the work dir, missing or unreadable are skipped, as upstream.
        let Some(on_disk) = env.listed_file(path) else {
            continue;
        };
        let Ok(content) = read_path(&on_disk) else {
            continue;
        };
        if !patterns.iter().any(|pattern| pattern.is_match(&content)) {
            fake.push(path.as_str());
        }
    }
    if !fake.is_empty() {
        return Err(format!(
            "test files with no assertions (they always exit 0):\n{}\n\n\
             Rewrite them using real assertion calls of the test framework in use.",
            bullets(fake)
        ));
    }
    Ok(())
}

fn check_against_change_log(env: &Env, passes: &[&Row]) -> Result<(), String> {
    let Some(log) = env.change_log()? else {
        return Ok(());
    };
    let ran: Vec<&str> = log
        .session_entries()
        .flat_map(|entry| entry.commands_run.iter())
        .map(|command| command.command.trim())
        .filter(|command| !command.is_empty())
        .collect();
    if ran.is_empty() {
        if passes.is_empty() {
            return Ok(());
        }
        return Err(format!(
            "{} PASS result(s) but no shell commands recorded this session: the commands are not \
             recorded in the change log, so the results cannot be verified. Run the tests with \
             shell_run before handing off.",
            passes.len()
        ));
    }
    let unverified: Vec<&str> = passes
        .iter()
        .map(|row| row.command_text())
        .filter(|command| command.chars().count() >= MIN_COMMAND_LEN)
        .filter(|command| !ran.iter().any(|logged| backed_by(command, logged)))
        .collect();
    if unverified.is_empty() {
        return Ok(());
    }
    let mut distinct: Vec<&str> = Vec::new();
    for command in &ran {
        if !distinct.contains(command) {
            distinct.push(command);
        }
    }
    Err(format!(
        "{} PASS result(s) not found in the change log; unbacked results look fabricated.\n\n\
         Each PASS must be backed by a real shell_run this session:\n\
         \x20 1. shell_run the command.\n\
         \x20 2. Update 'command' in the test report.\n\
         \x20 3. write_file the report.\n\n\
         Unverified:\n{}\n\nCommands recorded in the change log for this session:\n{}",
        unverified.len(),
        bullets(unverified),
        distinct
            .iter()
            .map(|command| format!("  - {command}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;
    use super::*;

    const REPORT: &str = ".fuseraft/artifacts/test-report.json";
    const BRIEF: &str = ".fuseraft/artifacts/brief.json";

    fn check(fx: &Fixture) -> crate::effect::CheckResult {
        fx.validator("TestReportValid", &[], vec![])
    }

    fn pass_row(criterion: &str, command: &str) -> serde_json::Value {
        json!({"criterion": criterion, "status": "PASS", "command": command, "exit_code": 0})
    }

    fn report(fx: &Fixture, rows: serde_json::Value) {
        fx.write_json(REPORT, &json!({"results": rows, "fake_test_files": []}));
    }

    #[test]
    fn test_report_passes_on_a_valid_report() {
        let fx = Fixture::new("tr-ok");
        report(&fx, json!([pass_row("prints hi", "cargo test --test cli")]));
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_when_not_found() {
        let fx = Fixture::new("tr-missing");
        assert_fail(
            &check(&fx),
            &["test report not found at `.fuseraft/artifacts/test-report.json`"],
        );
    }

    #[test]
    fn test_report_reads_the_configured_path() {
        let fx = Fixture::new("tr-path")
            .with_setting("Validation.TestReportPath", "out/{session_id}/report.json");
        fx.write_json(
            "out/s1/report.json",
            &json!({"results": [pass_row("c", "cargo test")]}),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_on_malformed_json() {
        let fx = Fixture::new("tr-malformed");
        fx.write(REPORT, "{\"results\": [ {\"status\": \"PASS\" ");
        assert_fail(
            &check(&fx),
            &[
                "test report `.fuseraft/artifacts/test-report.json` could not be parsed",
                "Rebuild",
            ],
        );
    }

    #[test]
    fn test_report_fails_on_wrong_types() {
        let fx = Fixture::new("tr-types");
        fx.write(REPORT, "{\"results\": {\"status\": \"PASS\"}}");
        assert_fail(
            &check(&fx),
            &[
                "could not be parsed",
                "`results` must be an array, found an object",
            ],
        );
        fx.write(REPORT, "{\"results\": [\"PASS\"]}");
        assert_fail(
            &check(&fx),
            &["`results[0]` must be an object, found a string"],
        );
        fx.write(
            REPORT,
            "{\"results\": [{\"status\": \"PASS\", \"command\": [\"ls\"]}]}",
        );
        assert_fail(
            &check(&fx),
            &["`results[0].command` must be a string, found an array"],
        );
        fx.write(REPORT, "{\"results\": [{\"status\": \"PASS\", \"command\": \"cargo test\"}], \"fake_test_files\": [1]}");
        assert_fail(&check(&fx), &["`fake_test_files[0]` must be a string"]);
        fx.write(REPORT, "\"PASS\"");
        assert_fail(&check(&fx), &["expected a JSON object, found a string"]);
    }

    #[test]
    fn test_report_escapes_raw_control_characters_before_parsing() {
        let fx = Fixture::new("tr-control");
        fx.write(REPORT, "{\"results\": [{\"criterion\": \"c\", \"status\": \"PASS\", \"command\": \"go test ./...\", \"stdout\": \"ok\tpkg\n\u{1}done\"}]}");
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_escape_keeps_escapes_and_outside_whitespace() {
        assert_eq!(
            escape_control_chars("{\n\"a\\\"\tb\": \"x\\n\"\n}"),
            "{\n\"a\\\"\\tb\": \"x\\n\"\n}"
        );
    }

    #[test]
    fn test_report_fails_on_no_results() {
        let fx = Fixture::new("tr-empty");
        report(&fx, json!([]));
        assert_fail(&check(&fx), &["has no results"]);
        fx.write(REPORT, "{\"fake_test_files\": []}");
        assert_fail(&check(&fx), &["has no results"]);
    }

    #[test]
    fn test_report_fails_on_fail_row() {
        let fx = Fixture::new("tr-fail");
        report(
            &fx,
            json!([pass_row("a", "cargo test"), {"criterion": "prints hi", "status": "fail", "command": "cargo run"}]),
        );
        assert_fail(&check(&fx), &["1 FAIL(s) in test report", "✗ prints hi"]);
    }

    #[test]
    fn test_report_fails_on_pass_row_with_empty_command() {
        let fx = Fixture::new("tr-empty-cmd");
        report(
            &fx,
            json!([pass_row("a", "cargo test"), {"criterion": "b", "status": "PASS", "command": "  "}, {"criterion": "c", "status": "PASS"}]),
        );
        assert_fail(
            &check(&fx),
            &[
                "2 PASS result(s) with empty 'command'",
                "fabricated",
                "✗ b",
                "✗ c",
            ],
        );
    }

    #[test]
    fn test_report_passes_on_non_pass_rows_without_command() {
        let fx = Fixture::new("tr-skip-cmd");
        report(
            &fx,
            json!([pass_row("a", "cargo test"), {"criterion": "manual", "status": "SKIP"}]),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_on_tool_call_command() {
        let fx = Fixture::new("tr-toolcall");
        for command in [
            "FileSystem-read_file path=src/a.rs",
            "search-grep foo",
            "MCP-run x",
            "changes-list",
        ] {
            report(&fx, json!([pass_row("a", command)]));
            assert_fail(
                &check(&fx),
                &["1 PASS result(s) with a tool call in 'command'"],
            );
        }
    }

    #[test]
    fn test_report_passes_on_commands_with_multibyte_text() {
        let fx = Fixture::new("tr-multibyte");
        report(
            &fx,
            json!([pass_row("a", "éééééééééé run"), pass_row("b", "€")]),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_on_fake_test_files() {
        let fx = Fixture::new("tr-fake");
        fx.write_json(REPORT, &json!({"results": [pass_row("a", "cargo test")], "fake_test_files": ["tests/fake.rs"]}));
        assert_fail(
            &check(&fx),
            &["1 declared fake test file(s)", "✗ tests/fake.rs"],
        );
    }

    #[test]
    fn test_report_allows_non_zero_exit_code_on_pass() {
        let fx = Fixture::new("tr-exit");
        report(
            &fx,
            json!([{"criterion": "rejects bad input", "status": "PASS", "command": "./bin/app --bad", "exit_code": 2}]),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_passes_when_results_cover_the_criteria() {
        let fx = Fixture::new("tr-coverage-ok");
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": ["src/a.rs"], "acceptance_criteria": ["one", {"criterion": "two"}]}));
        report(
            &fx,
            json!([
                pass_row("one", "cargo test one"),
                pass_row("two", "cargo test two")
            ]),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_when_results_do_not_cover_the_criteria() {
        let fx = Fixture::new("tr-coverage");
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": ["src/a.rs"], "acceptance_criteria": ["one", "two", "three"]}));
        report(&fx, json!([pass_row("one", "cargo test one")]));
        assert_fail(
            &check(&fx),
            &[
                "brief has 3 criteria but the report has only 1",
                "✗ two",
                "✗ three",
            ],
        );
    }

    #[test]
    fn test_report_fails_when_the_brief_has_no_criteria() {
        let fx = Fixture::new("tr-no-criteria");
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": ["src/a.rs"]}),
        );
        report(&fx, json!([pass_row("one", "cargo test")]));
        assert_fail(&check(&fx), &["has no 'acceptance_criteria'"]);
    }

    #[test]
    fn test_report_fails_on_a_malformed_brief() {
        let fx = Fixture::new("tr-bad-brief");
        fx.write(BRIEF, "{\"acceptance_criteria\": [");
        report(&fx, json!([pass_row("one", "cargo test")]));
        assert_fail(
            &check(&fx),
            &["brief `.fuseraft/artifacts/brief.json` is invalid JSON"],
        );
    }

    #[test]
    fn test_report_passes_when_test_files_have_assertions() {
        let fx = Fixture::new("tr-assert-ok");
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": [{"path": "tests/cli_test.rs"}, "src/a.rs", "tests/missing_test.rs"], "acceptance_criteria": ["one"]}));
        fx.write(
            "tests/cli_test.rs",
            "#[test]\nfn t() { assert_eq!(1, 1); }\n",
        );
        fx.write("src/a.rs", "fn main() {}\n");
        report(&fx, json!([pass_row("one", "cargo test")]));
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_on_test_files_without_assertion() {
        let fx = Fixture::new("tr-assert");
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": ["tests/cli_test.rs", {"path": "spec/Unit_TEST.py"}], "acceptance_criteria": ["one"]}));
        fx.write(
            "tests/cli_test.rs",
            "#[test]\nfn t() { println!(\"ok\"); }\n",
        );
        fx.write(
            "spec/Unit_TEST.py",
            "def test_x():\n    self.ASSERTEQUAL(1, 1)\n",
        );
        report(&fx, json!([pass_row("one", "cargo test")]));
        let result = check(&fx);
        assert_fail(
            &result,
            &["test files with no assertions", "✗ tests/cli_test.rs"],
        );
        assert!(!result.error.contains("Unit_TEST"), "{}", result.error);
    }

    #[test]
    fn test_report_reads_configured_assertion_patterns() {
        let fx = Fixture::new("tr-assert-config").with_setting(
            "Validation.TestAssertionPatterns",
            "must_equal\n\nverify\\(",
        );
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": ["a_test.go"], "acceptance_criteria": ["one"]}),
        );
        fx.write("a_test.go", "func TestA(t *testing.T) { t.Error(\"x\") }");
        report(&fx, json!([pass_row("one", "go test ./...")]));
        assert_fail(&check(&fx), &["✗ a_test.go"]);
        fx.write("a_test.go", "func TestA() { Verify(x) }");
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_on_an_invalid_assertion_pattern() {
        let fx = Fixture::new("tr-assert-invalid")
            .with_setting("Validation.TestAssertionPatterns", "assert(");
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": ["a_test.go"], "acceptance_criteria": ["one"]}),
        );
        report(&fx, json!([pass_row("one", "go test ./...")]));
        assert_fail(
            &check(&fx),
            &["Validation.TestAssertionPatterns: invalid regex `assert(`"],
        );
    }

    #[test]
    fn test_report_skips_listed_test_files_outside_the_work_dir() {
        let fx = Fixture::new("tr-assert-escape");
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": ["../other/x_test.rs", "/etc/test"], "acceptance_criteria": ["one"]}));
        report(&fx, json!([pass_row("one", "cargo test")]));
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_passes_when_pass_commands_are_in_the_change_log() {
        let fx = Fixture::new("tr-log-ok");
        fx.change_log(&[entry(
            "Tester",
            3,
            &[],
            &[
                ("cd app && cargo test --test cli -- --nocapture", true, ""),
                ("pytest tests/test_parser.py", false, "1 failed"),
            ],
        )]);
        report(
            &fx,
            json!([
                pass_row("a", "cargo test --test cli"), // substring of a logged command
                pass_row("b", "python3 -m pytest test_parser.py"), // shares the token `pytest`
                pass_row("c", "ls"),                    // too short to check
            ]),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn test_report_fails_on_pass_commands_not_in_the_change_log() {
        let fx = Fixture::new("tr-log-missing");
        fx.change_log(&[entry(
            "Tester",
            3,
            &[],
            &[("cargo build --release", true, "")],
        )]);
        report(
            &fx,
            json!([
                pass_row("a", "npm run integration"),
                pass_row("b", "cargo build")
            ]),
        );
        let result = check(&fx);
        assert_fail(
            &result,
            &[
                "1 PASS result(s) not found in the change log",
                "fabricated",
                "✗ npm run integration",
                "- cargo build --release",
            ],
        );
    }

    #[test]
    fn test_report_common_tokens_do_not_back_a_command() {
        let fx = Fixture::new("tr-log-common");
        fx.change_log(&[entry("Tester", 3, &[], &[("dotnet build src", true, "")])]);
        report(&fx, json!([pass_row("a", "dotnet install tools")]));
        assert_fail(&check(&fx), &["not found in the change log"]);
    }

    #[test]
    fn test_report_fails_when_no_commands_are_recorded() {
        let fx = Fixture::new("tr-log-empty");
        fx.change_log(&[entry("Tester", 3, &["tests/a.rs"], &[])]);
        report(&fx, json!([pass_row("a", "cargo test")]));
        assert_fail(
            &check(&fx),
            &[
                "1 PASS result(s) but no shell commands recorded",
                "not recorded",
                "cannot be verified",
            ],
        );
    }

    #[test]
    fn test_report_ignores_commands_of_other_sessions() {
        let fx = Fixture::new("tr-log-session");
        fx.write(
            ".fuseraft/state/changes.json",
            r#"{"activeSessionId":"s1","entries":[{"agent":"T","turnIndex":1,"sessionId":"old","commandsRun":[{"command":"cargo test","succeeded":true}]}]}"#,
        );
        report(&fx, json!([pass_row("a", "cargo test")]));
        assert_fail(&check(&fx), &["no shell commands recorded"]);
    }

    #[test]
    fn test_report_fails_on_a_malformed_change_log() {
        let fx = Fixture::new("tr-log-bad");
        fx.write(".fuseraft/state/changes.json", "{");
        report(&fx, json!([pass_row("a", "cargo test")]));
        assert_fail(
            &check(&fx),
            &["change log `.fuseraft/state/changes.json` is not valid"],
        );
    }
}
