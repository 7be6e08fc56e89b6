//! The session's notes: what agents keep between turns through the SessionContext,
//! Scratchpad and Chatroom tools. The notes belong to the run (`machine::Run::notes`): the
//! machine answers these tools itself, in order, without IO, and every checkpoint stores
//! the notes (`Machine.Notes`), so a resumed session keeps them.
//!
//! ```text
//!  ToolCall ─▶ machine (permission: permissions::resolve) ─▶ notes::answer ─▶ Notes ─▶ checkpoint
//! ```
//!
//! Every bad argument is a result (`[ERROR] ...`), never a panic; every store is bounded
//! (sizes in the submodules), and a write over a bound is refused, not cut.

mod chatroom;
mod schemas;
mod scratchpad;
mod session_context;

pub use chatroom::{ChatroomMessage, MAX_CHATROOM_MESSAGES};
pub(crate) use schemas::schema_of as schema;
pub use scratchpad::{Scratchpad, ScratchpadEntry};
pub use session_context::SessionContext;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{Args, Outcome, Tool};

/// Everything agents noted during a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Notes {
    /// The newest `session_context_write`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_context: Option<SessionContext>,
    /// Each agent's own scratchpad, by agent name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scratchpads: BTreeMap<String, Scratchpad>,
    /// The scratchpad every agent shares (`scope: "global"`).
    #[serde(default, skip_serializing_if = "Scratchpad::is_empty")]
    pub global: Scratchpad,
    /// The chatroom's messages, oldest first (at most [`MAX_CHATROOM_MESSAGES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chatroom: Vec<ChatroomMessage>,
    /// Chatroom messages dropped to keep the bound.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chatroom_dropped: u64,
    /// tama's run-wide memory (`tama_mem_*`), by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tama_memory: BTreeMap<String, String>,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Notes {
    pub fn is_empty(&self) -> bool {
        self == &Notes::default()
    }
}

/// Is `tool` one the notes answer (so the machine, not the driver, runs it)?
pub fn answers(tool: Tool) -> bool {
    matches!(
        tool,
        Tool::SessionContextRead
            | Tool::SessionContextWrite
            | Tool::ScratchpadWrite
            | Tool::ScratchpadRead
            | Tool::ScratchpadReadAll
            | Tool::ScratchpadSearch
            | Tool::ScratchpadDelete
            | Tool::ChatroomSend
            | Tool::ChatroomRead
            | Tool::TamaMemSet
            | Tool::TamaMemGet
            | Tool::TamaMemAppend
    )
}

/// Who is calling and when: the notes record it.
#[derive(Copy, Clone, Debug)]
pub struct Caller<'a> {
    pub agent: &'a str,
    pub turn: u32,
}

/// Answers one call of a notes tool (`answers(tool)`), already permitted, returning the text
/// fed back and whether it succeeded.
pub fn answer(notes: &mut Notes, tool: Tool, args: &Json, caller: Caller<'_>) -> (String, bool) {
    let outcome = match Args::new(tool.name(), args) {
        Ok(args) => dispatch(notes, tool, &args, caller),
        Err(outcome) => outcome,
    };
    (outcome.text, outcome.ok)
}

fn dispatch(notes: &mut Notes, tool: Tool, args: &Args, caller: Caller<'_>) -> Outcome {
    match tool {
        Tool::SessionContextRead => session_context::read(notes.session_context.as_ref()),
        Tool::SessionContextWrite => {
            session_context::write(&mut notes.session_context, args, caller)
        }
        Tool::ChatroomSend => chatroom::send(notes, args, caller),
        Tool::ChatroomRead => chatroom::read(notes, args),
        Tool::TamaMemSet | Tool::TamaMemGet | Tool::TamaMemAppend => {
            super::tama::mem(&mut notes.tama_memory, tool, args)
        }
        Tool::ScratchpadWrite
        | Tool::ScratchpadRead
        | Tool::ScratchpadReadAll
        | Tool::ScratchpadSearch
        | Tool::ScratchpadDelete => {
            let global = match args.opt_string("scope") {
                Ok(None) => false,
                Ok(Some(scope)) if scope.trim().eq_ignore_ascii_case("agent") => false,
                Ok(Some(scope)) if scope.trim().eq_ignore_ascii_case("global") => true,
                Ok(Some(scope)) => {
                    return Outcome::error(format!(
                        "tool `{}`: `scope` must be `agent` or `global`, not `{scope}`",
                        tool.name()
                    ))
                }
                Err(outcome) => return outcome,
            };
            let (pad, owner) = if global {
                (&mut notes.global, "global")
            } else {
                (
                    notes
                        .scratchpads
                        .entry(caller.agent.to_string())
                        .or_default(),
                    caller.agent,
                )
            };
            let outcome = scratchpad::run(pad, owner, tool, args, caller);
            notes.scratchpads.retain(|_, pad| !pad.is_empty());
            outcome
        }
        _ => Outcome::error(format!(
            "tool `{}` is not one of the session's notes",
            tool.name()
        )),
    }
}

#[cfg(test)]
mod tests;
