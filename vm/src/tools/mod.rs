//! The tools agents can call: FileSystem, Search, Shell, Git, Json, Http, Probe, Changes
//! (executed here), Handoff and Finish (schemas only; the machine answers them), SubAgent (schemas
//! only; the driver runs a sub-agent, `driver/sub_agent.rs`). Every tool is listed in
//! `docs/tools.md`.
//!
//! ```text
//!  ToolCall {name, args, denied: None} ─▶ execute ─▶ sandbox::resolve ─▶ fs / shell / changes ─▶ call.result, call.ok
//!                                                   └──▶ record ─▶ changes.json
//! ```
//!
//! Every failure is a result, never an `Err` or a panic: `[ERROR] ...` for bad arguments
//! and IO errors, `[DENIED: unknown tool] ...` for a name that is not exactly a tool's,
//! `[DENIED: sandbox] ...` for a path outside the work dir,
//! `[DENIED: credentials] ...` for a credential file, and for `shell_run` the prefixes the
//! validators read: `[EXIT n]`, `[TIMEOUT]`, `[ERROR]`. The security decisions are listed
//! in `permissions.rs` (tool names, policy, envelope), `sandbox.rs` (paths and
//! credentials), `fs.rs` (writes by fresh-file replace) and `shell.rs` (process groups,
//! environment).

mod args;
mod code_exec;
mod document;
mod fs;
mod fs_extra;
mod fs_move;
mod fs_search_schemas;
mod fs_stat;
mod git;
mod grep;
mod http;
pub mod http_policy;
mod http_response;
mod http_schemas;
mod jobs;
mod json;
mod memory;
pub mod notes;
pub mod permissions;
mod probe;
mod probe_schemas;
mod process;
mod record;
pub(crate) use record::rfc3339;
mod run_state;
mod sandbox;
mod search;
mod search_symbols;
mod shell;
mod shell_env;
mod shell_schemas;
mod tama;

#[cfg(all(test, unix))]
mod shell_tests;
#[cfg(test)]
mod testkit;
#[cfg(all(test, unix))]
mod tests;

use crate::history::{Denial, DenialKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{json, Value as Json};

use crate::changes::DEFAULT_PATH;
use crate::effect::ToolSchema;
use crate::history::ToolCall;

use fuseraft_compiler::ir::Plugin;
pub use permissions::Tool;

pub(crate) use args::Args;
pub use jobs::Jobs;
pub use run_state::RunState;

pub(crate) use record::now_rfc3339;
pub use record::record_mcp_call;
pub use sandbox::is_credential_path;
pub(crate) use sandbox::protected_state;
pub use shell::{creates_commit, is_git_write, is_secret_env};

/// Where and for whom a tool call runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolContext {
    /// The sandbox root (`Security.FileSystemSandboxPath`, else the work dir), canonicalized.
    /// Every path argument resolves under it; `shell_run` starts in it.
    pub work_dir: PathBuf,
    pub session_id: String,
    pub agent: String,
    pub turn: u32,
    /// The change log (absolute); an empty path turns recording off.
    pub change_log: PathBuf,
    pub limits: Limits,
    /// The OS sandbox `shell_run` commands run in (`crate::sandbox`).
    pub sandbox: crate::sandbox::Spec,
    /// The run's one confinement, computed at its start: every process a tool starts
    /// (`shell_run`, background jobs, git) runs under a policy drawn from it.
    pub confinement: std::sync::Arc<crate::sandbox::Confinement>,
    /// The run's background jobs (`shell_run_background`): one table per run, shared by
    /// every call's context; the jobs die with the last handle.
    pub jobs: Jobs,
    /// Where the Http plugin may send requests (`Security.HttpAllowedHosts`,
    /// `AllowPrivateHosts`, `ApiProfiles`); the default allows no private host.
    pub http: http_policy::HttpPolicy,
    /// What the tools remember during the run (file versions, saved summaries, each
    /// agent's `shell_set_env` variables): one per run, shared like `jobs`.
    pub run_state: RunState,
}

impl ToolContext {
    /// A context with the default limits and the change log at its default place
    /// ([`DEFAULT_PATH`] under the work dir). Fails when the work dir does not exist.
    pub fn new(
        work_dir: &Path,
        session_id: &str,
        agent: &str,
        turn: u32,
    ) -> Result<ToolContext, String> {
        let work_dir = std::fs::canonicalize(work_dir).map_err(|error| {
            format!(
                "work dir `{}` is not accessible: {error}",
                work_dir.display()
            )
        })?;
        let change_log = work_dir.join(DEFAULT_PATH);
        let protected = crate::changes::store::protected_paths(&change_log);
        let confinement = crate::sandbox::Confinement::new(&work_dir, &protected, &[]);
        Ok(ToolContext {
            change_log,
            confinement: std::sync::Arc::new(confinement),
            work_dir,
            session_id: session_id.to_string(),
            agent: agent.to_string(),
            turn,
            limits: Limits::default(),
            sandbox: crate::sandbox::Spec::default(),
            jobs: Jobs::default(),
            http: http_policy::HttpPolicy::default(),
            run_state: RunState::default(),
        })
    }
}

/// Resource limits of the tools.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest a `shell_run` may take; a model's `timeout_seconds` can only shorten it.
    pub shell_timeout: Duration,
    /// The most tool output fed back to the model (`shell_run`, `list_files`, an Http
    /// response body), in bytes.
    pub output_cap: usize,
    /// The most of a file `read_file` returns (`Security.ReadFileSizeLimit`), in bytes.
    pub read_cap: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            shell_timeout: Duration::from_secs(120),
            output_cap: 64 * 1024,
            read_cap: 20_000,
        }
    }
}

/// `handoff` and `finish` end a turn: the machine answers them, [`execute`] does not run them.
pub fn is_internal(name: &str) -> bool {
    matches!(Tool::resolve(name), Some(Tool::Handoff | Tool::Finish))
}

/// What a tool produced: the text fed back, whether it counts as success, and why it was
/// refused when it was.
pub(crate) struct Outcome {
    pub text: String,
    pub ok: bool,
    pub denied: Option<DenialKind>,
}

impl From<Denial> for Outcome {
    fn from(denial: Denial) -> Outcome {
        Outcome {
            text: denial.text,
            ok: false,
            denied: Some(denial.kind),
        }
    }
}

impl Outcome {
    pub(crate) fn ok(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            ok: true,
            denied: None,
        }
    }

    pub(crate) fn fail(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            ok: false,
            denied: None,
        }
    }

    /// A refusal of `kind`: `[DENIED: kind] reason`.
    pub(crate) fn denied(kind: DenialKind, reason: impl std::fmt::Display) -> Outcome {
        Outcome::from(Denial::new(kind, reason))
    }

    pub(crate) fn error(text: impl std::fmt::Display) -> Outcome {
        Outcome::fail(format!("[ERROR] {text}"))
    }
}

/// Runs one tool call in the sandbox, filling `call.result` and `call.ok`: its name resolved
/// exactly (`ir::Tool::resolve`), any other name refused. Never panics and never fails:
/// errors, denials and timeouts are results. The driver resolves a call once, in
/// [`permissions::decide`], and runs that tool with [`execute_tool`].
pub async fn execute(call: &mut ToolCall, ctx: &ToolContext) {
    match permissions::resolve(call, None) {
        Ok(tool) => execute_tool(call, tool, ctx).await,
        Err(denial) => denial.answer(call),
    }
}

/// Runs `tool` (the resolution of `call.name`, already permitted) with the call's arguments.
pub async fn execute_tool(call: &mut ToolCall, tool: Tool, ctx: &ToolContext) {
    let outcome = std::panic::AssertUnwindSafe(run(tool, call, ctx))
        .catch_unwind()
        .await;
    let outcome = outcome.unwrap_or_else(|_| {
        Outcome::error(format!(
            "tool `{}` failed unexpectedly (internal error)",
            call.name
        ))
    });
    call.result = Some(outcome.text);
    call.ok = outcome.ok;
    call.denied = outcome.denied;
}

async fn run(tool: Tool, call: &ToolCall, ctx: &ToolContext) -> Outcome {
    let args = match Args::new(tool.name(), &call.args) {
        Ok(args) => args,
        Err(outcome) => return outcome,
    };
    match tool {
        Tool::Handoff => match args.string("route_keyword") {
            Ok(keyword) => Outcome::ok(keyword),
            Err(outcome) => outcome,
        },
        Tool::Finish => match (args.string("key"), args.value("value")) {
            (Ok(_), Some(value)) => Outcome::ok(
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string),
            ),
            (Err(outcome), _) => outcome,
            (Ok(_), None) => Outcome::error("tool `finish` needs an argument `value`"),
        },
        Tool::ChangesReadLatest => record::read_latest(ctx),
        // Agent state and context (issue 15).
        Tool::ChangesRead => record::read_all(ctx),
        Tool::JsonFormat
        | Tool::JsonMinify
        | Tool::JsonGet
        | Tool::JsonKeys
        | Tool::JsonSearch
        | Tool::JsonToText
        | Tool::JsonValidate
        | Tool::JsonMerge => json::run(tool, &args, ctx),
        Tool::DocumentExtractText
        | Tool::DocumentGetInfo
        | Tool::DocumentListSheets
        | Tool::DocumentGetSheet => document::run(tool, &args, ctx),
        Tool::MemoryAppend | Tool::MemorySearch | Tool::MemoryGet => {
            memory::run(tool, &args, ctx)
        }
        // Http (issue 15).
        Tool::HttpGet
        | Tool::HttpHead
        | Tool::HttpPost
        | Tool::HttpPut
        | Tool::HttpPatch
        | Tool::HttpDelete => http::run(tool, &args, ctx).await,
        Tool::SessionContextRead
        | Tool::SessionContextWrite
        | Tool::ScratchpadWrite
        | Tool::ScratchpadRead
        | Tool::ScratchpadReadAll
        | Tool::ScratchpadSearch
        | Tool::ScratchpadDelete
        | Tool::ChatroomSend
        | Tool::ChatroomRead => Outcome::error(format!(
            "tool `{}` reads or writes the session's notes, which the machine answers; it is not run outside a session",
            tool.name()
        )),
        Tool::SubAgentExplore | Tool::SubAgentLocate => Outcome::error(format!(
            "tool `{}` starts a sub-agent, which the driver runs with its agent's model; it is not run outside a turn",
            tool.name()
        )),
        Tool::ShellRun => shell::run(&args, ctx).await,
        // Git and the rest of Shell.
        Tool::ShellRunScript => shell::run_script(&args, ctx).await,
        Tool::ShellRunBackground => jobs::start(&args, ctx).await,
        Tool::ShellGetJobStatus => jobs::status(&args, ctx),
        Tool::ShellGetJobOutput => jobs::output(&args, ctx),
        Tool::ShellKillJob => jobs::kill(&args, ctx),
        Tool::ShellGetEnv => shell_env::get_env(&args, ctx),
        Tool::ShellWhich => shell_env::which(&args, ctx),
        // The missing Shell tools and Probe (issue 29).
        Tool::ShellSetEnv => shell_env::set_env(&args, ctx),
        Tool::ShellGetWorkingDirectory => Outcome::ok(ctx.work_dir.display().to_string()),
        Tool::ProbeCode
        | Tool::ProbeAssertOutput
        | Tool::ProbeCompareOutputs
        | Tool::ProbeRunHypothesis => probe::run(tool, &args, ctx).await,
        Tool::CodeExecutionCheckDocker
        | Tool::SandboxRun
        | Tool::ReplStart
        | Tool::ReplExec
        | Tool::ReplReset
        | Tool::ReplStop => code_exec::run(tool, &args, ctx).await,
        // tama's tools run as the tools they stand for, under the same policy and sandbox.
        Tool::TamaBash => shell::run(&args, ctx).await,
        Tool::TamaHttpGet => http::run(Tool::HttpGet, &args, ctx).await,
        Tool::TamaHttpPost => http::run(Tool::HttpPost, &args, ctx).await,
        Tool::TamaMemSet | Tool::TamaMemGet | Tool::TamaMemAppend | Tool::ReadSkill => {
            Outcome::error(format!(
                "tool `{}` reads or writes the run's own state, which the machine answers; it is not run outside a session",
                tool.name()
            ))
        }
        Tool::GitStatus
        | Tool::GitDiff
        | Tool::GitLog
        | Tool::GitShow
        | Tool::GitBranchList
        | Tool::GitStashList
        | Tool::GitAdd
        | Tool::GitCommit
        | Tool::GitCheckout
        | Tool::GitCreateBranch
        | Tool::GitInit
        | Tool::GitStash
        | Tool::GitStashPop
        | Tool::GitReset
        | Tool::GitPush
        | Tool::GitPull => git::run(tool, &args, ctx).await,
        Tool::ReadFile
        | Tool::WriteFile
        | Tool::PatchFile
        | Tool::ListFiles
        | Tool::DeleteFile
        | Tool::GrepFile
        | Tool::GetFileInfo
        | Tool::GetFileSummary
        | Tool::ListDirectory
        | Tool::CreateDirectory
        | Tool::CopyFile
        | Tool::MoveFile
        | Tool::DeleteDirectory
        | Tool::SetPermissions
        | Tool::SearchFiles
        | Tool::SearchContent
        | Tool::SearchSymbol
        | Tool::SearchCallers
        | Tool::StatFile
        | Tool::PathExists
        | Tool::SaveFileSummary
        | Tool::TamaFilesRead
        | Tool::TamaFilesWrite => {
            let root = match std::fs::canonicalize(&ctx.work_dir) {
                Ok(root) => root,
                Err(error) => {
                    return Outcome::error(format!(
                        "the work dir `{}` is not accessible: {error}",
                        ctx.work_dir.display()
                    ))
                }
            };
            match tool {
                Tool::ReadFile | Tool::TamaFilesRead => fs::read_file(&args, &root, ctx),
                Tool::WriteFile | Tool::TamaFilesWrite => fs::write_file(&args, &root, ctx),
                Tool::PatchFile => fs::patch_file(&args, &root, ctx),
                Tool::ListFiles => fs::list_files(&args, &root, ctx),
                Tool::DeleteFile => fs::delete_file(&args, &root, ctx),
                // Search and FileSystem in full (issue 15).
                Tool::GrepFile => fs_extra::grep_file(&args, &root, ctx),
                Tool::GetFileInfo => fs_extra::get_file_info(&args, &root, ctx),
                Tool::GetFileSummary => fs_extra::get_file_summary(&args, &root, ctx),
                Tool::ListDirectory => fs_extra::list_directory(&args, &root, ctx),
                Tool::CreateDirectory => fs_extra::create_directory(&args, &root, ctx),
                Tool::CopyFile => fs_move::copy_file(&args, &root, ctx),
                Tool::MoveFile => fs_move::move_file(&args, &root, ctx),
                Tool::DeleteDirectory => fs_move::delete_directory(&args, &root, ctx),
                Tool::SetPermissions => fs_extra::set_permissions(&args, &root, ctx),
                Tool::SearchFiles => search::search_files(&args, &root, ctx),
                Tool::SearchSymbol => search_symbols::search_symbol(&args, &root, ctx),
                Tool::SearchCallers => search_symbols::search_callers(&args, &root, ctx),
                // The missing FileSystem tools (issue 29).
                Tool::StatFile => fs_stat::stat_file(&args, &root, ctx),
                Tool::PathExists => fs_stat::path_exists(&args, &root, ctx),
                Tool::SaveFileSummary => fs_stat::save_file_summary(&args, &root, ctx),
                _ => search::search_content(&args, &root, ctx),
            }
        }
    }
}

pub(crate) fn schema(
    name: &str,
    description: &str,
    properties: Json,
    required: &[&str],
) -> ToolSchema {
    ToolSchema {
        name: name.to_string(),
        description: description.to_string(),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
    }
}

pub(crate) fn string_prop(description: &str) -> Json {
    json!({"type": "string", "description": description})
}

/// The function schemas offered to a model for an agent's `Plugins` (`FileSystem`, `Search`,
/// `Shell`, `Changes`, `Handoff`, `Finish`, case-insensitive). Unknown plugin names give nothing;
/// a plugin named twice is offered once.
pub fn schemas(plugins: &[String]) -> Vec<ToolSchema> {
    let mut seen: Vec<Plugin> = Vec::new();
    let mut out = Vec::new();
    for plugin in plugins.iter().filter_map(|name| Plugin::parse(name)) {
        if seen.contains(&plugin) {
            continue;
        }
        seen.push(plugin);
        out.extend(plugin.tools().map(schema_of));
    }
    // A tama tool a skill unlocks is listed by its own name.
    for name in plugins {
        let tool = Tool::resolve(name).filter(|tool| tool.plugin() == Plugin::Tama);
        if let Some(tool) = tool.filter(|_| !seen.contains(&Plugin::Tama)) {
            let schema = schema_of(tool);
            if !out.iter().any(|known| known.name == schema.name) {
                out.push(schema);
            }
        }
    }
    out
}

/// The function schemas of `tools`, in that order (a sub-agent's tools).
pub fn schemas_of(tools: &[Tool]) -> Vec<ToolSchema> {
    tools.iter().copied().map(schema_of).collect()
}

/// `schema` (`handoff` or `finish`) with its routing parameter (`route_keyword`, `key`)
/// limited to `choices`, a JSON-schema `enum` built for the state the call is made in. Other
/// schemas, and an empty `choices`, come back unchanged.
pub fn with_choices(mut schema: ToolSchema, choices: &[String]) -> ToolSchema {
    let param = match Tool::resolve(&schema.name) {
        Some(Tool::Handoff) => "route_keyword",
        Some(Tool::Finish) => "key",
        _ => return schema,
    };
    if choices.is_empty() {
        return schema;
    }
    if let Some(property) = schema
        .parameters
        .get_mut("properties")
        .and_then(|properties| properties.get_mut(param))
        .and_then(Json::as_object_mut)
    {
        property.insert("enum".to_string(), json!(choices));
    }
    schema
}

/// The function schema of one tool.
fn schema_of(tool: Tool) -> ToolSchema {
    let path = || string_prop("A path relative to the work directory.");
    let name = tool.name();
    match tool {
        Tool::ShellRun => schema(
            name,
            "Run a bash command in the work directory and return its combined stdout and stderr. \
             A non-zero exit status is reported as `[EXIT n]` before the output, a timeout as `[TIMEOUT]`.",
            json!({
                "command": string_prop("The bash command line to run."),
                "timeout_seconds": {"type": "number", "description": "Optional: stop the command after this many seconds (capped by the run's limit)."},
            }),
            &["command"],
        ),
        Tool::ChangesReadLatest => schema(
            name,
            "Read the newest change-log entry of this session: files written and deleted, commands run.",
            json!({}),
            &[],
        ),
        Tool::Handoff => schema(
            name,
            "Hand the conversation to the next agent by naming the route keyword. Ends your turn.",
            json!({
                "route_keyword": string_prop("The route keyword, exactly as given in your instructions."),
                "goal": string_prop("Optional: what the next agent should achieve."),
                "background": string_prop("Optional: what the next agent needs to know."),
                "constraints": string_prop("Optional: limits the next agent must respect."),
            }),
            &["route_keyword"],
        ),
        Tool::Finish => schema(
            name,
            "Finish this step with an outcome key and the value passed to the next step. Ends your turn.",
            json!({
                "key": string_prop("The outcome key that selects the next step."),
                "value": string_prop("The result handed to the next step."),
            }),
            &["key", "value"],
        ),
        Tool::ReadFile => schema(
            name,
            "Read a text file. Long files are truncated (the result says so).",
            json!({"path": path()}),
            &["path"],
        ),
        Tool::WriteFile => schema(
            name,
            "Create or replace a file with the given content, creating parent directories. \
             With `baseVersion` (from stat_file), the write is refused with VERSION_MISMATCH \
             when the file was written since.",
            json!({
                "path": path(),
                "content": string_prop("The complete new content of the file."),
                "baseVersion": {"type": "integer", "description": "Optional: the version stat_file reported; the write fails when the file's version differs (0: no check)."},
            }),
            &["path", "content"],
        ),
        Tool::PatchFile => schema(
            name,
            "Replace exactly one occurrence of `old` with `new` in a file. `old` must match the file's text \
             exactly (whitespace included) and occur once.",
            json!({
                "path": path(),
                "old": string_prop("The exact text to replace; include enough context to make it unique."),
                "new": string_prop("The replacement text."),
            }),
            &["path", "old", "new"],
        ),
        Tool::ListFiles => schema(
            name,
            "List a directory (default: the work directory), one entry per line, directories ending in `/`.",
            json!({"path": string_prop("Optional: a directory relative to the work directory.")}),
            &[],
        ),
        Tool::DeleteFile => schema(name, "Delete a file.", json!({"path": path()}), &["path"]),
        // Git and the rest of Shell.
        Tool::GitStatus
        | Tool::GitDiff
        | Tool::GitLog
        | Tool::GitShow
        | Tool::GitBranchList
        | Tool::GitStashList
        | Tool::GitAdd
        | Tool::GitCommit
        | Tool::GitCheckout
        | Tool::GitCreateBranch
        | Tool::GitInit
        | Tool::GitStash
        | Tool::GitStashPop
        | Tool::GitReset
        | Tool::GitPush
        | Tool::GitPull => git::schema_of(tool),
        Tool::ShellRunScript
        | Tool::ShellRunBackground
        | Tool::ShellGetJobStatus
        | Tool::ShellGetJobOutput
        | Tool::ShellKillJob
        | Tool::ShellGetEnv
        | Tool::ShellWhich
        | Tool::ShellSetEnv
        | Tool::ShellGetWorkingDirectory => shell_schemas::schema_of(tool),
        // Probe (issue 29).
        Tool::ProbeCode
        | Tool::ProbeAssertOutput
        | Tool::ProbeCompareOutputs
        | Tool::ProbeRunHypothesis => probe_schemas::schema_of(tool),
        Tool::CodeExecutionCheckDocker
        | Tool::SandboxRun
        | Tool::ReplStart
        | Tool::ReplExec
        | Tool::ReplReset
        | Tool::ReplStop => code_exec::schema(tool),
        // Agent state and context (issue 15).
        Tool::SessionContextRead
        | Tool::SessionContextWrite
        | Tool::ScratchpadWrite
        | Tool::ScratchpadRead
        | Tool::ScratchpadReadAll
        | Tool::ScratchpadSearch
        | Tool::ScratchpadDelete
        | Tool::ChatroomSend
        | Tool::ChatroomRead => notes::schema(tool),
        Tool::ChangesRead => schema(
            name,
            "Read this session's whole change log: per turn, the files written and deleted and the commands run.",
            json!({}),
            &[],
        ),
        Tool::JsonFormat
        | Tool::JsonMinify
        | Tool::JsonGet
        | Tool::JsonKeys
        | Tool::JsonSearch
        | Tool::JsonToText
        | Tool::JsonValidate
        | Tool::JsonMerge => json::schema(tool),
        Tool::DocumentExtractText
        | Tool::DocumentGetInfo
        | Tool::DocumentListSheets
        | Tool::DocumentGetSheet => document::schema(tool),
        Tool::MemoryAppend | Tool::MemorySearch | Tool::MemoryGet => memory::schema(tool),
        // Http (issue 15).
        Tool::HttpGet
        | Tool::HttpHead
        | Tool::HttpPost
        | Tool::HttpPut
        | Tool::HttpPatch
        | Tool::HttpDelete => http_schemas::schema_of(tool),
        // SubAgent (issue 15): upstream's arguments.
        Tool::SubAgentExplore => schema(
            name,
            "Ask a read-only helper a broad question about the work directory (which files handle X, \
             what conventions the code follows). It searches and reads on its own and returns one short \
             answer, so the raw files stay out of your context.",
            json!({
                "query": string_prop("The question or exploration task."),
                "format": {
                    "type": "string",
                    "enum": ["prose", "file_list"],
                    "description": "Optional: `prose` (default) for a summary, `file_list` for a bulleted list of relevant files.",
                },
            }),
            &["query"],
        ),
        Tool::SubAgentLocate => schema(
            name,
            "Find where one symbol, type, function or file is defined; returns `path:line` lines. \
             Prefer this to sub_agent_explore for a single target.",
            json!({"target": string_prop("The symbol, type, function or file name to find.")}),
            &["target"],
        ),
        // Search and FileSystem in full (issue 15): upstream's names and arguments.
        _ if tool.plugin() == Plugin::Tama => tama::schema_of(tool),
        _ => fs_search_schemas::schema_of(tool),
    }
}
