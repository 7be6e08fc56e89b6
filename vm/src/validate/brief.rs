//! The brief (`brief.json`) as the validators read it, and `RequireBrief`.
//!
//! Upstream's brief schema changed between versions; fuseraft reads the newer one and
//! stays compatible with the older:
//! - `files_to_change` entries may be path strings (a08ed130) or `{path, reason}` objects
//!   (a8366d99); both are accepted everywhere a brief is read. Any other element type is
//!   an error, as a wrong element type is a JSON error upstream.
//! - `acceptance_criteria` entries may be strings or objects `{criterion, test_command,
//!   expected_output_contains}` (what `RequireAcceptanceCriteriaPassed` reads; a8366d99
//!   types them as strings only, which would reject those objects).
//! - `implementation` (required non-empty by a8366d99) is not required: a brief without
//!   it is complete.

use serde_json::Value as Json;

use crate::effect::CheckResult;

use super::artifacts::{
    kind, member, opt_string, path_list, read_text, truncate, Artifact, Env, ReadError,
};

/// A parsed brief: the fields the validators read, typed; absent and `null` are `None`.
pub(super) struct Brief {
    /// The file's text, for previews in error messages.
    pub text: String,
    pub goal: Option<String>,
    pub files_to_change: Option<Vec<String>>,
    pub acceptance_criteria: Option<Vec<Criterion>>,
}

/// One acceptance criterion.
pub(super) struct Criterion {
    /// The criterion text (the string, or the object's `criterion`; `(unnamed)` without one).
    pub text: String,
    pub test_command: Option<String>,
    /// Set (non-blank) on machine-testable criteria.
    pub expected_output_contains: Option<String>,
}

/// Why a brief could not be used.
pub(super) enum BriefError {
    /// The file does not exist.
    Missing,
    /// It could not be read or parsed, or a field has the wrong type; the message names the
    /// file.
    Invalid(String),
}

/// Reads and parses the brief at `artifact`.
pub(super) fn load(artifact: &Artifact) -> Result<Brief, BriefError> {
    let text = match read_text(artifact) {
        Ok(text) => text,
        Err(ReadError::Missing) => return Err(BriefError::Missing),
        Err(ReadError::Unreadable(error)) => {
            return Err(BriefError::Invalid(format!(
                "could not read brief `{}`: {error}",
                artifact.shown
            )))
        }
    };
    parse(text).map_err(|error| BriefError::Invalid(format!("brief `{}` {error}", artifact.shown)))
}

fn parse(text: String) -> Result<Brief, String> {
    let root: Json =
        serde_json::from_str(&text).map_err(|error| format!("is invalid JSON: {error}"))?;
    if !root.is_object() {
        return Err(format!("must be a JSON object, found {}", kind(&root)));
    }
    let invalid = |error: String| format!("is invalid: {error}");
    let goal = opt_string(&root, "goal", "").map_err(invalid)?;
    let files_to_change = match member(&root, "files_to_change") {
        None | Some(Json::Null) => None,
        Some(value) => Some(path_list(value, "files_to_change").map_err(invalid)?),
    };
    let acceptance_criteria = match member(&root, "acceptance_criteria") {
        None | Some(Json::Null) => None,
        Some(value) => Some(criteria(value).map_err(invalid)?),
    };
    Ok(Brief {
        text,
        goal,
        files_to_change,
        acceptance_criteria,
    })
}

fn criteria(value: &Json) -> Result<Vec<Criterion>, String> {
    let Some(items) = value.as_array() else {
        return Err(format!(
            "`acceptance_criteria` must be an array, found {}",
            kind(value)
        ));
    };
    let mut criteria = Vec::new();
    for (idx, item) in items.iter().enumerate() {
        let at = format!("acceptance_criteria[{idx}].");
        criteria.push(match item {
            Json::String(text) => Criterion {
                text: text.clone(),
                test_command: None,
                expected_output_contains: None,
            },
            Json::Object(_) => Criterion {
                text: opt_string(item, "criterion", &at)?
                    .unwrap_or_else(|| "(unnamed)".to_string()),
                test_command: opt_string(item, "test_command", &at)?
                    .filter(|text| !text.trim().is_empty()),
                expected_output_contains: opt_string(item, "expected_output_contains", &at)?
                    .filter(|text| !text.trim().is_empty()),
            },
            other => {
                return Err(format!(
                    "`acceptance_criteria[{idx}]` must be a string or an object, found {}",
                    kind(other)
                ))
            }
        });
    }
    Ok(criteria)
}

/// `RequireBrief`: the brief path holds no `{session_id}`; the file exists and is valid
/// JSON; `goal` is non-blank; `files_to_change` and `acceptance_criteria` are non-empty.
pub(super) fn require_brief(env: &Env) -> CheckResult {
    let artifact = match env.brief() {
        Ok(artifact) => artifact,
        Err(error) => return CheckResult::fail(format!("Handoff blocked: {error}")),
    };
    let shown = &artifact.shown;
    let brief = match load(&artifact) {
        Ok(brief) => brief,
        Err(BriefError::Missing) => {
            return CheckResult::fail(format!(
                "Handoff blocked: brief `{shown}` does not exist.\n\n\
                 \x20 1. Identify goal, constraints, acceptance criteria.\n\
                 \x20 2. Explore the codebase with list_files/read_file.\n\
                 \x20 3. write_file `{shown}`:\n\
                 \x20    {{ \"goal\": \"...\", \"files_to_change\": [{{\"path\": \"...\", \"reason\": \"...\"}}], \
                 \"acceptance_criteria\": [\"...\"], \"constraints\": [\"...\"] }}\n\
                 \x20 4. Emit the handoff keyword."
            ))
        }
        Err(BriefError::Invalid(error)) => return CheckResult::fail(format!("Handoff blocked: {error}. Fix and retry.")),
    };
    let current = format!(
        "\n\nCurrent `{shown}`:\n{}\n\nUpdate only the missing field(s) with write_file, then retry the handoff.",
        truncate(&brief.text, 2000)
    );
    if brief
        .goal
        .as_deref()
        .is_none_or(|goal| goal.trim().is_empty())
    {
        return CheckResult::fail(format!(
            "Handoff blocked: brief `{shown}` missing 'goal'. Add one sentence describing what to build.{current}"
        ));
    }
    if brief.files_to_change.as_ref().is_none_or(Vec::is_empty) {
        return CheckResult::fail(format!(
            "Handoff blocked: brief `{shown}` has empty 'files_to_change'. List every file to create or modify.{current}"
        ));
    }
    if brief.acceptance_criteria.as_ref().is_none_or(Vec::is_empty) {
        return CheckResult::fail(format!(
            "Handoff blocked: brief `{shown}` has empty 'acceptance_criteria'. Add at least one testable criterion.{current}"
        ));
    }
    CheckResult::pass()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;

    const BRIEF: &str = ".fuseraft/artifacts/brief.json";

    fn check(fx: &Fixture) -> crate::effect::CheckResult {
        fx.validator("RequireBrief", &[], vec![])
    }

    #[test]
    fn brief_passes_with_object_files() {
        let fx = Fixture::new("brief-objects");
        fx.write_json(
            BRIEF,
            &json!({
                "goal": "Add a flag",
                "files_to_change": [{"path": "src/cli.rs", "reason": "the flag"}],
                "acceptance_criteria": ["--flag prints hi"],
            }),
        );
        assert_pass(&check(&fx));
    }

    #[test]
    fn brief_passes_with_string_files_and_object_criteria() {
        let fx = Fixture::new("brief-strings");
        fx.write_json(BRIEF, &json!({
            "goal": "Add a flag",
            "files_to_change": ["src/cli.rs"],
            "acceptance_criteria": [{"criterion": "prints hi", "expected_output_contains": "hi"}],
        }));
        assert_pass(&check(&fx));
    }

    #[test]
    fn brief_does_not_require_implementation() {
        let fx = Fixture::new("brief-no-impl");
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": ["a"], "acceptance_criteria": ["c"], "implementation": []}));
        assert_pass(&check(&fx));
    }

    #[test]
    fn brief_fails_when_missing() {
        let fx = Fixture::new("brief-missing");
        assert_fail(
            &check(&fx),
            &[
                "brief `.fuseraft/artifacts/brief.json` does not exist",
                "write_file",
            ],
        );
    }

    #[test]
    fn brief_reads_the_configured_path() {
        let fx = Fixture::new("brief-path")
            .with_setting("Validation.BriefPath", "plan/{session_id}.json");
        fx.write_json(
            "plan/s1.json",
            &json!({"goal": "g", "files_to_change": ["a"], "acceptance_criteria": ["c"]}),
        );
        assert_pass(&check(&fx));
        let fx = fx.with_session("s2");
        assert_fail(&check(&fx), &["`plan/s2.json` does not exist"]);
    }

    #[test]
    fn brief_fails_on_malformed_json() {
        let fx = Fixture::new("brief-malformed");
        fx.write(BRIEF, "{\"goal\": \"g\",");
        assert_fail(
            &check(&fx),
            &["brief `.fuseraft/artifacts/brief.json` is invalid JSON"],
        );
    }

    #[test]
    fn brief_fails_on_a_non_object() {
        let fx = Fixture::new("brief-array");
        fx.write(BRIEF, "[\"goal\"]");
        assert_fail(&check(&fx), &["must be a JSON object, found an array"]);
    }

    #[test]
    fn brief_fails_on_non_utf8() {
        let fx = Fixture::new("brief-binary");
        std::fs::create_dir_all(fx.dir().join(".fuseraft/artifacts")).unwrap();
        std::fs::write(fx.dir().join(BRIEF), [0xff, 0xfe, 0x00]).unwrap();
        assert_fail(&check(&fx), &["could not read brief", "not valid UTF-8"]);
    }

    #[test]
    fn brief_fails_on_an_oversized_file() {
        let fx = Fixture::new("brief-huge");
        fx.write(BRIEF, "");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(fx.dir().join(BRIEF))
            .unwrap();
        file.set_len(17 * 1024 * 1024).unwrap(); // sparse: nothing is written
        assert_fail(
            &check(&fx),
            &["could not read brief", "over the 16777216-byte limit"],
        );
    }

    #[test]
    fn brief_fails_when_the_path_is_a_directory() {
        let fx = Fixture::new("brief-dir");
        std::fs::create_dir_all(fx.dir().join(BRIEF)).unwrap();
        assert_fail(&check(&fx), &["could not read brief", "is a directory"]);
    }

    #[test]
    fn brief_fails_on_blank_goal() {
        let fx = Fixture::new("brief-goal");
        fx.write_json(
            BRIEF,
            &json!({"goal": "  ", "files_to_change": ["a"], "acceptance_criteria": ["c"]}),
        );
        assert_fail(
            &check(&fx),
            &["missing 'goal'", "Current `.fuseraft/artifacts/brief.json`"],
        );
        fx.write_json(
            BRIEF,
            &json!({"files_to_change": ["a"], "acceptance_criteria": ["c"]}),
        );
        assert_fail(&check(&fx), &["missing 'goal'"]);
    }

    #[test]
    fn brief_fails_on_goal_of_wrong_type() {
        let fx = Fixture::new("brief-goal-type");
        fx.write_json(
            BRIEF,
            &json!({"goal": 3, "files_to_change": ["a"], "acceptance_criteria": ["c"]}),
        );
        assert_fail(&check(&fx), &["`goal` must be a string, found a number"]);
    }

    #[test]
    fn brief_fails_on_empty_files_to_change() {
        let fx = Fixture::new("brief-files");
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": [], "acceptance_criteria": ["c"]}),
        );
        assert_fail(&check(&fx), &["has empty 'files_to_change'"]);
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": [" "], "acceptance_criteria": ["c"]}),
        );
        assert_fail(&check(&fx), &["has empty 'files_to_change'"]);
        fx.write_json(BRIEF, &json!({"goal": "g", "acceptance_criteria": ["c"]}));
        assert_fail(&check(&fx), &["has empty 'files_to_change'"]);
    }

    #[test]
    fn brief_fails_on_files_to_change_of_wrong_type() {
        let fx = Fixture::new("brief-files-type");
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": "src/a.rs", "acceptance_criteria": ["c"]}),
        );
        assert_fail(
            &check(&fx),
            &["`files_to_change` must be an array, found a string"],
        );
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": ["a", 7], "acceptance_criteria": ["c"]}),
        );
        assert_fail(
            &check(&fx),
            &["`files_to_change[1]` must be a path string or an object"],
        );
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": [{"reason": "r"}], "acceptance_criteria": ["c"]}));
        assert_fail(&check(&fx), &["`files_to_change[0]` has no `path` string"]);
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": [{"path": ["a"]}], "acceptance_criteria": ["c"]}));
        assert_fail(
            &check(&fx),
            &["`files_to_change[0].path` must be a string, found an array"],
        );
    }

    #[test]
    fn brief_fails_on_empty_acceptance_criteria() {
        let fx = Fixture::new("brief-criteria");
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": ["a"], "acceptance_criteria": []}),
        );
        assert_fail(&check(&fx), &["has empty 'acceptance_criteria'"]);
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": ["a"], "acceptance_criteria": null}),
        );
        assert_fail(&check(&fx), &["has empty 'acceptance_criteria'"]);
    }

    #[test]
    fn brief_fails_on_acceptance_criteria_of_wrong_type() {
        let fx = Fixture::new("brief-criteria-type");
        fx.write_json(
            BRIEF,
            &json!({"goal": "g", "files_to_change": ["a"], "acceptance_criteria": [1]}),
        );
        assert_fail(
            &check(&fx),
            &["`acceptance_criteria[0]` must be a string or an object, found a number"],
        );
        fx.write_json(BRIEF, &json!({"goal": "g", "files_to_change": ["a"], "acceptance_criteria": [{"criterion": "c", "expected_output_contains": 5}]}));
        assert_fail(
            &check(&fx),
            &["`acceptance_criteria[0].expected_output_contains` must be a string"],
        );
    }
}
