//! The registries of checks a route or a contract can be gated on: the validators and the
//! contract predicate types fuseraft runs. The lowering refuses any other name, `check`
//! documents them and the VM dispatches on these enums, so a name the compiler accepts is one
//! the VM runs, by construction.

/// A validator (`Validator:` on keyword routes and graph edges, `Validators:` on graph nodes
/// and `Termination`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Validator {
    RequireBrief,
    RequireWriteFile,
    RequireAllFilesWritten,
    RequireShellPass,
    TestReportValid,
    RequireReviewJudgement,
    RequireRelatedTestsPass,
    RequireAcceptanceCriteriaPassed,
    /// The turn called `session_context_write` successfully (issue 15).
    RequireSessionContextWrite,
}

/// Validators upstream has and fuseraft does not run: naming one is a compile error that
/// says so, rather than a gate that fails every time at run time.
pub const UNIMPLEMENTED_VALIDATORS: &[&str] = &["BlockOnConsecutiveFail", "ArchitectureValidator"];

impl Validator {
    pub const ALL: &'static [Validator] = &[
        Validator::RequireBrief,
        Validator::RequireWriteFile,
        Validator::RequireAllFilesWritten,
        Validator::RequireShellPass,
        Validator::TestReportValid,
        Validator::RequireReviewJudgement,
        Validator::RequireRelatedTestsPass,
        Validator::RequireAcceptanceCriteriaPassed,
        Validator::RequireSessionContextWrite,
    ];

    /// The name as upstream spells it.
    pub fn name(self) -> &'static str {
        match self {
            Validator::RequireBrief => "RequireBrief",
            Validator::RequireWriteFile => "RequireWriteFile",
            Validator::RequireAllFilesWritten => "RequireAllFilesWritten",
            Validator::RequireShellPass => "RequireShellPass",
            Validator::TestReportValid => "TestReportValid",
            Validator::RequireReviewJudgement => "RequireReviewJudgement",
            Validator::RequireRelatedTestsPass => "RequireRelatedTestsPass",
            Validator::RequireAcceptanceCriteriaPassed => "RequireAcceptanceCriteriaPassed",
            Validator::RequireSessionContextWrite => "RequireSessionContextWrite",
        }
    }

    /// The validator a written name stands for, ignoring ASCII case and surrounding space.
    pub fn parse(name: &str) -> Option<Validator> {
        let name = name.trim();
        Validator::ALL
            .iter()
            .copied()
            .find(|validator| validator.name().eq_ignore_ascii_case(name))
    }
}

/// A contract predicate type (`Type:` of a `Requires` entry).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PredicateType {
    FilesWritten,
    CommandSucceeded,
    FileExists,
    TestReport,
    RelatedTestsPass,
}

/// Predicate types upstream has and fuseraft does not run.
pub const UNIMPLEMENTED_PREDICATES: &[&str] = &["ChecklistComplete"];

impl PredicateType {
    pub const ALL: &'static [PredicateType] = &[
        PredicateType::FilesWritten,
        PredicateType::CommandSucceeded,
        PredicateType::FileExists,
        PredicateType::TestReport,
        PredicateType::RelatedTestsPass,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PredicateType::FilesWritten => "FilesWritten",
            PredicateType::CommandSucceeded => "CommandSucceeded",
            PredicateType::FileExists => "FileExists",
            PredicateType::TestReport => "TestReport",
            PredicateType::RelatedTestsPass => "RelatedTestsPass",
        }
    }

    pub fn parse(name: &str) -> Option<PredicateType> {
        let name = name.trim();
        PredicateType::ALL
            .iter()
            .copied()
            .find(|kind| kind.name().eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unimplemented_ones_do_not() {
        for validator in Validator::ALL {
            assert_eq!(Validator::parse(validator.name()), Some(*validator));
            assert_eq!(
                Validator::parse(&validator.name().to_ascii_lowercase()),
                Some(*validator)
            );
        }
        for kind in PredicateType::ALL {
            assert_eq!(PredicateType::parse(kind.name()), Some(*kind));
        }
        for name in UNIMPLEMENTED_VALIDATORS {
            assert_eq!(Validator::parse(name), None);
        }
        for name in UNIMPLEMENTED_PREDICATES {
            assert_eq!(PredicateType::parse(name), None);
        }
    }
}
