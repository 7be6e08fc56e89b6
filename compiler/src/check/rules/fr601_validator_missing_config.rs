//! # FR601 `validator-missing-config`
//!
//! ## What it does
//! Finds validators and contract predicates that need a section of the config that is not
//! there:
//! - a contract predicate without its parameters: `FileExists` without `Path`,
//!   `FilesWritten` without `Source` and `Field`, `CommandSucceeded` without `Pattern` or
//!   `PatternField`, `RelatedTestsPass` without `TestSelector.FindRelatedCommand` and
//!   `FullSuiteCommand` (errors: the contract can never pass);
//! - in graph and workflow configs, validators that upstream silently skips:
//!   `RequireBrief`, `RequireAllFilesWritten` and `RequireAcceptanceCriteriaPassed` without
//!   `Validation.BriefPath`, `TestReportValid` without a `Validation` section,
//!   `RequireRelatedTestsPass` without `TestSelector` (warnings).
//!
//! ## Why is this bad?
//! Either the gate can never pass, so the run loops into `FailureHandling`, or the gate
//! the author wrote is skipped without a word.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!   Contracts:
//!     - Name: Tested
//!       Requires:
//!         - Type: RelatedTestsPass
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - { To: Done, Signal: BUILT, Contract: Tested }
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!   TestSelector:
//!     FindRelatedCommand: "cargo test {file}"
//!     FullSuiteCommand: "cargo test"
//!   Contracts:
//!     - Name: Tested
//!       Requires:
//!         - Type: RelatedTestsPass
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - { To: Done, Signal: BUILT, Contract: Tested }
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::SelectionKind;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let has = |key: &str| {
        config
            .settings
            .iter()
            .any(|(k, v)| k == key && !v.value.trim().is_empty())
    };
    let has_section = |prefix: &str| config.settings.iter().any(|(k, _)| k.starts_with(prefix));
    let mut found = Vec::new();
    for contract in &config.contracts {
        let name = contract.name.as_ref().map_or("?", |n| n.value.as_str());
        for predicate in &contract.requires {
            let Some(kind) = &predicate.kind else {
                continue;
            };
            let param = |key: &str| {
                predicate
                    .params
                    .iter()
                    .any(|(k, v)| k == key && !v.value.trim().is_empty())
            };
            let missing: Option<&str> = match kind.value.to_ascii_lowercase().as_str() {
                "fileexists" if !param("Path") => Some("`Path`"),
                "fileswritten" if !param("Source") || !param("Field") => {
                    Some("`Source` and `Field`")
                }
                "commandsucceeded" if !param("Pattern") && !param("PatternField") => {
                    Some("`Pattern` or `PatternField`")
                }
                "relatedtestspass"
                    if !has("TestSelector.FindRelatedCommand")
                        || !has("TestSelector.FullSuiteCommand") =>
                {
                    Some("`TestSelector.FindRelatedCommand` and `TestSelector.FullSuiteCommand`")
                }
                _ => None,
            };
            if let Some(missing) = missing {
                found.push(
                    Diagnostic::error(
                        Code::ValidatorMissingConfig,
                        format!("predicate `{}` of contract `{name}` needs {missing}: the contract can never pass", kind.value),
                    )
                    .with_label(kind.span, format!("needs {missing}"))
                    .with_help(format!("add {missing}")),
                );
            }
        }
    }
    let graph = config
        .selection
        .kind
        .as_ref()
        .and_then(|k| SelectionKind::parse(&k.value))
        .is_some_and(|k| matches!(k, SelectionKind::Graph | SelectionKind::Workflow));
    if graph {
        for name in config.validator_names() {
            let missing = match name.value.trim().to_ascii_lowercase().as_str() {
                "requirebrief" | "requireallfileswritten" | "requireacceptancecriteriapassed"
                    if !has("Validation.BriefPath") =>
                {
                    Some("`Validation.BriefPath`")
                }
                "testreportvalid" if !has_section("Validation.") => Some("a `Validation` section"),
                "requirerelatedtestspass" if !has_section("TestSelector.") => {
                    Some("`TestSelector`")
                }
                _ => None,
            };
            if let Some(missing) = missing {
                found.push(
                    Diagnostic::warning(
                        Code::ValidatorMissingConfig,
                        format!("validator `{}` is skipped without {missing}: graph configs drop it silently", name.value),
                    )
                    .with_label(name.span, "never runs")
                    .with_help(format!("add {missing}, or remove the validator")),
                );
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
