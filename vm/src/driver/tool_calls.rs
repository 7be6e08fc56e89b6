//! Performing a turn's tool calls: each resolved once and judged by the permission
//! authority (asking the operator when the policy says so), then run sandboxed.

use std::path::PathBuf;

use fuseraft_compiler::ir::Program;

use super::{Approvals, Env};
use crate::history::ToolCall;

/// Everything a tool call of this run needs besides its arguments: shared by a state's
/// turns and a fork's concurrent branches.
pub(super) struct ToolRunner<'a> {
    pub program: &'a Program,
    pub env: &'a Env,
    /// The sandbox root (`Security.FileSystemSandboxPath` or the work dir).
    pub sandbox: PathBuf,
    pub session_id: String,
    pub change_log: PathBuf,
    /// The run's background jobs: every tool call shares the table; the jobs die with it.
    pub jobs: crate::tools::Jobs,
}

impl ToolRunner<'_> {
    /// Runs `calls` in order for `agent` in turn `turn`: the same calls, with `result` and
    /// `ok` filled in.
    pub async fn run(&self, agent: String, turn: u32, mut calls: Vec<ToolCall>) -> Vec<ToolCall> {
        let program = self.program;
        let context = crate::tools::ToolContext {
            work_dir: self.sandbox.clone(),
            session_id: self.session_id.clone(),
            agent,
            turn,
            change_log: self.change_log.clone(),
            limits: super::limits(program),
            sandbox: crate::sandbox::Spec::new(&program.settings, &program.permissions),
            jobs: self.jobs.clone(),
        };
        let agent_ir = program
            .agent_named(&context.agent)
            .map(|id| program.agent(id));
        for call in &mut calls {
            // The call's name is resolved once, here; that tool is judged and run.
            use crate::tools::permissions::{decide, Decision};
            let permitted = match decide(call, agent_ir, program, &context.work_dir) {
                Decision::Allow(tool) => Ok(tool),
                Decision::Block(reason) => Err(reason),
                Decision::Ask(tool, action) => {
                    let approved = match &self.env.approvals {
                        Approvals::All => true,
                        Approvals::None => false,
                        Approvals::Ask(ask) => ask(&context.agent, &action, "tool"),
                    };
                    approved.then_some(tool).ok_or_else(|| {
                        format!("[DENIED: permission] {action} was refused by the operator")
                    })
                }
            };
            match permitted {
                Err(reason) => {
                    call.result = Some(reason);
                    call.ok = false;
                }
                Ok(tool) => crate::tools::execute_tool(call, tool, &context).await,
            }
        }
        calls
    }
}
