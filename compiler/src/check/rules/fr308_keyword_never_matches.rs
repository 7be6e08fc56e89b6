//! # FR308 `keyword-never-matches`
//!
//! ## What it does
//! Finds routing keywords that the matcher can never see in a reply's text, by the exact
//! rules of upstream's matchers:
//! - keyword routes and state-machine signals (the *relaxed* matcher) delete every `*` and
//!   `_` from a reply line before comparing, but not from the keyword, so a keyword that
//!   contains `_` or `*` (`DEPLOYMENT_COMPLETE`) never equals a line;
//! - graph and workflow keywords (the *strict* matcher) are compared after trimming `*`,
//!   `_` and spaces from both ends of the line, so `_DONE` never matches;
//! - keywords with leading or trailing whitespace never match a trimmed line;
//! - tama lowercases the key passed to `finish`, so an fsm key with an upper-case letter
//!   (`Approve:`) never matches.
//!
//! A keyword the agent can still send through the `handoff` tool (which compares
//! `route_keyword` by equality) is a warning; without the `Handoff` plugin it is an error.
//!
//! ## Why is this bad?
//! The route looks fine and the agent even writes the keyword, but the run never takes it:
//! the agent is nudged again and again until the budget runs out.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Ops
//!       Instructions: Deploy, then say DEPLOYMENT_COMPLETE on its own line.
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Deploy
//!       States:
//!         Deploy:
//!           Agent: Ops
//!           Transitions:
//!             - To: Done
//!               Signal: DEPLOYMENT_COMPLETE
//!         Done:
//!           Agent: Ops
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Ops
//!       Instructions: Deploy, then say DEPLOYMENT COMPLETE on its own line.
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Deploy
//!       States:
//!         Deploy:
//!           Agent: Ops
//!           Transitions:
//!             - To: Done
//!               Signal: DEPLOYMENT COMPLETE
//!         Done:
//!           Agent: Ops
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use super::super::matcher::unmatchable;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Matcher, Program, Trigger};

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program) {
    for id in program.state_ids() {
        for (idx, exit) in program.state(id).exits.iter().enumerate() {
            let (reason, keyword, fix) = match &exit.trigger {
                Trigger::Signal { text, matcher, .. } => match unmatchable(*matcher, text) {
                    Some(reason) => (reason, text.clone(), fixed(*matcher, text)),
                    None => continue,
                },
                Trigger::FinishKey(key) if key.to_lowercase() != *key => (
                    "tama lowercases the key an agent passes to `finish` before looking it up"
                        .to_string(),
                    key.clone(),
                    key.to_lowercase(),
                ),
                _ => continue,
            };
            let handoff = matches!(
                exit.trigger,
                Trigger::Signal {
                    matcher: Matcher::Relaxed | Matcher::Strict,
                    ..
                }
            ) && ctx.can_handoff(program, id, &exit.trigger);
            let span = ctx.exit_span(exit).or_else(|| pass_keyword_span(ctx));
            let mut diag = if handoff {
                Diagnostic::warning(
                    Code::KeywordNeverMatches,
                    format!("`{keyword}` can never match a reply's text: {reason}; only a `handoff(route_keyword: \"{keyword}\")` call can take this route"),
                )
            } else {
                Diagnostic::error(
                    Code::KeywordNeverMatches,
                    format!("`{keyword}` can never match: {reason}"),
                )
            };
            let label = if matches!(exit.trigger, Trigger::FinishKey(_)) {
                "no `finish` key can match this"
            } else {
                "no reply line can match this"
            };
            if let Some(span) = span {
                diag = diag.with_label(span, label);
            }
            diag = diag.with_help(format!("write the keyword as `{fix}`"));
            let cause = ctx.push(diag);
            if !handoff {
                ctx.kill(id, idx, cause);
            }
        }
    }
}

/// The keyword as the matcher would see it.
fn fixed(matcher: Matcher, keyword: &str) -> String {
    match matcher {
        Matcher::Relaxed => keyword
            .replace(['_', '*'], " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        Matcher::Strict => keyword
            .trim()
            .trim_matches(|ch| ch == '*' || ch == '_' || ch == ' ')
            .to_string(),
        Matcher::Exact => keyword.trim().to_string(),
    }
}

/// Adversarial exits carry no location: point at `PassKeyword` when it is written.
fn pass_keyword_span(ctx: &Ctx<'_>) -> Option<crate::source::Span> {
    let adversarial = ctx.config?.selection.adversarial.as_ref()?;
    adversarial
        .pass_keyword
        .as_ref()
        .map(|keyword| keyword.span)
}
