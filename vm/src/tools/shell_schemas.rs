//! The function schemas of the Shell tools beyond `shell_run`: the script, background jobs,
//! the environment, the working directory and `which` (upstream's names, parameters in
//! snake case).

use serde_json::json;

use crate::effect::ToolSchema;
use crate::tools::{schema, string_prop, Tool};

/// The schema of one of these Shell tools.
pub(crate) fn schema_of(tool: Tool) -> ToolSchema {
    let job = || json!({"job_id": string_prop("The job id `shell_run_background` returned.")});
    let name = tool.name();
    match tool {
        Tool::ShellRunScript => schema(
            name,
            "Run a multi-line bash script in the work directory and return its combined output. \
             A non-zero exit status is reported as `[EXIT n]` before the output, a timeout as `[TIMEOUT]`.",
            json!({
                "script": string_prop("The script's text."),
                "timeout_seconds": {"type": "number", "description": "Optional: stop the script after this many seconds (capped by the run's limit)."},
            }),
            &["script"],
        ),
        Tool::ShellRunBackground => schema(
            name,
            "Start a bash command in the background (a server, a watcher) and return its job id at once. \
             Jobs end when the run ends.",
            json!({"command": string_prop("The bash command line to run.")}),
            &["command"],
        ),
        Tool::ShellGetJobStatus => schema(
            name,
            "Say whether a background job runs, exited (with its status) or was killed, with its latest output.",
            job(),
            &["job_id"],
        ),
        Tool::ShellGetJobOutput => schema(name, "Return a background job's output so far.", job(), &["job_id"]),
        Tool::ShellKillJob => schema(name, "Kill a background job and everything it started.", job(), &["job_id"]),
        Tool::ShellGetEnv => schema(
            name,
            "Read an environment variable as commands see it (an allow-list; never credentials).",
            json!({"name": string_prop("The variable's name.")}),
            &["name"],
        ),
        // The missing Shell tools (issue 29).
        Tool::ShellSetEnv => schema(
            name,
            "Set an environment variable for your later shell commands in this run (an empty value unsets it). \
             Credential-like names, dynamic-loader variables (`LD_*`) and the variables fuseraft sets are refused.",
            json!({
                "name": string_prop("The variable's name."),
                "value": string_prop("The value; empty to unset the variable."),
            }),
            &["name", "value"],
        ),
        Tool::ShellGetWorkingDirectory => schema(
            name,
            "Get the directory commands start in: the work directory (the sandbox root).",
            json!({}),
            &[],
        ),
        _ => schema(
            name,
            "Find a program on the commands' PATH, like `which`.",
            json!({"program": string_prop("The program's name.")}),
            &["program"],
        ),
    }
}
