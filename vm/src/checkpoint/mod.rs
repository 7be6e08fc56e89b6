//! Checkpoints: a run's whole state as JSON, taken between turns, so `--resume` continues at
//! the exact state, counters and history.
//!
//! The layout follows upstream's session file (PascalCase keys: `SessionId`, `Task`,
//! `Messages`, `IsComplete`, `ResumeExecutorId`, ...) and adds what fuseraft's machine needs
//! under `Machine` and the model provider's position under `Provider`. States, counters and
//! agents are named, not indexed, so a checkpoint survives a recompiled config that kept them.
//!
//! The shapes are the derived types of [`records`]; this module converts between them and
//! the machine's [`Run`], and checks what a record says against the program (a state or
//! counter it no longer has). Reading is strict: a malformed field is an error naming it.

use std::collections::{HashMap, HashSet};

use fuseraft_compiler::ir::Program;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::event::Outcome;
use crate::history::{Message, Role, ToolCall, Usage};
use crate::machine::Run;

mod machine;
mod parts;
mod provider;
pub mod records;

pub use provider::ProviderState;

use parts::{
    branch_record, compacted_of, compaction_record, fork_of, magentic_of, magentic_record,
    spend_of, spend_record,
};

use records::{
    ForkRecord, MachineRecord, MessageRecord, RoleRecord, StateRecord, ToolCallRecord, UsageRecord,
};

pub const VERSION: u64 = 1;

/// Reads a record of type `T` from a JSON value, strictly: the error names the field that
/// does not fit (`` field `Machine.Turn`: invalid type: ... ``).
pub fn read<'de, T: Deserialize<'de>>(value: &'de Json) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match path.as_str() {
            "." => inner.to_string(),
            _ => format!("field `{path}`: {inner}"),
        }
    })
}

/// Checks that `value` is a whole history message as a checkpoint stores it.
pub fn check_message(value: &Json) -> Result<(), String> {
    read::<MessageRecord<'_>>(value).map(drop)
}

/// Checks that `value` is a whole state record (the session log's `Checkpoint`, a
/// snapshot), whatever keys the caller added to it.
pub fn check_state(value: &Json) -> Result<(), String> {
    read::<StateRecord<'_>>(value).map(drop)
}

fn usage_record(usage: &Usage) -> UsageRecord {
    UsageRecord {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
    }
}

fn usage_of(record: UsageRecord) -> Usage {
    Usage {
        input_tokens: record.input_tokens,
        output_tokens: record.output_tokens,
        ..Usage::default()
    }
}

fn tool_call_record(call: &ToolCall) -> ToolCallRecord<'_> {
    ToolCallRecord {
        id: (&call.id).into(),
        name: (&call.name).into(),
        args: std::borrow::Cow::Borrowed(&call.args),
        result: call.result.as_deref().map(Into::into),
        succeeded: call.ok,
        denied: call.denied,
    }
}

fn tool_call_of(record: ToolCallRecord<'_>) -> ToolCall {
    ToolCall {
        id: record.id.into_owned(),
        name: record.name.into_owned(),
        args: record.args.into_owned(),
        result: record.result.map(|result| result.into_owned()),
        ok: record.succeeded,
        denied: record.denied,
    }
}

impl<'a> MessageRecord<'a> {
    /// How `message` is stored (borrowing its text).
    pub fn of(message: &'a Message) -> MessageRecord<'a> {
        MessageRecord {
            agent_name: (&message.agent).into(),
            role: match message.role {
                Role::User => RoleRecord::User,
                Role::Assistant => RoleRecord::Assistant,
            },
            content: (&*message.content).into(),
            turn_index: message.turn,
            usage: usage_record(&message.usage),
            tool_calls: message.tool_calls.iter().map(tool_call_record).collect(),
        }
    }

    pub fn into_message(self) -> Message {
        Message {
            role: match self.role {
                RoleRecord::User => Role::User,
                RoleRecord::Assistant => Role::Assistant,
            },
            agent: self.agent_name.into_owned(),
            content: self.content.into_owned().into(),
            tool_calls: self.tool_calls.into_iter().map(tool_call_of).collect(),
            turn: self.turn_index,
            usage: usage_of(self.usage),
        }
    }
}

/// One history message as it is stored in a checkpoint.
pub fn message_json(message: &Message) -> Json {
    serde_json::to_value(MessageRecord::of(message)).unwrap_or(Json::Null)
}

/// Writes each of `messages` as one line of JSON (a [`records::MessageRecord`] and a
/// newline): a checkpoint's message lines in the session log.
pub fn write_message_lines(messages: &[Message], out: &mut Vec<u8>) -> serde_json::Result<()> {
    for message in messages {
        write_message(message, out)?;
        out.push(b'\n');
    }
    Ok(())
}

/// Writes `message` as one session log line's JSON (without the newline): the bytes
/// `serde_json::to_writer(out, &MessageRecord::of(message))` writes.
///
/// The record is serialized with an empty `Content`, and the content is written into its
/// place by [`crate::json_string::write_str`] (a plain run at a time; serde_json tests each
/// byte of a reply on its own, the largest cost of a durable turn after its MAC). The place is the
/// first `,"Content":""` of the line: a quote inside a JSON string is always escaped, so
/// `,"` there is a key, and the keys before `Content` hold no mapping.
pub(crate) fn write_message(message: &Message, out: &mut Vec<u8>) -> serde_json::Result<()> {
    const EMPTY_CONTENT: &[u8] = b",\"Content\":\"\"";
    let mut record = MessageRecord::of(message);
    let content = std::mem::take(&mut record.content);
    let start = out.len();
    serde_json::to_writer(&mut *out, &record)?;
    // Found within the first few dozen bytes (the agent's name and the role precede it).
    let found = out[start..]
        .windows(EMPTY_CONTENT.len())
        .position(|window| window == EMPTY_CONTENT);
    let Some(at) = found else {
        // Not the shape this relies on: the whole record the plain way.
        out.truncate(start);
        record.content = content;
        return serde_json::to_writer(out, &record);
    };
    // The value's place: past `,"Content":`, the two quotes of the empty string replaced.
    let value = start + at + EMPTY_CONTENT.len() - 2;
    let rest = out.split_off(value + 2);
    out.truncate(value);
    crate::json_string::write_str(out, &content);
    out.extend_from_slice(&rest);
    Ok(())
}

/// The history part of a checkpoint.
#[cfg(test)]
pub(crate) fn messages_json(history: &[Message]) -> Json {
    Json::Array(history.iter().map(message_json).collect())
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
            .is_some_and(|message| &*message.content == value)
    })
}

/// The machine-owned part of a checkpoint.
fn machine_record<'a>(
    program: &'a Program,
    run: &'a Run,
    stand_in: Option<&'a str>,
) -> MachineRecord<'a> {
    let is_last_reply = value_is_last_reply(run);
    let mut failures: Vec<_> = run
        .failures
        .iter()
        .map(|(key, count)| (key.as_str().into(), *count))
        .collect();
    failures.sort();
    let mut recovered: Vec<_> = run
        .recovered
        .iter()
        .map(|key| key.as_str().into())
        .collect();
    recovered.sort();
    let cached = run.usage.cache_read_tokens > 0 || run.usage.cache_write_tokens > 0;
    MachineRecord {
        state: program
            .states
            .get(run.state.0 as usize)
            .map(|state| state.name.as_str().into()),
        turn: run.turn,
        phase: run.phase,
        input_tokens: run.usage.input_tokens,
        output_tokens: run.usage.output_tokens,
        counters: program
            .counters
            .iter()
            .zip(&run.counters)
            .map(|(counter, value)| (counter.name.as_str().into(), *value))
            .collect(),
        failures,
        recovered,
        visit_turns: run.visit_turns,
        value: match is_last_reply {
            true => None,
            false => run.value.as_deref().map(Into::into),
        },
        value_is_last_reply: is_last_reply,
        stand_in: stand_in.map(Into::into),
        outcome: run.outcome.map(|outcome| outcome.as_str().into()),
        reason: run.reason.as_deref().map(Into::into),
        notes: (!run.notes.is_empty()).then_some(std::borrow::Cow::Borrowed(&run.notes)),
        spend: spend_record(run.spend),
        fork: run.fork.as_ref().map(|done| ForkRecord {
            done: done.iter().map(branch_record).collect(),
        }),
        compaction: run.compaction.as_ref().map(compaction_record),
        cache_read_tokens: cached.then_some(run.usage.cache_read_tokens),
        cache_write_tokens: cached.then_some(run.usage.cache_write_tokens),
        magentic: run.magentic.as_ref().map(magentic_record),
        steps: run
            .steps
            .iter()
            .map(|step| records::StepRecordOut {
                state: step.state.as_str().into(),
                input: step.input.as_str().into(),
                value: step.value.as_str().into(),
            })
            .collect(),
    }
}

/// The run's state as a checkpoint stores it, with the provider's position when given.
pub(crate) fn state_record<'a>(
    program: &'a Program,
    run: &'a Run,
    stand_in: Option<&'a str>,
    provider: Option<&'a Json>,
) -> StateRecord<'a> {
    let state = program.states.get(run.state.0 as usize);
    StateRecord {
        version: VERSION,
        session_id: (&run.session_id).into(),
        task: (&run.task).into(),
        is_complete: run.outcome == Some(Outcome::Completed),
        resume_executor_id: state.map(|state| state.name.as_str().into()),
        message_count: run.history.len() as u64,
        machine: machine_record(program, run, stand_in),
        provider: provider.map(std::borrow::Cow::Borrowed),
        messages: None,
    }
}

/// The state record as a JSON value (what tests and `Machine::checkpoint` hand around).
pub(crate) fn state_json(record: &StateRecord<'_>) -> Json {
    serde_json::to_value(record).unwrap_or(Json::Null)
}

/// Writes a checkpoint's state record with `Provider` and then the caller's keys: `extra`
/// serializes as a JSON object (a derived struct of the caller's own fields) whose entries
/// are written inside the record, after its own (they must be new): the session log's
/// state line.
pub(crate) fn write_state<E: Serialize + ?Sized>(
    program: &Program,
    run: &Run,
    stand_in: Option<&str>,
    provider: &ProviderState<'_>,
    extra: &E,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    // `Provider` is the record's last key here (it has no `Messages`): the record is written
    // without it, and the position after the record's own keys, where it would go.
    let record = state_record(program, run, stand_in, None);
    serde_json::to_writer(&mut *out, &record)?;
    // The record is an object: its closing brace is the last byte written.
    out.pop();
    out.extend_from_slice(b",\"Provider\":");
    serde_json::to_writer(&mut *out, provider)?;
    // The caller's object is written after it, its opening brace turned into the comma
    // between them.
    let start = out.len();
    serde_json::to_writer(&mut *out, extra)?;
    match &out[start..] {
        b"{}" => {
            out.truncate(start);
            out.push(b'}');
        }
        [b'{', ..] => out[start] = b',',
        _ => {
            return Err(serde::ser::Error::custom(
                "a checkpoint's extra keys must be a JSON object",
            ))
        }
    }
    Ok(())
}

fn outcome_of(text: &str) -> Option<Outcome> {
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

/// Rebuilds a run from a checkpoint (the state with its `Messages`). Errors name the field
/// that is malformed, or say what does not fit the program.
pub(crate) fn run_from_json(
    program: &Program,
    checkpoint: &Json,
) -> Result<(Run, Option<String>), String> {
    // The version first: a newer layout would otherwise fail on some field.
    match checkpoint.get("Version").and_then(Json::as_u64) {
        Some(VERSION) => {}
        version => {
            return Err(format!(
                "checkpoint version {} is not supported (expected {VERSION})",
                version.map_or("none".to_string(), |version| version.to_string())
            ))
        }
    }
    let record: StateRecord<'_> =
        read(checkpoint).map_err(|error| format!("the checkpoint is malformed: {error}"))?;
    let machine = record.machine;
    let state_name = machine.state.as_deref().unwrap_or_default();
    let state = program.state_named(state_name).ok_or_else(|| {
        format!("the checkpoint resumes at state `{state_name}`, which the program no longer has")
    })?;
    let history: Vec<Message> = record
        .messages
        .ok_or("the checkpoint has no `Messages`")?
        .into_iter()
        .map(MessageRecord::into_message)
        .collect();
    let mut counters = vec![0; program.counters.len()];
    for (name, value) in machine.counters {
        let Some(idx) = program
            .counters
            .iter()
            .position(|counter| counter.name == name)
        else {
            return Err(format!(
                "the checkpoint has a counter `{name}` the program no longer has"
            ));
        };
        counters[idx] = value;
    }
    let failures: HashMap<String, u32> = machine
        .failures
        .into_iter()
        .map(|(key, value)| (key.into_owned(), value))
        .collect();
    let recovered: HashSet<String> = machine
        .recovered
        .into_iter()
        .map(|key| key.into_owned())
        .collect();
    let value = if machine.value_is_last_reply {
        // Read before the history is bounded: the log holds the reply whole.
        history
            .iter()
            .rev()
            .find(|message| message.role == Role::Assistant)
            .map(|message| message.content.to_string())
    } else {
        machine.value.map(|value| value.into_owned())
    };
    let outcome = match machine.outcome {
        Some(text) => Some(
            outcome_of(&text)
                .ok_or_else(|| format!("the checkpoint's outcome `{text}` is unknown"))?,
        ),
        None => None,
    };
    let compaction = machine
        .compaction
        .map(|compaction| compacted_of(compaction, history.len()))
        .transpose()?;
    let run = Run {
        steps: machine.steps.into_iter().map(Into::into).collect(),
        session_id: record.session_id.into_owned(),
        task: record.task.into_owned(),
        history,
        state,
        turn: machine.turn,
        phase: machine.phase.max(1),
        usage: Usage {
            input_tokens: machine.input_tokens,
            output_tokens: machine.output_tokens,
            cache_read_tokens: machine.cache_read_tokens.unwrap_or(0),
            cache_write_tokens: machine.cache_write_tokens.unwrap_or(0),
        },
        spend: spend_of(machine.spend),
        counters,
        failures,
        recovered,
        visit_turns: machine.visit_turns,
        value,
        outcome,
        reason: machine.reason.map(|reason| reason.into_owned()),
        notes: machine
            .notes
            .map(|notes| notes.into_owned())
            .unwrap_or_default(),
        fork: machine
            .fork
            .map(|fork| fork_of(program, fork))
            .transpose()?,
        compaction,
        magentic: machine.magentic.map(magentic_of).transpose()?,
    };
    Ok((run, machine.stand_in.map(|stand_in| stand_in.into_owned())))
}

#[cfg(test)]
mod tests;
