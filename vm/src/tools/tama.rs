//! tama's runtime tools: their schemas, and the run-wide key-value store behind `tama_mem_*`
//! (kept with the session's notes and answered by the machine, so a checkpoint keeps it).
//! The other tama tools run as the fuseraft tools they stand for (`tools::run`).

use std::collections::BTreeMap;

use fuseraft_compiler::ir::Tool;
use serde_json::{json, Value as Json};

use super::{schema, string_prop, Args, Outcome};
use crate::effect::ToolSchema;

/// The most text the store holds, keys and values together; a write past it is refused.
pub(super) const MAX_MEMORY_BYTES: usize = 1 << 20;

/// The schema of one tama tool.
pub(crate) fn schema_of(tool: Tool) -> ToolSchema {
    let name = tool.name();
    let key = || string_prop("The key.");
    match tool {
        Tool::TamaBash => schema(
            name,
            "Run a bash command in the work directory (in the command sandbox) and return its output.",
            json!({"command": string_prop("The bash command line to run.")}),
            &["command"],
        ),
        Tool::TamaHttpGet => schema(
            name,
            "Fetch a URL with GET and return the response body.",
            json!({"url": string_prop("The URL."), "headers": {"type": "object", "description": "Optional request headers."}}),
            &["url"],
        ),
        Tool::TamaHttpPost => schema(
            name,
            "POST a body to a URL and return the response body.",
            json!({
                "url": string_prop("The URL."),
                "body": string_prop("The request body."),
                "headers": {"type": "object", "description": "Optional request headers."},
            }),
            &["url", "body"],
        ),
        Tool::TamaFilesRead => schema(
            name,
            "Read a text file of the work directory.",
            json!({"path": string_prop("A path relative to the work directory.")}),
            &["path"],
        ),
        Tool::TamaFilesWrite => schema(
            name,
            "Create or replace a file of the work directory with the given content.",
            json!({
                "path": string_prop("A path relative to the work directory."),
                "content": string_prop("The complete new content of the file."),
            }),
            &["path", "content"],
        ),
        Tool::TamaMemSet => schema(
            name,
            "Store a string under a key in the run's shared memory.",
            json!({"key": key(), "value": string_prop("The value.")}),
            &["key", "value"],
        ),
        Tool::TamaMemGet => schema(
            name,
            "Read the string stored under a key in the run's shared memory (empty when unset).",
            json!({"key": key()}),
            &["key"],
        ),
        Tool::TamaMemAppend => schema(
            name,
            "Append an item to the JSON array stored under a key in the run's shared memory.",
            json!({"key": key(), "item": string_prop("The item.")}),
            &["key", "item"],
        ),
        _ => schema(
            "read_skill",
            "Read the instructions of one of your skills.",
            json!({"name": string_prop("The skill's name, as listed under Available skills.")}),
            &["name"],
        ),
    }
}

/// Answers `tama_mem_set`, `tama_mem_get` and `tama_mem_append` from `store`.
pub(crate) fn mem(store: &mut BTreeMap<String, String>, tool: Tool, args: &Args) -> Outcome {
    let key = match args.string("key") {
        Ok(key) => key.to_string(),
        Err(outcome) => return outcome,
    };
    let new_value = match tool {
        Tool::TamaMemGet => {
            return Outcome::ok(store.get(&key).cloned().unwrap_or_default());
        }
        Tool::TamaMemSet => match args.string("value") {
            Ok(value) => value.to_string(),
            Err(outcome) => return outcome,
        },
        _ => {
            let item = match args.string("item") {
                Ok(item) => item.to_string(),
                Err(outcome) => return outcome,
            };
            let mut list = match store
                .get(&key)
                .map(|text| serde_json::from_str::<Json>(text))
            {
                None => Vec::new(),
                Some(Ok(Json::Array(list))) => list,
                Some(_) => {
                    return Outcome::error(format!(
                        "tool `{}`: the value under `{key}` is not a JSON array",
                        tool.name()
                    ))
                }
            };
            list.push(Json::String(item));
            Json::Array(list).to_string()
        }
    };
    let held: usize = store
        .iter()
        .filter(|(stored, _)| **stored != key)
        .map(|(stored, value)| stored.len() + value.len())
        .sum();
    if held + key.len() + new_value.len() > MAX_MEMORY_BYTES {
        return Outcome::error(format!(
            "tool `{}`: the run's memory holds at most {MAX_MEMORY_BYTES} bytes; nothing was stored",
            tool.name()
        ));
    }
    store.insert(key, new_value);
    Outcome::ok("stored")
}
