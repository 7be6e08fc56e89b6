//! # FR602 `contract-unsatisfiable`
//!
//! ## What it does
//! Finds contracts that no agent can satisfy: a `CommandSucceeded` predicate (a succeeded
//! shell command recorded in the change log) gating an exit that only agents without a
//! `Shell` plugin can lead to. The agents considered are those of every state on some path
//! from the entry to the gated exit, the exit's own state included.
//!
//! ## Why is this bad?
//! The gate can never pass: each attempt is a contract failure, the agent is re-instructed
//! until `FailureHandling` gives up, and the run stops where the author expected progress.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Instructions: Write the code, then say BUILT.
//!       Plugins: [FileSystem]
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceeded, Pattern: "cargo build" }
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
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Instructions: Write the code, run cargo build, then say BUILT.
//!       Plugins: [FileSystem, Shell]
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceeded, Pattern: "cargo build" }
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
use super::super::flow::Flow;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Guard, Program, StateId};

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program, flow: &Flow) {
    // Reverse edges over control (and fork branch) successors.
    let n_states = program.states.len();
    let mut reverse = vec![Vec::new(); n_states];
    for id in program.state_ids() {
        for next in program.successors(id) {
            reverse[next.0 as usize].push(id);
        }
    }
    let mut found = Vec::new();
    for id in program.state_ids() {
        if !flow.reach_live[id.0 as usize] {
            continue;
        }
        for (idx, exit) in program.state(id).exits.iter().enumerate() {
            if ctx.is_dead(id, idx) {
                continue;
            }
            for guard in &exit.guards {
                let Guard::Contract(contract_id) = guard else {
                    continue;
                };
                let contract = program.contract(*contract_id);
                let needs_shell = contract
                    .predicates
                    .iter()
                    .any(|p| p.kind.eq_ignore_ascii_case("CommandSucceeded"));
                if !needs_shell {
                    continue;
                }
                let before = ancestors(id, &reverse, flow);
                let has_shell = before.iter().any(|state| {
                    program.state(*state).agent.is_some_and(|agent| {
                        program
                            .agent(agent)
                            .tools
                            .iter()
                            .any(|tool| tool.to_ascii_lowercase().contains("shell"))
                    })
                });
                if has_shell {
                    continue;
                }
                let mut diag = Diagnostic::warning(
                    Code::ContractUnsatisfiable,
                    format!(
                        "contract `{}` needs a succeeded shell command, but no agent that runs before this exit has a `Shell` plugin",
                        contract.name
                    ),
                );
                if let Some(span) = ctx.exit_span(exit) {
                    diag = diag.with_label(span, "gated by a contract no agent can satisfy");
                }
                found.push(diag.with_help(format!(
                    "add `Shell` to the `Plugins` of `{}` (or of an agent before it)",
                    program
                        .state(id)
                        .agent
                        .map_or("the state's agent", |agent| program.agent(agent).name.as_str())
                )));
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}

/// `state` and every reachable state from which it can be reached.
fn ancestors(state: StateId, reverse: &[Vec<StateId>], flow: &Flow) -> Vec<StateId> {
    let mut seen = vec![false; reverse.len()];
    let mut stack = vec![state];
    seen[state.0 as usize] = true;
    let mut out = Vec::new();
    while let Some(id) = stack.pop() {
        out.push(id);
        for prev in &reverse[id.0 as usize] {
            if !seen[prev.0 as usize] && flow.reach_all[prev.0 as usize] {
                seen[prev.0 as usize] = true;
                stack.push(*prev);
            }
        }
    }
    out
}
