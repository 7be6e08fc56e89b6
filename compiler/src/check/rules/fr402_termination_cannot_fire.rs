//! # FR402 `termination-cannot-fire`
//!
//! ## What it does
//! Finds a regex termination whose `AgentNames` lists an agent that does not exist (with a
//! did-you-mean; `fuseraft validate` warns the same) or whose listed agents all run only in
//! states that no run can reach.
//!
//! ## Why is this bad?
//! The stop condition only looks at replies from those agents; when none can ever reply,
//! the run never ends normally and stops only at its iteration cap.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Reviewer
//!   Termination:
//!     Type: regex
//!     Pattern: "^APPROVED$"
//!     AgentNames: [Reveiwer]
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Reviewer
//!   Termination:
//!     Type: regex
//!     Pattern: "^APPROVED$"
//!     AgentNames: [Reviewer]
//! ```

use super::super::context::Ctx;
use super::super::flow::Flow;
use crate::diagnostic::{did_you_mean, known_list, Code, Diagnostic};
use crate::ir::Program;
use crate::syntax::fuseraft::TerminationDecl;

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program, flow: &Flow) {
    let Some(config) = ctx.config else { return };
    let mut decls = Vec::new();
    fn collect<'a>(decl: &'a TerminationDecl, out: &mut Vec<&'a TerminationDecl>) {
        out.push(decl);
        for child in &decl.strategies {
            collect(child, out);
        }
    }
    if let Some(decl) = &config.termination {
        collect(decl, &mut decls);
    }
    let mut found = Vec::new();
    let names: Vec<&str> = program.agents.iter().map(|a| a.name.as_str()).collect();
    for decl in decls {
        if decl.agent_names.is_empty() || decl.pattern.is_none() {
            continue;
        }
        let mut any_reachable = false;
        for name in &decl.agent_names {
            match program.agent_named(&name.value) {
                None => {
                    let help = did_you_mean(&name.value, names.iter().copied())
                        .unwrap_or_else(|| known_list(names.iter().copied()));
                    found.push(
                        Diagnostic::warning(
                            Code::TerminationCannotFire,
                            format!("termination agent `{}` is not a defined agent: replies are never checked against this pattern for it", name.value),
                        )
                        .with_label(name.span, "no agent has this name")
                        .with_help(help),
                    );
                }
                Some(agent) => {
                    if program.state_ids().any(|id| {
                        program.state(id).agent == Some(agent) && flow.reach_live[id.0 as usize]
                    }) {
                        any_reachable = true;
                    }
                }
            }
        }
        let all_known = decl
            .agent_names
            .iter()
            .all(|n| program.agent_named(&n.value).is_some());
        if all_known && !any_reachable {
            let mut diag = Diagnostic::warning(
                Code::TerminationCannotFire,
                "this termination only reads replies of agents that never run: it can never fire",
            );
            if let Some(first) = decl.agent_names.first() {
                diag = diag.with_label(first.span, "no reachable state runs these agents");
            }
            found.push(diag.with_help("name an agent that runs in a reachable state"));
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
