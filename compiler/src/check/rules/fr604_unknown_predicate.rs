//! # FR604 `unknown-predicate`
//!
//! ## What it does
//! Checks the `Type` of every contract predicate against the types upstream's contract
//! engine evaluates: `FilesWritten`, `CommandSucceeded`, `FileExists`, `TestReport`,
//! `RelatedTestsPass`. An unknown type, and `ChecklistComplete` (documented but without an
//! evaluator), always fail. The shorthand `- FileExists: { Path: … }` is accepted by
//! fuseraft but not by upstream, which binds it to an empty `Type` (a warning).
//!
//! ## Why is this bad?
//! A predicate that always fails makes the contract unsatisfiable: the transition it gates
//! can never fire, and the run loops through re-instructions into `FailureHandling`.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell]
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceded, Pattern: build }
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - { To: Done, Signal: BUILT, Contract: Built }
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell]
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceeded, Pattern: build }
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - { To: Done, Signal: BUILT, Contract: Built }
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};

pub(crate) const PREDICATES: &[&str] = &[
    "FilesWritten",
    "CommandSucceeded",
    "FileExists",
    "TestReport",
    "RelatedTestsPass",
];

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let mut found = Vec::new();
    for contract in &config.contracts {
        let name = contract.name.as_ref().map_or("?", |n| n.value.as_str());
        for predicate in &contract.requires {
            let Some(kind) = &predicate.kind else {
                continue;
            };
            let known = PREDICATES
                .iter()
                .any(|p| p.eq_ignore_ascii_case(kind.value.trim()));
            if kind.value.eq_ignore_ascii_case("ChecklistComplete") {
                found.push(
                    Diagnostic::error(
                        Code::UnknownPredicate,
                        format!("contract `{name}` uses `ChecklistComplete`, which upstream's contract engine cannot evaluate: the contract always fails"),
                    )
                    .with_label(kind.span, "no evaluator for this predicate type")
                    .with_help("use `FilesWritten`, `CommandSucceeded`, `FileExists`, `TestReport` or `RelatedTestsPass`"),
                );
            } else if !known {
                let help = did_you_mean(&kind.value, PREDICATES.iter().copied())
                    .unwrap_or_else(|| format!("predicate types: {}", PREDICATES.join(", ")));
                found.push(
                    Diagnostic::error(
                        Code::UnknownPredicate,
                        format!("unknown predicate type `{}` in contract `{name}`: the contract always fails", kind.value),
                    )
                    .with_label(kind.span, "not a predicate type")
                    .with_help(help),
                );
            } else if predicate.shorthand {
                found.push(
                    Diagnostic::warning(
                        Code::UnknownPredicate,
                        format!("contract `{name}` uses the shorthand `- {}: {{…}}`, which upstream binds to an empty `Type` (it always fails there)", kind.value),
                    )
                    .with_label(kind.span, "fuseraft reads this as `Type`; upstream does not")
                    .with_help(format!("write `- Type: {}` with the parameters beside it", kind.value)),
                );
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
