//! `fuseraft plugins`: every built-in plugin, its tools, the capability tag that offers each
//! and the permission category its calls fall in (upstream's `plugins [--plugin NAME]`).

use fuseraft_compiler::diagnostic::did_you_mean;
use fuseraft_compiler::ir::{Plugin, Tool};
use serde_json::json;

use super::exit;
use crate::cli::PluginsArgs;

pub fn run(args: &PluginsArgs) -> u8 {
    let plugins: Vec<Plugin> = match &args.plugin {
        None => Plugin::ALL.to_vec(),
        Some(name) => match Plugin::parse(name) {
            Some(plugin) => vec![plugin],
            None => {
                let hint = did_you_mean(name, Plugin::ALL.iter().map(|plugin| plugin.as_str()))
                    .map(|hint| format!("; {hint}"))
                    .unwrap_or_default();
                eprintln!(
                    "error: no plugin is named `{name}`{hint} (`fuseraft plugins` lists them)"
                );
                return exit::USAGE;
            }
        },
    };
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(&json!(plugins
            .iter()
            .map(|plugin| plugin_json(*plugin))
            .collect::<Vec<_>>()))
        .unwrap_or_default();
        text.push('\n');
        text
    } else {
        table(&plugins, args.plugin.is_some())
    };
    super::print_or_fail(&text).unwrap_or(exit::OK)
}

/// What a tool's calls are judged as: its permission category, or `none` (always allowed
/// by the policy; the plugin and its capabilities still decide whether it is offered).
fn category(tool: Tool) -> &'static str {
    tool.category().map_or("none", |category| category.key())
}

/// The first sentence of a tool's description.
fn summary(tool: Tool) -> String {
    let schemas = fuseraft_vm::tools::schemas_of(&[tool]);
    let description = schemas
        .first()
        .map(|schema| schema.description.clone())
        .unwrap_or_default();
    let first = description
        .split_inclusive(". ")
        .next()
        .unwrap_or_default()
        .trim();
    first.to_string()
}

fn table(plugins: &[Plugin], described: bool) -> String {
    let mut out = String::new();
    let mut tools = 0;
    for plugin in plugins {
        let capabilities: Vec<&str> = plugin
            .capabilities()
            .iter()
            .map(|capability| capability.as_str())
            .collect();
        out.push_str(&format!(
            "{} ({})\n",
            plugin.as_str(),
            capabilities.join(", ")
        ));
        for tool in plugin.tools() {
            tools += 1;
            out.push_str(&format!(
                "  {:<32} {:<9} {}\n",
                tool.name(),
                tool.capability().as_str(),
                category(tool)
            ));
            if described {
                out.push_str(&format!("      {}\n", summary(tool)));
            }
        }
    }
    out.push_str(&format!(
        "{} plugin{}, {tools} tools; columns: tool, capability (`Capabilities`), permission category (`Security.Permissions`)\n",
        plugins.len(),
        if plugins.len() == 1 { "" } else { "s" }
    ));
    out
}

fn plugin_json(plugin: Plugin) -> serde_json::Value {
    json!({
        "plugin": plugin.as_str(),
        "capabilities": plugin.capabilities().iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        "tools": plugin.tools().map(|tool| json!({
            "name": tool.name(),
            "capability": tool.capability().as_str(),
            "category": tool.category().map(|category| category.key()),
            "needs_network": tool.needs_network(),
            "description": summary(tool),
        })).collect::<Vec<_>>(),
    })
}
