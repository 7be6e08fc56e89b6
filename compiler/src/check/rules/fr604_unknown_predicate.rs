//! # FR604 `unknown-predicate`
//!
//! ## What it does
//! Checks the `Type` of every contract predicate against the types upstream's contract
//! engine evaluates: `FilesWritten`, `CommandSucceeded`, `FileExists`, `TestReport`,
//! `RelatedTestsPass` (the `ir::PredicateType` registry the VM dispatches on). An unknown
//! type, and `ChecklistComplete` (documented but without an evaluator), are compile errors
//! (`compile`, `check` and `exec` refuse the config). The shorthand `- FileExists: { Path: … }` is accepted by
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
use crate::diagnostic::{Code, Diagnostic};

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    // Unknown and unimplemented predicate types are compile errors (`lower/checks.rs`);
    // what is left here is upstream's reading of the shorthand.
    let Some(config) = ctx.config else { return };
    let mut found = Vec::new();
    for contract in &config.contracts {
        let name = contract.name.as_ref().map_or("?", |n| n.value.as_str());
        for predicate in contract
            .requires
            .iter()
            .filter(|predicate| predicate.shorthand)
        {
            let Some(kind) = &predicate.kind else {
                continue;
            };
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
    for diag in found {
        ctx.push(diag);
    }
}
