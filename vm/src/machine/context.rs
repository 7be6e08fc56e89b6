//! Assembling what a model sees: the system prompt, the history filtered by the agent's
//! (or state's) context policy, and the tools it is offered.

use fuseraft_compiler::ir::{ContextMode, StateId, StateKind, ToolChoice};

use super::{guide, window, Machine};
use crate::effect::{ChatMessage, ChatRole, CheckContext, ModelCall, ModelReply, ToolSchema};
use crate::history::{current_turn, Message, Role, ToolCall};
use std::sync::Arc;

/// The most characters of one message the history keeps and a prompt carries (issue 7): a
/// longer one keeps its head and tail around a marker. The session file keeps every message
/// whole; the history bounds a message once it is stored there (`Machine::bound_history`),
/// so the turn being routed and validated is read whole.
pub const MAX_MESSAGE_CHARS: usize = 32_000;

const MARKER_HEAD: &str = "\n[... ";
const MARKER_TAIL: &str =
    " characters omitted here; the full message is in the session file ...]\n";
/// The most characters a marker takes (its count has at most 20 digits).
const MARKER_ROOM: usize = MARKER_HEAD.len() + 20 + MARKER_TAIL.len();

/// `text`, or its head and tail around a marker when it is longer than `max` characters; the
/// result is at most `max` characters (for `max` above the marker's 100 or so), so bounding
/// again changes nothing. Cutting a text that already holds a marker (a bounded message with
/// a prefix, say) merges the two: the new marker counts every character the original
/// message lost.
pub fn bounded(text: String, max: usize) -> String {
    // At most one byte per character: short text needs no count.
    if text.len() <= max {
        return text;
    }
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let keep = max.saturating_sub(MARKER_ROOM) / 2;
    let offset = |chars: usize| {
        text.char_indices()
            .nth(chars)
            .map_or(text.len(), |(offset, _)| offset)
    };
    let head_end = offset(keep);
    let tail_start = offset(count - keep);
    let omitted = omitted_in(&text[head_end..tail_start]);
    format!(
        "{}{MARKER_HEAD}{omitted}{MARKER_TAIL}{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// How many characters of the original message `middle` stands for: its own, or, when it
/// holds a marker, its other characters plus those the marker counts.
fn omitted_in(middle: &str) -> usize {
    let chars = middle.chars().count();
    let Some(at) = middle.find(MARKER_HEAD) else {
        return chars;
    };
    let rest = &middle[at + MARKER_HEAD.len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest[..digits].parse::<usize>() {
        Ok(earlier) if rest[digits..].starts_with(MARKER_TAIL) => {
            let marker = MARKER_HEAD.len() + digits + MARKER_TAIL.len();
            (chars - marker).saturating_add(earlier)
        }
        _ => chars,
    }
}

/// `text` as a prompt carries it: shared with whoever holds it when it is within
/// [`MAX_MESSAGE_CHARS`] (a stored message always is), else cut.
fn shared(text: &Arc<str>) -> Arc<str> {
    if text.len() <= MAX_MESSAGE_CHARS || text.chars().count() <= MAX_MESSAGE_CHARS {
        Arc::clone(text)
    } else {
        bounded(text.to_string(), MAX_MESSAGE_CHARS).into()
    }
}

/// A message of `text`, shared (see [`shared`]).
fn shared_chat(role: ChatRole, text: &Arc<str>) -> ChatMessage {
    ChatMessage {
        role,
        content: shared(text),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn chat(role: ChatRole, content: String) -> ChatMessage {
    ChatMessage {
        role,
        content: bounded(content, MAX_MESSAGE_CHARS).into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

/// The assistant message a reply adds to the turn's own context.
pub(super) fn assistant_message(reply: &ModelReply) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Assistant,
        content: bounded(reply.text.clone(), MAX_MESSAGE_CHARS).into(),
        tool_calls: reply.tool_calls.clone(),
        tool_call_id: None,
    }
}

/// A tool result fed back to the model: `result` (the call's, or a cut of it) as the answer
/// to `call`.
pub(super) fn tool_message(call: &ToolCall, result: String) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Tool,
        content: result.into(),
        tool_calls: Vec::new(),
        tool_call_id: Some(call.id.clone()),
    }
}

/// `handoff` (for states routed by signals this agent may send) and `finish` (for tama
/// states), limited to what the agent may emit here.
fn routing_tools(
    program: &fuseraft_compiler::ir::Program,
    state: StateId,
    choices: &guide::Choices,
) -> Vec<ToolSchema> {
    let names: Vec<String> = if guide::has_signals(program, state) {
        vec!["Handoff".to_string()]
    } else if !choices.keys.is_empty() || choices.any_key || choices.tama {
        vec!["Finish".to_string()]
    } else {
        Vec::new()
    };
    guide::restrict(crate::tools::schemas(&names), choices)
}

/// The part of `agent_name`'s model call in `state_id` that depends on nothing else: its
/// instructions with the routing block, and the tools it is offered: its own, the routing
/// tools, then `mcp` (its MCP servers' tools).
fn fixed_prompt(
    program: &fuseraft_compiler::ir::Program,
    state_id: StateId,
    agent_name: &str,
    mcp: &[ToolSchema],
) -> guide::FixedPrompt {
    let agent = program.agent_named(agent_name).map(|id| program.agent(id));
    let mut system = agent.map_or_else(String::new, |agent| agent.instructions.clone());
    if program
        .state(state_id)
        .step
        .as_ref()
        .is_some_and(|step| !step.react)
    {
        // A oneshot tama step: one call, no tools, its reply the value.
        return guide::FixedPrompt {
            system: system.into(),
            tools: Vec::new().into(),
            reply_fields: Vec::new().into(),
        };
    }
    let choices = guide::choices(program, state_id, agent_name);
    let tool_choice = agent.map_or(ToolChoice::Auto, |agent| agent.tool_choice);
    if program.routing_instructions {
        if let Some(block) = guide::block(&choices, tool_choice) {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&block);
        }
    }
    // Only the tools the agent's plugins and capabilities allow are offered.
    let tools = agent.map_or_else(Vec::new, |agent| {
        crate::tools::schemas(&agent.tools)
            .into_iter()
            .filter(|tool| {
                crate::tools::permissions::offered(&tool.name, &agent.tools, &agent.capabilities)
            })
            .collect()
    });
    // The agent's own routing plugins are limited like the ones routing adds.
    let mut tools = guide::restrict(tools, &choices);
    for tool in routing_tools(program, state_id, &choices)
        .into_iter()
        .chain(mcp.iter().cloned())
    {
        if !tools.iter().any(|known| known.name == tool.name) {
            tools.push(tool);
        }
    }
    guide::FixedPrompt {
        system: system.into(),
        tools: tools.into(),
        reply_fields: choices.fields.into(),
    }
}

impl Machine<'_> {
    /// The MCP servers' tools each agent is offered, one list per agent in program order,
    /// known once the driver started the servers and before the first model call. An
    /// agent's own turns offer them after its built-in and routing tools; a manager, a
    /// compaction and a sub-agent get none.
    pub fn offer_mcp_tools(&mut self, per_agent: Vec<Vec<ToolSchema>>) {
        self.mcp_tools = per_agent;
    }

    /// `agent_name`'s `ContextWindow.MaxToolResultChars` and `ToolResultCharOverrides`.
    pub(super) fn tool_result_cap(&self, agent_name: &str) -> window::ResultCaps {
        self.program
            .agent_named(agent_name)
            .map_or_else(window::ResultCaps::default, |id| {
                window::ResultCaps::of(&self.program.agent(id).context)
            })
    }

    /// The model call for `agent` running in the current state.
    pub(super) fn model_call(&self, agent_name: &str) -> ModelCall {
        self.call_for(agent_name, self.run.state, &self.run.history)
    }

    fn call_for(&self, agent_name: &str, state_id: StateId, history: &[Message]) -> ModelCall {
        let program = self.program;
        let agent = program.agent_named(agent_name).map(|id| program.agent(id));
        if self.options.skip_prompts {
            return ModelCall {
                agent: crate::effect::Caller::Agent(agent_name.to_string()),
                model: agent.and_then(|agent| agent.model.clone()).map(Box::new),
                messages: Vec::new(),
                tools: Vec::new().into(),
                turn: self.run.turn,
                reply_fields: Default::default(),
            };
        }
        let state = program.state(state_id);
        let fixed = self.prompts.get(state_id, agent_name, || {
            let mcp = program
                .agent_named(agent_name)
                .and_then(|id| self.mcp_tools.get(id.0 as usize));
            fixed_prompt(
                program,
                state_id,
                agent_name,
                mcp.map_or(&[], Vec::as_slice),
            )
        });
        // The system prompt, the task, the session context and the history, usually.
        let mut messages = Vec::with_capacity(history.len() + 3);
        if !fixed.system.is_empty() {
            messages.push(shared_chat(ChatRole::System, &fixed.system));
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
                    .map_or(self.run.task.clone(), |message| message.content.to_string());
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
                // The agent's own `Context` sources, assembled for this turn; without any,
                // the session context, as upstream shows it.
                if let Some((_, blocks)) = self
                    .assembled
                    .as_ref()
                    .filter(|(agent, _)| agent == agent_name)
                {
                    for block in blocks {
                        messages.push(chat(ChatRole::User, block.clone()));
                    }
                } else if let Some(summary) = self
                    .session_context_message()
                    .filter(|_| agent.is_none_or(|agent| agent.context.sources.is_empty()))
                {
                    messages.push(chat(ChatRole::User, summary));
                }
                // The handoff marker and context blocks injected for this agent, if any.
                if let Some(start) = history
                    .iter()
                    .rposition(|message| message.role == Role::Assistant)
                {
                    for message in &history[start + 1..] {
                        messages.push(shared_chat(ChatRole::User, &message.content));
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
                let max_age = context.map_or(0, |c| c.max_turn_age);
                // The replayed history, pushed straight into the prompt from `base` on.
                let base = messages.len();
                let mut views = self.views.prompt();
                for (index, message) in self.compacted_view(history).enumerate() {
                    // `MaxTurnAge`: the task is kept however old it is.
                    if index > 0 && !window::within_turn_age(message.turn, self.run.turn, max_age) {
                        continue;
                    }
                    match message.role {
                        Role::User => messages.push(shared_chat(ChatRole::User, &message.content)),
                        Role::Assistant if excluded(&message.agent) => {}
                        Role::Assistant if message.agent == agent_name => {
                            // With its tool calls summarised, the message is sent whole.
                            messages.push(if text_only {
                                shared_chat(ChatRole::Assistant, &message.content)
                            } else {
                                ChatMessage {
                                    role: ChatRole::Assistant,
                                    content: if message.tool_calls.is_empty() {
                                        Arc::clone(&message.content)
                                    } else {
                                        with_tool_summary(&message).into()
                                    },
                                    tool_calls: Vec::new(),
                                    tool_call_id: None,
                                }
                            });
                        }
                        Role::Assistant if text_only || message.tool_calls.is_empty() => {
                            // The same view every later prompt carries: built once.
                            let view = views.view(&message.agent, &message.content, || {
                                bounded(attributed(&message, true), MAX_MESSAGE_CHARS)
                            });
                            messages.push(ChatMessage {
                                role: ChatRole::User,
                                content: view,
                                tool_calls: Vec::new(),
                                tool_call_id: None,
                            });
                        }
                        Role::Assistant => {
                            messages.push(chat(ChatRole::User, attributed(&message, text_only)));
                        }
                    }
                }
                let tail = context.map_or(0, |c| c.max_tail as usize);
                let shown = messages.len() - base;
                if tail > 0 && shown > tail {
                    // Keep the task, then the newest messages.
                    messages.drain(base + 1..base + 1 + (shown - tail));
                }
                let max_chars = context.map_or(0, |c| c.max_replay_chars as usize);
                window::cap_replay_chars(&mut messages, base, max_chars);
                // The session context, right after the task (upstream).
                if let Some(summary) = self.session_context_message() {
                    let at = base + 1.min(messages.len() - base);
                    messages.insert(at, chat(ChatRole::User, summary));
                }
            }
        }
        ModelCall {
            agent: crate::effect::Caller::Agent(agent_name.to_string()),
            model: agent.and_then(|agent| agent.model.clone()).map(Box::new),
            messages,
            tools: fixed.tools.clone(),
            turn: self.run.turn,
            reply_fields: fixed.reply_fields.clone(),
        }
    }

    /// The history a request carries: the task, then, after a compaction, its summary in
    /// place of the messages it covers, then the rest verbatim.
    fn compacted_view<'h>(
        &self,
        history: &'h [Message],
    ) -> impl Iterator<Item = std::borrow::Cow<'h, Message>> + 'h {
        let skip = self.first_verbatim().clamp(1, history.len().max(1));
        let summary = self.run.compaction.as_ref().and_then(|compacted| {
            let text = compacted.message()?;
            Some(std::borrow::Cow::Owned(Message::user(
                "system",
                text,
                compacted.turn,
            )))
        });
        let (head, rest) = history.split_at(1.min(history.len()));
        let tail = rest.get(skip - 1..).unwrap_or_default();
        head.iter()
            .map(std::borrow::Cow::Borrowed)
            .chain(summary)
            .chain(tail.iter().map(std::borrow::Cow::Borrowed))
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
                agent: crate::effect::Caller::Manager,
                model: None,
                messages: Vec::new(),
                tools: Vec::new().into(),
                turn: self.run.turn,
                reply_fields: Default::default(),
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
        // Upstream's `LlmAgentSelector`: a prompt with its placeholders is the whole call,
        // one user message with the agents and the recent history filled in.
        if let Some(template) = prompt.as_deref().filter(|text| has_placeholders(text)) {
            let filled = fill_placeholders(template, &candidates, &self.run.history);
            return ModelCall {
                agent: crate::effect::Caller::Manager,
                model: model.map(Box::new),
                messages: vec![chat(ChatRole::User, filled)],
                tools: Vec::new().into(),
                turn: self.run.turn,
                reply_fields: Default::default(),
            };
        }
        let mut system = prompt.unwrap_or_else(|| {
            "You coordinate a team. Reply with the name of the agent who should act next, and nothing else.".to_string()
        });
        system.push_str(&format!("\nAgents: {}", candidates.join(", ")));
        let mut messages = vec![chat(ChatRole::System, system)];
        for message in self.compacted_view(&self.run.history) {
            let content = match message.role {
                Role::User => message.content.to_string(),
                Role::Assistant => format!("[{}]: {}", message.agent, message.content),
            };
            messages.push(chat(ChatRole::User, content));
        }
        ModelCall {
            agent: crate::effect::Caller::Manager,
            model: model.map(Box::new),
            messages,
            tools: Vec::new().into(),
            turn: self.run.turn,
            reply_fields: Default::default(),
        }
    }

    /// What validators read: the current turn's messages and the run settings.
    pub(super) fn check_context(&self) -> CheckContext {
        CheckContext {
            turn_messages: current_turn(&self.run.history).to_vec(),
            validation: self.program.validation.clone(),
            sandbox: self.program.security.sandbox,
            permissions: self.program.permissions.clone(),
            session_id: self.run.session_id.clone(),
            turn: self.run.turn.saturating_sub(1),
        }
    }
}

/// The `llm` selection prompt's placeholders (upstream's `LlmAgentSelector`).
const AGENTS_PLACEHOLDER: &str = "{{$agents}}";
const HISTORY_PLACEHOLDER: &str = "{{$history}}";
/// How many of the newest messages `{{$history}}` looks at.
const SELECT_HISTORY: usize = 20;

fn has_placeholders(prompt: &str) -> bool {
    prompt.contains(AGENTS_PLACEHOLDER) || prompt.contains(HISTORY_PLACEHOLDER)
}

/// `{{$agents}}`: the agent names, comma-separated; `{{$history}}`: of the newest 20
/// messages those with text, one `author: text` line each.
fn fill_placeholders(template: &str, agents: &[String], history: &[Message]) -> String {
    let start = history.len().saturating_sub(SELECT_HISTORY);
    let lines: Vec<String> = history[start..]
        .iter()
        .filter(|message| !message.content.is_empty())
        .map(|message| format!("{}: {}", message.agent, message.content))
        .collect();
    template
        .replace(AGENTS_PLACEHOLDER, &agents.join(", "))
        .replace(HISTORY_PLACEHOLDER, &lines.join("\n"))
}

/// Another agent's message as an agent sees it: `[Agent]: text`, with its tool calls
/// summarised unless `text_only`; one allocation.
fn attributed(message: &Message, text_only: bool) -> String {
    let mut text = String::with_capacity(message.agent.len() + 4 + message.content.len());
    text.push('[');
    text.push_str(&message.agent);
    text.push_str("]: ");
    if text_only || message.tool_calls.is_empty() {
        text.push_str(&message.content);
    } else {
        text.push_str(&with_tool_summary(message));
    }
    text
}

/// An assistant message with its tool calls summarised (`[called write_file path=...]`).
pub(super) fn with_tool_summary(message: &Message) -> String {
    let mut text = message.content.to_string();
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
        let long = format!("{}{}", "a".repeat(500), "b".repeat(500));
        let cut = bounded(long, 300);
        assert!(cut.chars().count() <= 300, "{cut}");
        let keep = (300 - MARKER_ROOM) / 2;
        assert!(
            cut.starts_with(&format!(
                "{}\n[... {} characters omitted",
                "a".repeat(keep),
                1000 - 2 * keep
            )),
            "{cut}"
        );
        assert!(cut.ends_with(&format!("\n{}", "b".repeat(keep))), "{cut}");
        // Bounding again changes nothing.
        assert_eq!(bounded(cut.clone(), 300), cut);
        // Multi-byte text is cut on character boundaries.
        let emoji = "🦀".repeat(1000);
        let cut = bounded(emoji, 300);
        assert!(
            cut.starts_with(&format!("{}\n", "🦀".repeat(keep))),
            "{cut}"
        );
    }

    #[test]
    fn a_structured_state_asks_each_agent_for_the_fields_its_routes_read() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/run/structured/config.yaml");
        let text = std::fs::read_to_string(&path).expect("the fixture");
        let files = fuseraft_compiler::MemoryFiles::new().with("config.yaml", text);
        let compiled = fuseraft_compiler::compile(std::path::Path::new("config.yaml"), &files);
        let program = compiled.program.expect("the fixture compiles");
        let fields = |agent: &str| -> Vec<String> {
            let mut fields: Vec<String> = program
                .state_ids()
                .flat_map(|state| {
                    fixed_prompt(&program, state, agent, &[])
                        .reply_fields
                        .to_vec()
                })
                .collect();
            fields.dedup();
            fields
        };
        // Each route reads its source agent's reply; the publisher's is free text.
        assert_eq!(fields("Writer"), ["content"]);
        assert_eq!(fields("Editor"), ["verdict"]);
        assert!(fields("Publisher").is_empty());
    }

    #[test]
    fn an_agents_mcp_tools_follow_its_own_in_its_model_calls() {
        let config = "Orchestration:\n  Name: T\n  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Plugins: [FileSystem]\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: DONE, Agent: Worker, SourceAgents: [Worker] }\n";
        let files = fuseraft_compiler::MemoryFiles::new().with("config.yaml", config);
        let compiled = fuseraft_compiler::compile(std::path::Path::new("config.yaml"), &files);
        let program = compiled.program.expect("the config compiles");
        let options = crate::machine::Options {
            task: "t".into(),
            ..Default::default()
        };
        let mut machine = Machine::new(&program, options);
        let search = ToolSchema {
            name: "docs__search".into(),
            description: "Search the docs.".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        machine.offer_mcp_tools(vec![vec![search.clone()]]);
        let crate::effect::Request::Model(call) = machine.step() else {
            panic!("the first step is the agent's model call")
        };
        let names: Vec<&str> = call.tools.iter().map(|tool| tool.name.as_str()).collect();
        assert!(names.contains(&"read_file"), "its own tools: {names:?}");
        assert_eq!(call.tools.last(), Some(&search), "{names:?}");
    }

    #[test]
    fn cutting_a_bounded_message_again_keeps_the_count_true() {
        let message = "x".repeat(100_000);
        let stored = bounded(message, MAX_MESSAGE_CHARS);
        assert!(stored.chars().count() <= MAX_MESSAGE_CHARS);
        // A prompt adds a prefix and cuts again: one marker, counting what the message lost.
        let prompt = bounded(format!("[Developer]: {stored}"), MAX_MESSAGE_CHARS);
        assert_eq!(prompt.matches("characters omitted").count(), 1, "{prompt}");
        let kept = prompt.chars().filter(|c| *c == 'x').count();
        let said: usize = prompt
            .split("[... ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|count| count.parse().ok())
            .expect("a count");
        assert!(prompt.starts_with("[Developer]: xxx"), "{prompt}");
        assert_eq!(kept + said, 100_000);
    }
}
