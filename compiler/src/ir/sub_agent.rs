//! An agent's sub-agent (the `SubAgent` plugin, upstream's `sub_agent_explore` and
//! `sub_agent_locate`): its settings, its two modes and the read-only tools it may call.
//!
//! A sub-agent never widens what its caller may do: its tools are the caller's own read
//! tools (offered by the caller's `Plugins` and `Capabilities`), of the plugins that lend
//! tools to it, narrowed by `SubAgentPlugins`. No write, no command, no network, no notes
//! and never the `SubAgent` plugin itself (a sub-agent starts no sub-agent).

use super::tools::{Capability, Plugin, Tool};
use super::{Agent, Model};

/// An agent's `SubAgentModel`, `SubAgentPlugins` and `SubAgentMaxToolCalls`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubAgentSettings {
    /// The sub-agent's model (`SubAgentModel`, an alias resolved); the agent's own without.
    pub model: Option<Model>,
    /// The plugins whose read tools it may call (`SubAgentPlugins`); every plugin that lends
    /// tools when empty.
    pub plugins: Vec<Plugin>,
    /// Its cap of tool calls for an exploration (`SubAgentMaxToolCalls`).
    pub max_tool_calls: Option<u32>,
}

/// What a sub-agent is asked to do: the closed set of its tools.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SubAgentMode {
    /// `sub_agent_explore`: a broad question answered as prose or a file list.
    Explore,
    /// `sub_agent_locate`: where one symbol, type or file is defined, as `path:line`.
    Locate,
}

/// An exploration's cap of tool calls without `SubAgentMaxToolCalls` (upstream's).
pub const DEFAULT_EXPLORE_CALLS: u32 = 20;
/// A lookup's cap of tool calls (upstream's); `SubAgentMaxToolCalls` only lowers it.
pub const LOCATE_CALLS: u32 = 5;
/// The highest `SubAgentMaxToolCalls` honoured.
pub const MAX_CALLS: u32 = 100;

impl SubAgentMode {
    /// The mode a tool starts, if it is a sub-agent's.
    pub fn of(tool: Tool) -> Option<SubAgentMode> {
        match tool {
            Tool::SubAgentExplore => Some(SubAgentMode::Explore),
            Tool::SubAgentLocate => Some(SubAgentMode::Locate),
            _ => None,
        }
    }

    /// The mode's name in events (`explore`, `locate`).
    pub fn as_str(self) -> &'static str {
        match self {
            SubAgentMode::Explore => "explore",
            SubAgentMode::Locate => "locate",
        }
    }

    /// The cap of tool calls of one run of this mode under `settings`.
    pub fn cap(self, settings: &SubAgentSettings) -> u32 {
        let configured = settings.max_tool_calls.map(|max| max.clamp(1, MAX_CALLS));
        match self {
            SubAgentMode::Explore => configured.unwrap_or(DEFAULT_EXPLORE_CALLS),
            SubAgentMode::Locate => configured.map_or(LOCATE_CALLS, |max| max.min(LOCATE_CALLS)),
        }
    }
}

impl Plugin {
    /// Whether this plugin lends read tools to a sub-agent. Shell and Http never do (a
    /// command or a request is no read of the work dir), nor the session's notes (the
    /// machine answers them, inside a turn), nor routing, nor `SubAgent` itself.
    pub fn lends_to_sub_agent(self) -> bool {
        matches!(
            self,
            Plugin::FileSystem | Plugin::Search | Plugin::Git | Plugin::Changes | Plugin::Json
        )
    }
}

/// The tools `agent`'s sub-agent may call, in the order models are offered them.
pub fn sub_agent_tools(agent: &Agent) -> Vec<Tool> {
    let chosen = &agent.sub_agent.plugins;
    Tool::ALL
        .iter()
        .copied()
        .filter(|tool| {
            let plugin = tool.plugin();
            plugin.lends_to_sub_agent()
                && (chosen.is_empty() || chosen.contains(&plugin))
                && tool.capability() == Capability::Read
                && tool.category().is_none()
                && tool.offered(&agent.tools, &agent.capabilities)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(plugins: &[&str], capabilities: Vec<(Plugin, Vec<Capability>)>) -> Agent {
        let mut agent = super::super::print::samples::agent_named("Dev");
        agent.tools = plugins.iter().map(|name| name.to_string()).collect();
        agent.capabilities = capabilities;
        agent
    }

    fn names(tools: Vec<Tool>) -> Vec<&'static str> {
        tools.into_iter().map(Tool::name).collect()
    }

    #[test]
    fn a_sub_agent_gets_only_its_callers_read_tools() {
        let dev = agent(
            &[
                "FileSystem",
                "Shell",
                "Git",
                "Http",
                "Scratchpad",
                "SubAgent",
            ],
            Vec::new(),
        );
        let tools = names(sub_agent_tools(&dev));
        assert_eq!(
            tools,
            [
                "read_file",
                "list_files",
                "git_status",
                "git_diff",
                "git_log",
                "git_show",
                "git_branch_list",
                "git_stash_list",
                "grep_file",
                "get_file_info",
                "get_file_summary",
                "list_directory",
                "stat_file",
                "path_exists",
            ]
        );
        for tool in sub_agent_tools(&dev) {
            assert_eq!(tool.category(), None, "{tool}");
            assert_ne!(tool.plugin(), Plugin::SubAgent, "{tool}");
        }
    }

    #[test]
    fn capabilities_and_sub_agent_plugins_narrow_it_further() {
        let mut dev = agent(
            &["FileSystem", "Search", "SubAgent"],
            vec![(Plugin::FileSystem, vec![Capability::Write])],
        );
        // FileSystem's reads are not the caller's: the sub-agent does not get them either.
        assert_eq!(
            names(sub_agent_tools(&dev)),
            [
                "search_files",
                "search_content",
                "search_symbol",
                "search_callers"
            ]
        );
        dev.capabilities.clear();
        dev.sub_agent.plugins = vec![Plugin::FileSystem];
        assert!(!names(sub_agent_tools(&dev)).contains(&"search_content"));
        assert!(names(sub_agent_tools(&dev)).contains(&"read_file"));
        // A caller without read tools lends nothing.
        assert!(sub_agent_tools(&agent(&["Shell", "SubAgent"], Vec::new())).is_empty());
    }

    #[test]
    fn caps_follow_upstream_and_the_setting() {
        let mut settings = SubAgentSettings::default();
        assert_eq!(SubAgentMode::Explore.cap(&settings), 20);
        assert_eq!(SubAgentMode::Locate.cap(&settings), 5);
        settings.max_tool_calls = Some(3);
        assert_eq!(SubAgentMode::Explore.cap(&settings), 3);
        assert_eq!(SubAgentMode::Locate.cap(&settings), 3);
        settings.max_tool_calls = Some(0);
        assert_eq!(SubAgentMode::Explore.cap(&settings), 1);
        settings.max_tool_calls = Some(100_000);
        assert_eq!(SubAgentMode::Explore.cap(&settings), MAX_CALLS);
        assert_eq!(SubAgentMode::Locate.cap(&settings), 5);
    }
}
