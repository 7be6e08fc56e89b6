//! The Memory plugin: `memory_append(text, tags?)`, `memory_search(query, limit?)` and
//! `memory_get(id)` over the calling agent's memories ([`crate::memory`]), kept per agent
//! and project across sessions. An append is synced before the call returns.

use serde_json::json;

use super::{schema as function, string_prop, Args, Outcome, Tool, ToolContext};
use crate::effect::ToolSchema;
use crate::memory::{self, Memory, MAX_TEXT};

/// The function schema of one Memory tool.
pub(crate) fn schema(tool: Tool) -> ToolSchema {
    match tool {
        Tool::MemoryAppend => function(
            tool.name(),
            "Remember something for later sessions: a fact, a decision, a lesson. Your memories are yours (per agent) and this project's.",
            json!({
                "text": string_prop("What to remember, in a sentence or two."),
                "tags": string_prop("Optional: comma-separated tags."),
            }),
            &["text"],
        ),
        Tool::MemorySearch => function(
            tool.name(),
            "Search your memories, most relevant first.",
            json!({
                "query": string_prop("What you are looking for."),
                "limit": {"type": "integer", "description": "Optional: the most memories returned (default 5)."},
            }),
            &["query"],
        ),
        Tool::MemoryGet => function(
            tool.name(),
            "Read one memory whole by its id (the number `memory_search` shows in brackets).",
            json!({ "id": {"type": "integer", "description": "The memory's id."} }),
            &["id"],
        ),
        other => function(other.name(), "", json!({}), &[]),
    }
}

/// Runs one Memory tool for the calling agent.
pub(crate) fn run(tool: Tool, args: &Args, ctx: &ToolContext) -> Outcome {
    match one(tool, args, ctx) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn one(tool: Tool, args: &Args, ctx: &ToolContext) -> Result<Outcome, Outcome> {
    let failed = |why: String| Outcome::fail(format!("{}: {why}", tool.name()));
    match tool {
        Tool::MemoryAppend => {
            let text = args.string("text")?.trim();
            if text.is_empty() || text.len() > MAX_TEXT {
                return Err(Outcome::error(format!(
                    "tool `memory_append`: `text` must hold 1 to {MAX_TEXT} bytes"
                )));
            }
            let tags = args
                .opt_string("tags")?
                .map(|tags| {
                    tags.split(',')
                        .map(str::trim)
                        .filter(|tag| !tag.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let kept = Memory {
                text: text.to_string(),
                tags,
                session: ctx.session_id.clone(),
                turn: ctx.turn,
                at: super::record::now_rfc3339(),
            };
            let id = memory::append(&ctx.work_dir, &ctx.agent, &kept).map_err(failed)?;
            Ok(Outcome::ok(format!("Remembered as [{id}].")))
        }
        Tool::MemorySearch => {
            let query = args.string("query")?;
            let limit = args.opt_count("limit", 5, 1, 50)?;
            let all = memory::all(&ctx.work_dir, &ctx.agent).map_err(failed)?;
            let found = memory::search(&all, query, limit);
            if found.is_empty() {
                return Ok(Outcome::ok(format!(
                    "No memory matches `{}` ({} kept).",
                    memory::one_line(query),
                    all.len()
                )));
            }
            let lines: Vec<String> = found
                .iter()
                .map(|id| format!("[{id}] {}", memory::one_line(&all[id - 1].text)))
                .collect();
            Ok(Outcome::ok(lines.join("\n")))
        }
        Tool::MemoryGet => {
            let id = args.opt_count("id", 0, 1, usize::MAX)?;
            let all = memory::all(&ctx.work_dir, &ctx.agent).map_err(failed)?;
            let kept = all
                .get(id.wrapping_sub(1))
                .ok_or_else(|| failed(format!("no memory [{id}]; there are {}", all.len())))?;
            let tags = match kept.tags.is_empty() {
                true => String::new(),
                false => format!("\ntags: {}", kept.tags.join(", ")),
            };
            Ok(Outcome::ok(format!(
                "[{id}] {}{tags}\n(written {} in session {}, turn {})",
                kept.text,
                kept.at,
                kept.session,
                kept.turn + 1
            )))
        }
        _ => Err(Outcome::error(format!(
            "tool `{}` is not a Memory tool",
            tool.name()
        ))),
    }
}
