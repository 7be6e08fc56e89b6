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
use crate::history::{Message, Role, Spend, ToolCall, Usage};
use crate::machine::{BranchDone, Magentic, Run};

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

/// Writes `text` as a JSON string, byte for byte as serde_json writes it, but passing over
/// eight bytes at a time where none needs an escape (most of a reply's text).
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(word) = bytes
            .get(at..at + 8)
            .and_then(|chunk| <[u8; 8]>::try_from(chunk).ok())
        {
            // Whether a byte is below 0x20, a quote or a backslash (exact for "any").
            let word = u64::from_le_bytes(word);
            let control = word.wrapping_sub(ONES * 0x20) & !word;
            let quote = (word ^ QUOTES).wrapping_sub(ONES) & !(word ^ QUOTES);
            let backslash = (word ^ BACKSLASHES).wrapping_sub(ONES) & !(word ^ BACKSLASHES);
            let special = (control | quote | backslash) & HIGH;
            if special == 0 {
                at += 8;
                continue;
            }
            // Go straight to the first byte to escape: the lowest flagged byte is a real one
            // (a borrow can only flag bytes above it).
            at += (special.trailing_zeros() / 8) as usize;
        }
        let byte = bytes[at];
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&bytes[copied..at]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0xf)]);
                at += 1;
                copied = at;
                continue;
            }
            _ => {
                at += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[copied..at]);
        out.extend_from_slice(escape);
        at += 1;
        copied = at;
    }
    out.extend_from_slice(&bytes[copied..]);
    out.push(b'"');
}

/// Writes `"key":` (after a comma unless `first`) to a JSON object being written.
fn key(out: &mut Vec<u8>, first: bool, key: &str) {
    if !first {
        out.push(b',');
    }
    // Keys are identifiers: copied as they are unless one needs an escape.
    if key
        .bytes()
        .all(|byte| byte >= 0x20 && byte != b'"' && byte != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
    } else {
        write_str(out, key);
    }
    out.push(b':');
}

/// Writes `"key":value` after a comma (not the first entry of an object).
macro_rules! entry {
    ($out:expr, $name:expr, $value:expr) => {{
        key($out, false, $name);
        serde_json::to_writer(&mut *$out, $value)?;
    }};
}

/// Writes `"key":"text"` (or `null`) after a comma.
fn text_entry(out: &mut Vec<u8>, name: &str, text: Option<&str>) {
    key(out, false, name);
    match text {
        Some(text) => write_str(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

/// Writes `message` as [`message_json`] would serialize, without building the JSON value:
/// a session log line costs what its text costs to escape.
pub fn write_message(message: &Message, out: &mut Vec<u8>) -> serde_json::Result<()> {
    out.push(b'{');
    key(out, true, "AgentName");
    write_str(out, &message.agent);
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    text_entry(out, "Role", Some(role));
    text_entry(out, "Content", Some(&message.content));
    entry!(out, "TurnIndex", &message.turn);
    key(out, false, "Usage");
    out.push(b'{');
    key(out, true, "InputTokens");
    serde_json::to_writer(&mut *out, &message.usage.input_tokens)?;
    entry!(out, "OutputTokens", &message.usage.output_tokens);
    out.push(b'}');
    key(out, false, "ToolCalls");
    out.push(b'[');
    for (idx, call) in message.tool_calls.iter().enumerate() {
        if idx > 0 {
            out.push(b',');
        }
        out.push(b'{');
        key(out, true, "Id");
        write_str(out, &call.id);
        text_entry(out, "Name", Some(&call.name));
        entry!(out, "Args", &call.args);
        text_entry(out, "Result", call.result.as_deref());
        entry!(out, "Succeeded", &call.ok);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Ok(())
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
            ..Usage::default()
        },
    })
}

/// Whether the run's value is the newest reply's text, so that a checkpoint can say so
/// (`ValueIsLastReply`) instead of storing the reply a second time. Only an exact match counts:
/// a reply already cut to the history's bound never equals a whole value.
fn value_is_last_reply(run: &Run) -> bool {
    run.value.as_deref().is_some_and(|value| {
        run.history
            .iter()
            .rev()
            .find(|message| message.role == Role::Assistant)
            .is_some_and(|message| message.content == value)
    })
}

/// The run's value as a checkpoint stores it, and whether it is the newest reply's text
/// (then it is not stored again).
fn stored_value(run: &Run) -> (Option<&str>, bool) {
    let is_last_reply = value_is_last_reply(run);
    let value = if is_last_reply {
        None
    } else {
        run.value.as_deref()
    };
    (value, is_last_reply)
}

/// The machine-owned part of a checkpoint.
pub(crate) fn run_to_json(program: &Program, run: &Run, stand_in: Option<&str>) -> Json {
    let counters: Map<String, Json> = program
        .counters
        .iter()
        .zip(&run.counters)
        .map(|(counter, value)| (counter.name.clone(), json!(value)))
        .collect();
    let (value, is_last_reply) = stored_value(run);
    let mut failures: Vec<(&String, &u32)> = run.failures.iter().collect();
    failures.sort();
    let mut recovered: Vec<&String> = run.recovered.iter().collect();
    recovered.sort();
    let mut machine = json!({
        "State": program.states.get(run.state.0 as usize).map(|state| state.name.clone()),
        "Turn": run.turn,
        "Phase": run.phase,
        "InputTokens": run.usage.input_tokens,
        "OutputTokens": run.usage.output_tokens,
        "Counters": counters,
        "Failures": failures.into_iter().map(|(key, value)| (key.clone(), json!(value))).collect::<Map<_, _>>(),
        "Recovered": recovered,
        "VisitTurns": run.visit_turns,
        "Value": value,
        "ValueIsLastReply": is_last_reply,
        "StandIn": stand_in,
        "Outcome": run.outcome.map(Outcome::as_str),
        "Reason": run.reason,
    });
    // Only a run whose agents noted something carries `Notes` (older readers skip it).
    if !run.notes.is_empty() {
        machine["Notes"] = run.notes.to_json();
    }
    // Only a run with a priced or unpriced call carries `Spend` (older readers skip it).
    if run.spend != Spend::default() {
        machine["Spend"] = spend_json(run.spend);
    }
    if let Some(fork) = &run.fork {
        machine["Fork"] = fork_json(fork);
    }
    if let Some(compacted) = &run.compaction {
        machine["Compaction"] = compacted.to_json();
    }
    // Only a run whose provider cached part of a prompt carries the counts.
    if run.usage.cache_read_tokens > 0 || run.usage.cache_write_tokens > 0 {
        machine["CacheReadTokens"] = json!(run.usage.cache_read_tokens);
        machine["CacheWriteTokens"] = json!(run.usage.cache_write_tokens);
    }
    // Only a magentic run carries `Magentic` (older readers skip it).
    if let Some(magentic) = &run.magentic {
        machine["Magentic"] = magentic.to_json();
    }
    machine
}

/// `{"Usd", "Unpriced"}`: what model calls cost, as far as known.
fn spend_json(spend: Spend) -> Json {
    json!({"Usd": spend.usd, "Unpriced": spend.unpriced})
}

/// A checkpoint's `Spend` (absent: nothing spent). Untrusted: a negative or non-number cost
/// counts as nothing, a count past `u32` as the most.
fn spend_from(value: &Json) -> Spend {
    let Some(spend) = value.get("Spend") else {
        return Spend::default();
    };
    let mut known = Spend::default();
    known.add(Spend {
        usd: spend.get("Usd").and_then(Json::as_f64).unwrap_or(0.0),
        unpriced: u32::try_from(number(spend, "Unpriced")).unwrap_or(u32::MAX),
    });
    known
}

/// The fork under way: its finished branches (`Machine.Fork.Done`), present only while a
/// fork's branches are out.
fn fork_json(done: &[BranchDone]) -> Json {
    let branches: Vec<Json> = done
        .iter()
        .map(|branch| {
            let mut json = json!({
                "State": branch.state,
                "AgentName": branch.agent,
                "Content": branch.text,
                "Usage": {"InputTokens": branch.usage.input_tokens, "OutputTokens": branch.usage.output_tokens},
                "ToolCalls": branch.tool_calls.iter().map(tool_call_json).collect::<Vec<_>>(),
                "Error": branch.error,
            });
            if branch.spend != Spend::default() {
                json["Spend"] = spend_json(branch.spend);
            }
            json
        })
        .collect();
    json!({ "Done": branches })
}

fn tool_call_json(call: &ToolCall) -> Json {
    json!({
        "Id": call.id, "Name": call.name, "Args": call.args, "Result": call.result, "Succeeded": call.ok,
    })
}

fn tool_call_from(call: &Json) -> ToolCall {
    ToolCall {
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
    }
}

fn usage_from(value: &Json) -> Usage {
    let usage = value.get("Usage").cloned().unwrap_or(Json::Null);
    Usage {
        input_tokens: number(&usage, "InputTokens"),
        output_tokens: number(&usage, "OutputTokens"),
        ..Usage::default()
    }
}

/// The finished branches of a checkpoint's fork under way; a branch whose state the
/// program no longer has is an error.
fn fork_from(program: &Program, fork: &Json) -> Result<Vec<BranchDone>, String> {
    fork.get("Done")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .map(|branch| {
            let state = text(branch, "State");
            if program.state_named(&state).is_none() {
                return Err(format!(
                    "the checkpoint's fork has a branch `{state}` the program no longer has"
                ));
            }
            Ok(BranchDone {
                state,
                agent: text(branch, "AgentName"),
                text: text(branch, "Content"),
                tool_calls: branch
                    .get("ToolCalls")
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                    .map(tool_call_from)
                    .collect(),
                usage: usage_from(branch),
                spend: spend_from(branch),
                error: branch
                    .get("Error")
                    .and_then(Json::as_str)
                    .map(str::to_string),
            })
        })
        .collect()
}

/// Writes a checkpoint's state: `Machine::checkpoint_state`'s object with `Provider` and then
/// the `extra` keys (which must be new) added, as that JSON would serialize, without building
/// it. `tests/session_store.rs` compares the two at every checkpoint of the run fixtures.
pub(crate) fn write_state(
    program: &Program,
    run: &Run,
    stand_in: Option<&str>,
    provider: &Json,
    extra: &[(&str, &Json)],
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    out.push(b'{');
    key(out, true, "Version");
    serde_json::to_writer(&mut *out, &VERSION)?;
    text_entry(out, "SessionId", Some(&run.session_id));
    text_entry(out, "Task", Some(&run.task));
    entry!(
        out,
        "IsComplete",
        &(run.outcome == Some(Outcome::Completed))
    );
    let state = program.states.get(run.state.0 as usize);
    text_entry(
        out,
        "ResumeExecutorId",
        state.map(|state| state.name.as_str()),
    );
    entry!(out, "MessageCount", &run.history.len());
    key(out, false, "Machine");
    write_run(program, run, stand_in, out)?;
    entry!(out, "Provider", provider);
    for (name, value) in extra {
        entry!(out, name, *value);
    }
    out.push(b'}');
    Ok(())
}

/// Writes [`run_to_json`]'s object without building it.
fn write_run(
    program: &Program,
    run: &Run,
    stand_in: Option<&str>,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    out.push(b'{');
    key(out, true, "State");
    let state = program.states.get(run.state.0 as usize);
    match state {
        Some(state) => write_str(out, &state.name),
        None => out.extend_from_slice(b"null"),
    }
    entry!(out, "Turn", &run.turn);
    entry!(out, "Phase", &run.phase);
    entry!(out, "InputTokens", &run.usage.input_tokens);
    entry!(out, "OutputTokens", &run.usage.output_tokens);
    key(out, false, "Counters");
    out.push(b'{');
    for (idx, (counter, value)) in program.counters.iter().zip(&run.counters).enumerate() {
        key(out, idx == 0, &counter.name);
        serde_json::to_writer(&mut *out, value)?;
    }
    out.push(b'}');
    key(out, false, "Failures");
    out.push(b'{');
    let mut failures: Vec<(&String, &u32)> = run.failures.iter().collect();
    failures.sort();
    for (idx, (name, value)) in failures.into_iter().enumerate() {
        key(out, idx == 0, name);
        serde_json::to_writer(&mut *out, value)?;
    }
    out.push(b'}');
    key(out, false, "Recovered");
    out.push(b'[');
    let mut recovered: Vec<&String> = run.recovered.iter().collect();
    recovered.sort();
    for (idx, name) in recovered.into_iter().enumerate() {
        if idx > 0 {
            out.push(b',');
        }
        write_str(out, name);
    }
    out.push(b']');
    entry!(out, "VisitTurns", &run.visit_turns);
    let (value, is_last_reply) = stored_value(run);
    text_entry(out, "Value", value);
    entry!(out, "ValueIsLastReply", &is_last_reply);
    text_entry(out, "StandIn", stand_in);
    text_entry(out, "Outcome", run.outcome.map(Outcome::as_str));
    text_entry(out, "Reason", run.reason.as_deref());
    if !run.notes.is_empty() {
        entry!(out, "Notes", &run.notes);
    }
    if run.spend != Spend::default() {
        entry!(out, "Spend", &spend_json(run.spend));
    }
    if let Some(fork) = &run.fork {
        entry!(out, "Fork", &fork_json(fork));
    }
    if let Some(compacted) = &run.compaction {
        entry!(out, "Compaction", &compacted.to_json());
    }
    if run.usage.cache_read_tokens > 0 || run.usage.cache_write_tokens > 0 {
        entry!(out, "CacheReadTokens", &run.usage.cache_read_tokens);
        entry!(out, "CacheWriteTokens", &run.usage.cache_write_tokens);
    }
    if let Some(magentic) = &run.magentic {
        entry!(out, "Magentic", &magentic.to_json());
    }
    out.push(b'}');
    Ok(())
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
    let value = if machine.get("ValueIsLastReply").and_then(Json::as_bool) == Some(true) {
        // Read before the history is bounded: the log holds the reply whole.
        history
            .iter()
            .rev()
            .find(|message| message.role == Role::Assistant)
            .map(|message| message.content.clone())
    } else {
        machine
            .get("Value")
            .and_then(Json::as_str)
            .map(str::to_string)
    };
    let compaction =
        crate::machine::Compacted::from_json(machine.get("Compaction"), history.len())?;
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
            cache_read_tokens: number(machine, "CacheReadTokens"),
            cache_write_tokens: number(machine, "CacheWriteTokens"),
        },
        spend: spend_from(machine),
        counters,
        failures,
        recovered,
        visit_turns: number(machine, "VisitTurns") as u32,
        value,
        outcome: machine
            .get("Outcome")
            .and_then(Json::as_str)
            .and_then(outcome_from),
        reason: machine
            .get("Reason")
            .and_then(Json::as_str)
            .map(str::to_string),
        notes: crate::tools::notes::Notes::from_json(machine.get("Notes"))?,
        fork: match machine.get("Fork") {
            Some(fork) if !fork.is_null() => Some(fork_from(program, fork)?),
            _ => None,
        },
        compaction,
        magentic: match machine.get("Magentic") {
            Some(magentic) if !magentic.is_null() => Some(Magentic::from_json(magentic)?),
            _ => None,
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut samples: Vec<String> = (0u8..0x80)
            .map(|byte| char::from(byte).to_string())
            .collect();
        samples.push((0u8..0x80).map(char::from).collect());
        samples.push("plain text that needs no escape at all, longer than eight bytes".into());
        samples.push("\"quoted\"\\path\\ and\nlines\r\n\ttabs\u{7f}\u{1}é🦀 \u{2028}".into());
        for len in 0..24 {
            for at in 0..len {
                for special in ['"', '\\', '\n', '\u{1f}', 'é'] {
                    let mut text: String = "a".repeat(len);
                    text.replace_range(at..at + 1, &special.to_string());
                    samples.push(text);
                }
            }
        }
        for sample in samples {
            let mut out = Vec::new();
            write_str(&mut out, &sample);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&sample).unwrap(),
                "{sample:?}"
            );
        }
    }
}
