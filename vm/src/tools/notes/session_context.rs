//! SessionContext (`session_context_write`, `session_context_read`): one plain-text summary
//! of the session that each agent replaces before it hands off and the next one reads; a
//! `HandoffContext` or agent `Context` listing `session_context` injects it.

use serde::{Deserialize, Serialize};

use super::super::{Args, Outcome};
use super::Caller;

/// The most characters a summary may have (a longer write is refused).
pub(super) const MAX_SUMMARY_CHARS: usize = 32_000;

/// The most characters `session_context_read` returns (upstream's default cap).
pub(super) const READ_CHARS: usize = 8_000;

/// The newest summary and who wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SessionContext {
    pub text: String,
    pub agent: String,
    pub turn: u32,
}

pub(super) fn write(slot: &mut Option<SessionContext>, args: &Args, caller: Caller<'_>) -> Outcome {
    let summary = match args.string("summary") {
        Ok(summary) => summary.trim(),
        Err(outcome) => return outcome,
    };
    if summary.is_empty() {
        return Outcome::error("tool `session_context_write`: `summary` must not be empty");
    }
    let chars = summary.chars().count();
    if chars > MAX_SUMMARY_CHARS {
        return Outcome::error(format!(
            "tool `session_context_write`: the summary has {chars} characters, more than the \
             {MAX_SUMMARY_CHARS} allowed; shorten it"
        ));
    }
    *slot = Some(SessionContext {
        text: summary.to_string(),
        agent: caller.agent.to_string(),
        turn: caller.turn,
    });
    Outcome::ok(format!(
        "Session context updated ({chars} characters); the next agent can read it."
    ))
}

pub(super) fn read(slot: Option<&SessionContext>) -> Outcome {
    let Some(context) = slot else {
        return Outcome::ok(
            "No session context yet: this is the first turn or no agent wrote one. Write one \
             with `session_context_write` before handing off.",
        );
    };
    let chars = context.text.chars().count();
    let mut text: String = context.text.chars().take(READ_CHARS).collect();
    if chars > READ_CHARS {
        text.push_str(&format!(
            "\n\n[session context truncated: {} characters omitted]",
            chars - READ_CHARS
        ));
    }
    Outcome::ok(format!(
        "[Session context, written by {} in turn {}]\n\n{text}",
        context.agent, context.turn
    ))
}
