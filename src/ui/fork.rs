//! What the page needs to draw a fork's branches side by side, added to the run's events
//! as they are published (the events file is unchanged): `fork_start` gets the fork's
//! `columns` (each branch's state and agent, in declaration order), a branch's `turn_end`
//! its reply and tool calls (kept in the run until the fork joins), `fork_join` the merged
//! text.

use fuseraft_compiler::ir::{Program, StateKind};
use fuseraft_vm::history::ToolCall;
use fuseraft_vm::machine::Run;
use serde_json::{json, Value as Json};

/// Every fork state of a program with its branches' columns.
#[derive(Default)]
pub struct Forks(Vec<(String, Json)>);

impl Forks {
    pub fn of(program: &Program) -> Forks {
        let forks = program
            .states
            .iter()
            .filter_map(|state| match &state.kind {
                StateKind::Fork(fork) => Some((state.name.clone(), fork)),
                _ => None,
            })
            .map(|(name, fork)| {
                // Only branches with an agent run (as the machine starts them).
                let columns: Vec<Json> = fork
                    .branches
                    .iter()
                    .map(|id| program.state(*id))
                    .filter_map(|branch| {
                        let agent = &program.agent(branch.agent?).name;
                        Some(json!({"state": branch.name, "agent": agent}))
                    })
                    .collect();
                (name, Json::Array(columns))
            })
            .collect();
        Forks(forks)
    }

    /// The columns of the fork state `state`.
    pub fn columns(&self, state: &str) -> Option<&Json> {
        self.0
            .iter()
            .find(|(name, _)| name == state)
            .map(|(_, columns)| columns)
    }
}

/// The reply of the branch in state `state` of the fork under way, once it finished.
pub fn branch_reply(run: &Run, state: &str) -> Option<Json> {
    let done = run.fork.as_ref()?.iter().find(|done| done.state == state)?;
    Some(reply(&done.text, &done.tool_calls))
}

/// The merged output of the fork that just joined (the history's last `parallel` message).
pub fn merged(run: &Run) -> Option<&str> {
    run.history
        .iter()
        .rev()
        .find(|message| message.agent == "parallel")
        .map(|message| &*message.content)
}

/// A reply as the page shows it.
pub fn reply(content: &str, tool_calls: &[ToolCall]) -> Json {
    json!({
        "content": content,
        "tool_calls": tool_calls.iter().map(|call| json!({
            "name": call.name, "args": call.args, "result": call.result, "ok": call.ok,
        })).collect::<Vec<Json>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_state_has_a_column_per_branch_in_declaration_order() {
        let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/run/ui-fork/config.yaml");
        let compiled = fuseraft_compiler::compile(&config, &crate::disk::Disk);
        let program = compiled.program.expect("the fixture compiles");
        let forks = Forks::of(&program);
        assert_eq!(
            forks.columns("Plan/parallel1"),
            Some(&json!([
                {"state": "Backend", "agent": "BackendDev"},
                {"state": "Frontend", "agent": "FrontendDev"},
            ]))
        );
        assert_eq!(forks.columns("Plan"), None, "not a fork");
    }
}
