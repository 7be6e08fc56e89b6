//! Checkpoints: a run's whole state as JSON, taken between turns, so `--resume` continues at
//! the exact state, counters and history.
//!
//! The layout follows upstream's session file (PascalCase keys: `SessionId`, `Task`,
//! `Messages`, `IsComplete`, `ResumeExecutorId`, ...) and adds what fuseraft's machine needs
//! under `Machine` and the model provider's position under `Provider`. States, counters and
//! agents are named, not indexed, so a checkpoint survives a recompiled config that kept them.

use std::collections::{HashMap, HashSet};

use fuseraft_compiler::ir::Program;
use serde_json::{json, Map, Value as Json};

use crate::event::Outcome;
use crate::history::{Message, Role, ToolCall, Usage};
use crate::machine::Run;

pub const VERSION: u64 = 1;

/// One history message as it is stored in a checkpoint.
pub fn message_json(message: &Message) -> Json {
    json!({
        "AgentName": message.agent,
        "Role": match message.role { Role::User => "user", Role::Assistant => "assistant" },
        "Content": message.content,
        "TurnIndex": message.turn,
        "Usage": {"InputTokens": message.usage.input_tokens, "OutputTokens": message.usage.output_tokens},
        "ToolCalls": message.tool_calls.iter().map(|call| json!({
            "Id": call.id, "Name": call.name, "Args": call.args, "Result": call.result, "Succeeded": call.ok,
        })).collect::<Vec<_>>(),
    })
}

fn text(value: &Json, key: &str) -> String {
    value
        .get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

fn number(value: &Json, key: &str) -> u64 {
    value.get(key).and_then(Json::as_u64).unwrap_or(0)
}

fn message_from(value: &Json) -> Result<Message, String> {
    let role = match value.get("Role").and_then(Json::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        other => return Err(format!("a message has an unknown role {other:?}")),
    };
    let usage = value.get("Usage").cloned().unwrap_or(Json::Null);
    let tool_calls = value
        .get("ToolCalls")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .map(|call| ToolCall {
            id: text(call, "Id"),
            name: text(call, "Name"),
            args: call.get("Args").cloned().unwrap_or(Json::Null),
            result: call
                .get("Result")
                .and_then(Json::as_str)
                .map(str::to_string),
            ok: call
                .get("Succeeded")
                .and_then(Json::as_bool)
                .unwrap_or(false),
        })
        .collect();
    Ok(Message {
        role,
        agent: text(value, "AgentName"),
        content: text(value, "Content"),
        tool_calls,
        turn: number(value, "TurnIndex") as u32,
        usage: Usage {
            input_tokens: number(&usage, "InputTokens"),
            output_tokens: number(&usage, "OutputTokens"),
        },
    })
}

/// The machine-owned part of a checkpoint.
pub(crate) fn run_to_json(program: &Program, run: &Run, stand_in: Option<&str>) -> Json {
    let counters: Map<String, Json> = program
        .counters
        .iter()
        .zip(&run.counters)
        .map(|(counter, value)| (counter.name.clone(), json!(value)))
        .collect();
    let mut failures: Vec<(&String, &u32)> = run.failures.iter().collect();
    failures.sort();
    let mut recovered: Vec<&String> = run.recovered.iter().collect();
    recovered.sort();
    json!({
        "State": program.states.get(run.state.0 as usize).map(|state| state.name.clone()),
        "Turn": run.turn,
        "Phase": run.phase,
        "InputTokens": run.usage.input_tokens,
        "OutputTokens": run.usage.output_tokens,
        "Counters": counters,
        "Failures": failures.into_iter().map(|(key, value)| (key.clone(), json!(value))).collect::<Map<_, _>>(),
        "Recovered": recovered,
        "VisitTurns": run.visit_turns,
        "Value": run.value,
        "StandIn": stand_in,
        "Outcome": run.outcome.map(Outcome::as_str),
        "Reason": run.reason,
    })
}

fn outcome_from(text: &str) -> Option<Outcome> {
    [
        Outcome::Completed,
        Outcome::MaxTurns,
        Outcome::Stuck,
        Outcome::Budget,
        Outcome::Error,
        Outcome::Cancelled,
    ]
    .into_iter()
    .find(|outcome| outcome.as_str() == text)
}

/// Rebuilds a run from a checkpoint. Errors say what does not fit the program.
pub(crate) fn run_from_json(
    program: &Program,
    checkpoint: &Json,
) -> Result<(Run, Option<String>), String> {
    let version = number(checkpoint, "Version");
    if version != VERSION {
        return Err(format!(
            "checkpoint version {version} is not supported (expected {VERSION})"
        ));
    }
    let machine = checkpoint
        .get("Machine")
        .ok_or("the checkpoint has no `Machine` section")?;
    let state_name = text(machine, "State");
    let state = program.state_named(&state_name).ok_or_else(|| {
        format!("the checkpoint resumes at state `{state_name}`, which the program no longer has")
    })?;
    let history = checkpoint
        .get("Messages")
        .and_then(Json::as_array)
        .ok_or("the checkpoint has no `Messages`")?
        .iter()
        .map(message_from)
        .collect::<Result<Vec<_>, _>>()?;
    let mut counters = vec![0; program.counters.len()];
    if let Some(saved) = machine.get("Counters").and_then(Json::as_object) {
        for (name, value) in saved {
            let Some(idx) = program
                .counters
                .iter()
                .position(|counter| &counter.name == name)
            else {
                return Err(format!(
                    "the checkpoint has a counter `{name}` the program no longer has"
                ));
            };
            counters[idx] = value.as_u64().unwrap_or(0) as u32;
        }
    }
    let failures: HashMap<String, u32> = machine
        .get("Failures")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.as_u64().unwrap_or(0) as u32))
        .collect();
    let recovered: HashSet<String> = machine
        .get("Recovered")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|key| key.as_str().map(str::to_string))
        .collect();
    let run = Run {
        session_id: text(checkpoint, "SessionId"),
        task: text(checkpoint, "Task"),
        history,
        state,
        turn: number(machine, "Turn") as u32,
        phase: number(machine, "Phase").max(1) as u32,
        usage: Usage {
            input_tokens: number(machine, "InputTokens"),
            output_tokens: number(machine, "OutputTokens"),
        },
        counters,
        failures,
        recovered,
        visit_turns: number(machine, "VisitTurns") as u32,
        value: machine
            .get("Value")
            .and_then(Json::as_str)
            .map(str::to_string),
        outcome: machine
            .get("Outcome")
            .and_then(Json::as_str)
            .and_then(outcome_from),
        reason: machine
            .get("Reason")
            .and_then(Json::as_str)
            .map(str::to_string),
    };
    let stand_in = machine
        .get("StandIn")
        .and_then(Json::as_str)
        .map(str::to_string);
    Ok((run, stand_in))
}

/// The history part of a checkpoint.
pub(crate) fn messages_json(history: &[Message]) -> Json {
    Json::Array(history.iter().map(message_json).collect())
}
