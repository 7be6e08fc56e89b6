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
use fuseraft_vm::event::Event;
use serde_json::Value as Json;

use super::route::Taken;
use super::run::{Ran, Record};

/// The longest message kept on a line.
const MAX_MESSAGE: usize = 100;

fn text<'a>(event: &'a Event, key: &str) -> &'a str {
    event
        .payload
        .get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
}

fn number(event: &Event, key: &str) -> u64 {
    event
        .payload
        .get(key)
        .and_then(Json::as_u64)
        .unwrap_or_default()
}

fn list(event: &Event, key: &str) -> String {
    event
        .payload
        .get(key)
        .and_then(Json::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_string)
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
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
const BETWEEN_SIGNAL_AND_ROUTE: &[&str] = &[
    "signal_detected",
    "hitl_requested",
    "hitl_answered",
    "phase_start",
    "back_edge_escalation",
    "adversarial_stage_start",
    "adversarial_stage_pass",
    "adversarial_stage_timeout",
    "warning",
];

fn via_handoff(event: &Event) -> &'static str {
    if text(event, "via") == "handoff" {
        " (handoff)"
    } else {
        ""
    }
}

fn stage_outcome(event: &Event) -> &'static str {
    if event.event_type == "adversarial_stage_pass" {
        "stage passed"
    } else {
        "stage timed out"
    }
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
    let signal = text(&record.event, "signal");
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
        .map(|record| record.event.event_type)
        .take_while(|kind| !matches!(*kind, "turn_start" | "fork_start" | "session_end"))
        .all(|kind| kind == "turn_end")
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
    let kind_at = |idx: usize| records.get(idx).map(|record| record.event.event_type);
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
        match event.event_type {
            "session_start" => {
                cursor.state = text(event, "start_state").to_string();
            }
            "turn_start" | "turn_end" if in_fork => {}
            "turn_start" => {
                cursor.agent = event.agent.clone();
                cursor.state = text(event, "state").to_string();
            }
            "turn_end" => {
                if quiet_after(records, idx) {
                    let tools = number(event, "tool_calls");
                    emit!(match tools {
                        0 => "reply".to_string(),
                        1 => "reply (1 tool call)".to_string(),
                        n => format!("reply ({n} tool calls)"),
                    });
                }
            }
            "signal_detected" => {
                // Shown on the route line when the route follows, and in the `ambiguous`
                // line when several signals were found.
                let signal = text(event, "signal");
                let next = records[idx + 1..]
                    .iter()
                    .find(|next| !BETWEEN_SIGNAL_AND_ROUTE.contains(&next.event.event_type));
                let shown_later = next.is_some_and(|next| {
                    next.event.event_type == "multi_keyword"
                        || (next.event.event_type == "agent_routed"
                            && text(&next.event, "signal").eq_ignore_ascii_case(signal))
                });
                if !shown_later {
                    emit!(format!("signal {signal}{}", via_handoff(event)));
                }
            }
            "agent_routed" => {
                let to = text(event, "to");
                let mut label = route_label(program, record);
                if idx > 0 && kind_at(idx - 1) == Some("fork_join") {
                    let join = &records[idx - 1].event;
                    label = format!(
                        "join ({}, {} branches)",
                        text(join, "strategy"),
                        number(join, "branches")
                    );
                }
                let mut suffix = match idx.checked_sub(1).map(|at| &records[at].event) {
                    Some(phase) if phase.event_type == "phase_start" => {
                        format!(" (back edge: phase {})", number(phase, "phase"))
                    }
                    _ => String::new(),
                };
                if let Some(stage) = records[..idx]
                    .iter()
                    .rev()
                    .take_while(|before| {
                        BETWEEN_SIGNAL_AND_ROUTE.contains(&before.event.event_type)
                    })
                    .find(|before| before.event.event_type.starts_with("adversarial_stage_"))
                    .filter(|before| before.event.event_type != "adversarial_stage_start")
                {
                    suffix.push_str(&format!(" ({})", stage_outcome(&stage.event)));
                }
                // The signal's line was folded into this one: keep how it came.
                let handoff = records[..idx]
                    .iter()
                    .rev()
                    .find(|before| {
                        before.event.event_type == "signal_detected"
                            || !BETWEEN_SIGNAL_AND_ROUTE.contains(&before.event.event_type)
                    })
                    .filter(|before| before.event.event_type == "signal_detected")
                    .map(|before| via_handoff(&before.event))
                    .unwrap_or_default();
                if !handoff.is_empty() {
                    label.push_str(handoff);
                }
                let from = text(event, "from").to_string();
                cursor.state = from;
                let what = format!("{label} → {to}{suffix}");
                line(&mut out, turn, &agent, &cursor.state, &what);
                cursor.state = to.to_string();
                cursor.agent = None;
            }
            "phase_start" => {
                if kind_at(idx + 1) != Some("agent_routed") {
                    emit!(format!("phase {}", number(event, "phase")));
                }
            }
            "validation_fail" => {
                let to = text(event, "to");
                let to = if to.is_empty() {
                    String::new()
                } else {
                    format!(", → {to}")
                };
                emit!(format!(
                    "guard {} failed ({}×{to}): {}",
                    text(event, "validator"),
                    number(event, "consecutive").max(1),
                    short(text(event, "error"), &ran.scrub)
                ));
            }
            "correction_injected" => emit!(format!(
                "correction: {}",
                short(text(event, "reason"), &ran.scrub)
            )),
            "multi_keyword" => emit!(format!(
                "ambiguous: {} ({}×)",
                list(event, "keywords"),
                number(event, "consecutive").max(1)
            )),
            "keyword_not_found" => {
                let key = text(event, "key");
                if !key.is_empty() {
                    emit!(format!("no transition for key {key}"));
                } else {
                    let count = number(event, "consecutive");
                    let count = if count > 0 {
                        format!(" ({count}×)")
                    } else {
                        String::new()
                    };
                    emit!(format!(
                        "no signal (expected {}){count}",
                        list(event, "expected_signals")
                    ));
                }
            }
            "recovery_activated" => {
                emit!(format!("recovery {agent} for {}", text(event, "validator")))
            }
            "hitl_requested" => {
                let answer = records
                    .get(idx + 1)
                    .filter(|next| next.event.event_type == "hitl_answered")
                    .map(|next| {
                        if next.event.payload.get("approved").and_then(Json::as_bool) == Some(true)
                        {
                            "approved"
                        } else {
                            "refused"
                        }
                    })
                    .unwrap_or("asked");
                let signal = text(event, "signal");
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
                emit!(format!(
                    "approval {} → {}{on}: {answer}",
                    text(event, "from"),
                    text(event, "to")
                ));
            }
            "hitl_answered" => {
                if idx == 0 || kind_at(idx - 1) != Some("hitl_requested") {
                    let approved =
                        event.payload.get("approved").and_then(Json::as_bool) == Some(true);
                    emit!(format!(
                        "approval: {}",
                        if approved { "approved" } else { "refused" }
                    ));
                }
            }
            "adversarial_stage_start" => emit!(format!("stage {} starts", text(event, "stage"))),
            "adversarial_stage_pass" | "adversarial_stage_timeout" => {
                // Folded into the route line when the route follows.
                let routed = records[idx + 1..]
                    .iter()
                    .find(|next| !BETWEEN_SIGNAL_AND_ROUTE.contains(&next.event.event_type))
                    .is_some_and(|next| next.event.event_type == "agent_routed");
                if !routed {
                    emit!(format!(
                        "{} → {}",
                        stage_outcome(event),
                        text(event, "next")
                    ));
                }
            }
            "warning" => emit!(format!(
                "warning: {}",
                short(text(event, "message"), &ran.scrub)
            )),
            "back_edge_escalation" => emit!(format!(
                "escalation: {} → {} fired {} times (max {})",
                text(event, "from"),
                text(event, "to"),
                number(event, "visit_count"),
                number(event, "max_revisits")
            )),
            "fork_start" => {
                in_fork = true;
                cursor.state = text(event, "state").to_string();
                emit!(format!("fork → {}", list(event, "branches")));
            }
            "branch_end" => {
                let branch = text(event, "state");
                line(&mut out, turn, &agent, branch, "branch done");
            }
            "branch_error" => emit!(format!(
                "branch error: {}",
                short(text(event, "error"), &ran.scrub)
            )),
            "fork_join" => {
                in_fork = false;
                if kind_at(idx + 1) != Some("agent_routed") {
                    emit!(format!(
                        "join ({}, {} branches)",
                        text(event, "strategy"),
                        number(event, "branches")
                    ));
                }
            }
            "selection_made" => {
                if kind_at(idx + 1) != Some("agent_routed") {
                    emit!(format!("manager chose {}", text(event, "agent")));
                }
            }
            "selection_failed" => emit!(format!(
                "manager named no agent ({}×): {}",
                number(event, "consecutive").max(1),
                short(text(event, "reply"), &ran.scrub)
            )),
            "model_error" => emit!(format!(
                "model error: {}",
                short(text(event, "error"), &ran.scrub)
            )),
            "tool_blocked" => emit!(format!(
                "tool {} denied: {}",
                text(event, "tool"),
                short(text(event, "result"), &ran.scrub)
            )),
            "tool_limit" => emit!(format!("tool limit reached ({})", number(event, "max"))),
            "termination_triggered" => emit!("termination".to_string()),
            "magentic_round_limit" => {
                emit!(format!(
                    "manager round limit reached ({})",
                    number(event, "rounds")
                ))
            }
            "magentic_orientation" => emit!("manager oriented: facts and plan".to_string()),
            // The plan the rounds start with: shown by its orientation (or review) already.
            "magentic_plan" => {}
            "magentic_ledger" => {
                if event.payload.get("satisfied").and_then(Json::as_bool) == Some(true) {
                    emit!("manager: request satisfied".to_string())
                } else if kind_at(idx + 1) != Some("agent_routed") {
                    let stalls = number(event, "stalls");
                    let stalled = if stalls > 0 {
                        format!(" (stall {stalls})")
                    } else {
                        String::new()
                    };
                    emit!(format!(
                        "manager ledger: {}{stalled}",
                        text(event, "next_speaker")
                    ))
                }
            }
            "magentic_ledger_invalid" => emit!(format!(
                "manager ledger unusable ({}×): {}",
                number(event, "consecutive").max(1),
                short(text(event, "error"), &ran.scrub)
            )),
            "magentic_stalled" => emit!(format!("team stalled: replan {}", number(event, "cycle"))),
            "magentic_replan" => emit!(format!("manager replanned ({})", number(event, "cycle"))),
            "magentic_plan_revised" => emit!("manager revised the plan".to_string()),
            // The approval line says approved or refused already.
            "magentic_plan_review" => {
                if text(event, "answer") == "redirected" {
                    emit!("plan sent back to the manager with the operator's feedback".to_string())
                }
            }
            "magentic_reset_limit" => emit!(format!(
                "manager out of replans ({})",
                number(event, "resets")
            )),
            "magentic_complete" => emit!(format!(
                "manager final answer after {} rounds",
                number(event, "rounds")
            )),
            "max_turns_exceeded" => emit!(format!("turn cap reached ({})", number(event, "turns"))),
            "budget_exceeded" => emit!(format!(
                "over budget (max {} tokens)",
                number(event, "max_total_tokens")
            )),
            "session_end" => {}
            other => {
                // An event this renderer does not know yet: shown whole rather than lost.
                let payload = if event.payload.is_null() {
                    String::new()
                } else {
                    format!(" {}", short(&event.payload.to_string(), &ran.scrub))
                };
                emit!(format!("{other}{payload}"));
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
