//! # FR307 `signal-not-instructed`
//!
//! ## What it does
//! Cross-checks routes against the prompts of the agents that must emit them:
//! - a keyword route, state-machine signal, graph keyword or tama fsm key that the
//!   instructions of the agent who must emit it never mention (ignoring case);
//! - an instructed `handoff(route_keyword: "X")` (or `route_keyword="X"`; in tama,
//!   `finish(key="X")`) for which no route out of that agent's states accepts `X`.
//!   Templates such as `<category>` are not keywords.
//!
//! Agents without instructions are skipped.
//!
//! ## Why is this bad?
//! Prompts and routers drift apart: the prompt says `READY FOR QA`, the route waits for
//! `READY FOR REVIEW`, and every turn ends in a "no routing signal" nudge. No workflow
//! linter reads prompts; for LLM workflows this is the main source of routing bugs.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Instructions: 'When the code builds, call handoff(route_keyword: "READY FOR QA").'
//!       Plugins: [Handoff]
//!     - Name: Tester
//!       Instructions: Test it. Say ALL TESTS PASS when green.
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Test
//!               Signal: READY FOR REVIEW
//!         Test:
//!           Agent: Tester
//!           Transitions:
//!             - To: Done
//!               Signal: ALL TESTS PASS
//!         Done:
//!           Agent: Tester
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Instructions: 'When the code builds, call handoff(route_keyword: "READY FOR REVIEW").'
//!       Plugins: [Handoff]
//!     - Name: Tester
//!       Instructions: Test it. Say ALL TESTS PASS when green.
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Test
//!               Signal: READY FOR REVIEW
//!         Test:
//!           Agent: Tester
//!           Transitions:
//!             - To: Done
//!               Signal: ALL TESTS PASS
//!         Done:
//!           Agent: Tester
//!           Terminal: true
//! ```

use std::sync::OnceLock;

use regex::Regex;

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{AgentId, Program, Trigger};
use crate::source::Span;

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program) {
    let tama = program.origin == crate::ir::Origin::Tama;
    // (agent, keyword, exit span) for every signal an agent must emit.
    let mut expected: Vec<(AgentId, String, Option<Span>)> = Vec::new();
    let mut seen: std::collections::HashSet<(AgentId, String)> = std::collections::HashSet::new();
    for id in program.state_ids() {
        let state = program.state(id);
        for exit in &state.exits {
            let (text, sources) = match &exit.trigger {
                Trigger::Signal { text, sources, .. } => (text, sources.as_slice()),
                // A tama fsm routes on the key its state's agent passes to `finish`.
                Trigger::FinishKey(key) => (key, &[][..]),
                _ => continue,
            };
            let emitters: Vec<AgentId> = if sources.is_empty() {
                state.agent.into_iter().collect()
            } else {
                sources.to_vec()
            };
            for agent in emitters {
                if seen.insert((agent, fold(text))) {
                    expected.push((agent, text.clone(), ctx.exit_span(exit)));
                }
            }
        }
    }
    if matches!(
        program.origin,
        crate::ir::Origin::Fuseraft(crate::ir::SelectionKind::Adversarial)
    ) {
        // The critic is told its pass keyword by the orchestrator, not by its prompt.
        return;
    }
    // Keyword routes without `SourceAgents` may be emitted by anyone: one mention is enough.
    let global: Vec<String> = ctx
        .config
        .map(|config| {
            config
                .selection
                .routes
                .iter()
                .filter(|route| route.source_agents.is_empty())
                .filter_map(|route| route.keyword.as_ref().map(|k| k.value.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut forward: Vec<(AgentId, Diagnostic)> = Vec::new();
    let mut reported_global: Vec<String> = Vec::new();
    for (agent, keyword, span) in &expected {
        let instructions = &program.agent(*agent).instructions;
        if instructions.trim().is_empty() {
            continue;
        }
        let mentioned = |text: &str| fold(text).contains(&fold(keyword));
        if mentioned(instructions) {
            continue;
        }
        let is_global = global.iter().any(|k| k.eq_ignore_ascii_case(keyword));
        if is_global {
            // Any agent may emit it: one mention anywhere is enough, one finding otherwise.
            if program.agents.iter().any(|a| mentioned(&a.instructions))
                || reported_global
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(keyword))
            {
                continue;
            }
            reported_global.push(keyword.clone());
            let mut diag = Diagnostic::warning(
                Code::SignalNotInstructed,
                format!(
                    "no agent's instructions mention `{keyword}`, so no agent knows to emit it"
                ),
            );
            if let Some(span) = span {
                diag = diag.with_label(*span, "any agent may emit this keyword; none is told to");
            }
            forward.push((
                *agent,
                diag.with_help(format!(
                    "tell the agent that should hand off here to write `{keyword}` on its own line"
                )),
            ));
            continue;
        }
        let name = &program.agent(*agent).name;
        let mut diag = Diagnostic::warning(
            Code::SignalNotInstructed,
            if tama {
                format!("`{name}` must finish with the key `{keyword}` to take this route, but its instructions never mention it")
            } else {
                format!("`{name}` must emit `{keyword}` to take this route, but its instructions never mention it")
            },
        );
        if let Some(span) = span {
            diag = diag.with_label(*span, format!("`{name}`'s instructions never mention this"));
        }
        forward.push((
            *agent,
            diag.with_help(if tama {
                format!("tell `{name}` when to call `finish(key=\"{keyword}\", value=…)`")
            } else {
                format!("tell `{name}` when to write `{keyword}` on its own line (or to call `handoff(route_keyword: \"{keyword}\")`)")
            }),
        ));
    }

    // Instructed handoff keywords (tama: finish keys) that no route of the agent accepts.
    let mut reverse: Vec<(AgentId, Diagnostic)> = Vec::new();
    for agent_id in program.agent_ids() {
        let agent = program.agent(agent_id);
        let accepted: Vec<&str> = expected
            .iter()
            .filter(|(a, ..)| *a == agent_id)
            .map(|(_, k, _)| k.as_str())
            .chain(global.iter().map(String::as_str))
            .collect();
        // An agent outside signal routing (a rotation, a manager's pick) routes by nothing.
        if accepted.is_empty() {
            continue;
        }
        let mut seen: Vec<String> = Vec::new();
        // Each pattern starts with a literal: instructions without it have no match, and the
        // pattern (about a millisecond to build) is not built for them.
        let (literal, pattern): (_, fn() -> &'static Regex) = if tama {
            ("finish(", finish_pattern)
        } else {
            ("route_keyword", handoff_pattern)
        };
        if !agent.instructions.contains(literal) {
            continue;
        }
        for capture in pattern().captures_iter(&agent.instructions) {
            let Some(keyword) = capture.get(1).map(|m| m.as_str().trim().to_string()) else {
                continue;
            };
            if keyword.is_empty()
                || is_placeholder(&keyword)
                || accepted.iter().any(|k| k.eq_ignore_ascii_case(&keyword))
                || seen.iter().any(|k| k.eq_ignore_ascii_case(&keyword))
            {
                continue;
            }
            seen.push(keyword.clone());
            let mut diag = Diagnostic::warning(
                Code::SignalNotInstructed,
                if tama {
                    format!("`{}` is told to call `finish(key=\"{keyword}\")`, but no route out of its state accepts `{keyword}`", agent.name)
                } else {
                    format!("`{}` is told to call `handoff(route_keyword: \"{keyword}\")`, but no route out of its states accepts `{keyword}`", agent.name)
                },
            );
            match instruction_span(ctx, program, agent_id, &keyword) {
                Some(span) => diag = diag.with_label(span, "no route accepts this keyword"),
                None => {
                    if let Some(span) = ctx.agent_span(program, agent_id) {
                        diag = diag.with_label(span, "its instructions name this keyword");
                    }
                }
            }
            let known: Vec<String> = accepted.iter().map(|k| format!("`{k}`")).collect();
            let help = match crate::diagnostic::did_you_mean(&keyword, accepted.iter().copied()) {
                Some(hint) => hint,
                None if known.is_empty() => {
                    "no route accepts any keyword from this agent".to_string()
                }
                None => format!("its routes accept {}", known.join(", ")),
            };
            reverse.push((agent_id, diag.with_help(help)));
        }
    }
    // The prompt says one keyword and the route waits for another: one drift, one finding,
    // with the route's side attached to the prompt's side.
    for (agent, diag) in forward {
        match reverse.iter_mut().find(|(a, _)| *a == agent) {
            Some((_, cause)) => cause.related.push(diag),
            None => {
                ctx.push(diag);
            }
        }
    }
    for (_, diag) in reverse {
        ctx.push(diag);
    }
}

fn handoff_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r#"route_keyword\s*[:=]\s*\\?["'“‘`]([^"'”’`\n\\]{1,80})\\?["'”’`]"#)
            .expect("the handoff pattern is a valid regex")
    })
}

/// The span of `keyword` inside the written instructions of agent `name`, when the raw
/// source text contains it verbatim.
fn instruction_span(
    ctx: &Ctx<'_>,
    program: &Program,
    agent: AgentId,
    keyword: &str,
) -> Option<Span> {
    let span = match ctx.agent_decl(&program.agent(agent).name) {
        Some(decl) => decl.instructions.as_ref()?.span,
        // A tama agent's instructions are its AGENT.md body, after the front matter.
        None => {
            let start = ctx.loc_span(program.agent(agent).loc)?;
            let text = &ctx.sources.get(start.file).text;
            Span::new(start.file, start.start as usize, text.len())
        }
    };
    let text = &ctx.sources.get(span.file).text;
    let raw = text.get(span.start as usize..span.end as usize)?;
    let at = raw.find(&format!("\"{keyword}\""))? + 1;
    Some(span.sub(at, at + keyword.len()))
}

/// `<category>`, `{name}`, `...`: a template in the prompt, not a keyword.
fn is_placeholder(keyword: &str) -> bool {
    keyword.contains(['<', '>', '{', '}']) || keyword.contains("...") || keyword.contains('…')
}

fn finish_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r#"finish\(\s*key\s*=\s*\\?["'“‘`]([^"'”’`\n\\]{1,80})\\?["'”’`]"#)
            .expect("the finish pattern is a valid regex")
    })
}

fn fold(text: &str) -> String {
    text.to_uppercase()
}
