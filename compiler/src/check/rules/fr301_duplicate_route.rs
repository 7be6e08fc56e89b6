//! # FR301 `duplicate-route`
//!
//! ## What it does
//! Finds two routes out of one state that react to the same thing: the same keyword or
//! signal (compared as the matcher compares, ignoring case) from the same agents, or the
//! same tama fsm key, including two `"*"` catch-alls.
//!
//! ## Why is this bad?
//! Only one of them can ever be taken: keyword routes and state-machine transitions are
//! tried in order (the first wins), graph edges are stored by keyword (the last wins), tama
//! takes the first item with the key (and the last `"*"`). The author meant two different
//! routes, and one of them silently disappeared.
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
//!               Signal: APPROVED
//!             - To: Fix
//!               Signal: approved
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
//!             - To: Done
//!               Signal: APPROVED
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

use super::super::context::Ctx;
use super::super::matcher::same_keyword;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Guard, Matcher, Origin, Program, SelectionKind, Trigger};
use crate::syntax::tama::FsmNext;

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program) {
    let graph = matches!(
        program.origin,
        Origin::Fuseraft(SelectionKind::Graph | SelectionKind::Workflow)
    );
    for id in program.state_ids() {
        let exits = &program.state(id).exits;
        for later in 0..exits.len() {
            let Trigger::Signal {
                text,
                matcher,
                sources,
            } = &exits[later].trigger
            else {
                continue;
            };
            let earlier = (0..later).find(|&earlier| {
                let exit = &exits[earlier];
                // A route whose condition fails falls through to the next one.
                let conditional = exit.guards.iter().any(|g| matches!(g, Guard::Cond(_)));
                matches!(&exit.trigger, Trigger::Signal { text: t, matcher: m, sources: s }
                    if m == matcher && same_keyword(t, text) && same_set(s, sources))
                    && !conditional
            });
            let Some(earlier) = earlier else { continue };
            if ctx.is_dead(id, later) {
                continue;
            }
            let name = &program.state(id).name;
            let (message, label) = if graph {
                (
                    format!("two edges from `{name}` share the keyword `{text}`: upstream keeps only the last one for a keyword"),
                    "the same keyword as an earlier edge",
                )
            } else {
                (
                    format!("route `{text}` out of `{name}` can never be taken: an earlier route reacts to the same {}", what(*matcher)),
                    "never taken: the earlier route wins",
                )
            };
            let mut diag = Diagnostic::error(Code::DuplicateRoute, message);
            if let Some(span) = ctx.exit_span(&exits[later]) {
                diag = diag.with_label(span, label);
            }
            if let Some(span) = ctx.exit_span(&exits[earlier]) {
                diag = diag.with_label(span, "first declared here");
            }
            diag = diag.with_help("give each route its own keyword, or delete one of them");
            let cause = ctx.push(diag);
            if !graph {
                ctx.kill(id, later, cause);
            }
        }
    }
    tama_duplicates(ctx);
}

fn what(matcher: Matcher) -> &'static str {
    match matcher {
        Matcher::Relaxed | Matcher::Strict => "keyword (keywords ignore case)",
        Matcher::Exact => "pass keyword",
    }
}

fn same_set<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().all(|item| b.contains(item))
}

/// tama fsm keys, read from the syntax (the lowering keeps only the winning item).
fn tama_duplicates(ctx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for md in ctx.tama {
        for state in md.states.iter().flatten() {
            let FsmNext::Keyed(items) = &state.next else {
                continue;
            };
            for (later, (key, _)) in items.iter().enumerate() {
                let Some((first, _)) = items[..later].iter().find(|(k, _)| k.value == key.value)
                else {
                    continue;
                };
                let (first_target, later_target) = (
                    items[..later]
                        .iter()
                        .find(|(k, _)| k.value == key.value)
                        .and_then(|(_, t)| t.clone()),
                    items[later].1.clone(),
                );
                let (message, dead, live, dead_target) = if key.value == "*" {
                    (
                        format!(
                            "state `{}` has two `\"*\"` catch-alls: tama uses the last one",
                            state.name.value
                        ),
                        first.span,
                        key.span,
                        first_target,
                    )
                } else {
                    (
                        format!("key `{}` of state `{}` is listed twice: tama takes the first item that has it", key.value, state.name.value),
                        key.span,
                        first.span,
                        later_target,
                    )
                };
                found.push((
                    dead_target.map(|target| target.value),
                    Diagnostic::error(Code::DuplicateRoute, message)
                        .with_label(dead, "never used")
                        .with_label(live, "this one wins")
                        .with_help("give each route its own key, or delete one of them"),
                ));
            }
        }
    }
    for (target, diag) in found {
        let cause = ctx.push(diag);
        if let Some(target) = target {
            ctx.dropped.push((cause, target));
        }
    }
}
