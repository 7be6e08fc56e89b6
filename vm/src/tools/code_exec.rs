//! The CodeExecution plugin (upstream's names and arguments), run in fuseraft's command
//! sandbox instead of Docker: `code_execution_check_docker` says whether that sandbox can
//! start a command; `sandbox_run {language, code, timeoutSeconds}` runs a snippet with no
//! state kept; `repl_start {language}`, `repl_exec {sessionId, code}`, `repl_reset` and
//! `repl_stop` keep a Python or Node session for the run, as upstream does: the code run so
//! far is run again, its output silenced, before the new code, so its names stay defined
//! and only the new code's output comes back.
//!
//! Every process goes the Probe tools' way (`super::probe`): `bash` under the OS sandbox
//! with this agent's environment, the time limit and output cap, recorded in the change log;
//! the code travels as an argument, never spliced into the script. `sandbox_run` and
//! `repl_exec` are `command_execution`.

use super::probe::{self, output_block, verdict_outcome, with_warnings, RUNNERS};
use super::{schema as function, string_prop, Args, Outcome, Tool, ToolContext};
use crate::effect::ToolSchema;

use serde_json::json;

#[cfg(all(test, unix))]
#[path = "code_exec_tests.rs"]
mod tests;

/// What marks, in a REPL run's output, where the new code's output starts.
const SEPARATOR: &str = "___FUSERAFT_REPL_SEP___";

/// The function schema of one CodeExecution tool.
pub(crate) fn schema(tool: Tool) -> ToolSchema {
    let timeout = || json!({"type": "integer", "description": "Optional: seconds before the run is stopped (default 30)."});
    let session = || string_prop("The session id `repl_start` gave.");
    match tool {
        Tool::CodeExecutionCheckDocker => function(
            tool.name(),
            "Say whether code can be run here (fuseraft runs it in its command sandbox, not Docker).",
            json!({}),
            &[],
        ),
        Tool::SandboxRun => function(
            tool.name(),
            "Run a code snippet in the command sandbox; nothing is kept between calls.",
            json!({
                "language": string_prop("python, node, bash, go, ..."),
                "code": string_prop("The code to run."),
                "timeoutSeconds": timeout(),
            }),
            &["language", "code"],
        ),
        Tool::ReplStart => function(
            tool.name(),
            "Start a REPL session (python or node) for this run; returns its id.",
            json!({ "language": string_prop("python or node.") }),
            &["language"],
        ),
        Tool::ReplExec => function(
            tool.name(),
            "Run code in a REPL session: what it defined before (variables, imports, functions) is still there; only this code's output comes back.",
            json!({ "sessionId": session(), "code": string_prop("The code to run."), "timeoutSeconds": timeout() }),
            &["sessionId", "code"],
        ),
        Tool::ReplReset => function(
            tool.name(),
            "Forget what a REPL session ran, keeping the session.",
            json!({ "sessionId": session() }),
            &["sessionId"],
        ),
        Tool::ReplStop => function(
            tool.name(),
            "End a REPL session.",
            json!({ "sessionId": session() }),
            &["sessionId"],
        ),
        other => function(other.name(), "", json!({}), &[]),
    }
}

/// Runs one CodeExecution tool.
pub(crate) async fn run(tool: Tool, args: &Args, ctx: &ToolContext) -> Outcome {
    match one(tool, args, ctx).await {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

async fn one(tool: Tool, args: &Args, ctx: &ToolContext) -> Result<Outcome, Outcome> {
    match tool {
        Tool::CodeExecutionCheckDocker => {
            let setting = probe::setting(args, ctx)?;
            let ran =
                probe::bash(ctx, &setting, "code_execution_check_docker", "exit 0", &[]).await?;
            Ok(match ran.code {
                Some(0) => Outcome::ok(
                    "Code runs here: sandbox_run and repl_exec run it in fuseraft's command sandbox (no Docker is used).",
                ),
                _ => Outcome::fail(format!(
                    "Code cannot run here: the command sandbox did not start a command ({})",
                    ran.output.trim()
                )),
            })
        }
        Tool::SandboxRun => {
            let language = probe::text(args, "language")?.trim().to_string();
            let code = probe::text(args, "code")?;
            run_code(args, ctx, &language, code, code, None, false).await
        }
        Tool::ReplStart => {
            let language = probe::text(args, "language")?.trim().to_ascii_lowercase();
            let Some(language) = repl_language(&language) else {
                return Err(Outcome::error(format!(
                    "repl_start: REPL sessions are for python and node; use sandbox_run for `{language}`"
                )));
            };
            let id = ctx.run_state.repl_start(language);
            Ok(Outcome::ok(format!(
                "REPL session started.\nSession ID : {id}\nLanguage   : {language}\nUse repl_exec to run code in it."
            )))
        }
        Tool::ReplExec => {
            let id = probe::text(args, "sessionId")?.trim().to_string();
            let code = probe::text(args, "code")?;
            let (language, before) = session(ctx, &id)?;
            let script = replay_script(&language, &before, code);
            let replays = !before.trim().is_empty();
            let outcome = run_code(
                args,
                ctx,
                &language,
                &script,
                code,
                Some(SEPARATOR),
                replays,
            )
            .await?;
            let so_far = if before.is_empty() {
                code.to_string()
            } else {
                format!("{before}\n{code}")
            };
            ctx.run_state.repl_set(&id, so_far);
            Ok(outcome)
        }
        Tool::ReplReset => {
            let id = probe::text(args, "sessionId")?.trim().to_string();
            session(ctx, &id)?;
            ctx.run_state.repl_set(&id, String::new());
            Ok(Outcome::ok(format!(
                "Session `{id}` reset: what it ran is forgotten."
            )))
        }
        Tool::ReplStop => {
            let id = probe::text(args, "sessionId")?.trim().to_string();
            match ctx.run_state.repl_stop(&id) {
                true => Ok(Outcome::ok(format!("Session `{id}` ended."))),
                false => Err(unknown_session(&id)),
            }
        }
        _ => Err(Outcome::error(format!(
            "tool `{}` is not a CodeExecution tool",
            tool.name()
        ))),
    }
}

/// Runs `script` in `language` sandboxed (`shown` is what the change log records); with a
/// `separator`, only the output after it comes back. A script that `replays` code `shown`
/// leaves out never gets a writable `.git`.
async fn run_code(
    args: &Args,
    ctx: &ToolContext,
    language: &str,
    script: &str,
    shown: &str,
    separator: Option<&str>,
    replays: bool,
) -> Result<Outcome, Outcome> {
    let Some((_, runner)) = RUNNERS
        .iter()
        .find(|(names, _)| names.iter().any(|name| name.eq_ignore_ascii_case(language)))
    else {
        let supported: Vec<&str> = RUNNERS
            .iter()
            .flat_map(|(names, _)| names.iter().copied())
            .collect();
        return Err(Outcome::error(format!(
            "{}: unsupported language `{language}`; supported: {}",
            args.tool,
            supported.join(", ")
        )));
    };
    let mut setting = probe::setting(args, ctx)?;
    setting.replays = replays;
    let mut ran = probe::bash(
        ctx,
        &setting,
        &format!("{} ({language}): {shown}", args.tool),
        &format!("exec 2>&1\n{runner}"),
        &[script],
    )
    .await?;
    if let Some(separator) = separator {
        if let Some((_, after)) = ran.output.split_once(separator) {
            ran.output = after.trim_start_matches(['\r', '\n']).to_string();
        }
    }
    let text = format!(
        "EXIT CODE: {}\n{}",
        ran.exit(),
        output_block(&ran, &setting, "")
    );
    Ok(with_warnings(
        verdict_outcome(text, ran.code == Some(0)),
        &[&ran],
    ))
}

fn repl_language(language: &str) -> Option<&'static str> {
    match language {
        "python" | "python3" | "py" => Some("python"),
        "node" | "javascript" | "js" => Some("node"),
        _ => None,
    }
}

fn session(ctx: &ToolContext, id: &str) -> Result<(String, String), Outcome> {
    ctx.run_state.repl(id).ok_or_else(|| unknown_session(id))
}

fn unknown_session(id: &str) -> Outcome {
    Outcome::fail(format!("no REPL session `{id}`; repl_start makes one"))
}

/// The code a REPL run executes: what ran before with its output silenced, the separator,
/// then the new code.
fn replay_script(language: &str, before: &str, code: &str) -> String {
    let mut script = String::new();
    match language {
        "python" => {
            if !before.is_empty() {
                script.push_str(
                    "import sys as _fr_sys, io as _fr_io\n_fr_sys.stdout = _fr_io.StringIO()\n",
                );
                script.push_str(before);
                script.push_str("\n_fr_sys.stdout = _fr_sys.__stdout__\n");
            }
            script.push_str(&format!("print(\"{SEPARATOR}\", flush=True)\n"));
        }
        _ => {
            if !before.is_empty() {
                script.push_str("const _frWrite = process.stdout.write.bind(process.stdout);\nprocess.stdout.write = () => true;\n");
                script.push_str(before);
                script.push_str("\nprocess.stdout.write = _frWrite;\n");
            }
            script.push_str(&format!("process.stdout.write(\"{SEPARATOR}\\n\");\n"));
        }
    }
    script.push_str(code);
    script
}
