//! # FR203 `no-terminal`
//!
//! ## What it does
//! Finds state machines, graphs and tama fsms with no terminal state at all: no
//! `Terminal: true` state or node, and no `~` target that ends the fsm.
//!
//! ## Why is this bad?
//! The run can only end when a `Termination` strategy fires or its budget runs out, so
//! "done" is whatever the budget says. The liveness checks (`FR202`, `FR204`, `FR206`) need a
//! terminal to aim at and are skipped until one exists.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Reviewer
//!   Selection:
//!     Type: graph
//!     Graph:
//!       Nodes:
//!         - { Id: build, Agent: Dev }
//!         - { Id: review, Agent: Reviewer }
//!       Edges:
//!         - { From: build, To: review, Keyword: READY }
//!         - { From: review, To: build, Keyword: CHANGES }
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Reviewer
//!   Selection:
//!     Type: graph
//!     Graph:
//!       Nodes:
//!         - { Id: build, Agent: Dev }
//!         - { Id: review, Agent: Reviewer }
//!         - { Id: done, Agent: Reviewer, Terminal: true }
//!       Edges:
//!         - { From: build, To: review, Keyword: READY }
//!         - { From: review, To: build, Keyword: CHANGES }
//!         - { From: review, To: done, Keyword: APPROVED }
//! ```

use super::super::context::Ctx;
use super::super::flow::Flow;
use crate::diagnostic::{Code, Diagnostic, Severity};
use crate::ir::{Origin, Program, SelectionKind, StateKind};

/// Reports a program without any terminal; returns whether one exists.
pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program, flow: &Flow) -> bool {
    let has_terminal = program
        .states
        .iter()
        .any(|state| matches!(state.kind, StateKind::Terminal(_)))
        || flow.ends_here.iter().any(|ends| *ends);
    if has_terminal {
        return true;
    }
    let (message, fix, severity) = match program.origin {
        Origin::Fuseraft(SelectionKind::StateMachine) => (
            "the state machine has no terminal state: a run can only end when its budget or a `Termination` strategy stops it",
            "mark the final state `Terminal: true`",
            Severity::Warning,
        ),
        Origin::Tama => (
            "the fsm has no state that ends it: every run loops or fails with \"no transition for key\"",
            "route the final state to `~` (or give it a `~` key)",
            Severity::Error,
        ),
        _ => (
            "the graph has no terminal node: a run can only end when its budget stops it",
            "mark the final node `Terminal: true`",
            Severity::Error,
        ),
    };
    let mut diag = Diagnostic::new(Code::NoTerminal, severity, message);
    if let Some(span) = ctx.state_span(program, program.entry) {
        diag = diag.with_label(span, "the run starts here and can never reach an end state");
    }
    let diag = diag.with_help(fix);
    // When the only ways to end can never fire, that is the cause.
    let cause = ctx
        .dead
        .iter()
        .find(|dead| program.state(dead.state).exits[dead.exit].target == crate::ir::Target::End);
    match cause {
        Some(dead) => {
            let cause = dead.cause;
            ctx.diags[cause].related.push(diag);
        }
        None => {
            ctx.push(diag);
        }
    }
    false
}
