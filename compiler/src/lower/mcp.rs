//! Lowering `McpServers` into `Program::mcp_servers`, and checking that every name in an
//! agent's `Plugins` is a plugin fuseraft runs, an upstream plugin it does not run, or a
//! configured MCP server: an unconfigured (or misspelled) server is an error here, not a
//! run that silently lacks its tools.

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{McpServer, McpTransport, Plugin, UPSTREAM_PLUGINS};
use crate::syntax::fields::Spanned;
use crate::syntax::fuseraft::Config;
use crate::syntax::mcp::{McpServerDecl, HTTP_MODES, TRANSPORTS};

pub(super) fn lower_mcp_servers(config: &Config, builder: &mut Builder<'_>) {
    for decl in &config.mcp_servers {
        if let Some(server) = lower_server(decl, builder) {
            builder.program.mcp_servers.push(server);
        }
    }
}

fn lower_server(decl: &McpServerDecl, builder: &mut Builder<'_>) -> Option<McpServer> {
    let Some(name) = &decl.name else {
        builder.diags.push(
            Diagnostic::error(Code::MissingRequiredKey, "an MCP server has no `Name`")
                .with_label(decl.span, "this `McpServers` entry")
                .with_help("agents list the server by its `Name` in `Plugins`"),
        );
        return None;
    };
    if !McpServer::is_valid_name(&name.value) {
        builder.diags.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("MCP server name `{}` cannot prefix tool names", name.value),
            )
            .with_label(name.span, "only ASCII letters, digits, `_` and `-`")
            .with_help("its tools are offered to models as `<server>-<tool>`, and model APIs accept only those characters in a function name"),
        );
        return None;
    }
    if let Some(plugin) = Plugin::parse(&name.value) {
        builder.diags.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "MCP server `{}` has the name of the `{plugin}` plugin",
                    name.value
                ),
            )
            .with_label(
                name.span,
                "an agent listing it in `Plugins` would be ambiguous",
            )
            .with_help("give the server another name"),
        );
        return None;
    }
    if let Some(first) = builder.program.mcp_server_named(&name.value) {
        let first = builder.program.mcp_server(first).name.clone();
        builder.diags.push(
            Diagnostic::error(
                Code::DuplicateName,
                format!("two MCP servers are named `{}`", name.value),
            )
            .with_label(name.span, format!("`{first}` is already an MCP server"))
            .with_help("server names compare ignoring case; rename one"),
        );
        return None;
    }
    let kind = decl.transport.as_ref().map_or("stdio".to_string(), |kind| {
        kind.value.trim().to_ascii_lowercase()
    });
    let transport = match kind.as_str() {
        "stdio" => {
            let Some(command) = &decl.command else {
                builder
                    .diags
                    .push(missing(decl, name, "Command", "a `stdio`"));
                return None;
            };
            McpTransport::Stdio {
                command: command.value.clone(),
                args: decl.args.iter().map(|arg| arg.value.clone()).collect(),
                env: pairs(&decl.env),
                working_directory: decl.working_directory.as_ref().map(|dir| dir.value.clone()),
            }
        }
        "http" => {
            let Some(url) = &decl.url else {
                builder.diags.push(missing(decl, name, "Url", "an `http`"));
                return None;
            };
            if let Some(mode) = &decl.transport_mode {
                let written = mode.value.trim().to_ascii_lowercase();
                if !HTTP_MODES.contains(&written.as_str()) {
                    builder.diags.push(
                        Diagnostic::error(
                            Code::InvalidValue,
                            format!(
                                "MCP server `{}`: `TransportMode: {}` is not supported",
                                name.value, mode.value
                            ),
                        )
                        .with_label(mode.span, "fuseraft speaks streamable HTTP only")
                        .with_help("write `TransportMode: streamable-http` (or leave it out)"),
                    );
                    return None;
                }
            }
            if let Some(oauth) = decl.oauth {
                builder.diags.push(
                    Diagnostic::warning(
                        Code::IgnoredSection,
                        format!("MCP server `{}`: `OAuth` is not supported", name.value),
                    )
                    .with_label(oauth, "fuseraft does not run an OAuth login")
                    .with_help(
                        "send a token with `Headers: { Authorization: \"Bearer ${TOKEN_VAR}\" }`",
                    ),
                );
            }
            McpTransport::Http {
                url: url.value.clone(),
                headers: pairs(&decl.headers),
            }
        }
        _ => {
            let span = decl.transport.as_ref().map_or(decl.span, |kind| kind.span);
            let mut diag = Diagnostic::error(
                Code::InvalidValue,
                format!("MCP server `{}`: unknown `Transport: {kind}`", name.value),
            )
            .with_label(span, "not `stdio` or `http`");
            if let Some(hint) = did_you_mean(&kind, TRANSPORTS.iter().copied()) {
                diag = diag.with_help(hint);
            }
            builder.diags.push(diag);
            return None;
        }
    };
    let timeout_seconds = match &decl.timeout_seconds {
        Some(seconds) if seconds.value == 0 => {
            builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("MCP server `{}`: `TimeoutSeconds` is 0", name.value),
                )
                .with_label(seconds.span, "no server starts or answers in no time")
                .with_help("give at least 1, or leave it out for the defaults (30 s to start, 120 s a call)"),
            );
            return None;
        }
        Some(seconds) => Some(seconds.value.min(u64::from(u32::MAX)) as u32),
        None => None,
    };
    Some(McpServer {
        name: name.value.clone(),
        transport,
        timeout_seconds,
        loc: builder.loc(decl.span),
    })
}

fn missing(decl: &McpServerDecl, name: &Spanned<String>, key: &str, kind: &str) -> Diagnostic {
    Diagnostic::error(
        Code::MissingRequiredKey,
        format!("MCP server `{}` has no `{key}`", name.value),
    )
    .with_label(decl.span, format!("{kind} server needs `{key}`"))
}

fn pairs(written: &[(Spanned<String>, Spanned<String>)]) -> Vec<(String, String)> {
    written
        .iter()
        .map(|(key, value)| (key.value.clone(), value.value.clone()))
        .collect()
}

/// Reports every name in `plugins` that is no plugin fuseraft runs, no upstream plugin and
/// no configured MCP server (a server whose entry is wrong is reported at its entry).
pub(super) fn check_plugins(
    config: &Config,
    agent: &str,
    plugins: &[Spanned<String>],
    builder: &mut Builder<'_>,
) {
    for plugin in plugins {
        let written = plugin.value.trim();
        let entry_written = config.mcp_servers.iter().any(|decl| {
            decl.name
                .as_ref()
                .is_some_and(|name| name.value.trim().eq_ignore_ascii_case(written))
        });
        let known = entry_written
            || Plugin::parse(written).is_some()
            || builder.program.mcp_server_named(written).is_some()
            || UPSTREAM_PLUGINS
                .iter()
                .any(|name| name.eq_ignore_ascii_case(written));
        if known {
            continue;
        }
        let servers: Vec<String> = builder
            .program
            .mcp_servers
            .iter()
            .map(|server| server.name.clone())
            .collect();
        let candidates = servers
            .iter()
            .map(String::as_str)
            .chain(Plugin::ALL.iter().map(|plugin| plugin.as_str()));
        let mut diag = Diagnostic::error(
            Code::InvalidValue,
            format!("agent `{agent}` lists `{written}` in `Plugins`, which is no plugin and no configured MCP server"),
        )
        .with_label(plugin.span, "not a plugin, not an `McpServers` entry");
        diag = match did_you_mean(written, candidates) {
            Some(hint) => diag.with_help(hint),
            None if servers.is_empty() => diag.with_help(format!(
                "to use an MCP server, add it under `McpServers:` with `Name: {written}`"
            )),
            None => diag.with_help(format!(
                "the configured MCP servers are: {}",
                servers
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        builder.diags.push(diag);
    }
}
