//! Tool permissions: which tools an agent may call at all (its `Plugins`, narrowed by
//! `Capabilities`), what the run's permission policy says about each action category, and
//! whether a write stays inside `Security.ChangeEnvelope`.
//!
//! Policy settings (under `Security.Permissions`): `Preset` is `unrestricted` (the default),
//! `approval-required` (every category asks) or `locked-down` (every category is blocked);
//! a category key (`file_write_delete`, `command_execution`, `git_write`, `network_api`) set
//! to `allow`, `block` or `require-approval` overrides the preset for that category.

use fuseraft_compiler::ir::Agent;

use crate::history::ToolCall;

/// What may happen with one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused; the text is the tool result the model sees.
    Block(String),
    /// The operator must approve; the text describes the action.
    Ask(String),
}

/// The action categories of the permission policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Category {
    FileWriteDelete,
    CommandExecution,
    GitWrite,
    NetworkApi,
}

impl Category {
    pub fn key(self) -> &'static str {
        match self {
            Category::FileWriteDelete => "file_write_delete",
            Category::CommandExecution => "command_execution",
            Category::GitWrite => "git_write",
            Category::NetworkApi => "network_api",
        }
    }
}

/// Is `tool` offered to an agent with these plugins and capabilities (`ir::tool_offered`)?
pub fn offered(tool: &str, plugins: &[String], capabilities: &[(String, Vec<String>)]) -> bool {
    fuseraft_compiler::ir::tool_offered(tool, plugins, capabilities)
}

fn canonical(name: &str) -> Option<&'static str> {
    fuseraft_compiler::ir::canonical_tool(name)
}

/// The category a call falls in, if any.
pub fn category(call: &ToolCall) -> Option<Category> {
    match canonical(&call.name)? {
        "write_file" | "patch_file" | "delete_file" => Some(Category::FileWriteDelete),
        "shell_run" => {
            let command = call.arg("command").unwrap_or_default();
            if super::is_git_write(command) {
                Some(Category::GitWrite)
            } else {
                Some(Category::CommandExecution)
            }
        }
        _ => None,
    }
}

fn setting<'a>(settings: &'a [(String, String)], key: &str) -> Option<&'a str> {
    settings
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(key))
        .map(|(_, value)| value.trim())
}

/// The policy for a category: `allow`, `block` or `require-approval`.
fn policy(settings: &[(String, String)], category: Category) -> &'static str {
    fuseraft_compiler::ir::permission_policy(settings, category.key())
}

/// Does `path` (relative, `/`-separated) match a glob (`**` any directories, `*` any
/// characters but `/`, `?` one character)?
pub fn glob_matches(glob: &str, path: &str) -> bool {
    fn matches(glob: &[u8], path: &[u8]) -> bool {
        match glob.split_first() {
            None => path.is_empty(),
            Some((b'*', rest)) if rest.first() == Some(&b'*') => {
                // `**` spans any number of whole directories (or everything, at the end).
                let rest = rest.get(1..).unwrap_or(&[]);
                let rest = rest.strip_prefix(b"/").unwrap_or(rest);
                if rest.is_empty() {
                    return true;
                }
                (0..=path.len())
                    .filter(|at| *at == 0 || path[at - 1] == b'/')
                    .any(|at| matches(rest, &path[at..]))
            }
            Some((b'*', rest)) => (0..=path.len())
                .take_while(|at| *at == 0 || path[at - 1] != b'/')
                .any(|at| matches(rest, &path[at..])),
            Some((b'?', rest)) => {
                path.first().is_some_and(|ch| *ch != b'/') && matches(rest, &path[1..])
            }
            Some((ch, rest)) => path.first() == Some(ch) && matches(rest, &path[1..]),
        }
    }
    let glob = glob.trim().trim_start_matches("./");
    let path = path.trim_start_matches("./");
    matches(glob.as_bytes(), path.as_bytes())
}

/// Decides one call of `agent` under the run's settings.
pub fn decide(call: &ToolCall, agent: Option<&Agent>, settings: &[(String, String)]) -> Decision {
    if let Some(agent) = agent {
        if !offered(&call.name, &agent.tools, &agent.capabilities) {
            return Decision::Block(format!(
                "[DENIED: permission] `{}` is not among the tools agent `{}` may use (its Plugins and Capabilities)",
                call.name, agent.name
            ));
        }
    }
    let Some(category) = category(call) else {
        return Decision::Allow;
    };
    if category == Category::FileWriteDelete {
        if let Some(envelope) =
            setting(settings, "Security.ChangeEnvelope").filter(|globs| !globs.is_empty())
        {
            let path = call.arg("path").unwrap_or_default().replace('\\', "/");
            if !envelope.lines().any(|glob| glob_matches(glob, &path)) {
                return Decision::Block(format!(
                    "[DENIED: envelope] `{path}` is outside Security.ChangeEnvelope ({})",
                    envelope.lines().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    let action = match category {
        Category::FileWriteDelete => {
            format!("{} `{}`", call.name, call.arg("path").unwrap_or_default())
        }
        Category::CommandExecution | Category::GitWrite => {
            format!("run `{}`", call.arg("command").unwrap_or_default())
        }
        Category::NetworkApi => call.name.clone(),
    };
    match policy(settings, category) {
        "block" => Decision::Block(format!(
            "[DENIED: permission] {action} is blocked by the permission policy ({})",
            category.key()
        )),
        "require-approval" => Decision::Ask(action),
        _ => Decision::Allow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            args,
            result: None,
            ok: false,
        }
    }

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn capabilities_narrow_a_plugin() {
        let plugins = vec!["FileSystem".to_string(), "Shell".to_string()];
        let read_only = vec![("FileSystem".to_string(), vec!["read".to_string()])];
        assert!(offered("read_file", &plugins, &read_only));
        assert!(!offered("write_file", &plugins, &read_only));
        assert!(offered("FileSystem-list_files", &plugins, &read_only));
        assert!(
            offered("shell_run", &plugins, &read_only),
            "Shell is not narrowed"
        );
        assert!(
            !offered("shell_run", &["FileSystem".to_string()], &[]),
            "no Shell plugin"
        );
        assert!(!offered("launch_missiles", &plugins, &[]));
    }

    #[test]
    fn presets_and_overrides() {
        let shell = call("shell_run", json!({"command": "cargo test"}));
        let commit = call("shell_run", json!({"command": "git commit -m x"}));
        let write = call("write_file", json!({"path": "a.txt"}));
        assert_eq!(decide(&shell, None, &[]), Decision::Allow);
        let locked = settings(&[("Security.Permissions.Preset", "locked-down")]);
        assert!(
            matches!(decide(&shell, None, &locked), Decision::Block(text) if text.contains("command_execution"))
        );
        let mixed = settings(&[
            ("Security.Permissions.Preset", "locked-down"),
            ("Security.Permissions.command_execution", "allow"),
            ("Security.Permissions.git_write", "require-approval"),
        ]);
        assert_eq!(decide(&shell, None, &mixed), Decision::Allow);
        assert!(
            matches!(decide(&commit, None, &mixed), Decision::Ask(text) if text.contains("git commit"))
        );
        assert!(matches!(decide(&write, None, &mixed), Decision::Block(_)));
        let ask = settings(&[("Security.Permissions.Preset", "approval-required")]);
        assert!(matches!(decide(&write, None, &ask), Decision::Ask(_)));
    }

    #[test]
    fn the_change_envelope_bounds_writes() {
        let envelope = settings(&[(
            "Security.ChangeEnvelope",
            "src/**\n.fuseraft/red-team/**\nREADME.md",
        )]);
        assert_eq!(
            decide(
                &call("write_file", json!({"path": "src/a/b.rs"})),
                None,
                &envelope
            ),
            Decision::Allow
        );
        assert_eq!(
            decide(
                &call("write_file", json!({"path": "README.md"})),
                None,
                &envelope
            ),
            Decision::Allow
        );
        assert!(matches!(
            decide(&call("write_file", json!({"path": "Cargo.toml"})), None, &envelope),
            Decision::Block(text) if text.starts_with("[DENIED: envelope]")
        ));
        assert_eq!(
            decide(
                &call("read_file", json!({"path": "Cargo.toml"})),
                None,
                &envelope
            ),
            Decision::Allow
        );
    }

    #[test]
    fn globs() {
        assert!(glob_matches("src/**", "src/a/b.rs"));
        assert!(glob_matches("src/**/*.rs", "src/a/b.rs"));
        assert!(glob_matches("src/**/*.rs", "src/b.rs"));
        assert!(!glob_matches("src/*.rs", "src/a/b.rs"));
        assert!(glob_matches("*.md", "README.md"));
        assert!(!glob_matches("*.md", "docs/x.md"));
        assert!(glob_matches("**", "anything/at/all"));
        assert!(glob_matches("a?c", "abc"));
    }
}
