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
//!   a path that escapes the root is refused.
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

use crate::history::ToolCall;
use crate::mcp::Catalog;

/// What may happen with one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run this tool.
    Allow(ToolRef),
    /// Refused; the text is the tool result the model sees.
    Block(String),
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
pub fn resolve(call: &ToolCall, agent: Option<&Agent>) -> Result<Tool, String> {
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
) -> Result<ToolRef, String> {
    let is_offered =
        |tool: Tool| agent.is_none_or(|agent| tool.offered(&agent.tools, &agent.capabilities));
    let who = agent.map_or(String::new(), |agent| format!(" agent `{}`", agent.name));
    match Tool::resolve(&call.name) {
        Some(tool) if !is_offered(tool) => Err(format!(
            "[DENIED: permission] `{}` is not among the tools{who} may use (its Plugins and Capabilities); it may call {}",
            call.name,
            offered_names(agent, program, catalog)
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
) -> String {
    let who = agent.map_or(String::new(), |agent| format!(" agent `{}`", agent.name));
    format!(
        "[DENIED: unknown tool] `{}` is not a tool; the tools{who} may call are {}",
        call.name,
        offered_names(agent, program, catalog)
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

/// The category a call of `tool` falls in, if any (a `shell_run` that writes to git is
/// `git_write`).
pub fn category(call: &ToolCall, tool: Tool) -> Option<Category> {
    match tool.category()? {
        Category::CommandExecution
            if super::is_git_write(call.arg("command").unwrap_or_default()) =>
        {
            Some(Category::GitWrite)
        }
        category => Some(category),
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
    let Some(category) = category(call, tool) else {
        return Decision::Allow(ToolRef::Builtin(tool));
    };
    if category == Category::FileWriteDelete {
        if let Some(reason) = outside_envelope(call, tool, program, root) {
            return Decision::Block(reason);
        }
    }
    let action = match category {
        Category::FileWriteDelete => {
            format!("{tool} `{}`", call.arg("path").unwrap_or_default())
        }
        Category::CommandExecution | Category::GitWrite => {
            format!("run `{}`", call.arg("command").unwrap_or_default())
        }
        Category::NetworkApi | Category::Mcp => tool.to_string(),
    };
    judge(ToolRef::Builtin(tool), category, action, program)
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
        Action::Block => Decision::Block(format!(
            "[DENIED: permission] {action} is blocked by the permission policy ({category})"
        )),
        Action::RequireApproval => Decision::Ask(tool, action),
        Action::Allow => Decision::Allow(tool),
    }
}

/// Why a write, patch or delete is outside `Security.ChangeEnvelope`, if it is.
fn outside_envelope(call: &ToolCall, tool: Tool, program: &Program, root: &Path) -> Option<String> {
    let envelope = program
        .settings
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("Security.ChangeEnvelope"))
        .map(|(_, globs)| globs.as_str())?;
    let globs: Vec<&str> = envelope
        .lines()
        .map(str::trim)
        .filter(|glob| !glob.is_empty())
        .collect();
    if globs.is_empty() {
        return None;
    }
    let listed = globs.join(", ");
    let mut matchers = Vec::new();
    for glob in &globs {
        match envelope_glob(glob) {
            Ok(matcher) => matchers.push(matcher),
            Err(error) => {
                return Some(format!(
                    "[DENIED: envelope] Security.ChangeEnvelope glob `{glob}` is invalid ({}); no write is allowed",
                    error.kind()
                ))
            }
        }
    }
    let raw = call.arg("path").unwrap_or_default();
    let root = match super::sandbox::open_root(root) {
        Ok(root) => root,
        Err(outcome) => return Some(outcome.text),
    };
    // A delete removes a final symlink itself; a write or patch lands on its target, whose
    // parent directories may not exist yet.
    let follow_final = tool != Tool::DeleteFile;
    let resolved = match super::sandbox::resolve(tool.name(), &root, raw, follow_final, true) {
        Ok(resolved) => resolved,
        Err(outcome) => return Some(outcome.text),
    };
    if matchers
        .iter()
        .any(|matcher| matcher.is_match(&resolved.rel))
    {
        return None;
    }
    Some(format!(
        "[DENIED: envelope] `{raw}` resolves to `{}`, outside Security.ChangeEnvelope ({listed})",
        resolved.rel
    ))
}

#[cfg(all(test, unix))]
#[path = "permissions_tests.rs"]
mod tests;
