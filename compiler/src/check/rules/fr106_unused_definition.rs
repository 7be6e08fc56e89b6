//! # FR106 `unused-definition`
//!
//! ## What it does
//! Finds contracts that no transition or route names, and agents that no state, node,
//! stage, route or setting uses, in the selection types that pick agents explicitly
//! (`statemachine`, `graph`, `workflow`, `adversarial`, `mapreduce`, `scattergather`).
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

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let selection = &config.selection;
    let mut found = Vec::new();

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
            found.push(
                Diagnostic::warning(
                    Code::UnusedDefinition,
                    format!(
                        "contract `{}` is never used: no transition or route names it",
                        name.value
                    ),
                )
                .with_label(name.span, "defined here")
                .with_help("gate a transition with `Contract:`, or delete the contract"),
            );
        }
    }

    let kind = selection
        .kind
        .as_ref()
        .and_then(|k| SelectionKind::parse(&k.value));
    let explicit = matches!(
        kind,
        Some(
            SelectionKind::StateMachine
                | SelectionKind::Graph
                | SelectionKind::Workflow
                | SelectionKind::Adversarial
                | SelectionKind::MapReduce
                | SelectionKind::ScatterGather
        )
    );
    if explicit {
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
                found.push(
                    Diagnostic::warning(
                        Code::UnusedDefinition,
                        format!(
                            "agent `{}` is never used: no state, node or stage runs it",
                            name.value
                        ),
                    )
                    .with_label(name.span, "defined here")
                    .with_help("run it in a state, or delete the agent"),
                );
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
