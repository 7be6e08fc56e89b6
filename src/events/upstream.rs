//! Upstream fuseraft-cli's names for what fuseraft's events record: the extra lines the
//! events file carries so that a consumer written for upstream's `events.jsonl` (its
//! `event_type` names and payload keys) reads a fuseraft run unchanged. fuseraft's own line
//! comes first and is never altered; an alias line follows it.

use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::Run;
use serde_json::{json, Value as Json};

/// Every `event_type` [`aliases`] writes: lines that repeat, under upstream's name, the
/// fuseraft event before them (a reader of fuseraft's events skips them).
pub const NAMES: &[&str] = &[
    "keyword_detected",
    "hitl_escalation",
    "hitl_approved",
    "hitl_rejected",
    "parallel_start",
    "parallel_branch_end",
    "parallel_branch_error",
    "parallel_merge",
    "termination_satisfied",
    "tool_call",
];

/// One upstream event: its `event_type` and payload.
#[derive(Debug, PartialEq)]
pub struct Alias {
    pub name: &'static str,
    pub payload: Json,
}

fn alias(name: &'static str, payload: Json) -> Vec<Alias> {
    vec![Alias { name, payload }]
}

/// The upstream events `event` stands for, in order; none when upstream names it as
/// fuseraft does (or has no such event).
pub fn aliases(event: &Event, run: &Run) -> Vec<Alias> {
    match &event.kind {
        EventKind::SignalDetected { signal, .. } => {
            alias("keyword_detected", json!({ "keyword": signal }))
        }
        EventKind::HitlRequested { from, to, signal } => alias(
            "hitl_escalation",
            json!({ "from": from, "to": to, "reason": signal }),
        ),
        EventKind::HitlAnswered {
            approved,
            redirect_chars,
        } => {
            let name = if *approved {
                "hitl_approved"
            } else {
                "hitl_rejected"
            };
            let mut payload = json!({});
            if let Some(chars) = redirect_chars {
                payload["redirect_chars"] = json!(chars);
            }
            alias(name, payload)
        }
        EventKind::ForkStart {
            state, branches, ..
        } => alias(
            "parallel_start",
            json!({ "state": state, "branches": branches }),
        ),
        EventKind::BranchEnd { state } => alias("parallel_branch_end", json!({ "state": state })),
        EventKind::BranchError { error } => {
            alias("parallel_branch_error", json!({ "error": error }))
        }
        EventKind::ForkJoin { strategy, branches } => alias(
            "parallel_merge",
            json!({ "strategy": strategy, "branches": branches }),
        ),
        EventKind::TerminationTriggered {} => alias("termination_satisfied", json!({})),
        EventKind::TurnEnd { .. } => tool_calls(event, run),
        _ => Vec::new(),
    }
}

/// The tool calls of the turn `event` ends (its agent's replies in that turn), in order;
/// the audit chain reads them too.
pub(crate) fn turn_calls<'a>(
    event: &'a Event,
    run: &'a Run,
) -> impl Iterator<Item = &'a fuseraft_vm::history::ToolCall> {
    let agent = event.agent.as_deref();
    run.history
        .iter()
        .filter(move |message| {
            message.role == Role::Assistant
                && message.turn == event.turn
                && Some(message.agent.as_str()) == agent
        })
        .flat_map(|message| &message.tool_calls)
}

/// `tool_call {tool_name, args, ok}` for each tool call of the turn `event` ends, in order.
fn tool_calls(event: &Event, run: &Run) -> Vec<Alias> {
    turn_calls(event, run)
        .map(|call| Alias {
            name: "tool_call",
            payload: json!({ "tool_name": call.name, "args": call.args, "ok": call.ok }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_alias_is_a_fuseraft_event() {
        for name in NAMES {
            assert!(!EventKind::ALL.contains(name), "{name}");
        }
    }
}
