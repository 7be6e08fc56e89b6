//! The function schemas of the Http plugin's tools: upstream's names and arguments (`url`,
//! `body`, `contentType`, `headers`, `profile`, `timeoutSeconds`).

use serde_json::json;

use super::{schema, string_prop, Tool};
use crate::effect::ToolSchema;

/// The schema of one Http tool.
pub(super) fn schema_of(tool: Tool) -> ToolSchema {
    let mut properties = json!({
        "url": string_prop("An absolute http or https URL, or with `profile` a path under the profile's base URL."),
        "headers": {
            "type": "object",
            "description": "Optional: extra request headers, header names to values.",
            "additionalProperties": {"type": "string"},
        },
        "profile": string_prop("Optional: the name of a configured API profile, whose base URL and headers the request uses."),
        "timeoutSeconds": {"type": "number", "description": "Optional: stop waiting after this many seconds (default: the profile's, else 30)."},
    });
    let mut required = vec!["url"];
    let (verb, what) = match tool {
        Tool::HttpHead => (
            "HEAD",
            "Returns the status line and the response headers only.",
        ),
        Tool::HttpPost => ("POST", "Sends `body`; returns the response body."),
        Tool::HttpPut => ("PUT", "Sends `body`; returns the response body."),
        Tool::HttpPatch => ("PATCH", "Sends `body`; returns the response body."),
        Tool::HttpDelete => ("DELETE", "Returns the response body."),
        _ => ("GET", "Returns the response body."),
    };
    if matches!(tool, Tool::HttpPost | Tool::HttpPut | Tool::HttpPatch) {
        properties["body"] = string_prop("The request body.");
        properties["contentType"] =
            string_prop("Optional: the body's Content-Type (default `application/json`).");
        required.push("body");
    }
    schema(
        tool.name(),
        &format!(
            "Send an HTTP {verb} request. {what} A failure status is shown as `[HTTP code reason]` before the body; \
             long bodies are truncated. Only allowed hosts can be reached."
        ),
        properties,
        &required,
    )
}
