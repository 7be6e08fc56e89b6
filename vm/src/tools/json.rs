//! The Json plugin (upstream's `json_format`, `json_minify`, `json_get`, `json_keys`,
//! `json_search`, `json_to_text`, `json_validate`, `json_merge`): pure functions of JSON
//! text. Each takes the text as `json` (`baseJson` and `patchJson` for `json_merge`) or,
//! here beyond upstream, a file as `file` (`baseFile`, `patchFile`), read through the path
//! confinement ([`crate::confine`]) with the credential rule, as `read_file` reads. Nothing
//! is written: `json_merge` returns the merged text.

use serde_json::{Map, Value as Json};

use serde_json::json;

use super::sandbox::read_capped;
use super::{schema as function, string_prop, Args, Outcome, Tool, ToolContext};
use crate::effect::ToolSchema;

#[cfg(all(test, unix))]
#[path = "json_tests.rs"]
mod tests;

/// The largest JSON file read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The most array items `json_to_text` shows at each level.
const PREVIEW_ITEMS: usize = 5;

/// The function schema of one Json tool, with upstream's parameter names.
pub(crate) fn schema(tool: Tool) -> ToolSchema {
    let name = tool.name();
    let text = || string_prop("The JSON text (or give `file`).");
    let file =
        || string_prop("Optional instead of `json`: a JSON file, relative to the work directory.");
    let (description, mut properties, required): (&str, Json, &[&str]) = match tool {
        Tool::JsonFormat => ("Pretty-print JSON.", json!({}), &[]),
        Tool::JsonMinify => ("Minify JSON.", json!({}), &[]),
        Tool::JsonKeys => (
            "List the top-level keys of a JSON object, or an array's length.",
            json!({}),
            &[],
        ),
        Tool::JsonValidate => (
            "Check whether text is valid JSON; says where it is not.",
            json!({}),
            &[],
        ),
        Tool::JsonGet => (
            "Get a nested value by a dot-separated path (`items[2].name` or `items.2.name`).",
            json!({"path": string_prop("The dot-separated path.")}),
            &["path"],
        ),
        Tool::JsonSearch => (
            "Find the keys whose name contains the given text (case-insensitive), with their paths and values.",
            json!({"keyName": string_prop("The key name to look for.")}),
            &["keyName"],
        ),
        Tool::JsonToText => (
            "Render JSON as indented, human-readable text.",
            json!({"depth": {"type": "integer", "description": "Optional: the starting indentation depth."}}),
            &[],
        ),
        Tool::JsonMerge => {
            return function(
                name,
                "Shallow-merge two JSON objects (the patch's keys win) and return the result; nothing is written.",
                json!({
                    "baseJson": string_prop("The base object (or give `baseFile`)."),
                    "patchJson": string_prop("The patch object (or give `patchFile`)."),
                    "baseFile": string_prop("Optional instead of `baseJson`: a JSON file."),
                    "patchFile": string_prop("Optional instead of `patchJson`: a JSON file."),
                }),
                &[],
            )
        }
        other => return function(other.name(), "", json!({}), &[]),
    };
    if let Json::Object(map) = &mut properties {
        map.insert("json".to_string(), text());
        map.insert("file".to_string(), file());
    }
    function(name, description, properties, required)
}

/// Runs one Json tool.
pub(crate) fn run(tool: Tool, args: &Args, ctx: &ToolContext) -> Outcome {
    let outcome = match tool {
        Tool::JsonMerge => merge(args, ctx),
        _ => match document(args, ctx, "json", "file") {
            Ok(text) => one(tool, args, &text),
            Err(outcome) => outcome,
        },
    };
    if outcome.text.len() > ctx.limits.output_cap {
        return Outcome {
            text: super::record::cap_text(&outcome.text, ctx.limits.output_cap),
            ok: outcome.ok,
            denied: outcome.denied,
        };
    }
    outcome
}

/// The JSON text of argument `text_key`, or of the file named by `file_key`.
fn document(
    args: &Args,
    ctx: &ToolContext,
    text_key: &str,
    file_key: &str,
) -> Result<String, Outcome> {
    let tool = args.tool;
    match (args.opt_string(text_key)?, args.opt_string(file_key)?) {
        (Some(text), None) => Ok(text.to_string()),
        (None, Some(raw)) => read_file(tool, raw, ctx),
        (Some(_), Some(_)) => Err(Outcome::error(format!(
            "tool `{tool}`: give either `{text_key}` or `{file_key}`, not both"
        ))),
        (None, None) => Err(Outcome::error(format!(
            "tool `{tool}` needs the JSON text as `{text_key}` or a file as `{file_key}`"
        ))),
    }
}

/// A file under the sandbox root, resolved race-free; credential files are refused.
fn read_file(tool: &str, raw: &str, ctx: &ToolContext) -> Result<String, Outcome> {
    let bytes = read_capped(tool, raw, &ctx.work_dir, MAX_FILE_BYTES)?;
    String::from_utf8(bytes)
        .map_err(|_| Outcome::error(format!("{tool}: `{raw}` is not UTF-8 text")))
}

fn parse(text: &str) -> Result<Json, Outcome> {
    serde_json::from_str(text).map_err(|error| Outcome::fail(format!("[INVALID JSON] {error}")))
}

fn pretty(value: &Json) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn one(tool: Tool, args: &Args, text: &str) -> Outcome {
    if tool == Tool::JsonValidate {
        return match serde_json::from_str::<Json>(text) {
            Ok(_) => Outcome::ok("valid"),
            Err(error) => Outcome::fail(format!(
                "invalid: {error} (line {}, column {})",
                error.line(),
                error.column()
            )),
        };
    }
    let value = match parse(text) {
        Ok(value) => value,
        Err(outcome) => return outcome,
    };
    match tool {
        Tool::JsonFormat => Outcome::ok(pretty(&value)),
        Tool::JsonMinify => Outcome::ok(value.to_string()),
        Tool::JsonKeys => Outcome::ok(match &value {
            Json::Object(map) => map.keys().cloned().collect::<Vec<_>>().join(", "),
            Json::Array(items) => format!("[ARRAY] length={}", items.len()),
            other => format!("[SCALAR] {}", scalar(other)),
        }),
        Tool::JsonGet => match args.string("path") {
            Ok(path) => get(&value, path),
            Err(outcome) => outcome,
        },
        Tool::JsonSearch => match args.string("keyName") {
            Ok(name) if !name.trim().is_empty() => {
                let mut found = Vec::new();
                search(&value, "", &name.trim().to_lowercase(), &mut found);
                if found.is_empty() {
                    Outcome::ok(format!("[NOT FOUND] no key matches `{name}`"))
                } else {
                    Outcome::ok(found.join("\n"))
                }
            }
            Ok(_) => Outcome::error("tool `json_search`: `keyName` must not be empty"),
            Err(outcome) => outcome,
        },
        Tool::JsonToText => {
            let depth = match args.value("depth") {
                None => 0,
                Some(depth) => match depth.as_u64() {
                    Some(depth) if depth <= 32 => depth as usize,
                    _ => {
                        return Outcome::error(
                            "tool `json_to_text`: `depth` must be a whole number from 0 to 32",
                        )
                    }
                },
            };
            Outcome::ok(to_text(&value, depth))
        }
        _ => Outcome::error(format!("tool `{}` is not a Json tool", tool.name())),
    }
}

fn scalar(value: &Json) -> String {
    match value {
        Json::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The segments of a dot path; `items[2]` is `items`, `2`.
fn segments(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|part| !part.is_empty()) {
        match (part.find('['), part.find(']')) {
            (Some(open), Some(close)) if close > open => {
                if open > 0 {
                    out.push(&part[..open]);
                }
                out.push(&part[open + 1..close]);
            }
            _ => out.push(part),
        }
    }
    out
}

fn get(value: &Json, path: &str) -> Outcome {
    let mut current = value;
    let mut walked = String::new();
    for segment in segments(path) {
        let next = match current {
            Json::Object(map) => map.get(segment),
            Json::Array(items) => segment.parse::<usize>().ok().and_then(|at| items.get(at)),
            _ => None,
        };
        match next {
            Some(next) => current = next,
            None => {
                let at = if walked.is_empty() {
                    "the top"
                } else {
                    walked.as_str()
                };
                return Outcome::fail(format!(
                    "[PATH ERROR] `{segment}` does not exist under {at} of the JSON"
                ));
            }
        }
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(segment);
    }
    Outcome::ok(pretty(current))
}

fn search(value: &Json, path: &str, term: &str, found: &mut Vec<String>) {
    match value {
        Json::Object(map) => {
            for (key, child) in map {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if key.to_lowercase().contains(term) {
                    found.push(format!("{here} = {child}"));
                }
                search(child, &here, term, found);
            }
        }
        Json::Array(items) => {
            for (at, child) in items.iter().enumerate() {
                search(child, &format!("{path}[{at}]"), term, found);
            }
        }
        _ => {}
    }
}

fn to_text(value: &Json, depth: usize) -> String {
    let indent = "  ".repeat(depth);
    match value {
        Json::Null => "(null)".to_string(),
        Json::Object(map) if map.is_empty() => "{}".to_string(),
        Json::Object(map) => map
            .iter()
            .map(|(key, child)| format!("{indent}{key}: {}", to_text(child, depth + 1)))
            .collect::<Vec<_>>()
            .join("\n"),
        Json::Array(items) if items.is_empty() => "[]".to_string(),
        Json::Array(items) => {
            let mut lines = vec![format!("{indent}[{} items]", items.len())];
            for (at, child) in items.iter().take(PREVIEW_ITEMS).enumerate() {
                lines.push(format!("{indent}  [{at}] {}", to_text(child, depth + 1)));
            }
            if items.len() > PREVIEW_ITEMS {
                lines.push(format!(
                    "{indent}  ... {} more",
                    items.len() - PREVIEW_ITEMS
                ));
            }
            lines.join("\n")
        }
        other => scalar(other),
    }
}

/// `json_merge`: a shallow merge of two objects, the patch's keys winning.
fn merge(args: &Args, ctx: &ToolContext) -> Outcome {
    let object = |text_key: &str, file_key: &str| -> Result<Map<String, Json>, Outcome> {
        let text = document(args, ctx, text_key, file_key)?;
        match parse(&text)? {
            Json::Object(map) => Ok(map),
            _ => Err(Outcome::error(format!(
                "tool `json_merge`: `{text_key}` is not a JSON object"
            ))),
        }
    };
    let (mut base, patch) = match (
        object("baseJson", "baseFile"),
        object("patchJson", "patchFile"),
    ) {
        (Ok(base), Ok(patch)) => (base, patch),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    for (key, value) in patch {
        base.insert(key, value);
    }
    Outcome::ok(pretty(&Json::Object(base)))
}
