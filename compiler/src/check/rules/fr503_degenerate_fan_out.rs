//! # FR503 `degenerate-fan-out`
//!
//! ## What it does
//! Finds parallel transitions that list the same target twice, and fan-outs with a single
//! branch (a scatter-gather with one participant included; a mapreduce's one mapper runs
//! once per item, so it is no single branch).
//!
//! ## Why is this bad?
//! A duplicate target runs the same agent twice on the same snapshot and skews `vote` and
//! `consensus` merges; a one-branch "parallel" stage is sequential with extra merge text.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Sec
//!     - Name: Style
//!     - Name: Lead
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Decide
//!               Signal: READY
//!               Parallel: true
//!               Targets: [Security, Security]
//!         Security:
//!           Agent: Sec
//!         Style:
//!           Agent: Style
//!         Decide:
//!           Agent: Lead
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Sec
//!     - Name: Style
//!     - Name: Lead
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Decide
//!               Signal: READY
//!               Parallel: true
//!               Targets: [Security, Style]
//!         Security:
//!           Agent: Sec
//!         Style:
//!           Agent: Style
//!         Decide:
//!           Agent: Lead
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let mut found = Vec::new();
    if let Some(machine) = &config.selection.state_machine {
        for state in &machine.states {
            for transition in state.transitions.iter().filter(|t| t.parallel) {
                for (idx, target) in transition.targets.iter().enumerate() {
                    if let Some(first) = transition.targets[..idx]
                        .iter()
                        .find(|t| t.value.eq_ignore_ascii_case(&target.value))
                    {
                        found.push(
                            Diagnostic::warning(
                                Code::DegenerateFanOut,
                                format!(
                                    "`{}` is listed twice in this fan-out's `Targets`",
                                    target.value
                                ),
                            )
                            .with_label(target.span, "runs the same branch again")
                            .with_label(first.span, "first listed here")
                            .with_help("list each branch once"),
                        );
                    }
                }
                let mut distinct: Vec<String> = transition
                    .targets
                    .iter()
                    .map(|t| t.value.to_lowercase())
                    .collect();
                distinct.sort();
                distinct.dedup();
                if distinct.len() == 1 && transition.targets.len() == 1 {
                    found.push(
                        Diagnostic::warning(
                            Code::DegenerateFanOut,
                            format!(
                                "parallel transition from `{}` has a single branch",
                                state.name.value
                            ),
                        )
                        .with_label(transition.targets[0].span, "the only branch")
                        .with_help(
                            "add the other branches, or make it a plain transition to this state",
                        ),
                    );
                }
            }
        }
    }
    if let Some(block) = &config.selection.scatter_gather {
        if block.participants.len() == 1 {
            found.push(
                Diagnostic::warning(
                    Code::DegenerateFanOut,
                    "scatter-gather with a single participant",
                )
                .with_label(block.participants[0].span, "the only participant")
                .with_help("add participants, or use `sequential` selection"),
            );
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
