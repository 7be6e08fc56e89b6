//! The routing trace: one stable, human-readable line per event that matters for routing.
//!
//! ```text
//!   0 Developer    @Developer        signal HANDOFF TO TESTER
//!   0 Developer    @Developer        guard RequireWriteFile failed (1×, → Tester): Handoff blocked: …
//!   0 Developer    @Developer        correction: RequireWriteFile failed
//!   1 Developer    @Developer        signal HANDOFF TO TESTER → Tester
//!   2 Tester       @Tester           signal APPROVED → end
//! ── completed after 3 turns
//! ```
//!
//! Columns: the turn, the agent, the state, what happened. A detected signal and the route it
//! caused share a line; so do an approval request and its answer, and a fork's join and the
//! route to the join target. A turn that produced nothing else shows as `reply`. Token
//! counts, timestamps and temporary paths never appear; long messages keep their first line,
//! cut at 100 characters.

use fuseraft_compiler::ir::{trigger_label, Program, Trigger};
use fuseraft_vm::event::{Budget, EventKind, Via};

use super::route::Taken;
use super::run::{Ran, Record};

/// The longest message kept on a line.
const MAX_MESSAGE: usize = 100;

fn list(items: &[String]) -> String {
    items.join(", ")
}

/// The first line of a message, cut to [`MAX_MESSAGE`] characters, temporary paths replaced.
fn short(message: &str, scrub: &[(String, &'static str)]) -> String {
    let mut message = message.to_string();
    for (path, replacement) in scrub {
        message = message.replace(path.as_str(), replacement);
    }
    let first = message
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    let more = message.trim().lines().count() > 1;
    if first.chars().count() > MAX_MESSAGE {
        let cut: String = first.chars().take(MAX_MESSAGE).collect();
        format!("{}…", cut.trim_end())
    } else if more {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

/// Events the machine emits between detecting a signal and routing on it.
fn between_signal_and_route(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::SignalDetected { .. }
            | EventKind::HitlRequested { .. }
            | EventKind::HitlAnswered { .. }
            | EventKind::PhaseStart { .. }
            | EventKind::BackEdgeEscalation { .. }
            | EventKind::AdversarialStageStart { .. }
            | EventKind::AdversarialStagePass { .. }
            | EventKind::AdversarialStageTimeout { .. }
            | EventKind::Warning { .. }
    )
}

fn via_handoff(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::SignalDetected {
            via: Via::Handoff, ..
        } => " (handoff)",
        _ => "",
    }
}

/// How an adversarial stage ended, for a `adversarial_stage_pass` or `_timeout` event.
fn stage_outcome(kind: &EventKind) -> Option<&'static str> {
    match kind {
        EventKind::AdversarialStagePass { .. } => Some("stage passed"),
        EventKind::AdversarialStageTimeout { .. } => Some("stage timed out"),
        _ => None,
    }
}

fn is_routed(kind: Option<&EventKind>) -> bool {
    matches!(kind, Some(EventKind::AgentRouted { .. }))
}

/// Where the trace is: whose turn, in which state.
struct Cursor {
    agent: Option<String>,
    state: String,
}

fn line(out: &mut String, turn: u32, agent: &str, state: &str, what: &str) {
    let state = format!("@{state}");
    out.push_str(&format!("{turn:>3} {agent:<12} {state:<17} {what}\n"));
}

/// The label of the route an `agent_routed` event took.
fn route_label(program: &Program, record: &Record) -> String {
    let signal = match &record.event.kind {
        EventKind::AgentRouted { signal, .. } => signal.as_deref().unwrap_or_default(),
        _ => "",
    };
    let Some(route) = &record.route else {
        return if signal.is_empty() {
            "route".to_string()
        } else {
            format!("signal {signal}")
        };
    };
    match &route.taken {
        Taken::Exit(idx) => match program.states[route.state].exits.get(*idx) {
            Some(exit) => match &exit.trigger {
                Trigger::Signal { text, .. } => format!("signal {text}"),
                Trigger::FinishKey(key) => format!("key {key}"),
                trigger => trigger_label(program, trigger),
            },
            None => format!("exit {idx}"),
        },
        Taken::Fallback => "fallback".to_string(),
        Taken::Join => "join".to_string(),
        Taken::Ambiguous(_) | Taken::Unknown if !signal.is_empty() => format!("signal {signal}"),
        Taken::Ambiguous(_) | Taken::Unknown => "route".to_string(),
    }
}

/// Does a `turn_end` at `at` start a stretch (until the next turn) in which nothing renders?
fn quiet_after(records: &[Record], at: usize) -> bool {
    records[at + 1..]
        .iter()
        .map(|record| &record.event.kind)
        .take_while(|kind| {
            !matches!(
                kind,
                EventKind::TurnStart { .. }
                    | EventKind::ForkStart { .. }
                    | EventKind::SessionEnd { .. }
            )
        })
        .all(|kind| matches!(kind, EventKind::TurnEnd { .. }))
}

/// Renders a run's trace.
pub fn render(ran: &Ran) -> String {
    let records = &ran.records;
    let program = &ran.program;
    let mut out = String::new();
    let mut cursor = Cursor {
        agent: None,
        state: program.state(program.entry).name.clone(),
    };
    let kind_at = |idx: usize| records.get(idx).map(|record| &record.event.kind);
    // Between `fork_start` and `fork_join`: a branch's turn shows as its `branch done` line.
    let mut in_fork = false;
    for (idx, record) in records.iter().enumerate() {
        let event = &record.event;
        let turn = event.turn;
        let agent = event
            .agent
            .clone()
            .or_else(|| cursor.agent.clone())
            .unwrap_or_else(|| "-".to_string());
        macro_rules! emit {
            ($what:expr) => {{
                let what: String = $what;
                line(&mut out, turn, &agent, &cursor.state, &what)
            }};
        }
        match &event.kind {
            EventKind::SessionStart { start_state, .. } => {
                cursor.state = start_state.clone().unwrap_or_default();
            }
            EventKind::TurnStart { .. } | EventKind::TurnEnd { .. } if in_fork => {}
            EventKind::TurnStart { state } => {
                cursor.agent = event.agent.clone();
                cursor.state = state.clone();
            }
            EventKind::TurnEnd { tool_calls, .. } => {
                if quiet_after(records, idx) {
                    emit!(match tool_calls {
                        0 => "reply".to_string(),
                        1 => "reply (1 tool call)".to_string(),
                        n => format!("reply ({n} tool calls)"),
                    });
                }
            }
            EventKind::SignalDetected { signal, .. } => {
                // Shown on the route line when the route follows, and in the `ambiguous`
                // line when several signals were found.
                let next = records[idx + 1..]
                    .iter()
                    .find(|next| !between_signal_and_route(&next.event.kind));
                let shown_later = next.is_some_and(|next| match &next.event.kind {
                    EventKind::MultiKeyword { .. } => true,
                    EventKind::AgentRouted {
                        signal: Some(routed),
                        ..
                    } => routed.eq_ignore_ascii_case(signal),
                    _ => false,
                });
                if !shown_later {
                    emit!(format!("signal {signal}{}", via_handoff(&event.kind)));
                }
            }
            EventKind::AgentRouted { from, to, .. } => {
                let mut label = route_label(program, record);
                if let Some(EventKind::ForkJoin { strategy, branches }) =
                    idx.checked_sub(1).and_then(kind_at)
                {
                    label = format!("join ({strategy}, {branches} branches)");
                }
                let mut suffix = match idx.checked_sub(1).and_then(kind_at) {
                    Some(EventKind::PhaseStart { phase, .. }) => {
                        format!(" (back edge: phase {phase})")
                    }
                    _ => String::new(),
                };
                if let Some(stage) = records[..idx]
                    .iter()
                    .rev()
                    .take_while(|before| between_signal_and_route(&before.event.kind))
                    .find(|before| {
                        matches!(before.event.kind, EventKind::AdversarialStageStart { .. })
                            || stage_outcome(&before.event.kind).is_some()
                    })
                    .and_then(|before| stage_outcome(&before.event.kind))
                {
                    suffix.push_str(&format!(" ({stage})"));
                }
                // The signal's line was folded into this one: keep how it came.
                let handoff = records[..idx]
                    .iter()
                    .rev()
                    .find(|before| {
                        matches!(before.event.kind, EventKind::SignalDetected { .. })
                            || !between_signal_and_route(&before.event.kind)
                    })
                    .map(|before| via_handoff(&before.event.kind))
                    .unwrap_or_default();
                label.push_str(handoff);
                cursor.state = from.clone();
                let what = format!("{label} → {to}{suffix}");
                line(&mut out, turn, &agent, &cursor.state, &what);
                cursor.state = to.clone();
                cursor.agent = None;
            }
            EventKind::PhaseStart { phase, .. } => {
                if !is_routed(kind_at(idx + 1)) {
                    emit!(format!("phase {phase}"));
                }
            }
            EventKind::ValidationFail {
                validator,
                to,
                consecutive,
                error,
                ..
            } => {
                let to = match to.as_deref() {
                    None | Some("") => String::new(),
                    Some(to) => format!(", → {to}"),
                };
                emit!(format!(
                    "guard {validator} failed ({}×{to}): {}",
                    consecutive.unwrap_or(0).max(1),
                    short(error, &ran.scrub)
                ));
            }
            EventKind::CorrectionInjected { reason } => {
                emit!(format!("correction: {}", short(reason, &ran.scrub)))
            }
            EventKind::MultiKeyword {
                keywords,
                consecutive,
            } => emit!(format!(
                "ambiguous: {} ({}×)",
                list(keywords),
                (*consecutive).max(1)
            )),
            EventKind::KeywordNotFound { key: Some(key), .. } if !key.is_empty() => {
                emit!(format!("no transition for key {key}"))
            }
            EventKind::KeywordNotFound {
                expected_signals,
                consecutive,
                ..
            } => {
                let count = match consecutive {
                    Some(count) if *count > 0 => format!(" ({count}×)"),
                    _ => String::new(),
                };
                let expected = expected_signals.as_deref().unwrap_or_default();
                emit!(format!("no signal (expected {}){count}", list(expected)));
            }
            EventKind::RecoveryActivated { validator, .. } => {
                emit!(format!("recovery {agent} for {validator}"))
            }
            EventKind::HitlRequested { from, to, signal } => {
                let answer = match kind_at(idx + 1) {
                    Some(EventKind::HitlAnswered { approved: true, .. }) => "approved",
                    Some(EventKind::HitlAnswered { .. }) => "refused",
                    _ => "asked",
                };
                if signal.starts_with(fuseraft_vm::machine::PLAN_REVIEW) {
                    // The plan is in the events; the trace keeps the answer.
                    emit!(format!("plan review: {answer}"));
                    continue;
                }
                let on = if signal.is_empty() {
                    String::new()
                } else {
                    format!(" on {signal}")
                };
                emit!(format!("approval {from} → {to}{on}: {answer}"));
            }
            EventKind::HitlAnswered { approved, .. } => {
                let after_request = matches!(
                    idx.checked_sub(1).and_then(kind_at),
                    Some(EventKind::HitlRequested { .. })
                );
                if !after_request {
                    emit!(format!(
                        "approval: {}",
                        if *approved { "approved" } else { "refused" }
                    ));
                }
            }
            EventKind::AdversarialStageStart { stage } => emit!(format!("stage {stage} starts")),
            EventKind::AdversarialStagePass { next, .. }
            | EventKind::AdversarialStageTimeout { next, .. } => {
                // Folded into the route line when the route follows.
                let routed = records[idx + 1..]
                    .iter()
                    .find(|next| !between_signal_and_route(&next.event.kind))
                    .is_some_and(|next| is_routed(Some(&next.event.kind)));
                if !routed {
                    let outcome = stage_outcome(&event.kind).unwrap_or_default();
                    emit!(format!("{outcome} → {next}"));
                }
            }
            EventKind::Warning { message, .. } => {
                emit!(format!("warning: {}", short(message, &ran.scrub)))
            }
            EventKind::BackEdgeEscalation {
                from,
                to,
                visit_count,
                max_revisits,
            } => emit!(format!(
                "escalation: {from} → {to} fired {visit_count} times (max {max_revisits})"
            )),
            EventKind::ForkStart {
                state, branches, ..
            } => {
                in_fork = true;
                cursor.state = state.clone();
                emit!(format!("fork → {}", list(branches)));
            }
            EventKind::BranchEnd { state } => {
                line(&mut out, turn, &agent, state, "branch done");
            }
            EventKind::BranchError { error } => {
                emit!(format!("branch error: {}", short(error, &ran.scrub)))
            }
            EventKind::ForkJoin { strategy, branches } => {
                in_fork = false;
                if !is_routed(kind_at(idx + 1)) {
                    emit!(format!("join ({strategy}, {branches} branches)"));
                }
            }
            EventKind::SelectionMade { agent: chosen } => {
                if !is_routed(kind_at(idx + 1)) {
                    emit!(format!("manager chose {chosen}"));
                }
            }
            EventKind::SelectionFailed { reply, consecutive } => emit!(format!(
                "manager named no agent ({}×): {}",
                (*consecutive).max(1),
                short(reply, &ran.scrub)
            )),
            EventKind::ModelError { error } => {
                emit!(format!("model error: {}", short(error, &ran.scrub)))
            }
            EventKind::ToolBlocked { tool, result } => {
                emit!(format!("tool {tool} denied: {}", short(result, &ran.scrub)))
            }
            EventKind::ToolLimit { max } => emit!(format!("tool limit reached ({max})")),
            EventKind::TerminationTriggered {} => emit!("termination".to_string()),
            EventKind::MagenticRoundLimit { rounds } => {
                emit!(format!("manager round limit reached ({rounds})"))
            }
            EventKind::MagenticOrientation { .. } => {
                emit!("manager oriented: facts and plan".to_string())
            }
            // The plan the rounds start with: shown by its orientation (or review) already.
            EventKind::MagenticPlan { .. } => {}
            EventKind::MagenticLedger {
                satisfied: true, ..
            } => emit!("manager: request satisfied".to_string()),
            EventKind::MagenticLedger {
                next_speaker,
                stalls,
                ..
            } => {
                if !is_routed(kind_at(idx + 1)) {
                    let stalled = if *stalls > 0 {
                        format!(" (stall {stalls})")
                    } else {
                        String::new()
                    };
                    let next = next_speaker.as_deref().unwrap_or_default();
                    emit!(format!("manager ledger: {next}{stalled}"))
                }
            }
            EventKind::MagenticLedgerInvalid {
                consecutive, error, ..
            } => emit!(format!(
                "manager ledger unusable ({}×): {}",
                (*consecutive).max(1),
                short(error, &ran.scrub)
            )),
            EventKind::MagenticStalled { cycle, .. } => {
                emit!(format!("team stalled: replan {cycle}"))
            }
            EventKind::MagenticReplan { cycle, .. } => {
                emit!(format!("manager replanned ({cycle})"))
            }
            EventKind::MagenticPlanRevised { .. } => {
                emit!("manager revised the plan".to_string())
            }
            // The approval line says approved or refused already.
            EventKind::MagenticPlanReview { answer, .. } => {
                if answer == "redirected" {
                    emit!("plan sent back to the manager with the operator's feedback".to_string())
                }
            }
            EventKind::MagenticResetLimit { resets, .. } => {
                emit!(format!("manager out of replans ({resets})"))
            }
            EventKind::MagenticComplete { rounds, .. } => {
                emit!(format!("manager final answer after {rounds} rounds"))
            }
            EventKind::MaxTurnsExceeded { turns } => emit!(format!("turn cap reached ({turns})")),
            EventKind::BudgetExceeded(budget) => {
                let max = match budget {
                    Budget::Tokens {
                        max_total_tokens, ..
                    } => *max_total_tokens,
                    Budget::Cost { .. } => 0,
                };
                emit!(format!("over budget (max {max} tokens)"))
            }
            EventKind::SessionEnd { .. } => {}
            _ => {
                // An event this renderer does not know yet: shown whole rather than lost.
                let payload = event.payload_json();
                let payload = if payload.is_empty() {
                    String::new()
                } else {
                    format!(" {}", short(&payload, &ran.scrub))
                };
                emit!(format!("{}{payload}", event.name()));
            }
        }
    }
    let summary = &ran.summary;
    let turns = if summary.turns == 1 { "turn" } else { "turns" };
    out.push_str(&format!(
        "── {} after {} {turns}\n",
        summary.outcome.as_str(),
        summary.turns
    ));
    if let Some(reason) = &summary.reason {
        out.push_str(&format!("   reason: {}\n", short(reason, &ran.scrub)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keeps_the_first_line_and_scrubs_paths() {
        let scrub = vec![("/tmp/x/work".to_string(), "<work>")];
        assert_eq!(short("one\ntwo", &scrub), "one …");
        assert_eq!(short("at /tmp/x/work/a.txt", &scrub), "at <work>/a.txt");
        let long = "x".repeat(150);
        assert_eq!(short(&long, &scrub).chars().count(), MAX_MESSAGE + 1);
    }
}
