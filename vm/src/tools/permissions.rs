//! Tool permissions: the one place a call's name is resolved to a [`ToolRef`] (exactly: a
//! built-in by `ir::Tool::resolve`, an MCP server's tool by `Program::mcp_tool_ref` and the
//! server's own list), whether the agent is offered it (its `Plugins`, narrowed by
//! `Capabilities`), what the run's permission policy (`ir::Permissions`, typed at compile
//! time) says about its action category, and whether a write lands inside
//! `Security.ChangeEnvelope`. The resolved tool is handed on to execution, so the tool that
//! was judged is the tool that runs.
//!
//! Security decisions:
//! - A name that is not exactly a tool's name or its own plugin's qualified form
//!   (`FileSystem-write_file`) is refused (`[DENIED: unknown tool]`), naming the tools the
//!   agent is offered:
//!   `my_write_file`, `write_file_x` or `Shell-write_file` never run anything.
//! - Envelope globs are matched on the path *resolved under the sandbox root* (symlinks and
//!   `..` followed physically, as `sandbox::resolve` does for the tool itself), so
//!   `docs/../Cargo.toml` and a symlink `docs/x -> ../Cargo.toml` do not match `docs/**`;
//!   a path that escapes the root is refused. Every path a write changes is judged: a
//!   copy's destination, both ends of a move, and every entry of a directory deleted or
//!   moved (where it is and where it lands).
//! - An MCP tool is offered only to agents listing its server in `Plugins`, only under its
//!   `<server>-<tool>` name, only when the server listed it and no other listed server's
//!   tool has that same name (nested server names); every call is in the `mcp`
//!   category of the policy (asked for under `approval-required`, refused under
//!   `locked-down`).

use std::path::Path;

use fuseraft_compiler::ir::{
    envelope_glob, Action, Agent, Capability, Category, McpServerId, Plugin, Program,
};

pub use fuseraft_compiler::ir::{McpToolRef, Tool, ToolRef};

use crate::history::{Denial, DenialKind, ToolCall};
use crate::mcp::Catalog;

/// What may happen with one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run this tool.
    Allow(ToolRef),
    /// Refused; its text is the tool result the model sees.
    Block(Denial),
    /// The operator must approve running this tool; the text describes the action.
    Ask(ToolRef, String),
}

/// Is the tool called `name` offered to an agent with these plugins and capabilities?
pub fn offered(name: &str, plugins: &[String], capabilities: &[(Plugin, Vec<Capability>)]) -> bool {
    Tool::resolve(name).is_some_and(|tool| tool.offered(plugins, capabilities))
}

/// The tool a call stands for, if `agent` (when known) may call it; else the refusal, which
/// names the tools it may call (`[DENIED: unknown tool]` for a name that is no tool's,
/// `[DENIED: permission]` for a tool the agent is not offered).
pub fn resolve(call: &ToolCall, agent: Option<&Agent>) -> Result<Tool, Denial> {
    match resolve_ref(call, agent, None, &Catalog::default()) {
        Ok(ToolRef::Builtin(tool)) => Ok(tool),
        Ok(ToolRef::Mcp(_)) => Err(unknown(call, agent, None, &Catalog::default())),
        Err(reason) => Err(reason),
    }
}

/// [`resolve`], MCP servers' tools included: a name that is no built-in's resolves to the
/// tool of a server the agent lists (every server when the agent is unknown) when that
/// server listed it (`catalog`).
pub fn resolve_ref(
    call: &ToolCall,
    agent: Option<&Agent>,
    program: Option<&Program>,
    catalog: &Catalog,
) -> Result<ToolRef, Denial> {
    let is_offered =
        |tool: Tool| agent.is_none_or(|agent| tool.offered(&agent.tools, &agent.capabilities));
    let who = agent.map_or(String::new(), |agent| format!(" agent `{}`", agent.name));
    match Tool::resolve(&call.name) {
        Some(tool) if !is_offered(tool) => Err(Denial::new(
            DenialKind::Permission,
            format_args!(
                "`{}` is not among the tools{who} may use (its Plugins and Capabilities); it may call {}",
                call.name,
                offered_names(agent, program, catalog)
            ),
        )),
        Some(tool) => Ok(ToolRef::Builtin(tool)),
        None => {
            // Of the readings of the name (several only when server names nest), those a
            // server offers; two would be ambiguous, and the model was offered neither.
            let mut found: Vec<McpToolRef> = program
                .map(|program| program.mcp_tool_refs(&call.name, &agent_servers(program, agent)))
                .unwrap_or_default();
            found.retain(|tool| catalog.has(tool));
            match found.len() {
                1 => Ok(ToolRef::Mcp(found.remove(0))),
                _ => Err(unknown(call, agent, program, catalog)),
            }
        }
    }
}

fn unknown(
    call: &ToolCall,
    agent: Option<&Agent>,
    program: Option<&Program>,
    catalog: &Catalog,
) -> Denial {
    let who = agent.map_or(String::new(), |agent| format!(" agent `{}`", agent.name));
    Denial::new(
        DenialKind::UnknownTool,
        format_args!(
            "`{}` is not a tool; the tools{who} may call are {}",
            call.name,
            offered_names(agent, program, catalog)
        ),
    )
}

/// The MCP servers whose tools `agent` may call: those it lists, every one when unknown.
fn agent_servers(program: &Program, agent: Option<&Agent>) -> Vec<McpServerId> {
    match agent {
        Some(agent) => program.mcp_servers_of(&agent.tools),
        None => (0..program.mcp_servers.len() as u32)
            .map(McpServerId)
            .collect(),
    }
}

/// The names `agent` may call, built-ins then MCP tools (as offered), for refusals.
fn offered_names(agent: Option<&Agent>, program: Option<&Program>, catalog: &Catalog) -> String {
    let mut names: Vec<String> = Tool::ALL
        .iter()
        .filter(|tool| agent.is_none_or(|agent| tool.offered(&agent.tools, &agent.capabilities)))
        .map(|tool| format!("`{tool}`"))
        .collect();
    if let Some(program) = program {
        for name in crate::mcp::offered_names(program, &agent_servers(program, agent), catalog) {
            names.push(format!("`{name}`"));
        }
    }
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The command text of a Shell or Probe call (`command`, `script` for `shell_run_script`,
/// a probe's code, setup and commands, one per line).
fn command_text(call: &ToolCall, tool: Tool) -> String {
    let keys: &[&str] = match tool {
        Tool::ShellRunScript => &["script"],
        Tool::ProbeCode | Tool::SandboxRun | Tool::ReplExec => &["code"],
        Tool::ProbeCompareOutputs => &["commandA", "commandB"],
        Tool::ProbeRunHypothesis => &["setupCommand", "command"],
        _ => &["command"],
    };
    let args = super::Args::new(tool.name(), &call.args).ok();
    keys.iter()
        .filter_map(|key| args.as_ref()?.opt_text(key).ok().flatten())
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every category a call of `tool` falls in, its tool's own first: a command the text
/// recognises as a git write is `git_write` as well as `command_execution`, never instead
/// (a marker word in a comment must not trade one policy for the other); `git_push` and
/// `git_pull` need `network_api` too. Each applies: the strictest decides.
fn categories(call: &ToolCall, tool: Tool) -> Vec<Category> {
    let Some(own) = tool.category() else {
        return Vec::new();
    };
    let mut categories = vec![own];
    if own == Category::CommandExecution && super::is_git_write(&command_text(call, tool)) {
        categories.push(Category::GitWrite);
    }
    if tool.needs_network() && !categories.contains(&Category::NetworkApi) {
        categories.push(Category::NetworkApi);
    }
    categories
}

/// What a call does, as an approval prompt and a denial name it.
fn describe(call: &ToolCall, tool: Tool, category: Category) -> String {
    match category {
        Category::FileWriteDelete => match tool {
            Tool::CopyFile | Tool::MoveFile => format!(
                "{tool} `{}` to `{}`",
                call.arg("source").unwrap_or_default(),
                call.arg("destination").unwrap_or_default()
            ),
            _ => format!("{tool} `{}`", call.arg("path").unwrap_or_default()),
        },
        _ if tool.plugin() == Plugin::Git => {
            let args = match &call.args {
                serde_json::Value::Object(map) if map.is_empty() => String::new(),
                serde_json::Value::Null => String::new(),
                args => format!(" {args}"),
            };
            format!("{tool}{args}")
        }
        Category::CommandExecution | Category::GitWrite => {
            format!("run `{}`", command_text(call, tool))
        }
        Category::NetworkApi if tool.plugin() == Plugin::Http => {
            let profile = call
                .arg("profile")
                .filter(|name| !name.trim().is_empty())
                .map_or(String::new(), |name| format!(" with API profile `{name}`"));
            format!("{tool} `{}`{profile}", call.arg("url").unwrap_or_default())
        }
        Category::NetworkApi | Category::Mcp => tool.to_string(),
    }
}

/// Decides one call of `agent` under the program's policy; `root` is the sandbox root,
/// `catalog` the tools the run's MCP servers listed.
pub fn decide(
    call: &ToolCall,
    agent: Option<&Agent>,
    program: &Program,
    root: &Path,
    catalog: &Catalog,
) -> Decision {
    let tool = match resolve_ref(call, agent, Some(program), catalog) {
        Ok(ToolRef::Builtin(tool)) => tool,
        Ok(ToolRef::Mcp(tool)) => return decide_mcp(call, tool, program),
        Err(reason) => return Decision::Block(reason),
    };
    let categories = categories(call, tool);
    let Some(&category) = categories.first() else {
        return Decision::Allow(ToolRef::Builtin(tool));
    };
    if category == Category::FileWriteDelete {
        if let Some(reason) = outside_envelope(call, tool, program, root) {
            return Decision::Block(reason);
        }
    }
    let action = describe(call, tool, category);
    let mut ask = false;
    for category in categories {
        match program.permissions.action(category) {
            Action::Block if category == Category::NetworkApi => {
                return Decision::Block(Denial::new(
                    DenialKind::Permission,
                    format_args!("{action} needs the network, which the permission policy blocks ({category})"),
                ))
            }
            Action::Block => {
                return Decision::Block(Denial::new(
                    DenialKind::Permission,
                    format_args!("{action} is blocked by the permission policy ({category})"),
                ))
            }
            Action::RequireApproval => ask = true,
            Action::Allow => {}
        }
    }
    if ask {
        Decision::Ask(ToolRef::Builtin(tool), action)
    } else {
        Decision::Allow(ToolRef::Builtin(tool))
    }
}

/// Decides one call of `agent`'s sub-agent: only a tool of `ir::sub_agent_tools(agent)` (its
/// caller's own read tools, never a write, a command, a request, a note or a sub-agent) is
/// judged further, by [`decide`] as the caller's; anything else is refused naming the tools
/// the sub-agent may call.
pub fn decide_for_sub_agent(
    call: &ToolCall,
    agent: &Agent,
    program: &Program,
    root: &Path,
    catalog: &Catalog,
) -> Decision {
    let tools = fuseraft_compiler::ir::sub_agent_tools(agent);
    match Tool::resolve(&call.name) {
        Some(tool) if tools.contains(&tool) => decide(call, Some(agent), program, root, catalog),
        resolved => {
            let names: Vec<String> = tools.iter().map(|tool| format!("`{tool}`")).collect();
            let names = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            let (kind, what) = match resolved {
                Some(_) => (DenialKind::SubAgent, "is not among the read-only tools of"),
                None => (DenialKind::UnknownTool, "is not a tool of"),
            };
            Decision::Block(Denial::new(
                kind,
                format_args!(
                    "`{}` {what} agent `{}`'s sub-agent; it may call {names}",
                    call.name, agent.name
                ),
            ))
        }
    }
}

/// An MCP tool's call: the `mcp` category decides; the action shown names the server, the
/// tool and the arguments.
fn decide_mcp(call: &ToolCall, tool: McpToolRef, program: &Program) -> Decision {
    let server = program.mcp_server(tool.server);
    let action = format!(
        "call `{}` (tool `{}` of MCP server `{}`) with {}",
        server.tool_name(&tool.tool),
        tool.tool,
        server.name,
        call.args
    );
    judge(ToolRef::Mcp(tool), Category::Mcp, action, program)
}

fn judge(tool: ToolRef, category: Category, action: String, program: &Program) -> Decision {
    match program.permissions.action(category) {
        Action::Block => Decision::Block(Denial::new(
            DenialKind::Permission,
            format_args!("{action} is blocked by the permission policy ({category})"),
        )),
        Action::RequireApproval => Decision::Ask(tool, action),
        Action::Allow => Decision::Allow(tool),
    }
}

/// Why a write, patch or delete is outside `Security.ChangeEnvelope`, if it is.
/// The matchers of `globs`, compiled once per envelope (a run has one; the last is kept),
/// not on every write; the first invalid glob with its error.
fn envelope_matchers(
    globs: &[String],
) -> Result<std::sync::Arc<[globset::GlobMatcher]>, (String, globset::Error)> {
    type Compiled = (Vec<String>, std::sync::Arc<[globset::GlobMatcher]>);
    static LAST: std::sync::Mutex<Option<Compiled>> = std::sync::Mutex::new(None);
    if let Ok(last) = LAST.lock() {
        if let Some((known, matchers)) = last.as_ref().filter(|(known, _)| known == globs) {
            debug_assert_eq!(known.len(), matchers.len());
            return Ok(std::sync::Arc::clone(matchers));
        }
    }
    let mut matchers = Vec::with_capacity(globs.len());
    for glob in globs {
        matchers.push(envelope_glob(glob).map_err(|error| (glob.clone(), error))?);
    }
    let matchers: std::sync::Arc<[globset::GlobMatcher]> = matchers.into();
    if let Ok(mut last) = LAST.lock() {
        *last = Some((globs.to_vec(), std::sync::Arc::clone(&matchers)));
    }
    Ok(matchers)
}

fn outside_envelope(call: &ToolCall, tool: Tool, program: &Program, root: &Path) -> Option<Denial> {
    let globs = &program.security.change_envelope;
    if globs.is_empty() {
        return None;
    }
    let listed = globs.join(", ");
    let matchers = match envelope_matchers(globs) {
        Ok(matchers) => matchers,
        Err((glob, error)) => {
            return Some(Denial::new(
                DenialKind::Envelope,
                format_args!(
                    "Security.ChangeEnvelope glob `{glob}` is invalid ({}); no write is allowed",
                    error.kind()
                ),
            ))
        }
    };
    let root = match super::sandbox::open_root(root) {
        Ok(root) => root,
        Err(outcome) => return Some(envelope_refusal(outcome)),
    };
    for (key, follow_final) in written_paths(tool) {
        let raw = call.arg(key).unwrap_or_default();
        let resolved = match super::sandbox::resolve(tool.name(), &root, raw, *follow_final, true) {
            Ok(resolved) => resolved,
            Err(outcome) => return Some(envelope_refusal(outcome)),
        };
        if !matchers
            .iter()
            .any(|matcher| matcher.is_match(&resolved.rel))
        {
            return Some(Denial::new(
                DenialKind::Envelope,
                format_args!(
                    "`{raw}` resolves to `{}`, outside Security.ChangeEnvelope ({listed})",
                    resolved.rel
                ),
            ));
        }
        // A directory moved or deleted takes everything inside along: each entry must be
        // inside the envelope where it is, and for a move where it lands.
        if !matches!(tool, Tool::MoveFile | Tool::DeleteDirectory) || *key == "destination" {
            continue;
        }
        let entries = match entries_of(&resolved) {
            Ok(entries) => entries,
            Err(error) => {
                return Some(Denial::new(
                    DenialKind::Envelope,
                    format_args!(
                    "the entries of `{raw}` could not be checked against Security.ChangeEnvelope ({error})"
                )))
            }
        };
        let landing = if tool == Tool::MoveFile {
            let to = call.arg("destination").unwrap_or_default();
            match super::sandbox::resolve(tool.name(), &root, to, false, true) {
                Ok(to) => Some(to.rel),
                Err(outcome) => return Some(envelope_refusal(outcome)),
            }
        } else {
            None
        };
        for entry in &entries {
            let places = std::iter::once(&resolved.rel).chain(landing.as_ref());
            for top in places {
                let rel = format!("{top}/{}", entry.path);
                if !matchers.iter().any(|matcher| matcher.is_match(&rel)) {
                    return Some(Denial::new(
                        DenialKind::Envelope,
                        format_args!(
                        "`{raw}` would change `{rel}`, outside Security.ChangeEnvelope ({listed})"
                    ),
                    ));
                }
            }
        }
    }
    None
}

/// A path of a write that could not be resolved or opened, as an envelope refusal (a
/// sandbox or credential refusal keeps its own kind).
fn envelope_refusal(outcome: super::Outcome) -> Denial {
    Denial {
        kind: outcome.denied.unwrap_or(DenialKind::Envelope),
        text: outcome.text,
    }
}

/// The path arguments a write tool changes, each with whether a final symlink is followed
/// (a write lands on the link's target; a delete or a move acts on the link itself).
fn written_paths(tool: Tool) -> &'static [(&'static str, bool)] {
    match tool {
        Tool::DeleteFile | Tool::DeleteDirectory => &[("path", false)],
        Tool::CopyFile => &[("destination", true)],
        Tool::MoveFile => &[("source", false), ("destination", false)],
        _ => &[("path", true)],
    }
}

/// The entries of the directory at `resolved` (none when it is not a directory: a final
/// symlink is not followed), or why they could not be read.
fn entries_of(resolved: &super::sandbox::Resolved) -> Result<Vec<crate::confine::Entry>, String> {
    match resolved.place.scan() {
        Ok(entries) => Ok(entries),
        Err(crate::confine::Error::NotRegular(_) | crate::confine::Error::NotFound) => {
            Ok(Vec::new())
        }
        Err(error) => Err(error.to_string()),
    }
}

#[cfg(all(test, unix))]
#[path = "permissions_tests.rs"]
mod tests;
