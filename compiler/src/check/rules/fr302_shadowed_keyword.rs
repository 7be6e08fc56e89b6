//! # FR302 `shadowed-keyword`
//!
//! ## What it does
//! Finds keyword routes that an earlier route of the same state always beats, by the real
//! matching rule: routes are tried top to bottom, and the relaxed matcher accepts a line
//! that *starts with* the keyword followed by whitespace or punctuation. So `HANDOFF`
//! listed before `HANDOFF TO TESTER` takes every line meant for the tester. The finding
//! gives a counterexample line.
//!
//! It does not flag pairs the matcher keeps apart: `APPROVED` before `NOT APPROVED` is
//! fine, because a line must *start* with the keyword.
//!
//! If the agent has the `Handoff` plugin, a `handoff(route_keyword: …)` call still reaches
//! the later route (it is compared by equality), so the finding is a warning; otherwise the
//! later route is dead and the finding is an error.
//!
//! ## Why is this bad?
//! The agent does exactly what its instructions say, and the run goes somewhere else.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Tester
//!   Selection:
//!     Type: keyword
//!     Routes:
//!       - Keyword: HANDOFF
//!         Agent: Dev
//!       - Keyword: HANDOFF TO TESTER
//!         Agent: Tester
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Tester
//!   Selection:
//!     Type: keyword
//!     Routes:
//!       - Keyword: HANDOFF TO TESTER
//!         Agent: Tester
//!       - Keyword: HANDOFF
//!         Agent: Dev
//! ```

use super::super::context::Ctx;
use super::super::matcher::shadowing_line;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{AgentId, Guard, Program, Target, Trigger};

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program) {
    for id in program.state_ids() {
        let exits = &program.state(id).exits;
        for later in 0..exits.len() {
            if ctx.is_dead(id, later) {
                continue;
            }
            let Trigger::Signal {
                text,
                matcher,
                sources,
            } = &exits[later].trigger
            else {
                continue;
            };
            let found = (0..later).find_map(|earlier| {
                let exit = &exits[earlier];
                let Trigger::Signal {
                    text: first,
                    matcher: first_matcher,
                    sources: first_sources,
                } = &exit.trigger
                else {
                    return None;
                };
                let conditional = exit.guards.iter().any(|g| matches!(g, Guard::Cond(_)));
                if first_matcher != matcher
                    || conditional
                    || ctx.is_dead(id, earlier)
                    || !covers(first_sources, sources)
                {
                    return None;
                }
                shadowing_line(*matcher, first, text).map(|line| (earlier, first.clone(), line))
            });
            let Some((earlier, first, line)) = found else {
                continue;
            };
            let handoff = ctx.can_handoff(program, id, &exits[later].trigger);
            let destination = match exits[earlier].target {
                Target::State(target) => format!("`{}`", program.state(target).name),
                Target::End => "the end of the run".to_string(),
            };
            let message = format!(
                "route `{text}` is shadowed by the earlier route `{first}`: routes are tried in order and a line that starts with `{first}` followed by a space or punctuation matches it, so the line `{line}` goes to {destination}"
            );
            let mut diag = if handoff {
                Diagnostic::warning(
                    Code::ShadowedKeyword,
                    format!("{message}; only a `handoff` call reaches this route"),
                )
            } else {
                Diagnostic::error(Code::ShadowedKeyword, message)
            };
            if let Some(span) = ctx.exit_span(&exits[later]) {
                diag = diag.with_label(
                    span,
                    "every line with this keyword matches the earlier route",
                );
            }
            if let Some(span) = ctx.exit_span(&exits[earlier]) {
                diag = diag.with_label(span, "tried first");
            }
            diag = diag.with_help(format!(
                "list `{text}` before `{first}`, or make the keywords differ in their first words"
            ));
            let cause = ctx.push(diag);
            if !handoff {
                ctx.kill(id, later, cause);
            }
        }
    }
}

/// Whether a route limited to `first` agents sees every message `later` sees.
fn covers(first: &[AgentId], later: &[AgentId]) -> bool {
    first.is_empty() || (!later.is_empty() && later.iter().all(|agent| first.contains(agent)))
}
