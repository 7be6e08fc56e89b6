//! What an agent's `tools` (plugins) and `capabilities` mean: which tool functions each
//! plugin offers and which capability tag grants each one. Shared by the VM (what a model is
//! offered and may call) and `check` (whether an agent can produce a validator's evidence).

/// The tools a plugin offers, each with the capability tag that grants it.
pub const PLUGIN_TOOLS: &[(&str, &[(&str, &str)])] = &[
    (
        "filesystem",
        &[
            ("read_file", "read"),
            ("list_files", "read"),
            ("write_file", "write"),
            ("patch_file", "write"),
            ("delete_file", "delete"),
        ],
    ),
    ("shell", &[("shell_run", "run")]),
    ("changes", &[("changes_read_latest", "read")]),
    ("handoff", &[("handoff", "handoff")]),
    ("finish", &[("finish", "finish")]),
];

fn tools() -> impl Iterator<Item = &'static str> {
    PLUGIN_TOOLS
        .iter()
        .flat_map(|(_, tools)| tools.iter().map(|(tool, _)| *tool))
}

/// The canonical tool a called name stands for (`FileSystem-write_file` → `write_file`).
pub fn canonical_tool(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    tools()
        .find(|tool| {
            lower == *tool
                || lower.ends_with(&format!("-{tool}"))
                || lower.ends_with(&format!(".{tool}"))
        })
        .or_else(|| tools().find(|tool| lower.contains(tool)))
}

/// Is `tool` offered to an agent with these plugins and capabilities? A plugin without a
/// `Capabilities` entry offers all its tools.
pub fn tool_offered(
    tool: &str,
    plugins: &[String],
    capabilities: &[(String, Vec<String>)],
) -> bool {
    let Some(tool) = canonical_tool(tool) else {
        return false;
    };
    PLUGIN_TOOLS.iter().any(|(plugin, tools)| {
        let Some((_, tag)) = tools.iter().find(|(name, _)| *name == tool) else {
            return false;
        };
        let has_plugin = plugins.iter().any(|p| p.eq_ignore_ascii_case(plugin));
        let granted = match capabilities
            .iter()
            .find(|(p, _)| p.eq_ignore_ascii_case(plugin))
        {
            Some((_, tags)) => tags.iter().any(|t| t.eq_ignore_ascii_case(tag)),
            None => true,
        };
        has_plugin && granted
    })
}

/// The permission policy (`Security.Permissions`) for an action category
/// (`file_write_delete`, `command_execution`, `git_write`, `network_api`): `allow`, `block`
/// or `require-approval`. `Preset` is `unrestricted` (default), `approval-required` or
/// `locked-down`; a category key overrides it.
pub fn permission_policy(settings: &[(String, String)], category: &str) -> &'static str {
    let setting = |key: &str| {
        settings
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value.trim().to_ascii_lowercase().replace('_', "-"))
    };
    if let Some(value) = setting(&format!("Security.Permissions.{category}")) {
        return match value.as_str() {
            "block" | "deny" => "block",
            "require-approval" | "approval" | "ask" => "require-approval",
            _ => "allow",
        };
    }
    match setting("Security.Permissions.Preset").as_deref() {
        Some("locked-down") => "block",
        Some("approval-required") => "require-approval",
        _ => "allow",
    }
}
