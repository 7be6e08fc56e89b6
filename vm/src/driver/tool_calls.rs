//! Performing a turn's tool calls: each resolved once and judged by the permission
//! authority (asking the operator when the policy says so), then run sandboxed; a
//! `sub_agent_*` call runs its sub-agent (`sub_agent.rs`).

use std::path::PathBuf;

use fuseraft_compiler::ir::{Program, SubAgentMode};

use super::{Approvals, Env, Models};
use crate::effect::Response;
use crate::event::{Event, EventKind};
use crate::history::{Denial, DenialKind, Spend, ToolCall, Usage};
use crate::tools::permissions::{decide, Decision, ToolRef};

/// Everything a tool call of this run needs besides its arguments: shared by a state's
/// turns and a fork's concurrent branches.
pub(super) struct ToolRunner<'a> {
    pub program: &'a Program,
    pub env: &'a Env,
    /// The sandbox root (`Security.FileSystemSandboxPath` or the work dir).
    pub sandbox: PathBuf,
    pub session_id: String,
    pub change_log: PathBuf,
    /// The run's one confinement of the sandbox root, computed before the first turn.
    pub confinement: std::sync::Arc<crate::sandbox::Confinement>,
    /// The run's background jobs: every tool call shares the table; the jobs die with it.
    pub jobs: crate::tools::Jobs,
    /// What the tools remember during the run (file versions, summaries, agents' variables).
    pub run_state: crate::tools::RunState,
    /// The run's MCP servers: one call at a time per run (a fork's branches take turns).
    pub mcp: tokio::sync::Mutex<crate::mcp::McpServers>,
}

/// What running a turn's tool calls left.
pub(super) struct Ran {
    /// The same calls, with `result` and `ok` filled in.
    pub calls: Vec<ToolCall>,
    /// What the sub-agents among them spent on the run's models: tokens and cost.
    pub spent: (Usage, Spend),
    /// Their events in order (`mcp_tool_call`, a sub-agent's `sub_agent_*`).
    pub events: Vec<Event>,
}

impl Ran {
    /// The answer to the [`crate::effect::Request::Tools`] these calls came in:
    /// [`Response::Delegated`] when sub-agents spent tokens.
    pub(super) fn response(self) -> Response {
        let (usage, spend) = self.spent;
        if usage == Usage::default() && spend == Spend::default() {
            Response::Tools(self.calls)
        } else {
            Response::Delegated(self.calls, usage, spend)
        }
    }
}

/// Executes `call`, unless the run's journal kept its outcome from an earlier attempt.
pub(super) async fn execute_kept<M: Models>(
    models: &M,
    call: &mut ToolCall,
    tool: crate::tools::Tool,
    context: &crate::tools::ToolContext,
) {
    use crate::journal::{interrupted, restore_tool_outcome, Recalled, Repeat};
    let Some(journal) = models.journal() else {
        return crate::tools::execute_tool(call, tool, context).await;
    };
    use crate::journal::effects;
    // A tool in no permission category only reads: asking it again is safe. One that acts
    // is made at most once, except that a file tool keeps its own record of each call made
    // (`journal::effects`), so an interrupted one is known made or not, and left one result.
    let files = tool.category() == Some(fuseraft_compiler::ir::Category::FileWriteDelete);
    let repeat = match tool.category() {
        None => Repeat::Safe,
        Some(_) => Repeat::Once,
    };
    let (root, session, turn) = (&context.work_dir, &context.session_id, context.turn);
    match journal.recall("tool call", repeat).await {
        Recalled::Kept(text) if restore_tool_outcome(call, &text) => {}
        Recalled::Kept(_) => {
            make_recorded(call, tool, context, files).await;
        }
        // Asking again is safe.
        Recalled::Interrupted if repeat == Repeat::Safe => {
            make_recorded(call, tool, context, false).await;
        }
        Recalled::Interrupted if files => match effects::kept(root, session, turn, &call.id) {
            Some(text) if restore_tool_outcome(call, &text) => {}
            _ => {
                make_recorded(call, tool, context, files).await;
            }
        },
        Recalled::Interrupted => interrupted(call),
        Recalled::Make(keep) => keep(make_recorded(call, tool, context, files).await),
    }
}

/// Executes `call` and returns its outcome as a journal entry; a file tool's call is
/// recorded (`journal::effects`) the moment it returns.
async fn make_recorded(
    call: &mut ToolCall,
    tool: crate::tools::Tool,
    context: &crate::tools::ToolContext,
    files: bool,
) -> String {
    crate::tools::execute_tool(call, tool, context).await;
    let outcome = crate::journal::tool_outcome(call);
    if files {
        let (root, session) = (&context.work_dir, &context.session_id);
        crate::journal::effects::keep(root, session, context.turn, call, &outcome);
    }
    outcome
}

impl ToolRunner<'_> {
    /// Runs `calls` in order for `agent` in turn `turn`.
    pub(super) async fn run<M: Models>(
        &self,
        models: &M,
        agent: String,
        turn: u32,
        mut calls: Vec<ToolCall>,
    ) -> Ran {
        let program = self.program;
        let context = self.context(agent, turn);
        let agent_ir = program
            .agent_named(&context.agent)
            .map(|id| program.agent(id));
        let mut spent = (Usage::default(), Spend::default());
        let mut events = Vec::new();
        for call in &mut calls {
            // The call's name is resolved once, here; that tool is judged and run.
            let decision = {
                let servers = self.mcp.lock().await;
                decide(
                    call,
                    agent_ir,
                    program,
                    &context.work_dir,
                    servers.catalog(),
                )
            };
            match self.permit(decision, &context.agent).await {
                Err(denial) => denial.answer(call),
                Ok(ToolRef::Builtin(tool)) => match (SubAgentMode::of(tool), agent_ir) {
                    (Some(mode), Some(caller)) => {
                        let sub_agent = self.run_sub_agent(models, mode, call, caller, &context);
                        let (usage, spend) = sub_agent.await.into_events(&mut events);
                        spent.0.add(usage);
                        spent.1.add(spend);
                    }
                    _ => execute_kept(models, call, tool, &context).await,
                },
                Ok(ToolRef::Mcp(tool)) => {
                    events.push(self.call_mcp_tool_kept(models, call, &tool, &context).await);
                }
            }
        }
        Ran {
            calls,
            spent,
            events,
        }
    }

    /// What a tool call of `agent` in turn `turn` acts with.
    pub(super) fn context(&self, agent: String, turn: u32) -> crate::tools::ToolContext {
        let program = self.program;
        crate::tools::ToolContext {
            work_dir: self.sandbox.clone(),
            session_id: self.session_id.clone(),
            agent,
            turn,
            change_log: self.change_log.clone(),
            confinement: self.confinement.clone(),
            limits: super::limits(program),
            sandbox: crate::sandbox::Spec::new(program.security.sandbox, &program.permissions),
            jobs: self.jobs.clone(),
            run_state: self.run_state.clone(),
            http: crate::tools::http_policy::HttpPolicy::from_env(program),
        }
    }

    /// The tool a decision lets run, asking the operator when it says so; else the refusal.
    pub(super) async fn permit(&self, decision: Decision, agent: &str) -> Result<ToolRef, Denial> {
        match decision {
            Decision::Allow(tool) => Ok(tool),
            Decision::Block(reason) => Err(reason),
            Decision::Ask(tool, action) => {
                let approved = match &self.env.approvals {
                    Approvals::All => true,
                    Approvals::None => false,
                    Approvals::Ask(ask) => {
                        let question = crate::effect::Question::ToolCall;
                        super::ask_operator(ask, agent, &action, &question)
                            .await
                            .is_granted()
                    }
                };
                approved.then_some(tool).ok_or_else(|| {
                    Denial::new(
                        DenialKind::Permission,
                        format_args!("{action} was refused by the operator"),
                    )
                })
            }
        }
    }

    /// Runs an allowed MCP call, records it in the change log, and returns its event.
    /// Calls an MCP tool, unless the run's journal kept its outcome from an earlier
    /// attempt. An MCP tool is in a permission category (`mcp`): it may act, so a call an
    /// earlier attempt started and did not finish is not made again.
    async fn call_mcp_tool_kept<M: Models>(
        &self,
        models: &M,
        call: &mut ToolCall,
        tool: &fuseraft_compiler::ir::McpToolRef,
        context: &crate::tools::ToolContext,
    ) -> Event {
        use crate::journal::{interrupted, restore_tool_outcome, tool_outcome, Recalled, Repeat};
        let Some(journal) = models.journal() else {
            self.call_mcp_tool(call, tool, context).await;
            return self.mcp_event(call, tool, context);
        };
        match journal.recall("mcp call", Repeat::Once).await {
            Recalled::Kept(text) if restore_tool_outcome(call, &text) => {}
            Recalled::Kept(_) => self.call_mcp_tool(call, tool, context).await,
            Recalled::Interrupted => interrupted(call),
            Recalled::Make(keep) => {
                self.call_mcp_tool(call, tool, context).await;
                keep(tool_outcome(call));
            }
        }
        self.mcp_event(call, tool, context)
    }

    /// The `mcp_tool_call` event of a call made (or kept).
    fn mcp_event(
        &self,
        call: &ToolCall,
        tool: &fuseraft_compiler::ir::McpToolRef,
        context: &crate::tools::ToolContext,
    ) -> Event {
        Event::new(
            context.turn,
            Some(&context.agent),
            EventKind::McpToolCall {
                server: self.program.mcp_server(tool.server).name.clone(),
                tool: tool.tool.clone(),
                name: call.name.clone(),
                ok: call.ok,
            },
        )
    }

    async fn call_mcp_tool(
        &self,
        call: &mut ToolCall,
        tool: &fuseraft_compiler::ir::McpToolRef,
        context: &crate::tools::ToolContext,
    ) {
        let program = self.program;
        let (text, ok) = self
            .mcp
            .lock()
            .await
            .call(
                program,
                tool,
                &call.args,
                context.limits.shell_timeout,
                context.limits.output_cap,
            )
            .await;
        let server = &program.mcp_server(tool.server).name;
        let mut text = text;
        crate::tools::record_mcp_call(&mut text, context, server, &tool.tool, &call.args, ok);
        call.result = Some(text);
        call.ok = ok;
    }
}
