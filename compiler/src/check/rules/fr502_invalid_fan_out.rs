//! # FR502 `invalid-fan-out`
//!
//! ## What it does
//! Checks parallel transitions (`Parallel: true`) the way upstream runs them: they need
//! `Targets` (error), the join state `To` must not also be a branch (warning: the join
//! would run both as a branch and after the merge), and a `ranked` or `semantic_diff`
//! merge needs a `Merge.Agent` (error). Targets that are not states are reported as
//! `FR102` by the compiler.
//!
//! ## Why is this bad?
//! Without targets the transition silently becomes a plain one; a join among its own
//! branches runs twice; a merge strategy without its agent falls back to `union`.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Sec
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
//!               Targets: [Security, Decide]
//!         Security:
//!           Agent: Sec
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
    let Some(machine) = &config.selection.state_machine else {
        return;
    };
    let mut found = Vec::new();
    for state in &machine.states {
        for transition in state.transitions.iter().filter(|t| t.parallel) {
            if transition.targets.is_empty() {
                found.push(
                    Diagnostic::error(
                        Code::InvalidFanOut,
                        format!("parallel transition from `{}` has no `Targets`", state.name.value),
                    )
                    .with_label(transition.span, "`Parallel: true` needs the branch states under `Targets`")
                    .with_help("list the states to run in parallel under `Targets:`, or remove `Parallel: true`"),
                );
            }
            if let Some(to) = &transition.to {
                for target in transition
                    .targets
                    .iter()
                    .filter(|t| t.value.eq_ignore_ascii_case(&to.value))
                {
                    found.push(
                        Diagnostic::warning(
                            Code::InvalidFanOut,
                            format!("`{}` is both a branch and the join of this fan-out", to.value),
                        )
                        .with_label(target.span, "runs as a parallel branch")
                        .with_label(to.span, "and again after the merge, as the join")
                        .with_help("the join (`To`) should be the state that continues after the branches, not one of them"),
                    );
                }
            }
            if let Some(strategy) = &transition.merge_strategy {
                let needs_agent = matches!(
                    strategy.value.trim().to_ascii_lowercase().as_str(),
                    "ranked" | "semantic_diff"
                );
                if needs_agent && transition.merge_agent.is_none() {
                    found.push(
                        Diagnostic::error(
                            Code::InvalidFanOut,
                            format!("merge strategy `{}` needs a `Merge.Agent`", strategy.value),
                        )
                        .with_label(
                            strategy.span,
                            "an agent merges the branches for this strategy",
                        )
                        .with_help(
                            "add `Agent:` under `Merge:`, or use `union`, `consensus` or `vote`",
                        ),
                    );
                }
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
