//! The `validate` effect: the seeds' validators and contract predicates, reading real
//! artifacts on disk (the brief, the test report, the change log) and the current turn.
//!
//! [`run`] evaluates one [`Check`]. Names and predicate types match case-insensitively.
//! Paths are relative to the work dir, with `{session_id}` expanded from the context; a path
//! that still holds `{session_id}`, is absolute or leaves the work dir fails the check.
//! Settings (`Validation.BriefPath`, `Validation.TestReportPath`, `Validation.ChangeLogPath`
//! or `ChangeTracking.Path`, `Validation.TestAssertionPatterns`, `TestSelector.*`) come from
//! [`CheckContext::settings`], with the defaults of the semantics notes §16.
//!
//! Every failure is a [`CheckResult`] whose message names the file and what is wrong; the
//! wording keeps upstream's gist and the phrases the failure classifier keys on ("does not
//! exist", "not found", "missing" → MissingEvidence; "fabricated", "not in change log",
//! "not recorded", "cannot be verified" → ConflictingEvidence). Nothing here panics on
//! what it reads from disk.
//!
//! `run` blocks: `RequireRelatedTestsPass` and `RelatedTestsPass` run shell commands with a
//! 120 s timeout, so async callers should use `spawn_blocking`.

mod acceptance;
mod artifacts;
mod brief;
mod predicates;
mod related;
mod review;
mod session_context;
mod shell;
mod test_report;
#[cfg(test)]
mod testutil;
mod write_file;

use std::path::Path;

use fuseraft_compiler::ir::{PredicateType, Validator};

use crate::effect::{Check, CheckContext, CheckKind, CheckOf, CheckResult};
use crate::sandbox::Confinement;

pub use artifacts::{DEFAULT_ASSERTION_PATTERNS, DEFAULT_BRIEF_PATH, DEFAULT_TEST_REPORT_PATH};

/// Evaluates one validator or contract predicate against `context` and the files under
/// `work_dir`; a command it runs is confined by `confinement` (the run's, of `work_dir`). The names are those of the registries in `ir` (`ir::Validator`,
/// `ir::PredicateType`), which the lowering enforces; a name outside them (a hand-written
/// IR program, a checkpoint from elsewhere) fails the check naming the valid ones, never
/// silently passes it.
pub fn run(
    check: &Check,
    context: &CheckContext,
    work_dir: &Path,
    confinement: &Confinement,
) -> CheckResult {
    let env = artifacts::Env {
        check,
        context,
        work_dir,
        confinement,
    };
    match &check.of {
        CheckOf::Validator(validator) => match validator {
            Validator::RequireBrief => brief::require_brief(&env),
            Validator::RequireWriteFile => write_file::require_write_file(&env),
            Validator::RequireAllFilesWritten => write_file::require_all_files_written(&env),
            Validator::RequireShellPass => shell::require_shell_pass(&env),
            Validator::TestReportValid => test_report::test_report_valid(&env),
            Validator::RequireReviewJudgement => review::require_review_judgement(&env),
            Validator::RequireRelatedTestsPass => related::require_related_tests_pass(&env),
            Validator::RequireAcceptanceCriteriaPassed => {
                acceptance::require_acceptance_criteria_passed(&env)
            }
            Validator::RequireSessionContextWrite => {
                session_context::require_session_context_write(&env)
            }
        },
        CheckOf::Predicate(predicate) => match predicate {
            PredicateType::FilesWritten => predicates::files_written(&env),
            PredicateType::CommandSucceeded => predicates::command_succeeded(&env),
            PredicateType::FileExists => predicates::file_exists(&env),
            PredicateType::TestReport => predicates::test_report(&env),
            PredicateType::RelatedTestsPass => related::related_tests_pass(&env),
        },
        CheckOf::Unknown {
            kind: CheckKind::Validator,
            name,
        } => CheckResult::fail(format!(
            "unknown validator `{name}`. Valid: {}.",
            names(Validator::ALL.iter().map(|validator| validator.name()))
        )),
        CheckOf::Unknown {
            kind: CheckKind::Predicate,
            name,
        } => CheckResult::fail(format!(
            "unknown predicate type `{name}`. Valid: {}.",
            names(PredicateType::ALL.iter().map(|kind| kind.name()))
        )),
    }
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use fuseraft_compiler::ir::{PredicateType, Validator};

    /// The registries the compiler enforces are the ones this module runs: every member,
    /// in any case, reaches its own check (whatever that check decides on an empty work
    /// dir), never the unknown-name failure.
    #[test]
    fn every_registered_name_runs() {
        let fx = Fixture::new("registry");
        for validator in Validator::ALL {
            for name in [
                validator.name().to_string(),
                validator.name().to_ascii_uppercase(),
            ] {
                let result = fx.validator(&name, &[], vec![]);
                assert!(
                    !result.error.contains("unknown validator"),
                    "{name}: {}",
                    result.error
                );
            }
        }
        for kind in PredicateType::ALL {
            let result = fx.predicate(kind.name(), &[]);
            assert!(
                !result.error.contains("unknown predicate type"),
                "{}: {}",
                kind.name(),
                result.error
            );
        }
    }

    #[test]
    fn unknown_validator_fails_naming_it() {
        let fx = Fixture::new("unknown-validator");
        let result = fx.validator("RequireMagic", &[], vec![]);
        assert_fail(
            &result,
            &["unknown validator `RequireMagic`", "RequireShellPass"],
        );
    }

    #[test]
    fn unknown_predicate_fails_listing_the_valid_types() {
        let fx = Fixture::new("unknown-predicate");
        assert_fail(
            &fx.predicate("ChecklistComplete", &[]),
            &[
                "unknown predicate type `ChecklistComplete`",
                "FilesWritten, CommandSucceeded",
            ],
        );
        assert_fail(&fx.predicate("", &[]), &["unknown predicate type ``"]);
    }

    #[test]
    fn validator_names_are_not_predicate_types() {
        let fx = Fixture::new("kind-mismatch");
        assert_fail(
            &fx.predicate("RequireBrief", &[]),
            &["unknown predicate type"],
        );
        assert_fail(
            &fx.validator("FileExists", &[("Path", "x")], vec![]),
            &["unknown validator"],
        );
    }

    #[test]
    fn names_match_ignoring_case() {
        let fx = Fixture::new("name-case");
        fx.write("present.txt", "x");
        assert_pass(&fx.predicate("fileEXISTS", &[("path", "present.txt")]));
        let result = fx.validator(
            "requireshellPASS",
            &[],
            vec![assistant(vec![shell("ls", "ok")])],
        );
        assert_pass(&result);
    }

    #[test]
    fn paths_expand_the_session_id() {
        let fx = Fixture::new("session-expand").with_session("ab12cd34");
        fx.write("sessions/ab12cd34/brief.json", "{}");
        assert_pass(&fx.predicate(
            "FileExists",
            &[("Path", "sessions/{session_id}/brief.json")],
        ));
    }

    #[test]
    fn paths_with_an_unexpanded_session_id_fail() {
        let fx = Fixture::new("session-missing").with_session("");
        fx.write("sessions/{session_id}/brief.json", "{}");
        let result = fx.predicate(
            "FileExists",
            &[("Path", "sessions/{session_id}/brief.json")],
        );
        assert_fail(
            &result,
            &["contains `{session_id}` but no session id is set"],
        );
        let fx = fx.with_setting("Validation.BriefPath", ".fuseraft/{session_id}/brief.json");
        assert_fail(
            &fx.validator("RequireBrief", &[], vec![]),
            &["no session id is set"],
        );
    }

    #[test]
    fn paths_that_leave_the_work_dir_fail() {
        let fx = Fixture::new("escape");
        assert_fail(
            &fx.predicate("FileExists", &[("Path", "../outside.json")]),
            &["escapes the work dir"],
        );
        assert_fail(
            &fx.predicate("FileExists", &[("Path", "a/../../outside.json")]),
            &["escapes the work dir"],
        );
        assert_fail(
            &fx.predicate("FileExists", &[("Path", "/etc/passwd")]),
            &["is absolute"],
        );
        let fx = fx.with_setting("Validation.TestReportPath", "/tmp/report.json");
        assert_fail(
            &fx.validator("TestReportValid", &[], vec![]),
            &["is absolute"],
        );
    }

    #[test]
    fn paths_with_inner_parent_dirs_stay_allowed() {
        let fx = Fixture::new("inner-parent");
        fx.write("a/b.txt", "x");
        std::fs::create_dir_all(fx.dir().join("a/c")).unwrap();
        assert_pass(&fx.predicate("FileExists", &[("Path", "a/c/../b.txt")]));
    }

    #[cfg(unix)]
    #[test]
    fn paths_through_a_symlink_out_of_the_work_dir_fail() {
        let fx = Fixture::new("symlink");
        let outside = Fixture::new("symlink-target");
        outside.write("secret.json", "{}");
        std::os::unix::fs::symlink(outside.dir(), fx.dir().join("link")).unwrap();
        assert_fail(
            &fx.predicate("FileExists", &[("Path", "link/secret.json")]),
            &["resolves outside the work dir"],
        );
    }
}
