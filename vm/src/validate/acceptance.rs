//! `RequireAcceptanceCriteriaPassed`: every machine-testable acceptance criterion of the
//! brief has a passing shell command of the session whose output shows it.

use crate::effect::CheckResult;

use super::artifacts::{contains_ci, Env};
use super::brief::{self, BriefError, Criterion};

/// `RequireAcceptanceCriteriaPassed`: the brief must exist; each criterion given as an
/// object with a non-blank `expected_output_contains` must appear (ignoring case) in the
/// output of some succeeded command of the active session in the change log (all turns,
/// all agents). Plain-string criteria and objects without it are left to the reviewer.
/// Without a change log file no output is known, so every testable criterion is unmet.
pub(super) fn require_acceptance_criteria_passed(env: &Env) -> CheckResult {
    let artifact = match env.brief() {
        Ok(artifact) => artifact,
        Err(error) => return CheckResult::fail(format!("Handoff blocked: {error}")),
    };
    let brief = match brief::load(&artifact) {
        Ok(brief) => brief,
        Err(BriefError::Missing) => {
            return CheckResult::fail(format!(
                "Handoff blocked: brief `{}` does not exist. Write the brief first.",
                artifact.shown
            ))
        }
        Err(BriefError::Invalid(error)) => {
            return CheckResult::fail(format!("Handoff blocked: {error}"))
        }
    };
    let testable: Vec<(&Criterion, &str)> = brief
        .acceptance_criteria
        .iter()
        .flatten()
        .filter_map(|criterion| {
            criterion
                .expected_output_contains
                .as_deref()
                .map(|expected| (criterion, expected))
        })
        .collect();
    if testable.is_empty() {
        return CheckResult::pass();
    }
    let outputs: Vec<String> = match env.change_log() {
        Ok(Some(log)) => log
            .session_entries()
            .flat_map(|entry| entry.commands_run.iter())
            .filter(|command| command.succeeded)
            .map(|command| command.output.clone())
            .collect(),
        Ok(None) => Vec::new(),
        Err(error) => return CheckResult::fail(format!("Handoff blocked: {error}")),
    };
    let unmet: Vec<&(&Criterion, &str)> = testable
        .iter()
        .filter(|(_, expected)| !outputs.iter().any(|output| contains_ci(output, expected)))
        .collect();
    if unmet.is_empty() {
        return CheckResult::pass();
    }
    let mut text = String::from(
        "Handoff blocked: the following acceptance criteria have not been verified by a passing shell command this session:\n",
    );
    for (criterion, expected) in unmet {
        text.push_str(&format!("\n  ✗ {}\n", criterion.text));
        match &criterion.test_command {
            Some(command) => text.push_str(&format!(
                "    Run: {command}\n    Expected in output: \"{expected}\"\n"
            )),
            None => text.push_str(&format!(
                "    Run a command whose output contains: \"{expected}\"\n"
            )),
        }
    }
    text.push_str("\nRun the indicated command(s) with shell_run, confirm the expected output appears, then retry the handoff.");
    CheckResult::fail(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;

    const BRIEF: &str = ".fuseraft/artifacts/brief.json";

    fn check(fx: &Fixture) -> crate::effect::CheckResult {
        fx.validator("RequireAcceptanceCriteriaPassed", &[], vec![])
    }

    fn brief(fx: &Fixture) {
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": ["a"], "acceptance_criteria": [
            "reads well",
            {"criterion": "sqrt works", "test_command": "./kiwi ac.kiwi && echo SQRT_PASS", "expected_output_contains": "SQRT_PASS"},
            {"criterion": "help shows", "expected_output_contains": "usage:"},
            {"criterion": "manual", "expected_output_contains": " "},
        ]}));
    }

    #[test]
    fn acceptance_passes_when_each_testable_criterion_has_output() {
        let fx = Fixture::new("ac-ok");
        brief(&fx);
        fx.change_log(&[
            entry(
                "Dev",
                1,
                &[],
                &[("./kiwi ac.kiwi && echo SQRT_PASS", true, "4.0\nsqrt_pass\n")],
            ),
            entry(
                "Tester",
                2,
                &[],
                &[("./kiwi --help", true, "Usage: kiwi FILE")],
            ),
        ]);
        assert_pass(&check(&fx));
    }

    #[test]
    fn acceptance_passes_without_testable_criteria() {
        let fx = Fixture::new("ac-none");
        fx.write_json(
            BRIEF,
            &json!({"acceptance_criteria": ["reads well", {"criterion": "c"}]}),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn acceptance_fails_when_the_brief_is_missing() {
        let fx = Fixture::new("ac-no-brief");
        assert_fail(
            &check(&fx),
            &["brief `.fuseraft/artifacts/brief.json` does not exist"],
        );
    }

    #[test]
    fn acceptance_fails_on_a_malformed_brief() {
        let fx = Fixture::new("ac-bad-brief");
        fx.write(BRIEF, "{\"acceptance_criteria\": [{\"criterion\": ");
        assert_fail(
            &check(&fx),
            &["brief `.fuseraft/artifacts/brief.json` is invalid JSON"],
        );
        fx.write_json(BRIEF, &json!({"acceptance_criteria": [{"criterion": "c", "expected_output_contains": ["x"]}]}));
        assert_fail(&check(&fx), &["`acceptance_criteria[0].expected_output_contains` must be a string, found an array"]);
    }

    #[test]
    fn acceptance_fails_listing_unverified_criteria() {
        let fx = Fixture::new("ac-unmet");
        brief(&fx);
        fx.change_log(&[entry(
            "Dev",
            1,
            &[],
            &[("./kiwi --help", true, "usage: kiwi")],
        )]);
        let result = check(&fx);
        assert_fail(
            &result,
            &[
                "have not been verified",
                "✗ sqrt works",
                "Run: ./kiwi ac.kiwi && echo SQRT_PASS",
                "Expected in output: \"SQRT_PASS\"",
            ],
        );
        assert!(!result.error.contains("help shows"));
    }

    #[test]
    fn acceptance_fails_on_output_of_failed_commands() {
        let fx = Fixture::new("ac-failed");
        brief(&fx);
        fx.change_log(&[entry(
            "Dev",
            1,
            &[],
            &[
                ("./kiwi ac.kiwi && echo SQRT_PASS", false, "SQRT_PASS"),
                ("./kiwi --help", true, "usage:"),
            ],
        )]);
        assert_fail(&check(&fx), &["✗ sqrt works"]);
    }

    #[test]
    fn acceptance_fails_on_output_of_other_sessions() {
        let fx = Fixture::new("ac-session");
        fx.write_json(BRIEF, &json!({"acceptance_criteria": [{"criterion": "help shows", "expected_output_contains": "usage:"}]}));
        fx.write(
            ".fuseraft/state/changes.json",
            r#"{"activeSessionId":"s1","entries":[{"agent":"D","turnIndex":1,"sessionId":"old","commandsRun":[{"command":"x","succeeded":true,"output":"usage:"}]}]}"#,
        );
        assert_fail(
            &check(&fx),
            &[
                "✗ help shows",
                "Run a command whose output contains: \"usage:\"",
            ],
        );
    }

    #[test]
    fn acceptance_fails_without_a_change_log() {
        let fx = Fixture::new("ac-no-log");
        brief(&fx);
        assert_fail(&check(&fx), &["✗ sqrt works", "✗ help shows"]);
    }

    #[test]
    fn acceptance_fails_on_a_malformed_change_log() {
        let fx = Fixture::new("ac-log-bad");
        brief(&fx);
        fx.write(".fuseraft/state/changes.json", "[");
        assert_fail(
            &check(&fx),
            &["change log `.fuseraft/state/changes.json` is not valid"],
        );
    }
}
