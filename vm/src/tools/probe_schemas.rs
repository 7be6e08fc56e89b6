//! The function schemas of the Probe tools (upstream's names and camelCase arguments; the
//! snake_case spelling is accepted too, see `Args::either`).

use serde_json::{json, Value as Json};

use super::{schema, string_prop, Tool};
use crate::effect::ToolSchema;

fn common() -> [(&'static str, Json); 2] {
    [
        (
            "directory",
            string_prop("Optional: the directory to run in, relative to the work directory (default: the work directory)."),
        ),
        (
            "timeoutSeconds",
            json!({"type": "number", "description": "Optional: stop after this many seconds (default 30, capped by the run's limit)."}),
        ),
    ]
}

fn properties(own: Json) -> Json {
    let mut own = own;
    if let Some(map) = own.as_object_mut() {
        for (key, value) in common() {
            map.insert(key.to_string(), value);
        }
    }
    own
}

/// The schema of one Probe tool.
pub(super) fn schema_of(tool: Tool) -> ToolSchema {
    let name = tool.name();
    match tool {
        Tool::ProbeCode => schema(
            name,
            "Run a code snippet in the sandbox, as shell_run runs a command, and report its exit code and output.",
            properties(json!({
                "language": string_prop("bash, sh, python, js, node, go, csharp, powershell or kiwi."),
                "code": string_prop("The snippet."),
            })),
            &["language", "code"],
        ),
        Tool::ProbeAssertOutput => schema(
            name,
            "Run a bash command and judge its output: VERDICT: PASS or FAIL, with the reason.",
            properties(json!({
                "command": string_prop("The bash command line to run."),
                "expected": string_prop("The expected output, pattern or exit code."),
                "matchType": {
                    "type": "string",
                    "enum": ["contains", "equals", "regex", "exitcode"],
                    "description": "Optional: how to compare (default `contains`, case-insensitive).",
                },
            })),
            &["command", "expected"],
        ),
        Tool::ProbeCompareOutputs => schema(
            name,
            "Run two bash commands and show their exit codes and outputs side by side, and whether the outputs match.",
            properties(json!({
                "commandA": string_prop("The first command line."),
                "commandB": string_prop("The second command line."),
            })),
            &["commandA", "commandB"],
        ),
        _ => schema(
            name,
            "Test a hypothesis: run an optional setup command, then a probe command, and PASS when the probe's \
             output contains the expected observation (case-insensitive).",
            properties(json!({
                "hypothesis": string_prop("What you believe is true."),
                "command": string_prop("The bash command that probes it."),
                "expectedObservation": string_prop("Text the output contains when the hypothesis holds."),
                "setupCommand": string_prop("Optional: a command to run first; the probe is skipped when it fails."),
            })),
            &["hypothesis", "command", "expectedObservation"],
        ),
    }
}
