//! # FR304 `unconditional-exit-shadows`
//!
//! ## What it does
//! Finds an exit that is always taken (a transition without `Signal`, a graph edge without
//! `Keyword`) followed by other exits of the same state. Exits are tried in order and the
//! unconditional one matches every reply, so the ones after it never fire.
//!
//! ## Why is this bad?
//! The later exits look like part of the workflow (a reviewer's "changes requested" loop,
//! an escalation) but are dead. In a state machine an unconditional transition even fires
//! before the state's agent has spoken.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Reviewer
//!     - Name: Dev
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Review
//!       States:
//!         Review:
//!           Agent: Reviewer
//!           Transitions:
//!             - To: Done
//!             - To: Fix
//!               Signal: CHANGES REQUESTED
//!         Fix:
//!           Agent: Dev
//!           Transitions:
//!             - To: Review
//!               Signal: FIXED
//!         Done:
//!           Agent: Reviewer
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Reviewer
//!     - Name: Dev
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Review
//!       States:
//!         Review:
//!           Agent: Reviewer
//!           Transitions:
//!             - To: Fix
//!               Signal: CHANGES REQUESTED
//!             - To: Done
//!               Signal: APPROVED
//!         Fix:
//!           Agent: Dev
//!           Transitions:
//!             - To: Review
//!               Signal: FIXED
//!         Done:
//!           Agent: Reviewer
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Guard, Program, Trigger};

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program) {
    for id in program.state_ids() {
        let exits = &program.state(id).exits;
        let first = exits.iter().position(|exit| {
            matches!(exit.trigger, Trigger::Always | Trigger::Otherwise)
                && !exit
                    .guards
                    .iter()
                    .any(|g| matches!(g, Guard::Cond(_) | Guard::CounterBelow(..)))
        });
        let Some(first) = first else { continue };
        let shadowed: Vec<usize> = (first + 1..exits.len())
            .filter(|idx| !ctx.is_dead(id, *idx))
            .collect();
        if shadowed.is_empty() {
            continue;
        }
        let name = &program.state(id).name;
        let count = if shadowed.len() == 1 {
            "the exit after it".to_string()
        } else {
            format!("the {} exits after it", shadowed.len())
        };
        let mut diag = Diagnostic::error(
            Code::UnconditionalExitShadows,
            format!(
                "an exit of `{name}` without a signal is always taken, so {count} can never fire"
            ),
        );
        if let Some(span) = ctx.exit_span(&exits[first]) {
            diag = diag.with_label(span, "always taken: no `Signal` or `Keyword`");
        }
        for idx in &shadowed {
            if let Some(span) = ctx.exit_span(&exits[*idx]) {
                diag = diag.with_label(span, "never reached");
            }
        }
        diag = diag.with_help("move the unconditional exit last, or give it a signal");
        let cause = ctx.push(diag);
        for idx in shadowed {
            ctx.kill(id, idx, cause);
        }
    }
}
