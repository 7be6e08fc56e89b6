//! The permission policy (`Security.Permissions`), parsed at compile time: a `Preset` and
//! per-category overrides. The VM decides every tool call with [`Permissions::action`]; an
//! unknown spelling never reaches it (the lowering reports it, `ir::parse` refuses it).

use std::fmt;

/// The action categories of the permission policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    FileWriteDelete,
    CommandExecution,
    GitWrite,
    NetworkApi,
    /// A call of an MCP server's tool (`McpServers`): what it does is the server's.
    Mcp,
}

impl Category {
    pub const ALL: &'static [Category] = &[
        Category::FileWriteDelete,
        Category::CommandExecution,
        Category::GitWrite,
        Category::NetworkApi,
        Category::Mcp,
    ];

    /// The key under `Security.Permissions`.
    pub fn key(self) -> &'static str {
        match self {
            Category::FileWriteDelete => "file_write_delete",
            Category::CommandExecution => "command_execution",
            Category::GitWrite => "git_write",
            Category::NetworkApi => "network_api",
            Category::Mcp => "mcp",
        }
    }

    /// The category keyed `text` (ASCII case-insensitive; `-` for `_` accepted).
    pub fn parse(text: &str) -> Option<Category> {
        let text = normalize(text).replace('-', "_");
        Category::ALL
            .iter()
            .copied()
            .find(|category| category.key() == text)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// What the policy says about a category.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Allow,
    Block,
    RequireApproval,
}

impl Action {
    pub const ALL: &'static [Action] = &[Action::Allow, Action::Block, Action::RequireApproval];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Block => "block",
            Action::RequireApproval => "require-approval",
        }
    }

    /// The action spelled `text`: `allow`, `block` (or `deny`), `require-approval` (or
    /// `approval`, `ask`); ASCII case-insensitive, `_` for `-` accepted.
    pub fn parse(text: &str) -> Option<Action> {
        match normalize(text).as_str() {
            "allow" => Some(Action::Allow),
            "block" | "deny" => Some(Action::Block),
            "require-approval" | "approval" | "ask" => Some(Action::RequireApproval),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `Security.Permissions.Preset`: the action of every category without an override.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Preset {
    #[default]
    Unrestricted,
    ApprovalRequired,
    LockedDown,
}

impl Preset {
    pub const ALL: &'static [Preset] = &[
        Preset::Unrestricted,
        Preset::ApprovalRequired,
        Preset::LockedDown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Unrestricted => "unrestricted",
            Preset::ApprovalRequired => "approval-required",
            Preset::LockedDown => "locked-down",
        }
    }

    /// The preset spelled `text` (ASCII case-insensitive, `_` for `-` accepted).
    pub fn parse(text: &str) -> Option<Preset> {
        let text = normalize(text);
        Preset::ALL
            .iter()
            .copied()
            .find(|preset| preset.as_str() == text)
    }

    /// The action of a category this preset leaves as it is.
    pub fn action(self) -> Action {
        match self {
            Preset::Unrestricted => Action::Allow,
            Preset::ApprovalRequired => Action::RequireApproval,
            Preset::LockedDown => Action::Block,
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `Security.Sandbox`: what a run does with commands where the OS sandbox is unavailable
/// (no Landlock or user namespaces). The lowering accepts exactly these names and the VM
/// matches every one, so the two cannot disagree.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SandboxMode {
    /// Refuse to run commands.
    Refuse,
    /// Run them unconfined, after a warning.
    Warn,
}

impl SandboxMode {
    pub const ALL: &'static [SandboxMode] = &[SandboxMode::Refuse, SandboxMode::Warn];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Refuse => "refuse",
            SandboxMode::Warn => "warn",
        }
    }

    /// The mode spelled `text` (trimmed, ASCII case-insensitive).
    pub fn parse(text: &str) -> Option<SandboxMode> {
        let text = text.trim();
        SandboxMode::ALL
            .iter()
            .copied()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The run's permission policy: a preset, and the categories that override it (each once).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub preset: Preset,
    pub overrides: Vec<(Category, Action)>,
}

impl Permissions {
    /// What the policy says about `category`.
    pub fn action(&self, category: Category) -> Action {
        self.overrides
            .iter()
            .find(|(overridden, _)| *overridden == category)
            .map_or(self.preset.action(), |(_, action)| *action)
    }

    /// `--hitl`'s safety net: each category of `asked` that the policy allows without an
    /// override of its own (the preset's allow) requires approval instead. A category the
    /// config allows explicitly, or blocks, stays as it is. Returns the categories changed.
    pub fn ask_unless_allowed_explicitly(&mut self, asked: &[Category]) -> Vec<Category> {
        let mut changed = Vec::new();
        for &category in asked {
            let explicit = self.overrides.iter().any(|(given, _)| *given == category);
            if !explicit && self.action(category) == Action::Allow {
                self.overrides.push((category, Action::RequireApproval));
                changed.push(category);
            }
        }
        changed
    }

    pub fn is_default(&self) -> bool {
        *self == Permissions::default()
    }
}

/// A `Security.ChangeEnvelope` glob, compiled the one way the lowering checks it and the VM
/// matches it: relative to the sandbox root, `*` and `?` stay inside one path component,
/// `**` spans directories.
pub fn envelope_glob(glob: &str) -> Result<globset::GlobMatcher, globset::Error> {
    let glob = glob.trim();
    let glob = glob.strip_prefix("./").unwrap_or(glob);
    Ok(globset::GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()?
        .compile_matcher())
}

fn normalize(text: &str) -> String {
    text.trim().to_ascii_lowercase().replace('_', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_accepted_today_still_parse() {
        assert_eq!(Action::parse("deny"), Some(Action::Block));
        assert_eq!(
            Action::parse("Require_Approval"),
            Some(Action::RequireApproval)
        );
        assert_eq!(Action::parse("ask"), Some(Action::RequireApproval));
        assert_eq!(Action::parse("blocked"), None);
        assert_eq!(Preset::parse("LOCKED_DOWN"), Some(Preset::LockedDown));
        assert_eq!(Preset::parse("lockdown"), None);
        assert_eq!(Category::parse("Git-Write"), Some(Category::GitWrite));
        assert_eq!(Category::parse("git"), None);
    }

    #[test]
    fn hitl_asks_where_only_the_preset_allows() {
        let asked = [Category::CommandExecution, Category::FileWriteDelete];
        let mut open = Permissions::default();
        assert_eq!(open.ask_unless_allowed_explicitly(&asked), asked);
        assert_eq!(
            open.action(Category::CommandExecution),
            Action::RequireApproval
        );
        assert_eq!(open.action(Category::NetworkApi), Action::Allow);
        let mut explicit = Permissions {
            preset: Preset::Unrestricted,
            overrides: vec![
                (Category::CommandExecution, Action::Allow),
                (Category::FileWriteDelete, Action::Block),
            ],
        };
        assert!(explicit.ask_unless_allowed_explicitly(&asked).is_empty());
        assert_eq!(explicit.action(Category::CommandExecution), Action::Allow);
        assert_eq!(explicit.action(Category::FileWriteDelete), Action::Block);
        let mut locked = Permissions {
            preset: Preset::LockedDown,
            overrides: Vec::new(),
        };
        assert!(locked.ask_unless_allowed_explicitly(&asked).is_empty());
    }

    #[test]
    fn overrides_win_over_the_preset() {
        let policy = Permissions {
            preset: Preset::LockedDown,
            overrides: vec![(Category::CommandExecution, Action::Allow)],
        };
        assert_eq!(policy.action(Category::CommandExecution), Action::Allow);
        assert_eq!(policy.action(Category::GitWrite), Action::Block);
        assert_eq!(
            Permissions::default().action(Category::NetworkApi),
            Action::Allow
        );
    }
}
