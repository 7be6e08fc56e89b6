//! Tool permissions: the one place a call's name is resolved to a [`Tool`] (exactly, by
//! `ir::Tool::resolve`), whether the agent is offered it (its `Plugins`, narrowed by
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

use std::path::Path;

use fuseraft_compiler::ir::{envelope_glob, Action, Agent, Capability, Category, Plugin, Program};

pub use fuseraft_compiler::ir::Tool;

use crate::history::ToolCall;

/// What may happen with one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run this tool.
    Allow(Tool),
    /// Refused; the text is the tool result the model sees.
    Block(String),
    /// The operator must approve running this tool; the text describes the action.
    Ask(Tool, String),
}

/// Is the tool called `name` offered to an agent with these plugins and capabilities?
pub fn offered(name: &str, plugins: &[String], capabilities: &[(Plugin, Vec<Capability>)]) -> bool {
    Tool::resolve(name).is_some_and(|tool| tool.offered(plugins, capabilities))
}

/// The tool a call stands for, if `agent` (when known) may call it; else the refusal, which
/// names the tools it may call (`[DENIED: unknown tool]` for a name that is no tool's,
/// `[DENIED: permission]` for a tool the agent is not offered).
pub fn resolve(call: &ToolCall, agent: Option<&Agent>) -> Result<Tool, String> {
    let is_offered =
        |tool: Tool| agent.is_none_or(|agent| tool.offered(&agent.tools, &agent.capabilities));
    let offered_names = || {
        let names: Vec<String> = Tool::ALL
            .iter()
            .filter(|tool| is_offered(**tool))
            .map(|tool| format!("`{tool}`"))
            .collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    let who = agent.map_or(String::new(), |agent| format!(" agent `{}`", agent.name));
    match Tool::resolve(&call.name) {
        None => Err(format!(
            "[DENIED: unknown tool] `{}` is not a tool; the tools{who} may call are {}",
            call.name,
            offered_names()
        )),
        Some(tool) if !is_offered(tool) => Err(format!(
            "[DENIED: permission] `{}` is not among the tools{who} may use (its Plugins and Capabilities); it may call {}",
            call.name,
            offered_names()
        )),
        Some(tool) => Ok(tool),
    }
}

/// The command text of a Shell call (`command`, or `script` for `shell_run_script`).
fn command_text(call: &ToolCall, tool: Tool) -> &str {
    let key = if tool == Tool::ShellRunScript {
        "script"
    } else {
        "command"
    };
    call.arg(key).unwrap_or_default()
}

/// The category a call of `tool` falls in, if any (a `shell_run` that writes to git is
/// `git_write`).
pub fn category(call: &ToolCall, tool: Tool) -> Option<Category> {
    match tool.category()? {
        Category::CommandExecution if super::is_git_write(command_text(call, tool)) => {
            Some(Category::GitWrite)
        }
        category => Some(category),
    }
}

/// What a call does, as an approval prompt and a denial name it.
fn describe(call: &ToolCall, tool: Tool, category: Category) -> String {
    match category {
        Category::FileWriteDelete => {
            format!("{tool} `{}`", call.arg("path").unwrap_or_default())
        }
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
        Category::NetworkApi => tool.to_string(),
    }
}

/// Decides one call of `agent` under the program's policy; `root` is the sandbox root.
pub fn decide(call: &ToolCall, agent: Option<&Agent>, program: &Program, root: &Path) -> Decision {
    let tool = match resolve(call, agent) {
        Ok(tool) => tool,
        Err(reason) => return Decision::Block(reason),
    };
    let Some(category) = category(call, tool) else {
        return Decision::Allow(tool);
    };
    if category == Category::FileWriteDelete {
        if let Some(reason) = outside_envelope(call, tool, program, root) {
            return Decision::Block(reason);
        }
    }
    let action = describe(call, tool, category);
    // `git_push` and `git_pull` need `network_api` as well as `git_write`: the stricter wins.
    let mut categories = vec![category];
    if tool.needs_network() {
        categories.push(Category::NetworkApi);
    }
    let mut ask = false;
    for category in categories {
        match program.permissions.action(category) {
            Action::Block if category == Category::NetworkApi => {
                return Decision::Block(format!(
                    "[DENIED: permission] {action} needs the network, which the permission policy blocks ({category})"
                ))
            }
            Action::Block => {
                return Decision::Block(format!(
                    "[DENIED: permission] {action} is blocked by the permission policy ({category})"
                ))
            }
            Action::RequireApproval => ask = true,
            Action::Allow => {}
        }
    }
    if ask {
        Decision::Ask(tool, action)
    } else {
        Decision::Allow(tool)
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
