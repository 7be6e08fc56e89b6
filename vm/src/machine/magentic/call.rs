//! What the magentic manager is sent at each step: its system prompt, its own orientation
//! exchange (the facts and the plan it wrote), and the step's question.

use fuseraft_compiler::ir::StateKind;

use super::{prompts, Step};
use crate::effect::{ChatMessage, ChatRole, ModelCall};
use crate::machine::Machine;

fn message(role: ChatRole, content: String) -> ChatMessage {
    ChatMessage {
        role,
        content: crate::machine::bounded(content, crate::machine::MAX_MESSAGE_CHARS).into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

impl Machine<'_> {
    /// The manager's messages for `step`: its system prompt, its own orientation exchange,
    /// and the question of the step (with the correction after an unusable ledger).
    pub(super) fn manager_call(&self, step: Step) -> ModelCall {
        let select = match &self.program.state(self.run.state).kind {
            StateKind::Select(select) => Some(select),
            _ => None,
        };
        let model = select.and_then(|select| select.manager.clone());
        let mut call = ModelCall {
            agent: crate::effect::Caller::Manager,
            model: model.map(Box::new),
            messages: Vec::new(),
            tools: Vec::new().into(),
            turn: self.run.turn,
            reply_fields: Default::default(),
        };
        if self.options.skip_prompts {
            return call;
        }
        let ledger = self.run.magentic.clone().unwrap_or_default();
        let names: Vec<String> = self.team().into_iter().map(|(_, name)| name).collect();
        let team = prompts::team(self.program, &names);
        let system = select
            .and_then(|select| select.prompt.clone())
            .unwrap_or_else(|| prompts::DEFAULT_SYSTEM.to_string());
        let facts_prompt = prompts::facts(&self.run.task, &team);
        let conversation = || prompts::conversation(&self.run.history);
        let facts = ledger.facts.clone().unwrap_or_default();
        let plan = ledger.plan.clone().unwrap_or_default();
        let mut messages = vec![
            message(ChatRole::System, system),
            message(ChatRole::User, facts_prompt),
        ];
        if step != Step::Facts {
            messages.push(message(ChatRole::Assistant, facts));
        }
        let oriented = !matches!(step, Step::Facts | Step::Plan | Step::ReplanPlan);
        if step == Step::Plan || oriented {
            messages.push(message(ChatRole::User, prompts::plan(&team)));
        }
        if oriented {
            messages.push(message(ChatRole::Assistant, plan.clone()));
        }
        let question = match step {
            Step::Facts | Step::Plan | Step::Review => None,
            Step::Revise => Some(prompts::revise(ledger.feedback.as_deref().unwrap_or(""))),
            Step::Ledger => Some(prompts::ledger(&plan, &conversation(), &names.join(", "))),
            Step::ReplanFacts => Some(prompts::replan_facts(&conversation())),
            Step::ReplanPlan => Some(prompts::replan_plan(&plan, &team)),
            Step::Final => Some(prompts::final_answer(&conversation())),
        };
        messages.extend(question.map(|text| message(ChatRole::User, text)));
        if let (Step::Ledger, Some((reply, correction))) = (step, &ledger.retry) {
            messages.push(message(ChatRole::Assistant, reply.clone()));
            messages.push(message(ChatRole::User, correction.clone()));
        }
        call.messages = messages;
        call
    }
}
