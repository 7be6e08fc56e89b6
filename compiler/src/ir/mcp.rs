//! MCP servers (`McpServers`): how each one is reached, and the typed reference to one of
//! its tools. A server's tools are known only once the VM has connected to it, so the IR
//! names the servers; a call's name resolves to a [`ToolRef`] exactly: a built-in
//! [`Tool`], or `<server>-<tool>` of a server the agent lists in its `Plugins`.

use std::fmt;

use super::{Loc, Program, Tool};

/// Index of a server in [`Program::mcp_servers`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct McpServerId(pub u32);

/// One `McpServers` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServer {
    /// The name agents list in `Plugins` and that prefixes its tools' names.
    pub name: String,
    pub transport: McpTransport,
    /// `TimeoutSeconds` (a fuseraft extension): the longest the server may take to start,
    /// and each call; the VM's defaults when `None`.
    pub timeout_seconds: Option<u32>,
    pub loc: Option<Loc>,
}

/// How a server is reached. Values are kept as written: `${VAR}` in a URL, a header or an
/// environment value is expanded when the VM connects (as upstream does), so a token never
/// has to be written in the config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on its standard input and output.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the allow-listed environment the server starts with.
        env: Vec<(String, String)>,
        /// Relative to the work dir; the work dir when `None`.
        working_directory: Option<String>,
    },
    /// Streamable HTTP at a URL.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl McpTransport {
    /// The spelling of `Transport:` and of the IR text form.
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
        }
    }
}

/// The separator between a server's name and its tool's in the name a model calls.
pub const MCP_SEPARATOR: char = '-';

/// Longest function name the model APIs accept (OpenAI: 64).
pub const MAX_TOOL_NAME: usize = 64;

impl McpServer {
    /// The function name a model calls for `tool` of this server: `<server>-<tool>`.
    pub fn tool_name(&self, tool: &str) -> String {
        format!("{}{MCP_SEPARATOR}{tool}", self.name)
    }

    /// Whether a server name can prefix function names: ASCII letters, digits, `_` and `-`
    /// (what the model APIs accept in a function name), not empty.
    pub fn is_valid_name(name: &str) -> bool {
        !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'))
    }

    /// Whether the name `<server>-<tool>` can be offered to a model.
    pub fn offers_tool_name(&self, tool: &str) -> bool {
        let full = self.tool_name(tool);
        full.len() <= MAX_TOOL_NAME && McpServer::is_valid_name(&full)
    }
}

/// A tool of an MCP server, by server and by the tool's own name on that server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct McpToolRef {
    pub server: McpServerId,
    pub tool: String,
}

/// What a called name stands for: a built-in tool or an MCP server's tool.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ToolRef {
    Builtin(Tool),
    Mcp(McpToolRef),
}

impl Program {
    pub fn mcp_server(&self, id: McpServerId) -> &McpServer {
        &self.mcp_servers[id.0 as usize]
    }

    /// The server named `name` (ASCII case-insensitive, as plugin names are).
    pub fn mcp_server_named(&self, name: &str) -> Option<McpServerId> {
        self.mcp_servers
            .iter()
            .position(|server| server.name.eq_ignore_ascii_case(name.trim()))
            .map(|idx| McpServerId(idx as u32))
    }

    /// The MCP servers an agent lists in its `Plugins`, each once, in the order listed.
    pub fn mcp_servers_of(&self, plugins: &[String]) -> Vec<McpServerId> {
        let mut out = Vec::new();
        for id in plugins
            .iter()
            .filter_map(|name| self.mcp_server_named(name))
        {
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }

    /// The MCP tools a called name may stand for among `servers` (an agent's): a server's
    /// name (ASCII case-insensitive), `-`, then the rest as the tool's name exactly. More
    /// than one only when server names nest (`a` with tool `b-c`, `a-b` with tool `c`);
    /// which of them the servers offer is the VM's to say; nothing looser matches.
    pub fn mcp_tool_refs(&self, called: &str, servers: &[McpServerId]) -> Vec<McpToolRef> {
        servers
            .iter()
            .copied()
            .filter_map(|id| self.split_mcp_call(called, id))
            .collect()
    }

    /// The first of [`Program::mcp_tool_refs`].
    pub fn mcp_tool_ref(&self, called: &str, servers: &[McpServerId]) -> Option<McpToolRef> {
        self.mcp_tool_refs(called, servers).into_iter().next()
    }

    fn split_mcp_call(&self, called: &str, id: McpServerId) -> Option<McpToolRef> {
        let name = &self.mcp_server(id).name;
        let prefix = called.get(..name.len())?;
        let rest = called.get(name.len()..)?;
        let tool = rest.strip_prefix(MCP_SEPARATOR)?;
        (prefix.eq_ignore_ascii_case(name) && !tool.is_empty()).then(|| McpToolRef {
            server: id,
            tool: tool.to_string(),
        })
    }
}

impl fmt::Display for McpServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mcp#{}", self.0)
    }
}

/// Plugins of upstream fuseraft-cli that fuseraft does not run: listing one offers no tool
/// and is not an error. Any other name that is neither a fuseraft plugin nor an
/// `McpServers` entry is an error (a misspelled or unconfigured MCP server).
pub const UPSTREAM_PLUGINS: &[&str] = &[
    "Artifact",
    "Ask",
    "Audit",
    "Chatroom",
    "Compaction",
    "Decision",
    "Git",
    "Graph",
    "Http",
    "Investigation",
    "Json",
    "Objective",
    "Preflight",
    "Probe",
    "Recon",
    "ReplSession",
    "Scratchpad",
    "Search",
    "Self",
    "SessionContext",
    "Skills",
    "Todo",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn program_with(names: &[&str]) -> Program {
        let mut program = super::super::print::samples::empty();
        for name in names {
            program.mcp_servers.push(McpServer {
                name: name.to_string(),
                transport: McpTransport::Http {
                    url: "http://127.0.0.1:1/mcp".into(),
                    headers: Vec::new(),
                },
                timeout_seconds: None,
                loc: None,
            });
        }
        program
    }

    #[test]
    fn a_call_resolves_to_a_listed_server_only_by_its_exact_prefix() {
        let program = program_with(&["files", "files-extra"]);
        // Nested names: both readings are candidates, for the VM to tell apart.
        let both: Vec<McpServerId> = program
            .mcp_tool_refs("files-extra-echo", &[McpServerId(0), McpServerId(1)])
            .into_iter()
            .map(|found| found.server)
            .collect();
        assert_eq!(both, [McpServerId(0), McpServerId(1)]);
        let files = McpServerId(0);
        let extra = McpServerId(1);
        let tool = |called: &str, servers: &[McpServerId]| program.mcp_tool_ref(called, servers);
        assert_eq!(
            tool("files-read_text_file", &[files]),
            Some(McpToolRef {
                server: files,
                tool: "read_text_file".into()
            })
        );
        assert_eq!(
            tool("FILES-echo", &[files]).map(|found| found.tool),
            Some("echo".into())
        );
        // Not listed by the agent: nothing.
        assert_eq!(tool("files-extra-echo", &[extra]).unwrap().server, extra);
        assert_eq!(tool("files-echo", &[extra]), None);
        // Other separators, no tool, a mere substring: nothing.
        for called in [
            "files_echo",
            "files.echo",
            "files-",
            "files",
            "my-files-echo",
        ] {
            assert_eq!(tool(called, &[files]), None, "{called}");
        }
    }

    #[test]
    fn names_a_model_cannot_call_are_refused() {
        assert!(McpServer::is_valid_name("server-everything_2"));
        assert!(!McpServer::is_valid_name("my server"));
        assert!(!McpServer::is_valid_name(""));
        let server = &program_with(&["s"]).mcp_servers[0];
        assert!(server.offers_tool_name("echo"));
        assert!(!server.offers_tool_name("a/b"));
        assert!(!server.offers_tool_name(&"x".repeat(64)));
    }
}
