//! Read-only views of a [`Program`]: JSON for tools (Graphviz DOT and Mermaid for people are
//! in `diagram.rs`). The text form (`print`) is the canonical one; these are derived from
//! the same IR.

use serde_json::{json, Map, Value as Json};

use super::{
    Agent, Cond, ContextMode, EdgeClass, Effect, Exit, Guard, McpServer, McpTransport, Model,
    ModelTimeouts, NoMatch, Origin, Program, State, StateKind, Target, TermCond, TerminalMode,
    Trigger,
};

fn target_name(program: &Program, target: &Target) -> String {
    match target {
        Target::State(id) => program.state(*id).name.clone(),
        Target::End => "end".to_string(),
    }
}

/// A short human label for an exit's trigger (`APPROVED`, `key done`, `always`).
pub fn trigger_label(program: &Program, trigger: &Trigger) -> String {
    match trigger {
        Trigger::Signal { text, sources, .. } => {
            if sources.is_empty() {
                text.clone()
            } else {
                let names: Vec<&str> = sources
                    .iter()
                    .map(|id| program.agent(*id).name.as_str())
                    .collect();
                format!("{text} (from {})", names.join(", "))
            }
        }
        Trigger::FinishKey(key) => format!("key {key}"),
        Trigger::AnyKey => "any key".to_string(),
        Trigger::Cond { cond, .. } => format!("when {cond}"),
        Trigger::Chosen => "chosen".to_string(),
        Trigger::Always => "always".to_string(),
        Trigger::Otherwise => "otherwise".to_string(),
    }
}

fn model_json(model: &Model) -> Json {
    let mut json = json!({
        "alias": model.alias,
        "provider": model.provider,
        "id": model.id,
        "endpoint": model.endpoint,
        "api_key_env": model.api_key_env,
        "temperature": model.temperature,
        "max_tokens": model.max_tokens,
        "reasoning_effort": model.reasoning_effort,
        "context_window": model.context_window,
    });
    // Present only when set, so views of configs without them stay as they were.
    if let Some(pricing) = &model.pricing {
        json["pricing"] = json!({
            "input_per_million": pricing.input,
            "output_per_million": pricing.output,
            "cached_input_per_million": pricing.cached_input,
        });
    }
    let timeouts = &model.timeouts;
    if *timeouts != ModelTimeouts::default() {
        json["timeouts"] = json!({
            "connect_seconds": timeouts.connect,
            "idle_seconds": timeouts.idle,
            "overall_seconds": timeouts.overall,
        });
    }
    json
}

fn cond_json(cond: &Cond) -> Json {
    Json::String(cond.to_string())
}

fn agent_json(agent: &Agent) -> Json {
    json!({
        "name": agent.name,
        "description": agent.description,
        "model": agent.model.as_ref().map(model_json),
        "tools": agent.tools,
        "capabilities": agent.capabilities.iter().map(|(plugin, tags)| json!({"plugin": plugin.as_str(), "tags": tags.iter().map(|tag| tag.as_str()).collect::<Vec<_>>()})).collect::<Vec<_>>(),
        "tool_choice": format!("{:?}", agent.tool_choice).to_lowercase(),
        "context": context_name(agent.context.mode),
        "pattern": agent.pattern,
        "instructions_bytes": agent.instructions.len(),
    })
}

fn context_name(mode: ContextMode) -> &'static str {
    match mode {
        ContextMode::Shared => "shared",
        ContextMode::Firewall => "firewall",
        ContextMode::Value => "value",
        ContextMode::Artifacts => "artifacts",
    }
}

fn guard_json(program: &Program, guard: &Guard) -> Json {
    match guard {
        Guard::Validator { name, params } => {
            let params: Map<String, Json> =
                params.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            json!({"validator": name, "params": params})
        }
        Guard::Contract(id) => json!({"contract": program.contract(*id).name}),
        Guard::Cond(cond) => json!({"cond": cond_json(cond)}),
        Guard::HumanApproval => json!("human_approval"),
        Guard::CounterBelow(id, limit) => {
            json!({"counter": program.counter(*id).name, "below": limit})
        }
    }
}

fn effect_json(program: &Program, effect: &Effect) -> Json {
    match effect {
        Effect::InjectContext(sources) => {
            json!({"inject_context": sources.iter().map(|s| s.source.clone()).collect::<Vec<_>>()})
        }
        Effect::Count(id) => json!({"count": program.counter(*id).name}),
        Effect::Reset(id) => json!({"reset": program.counter(*id).name}),
        Effect::PhaseBreak => json!("phase_break"),
        Effect::PromoteArtifact => json!("promote_artifact"),
        Effect::InjectCritique => json!("inject_critique"),
        Effect::Warn(text) => json!({"warn": text}),
        Effect::Revisit {
            counter,
            max,
            objections,
        } => {
            json!({"revisit": program.counter(*counter).name, "max": max, "objections": objections})
        }
        Effect::SetValue(template) => json!({"set_value": program.template_text(template)}),
    }
}

fn exit_json(program: &Program, exit: &Exit) -> Json {
    let trigger = match &exit.trigger {
        Trigger::Signal {
            text,
            matcher,
            sources,
        } => json!({
            "signal": text,
            "matcher": matcher.as_str(),
            "sources": sources.iter().map(|id| program.agent(*id).name.clone()).collect::<Vec<_>>(),
        }),
        Trigger::FinishKey(key) => json!({"finish_key": key}),
        Trigger::AnyKey => json!("any_key"),
        Trigger::Cond { cond, sources } => json!({
            "cond": cond_json(cond),
            "sources": sources.iter().map(|id| program.agent(*id).name.clone()).collect::<Vec<_>>(),
        }),
        Trigger::Chosen => json!("chosen"),
        Trigger::Always => json!("always"),
        Trigger::Otherwise => json!("otherwise"),
    };
    json!({
        "trigger": trigger,
        "guards": exit.guards.iter().map(|g| guard_json(program, g)).collect::<Vec<_>>(),
        "effects": exit.effects.iter().map(|e| effect_json(program, e)).collect::<Vec<_>>(),
        "target": target_name(program, &exit.target),
        "class": match exit.class { EdgeClass::Forward => "forward", EdgeClass::Back => "back" },
        "recovery": exit.recovery.map(|id| program.agent(id).name.clone()),
        "loc": exit.loc.map(|loc| json!({"file": loc.file.0, "line": loc.line, "column": loc.column})),
    })
}

fn state_json(program: &Program, state: &State) -> Json {
    let kind = match &state.kind {
        StateKind::Turn => json!("turn"),
        StateKind::Terminal(mode) => json!({"terminal": match mode {
            TerminalMode::RunOnce => "run_once",
            TerminalMode::EndNow => "end_now",
            TerminalMode::RunUntilTermination => "run_until_termination",
        }}),
        StateKind::Fork(fork) => {
            let mut json = json!({
                "branches": fork.branches.iter().map(|id| program.state(*id).name.clone()).collect::<Vec<_>>(),
                "join": target_name(program, &fork.join),
                "merge": fork.merge.as_str(),
                "merge_agent": fork.merge_agent.map(|id| program.agent(id).name.clone()),
            });
            // Only a `mapreduce` fork has it.
            if let Some(path) = &fork.per_item {
                json["per_item"] = json!(path.join("."));
            }
            if fork.per_line {
                json["per_line"] = json!(true);
            }
            if fork.sequential {
                json["sequential"] = json!(true);
            }
            json!({ "fork": json })
        }
        StateKind::Select(select) => json!({"select": {
            "style": format!("{:?}", select.style),
            "manager": select.manager.as_ref().map(model_json),
        }}),
    };
    let no_match = match &state.no_match {
        NoMatch::Correct { nudge } => json!({"correct": {"nudge": nudge}}),
        NoMatch::Fallback(id) => json!({"fallback": program.state(*id).name}),
        NoMatch::Fail => json!("fail"),
        NoMatch::Never => json!("never"),
    };
    let mut json = json!({
        "name": state.name,
        "agent": state.agent.map(|id| program.agent(id).name.clone()),
        "kind": kind,
        "context": state.context.map(context_name),
        "layer": state.layer,
        "exits": state.exits.iter().map(|e| exit_json(program, e)).collect::<Vec<_>>(),
        "no_match": no_match,
        "stuck": {
            "max_retries": state.stuck.max_retries,
            "max_visit_turns": state.stuck.max_visit_turns,
            "max_without_signal": state.stuck.max_without_signal,
        },
        "loc": state.loc.map(|loc| json!({"file": loc.file.0, "line": loc.line, "column": loc.column})),
    });
    // Only a tama state has it.
    if let Some(step) = &state.step {
        json["step"] = json!({
            "input": step.input.as_ref().map(|t| program.template_text(t)),
            "key": step_key_text(&step.key),
            "react": step.react,
        });
    }
    json
}

/// `finish`, `fixed KEY` or `verdict`: the text form of a step's key.
pub(crate) fn step_key_text(key: &super::StepKey) -> String {
    match key {
        super::StepKey::Finish => "finish".to_string(),
        super::StepKey::Fixed(key) => format!("fixed {key}"),
        super::StepKey::Verdict => "verdict".to_string(),
    }
}

/// The whole program as JSON (instructions are summarised by their length).
pub fn to_json(program: &Program) -> Json {
    let origin = match program.origin {
        Origin::Fuseraft(kind) => format!("fuseraft.{kind}"),
        Origin::Tama => "tama".to_string(),
    };
    let termination: Vec<Json> = program
        .termination
        .any
        .iter()
        .map(|term| match term {
            TermCond::Regex { pattern, agents } => json!({"regex": pattern, "agents": agents}),
            TermCond::MaxTurns(max) => json!({"max_turns": max}),
            TermCond::Tokens(max) => json!({"tokens": max}),
            TermCond::Cond(cond) => json!({"cond": cond_json(cond)}),
        })
        .collect();
    let mut view = json!({
        "format": "fuseraft-ir-json",
        "version": 1,
        "name": program.name,
        "origin": origin,
        "files": program.files,
        "entry": program.state(program.entry).name,
        "agents": program.agents.iter().map(agent_json).collect::<Vec<_>>(),
        "states": program.states.iter().map(|s| state_json(program, s)).collect::<Vec<_>>(),
        "contracts": program.contracts.iter().map(|c| json!({
            "name": c.name,
            "requires": c.predicates.iter().map(|p| {
                let params: Map<String, Json> = p.params.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                json!({"type": p.kind, "params": params})
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "counters": program.counters.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "termination": {
            "any": termination,
            "validators": program.termination.validators.iter().map(|g| guard_json(program, g)).collect::<Vec<_>>(),
            "max_total_tokens": program.termination.max_total_tokens,
            "unit": format!("{:?}", program.termination.unit).to_lowercase(),
        },
        "settings": program.settings.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "permissions": {
            "preset": program.permissions.preset.as_str(),
            "overrides": program.permissions.overrides.iter().map(|(category, action)| json!([category.key(), action.as_str()])).collect::<Vec<_>>(),
        },
    });
    // Only when there are some, so the view of a program without MCP servers is unchanged.
    if !program.mcp_servers.is_empty() {
        view["mcp_servers"] = program.mcp_servers.iter().map(mcp_server_json).collect();
    }
    if let Some(max) = program.termination.max_total_cost {
        view["termination"]["max_total_cost"] = json!(max);
    }
    view
}

fn mcp_server_json(server: &McpServer) -> Json {
    let pairs = |pairs: &[(String, String)]| -> Vec<Json> {
        pairs.iter().map(|(k, v)| json!([k, v])).collect()
    };
    match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            working_directory,
        } => json!({
            "name": server.name, "transport": "stdio", "command": command, "args": args,
            "env": pairs(env), "working_directory": working_directory,
        }),
        McpTransport::Http { url, headers } => json!({
            "name": server.name, "transport": "http", "url": url, "headers": pairs(headers),
        }),
    }
}
