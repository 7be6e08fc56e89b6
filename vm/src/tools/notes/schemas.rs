//! The function schemas of the notes tools, with upstream's parameter names.

use serde_json::json;

use super::super::{schema, string_prop, Tool};
use crate::effect::ToolSchema;

/// The schema of one notes tool (`super::answers(tool)`).
pub(crate) fn schema_of(tool: Tool) -> ToolSchema {
    let name = tool.name();
    let scope = || {
        string_prop("Optional: `agent` (your own scratchpad, the default) or `global` (shared by every agent).")
    };
    let key = || string_prop("The entry's key (case-insensitive).");
    match tool {
        Tool::SessionContextRead => schema(
            name,
            "Read the session context summary the previous agent wrote. Call it at the start of your turn to catch up.",
            json!({}),
            &[],
        ),
        Tool::SessionContextWrite => schema(
            name,
            "Write (replace) the session context summary: what was done, files changed, open issues. Call it before handing off.",
            json!({"summary": string_prop("The summary; bullet points work well.")}),
            &["summary"],
        ),
        Tool::ScratchpadWrite => schema(
            name,
            "Store a named entry in your scratchpad (replacing an entry with the same key).",
            json!({
                "key": key(),
                "value": string_prop("The value to store."),
                "tags": string_prop("Optional: comma-separated tags."),
                "scope": scope(),
            }),
            &["key", "value"],
        ),
        Tool::ScratchpadRead => schema(
            name,
            "Read one scratchpad entry by key.",
            json!({"key": key(), "scope": scope()}),
            &["key"],
        ),
        Tool::ScratchpadReadAll => schema(
            name,
            "Read every entry of the scratchpad.",
            json!({"scope": scope()}),
            &[],
        ),
        Tool::ScratchpadSearch => schema(
            name,
            "Find scratchpad entries whose key, value or tags contain the query (case-insensitive).",
            json!({"query": string_prop("The text to look for."), "scope": scope()}),
            &["query"],
        ),
        Tool::ScratchpadDelete => schema(
            name,
            "Remove a scratchpad entry.",
            json!({"key": key(), "scope": scope()}),
            &["key"],
        ),
        Tool::ChatroomSend => schema(
            name,
            "Post a message to the session's shared chatroom, for one agent or `All`.",
            json!({
                "recipient": string_prop("The agent the message is for, or `All`."),
                "message": string_prop("The message."),
            }),
            &["recipient", "message"],
        ),
        Tool::ChatroomRead => schema(
            name,
            "Read the newest chatroom messages.",
            json!({"count": {"type": "integer", "description": "Optional: how many recent messages (default 20, at most 100)."}}),
            &[],
        ),
        other => schema(other.name(), "", json!({}), &[]),
    }
}
