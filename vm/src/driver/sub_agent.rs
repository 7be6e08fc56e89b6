//! Running a sub-agent for a `sub_agent_explore` or `sub_agent_locate` call: the pure
//! [`SubAgent`] loop stepped with the run's model provider (its replies come from the queue
//! `<agent>/sub_agent`) and its calls judged by the permission authority as the sub-agent's
//! (`permissions::decide_for_sub_agent`: the caller's read tools only), run in the same
//! sandbox. Its events go out with the turn's (a fork branch's among the branch's own); its
//! usage is the caller's turn's.

use fuseraft_compiler::ir::{sub_agent_tools, Agent, SubAgentMode};

use super::tool_calls::ToolRunner;
use super::Models;
use crate::effect::{Request, Response};
use crate::event::Event;
use crate::history::{Denial, DenialKind, Spend, ToolCall, Usage};
use crate::machine::SubAgent;
use crate::tools::permissions::{decide_for_sub_agent, ToolRef};
use crate::tools::ToolContext;

/// What a sub-agent left besides its answer.
#[derive(Default)]
pub(super) struct Delegation {
    usage: Usage,
    spend: Spend,
    events: Vec<Event>,
}

impl Delegation {
    /// Its events, moved to `events`; its usage and cost.
    pub(super) fn into_events(self, events: &mut Vec<Event>) -> (Usage, Spend) {
        events.extend(self.events);
        (self.usage, self.spend)
    }
}

impl ToolRunner<'_> {
    /// Answers `call` with the answer of `caller`'s sub-agent in `mode`.
    pub(super) async fn run_sub_agent<M: Models>(
        &self,
        models: &M,
        mode: SubAgentMode,
        call: &mut ToolCall,
        caller: &Agent,
        context: &ToolContext,
    ) -> Delegation {
        let schemas = crate::tools::schemas_of(&sub_agent_tools(caller));
        let mut sub_agent = match SubAgent::start(caller, mode, call, context.turn, schemas) {
            Ok(sub_agent) => sub_agent,
            Err(reason) => {
                call.result = Some(reason);
                call.ok = false;
                return Delegation::default();
            }
        };
        let mut events = Vec::new();
        loop {
            let response = match sub_agent.step() {
                Request::Model(model_call) => Response::Model(models.call(&model_call).await),
                Request::Tools { calls, .. } => {
                    Response::Tools(self.run_for_sub_agent(models, caller, context, calls).await)
                }
                _ => break,
            };
            sub_agent.resume(response);
            events.extend(sub_agent.drain_events());
        }
        events.extend(sub_agent.drain_events());
        let done = sub_agent.finish();
        call.result = Some(done.result);
        call.ok = done.ok;
        Delegation {
            usage: done.usage,
            spend: done.spend,
            events,
        }
    }

    /// Runs a sub-agent's calls in order, each judged as the sub-agent's.
    async fn run_for_sub_agent<M: Models>(
        &self,
        models: &M,
        caller: &Agent,
        context: &ToolContext,
        mut calls: Vec<ToolCall>,
    ) -> Vec<ToolCall> {
        for call in &mut calls {
            let decision = {
                let servers = self.mcp.lock().await;
                decide_for_sub_agent(
                    call,
                    caller,
                    self.program,
                    &context.work_dir,
                    servers.catalog(),
                )
            };
            match self.permit(decision, &context.agent).await {
                Ok(ToolRef::Builtin(tool)) if SubAgentMode::of(tool).is_none() => {
                    super::tool_calls::execute_kept(models, call, tool, context).await
                }
                // Never allowed by `decide_for_sub_agent`; refused all the same.
                Ok(_) => Denial::new(
                    DenialKind::SubAgent,
                    format_args!("`{}` is not a sub-agent's tool", call.name),
                )
                .answer(call),
                Err(denial) => denial.answer(call),
            }
        }
        calls
    }
}
