//! What the web view's card says for each kind of event, in words: one exhaustive match over
//! the typed event list, with no catch-all, so a new kind does not compile until it is
//! described (the page never shows an event's raw name and JSON).

use fuseraft_vm::event::{Budget, ContextCap, EventKind, Resend, Via};

/// `a`, `b`, `c`.
fn listed(items: &[String]) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn or_none(text: &Option<String>) -> &str {
    text.as_deref().unwrap_or("")
}

/// What a `model_retry` says: its failure (or, when `again`, that it failed the same way
/// as the retry before it), then how the request is sent again; `None` for other events.
pub fn retry(kind: &EventKind, again: bool) -> Option<String> {
    let EventKind::ModelRetry {
        resend,
        attempt,
        max_retries,
        wait_ms,
        reason,
    } = kind
    else {
        return None;
    };
    let cause = if again { "failed the same way" } else { reason };
    Some(match resend {
        Resend::Again => format!(
            "{cause}; retry {attempt} of {max_retries} in {:.1}s",
            *wait_ms as f64 / 1000.0
        ),
        Resend::Unstreamed => format!("{cause}; trying once without streaming"),
        Resend::Unformatted => format!("{cause}; asking again without a reply format"),
    })
}

/// The one-line text of `kind`.
pub fn describe(kind: &EventKind) -> String {
    match kind {
        EventKind::SessionStart { task, program, .. } => format!("{program} started: {task}"),
        EventKind::SessionResumed { state, turns } => {
            format!("session resumed in `{state}` after {turns} turn(s)")
        }
        EventKind::SessionEnd {
            outcome,
            turns,
            reason,
            ..
        } => {
            let why = reason.as_ref().map(|reason| format!(": {reason}")).unwrap_or_default();
            format!("{} after {turns} turn(s){why}", outcome.as_str())
        }
        EventKind::TurnStart { state } => format!("turn in `{state}`"),
        EventKind::TurnEnd {
            input_tokens,
            output_tokens,
            tool_calls,
            ..
        } => format!("turn done: tokens in {input_tokens} / out {output_tokens}, {tool_calls} tool call(s)"),
        EventKind::MaxTurnsExceeded { turns } => format!("turn cap reached after {turns} turn(s)"),
        EventKind::OperatorMessage { chars } => format!("your message ({chars} characters) goes to the team"),
        EventKind::ModelError { error } => format!("the model failed: {error}"),
        EventKind::ModelRetry { .. } => retry(kind, false).unwrap_or_default(),
        EventKind::RequestFitted {
            model,
            window,
            messages_left_out,
            tokens,
        } => format!("{messages_left_out} older messages left out of this request to fit the {window}-token context window of `{model}` (about {tokens} tokens sent)"),
        EventKind::SignalDetected { signal, via } => match via {
            Via::Handoff => format!("signal `{signal}` (handoff tool)"),
            Via::Text => format!("signal `{signal}` in the reply"),
        },
        EventKind::AgentRouted { from, to, signal, .. } => match signal {
            Some(signal) => format!("{from} → {to} on `{signal}`"),
            None => format!("{from} → {to}"),
        },
        EventKind::MultiKeyword { keywords, consecutive } => format!(
            "several signals in one reply ({}), {consecutive} time(s) in a row",
            listed(keywords)
        ),
        EventKind::KeywordNotFound {
            expected_signals,
            key,
            consecutive,
            ..
        } => {
            let expected = expected_signals
                .as_ref()
                .filter(|signals| !signals.is_empty())
                .map(|signals| format!("; expected one of {}", listed(signals)))
                .unwrap_or_default();
            let what = match key {
                Some(key) => format!("no transition for key `{key}`"),
                None => "no routing signal in the reply".to_string(),
            };
            let count = consecutive.map(|n| format!(" ({n} in a row)")).unwrap_or_default();
            format!("{what}{count}{expected}")
        }
        EventKind::JsonMissing { fields, consecutive, .. } => format!(
            "no JSON object with {} in the reply ({consecutive} in a row)",
            listed(fields)
        ),
        EventKind::CorrectionInjected { reason } => format!("correction sent: {reason}"),
        EventKind::ValidationFail { validator, error, .. } => format!("✗ {validator}: {error}"),
        EventKind::RecoveryActivated { reason, validator } => {
            format!("recovery after `{validator}`: {reason}")
        }
        EventKind::HitlRequested { from, to, signal } => {
            format!("approval asked: {from} → {to} on `{signal}`")
        }
        EventKind::HitlAnswered { approved, redirect_chars } => match (approved, redirect_chars) {
            (true, _) => "approved".to_string(),
            (false, Some(chars)) => format!("refused, with a direction ({chars} characters)"),
            (false, None) => "refused".to_string(),
        },
        EventKind::AdversarialStageStart { stage } => format!("stage `{stage}` begins"),
        EventKind::AdversarialStagePass { state, next } => {
            format!("the critic passed `{state}`; on to `{next}`")
        }
        EventKind::AdversarialStageTimeout { state, next } => {
            format!("`{state}` ran out of rounds without a pass; on to `{next}`")
        }
        EventKind::Warning { message, .. } => format!("warning: {message}"),
        EventKind::BackEdgeEscalation {
            from,
            to,
            visit_count,
            max_revisits,
        } => format!("back edge {from} → {to} taken {visit_count} time(s), over its limit of {max_revisits}"),
        EventKind::PhaseStart { phase, from, to } => format!("phase {phase} begins: {from} → {to}"),
        EventKind::SelectionMade { agent } => format!("the manager picked {agent}"),
        EventKind::SelectionFailed { reply, consecutive } => {
            format!("the manager's reply named no agent ({consecutive} in a row): {reply}")
        }
        EventKind::ForkStart { branches, .. } => format!("fork: {} at once", listed(branches)),
        EventKind::BranchEnd { state } => format!("branch `{state}` done"),
        EventKind::BranchError { error } => format!("a branch failed: {error}"),
        EventKind::ForkJoin { strategy, branches } => format!("{branches} branch(es) merged ({strategy})"),
        EventKind::TerminationTriggered {} => "a termination strategy ended the run".to_string(),
        EventKind::BudgetExceeded(budget) => match budget {
            Budget::Tokens { tokens, max_total_tokens } => {
                format!("token budget spent: {tokens} of {max_total_tokens}")
            }
            Budget::Cost { cost_usd, max_total_cost } => {
                format!("cost budget spent: ${cost_usd:.4} of ${max_total_cost:.4}")
            }
        },
        EventKind::ToolBlocked { tool, result } => format!("⊘ {tool} refused: {result}"),
        EventKind::ToolLimit { max } => format!("the turn's limit of {max} tool calls was reached"),
        EventKind::ContextAssembly { sources, chars } => {
            format!("context assembled: {sources} source(s), {chars} characters")
        }
        EventKind::Compaction {
            mode,
            turns_compacted,
            turns_retained,
            ..
        } => format!("history compacted ({mode}): {turns_compacted} turn(s) summarised, {turns_retained} kept"),
        EventKind::CompactionFailed { error, fallback } => match fallback {
            Some(fallback) => format!("compaction failed ({error}); fell back to {fallback}"),
            None => format!("compaction failed: {error}"),
        },
        EventKind::ContextCapWarning(cap) => match cap {
            ContextCap::Messages { messages, cap, .. } => {
                format!("context near its cap: {messages} messages of {cap}")
            }
            ContextCap::Window {
                tokens,
                window,
                messages_left_out,
                ..
            } => format!("request near the model's window: {tokens} of {window} tokens, {messages_left_out} message(s) left out"),
        },
        EventKind::VerifierScheduled { reason, after } => format!("verifier runs after {after}: {reason}"),
        EventKind::VerifierPassed {} => "the verifier found nothing".to_string(),
        EventKind::VerifierFinding { keyword } => format!("the verifier reported `{keyword}`"),
        EventKind::SubAgentStart { mode, query, .. } => format!("sub-agent ({mode}): {query}"),
        EventKind::SubAgentToolCall { tool, ok, .. } => {
            format!("sub-agent called {tool}{}", if *ok { "" } else { " (failed)" })
        }
        EventKind::SubAgentEnd { outcome, tool_calls, .. } => {
            format!("sub-agent {outcome} after {tool_calls} tool call(s)")
        }
        EventKind::McpServerStarted { server, transport, tools } => {
            format!("MCP server `{server}` started ({transport}, {tools} tools)")
        }
        EventKind::McpToolCall { server, tool, ok, .. } => {
            format!("{server}: {tool}{}", if *ok { "" } else { " (failed)" })
        }
        EventKind::MagenticOrientation { facts, plan } => {
            format!("manager's facts: {}\nmanager's plan:\n{}", or_none(facts), or_none(plan))
        }
        EventKind::MagenticPlan { plan } => format!("plan:\n{}", or_none(plan)),
        EventKind::MagenticPlanRevised { plan } => format!("revised plan:\n{}", or_none(plan)),
        EventKind::MagenticPlanReview { answer, .. } => format!("plan review: {answer}"),
        EventKind::MagenticReplan { cycle, plan, .. } => {
            format!("new plan (replan {cycle}):\n{}", or_none(plan))
        }
        EventKind::MagenticLedger {
            satisfied,
            next_speaker,
            instruction,
            stalls,
            ..
        } => {
            if *satisfied {
                "manager: request satisfied".to_string()
            } else {
                let stall = if *stalls > 0 { format!(" (stall {stalls})") } else { String::new() };
                format!("manager → {}{stall}: {}", or_none(next_speaker), or_none(instruction))
            }
        }
        EventKind::MagenticLedgerInvalid { error, consecutive, .. } => {
            format!("manager's ledger unusable ({consecutive}×): {error}")
        }
        EventKind::MagenticStalled { stalls, cycle } => format!("no progress: {stalls} stall(s) in cycle {cycle}"),
        EventKind::MagenticRoundLimit { rounds } => format!("the manager's limit of {rounds} rounds was reached"),
        EventKind::MagenticResetLimit { resets, .. } => format!("the manager's limit of {resets} replans was reached"),
        EventKind::MagenticComplete { rounds, .. } => format!("the manager finished after {rounds} round(s)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_card_shows_an_event_type_or_json() {
        let kinds = [
            EventKind::PhaseStart {
                phase: 2,
                from: "Review".into(),
                to: "Draft".into(),
            },
            EventKind::AdversarialStagePass {
                state: "Draft".into(),
                next: "Polish".into(),
            },
            EventKind::ModelError {
                error: "HTTP 500".into(),
            },
            EventKind::TerminationTriggered {},
        ];
        for kind in kinds {
            let text = describe(&kind);
            assert!(!text.contains('{') && !text.contains('_'), "{text}");
        }
    }
}
