//! Lowering an agent's sub-agent settings (`SubAgentModel`, `SubAgentPlugins`,
//! `SubAgentMaxToolCalls`) into `ir::SubAgentSettings`, and telling the user when a
//! `SubAgent` plugin would have no tool to call.

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{sub_agent_tools, Agent, Plugin, SubAgentSettings};
use crate::syntax::fuseraft::{AgentDecl, Config};

/// The settings as written: an unknown plugin is an error with a did-you-mean, a plugin
/// that never lends a sub-agent tools a warning saying why.
pub(super) fn lower_sub_agent(
    config: &Config,
    decl: &AgentDecl,
    builder: &mut Builder<'_>,
) -> SubAgentSettings {
    let model = decl
        .sub_agent_model
        .as_ref()
        .map(|model| super::agents::resolve_model(config, model, builder));
    let mut plugins = Vec::new();
    for written in &decl.sub_agent_plugins {
        let Some(plugin) = Plugin::parse(&written.value) else {
            let names = Plugin::ALL.iter().map(|plugin| plugin.as_str());
            let mut diag = Diagnostic::error(
                Code::InvalidValue,
                format!("unknown plugin `{}` in `SubAgentPlugins`", written.value),
            )
            .with_label(written.span, "not a plugin");
            if let Some(hint) = did_you_mean(&written.value, names) {
                diag = diag.with_help(hint);
            }
            builder.diags.push(diag);
            continue;
        };
        if !plugin.lends_to_sub_agent() {
            builder.diags.push(
                Diagnostic::warning(
                    Code::InvalidValue,
                    format!("`{plugin}` lends no tool to a sub-agent"),
                )
                .with_label(written.span, "ignored here")
                .with_help(
                    "a sub-agent only reads: it may call the read tools of FileSystem, Search, Git, Changes and Json that its agent may call",
                ),
            );
            continue;
        }
        if !plugins.contains(&plugin) {
            plugins.push(plugin);
        }
    }
    SubAgentSettings {
        model,
        plugins,
        max_tool_calls: decl
            .sub_agent_max_tool_calls
            .as_ref()
            .map(|max| max.value.min(u32::MAX as u64) as u32),
    }
}

/// Warns when `agent` lists `SubAgent` but its sub-agent could call no tool (the agent has
/// no read tool of a plugin that lends one, or `SubAgentPlugins` names none of them).
pub(super) fn warn_if_toolless(decl: &AgentDecl, agent: &Agent, builder: &mut Builder<'_>) {
    let Some(listed) = decl
        .plugins
        .iter()
        .find(|plugin| Plugin::parse(&plugin.value) == Some(Plugin::SubAgent))
    else {
        return;
    };
    if !sub_agent_tools(agent).is_empty() {
        return;
    }
    builder.diags.push(
        Diagnostic::warning(
            Code::InvalidValue,
            format!(
                "agent `{}` lists `SubAgent`, but its sub-agent would have no tool to call",
                agent.name
            ),
        )
        .with_label(listed.span, "this sub-agent could only answer from nothing")
        .with_help(
            "a sub-agent calls its agent's own read tools of FileSystem, Search, Git, Changes and Json: list one of those plugins (and in `SubAgentPlugins`, when set)",
        ),
    );
}
