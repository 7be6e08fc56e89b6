//! # FR303 `catch-all-not-last`
//!
//! ## What it does
//! Finds a tama fsm `"*"` catch-all listed before exact keys of the same state. tama tries
//! `"*"` only when no item has the exact key, wherever it is listed, so the routes still
//! work; the finding is advice that the file reads in a different order than it matches.
//! (fuseraft ranks catch-alls last in the IR, as XState does, instead of making the order
//! an error.) In fuseraft configs the catch-all is an exit without a signal or keyword,
//! which *is* tried in order: one that is not last is `FR304`.
//!
//! ## Why is this bad?
//! Readers, and other tools that read routes top to bottom, take the exact keys after `"*"`
//! for dead code, or "fix" them away.
//!
//! ## Example
//! ```yaml
//! ---
//! name: main
//! pattern: fsm
//! initial: draft
//! states:
//!   draft:
//!     - "*": draft
//!     - done: ~
//! ---
//! ```
//! Use instead:
//! ```yaml
//! ---
//! name: main
//! pattern: fsm
//! initial: draft
//! states:
//!   draft:
//!     - done: ~
//!     - "*": draft
//! ---
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::syntax::tama::FsmNext;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for md in ctx.tama {
        for state in md.states.iter().flatten() {
            let FsmNext::Keyed(items) = &state.next else {
                continue;
            };
            let Some(star) = items.iter().position(|(key, _)| key.value == "*") else {
                continue;
            };
            let after: Vec<_> = items[star + 1..]
                .iter()
                .filter(|(key, _)| key.value != "*")
                .collect();
            if after.is_empty() {
                continue;
            }
            let mut diag = Diagnostic::advice(
                Code::CatchAllNotLast,
                format!("the `\"*\"` catch-all of state `{}` is listed before exact keys: tama still tries them first", state.name.value),
            )
            .with_label(items[star].0.span, "only used when no exact key matches");
            for (key, _) in after {
                diag = diag.with_label(key.span, "still matched before `\"*\"`");
            }
            found.push(
                diag.with_help("list `\"*\"` last so the file reads in the order keys are matched"),
            );
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
