//! A turn's tool loop, shared by a state's turn and a fork's branch: a model reply's routing
//! calls answered, its other tool calls sent out (at most [`MAX_TOOL_CALLS_PER_TURN`] a
//! turn), their results fed back, and the model asked again until its reply is final.

use crate::event::EventKind;
use std::sync::Arc;

use super::context;
use super::MAX_TOOL_CALLS_PER_TURN;
use crate::effect::{ModelCall, ModelReply};
use crate::history::{ToolCall, Usage};

/// A turn being assembled from model replies and tool results.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Turn {
    pub(super) agent: String,
    /// The agent actually answering (a recovery agent may stand in for the state's agent).
    pub(super) call: Arc<ModelCall>,
    pub(super) text: String,
    pub(super) tool_calls: Vec<ToolCall>,
    pub(super) usage: Usage,
    /// The agent's `ContextWindow.MaxToolResultChars` and `ToolResultCharOverrides`.
    pub(super) tool_result_cap: super::window::ResultCaps,
}

/// What follows a reply: the turn is complete, tools are to run, or the model is asked
/// again (only answered calls came back, and the turn goes on).
#[derive(Debug, PartialEq)]
pub(super) enum Next {
    Final,
    Tools(Vec<ToolCall>),
    Again,
}

/// What a turn noted while taking a reply or results: `(event type, payload)` for its agent.
pub(super) type Notes = Vec<EventKind>;

impl Turn {
    pub(super) fn new(agent: String, call: Arc<ModelCall>) -> Turn {
        Turn {
            agent,
            call,
            text: String::new(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            tool_result_cap: super::window::ResultCaps::default(),
        }
    }

    /// This turn, feeding tool results back cut as `cap` says.
    pub(super) fn with_tool_result_cap(self, cap: super::window::ResultCaps) -> Turn {
        Turn {
            tool_result_cap: cap,
            ..self
        }
    }

    /// A tool result as this turn's next request carries it.
    fn result_message(&self, call: &ToolCall) -> crate::effect::ChatMessage {
        let result = call.result.clone().unwrap_or_default();
        context::tool_message(call, self.tool_result_cap.cut(&call.name, result))
    }

    /// Takes a model reply (its usage already counted): answers `handoff` and `finish` here,
    /// and the calls `answer` takes (the notes tools the machine answers without IO, see
    /// `machine/notes.rs`); says what comes next.
    pub(super) fn take_reply(
        &mut self,
        reply: ModelReply,
        notes: &mut Notes,
        answer: &mut dyn FnMut(&mut ToolCall) -> bool,
    ) -> Next {
        let first_new = self.tool_calls.len();
        self.tool_calls.extend(reply.tool_calls.iter().cloned());
        if self.tool_calls.len() > MAX_TOOL_CALLS_PER_TURN {
            self.tool_calls.truncate(MAX_TOOL_CALLS_PER_TURN);
            notes.push(EventKind::ToolLimit {
                max: MAX_TOOL_CALLS_PER_TURN,
            });
        }
        let mut external = Vec::new();
        let mut answered = Vec::new();
        for call in self.tool_calls.iter_mut().skip(first_new) {
            if answer(call) {
                answered.push(call.clone());
            } else if call.is_routing() {
                call.result = Some(
                    call.arg("route_keyword")
                        .or(call.arg("key"))
                        .unwrap_or("ok")
                        .to_string(),
                );
                call.ok = true;
            } else {
                external.push(call.clone());
            }
        }
        // The model is asked again after the tools, in the turn's context with this reply.
        let continuation = (!external.is_empty() || !answered.is_empty())
            .then(|| context::assistant_message(&reply));
        if !reply.text.is_empty() {
            self.text = reply.text;
        }
        let Some(message) = continuation else {
            return Next::Final;
        };
        Arc::make_mut(&mut self.call).messages.push(message);
        for call in &answered {
            let message = self.result_message(call);
            Arc::make_mut(&mut self.call).messages.push(message);
        }
        if !external.is_empty() {
            Next::Tools(external)
        } else if self.wants_more() {
            Next::Again
        } else {
            Next::Final
        }
    }

    /// Whether the model is to be asked again: it has not answered, no routing call ended
    /// the turn and the cap is not reached.
    fn wants_more(&self) -> bool {
        let ended_by_tool = self.tool_calls.iter().any(|call| call.is_routing());
        let limit = self.tool_calls.len() >= MAX_TOOL_CALLS_PER_TURN;
        self.text.is_empty() && !ended_by_tool && !limit
    }

    /// Takes the results of the calls [`Turn::take_reply`] sent out; returns whether the
    /// model is to be asked again (it has not answered, no routing call ended the turn and
    /// the cap is not reached).
    pub(super) fn take_results(&mut self, results: Vec<ToolCall>, notes: &mut Notes) -> bool {
        for result in results {
            if result.denied.is_some() {
                notes.push(EventKind::ToolBlocked {
                    tool: result.name.clone(),
                    result: result.result.clone().unwrap_or_default(),
                });
            }
            let message = self.result_message(&result);
            Arc::make_mut(&mut self.call).messages.push(message);
            if let Some(slot) = self.tool_calls.iter_mut().find(|call| call.id == result.id) {
                *slot = result;
            }
        }
        self.wants_more()
    }
}
