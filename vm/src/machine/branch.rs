//! A fork's branch as a turn of its own: its agent's whole tool loop on the history as it
//! was when the fork started, stepped by the driver alongside its sibling branches.
//!
//! A branch is pure like the machine: [`Branch::step`] says what it needs (a model call, tool
//! calls, or nothing once its reply is final), [`Branch::resume`] takes the answer. The
//! machine hands out a fork's branches in [`crate::effect::Request::Fork`] and takes each
//! finished one back as [`crate::effect::Response::Branch`].

use super::turn::{Next, Notes, Turn};
use crate::effect::{BranchDone, BranchRun, ModelCall, Request, Response};
use crate::event::{Event, EventKind};
use crate::history::{Spend, ToolCall};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
enum Waiting {
    Model,
    Tools,
    Done,
}

/// One branch in progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Branch {
    state: String,
    /// The fork's turn index: the branch's events and tool calls carry it.
    turn_index: u32,
    turn: Turn,
    waiting: Waiting,
    /// The request `step` returns next.
    next: Option<Request>,
    events: Vec<Event>,
    error: Option<String>,
    spend: Spend,
}

impl Branch {
    /// This branch, feeding tool results back cut as `cap` says.
    pub(super) fn with_tool_result_cap(mut self, cap: super::window::ResultCaps) -> Branch {
        self.turn.tool_result_cap = cap;
        self
    }

    pub(super) fn new(state: String, call: ModelCall, turn_index: u32) -> Branch {
        let agent = call.agent.to_string();
        let call = Arc::new(call);
        let mut branch = Branch {
            state,
            turn_index,
            turn: Turn::new(agent, Arc::clone(&call)),
            waiting: Waiting::Model,
            next: Some(Request::Model(call)),
            events: Vec::new(),
            error: None,
            spend: Spend::default(),
        };
        let payload = EventKind::TurnStart {
            state: branch.state.clone(),
        };
        branch.emit(payload);
        branch
    }

    /// The branch's agent.
    pub fn agent(&self) -> &str {
        &self.turn.agent
    }

    /// What the branch needs next: [`Request::Model`], [`Request::Tools`], or
    /// [`Request::Done`] once its reply is final (then take [`Branch::finish`]).
    pub fn step(&mut self) -> Request {
        match self.next.take() {
            Some(request) => request,
            None => {
                // Asked twice without an answer: a driver bug; end the branch with it.
                if self.waiting != Waiting::Done {
                    self.fail("the driver stepped a branch without answering it".to_string());
                }
                Request::Done
            }
        }
    }

    /// Feeds the answer to the last request.
    pub fn resume(&mut self, response: Response) {
        match (&self.waiting, response) {
            (Waiting::Model, Response::Model(Ok(reply))) => {
                self.turn.usage.add(reply.usage);
                self.spend.add(Spend::of(reply.cost));
                let mut notes = Notes::new();
                // A branch has no notes of its own to answer from: the notes tools run as
                // external calls, which the driver refuses (docs/semantics.md).
                let next = self.turn.take_reply(reply, &mut notes, &mut |_| false);
                self.emit_notes(notes);
                match next {
                    Next::Tools(calls) => {
                        self.waiting = Waiting::Tools;
                        self.next = Some(Request::Tools {
                            agent: self.turn.agent.clone(),
                            turn: self.turn_index,
                            calls,
                        });
                    }
                    Next::Again => {
                        self.waiting = Waiting::Model;
                        self.next = Some(Request::Model(Arc::clone(&self.turn.call)));
                    }
                    Next::Final => self.complete(),
                }
            }
            (Waiting::Model, Response::Model(Err(error))) => {
                self.emit(EventKind::ModelError {
                    error: error.clone(),
                });
                self.fail(error);
            }
            (Waiting::Tools, Response::Tools(results)) => self.take_results(results),
            (Waiting::Tools, Response::Delegated(results, usage, spend)) => {
                // A sub-agent's usage and cost are the branch's; the budgets are checked at
                // the join.
                self.turn.usage.add(usage);
                self.spend.add(spend);
                self.take_results(results);
            }
            (Waiting::Done, _) => {}
            (_, _) => self.fail("the driver answered a branch's request with another".to_string()),
        }
    }

    /// Takes the results of the branch's tool calls; asks the model again or completes.
    fn take_results(&mut self, results: Vec<ToolCall>) {
        let mut notes = Notes::new();
        let again = self.turn.take_results(results, &mut notes);
        self.emit_notes(notes);
        if again {
            self.waiting = Waiting::Model;
            self.next = Some(Request::Model(Arc::clone(&self.turn.call)));
        } else {
            self.complete();
        }
    }

    /// Steps the branch to its end, answering each request with `answer` in turn (a
    /// synchronous driver's way; the tool-call cap bounds the loop).
    pub fn run_with(mut self, mut answer: impl FnMut(&Request) -> Response) -> BranchDone {
        loop {
            let request = self.step();
            if request == Request::Done {
                return self.finish();
            }
            self.resume(answer(&request));
        }
    }

    /// Adds the events of the branch's tool calls (`mcp_tool_call`, a sub-agent's
    /// `sub_agent_*`), in order among its own; call before resuming with their results.
    pub fn add_events(&mut self, events: Vec<Event>) {
        self.events.extend(events);
    }

    /// Events since the last call: `turn_start`, tool events, `model_error`, `turn_end`.
    pub fn drain_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// What the branch left (call once [`Branch::step`] said [`Request::Done`]).
    pub fn finish(self) -> BranchDone {
        BranchDone {
            state: self.state,
            agent: self.turn.agent,
            text: self.turn.text,
            tool_calls: self.turn.tool_calls,
            usage: self.turn.usage,
            spend: self.spend,
            error: self.error,
        }
    }

    fn complete(&mut self) {
        self.waiting = Waiting::Done;
        self.next = Some(Request::Done);
        let payload = EventKind::TurnEnd {
            state: self.state.clone(),
            input_tokens: self.turn.usage.input_tokens,
            output_tokens: self.turn.usage.output_tokens,
            tool_calls: self.turn.tool_calls.len(),
            cache_read_tokens: None,
            cache_write_tokens: None,
            usage: None,
            cost: None,
        };
        self.emit(payload);
    }

    fn fail(&mut self, error: String) {
        self.error = Some(error);
        self.waiting = Waiting::Done;
        self.next = Some(Request::Done);
    }

    fn emit(&mut self, kind: EventKind) {
        self.events
            .push(Event::new(self.turn_index, Some(&self.turn.agent), kind));
    }

    fn emit_notes(&mut self, notes: Notes) {
        for kind in notes {
            self.emit(kind);
        }
    }
}

impl BranchRun for Branch {
    fn agent(&self) -> &str {
        Branch::agent(self)
    }

    fn step(&mut self) -> Request {
        Branch::step(self)
    }

    fn resume(&mut self, response: Response) {
        Branch::resume(self, response)
    }

    fn add_events(&mut self, events: Vec<Event>) {
        Branch::add_events(self, events)
    }

    fn drain_events(&mut self) -> Vec<Event> {
        Branch::drain_events(self)
    }

    fn finish(self: Box<Self>) -> BranchDone {
        Branch::finish(*self)
    }

    fn boxed_clone(&self) -> Box<dyn BranchRun> {
        Box::new(self.clone())
    }

    fn same_as(&self, other: &dyn BranchRun) -> bool {
        other
            .as_any()
            .downcast_ref::<Branch>()
            .is_some_and(|other| other == self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::ModelReply;
    use crate::machine::MAX_TOOL_CALLS_PER_TURN;
    use serde_json::json;

    fn branch() -> Branch {
        let call = ModelCall {
            agent: crate::effect::Caller::Agent("Backend".to_string()),
            model: None,
            messages: Vec::new(),
            tools: Vec::new().into(),
            turn: 3,
            reply_fields: Default::default(),
        };
        Branch::new("BackendWork".to_string(), call, 3)
    }

    fn call(id: usize, name: &str) -> ToolCall {
        ToolCall {
            id: format!("call_{id}"),
            name: name.to_string(),
            args: json!({"path": "a.txt", "content": "x"}),
            result: None,
            ok: false,
            denied: None,
        }
    }

    /// Answers tools with `ok`, and the model with `replies` in order (then a final text).
    fn answer(replies: Vec<Vec<ToolCall>>) -> impl FnMut(&Request) -> Response {
        let mut replies = replies.into_iter();
        move |request| match request {
            Request::Tools { calls, turn, .. } => {
                assert_eq!(*turn, 3, "a branch's tools run on the fork's turn");
                Response::Tools(
                    calls
                        .iter()
                        .map(|call| ToolCall {
                            result: Some("ok".to_string()),
                            ok: true,
                            ..call.clone()
                        })
                        .collect(),
                )
            }
            _ => Response::Model(Ok(match replies.next() {
                Some(tool_calls) => ModelReply {
                    tool_calls,
                    ..ModelReply::default()
                },
                None => ModelReply {
                    text: "done".to_string(),
                    ..ModelReply::default()
                },
            })),
        }
    }

    fn event_types(branch: &mut Branch) -> Vec<&'static str> {
        branch.drain_events().iter().map(|e| e.name()).collect()
    }

    #[test]
    fn a_branch_runs_its_tools_until_its_reply_is_final() {
        let mut branch = branch();
        let mut respond = answer(vec![
            vec![call(1, "write_file")],
            vec![call(2, "read_file"), call(3, "write_file")],
        ]);
        let mut asked = 0;
        loop {
            let request = branch.step();
            if request == Request::Done {
                break;
            }
            asked += 1;
            branch.resume(respond(&request));
        }
        assert_eq!(asked, 5, "three model calls and two rounds of tools");
        assert_eq!(event_types(&mut branch), ["turn_start", "turn_end"]);
        let done = branch.finish();
        assert_eq!(done.text, "done");
        assert_eq!(done.tool_calls.len(), 3);
        assert!(done.tool_calls.iter().all(|call| call.ok));
        assert_eq!(done.error, None);
    }

    #[test]
    fn a_branch_stops_at_the_tool_call_cap() {
        let endless = (0..100).map(|idx| vec![call(idx, "write_file")]).collect();
        let mut branch = branch();
        let mut respond = answer(endless);
        while let request @ (Request::Model(_) | Request::Tools { .. }) = branch.step() {
            branch.resume(respond(&request));
        }
        let done = branch.finish();
        assert_eq!(done.tool_calls.len(), MAX_TOOL_CALLS_PER_TURN);
    }

    #[test]
    fn a_failing_model_ends_the_branch_with_its_error_and_what_it_did() {
        let mut branch = branch();
        let mut respond = answer(vec![vec![call(1, "write_file")]]);
        let first = branch.step();
        branch.resume(respond(&first));
        let tools = branch.step();
        branch.resume(respond(&tools));
        assert!(matches!(branch.step(), Request::Model(_)));
        branch.resume(Response::Model(Err("server said no".to_string())));
        assert_eq!(branch.step(), Request::Done);
        assert_eq!(
            event_types(&mut branch),
            ["turn_start", "model_error"],
            "no turn_end for a failed branch"
        );
        let done = branch.finish();
        assert_eq!(done.error.as_deref(), Some("server said no"));
        assert_eq!(done.tool_calls.len(), 1, "its tool call is kept");
    }

    #[test]
    fn a_wrong_answer_ends_the_branch_with_a_message() {
        let mut branch = branch();
        let _ = branch.step();
        branch.resume(Response::Approve(true));
        assert_eq!(branch.step(), Request::Done);
        let done = branch.finish();
        assert!(done.error.is_some_and(|error| error.contains("another")));
    }
}
