//! The closed set of tools an agent can call, the plugins that offer them and the capability
//! tags that grant them: the one authority on what a called name means. The VM resolves a
//! call's name once with [`Tool::resolve`] and that value decides both permission and
//! execution; `check` asks the same questions (can this agent produce a validator's evidence?).

use std::fmt;

use super::policy::Category;

/// A plugin of an agent's `Plugins` that offers tools (compared case-insensitively).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Plugin {
    FileSystem,
    Shell,
    Changes,
    Handoff,
    Finish,
    // Git.
    Git,
}

impl Plugin {
    pub const ALL: &'static [Plugin] = &[
        Plugin::FileSystem,
        Plugin::Shell,
        Plugin::Changes,
        Plugin::Handoff,
        Plugin::Finish,
        // Git.
        Plugin::Git,
    ];

    /// The spelling used in configs and the IR.
    pub fn as_str(self) -> &'static str {
        match self {
            Plugin::FileSystem => "FileSystem",
            Plugin::Shell => "Shell",
            Plugin::Changes => "Changes",
            Plugin::Handoff => "Handoff",
            Plugin::Finish => "Finish",
            // Git.
            Plugin::Git => "Git",
        }
    }

    /// The plugin named `text` (ASCII case-insensitive, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Plugin> {
        let text = text.trim();
        Plugin::ALL
            .iter()
            .copied()
            .find(|plugin| plugin.as_str().eq_ignore_ascii_case(text))
    }

    /// The tools this plugin offers.
    pub fn tools(self) -> impl Iterator<Item = Tool> {
        Tool::ALL
            .iter()
            .copied()
            .filter(move |tool| tool.plugin() == self)
    }

    /// The capability tags that grant something in this plugin, each once.
    pub fn capabilities(self) -> Vec<Capability> {
        let mut tags: Vec<Capability> = Vec::new();
        for tool in self.tools() {
            if !tags.contains(&tool.capability()) {
                tags.push(tool.capability());
            }
        }
        tags
    }
}

impl fmt::Display for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A capability tag of `Capabilities: { Plugin: [tags] }`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    Read,
    Write,
    Delete,
    Run,
    Handoff,
    Finish,
}

impl Capability {
    pub const ALL: &'static [Capability] = &[
        Capability::Read,
        Capability::Write,
        Capability::Delete,
        Capability::Run,
        Capability::Handoff,
        Capability::Finish,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Read => "read",
            Capability::Write => "write",
            Capability::Delete => "delete",
            Capability::Run => "run",
            Capability::Handoff => "handoff",
            Capability::Finish => "finish",
        }
    }

    /// The tag named `text` (ASCII case-insensitive, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Capability> {
        let text = text.trim();
        Capability::ALL
            .iter()
            .copied()
            .find(|tag| tag.as_str().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The tools, by the function names models call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    ReadFile,
    ListFiles,
    WriteFile,
    PatchFile,
    DeleteFile,
    ShellRun,
    ChangesReadLatest,
    Handoff,
    Finish,
    // Git and the rest of Shell (upstream's names, `PluginCapabilityMap`).
    GitStatus,
    GitDiff,
    GitLog,
    GitShow,
    GitBranchList,
    GitStashList,
    GitAdd,
    GitCommit,
    GitCheckout,
    GitCreateBranch,
    GitInit,
    GitStash,
    GitStashPop,
    GitReset,
    GitPush,
    GitPull,
    ShellRunScript,
    ShellRunBackground,
    ShellGetJobStatus,
    ShellGetJobOutput,
    ShellKillJob,
    ShellGetEnv,
    ShellWhich,
}

impl Tool {
    /// In the order models are offered them.
    pub const ALL: &'static [Tool] = &[
        Tool::ReadFile,
        Tool::WriteFile,
        Tool::PatchFile,
        Tool::ListFiles,
        Tool::DeleteFile,
        Tool::ShellRun,
        Tool::ChangesReadLatest,
        Tool::Handoff,
        Tool::Finish,
        // Git and the rest of Shell.
        Tool::GitStatus,
        Tool::GitDiff,
        Tool::GitLog,
        Tool::GitShow,
        Tool::GitBranchList,
        Tool::GitStashList,
        Tool::GitAdd,
        Tool::GitCommit,
        Tool::GitCheckout,
        Tool::GitCreateBranch,
        Tool::GitInit,
        Tool::GitStash,
        Tool::GitStashPop,
        Tool::GitReset,
        Tool::GitPush,
        Tool::GitPull,
        Tool::ShellRunScript,
        Tool::ShellRunBackground,
        Tool::ShellGetJobStatus,
        Tool::ShellGetJobOutput,
        Tool::ShellKillJob,
        Tool::ShellGetEnv,
        Tool::ShellWhich,
    ];

    /// The function name offered to models.
    pub fn name(self) -> &'static str {
        match self {
            Tool::ReadFile => "read_file",
            Tool::ListFiles => "list_files",
            Tool::WriteFile => "write_file",
            Tool::PatchFile => "patch_file",
            Tool::DeleteFile => "delete_file",
            Tool::ShellRun => "shell_run",
            Tool::ChangesReadLatest => "changes_read_latest",
            Tool::Handoff => "handoff",
            Tool::Finish => "finish",
            // Git and the rest of Shell.
            Tool::GitStatus => "git_status",
            Tool::GitDiff => "git_diff",
            Tool::GitLog => "git_log",
            Tool::GitShow => "git_show",
            Tool::GitBranchList => "git_branch_list",
            Tool::GitStashList => "git_stash_list",
            Tool::GitAdd => "git_add",
            Tool::GitCommit => "git_commit",
            Tool::GitCheckout => "git_checkout",
            Tool::GitCreateBranch => "git_create_branch",
            Tool::GitInit => "git_init",
            Tool::GitStash => "git_stash",
            Tool::GitStashPop => "git_stash_pop",
            Tool::GitReset => "git_reset",
            Tool::GitPush => "git_push",
            Tool::GitPull => "git_pull",
            Tool::ShellRunScript => "shell_run_script",
            Tool::ShellRunBackground => "shell_run_background",
            Tool::ShellGetJobStatus => "shell_get_job_status",
            Tool::ShellGetJobOutput => "shell_get_job_output",
            Tool::ShellKillJob => "shell_kill_job",
            Tool::ShellGetEnv => "shell_get_env",
            Tool::ShellWhich => "shell_which",
        }
    }

    /// The plugin that offers this tool.
    pub fn plugin(self) -> Plugin {
        match self {
            Tool::ReadFile
            | Tool::ListFiles
            | Tool::WriteFile
            | Tool::PatchFile
            | Tool::DeleteFile => Plugin::FileSystem,
            Tool::ShellRun => Plugin::Shell,
            Tool::ChangesReadLatest => Plugin::Changes,
            Tool::Handoff => Plugin::Handoff,
            Tool::Finish => Plugin::Finish,
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
            | Tool::GitPull => Plugin::Git,
            Tool::ShellRunScript
            | Tool::ShellRunBackground
            | Tool::ShellGetJobStatus
            | Tool::ShellGetJobOutput
            | Tool::ShellKillJob
            | Tool::ShellGetEnv
            | Tool::ShellWhich => Plugin::Shell,
        }
    }

    /// The capability tag that grants this tool when its plugin lists `Capabilities`.
    pub fn capability(self) -> Capability {
        match self {
            Tool::ReadFile | Tool::ListFiles | Tool::ChangesReadLatest => Capability::Read,
            Tool::WriteFile | Tool::PatchFile => Capability::Write,
            Tool::DeleteFile => Capability::Delete,
            Tool::ShellRun => Capability::Run,
            Tool::Handoff => Capability::Handoff,
            Tool::Finish => Capability::Finish,
            // Git and the rest of Shell: upstream's tags.
            Tool::GitStatus
            | Tool::GitDiff
            | Tool::GitLog
            | Tool::GitShow
            | Tool::GitBranchList
            | Tool::GitStashList
            | Tool::ShellGetJobStatus
            | Tool::ShellGetJobOutput
            | Tool::ShellGetEnv
            | Tool::ShellWhich => Capability::Read,
            Tool::GitAdd
            | Tool::GitCommit
            | Tool::GitCheckout
            | Tool::GitCreateBranch
            | Tool::GitInit
            | Tool::GitStash
            | Tool::GitStashPop
            | Tool::GitReset
            | Tool::GitPush
            | Tool::GitPull => Capability::Write,
            Tool::ShellRunScript | Tool::ShellRunBackground | Tool::ShellKillJob => Capability::Run,
        }
    }

    /// The action category of the permission policy this tool falls in, if any. A
    /// `shell_run` is `command_execution` here; the VM puts a git write under `git_write`.
    pub fn category(self) -> Option<Category> {
        match self {
            Tool::WriteFile | Tool::PatchFile | Tool::DeleteFile => Some(Category::FileWriteDelete),
            Tool::ShellRun => Some(Category::CommandExecution),
            // Git and the rest of Shell.
            Tool::ShellRunScript | Tool::ShellRunBackground => Some(Category::CommandExecution),
            Tool::GitAdd
            | Tool::GitCommit
            | Tool::GitCheckout
            | Tool::GitCreateBranch
            | Tool::GitInit
            | Tool::GitStash
            | Tool::GitStashPop
            | Tool::GitReset
            | Tool::GitPush
            | Tool::GitPull => Some(Category::GitWrite),
            _ => None,
        }
    }

    /// Whether this tool needs the network as well as its category (`git_push`,
    /// `git_pull`): the policy's `network_api` must allow it too.
    pub fn needs_network(self) -> bool {
        matches!(self, Tool::GitPush | Tool::GitPull)
    }

    /// The tool a called name stands for: the exact name (`write_file`), or the forms
    /// Semantic Kernel qualifies it with, by its own plugin only (`FileSystem-write_file`,
    /// `FileSystem_write_file`, `FileSystem.write_file`); ASCII case-insensitive. Nothing
    /// else: not a name that merely contains a tool's (`my_write_file`, `write_file_x`), not
    /// another plugin's prefix (`Shell-write_file`).
    pub fn resolve(called: &str) -> Option<Tool> {
        Tool::ALL.iter().copied().find(|tool| {
            if called.eq_ignore_ascii_case(tool.name()) {
                return true;
            }
            let plugin = tool.plugin().as_str();
            let (Some(prefix), Some(rest)) =
                (called.get(..plugin.len()), called.get(plugin.len()..))
            else {
                return false;
            };
            prefix.eq_ignore_ascii_case(plugin)
                && matches!(rest.as_bytes().first(), Some(b'-' | b'_' | b'.'))
                && rest[1..].eq_ignore_ascii_case(tool.name())
        })
    }

    /// Is this tool offered to an agent with these `Plugins` and `Capabilities`? A plugin
    /// without a `Capabilities` entry offers all its tools.
    pub fn offered(self, plugins: &[String], capabilities: &[(Plugin, Vec<Capability>)]) -> bool {
        let plugin = self.plugin();
        let has_plugin = plugins
            .iter()
            .any(|name| Plugin::parse(name) == Some(plugin));
        let granted = capabilities
            .iter()
            .filter(|(listed, _)| *listed == plugin)
            .map(|(_, tags)| tags.contains(&self.capability()))
            .reduce(|a, b| a || b)
            .unwrap_or(true);
        has_plugin && granted
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_names_and_own_plugin_prefixes_resolve() {
        for called in [
            "write_file",
            "WRITE_FILE",
            "FileSystem-write_file",
            "filesystem_write_file",
            "FILESYSTEM.Write_File",
        ] {
            assert_eq!(Tool::resolve(called), Some(Tool::WriteFile), "{called}");
        }
        assert_eq!(Tool::resolve("Shell-shell_run"), Some(Tool::ShellRun));
        for called in [
            "write_file_x",
            "my_write_file",
            "FileSystem-write_filex",
            "read_file_then_write_file",
            "Shell-write_file",
            "FileSystem--write_file",
            "FileSystem write_file",
            " write_file",
            "write_file ",
            "FileSystem-",
            "",
            "launch_missiles",
        ] {
            assert_eq!(Tool::resolve(called), None, "{called}");
        }
    }

    #[test]
    fn capabilities_narrow_a_plugin() {
        let plugins = vec!["FileSystem".to_string(), "shell".to_string()];
        let read_only = vec![(Plugin::FileSystem, vec![Capability::Read])];
        assert!(Tool::ReadFile.offered(&plugins, &read_only));
        assert!(Tool::ListFiles.offered(&plugins, &read_only));
        assert!(!Tool::WriteFile.offered(&plugins, &read_only));
        assert!(!Tool::DeleteFile.offered(&plugins, &read_only));
        assert!(Tool::ShellRun.offered(&plugins, &read_only));
        assert!(!Tool::ShellRun.offered(&["FileSystem".to_string()], &[]));
        assert_eq!(
            Plugin::FileSystem.capabilities(),
            vec![Capability::Read, Capability::Write, Capability::Delete]
        );
    }

    #[test]
    fn git_and_shell_carry_upstreams_names_and_tags() {
        assert_eq!(Tool::resolve("Git-git_commit"), Some(Tool::GitCommit));
        assert_eq!(Tool::resolve("git_stash_pop"), Some(Tool::GitStashPop));
        assert_eq!(Tool::resolve("Shell.shell_which"), Some(Tool::ShellWhich));
        assert_eq!(Tool::resolve("Shell-git_commit"), None);
        assert_eq!(Tool::resolve("git_commit_all"), None);
        assert_eq!(
            Plugin::Git.capabilities(),
            vec![Capability::Read, Capability::Write]
        );
        assert_eq!(
            Plugin::Shell.capabilities(),
            vec![Capability::Run, Capability::Read]
        );
        let plugins = vec!["git".to_string(), "Shell".to_string()];
        let read_only = vec![
            (Plugin::Git, vec![Capability::Read]),
            (Plugin::Shell, vec![Capability::Read]),
        ];
        assert!(Tool::GitLog.offered(&plugins, &read_only));
        assert!(!Tool::GitCommit.offered(&plugins, &read_only));
        assert!(!Tool::ShellRunBackground.offered(&plugins, &read_only));
        assert!(Tool::ShellGetJobOutput.offered(&plugins, &read_only));
        assert_eq!(Tool::GitPush.category(), Some(Category::GitWrite));
        assert!(Tool::GitPull.needs_network() && !Tool::GitCommit.needs_network());
        assert_eq!(Tool::GitDiff.category(), None);
    }
}
