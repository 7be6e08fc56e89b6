//! # FR106 `unused-definition`
//!
//! ## What it does
//! Finds contracts that no transition or route names, `Models:` aliases that no model
//! reference names, and agents that no state, node, stage, route or setting uses, in the
//! selection types that pick agents explicitly (`statemachine`, `graph`, `workflow`,
//! `adversarial`, `mapreduce`, `scattergather`). When that selection's block is missing or
//! misspelt, its agents are not reported: the block is the one cause, reported as FR002.
//!
//! ## Why is this bad?
//! Dead definitions hide intent, and they are often the other half of a reference typo: the
//! contract meant to gate a transition that names a misspelt one.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell]
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceeded, Pattern: build }
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - { To: Done, Signal: BUILT }
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell]
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceeded, Pattern: build }
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - { To: Done, Signal: BUILT, Contract: Built }
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::SelectionKind;
use crate::syntax::fields::Spanned;
use crate::syntax::selection::SelectionDecl;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let selection = &config.selection;
    let mut found = Vec::new();
    let mut related: Vec<(usize, Diagnostic)> = Vec::new();

    let mut contracts_used: Vec<&Spanned<String>> = Vec::new();
    for route in &selection.routes {
        contracts_used.extend(route.contracts.iter());
    }
    if let Some(machine) = &selection.state_machine {
        for state in &machine.states {
            for transition in &state.transitions {
                contracts_used.extend(transition.contracts.iter());
            }
        }
    }
    for contract in &config.contracts {
        let Some(name) = &contract.name else { continue };
        if !contracts_used
            .iter()
            .any(|used| used.value.eq_ignore_ascii_case(&name.value))
        {
            place(
                ctx,
                &name.value,
                Diagnostic::warning(
                    Code::UnusedDefinition,
                    format!(
                        "contract `{}` is never used: no transition or route names it",
                        name.value
                    ),
                )
                .with_label(name.span, "defined here")
                .with_help("gate a transition with `Contract:`, or delete the contract"),
                &mut found,
                &mut related,
            );
        }
    }

    let mut model_refs: Vec<&str> = config
        .agents
        .iter()
        .filter_map(|agent| agent.model.as_ref())
        .chain(selection.model.as_ref())
        .chain(selection.magentic.as_ref().and_then(|m| m.model.as_ref()))
        .filter_map(|model| model.model_id.as_ref().map(|id| id.value.as_str()))
        .collect();
    model_refs.extend(
        config
            .settings
            .iter()
            .filter(|(key, _)| key == "Compaction.Model")
            .map(|(_, value)| value.value.as_str()),
    );
    for (alias, _) in &config.models {
        if !model_refs
            .iter()
            .any(|used| used.eq_ignore_ascii_case(&alias.value))
            && !named_as_model_elsewhere(ctx, alias)
        {
            let diag = Diagnostic::warning(
                Code::UnusedDefinition,
                format!(
                    "model alias `{}` is never used: no `Model` names it",
                    alias.value
                ),
            )
            .with_label(alias.span, "defined here")
            .with_help("name it in an agent's `Model:`, or delete it");
            place(ctx, &alias.value, diag, &mut found, &mut related);
        }
    }

    if picks_agents_explicitly(selection) {
        let mut used: Vec<&str> = Vec::new();
        if let Some(machine) = &selection.state_machine {
            for state in &machine.states {
                used.extend(state.agent.as_ref().map(|a| a.value.as_str()));
                for t in &state.transitions {
                    used.extend(t.source_agents.iter().map(|a| a.value.as_str()));
                    used.extend(t.recovery_agent.as_ref().map(|a| a.value.as_str()));
                    used.extend(t.merge_agent.as_ref().map(|a| a.value.as_str()));
                }
            }
        }
        if let Some(graph) = &selection.graph {
            for node in &graph.nodes {
                used.extend(node.agent.as_ref().map(|a| a.value.as_str()));
            }
            for edge in &graph.edges {
                used.extend(edge.source_agents.iter().map(|a| a.value.as_str()));
                used.extend(edge.recovery_agent.as_ref().map(|a| a.value.as_str()));
            }
        }
        if let Some(adversarial) = &selection.adversarial {
            for stage in &adversarial.stages {
                used.extend(stage.generator.as_ref().map(|a| a.value.as_str()));
                used.extend(stage.critic.as_ref().map(|a| a.value.as_str()));
            }
        }
        if let Some(block) = &selection.map_reduce {
            for agent in [&block.splitter, &block.mapper, &block.reducer]
                .into_iter()
                .flatten()
            {
                used.push(agent.value.as_str());
            }
        }
        if let Some(block) = &selection.scatter_gather {
            used.extend(block.participants.iter().map(|a| a.value.as_str()));
            used.extend(block.synthesizer.as_ref().map(|a| a.value.as_str()));
        }
        for (key, value) in &config.settings {
            if key == "Verifier.AgentName" {
                used.push(value.value.as_str());
            }
        }
        for agent in &config.agents {
            let Some(name) = &agent.name else { continue };
            if !used.iter().any(|u| u.eq_ignore_ascii_case(&name.value)) {
                place(
                    ctx,
                    &name.value,
                    Diagnostic::warning(
                        Code::UnusedDefinition,
                        format!(
                            "agent `{}` is never used: no state, node or stage runs it",
                            name.value
                        ),
                    )
                    .with_label(name.span, "defined here")
                    .with_help("run it in a state, or delete the agent"),
                    &mut found,
                    &mut related,
                );
            }
        }
    }
    for (idx, diag) in related {
        ctx.diags[idx].related.push(diag);
    }
    for diag in found {
        ctx.push(diag);
    }
}

/// Whether the selection names the agents it runs, in a block that is there: without its
/// block (`StateMachine:` missing or misspelt, reported as FR002) every agent would look
/// unused, a symptom of that one cause rather than a finding of its own.
fn picks_agents_explicitly(selection: &SelectionDecl) -> bool {
    let kind = selection
        .kind
        .as_ref()
        .and_then(|k| SelectionKind::parse(&k.value));
    match kind {
        Some(SelectionKind::StateMachine) => selection.state_machine.is_some(),
        Some(SelectionKind::Graph | SelectionKind::Workflow) => selection.graph.is_some(),
        Some(SelectionKind::Adversarial) => selection.adversarial.is_some(),
        Some(SelectionKind::MapReduce) => selection.map_reduce.is_some(),
        Some(SelectionKind::ScatterGather) => selection.scatter_gather.is_some(),
        _ => false,
    }
}

/// Whether the config text names `alias` as a model somewhere the typed syntax does not
/// keep (`Compaction: { Model: { ModelId: fast } }`, an agent's `SubAgentModel: fast`).
fn named_as_model_elsewhere(ctx: &Ctx<'_>, alias: &Spanned<String>) -> bool {
    let text = &ctx.sources.get(alias.span.file).text;
    let pattern = format!(
        r#"(?im)\b\w*(ModelId|Model)"?\s*:\s*["']?{}["']?\s*[,}}]?\s*$"#,
        regex::escape(&alias.value)
    );
    regex::Regex::new(&pattern).is_ok_and(|regex| {
        regex
            .find_iter(text)
            .any(|found| found.start() != alias.span.start as usize)
    })
}

/// Reports an unused definition, or, when some finding's did-you-mean names it (a
/// misspelt reference is why it looks unused), attaches it to that finding.
fn place(
    ctx: &Ctx<'_>,
    name: &str,
    diag: Diagnostic,
    found: &mut Vec<Diagnostic>,
    related: &mut Vec<(usize, Diagnostic)>,
) {
    let typo = ctx
        .suggested
        .iter()
        .find(|(_, meant)| meant.eq_ignore_ascii_case(name))
        .map(|(idx, _)| *idx);
    match typo {
        Some(idx) => related.push((idx, diag)),
        None => found.push(diag),
    }
}
