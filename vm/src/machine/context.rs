//! Assembling what a model sees: the system prompt, the history filtered by the agent's
//! (or state's) context policy, and the tools it is offered.

use fuseraft_compiler::ir::{ContextMode, StateId, StateKind, Trigger};

use super::Machine;
use crate::effect::{ChatMessage, ChatRole, CheckContext, ModelCall, ModelReply, ToolSchema};
use crate::history::{current_turn, Message, Role, ToolCall};

/// The most of one history message a prompt carries. The history (and so the session file)
/// keeps every reply whole; a model sees the head and tail of a longer one.
pub const MAX_MESSAGE_CHARS: usize = 32_000;

/// `text`, or its head and tail around a marker when it is longer than `max` characters.
pub fn bounded(text: String, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!(
        "{head}\n[... {} characters omitted here; the full message is in the session file ...]\n{tail}",
        count - 2 * half
    )
}

fn chat(role: ChatRole, content: String) -> ChatMessage {
    ChatMessage {
        role,
        content: bounded(content, MAX_MESSAGE_CHARS),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

/// The assistant message a reply adds to the turn's own context.
pub(super) fn assistant_message(reply: &ModelReply) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Assistant,
        content: reply.text.clone(),
        tool_calls: reply.tool_calls.clone(),
        tool_call_id: None,
    }
}

/// A tool result fed back to the model.
pub(super) fn tool_message(call: &ToolCall) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Tool,
        content: call.result.clone().unwrap_or_default(),
        tool_calls: Vec::new(),
        tool_call_id: Some(call.id.clone()),
    }
}

/// `handoff` (for states routed by signals) and `finish` (for tama states).
fn routing_tools(program: &fuseraft_compiler::ir::Program, state: StateId) -> Vec<ToolSchema> {
    let state = program.state(state);
    let mut tools = Vec::new();
    let signals = state
        .exits
        .iter()
        .any(|exit| matches!(exit.trigger, Trigger::Signal { .. }));
    let keys = state
        .exits
        .iter()
        .any(|exit| matches!(exit.trigger, Trigger::FinishKey(_) | Trigger::AnyKey));
    let names: Vec<String> = if signals {
        vec!["Handoff".to_string()]
    } else if keys || program.origin == fuseraft_compiler::ir::Origin::Tama {
        vec!["Finish".to_string()]
    } else {
        Vec::new()
    };
    tools.extend(crate::tools::schemas(&names));
    tools
}

impl Machine<'_> {
    /// The model call for `agent` running in the current state.
    pub(super) fn model_call(&self, agent_name: &str) -> ModelCall {
        self.call_for(agent_name, self.run.state, &self.run.history)
    }

    fn call_for(&self, agent_name: &str, state_id: StateId, history: &[Message]) -> ModelCall {
        let program = self.program;
        let agent = program.agent_named(agent_name).map(|id| program.agent(id));
        if self.options.skip_prompts {
            return ModelCall {
                agent: agent_name.to_string(),
                model: agent.and_then(|agent| agent.model.clone()),
                messages: Vec::new(),
                tools: Vec::new(),
                turn: self.run.turn,
            };
        }
        let state = program.state(state_id);
        let mut messages = Vec::new();
        if let Some(agent) = agent {
            if !agent.instructions.is_empty() {
                messages.push(chat(ChatRole::System, agent.instructions.clone()));
            }
        }
        let mode = state
            .context
            .or(agent.map(|agent| agent.context.mode))
            .unwrap_or(ContextMode::Shared);
        match mode {
            ContextMode::Firewall => {
                // Only the artifact under review: the newest reply by another agent.
                let artifact = history
                    .iter()
                    .rev()
                    .find(|message| message.role == Role::Assistant && message.agent != agent_name)
                    .map_or(self.run.task.clone(), |message| message.content.clone());
                messages.push(chat(ChatRole::User, artifact));
            }
            ContextMode::Value => {
                let value = self
                    .run
                    .value
                    .clone()
                    .unwrap_or_else(|| self.run.task.clone());
                messages.push(chat(ChatRole::User, value));
            }
            ContextMode::Artifacts => {
                messages.push(chat(ChatRole::User, self.run.task.clone()));
                // The handoff marker and context blocks injected for this agent, if any.
                if let Some(start) = history
                    .iter()
                    .rposition(|message| message.role == Role::Assistant)
                {
                    for message in &history[start + 1..] {
                        messages.push(chat(ChatRole::User, message.content.clone()));
                    }
                }
            }
            ContextMode::Shared => {
                let context = agent.map(|agent| &agent.context);
                let excluded = |name: &str| {
                    context.is_some_and(|c| {
                        c.exclude_agents
                            .iter()
                            .any(|ex| ex.eq_ignore_ascii_case(name))
                    })
                };
                let text_only = context.is_some_and(|c| c.text_only);
                let mut shown: Vec<ChatMessage> = Vec::new();
                for message in history {
                    match message.role {
                        Role::User => shown.push(chat(ChatRole::User, message.content.clone())),
                        Role::Assistant if excluded(&message.agent) => {}
                        Role::Assistant if message.agent == agent_name => {
                            let mut own = chat(ChatRole::Assistant, message.content.clone());
                            if !text_only {
                                own.content = with_tool_summary(message);
                            }
                            shown.push(own);
                        }
                        Role::Assistant => {
                            let content = if text_only {
                                message.content.clone()
                            } else {
                                with_tool_summary(message)
                            };
                            shown.push(chat(
                                ChatRole::User,
                                format!("[{}]: {}", message.agent, content),
                            ));
                        }
                    }
                }
                let tail = context.map_or(0, |c| c.max_tail as usize);
                if tail > 0 && shown.len() > tail {
                    // Keep the task, then the newest messages.
                    let task = shown.remove(0);
                    let drop = shown.len() - (tail - 1).min(shown.len());
                    shown.drain(..drop);
                    shown.insert(0, task);
                }
                messages.extend(shown);
            }
        }
        // Only the tools the agent's plugins and capabilities allow are offered.
        let mut tools = agent.map_or_else(Vec::new, |agent| {
            crate::tools::schemas(&agent.tools)
                .into_iter()
                .filter(|tool| {
                    crate::tools::permissions::offered(
                        &tool.name,
                        &agent.tools,
                        &agent.capabilities,
                    )
                })
                .collect()
        });
        for tool in routing_tools(program, state_id) {
            if !tools.iter().any(|known| known.name == tool.name) {
                tools.push(tool);
            }
        }
        ModelCall {
            agent: agent_name.to_string(),
            model: agent.and_then(|agent| agent.model.clone()),
            messages,
            tools,
            turn: self.run.turn,
        }
    }

    /// A fork branch: the branch state's agent on a snapshot of the history.
    pub(super) fn branch_call(&self, branch: StateId) -> Option<ModelCall> {
        let agent = self.program.state(branch).agent?;
        let name = self.program.agent(agent).name.clone();
        Some(self.call_for(&name, branch, &self.run.history))
    }

    /// The manager's call in a `select` state: the candidates and the conversation so far.
    pub(super) fn select_call(&self) -> ModelCall {
        let state = self.program.state(self.run.state);
        if self.options.skip_prompts {
            return ModelCall {
                agent: "manager".to_string(),
                model: None,
                messages: Vec::new(),
                tools: Vec::new(),
                turn: self.run.turn,
            };
        }
        let candidates: Vec<String> = state
            .exits
            .iter()
            .filter_map(|exit| match exit.target {
                fuseraft_compiler::ir::Target::State(id) => self
                    .program
                    .state(id)
                    .agent
                    .map(|a| self.program.agent(a).name.clone()),
                fuseraft_compiler::ir::Target::End => None,
            })
            .collect();
        let (prompt, model) = match &state.kind {
            StateKind::Select(select) => (select.prompt.clone(), select.manager.clone()),
            _ => (None, None),
        };
        let mut system = prompt.unwrap_or_else(|| {
            "You coordinate a team. Reply with the name of the agent who should act next, and nothing else.".to_string()
        });
        system.push_str(&format!("\nAgents: {}", candidates.join(", ")));
        let mut messages = vec![chat(ChatRole::System, system)];
        for message in &self.run.history {
            let content = match message.role {
                Role::User => message.content.clone(),
                Role::Assistant => format!("[{}]: {}", message.agent, message.content),
            };
            messages.push(chat(ChatRole::User, content));
        }
        ModelCall {
            agent: "manager".to_string(),
            model,
            messages,
            tools: Vec::new(),
            turn: self.run.turn,
        }
    }

    /// What validators read: the current turn's messages and the run settings.
    pub(super) fn check_context(&self) -> CheckContext {
        CheckContext {
            turn_messages: current_turn(&self.run.history).to_vec(),
            settings: self.program.settings.clone(),
            session_id: self.run.session_id.clone(),
            turn: self.run.turn.saturating_sub(1),
        }
    }
}

/// An assistant message with its tool calls summarised (`[called write_file path=...]`).
fn with_tool_summary(message: &Message) -> String {
    if message.tool_calls.is_empty() {
        return message.content.clone();
    }
    let mut text = message.content.clone();
    for call in &message.tool_calls {
        let args: Vec<String> = call
            .args
            .as_object()
            .map(|object| {
                object
                    .iter()
                    .filter_map(|(key, value)| {
                        value
                            .as_str()
                            .map(|v| format!("{key}={}", v.chars().take(80).collect::<String>()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[called {} {}]", call.name, args.join(" ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_keep_head_and_tail() {
        assert_eq!(bounded("short".into(), 10), "short");
        let long = format!("{}{}", "a".repeat(50), "b".repeat(50));
        let cut = bounded(long, 20);
        assert!(
            cut.starts_with("aaaaaaaaaa\n[... 80 characters omitted"),
            "{cut}"
        );
        assert!(cut.ends_with("\nbbbbbbbbbb"), "{cut}");
        // Multi-byte text is cut on character boundaries.
        let emoji = "🦀".repeat(100);
        assert!(bounded(emoji, 10).starts_with("🦀🦀🦀🦀🦀\n"));
    }
}
