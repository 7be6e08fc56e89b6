//! # FR007 `inert-key`
//!
//! ## What it does
//! Finds keys that fuseraft reads for compatibility with upstream fuseraft-cli but that have
//! no effect at run time (`Compaction.SummaryTemplate`, `Saga`, an agent's `TrustScore` or
//! `KnowledgeWeight`, `Security.ShellPolicy`, ...), each with the reason; and plugins of
//! upstream that fuseraft does not run (listed in `Plugins`, they offer no tool). Every key
//! fuseraft accepts is classified in one registry (`compiler/src/syntax/key_effects.rs`):
//! it acts, it only annotates (`Description`), or it is inert and reported here.
//!
//! Keys that nothing reads at all are `FR001`; blocks that the chosen selection type does
//! not read are `FR005`.
//!
//! ## Why is this bad?
//! The author believes the config summarises its history with its own template, caps its
//! concurrency or weighs its agents' trust. The run silently does none of it.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell, Decision]
//!       TrustScore: 0.9
//!   Compaction:
//!     SummaryTemplate: "Summarise {{$history}}"
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell]
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Plugin, UPSTREAM_PLUGINS};
use crate::syntax::fuseraft::{AgentDecl, Config};
use crate::syntax::key_effects::{child, effect, KeyEffect, Shape, OUT_OF_SCOPE_PLUGINS};
use crate::syntax::Node;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let mut found = Vec::new();
    walk(&config.root, "Orchestration", "", &mut found);
    for agent in &config.agents {
        if let Some(body) = &agent.file_body {
            walk(body, "Agent", &agent_path(agent), &mut found);
        }
        plugins(config, agent, &mut found);
    }
    for diag in found {
        ctx.push(diag);
    }
}

/// Reports every inert key of `node` (a mapping of `table`) and of the tables under it.
/// `path` is where `node` sits, as dotted keys (`Agents[Dev]`); empty at the root.
fn walk(node: &Node, table: &str, path: &str, found: &mut Vec<Diagnostic>) {
    for (key, value) in node.entries() {
        let Some((known, effect)) = key.as_str().and_then(|written| effect(table, written)) else {
            // Not a key of this table: `FR001` says so.
            continue;
        };
        let here = if path.is_empty() {
            known.to_string()
        } else {
            format!("{path}.{known}")
        };
        if let KeyEffect::Inert(why) = effect {
            found.push(
                Diagnostic::warning(Code::InertKey, format!("`{here}` has no effect: {why}"))
                    .with_label(
                        key.span,
                        "parsed for compatibility with upstream fuseraft-cli",
                    )
                    .with_help(format!(
                        "remove `{known}`, or suppress this finding until fuseraft implements it"
                    )),
            );
            // The keys under an inert key are inert with it.
            continue;
        }
        let Some((next, shape)) = child(table, known) else {
            continue;
        };
        match shape {
            Shape::Map => walk(value, next, &here, found),
            Shape::List => {
                for (at, item) in value.items().iter().enumerate() {
                    walk(
                        item,
                        next,
                        &format!("{here}[{}]", item_label(item, at)),
                        found,
                    );
                }
            }
            Shape::Named => {
                for (name, item) in value.entries() {
                    walk(
                        item,
                        next,
                        &format!("{here}.{}", name.as_str().unwrap_or("?")),
                        found,
                    );
                }
            }
        }
    }
}

/// A list item by its `Name` or `Id`, else by its position.
fn item_label(item: &Node, at: usize) -> String {
    ["Name", "Id"]
        .iter()
        .find_map(|key| item.get_ci(key).and_then(Node::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| at.to_string())
}

fn agent_path(agent: &AgentDecl) -> String {
    match &agent.name {
        Some(name) => format!("Agents[{}]", name.value),
        None => "Agents[?]".to_string(),
    }
}

/// Upstream plugins fuseraft does not run: out of scope (an error) or not yet (a warning).
/// A name that is also an `McpServers` entry is that server.
fn plugins(config: &Config, agent: &AgentDecl, found: &mut Vec<Diagnostic>) {
    let owner = agent.name.as_ref().map_or("?", |name| name.value.as_str());
    for plugin in &agent.plugins {
        let written = plugin.value.trim();
        let is_server = config.mcp_servers.iter().any(|server| {
            server
                .name
                .as_ref()
                .is_some_and(|name| name.value.trim().eq_ignore_ascii_case(written))
        });
        if is_server || Plugin::parse(written).is_some() {
            continue;
        }
        if let Some((name, why)) = OUT_OF_SCOPE_PLUGINS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(written))
        {
            found.push(
                Diagnostic::error(
                    Code::InertKey,
                    format!("agent `{owner}` lists the upstream `{name}` plugin, which fuseraft will not run"),
                )
                .with_label(plugin.span, "out of scope")
                .with_help(format!("remove `{name}`: {why}")),
            );
        } else if let Some(name) = UPSTREAM_PLUGINS
            .iter()
            .find(|name| name.eq_ignore_ascii_case(written))
        {
            found.push(
                Diagnostic::warning(
                    Code::InertKey,
                    format!("agent `{owner}` lists the upstream `{name}` plugin, which offers no tool: fuseraft does not implement it yet"),
                )
                .with_label(plugin.span, "parsed for compatibility with upstream fuseraft-cli")
                .with_help(format!("remove `{name}`, or give the agent a plugin or MCP server that does the job")),
            );
        }
    }
}
