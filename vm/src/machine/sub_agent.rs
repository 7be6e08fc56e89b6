//! A sub-agent (`sub_agent_explore`, `sub_agent_locate`): an isolated tool loop started by one
//! tool call of a turn, on a conversation of its own (a short system prompt and the caller's
//! question), with its own cap of tool calls and the caller's read tools only
//! (`ir::sub_agent_tools`). It ends with one bounded answer, which becomes the result of the
//! call that started it; its conversation never enters the run's history.
//!
//! Pure like the machine: [`SubAgent::step`] says what it needs ([`Request::Model`] for the
//! queue `<agent>/sub_agent`, [`Request::Tools`] for its calls, [`Request::Done`]),
//! [`SubAgent::resume`] takes the answer. The driver steps it inside the caller's tool
//! calls, judging each of its calls by the permission authority as a sub-agent's.

use fuseraft_compiler::ir::{sub_agent_tools, Agent, SubAgentMode};
use serde_json::Value as Json;
use std::sync::Arc;

use super::context::{assistant_message, tool_message};
use crate::effect::{ChatMessage, ChatRole, ModelCall, Request, Response, ToolSchema};
use crate::event::{Event, EventKind};
use crate::history::{Spend, ToolCall, Usage};

pub use crate::effect::QUEUE_SUFFIX;

/// The most characters of a sub-agent's answer fed back to its caller.
pub const MAX_ANSWER_CHARS: usize = 8_000;

/// How a sub-agent ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Ending {
    /// It answered.
    Answered,
    /// It used its tool calls and answered nothing after being told to.
    CapReached,
    /// A reply with neither text nor a tool call.
    NoAnswer,
    /// Its model failed.
    Failed,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Answered => "completed",
            Ending::CapReached => "cap_reached",
            Ending::NoAnswer => "no_answer",
            Ending::Failed => "error",
        }
    }
}

/// What a sub-agent left: the result of the call that started it.
#[derive(Clone, Debug, PartialEq)]
pub struct SubAgentDone {
    pub result: String,
    pub ok: bool,
    /// Its model calls' usage and cost, counted toward the run's budgets.
    pub usage: Usage,
    pub spend: Spend,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Waiting {
    Model,
    Tools,
    Done,
}

/// One sub-agent in progress.
#[derive(Clone, Debug)]
pub struct SubAgent {
    caller: String,
    mode: SubAgentMode,
    turn: u32,
    cap: u32,
    call: ModelCall,
    /// Tool calls made so far (against `cap`).
    used: u32,
    usage: Usage,
    spend: Spend,
    waiting: Waiting,
    next: Option<Request>,
    done: Option<(String, bool, Ending)>,
    events: Vec<Event>,
}

impl SubAgent {
    /// Starts `caller`'s sub-agent for the call `call` (a `sub_agent_*` tool, `mode`) in turn
    /// `turn`; `schemas` are the schemas of `ir::sub_agent_tools(caller)`. Bad arguments
    /// are the call's result, and no sub-agent starts.
    pub fn start(
        caller: &Agent,
        mode: SubAgentMode,
        call: &ToolCall,
        turn: u32,
        schemas: Vec<ToolSchema>,
    ) -> Result<SubAgent, String> {
        let (task, format) = task_of(mode, call)?;
        let cap = mode.cap(&caller.sub_agent);
        let names: Vec<String> = sub_agent_tools(caller)
            .iter()
            .map(|tool| format!("`{tool}`"))
            .collect();
        let system = system_prompt(mode, &caller.name, &names, cap, format);
        let model_call = ModelCall {
            agent: crate::effect::Caller::SubAgent(caller.name.clone()),
            model: caller
                .sub_agent
                .model
                .clone()
                .or_else(|| caller.model.clone())
                .map(Box::new),
            messages: vec![
                message(ChatRole::System, system),
                message(ChatRole::User, task.clone()),
            ],
            tools: schemas.into(),
            turn,
            reply_fields: Default::default(),
        };
        let mut sub_agent = SubAgent {
            caller: caller.name.clone(),
            mode,
            turn,
            cap,
            next: Some(Request::Model(Arc::new(model_call.clone()))),
            call: model_call,
            used: 0,
            usage: Usage::default(),
            spend: Spend::default(),
            waiting: Waiting::Model,
            done: None,
            events: Vec::new(),
        };
        let payload = EventKind::SubAgentStart {
            mode: mode.as_str().to_string(),
            query: clip(&task, 120),
            max_tool_calls: cap,
            tools: names.len(),
        };
        sub_agent.emit(payload);
        Ok(sub_agent)
    }

    /// What the sub-agent needs next; [`Request::Done`] once it ended (take
    /// [`SubAgent::finish`]).
    pub fn step(&mut self) -> Request {
        match self.next.take() {
            Some(request) => request,
            None => {
                if self.waiting != Waiting::Done {
                    self.end(
                        "[ERROR] the driver stepped a sub-agent without answering it".into(),
                        Ending::Failed,
                    );
                }
                Request::Done
            }
        }
    }

    /// Feeds the answer to the last request.
    pub fn resume(&mut self, response: Response) {
        match (self.waiting, response) {
            (Waiting::Model, Response::Model(Ok(reply))) => {
                self.usage.add(reply.usage);
                self.spend.add(Spend::of(reply.cost));
                let left = self.cap.saturating_sub(self.used) as usize;
                if !reply.tool_calls.is_empty() && left > 0 && !self.call.tools.is_empty() {
                    let mut reply = reply;
                    reply.tool_calls.truncate(left);
                    self.call.messages.push(assistant_message(&reply));
                    self.waiting = Waiting::Tools;
                    self.next = Some(Request::Tools {
                        agent: self.caller.clone(),
                        turn: self.turn,
                        calls: reply.tool_calls,
                    });
                } else if !reply.text.trim().is_empty() {
                    self.end(bounded(reply.text), Ending::Answered);
                } else if !reply.tool_calls.is_empty() {
                    let text = format!(
                        "[ERROR] the sub-agent asked for tools after its last allowed call ({} of {} made) and gave no answer",
                        self.used, self.cap
                    );
                    self.end(text, Ending::CapReached);
                } else {
                    self.end(
                        "[ERROR] the sub-agent replied with neither an answer nor a tool call"
                            .into(),
                        Ending::NoAnswer,
                    );
                }
            }
            (Waiting::Model, Response::Model(Err(error))) => {
                self.end(
                    format!("[ERROR] the sub-agent failed: {error}"),
                    Ending::Failed,
                );
            }
            (Waiting::Tools, Response::Tools(results)) => {
                for result in &results {
                    self.used = self.used.saturating_add(1);
                    let text = result.result.clone().unwrap_or_default();
                    self.call.messages.push(tool_message(result, text));
                    // Why it failed or was refused, as `tool_blocked` says it.
                    let why = (!result.ok)
                        .then(|| clip(result.result.as_deref().unwrap_or_default(), 200));
                    let payload = EventKind::SubAgentToolCall {
                        tool: result.name.clone(),
                        ok: result.ok,
                        result: why,
                    };
                    self.emit(payload);
                }
                if self.used >= self.cap {
                    // Its last request offers no tool: it answers from what it found.
                    self.call.tools = Vec::new().into();
                    let nudge = format!(
                        "You have used your {} tool calls. Answer now from what you found.",
                        self.cap
                    );
                    self.call.messages.push(message(ChatRole::User, nudge));
                }
                self.waiting = Waiting::Model;
                self.next = Some(Request::Model(Arc::new(self.call.clone())));
            }
            (Waiting::Done, _) => {}
            (_, _) => self.end(
                "[ERROR] the driver answered a sub-agent's request with another".into(),
                Ending::Failed,
            ),
        }
    }

    /// Events since the last call: `sub_agent_start`, `sub_agent_tool_call`, `sub_agent_end`.
    pub fn drain_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// What the sub-agent left (once [`SubAgent::step`] said [`Request::Done`]).
    pub fn finish(self) -> SubAgentDone {
        let (result, ok, _) = self.done.unwrap_or_else(|| {
            let text = "[ERROR] the sub-agent did not finish".to_string();
            (text, false, Ending::Failed)
        });
        SubAgentDone {
            result,
            ok,
            usage: self.usage,
            spend: self.spend,
        }
    }

    fn end(&mut self, result: String, ending: Ending) {
        let payload = EventKind::SubAgentEnd {
            mode: self.mode.as_str().to_string(),
            outcome: ending.as_str().to_string(),
            tool_calls: self.used,
            input_tokens: self.usage.input_tokens,
            output_tokens: self.usage.output_tokens,
            result_chars: result.chars().count(),
        };
        self.emit(payload);
        self.done = Some((result, ending == Ending::Answered, ending));
        self.waiting = Waiting::Done;
        self.next = Some(Request::Done);
    }

    fn emit(&mut self, kind: EventKind) {
        let event = Event::new(self.turn, Some(&self.caller), kind);
        self.events.push(event);
    }
}

/// The task given to the sub-agent and, for an exploration, whether a file list is wanted.
fn task_of(mode: SubAgentMode, call: &ToolCall) -> Result<(String, bool), String> {
    let text = |key: &str| {
        call.args
            .get(key)
            .and_then(Json::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_string)
    };
    match mode {
        SubAgentMode::Explore => {
            let query = text("query").ok_or_else(|| {
                "[ERROR] tool `sub_agent_explore` needs a non-empty string argument `query`"
                    .to_string()
            })?;
            let file_list = match text("format").as_deref() {
                None | Some("prose") => false,
                Some("file_list") => true,
                Some(other) => {
                    return Err(format!(
                        "[ERROR] tool `sub_agent_explore`: `format` is `prose` or `file_list`, not `{}`",
                        clip(other, 40)
                    ))
                }
            };
            Ok((query, file_list))
        }
        SubAgentMode::Locate => {
            let target = text("target").ok_or_else(|| {
                "[ERROR] tool `sub_agent_locate` needs a non-empty string argument `target`"
                    .to_string()
            })?;
            Ok((format!("Locate: {target}"), false))
        }
    }
}

fn system_prompt(
    mode: SubAgentMode,
    caller: &str,
    tools: &[String],
    cap: u32,
    file_list: bool,
) -> String {
    let tools = if tools.is_empty() {
        "none".to_string()
    } else {
        tools.join(", ")
    };
    let rules = format!(
        "Your tools: {tools}. You may make at most {cap} tool calls; prefer targeted searches to reading whole files. \
         You only read: nothing you do writes a file, runs a command or reaches the network. \
         Skip `.fuseraft/`, which holds fuseraft's own state."
    );
    match mode {
        SubAgentMode::Explore => {
            let answer = if file_list {
                "Reply only with a bulleted list of the relevant files, most relevant first, one per line as `- path: what it holds`."
            } else {
                "Reply with a short, factual summary (at most about 600 words) that answers the question and names the files it rests on."
            };
            format!(
                "You are a read-only research helper for the agent `{caller}`. Answer the one question you are given by looking at the work directory.\n{rules}\n{answer}"
            )
        }
        SubAgentMode::Locate => format!(
            "You are a read-only lookup helper for the agent `{caller}`. Find where the symbol, type, function or file you are given is defined.\n{rules}\n\
             Stop as soon as you know. Reply with one line per place found, as `path:line: what is there`, or with `Not found.`"
        ),
    }
}

fn message(role: ChatRole, content: String) -> ChatMessage {
    ChatMessage {
        role,
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

/// An answer cut to [`MAX_ANSWER_CHARS`], saying so.
fn bounded(text: String) -> String {
    let count = text.chars().count();
    if count <= MAX_ANSWER_CHARS {
        return text;
    }
    let kept: String = text.chars().take(MAX_ANSWER_CHARS).collect();
    format!(
        "{kept}\n[… {} more characters cut: a sub-agent's answer is at most {MAX_ANSWER_CHARS} characters]",
        count - MAX_ANSWER_CHARS
    )
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}…")
}

#[cfg(test)]
#[path = "sub_agent_tests.rs"]
mod tests;
