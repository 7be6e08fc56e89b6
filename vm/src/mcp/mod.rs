//! MCP servers (`McpServers`) for one run: connected at run start, their tools listed and
//! offered to the agents that list a server in `Plugins` (as `<server>-<tool>`, with the
//! server's own JSON schemas), their calls made on the driver's behalf after the one
//! permission authority (`tools::permissions`) allowed them, and shut down with the run.
//!
//! Failures are results, never panics or hangs: a server that cannot start or does not
//! finish the handshake within its `TimeoutSeconds` (else [`CONNECT_TIMEOUT`]) stops the
//! run before its first turn, naming the server; a call that gets no answer within its
//! `TimeoutSeconds` (else the tool time limit), or whose server has stopped, returns an
//! `[ERROR]`/`[TIMEOUT]` result naming the server.
//!
//! Processes: a stdio server runs in its own process group, which is killed when the run
//! ends, when it is cancelled (the driver's future dropped on Ctrl-C) and when this value
//! is dropped, so no server outlives its run.

mod connect;
mod result;
mod trust;
pub(crate) mod vars;

pub use trust::{command_line, used};
pub use vars::{allow as allow_variables, references, refusal, Reference};

use std::path::Path;
use std::time::Duration;

use fuseraft_compiler::ir::{Agent, McpServerId, McpToolRef, Program};
use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceError;
use serde_json::{Map, Value as Json};

use crate::effect::ToolSchema;

/// The longest a server may take to start and finish the MCP handshake.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A tool a server offers.
#[derive(Clone, Debug, PartialEq)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    pub input_schema: Json,
}

/// What the run knows about each server's tools: the permission authority's view.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    /// By server; `None` for a server no agent uses (never started).
    pub servers: Vec<Option<Vec<McpTool>>>,
}

impl Catalog {
    /// The tools of a started server.
    pub fn tools(&self, server: McpServerId) -> Option<&[McpTool]> {
        self.servers.get(server.0 as usize)?.as_deref()
    }

    /// Whether `tool` is one its server listed.
    pub fn has(&self, tool: &McpToolRef) -> bool {
        self.tools(tool.server)
            .is_some_and(|tools| tools.iter().any(|known| known.name == tool.tool))
    }
}

struct Connection {
    client: connect::Client,
    process_group: Option<u32>,
    stderr: connect::StderrTail,
    /// Why the server is gone, once a call found it so.
    stopped: Option<String>,
}

/// The run's connected servers.
pub struct McpServers {
    catalog: Catalog,
    connections: Vec<Option<Connection>>,
}

/// Whether some agent listing server `id` may write files: an agent whose `FileSystem`
/// capabilities are narrowed to reading (no `write`, no `delete`) acts read-only, and a
/// server only such agents use cannot write the work dir either.
fn writers(program: &Program, id: usize) -> bool {
    use fuseraft_compiler::ir::{Capability, Plugin};
    let id = McpServerId(id as u32);
    program
        .agents
        .iter()
        .filter(|agent| program.mcp_servers_of(&agent.tools).contains(&id))
        .any(|agent| {
            agent
                .capabilities
                .iter()
                .find(|(plugin, _)| *plugin == Plugin::FileSystem)
                .is_none_or(|(_, granted)| {
                    granted
                        .iter()
                        .any(|cap| matches!(cap, Capability::Write | Capability::Delete))
                })
        })
}

impl McpServers {
    /// No server: a program without `McpServers`.
    pub fn none() -> McpServers {
        McpServers {
            catalog: Catalog::default(),
            connections: Vec::new(),
        }
    }

    /// Starts every server some agent lists, concurrently, and lists its tools. `Err` names
    /// the first server that failed and why; every server started is shut down first.
    /// A stdio server runs in the run's confinement (`crate::sandbox`), under the policy
    /// `spec` gives a server that agents use ([`writers`]).
    pub async fn start(
        program: &Program,
        work_dir: &Path,
        spec: &crate::sandbox::Spec,
        confinement: &crate::sandbox::Confinement,
    ) -> Result<McpServers, String> {
        let used = used(program);
        let starts = program.mcp_servers.iter().zip(used).enumerate().map(
            |(id, (server, used))| async move {
                if !used {
                    return Ok(None);
                }
                let policy = spec.for_mcp_server(confinement, writers(program, id));
                let confined = connect::Confined {
                    spec,
                    policy: &policy,
                };
                let limit = server.timeout_seconds.map_or(CONNECT_TIMEOUT, |seconds| {
                    Duration::from_secs(seconds.into())
                });
                let started = match connect::start(server, work_dir, limit, &confined).await {
                    Ok(started) => started,
                    Err(reason) => {
                        return Err(format!(
                            "MCP server `{}` failed to start: {reason}",
                            server.name
                        ))
                    }
                };
                let listed =
                    tokio::time::timeout(limit, started.client.peer().list_all_tools()).await;
                let tools = match listed {
                    Ok(Ok(tools)) => tools,
                    Ok(Err(error)) => {
                        shut_one(started.client, started.process_group).await;
                        return Err(format!(
                            "MCP server `{}` did not list its tools: {error}",
                            server.name
                        ));
                    }
                    Err(_) => {
                        shut_one(started.client, started.process_group).await;
                        return Err(format!(
                            "MCP server `{}` did not list its tools within {} s",
                            server.name,
                            limit.as_secs()
                        ));
                    }
                };
                let tools = tools
                    .into_iter()
                    .map(|tool| McpTool {
                        name: tool.name.to_string(),
                        description: tool
                            .description
                            .map(|text| text.to_string())
                            .unwrap_or_default(),
                        input_schema: Json::Object((*tool.input_schema).clone()),
                    })
                    .collect();
                Ok(Some((started, tools)))
            },
        );
        let results = futures::future::join_all(starts).await;
        let mut servers = McpServers::none();
        let mut failure = None;
        for result in results {
            match result {
                Ok(Some((started, tools))) => {
                    servers.catalog.servers.push(Some(tools));
                    servers.connections.push(Some(Connection {
                        client: started.client,
                        process_group: started.process_group,
                        stderr: started.stderr,
                        stopped: None,
                    }));
                }
                Ok(None) => {
                    servers.catalog.servers.push(None);
                    servers.connections.push(None);
                }
                Err(reason) => {
                    failure.get_or_insert(reason);
                    servers.catalog.servers.push(None);
                    servers.connections.push(None);
                }
            }
        }
        match failure {
            Some(reason) => {
                servers.shutdown().await;
                Err(reason)
            }
            None => Ok(servers),
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Per started server: its name, transport and number of tools (for the run's events).
    pub fn started<'p>(&self, program: &'p Program) -> Vec<(&'p str, &'static str, usize)> {
        program
            .mcp_servers
            .iter()
            .zip(&self.catalog.servers)
            .filter_map(|(server, tools)| {
                Some((
                    server.name.as_str(),
                    server.transport.kind(),
                    tools.as_ref()?.len(),
                ))
            })
            .collect()
    }

    /// The function schemas of the MCP tools `agent` is offered ([`offered_names`]).
    pub fn schemas(&self, program: &Program, agent: &Agent) -> Vec<ToolSchema> {
        let servers = program.mcp_servers_of(&agent.tools);
        let offered = offered_names(program, &servers, &self.catalog);
        let mut out = Vec::new();
        for id in servers {
            let server = program.mcp_server(id);
            for tool in self.catalog.tools(id).unwrap_or_default() {
                let name = server.tool_name(&tool.name);
                if offered.contains(&name)
                    && !out.iter().any(|known: &ToolSchema| known.name == name)
                {
                    out.push(ToolSchema {
                        name,
                        description: tool.description.clone(),
                        parameters: tool.input_schema.clone(),
                    });
                }
            }
        }
        out
    }

    /// The servers' tools each agent of `program` is offered, one list per agent in program
    /// order: none for an agent whose `FunctionChoice` is `none`.
    pub fn offered(&self, program: &Program) -> Vec<Vec<ToolSchema>> {
        program
            .agents
            .iter()
            .map(|agent| match agent.tool_choice {
                fuseraft_compiler::ir::ToolChoice::None => Vec::new(),
                _ => self.schemas(program, agent),
            })
            .collect()
    }

    /// Calls `tool` with the model's arguments (a JSON object, else an error result), for at
    /// most `timeout`. Returns the result text and whether it succeeded.
    pub async fn call(
        &mut self,
        program: &Program,
        tool: &McpToolRef,
        args: &Json,
        timeout: Duration,
        output_cap: usize,
    ) -> (String, bool) {
        let server = &program.mcp_server(tool.server).name;
        let full = program.mcp_server(tool.server).tool_name(&tool.tool);
        let timeout = program
            .mcp_server(tool.server)
            .timeout_seconds
            .map_or(timeout, |seconds| Duration::from_secs(seconds.into()));
        let Some(connection) = self
            .connections
            .get_mut(tool.server.0 as usize)
            .and_then(Option::as_mut)
        else {
            return (
                format!("[ERROR] MCP server `{server}` is not running"),
                false,
            );
        };
        if let Some(reason) = &connection.stopped {
            return (
                format!("[ERROR] MCP server `{server}` has stopped: {reason}"),
                false,
            );
        }
        let arguments: Option<Map<String, Json>> = match args {
            Json::Object(map) => Some(map.clone()),
            Json::Null => None,
            other => {
                return (
                    format!(
                        "[ERROR] the arguments of `{full}` must be a JSON object, not `{other}`"
                    ),
                    false,
                )
            }
        };
        let mut params = CallToolRequestParams::new(tool.tool.clone());
        params.arguments = arguments;
        let called =
            tokio::time::timeout(timeout, connection.client.peer().call_tool(params)).await;
        match called {
            Err(_) => (
                format!(
                    "[TIMEOUT] MCP server `{server}` gave no result for `{full}` within {} s",
                    timeout.as_secs()
                ),
                false,
            ),
            Ok(Ok(result)) => {
                let failed = result.is_error.unwrap_or(false);
                let text = result::cap(
                    result::text(&result.content, result.structured_content.as_ref()),
                    output_cap,
                );
                if failed {
                    (format!("[ERROR] `{full}` failed: {text}"), false)
                } else {
                    (text, true)
                }
            }
            Ok(Err(ServiceError::McpError(error))) => (
                format!(
                    "[ERROR] MCP server `{server}` refused `{full}`: {}",
                    error.message
                ),
                false,
            ),
            Ok(Err(error)) => {
                // The transport is gone (the process exited, the connection dropped).
                tokio::time::sleep(Duration::from_millis(100)).await;
                let reason = connect::with_stderr(error.to_string(), &connection.stderr);
                connection.stopped = Some(reason.clone());
                (
                    format!("[ERROR] MCP server `{server}` stopped during `{full}`: {reason}"),
                    false,
                )
            }
        }
    }

    /// Closes every connection and ends every stdio server's process group, all at once
    /// (each has up to two seconds to exit on its own).
    pub async fn shutdown(&mut self) {
        let closing = self
            .connections
            .iter_mut()
            .filter_map(Option::take)
            .map(|connection| shut_one(connection.client, connection.process_group));
        futures::future::join_all(closing).await;
    }
}

impl Drop for McpServers {
    /// A run cancelled mid-await never reaches [`McpServers::shutdown`]: end the process
    /// groups here, at once.
    fn drop(&mut self) {
        for connection in self.connections.iter_mut().filter_map(Option::take) {
            connect::kill_group(connection.process_group);
        }
    }
}

async fn shut_one(client: connect::Client, process_group: Option<u32>) {
    // Closing stdin asks a stdio server to exit; the group is killed whatever it does.
    let _ = tokio::time::timeout(Duration::from_secs(2), client.cancel()).await;
    connect::kill_group(process_group);
}

/// The `<server>-<tool>` names offered for `servers`, in order: every listed tool whose
/// name a model can call, except names two servers' tools share (nested server names, `a`
/// with `b-c` and `a-b` with `c`), which would be ambiguous.
pub fn offered_names(program: &Program, servers: &[McpServerId], catalog: &Catalog) -> Vec<String> {
    let mut names = Vec::new();
    for &id in servers {
        let server = program.mcp_server(id);
        for tool in catalog.tools(id).unwrap_or_default() {
            if server.offers_tool_name(&tool.name) {
                names.push(server.tool_name(&tool.name));
            }
        }
    }
    let shared: Vec<String> = names
        .iter()
        .filter(|name| {
            names
                .iter()
                .filter(|other| other.eq_ignore_ascii_case(name))
                .count()
                > 1
        })
        .cloned()
        .collect();
    names.retain(|name| !shared.contains(name));
    names
}
