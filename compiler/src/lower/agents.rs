//! Lowering agents (with `Models:` aliases resolved) and contracts of a fuseraft config.

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{
    Agent, Context, ContextMode, ContextSource, Contract, Model, ModelTimeouts, Predicate, Pricing,
    SourceKind, ToolChoice,
};
use crate::syntax::fields::Spanned;
use crate::syntax::fuseraft::{Config, ContextSourceDecl, ModelDecl, PricingDecl, TimeoutsDecl};

pub(super) fn lower_agents(config: &Config, builder: &mut Builder<'_>) {
    for decl in &config.agents {
        let Some(name) = &decl.name else {
            builder.diags.push(
                Diagnostic::error(Code::MissingRequiredKey, "an agent has no `Name`")
                    .with_label(decl.span, "this agent needs a `Name`"),
            );
            continue;
        };
        if let Some(existing) = builder.program.agent_named(&name.value) {
            let first = builder.program.agent(existing).name.clone();
            builder.diags.push(
                Diagnostic::error(
                    Code::DuplicateName,
                    format!("agent `{}` is defined twice", name.value),
                )
                .with_label(
                    name.span,
                    format!("duplicates `{first}` (names compare case-insensitively)"),
                )
                .with_help("rename one of the agents"),
            );
            continue;
        }
        let tool_choice = match &decl.function_choice {
            None => ToolChoice::Auto,
            Some(choice) => match choice.value.trim().to_ascii_lowercase().as_str() {
                "auto" => ToolChoice::Auto,
                "required" => ToolChoice::Required,
                "none" => ToolChoice::None,
                _ => {
                    builder.diags.push(
                        Diagnostic::error(
                            Code::InvalidValue,
                            format!("unknown `FunctionChoice` `{}`", choice.value),
                        )
                        .with_label(choice.span, "expected `auto`, `required` or `none`"),
                    );
                    ToolChoice::Auto
                }
            },
        };
        let sources = lower_sources(&decl.context, true, builder);
        let mode = match decl
            .isolation
            .as_ref()
            .map(|iso| iso.value.to_ascii_lowercase())
        {
            // Upstream's newest default is `Fresh`; the configs in the wild were written for a
            // shared history, so an agent without `Isolation` shares it (see docs/semantics.md).
            None => {
                if sources.is_empty() {
                    ContextMode::Shared
                } else {
                    ContextMode::Artifacts
                }
            }
            Some(iso) if iso == "fresh" => ContextMode::Artifacts,
            Some(iso) if iso == "shared" || iso == "fork" => ContextMode::Shared,
            Some(_) => {
                let span = decl
                    .isolation
                    .as_ref()
                    .map(|iso| iso.span)
                    .unwrap_or(decl.span);
                builder.diags.push(
                    Diagnostic::error(Code::InvalidValue, "unknown `Isolation` value")
                        .with_label(span, "expected `Fresh`, `Shared` or `Fork`"),
                );
                ContextMode::Shared
            }
        };
        let model = decl
            .model
            .as_ref()
            .map(|model| resolve_model(config, model, builder));
        let capabilities = super::policy::lower_capabilities(&decl.capabilities, builder);
        let sub_agent = super::sub_agent::lower_sub_agent(config, decl, builder);
        super::mcp::check_plugins(config, &name.value, &decl.plugins, builder);
        let cap_fraction = super::context_window::cap_fraction(&name.value, decl, builder);
        let tool_result_overrides = super::context_window::tool_result_overrides(decl, builder);
        let loc = builder.loc(decl.span);
        builder.program.agents.push(Agent {
            name: name.value.clone(),
            description: decl.description.as_ref().map(|text| text.value.clone()),
            model,
            instructions: decl
                .instructions
                .as_ref()
                .map(|text| text.value.clone())
                .unwrap_or_default(),
            tools: with_memory(config, decl),
            tool_choice,
            capabilities,
            context: Context {
                mode,
                sources,
                text_only: decl.text_only.as_ref().is_some_and(|flag| flag.value),
                exclude_agents: decl
                    .exclude_agents
                    .iter()
                    .map(|name| name.value.clone())
                    .collect(),
                max_tail: window_number(&decl.max_tail),
                max_turn_age: window_number(&decl.max_turn_age),
                max_tool_result_chars: window_number(&decl.max_tool_result_chars),
                max_replay_chars: window_number(&decl.max_replay_chars),
                cap_fraction,
                tool_result_overrides,
            },
            pattern: None,
            sub_agent,
            loc,
        });
        if let Some(agent) = builder.program.agents.last().cloned() {
            super::sub_agent::warn_if_toolless(decl, &agent, builder);
        }
    }
}

/// The agent's `Plugins`, with `Memory` added when it keeps memories: `EnableMemory: true`,
/// or upstream's `Memory: { Provider: local }` for every agent that does not say
/// `EnableMemory: false`.
fn with_memory(config: &Config, decl: &crate::syntax::fuseraft::AgentDecl) -> Vec<String> {
    let mut plugins: Vec<String> = decl
        .plugins
        .iter()
        .map(|plugin| plugin.value.clone())
        .collect();
    let local = config.settings.iter().any(|(key, value)| {
        key == "Memory.Provider" && value.value.trim().eq_ignore_ascii_case("local")
    });
    let keeps = decl.enable_memory.as_ref().map_or(local, |flag| flag.value);
    let listed = plugins
        .iter()
        .any(|plugin| plugin.eq_ignore_ascii_case("Memory"));
    if keeps && !listed {
        plugins.push("Memory".to_string());
    }
    plugins
}

/// Context sources (`Context` of an agent when `of_agent`, else a `HandoffContext`). A
/// source fuseraft cannot read is kept (its block says so at run time) and warned about: a
/// near miss of a known one with a did-you-mean (`FR004`), upstream's `execution_state` and
/// `investigation_log` as unsupported (`FR014`).
pub(super) fn lower_sources(
    decls: &[ContextSourceDecl],
    of_agent: bool,
    builder: &mut Builder<'_>,
) -> Vec<ContextSource> {
    decls
        .iter()
        .map(|decl| {
            let source = ContextSource {
                source: decl.source.value.clone(),
                max_chars: decl
                    .max_chars
                    .as_ref()
                    .map_or(0, |max| max.value.min(u32::MAX as u64) as u32),
                label: decl.label.as_ref().map(|label| label.value.clone()),
            };
            if let Some(diag) = source_warning(&source, of_agent) {
                builder
                    .diags
                    .push(diag.with_label(decl.source.span, "this source"));
            }
            source
        })
        .collect()
}

fn source_warning(source: &ContextSource, of_agent: bool) -> Option<Diagnostic> {
    let text = source.source.trim();
    match source.kind() {
        SourceKind::File("") | SourceKind::BriefField("") => Some(Diagnostic::warning(
            Code::InvalidValue,
            format!("context source `{text}` names nothing after its `:`"),
        )),
        SourceKind::OwnHistory(_) if !of_agent => Some(Diagnostic::warning(
            Code::InvalidValue,
            "`own_history` is only read in an agent's `Context`, not in a `HandoffContext`",
        )),
        SourceKind::Other(other) => {
            let name = other.split(':').next().unwrap_or(other).trim();
            if ["execution_state", "investigation_log"]
                .iter()
                .any(|known| known.eq_ignore_ascii_case(name))
            {
                return Some(Diagnostic::warning(
                    Code::UnsupportedFeature,
                    format!("context source `{name}` is not supported by fuseraft; its block will say so"),
                ));
            }
            let known = SourceKind::NAMES
                .iter()
                .map(|known| format!("`{known}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let help = match did_you_mean(name, SourceKind::NAMES.iter().copied()) {
                Some(hint) => format!("{hint} (context sources: {known})"),
                None => format!("context sources: {known}"),
            };
            Some(
                Diagnostic::warning(
                    Code::InvalidValue,
                    format!("unknown context source `{name}`"),
                )
                .with_help(help),
            )
        }
        _ => None,
    }
}

/// Applies a `Models:` alias named by `ModelId`: the alias supplies every field the agent's
/// own block leaves out; the agent's `Temperature`, `MaxTokens`, `ReasoningEffort` win.
pub(super) fn resolve_model(config: &Config, decl: &ModelDecl, builder: &mut Builder<'_>) -> Model {
    let id = decl
        .model_id
        .as_ref()
        .map(|id| id.value.clone())
        .unwrap_or_default();
    let alias = config
        .models
        .iter()
        .find(|(alias, _)| alias.value.eq_ignore_ascii_case(&id) && !id.is_empty());
    let base = alias.map(|(_, model)| model);
    let pick =
        |own: &Option<crate::syntax::fields::Spanned<String>>,
         from_alias: Option<&Option<crate::syntax::fields::Spanned<String>>>| {
            own.as_ref()
                .or(from_alias.and_then(|value| value.as_ref()))
                .map(|value| value.value.clone())
        };
    let has_literal_key = decl.api_key.is_some() || base.is_some_and(|base| base.api_key.is_some());
    let _ = &builder;
    Model {
        alias: alias.map(|(alias, _)| alias.value.clone()),
        provider: pick(&decl.provider, base.map(|b| &b.provider)),
        id: match base {
            Some(base) => base
                .model_id
                .as_ref()
                .map(|id| id.value.clone())
                .unwrap_or_default(),
            None => id,
        },
        endpoint: pick(&decl.endpoint, base.map(|b| &b.endpoint)),
        api_key_env: pick(&decl.api_key_env, base.map(|b| &b.api_key_env)),
        has_literal_key,
        temperature: pick(&decl.temperature, base.map(|b| &b.temperature)),
        max_tokens: decl
            .max_tokens
            .as_ref()
            .or(base.and_then(|b| b.max_tokens.as_ref()))
            .map(|max| max.value),
        reasoning_effort: pick(&decl.reasoning_effort, base.map(|b| &b.reasoning_effort)),
        context_window: decl
            .max_context_tokens
            .as_ref()
            .or(base.and_then(|b| b.max_context_tokens.as_ref()))
            .map(|max| max.value),
        pricing: decl
            .pricing
            .as_ref()
            .or(base.and_then(|b| b.pricing.as_ref()))
            .and_then(pricing),
        timeouts: timeouts(&decl.timeouts, base.map(|b| &b.timeouts)),
    }
}

/// A `Pricing` with both its prices (one without was reported as it was read).
fn pricing(decl: &PricingDecl) -> Option<Pricing> {
    Some(Pricing {
        input: decl.input.as_ref()?.value,
        output: decl.output.as_ref()?.value,
        cached_input: decl.cached_input.as_ref().map(|price| price.value),
    })
}

/// Each timeout the agent's own block sets, else the alias's.
fn timeouts(own: &TimeoutsDecl, alias: Option<&TimeoutsDecl>) -> ModelTimeouts {
    let pick = |own: &Option<Spanned<f64>>, from_alias: Option<&Option<Spanned<f64>>>| {
        own.as_ref()
            .or(from_alias.and_then(|value| value.as_ref()))
            .map(|seconds| seconds.value)
    };
    ModelTimeouts {
        connect: pick(&own.connect, alias.map(|a| &a.connect)),
        idle: pick(&own.idle, alias.map(|a| &a.idle)),
        overall: pick(&own.overall, alias.map(|a| &a.overall)),
    }
}

pub(super) fn lower_contracts(config: &Config, builder: &mut Builder<'_>) {
    for decl in &config.contracts {
        let Some(name) = &decl.name else { continue };
        if builder
            .program
            .contracts
            .iter()
            .any(|contract| contract.name.eq_ignore_ascii_case(&name.value))
        {
            builder.diags.push(
                Diagnostic::error(
                    Code::DuplicateName,
                    format!("contract `{}` is defined twice", name.value),
                )
                .with_label(name.span, "a contract with this name already exists"),
            );
            continue;
        }
        let predicates = decl
            .requires
            .iter()
            .map(|predicate| Predicate {
                kind: predicate
                    .kind
                    .as_ref()
                    .map(|kind| kind.value.clone())
                    .unwrap_or_default(),
                params: predicate
                    .params
                    .iter()
                    .map(|(key, value)| (key.clone(), value.value.clone()))
                    .collect(),
            })
            .collect();
        let loc = builder.loc(decl.span);
        builder.program.contracts.push(Contract {
            name: name.value.clone(),
            predicates,
            loc,
        });
    }
}

/// `Compaction.Model` (an alias, `Model: fast`, or a mapping, `Model: {ModelId: fast}`,
/// kept as dotted settings by the reader) resolved like an agent's model.
pub(super) fn lower_compaction_model(config: &Config, builder: &mut Builder<'_>) {
    let setting = |name: &str| {
        config
            .settings
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
            .filter(|value| !value.value.trim().is_empty())
    };
    let Some(model_id) =
        setting("Compaction.Model").or_else(|| setting("Compaction.Model.ModelId"))
    else {
        return;
    };
    let number = |name: &str| {
        setting(name).and_then(|value| {
            let parsed = value.value.trim().parse::<u64>().ok()?;
            Some(crate::syntax::fields::Spanned::new(parsed, value.span))
        })
    };
    let decl = ModelDecl {
        span: model_id.span,
        model_id: Some(model_id),
        endpoint: setting("Compaction.Model.Endpoint"),
        api_key: setting("Compaction.Model.ApiKey"),
        api_key_env: setting("Compaction.Model.ApiKeyEnvVar"),
        provider: setting("Compaction.Model.Provider"),
        max_tokens: number("Compaction.Model.MaxTokens"),
        temperature: setting("Compaction.Model.Temperature"),
        reasoning_effort: setting("Compaction.Model.ReasoningEffort"),
        max_context_tokens: number("Compaction.Model.MaxContextTokens"),
        // Read from the flattened settings, which keep no `Pricing` or timeouts: the
        // summariser takes the bundled price table and the run's timeouts.
        ..ModelDecl::default()
    };
    builder.program.compaction_model = Some(resolve_model(config, &decl, builder));
}

/// A `ContextWindow` count as the IR holds it: absent is 0 (off), a huge one saturates.
fn window_number(value: &Option<crate::syntax::fields::Spanned<u64>>) -> u32 {
    value
        .as_ref()
        .map_or(0, |max| max.value.min(u32::MAX as u64) as u32)
}
