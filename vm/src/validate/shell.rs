//! `RequireShellPass`, and the current-turn rules the other validators share: which tool
//! results count as a passing shell run, and how a command matches a `|` pattern.

use crate::effect::CheckResult;
use crate::history::ToolCall;

use super::artifacts::{contains_ci, newest_entry, Env};

/// Tool results starting with one of these (case-sensitive) are failures. `[EXIT 0]` is a
/// failure too and an empty result a success, as upstream. `[DENIED` has no closing bracket
/// so that the sandbox's `[DENIED: sandbox]` is recognised as well as upstream's `[DENIED]`.
pub(super) const FAILURE_PREFIXES: &[&str] = &["[EXIT", "[ERROR]", "[TIMEOUT]", "[DENIED"];

/// The tool calls of the current turn, newest first.
pub(super) fn turn_calls<'a>(env: &Env<'a>) -> impl Iterator<Item = &'a ToolCall> {
    env.context
        .turn_messages
        .iter()
        .rev()
        .flat_map(|message| message.tool_calls.iter().rev())
}

/// A call that was executed and succeeded: it has a result, the tool reported success,
/// and the result does not start with a failure prefix. (Upstream reads only the prefix;
/// fuseraft's tools also report `ok`, and a call they mark failed never counts.)
pub(super) fn succeeded(call: &ToolCall) -> bool {
    match &call.result {
        Some(result) => {
            call.ok
                && !FAILURE_PREFIXES
                    .iter()
                    .any(|prefix| result.starts_with(prefix))
        }
        None => false,
    }
}

/// The command a `shell_run` call ran: its `command` argument, else its first string
/// argument (upstream's `FindCommand`).
pub(super) fn command_of(call: &ToolCall) -> Option<&str> {
    call.arg("command").or_else(|| {
        call.args
            .as_object()
            .and_then(|args| args.values().find_map(|value| value.as_str()))
    })
}

/// `|`-separated alternatives, each trimmed and matched as a case-insensitive substring;
/// an empty alternative matches every command (upstream's `HistoryHelpers.MatchesPattern`).
pub(super) fn matches_pattern(command: &str, pattern: &str) -> bool {
    pattern
        .split('|')
        .any(|alternative| contains_ci(command, alternative.trim()))
}

/// The newest passing `shell_run` of the current turn whose command matches `pattern`
/// (any passing one when there is no pattern).
pub(super) fn passing_shell_run<'a>(env: &Env<'a>, pattern: Option<&str>) -> Option<&'a ToolCall> {
    turn_calls(env).find(|call| {
        call.is("shell_run")
            && succeeded(call)
            && pattern.is_none_or(|pattern| {
                command_of(call).is_some_and(|command| matches_pattern(command, pattern))
            })
    })
}

/// `RequireShellPass` (+ `RequiredCommandPattern`): (a) a passing `shell_run` in the current
/// turn whose command matches the pattern; else (b) when the change log exists, the single
/// newest entry of the active session holds a succeeded command matching it.
///
/// `RequireCurrentTurn: true` skips (b): upstream's termination form skips the change log
/// once a user boundary was seen, and the current turn always starts after one here.
pub(super) fn require_shell_pass(env: &Env) -> CheckResult {
    let pattern = env.params().required_command_pattern.as_deref();
    if passing_shell_run(env, pattern).is_some() {
        return CheckResult::pass();
    }
    let mut from_log = String::new();
    if !env.params().require_current_turn {
        let log = match env.change_log() {
            Ok(log) => log,
            Err(error) => return CheckResult::fail(format!("Handoff blocked: {error}")),
        };
        if let Some(entry) = log.as_ref().and_then(newest_entry) {
            let matched = entry.commands_run.iter().any(|command| {
                command.succeeded
                    && pattern.is_none_or(|pattern| matches_pattern(&command.command, pattern))
            });
            if matched {
                return CheckResult::pass();
            }
            from_log =
                format!(
                " The change log's newest entry (turn {}, {}) has no succeeded command{} either.",
                entry.turn_index,
                if entry.agent.is_empty() { "unknown agent" } else { &entry.agent },
                if pattern.is_some() { " matching it" } else { "" }
            );
        }
    }
    let matching = pattern
        .map(|pattern| format!(" matching ({pattern})"))
        .unwrap_or_default();
    CheckResult::fail(format!(
        "Handoff blocked: no{matching} shell_run passed this turn.{from_log}\n\n\
         The validator checks THIS TURN ONLY — prior-turn runs do not carry forward.\n\n\
         \x20 1. Call shell_run to run the required command (exit 0).\n\
         \x20 2. Emit the handoff keyword in the same response."
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    fn shell_pass(
        fx: &Fixture,
        pattern: Option<&str>,
        messages: Vec<crate::history::Message>,
    ) -> crate::effect::CheckResult {
        let params: Vec<(&str, &str)> = pattern
            .map(|p| vec![("RequiredCommandPattern", p)])
            .unwrap_or_default();
        fx.validator("RequireShellPass", &params, messages)
    }

    #[test]
    fn shell_pass_passes_on_a_successful_shell_run() {
        let fx = Fixture::new("shell-ok");
        let result = shell_pass(
            &fx,
            None,
            vec![assistant(vec![shell("cargo test", "test result: ok")])],
        );
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_fails_without_any_shell_run() {
        let fx = Fixture::new("shell-none");
        let result = shell_pass(&fx, None, vec![assistant(vec![write_file("a.txt")])]);
        assert_fail(&result, &["no shell_run passed this turn"]);
    }

    #[test]
    fn shell_pass_fails_on_each_failure_prefix() {
        let fx = Fixture::new("shell-prefixes");
        for output in [
            "[EXIT 1]\nboom",
            "[ERROR] bash missing",
            "[TIMEOUT] after 120 s",
            "[DENIED] policy",
            "[DENIED: sandbox] /etc",
        ] {
            let result = shell_pass(
                &fx,
                None,
                vec![assistant(vec![shell_with("cargo test", output, true)])],
            );
            assert_fail(&result, &["no shell_run passed"]);
        }
    }

    #[test]
    fn shell_pass_counts_exit_0_marker_as_failure() {
        let fx = Fixture::new("shell-exit0");
        let result = shell_pass(
            &fx,
            None,
            vec![assistant(vec![shell("cargo test", "[EXIT 0] done")])],
        );
        assert_fail(&result, &["no shell_run passed"]);
    }

    #[test]
    fn shell_pass_prefixes_are_case_sensitive() {
        let fx = Fixture::new("shell-case");
        let result = shell_pass(
            &fx,
            None,
            vec![assistant(vec![shell("cargo test", "[exit 1] lower case")])],
        );
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_counts_empty_output_as_success() {
        let fx = Fixture::new("shell-empty");
        let result = shell_pass(&fx, None, vec![assistant(vec![shell("true", "")])]);
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_fails_when_the_tool_reported_failure() {
        let fx = Fixture::new("shell-notok");
        let result = shell_pass(
            &fx,
            None,
            vec![assistant(vec![shell_with("cargo test", "boom", false)])],
        );
        assert_fail(&result, &["no shell_run passed"]);
    }

    #[test]
    fn shell_pass_fails_on_an_unexecuted_call() {
        let fx = Fixture::new("shell-unexecuted");
        let mut call = shell("cargo test", "");
        call.result = None;
        let result = shell_pass(&fx, None, vec![assistant(vec![call])]);
        assert_fail(&result, &["no shell_run passed"]);
    }

    #[test]
    fn shell_pass_matches_tool_names_by_containment() {
        let fx = Fixture::new("shell-containment");
        let mut call = shell("cargo test", "ok");
        call.name = "Shell-SHELL_RUN".into();
        let result = shell_pass(&fx, None, vec![assistant(vec![call])]);
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_ignores_shell_runs_before_the_turn() {
        // The driver passes only the current turn; an empty turn has no shell run.
        let fx = Fixture::new("shell-empty-turn");
        let result = shell_pass(&fx, None, vec![]);
        assert_fail(&result, &["no shell_run passed"]);
    }

    #[test]
    fn shell_pass_pattern_matches_an_alternative_ignoring_case() {
        let fx = Fixture::new("shell-pattern-ok");
        let result = shell_pass(
            &fx,
            Some("go test | CARGO TEST"),
            vec![assistant(vec![shell("cargo test --all", "ok")])],
        );
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_pattern_fails_on_other_commands() {
        let fx = Fixture::new("shell-pattern-bad");
        let result = shell_pass(
            &fx,
            Some("cargo test|go test"),
            vec![assistant(vec![shell("ls -la", "ok")])],
        );
        assert_fail(
            &result,
            &["no matching (cargo test|go test) shell_run passed"],
        );
    }

    #[test]
    fn shell_pass_pattern_needs_the_matching_run_to_pass() {
        let fx = Fixture::new("shell-pattern-failed");
        let result = shell_pass(
            &fx,
            Some("cargo test"),
            vec![assistant(vec![
                shell_with("cargo test", "[EXIT 101] failed", false),
                shell("ls", "ok"),
            ])],
        );
        assert_fail(&result, &["no matching"]);
    }

    #[test]
    fn shell_pass_pattern_empty_alternative_matches_everything() {
        let fx = Fixture::new("shell-pattern-empty-alt");
        let result = shell_pass(
            &fx,
            Some("cargo test|"),
            vec![assistant(vec![shell("ls", "ok")])],
        );
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_pattern_uses_the_first_string_argument_without_command() {
        let fx = Fixture::new("shell-pattern-firstarg");
        let mut call = shell("unused", "ok");
        call.args = serde_json::json!({"timeout": 30, "cmd": "pytest -q"});
        let result = shell_pass(&fx, Some("pytest"), vec![assistant(vec![call])]);
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_falls_back_to_the_newest_change_log_entry() {
        let fx = Fixture::new("shell-log-ok");
        fx.change_log(&[
            entry("Dev", 1, &[], &[("cargo build", false, "")]),
            entry("Dev", 3, &[], &[("cargo test", true, "ok")]),
        ]);
        let result = shell_pass(&fx, Some("cargo test"), vec![assistant(vec![])]);
        assert_pass(&result);
    }

    #[test]
    fn shell_pass_log_fallback_reads_only_the_newest_entry() {
        let fx = Fixture::new("shell-log-old");
        fx.change_log(&[
            entry("Dev", 1, &[], &[("cargo test", true, "ok")]),
            entry("Dev", 2, &["a.rs"], &[]),
        ]);
        let result = shell_pass(&fx, Some("cargo test"), vec![assistant(vec![])]);
        assert_fail(
            &result,
            &[
                "no matching (cargo test) shell_run passed",
                "newest entry (turn 2, Dev)",
            ],
        );
    }

    #[test]
    fn shell_pass_log_fallback_needs_a_succeeded_command() {
        let fx = Fixture::new("shell-log-failed");
        fx.change_log(&[entry("Dev", 4, &[], &[("cargo test", false, "boom")])]);
        let result = shell_pass(&fx, None, vec![]);
        assert_fail(&result, &["no shell_run passed"]);
    }

    #[test]
    fn shell_pass_log_fallback_ignores_other_sessions() {
        let fx = Fixture::new("shell-log-session");
        fx.write(
            ".fuseraft/state/changes.json",
            r#"{"activeSessionId":"s1","entries":[
                {"agent":"Dev","turnIndex":1,"sessionId":"s1","commandsRun":[{"command":"ls","succeeded":false}]},
                {"agent":"Dev","turnIndex":9,"sessionId":"old","commandsRun":[{"command":"cargo test","succeeded":true}]}]}"#,
        );
        let result = shell_pass(&fx, None, vec![]);
        assert_fail(&result, &["no shell_run passed", "turn 1"]);
    }

    #[test]
    fn shell_pass_log_fallback_is_skipped_with_require_current_turn() {
        let fx = Fixture::new("shell-log-current");
        fx.change_log(&[entry("Dev", 3, &[], &[("cargo test", true, "ok")])]);
        let result = fx.validator(
            "RequireShellPass",
            &[("RequireCurrentTurn", "true")],
            vec![],
        );
        assert_fail(&result, &["no shell_run passed"]);
    }

    #[test]
    fn shell_pass_log_fallback_reads_the_configured_path() {
        let fx = Fixture::new("shell-log-path");
        fx.write(
            "logs/changes.json",
            &change_log_json(&[entry("Dev", 1, &[], &[("make", true, "")])]),
        );
        let fx = fx.with_setting("ChangeTracking.Path", "logs/changes.json");
        assert_pass(&shell_pass(&fx, None, vec![]));
    }

    #[test]
    fn shell_pass_fails_on_a_malformed_change_log() {
        let fx = Fixture::new("shell-log-malformed");
        fx.write(".fuseraft/state/changes.json", "{\"entries\": [");
        let result = shell_pass(&fx, None, vec![]);
        assert_fail(
            &result,
            &["change log `.fuseraft/state/changes.json` is not valid"],
        );
    }

    #[test]
    fn shell_pass_fails_on_a_change_log_of_the_wrong_shape() {
        let fx = Fixture::new("shell-log-shape");
        fx.write(".fuseraft/state/changes.json", "{\"entries\": {\"a\": 1}}");
        let result = shell_pass(&fx, None, vec![]);
        assert_fail(&result, &["`entries` must be an array"]);
        fx.write(".fuseraft/state/changes.json", "[1, 2]");
        let result = shell_pass(&fx, None, vec![]);
        assert_fail(&result, &["expected a JSON object"]);
    }

    #[test]
    fn shell_pass_fails_on_an_unreadable_change_log() {
        let fx = Fixture::new("shell-log-dir");
        std::fs::create_dir_all(fx.dir().join(".fuseraft/state/changes.json")).unwrap();
        let result = shell_pass(&fx, None, vec![]);
        assert_fail(&result, &["could not read change log", "directory"]);
    }
}
