//! # FR605 `validator-unsatisfiable`
//!
//! ## What it does
//! Finds route validators that the agent whose turn they judge can never satisfy, given its
//! `Plugins`, its `Capabilities` and the run's permission policy (`Security.Permissions`):
//! - `RequireShellPass` needs a passing `shell_run` in the turn: the agent must be offered
//!   `shell_run` (`Shell`, with the `run` capability) and `command_execution` must not be
//!   blocked;
//! - `RequireWriteFile` needs a `write_file` or `patch_file` in the turn (`FileSystem` with the
//!   `write` capability, `file_write_delete` not blocked), or, with `ShellFallbackPattern`, a
//!   matching command the agent may run;
//! - `RequireSessionContextWrite` needs a successful `session_context_write` in the turn
//!   (`SessionContext` with the `write` capability);
//! - `RequireBrief` needs the brief file (`Validation.BriefPath`) written: the agent must be
//!   able to write files (`write_file`/`patch_file`, or commands through `shell_run`).
//!
//! A validator on a node (a graph node's or a terminal state's way out) is reported at its
//! state when its exit has no place of its own in the config.
//!
//! It is a warning: the first two validators can also pass on evidence another agent left in
//! the change log, but a gate that relies on that is rarely what the author meant.
//!
//! ## Why is this bad?
//! Every attempt fails the validator, the agent is re-instructed until `FailureHandling`
//! gives up, and the run stops stuck where the author expected progress.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Tester
//!       Instructions: Run the tests, then say TESTED.
//!       Plugins: [FileSystem]
//!     - Name: Reviewer
//!       Instructions: Review, then say APPROVED.
//!   Selection:
//!     Type: keyword
//!     Routes:
//!       - { Keyword: TESTED, Agent: Reviewer, SourceAgents: [Tester], Validators: [RequireShellPass] }
//!       - { Keyword: APPROVED, Agent: Reviewer, SourceAgents: [Reviewer] }
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Tester
//!       Instructions: Run the tests, then say TESTED.
//!       Plugins: [FileSystem, Shell]
//!     - Name: Reviewer
//!       Instructions: Review, then say APPROVED.
//!   Selection:
//!     Type: keyword
//!     Routes:
//!       - { Keyword: TESTED, Agent: Reviewer, SourceAgents: [Tester], Validators: [RequireShellPass] }
//!       - { Keyword: APPROVED, Agent: Reviewer, SourceAgents: [Reviewer] }
//! ```

use super::super::context::Ctx;
use super::super::flow::Flow;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Action, Agent, Category, Guard, Permissions, Program, Tool};

/// Why `agent` cannot produce what `validator` looks for, if it cannot.
fn impossible(
    validator: &str,
    params: &[(String, String)],
    agent: &Agent,
    permissions: &Permissions,
) -> Option<String> {
    let can = |tool: Tool| tool.offered(&agent.tools, &agent.capabilities);
    let allowed = |category: Category| permissions.action(category) != Action::Block;
    let shell = can(Tool::ShellRun) && allowed(Category::CommandExecution);
    match validator.to_ascii_lowercase().as_str() {
        "requireshellpass" if !shell => Some(if can(Tool::ShellRun) {
            "the permission policy blocks `command_execution`".to_string()
        } else {
            format!(
                "`{}` is not offered `shell_run` (its `Plugins` and `Capabilities`)",
                agent.name
            )
        }),
        "requirewritefile" => {
            let writes = (can(Tool::WriteFile) || can(Tool::PatchFile))
                && allowed(Category::FileWriteDelete);
            let fallback = params
                .iter()
                .any(|(key, _)| key.eq_ignore_ascii_case("ShellFallbackPattern"))
                && shell;
            (!writes && !fallback).then(|| {
                if can(Tool::WriteFile) || can(Tool::PatchFile) {
                    "the permission policy blocks `file_write_delete`".to_string()
                } else {
                    format!(
                        "`{}` is not offered `write_file` or `patch_file` (its `Plugins` and `Capabilities`)",
                        agent.name
                    )
                }
            })
        }
        "requirebrief" => {
            let writes = (can(Tool::WriteFile) || can(Tool::PatchFile))
                && allowed(Category::FileWriteDelete);
            (!writes && !shell).then(|| {
                format!(
                    "`{}` cannot write the brief file: it is offered neither `write_file`, `patch_file` nor `shell_run` that the permission policy allows",
                    agent.name
                )
            })
        }
        "requiresessioncontextwrite" if !can(Tool::SessionContextWrite) => Some(format!(
            "`{}` is not offered `session_context_write` (its `Plugins` and `Capabilities`)",
            agent.name
        )),
        _ => None,
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program, flow: &Flow) {
    let mut found = Vec::new();
    for id in program.state_ids() {
        if !flow.reach_live[id.0 as usize] {
            continue;
        }
        let state = program.state(id);
        let Some(agent) = state.agent.map(|agent| program.agent(agent)) else {
            continue;
        };
        for (idx, exit) in state.exits.iter().enumerate() {
            if ctx.is_dead(id, idx) {
                continue;
            }
            for guard in &exit.guards {
                let Guard::Validator { name, params } = guard else {
                    continue;
                };
                let Some(reason) = impossible(name, params, agent, &program.permissions) else {
                    continue;
                };
                let mut diag = Diagnostic::warning(
                    Code::ValidatorUnsatisfiable,
                    format!(
                        "validator `{name}` judges `{}`'s turn, but {reason}",
                        agent.name
                    ),
                );
                if let Some(span) = ctx.exit_span(exit) {
                    diag = diag.with_label(span, "gated by a validator this agent cannot satisfy");
                } else if let Some(span) = ctx.state_span(program, id) {
                    // A node-level validator: its exit is the node's own way out.
                    diag = diag.with_label(
                        span,
                        "this node's validator judges an agent that cannot satisfy it",
                    );
                }
                found.push(diag.with_help(format!(
                    "give `{}` the plugin and capability the validator needs, or relax the permission policy",
                    agent.name
                )));
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
