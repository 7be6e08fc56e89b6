//! Compaction (`Compaction` section, issue 15): once the messages a request would carry
//! hold `TriggerTurnCount` assistant turns, the older ones are summarised by a model call
//! and the summary stands in for them in every later request. The history itself keeps
//! every message: routing, validators and the session file never read the summary.

use fuseraft_compiler::ir::Compaction;
use serde_json::{json, Value as Json};

use super::{context, Machine, Phase};
use crate::effect::{ChatMessage, ChatRole, ModelCall, ModelReply, Request};
use crate::event::{EventKind, Outcome};
use crate::history::{Message, Role};

/// The replay queue (and the `agent` of the [`ModelCall`]) of a compaction's model call.
pub const COMPACTION_AGENT: &str = "compaction";

/// The summary in force: history messages `1..through` (everything after the task up to
/// `through`) are replaced by it in requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Compacted {
    pub summary: String,
    pub through: usize,
    /// Compactions so far in the run (each summary folds in the previous one).
    pub count: u32,
    /// The turn index of the newest message the summary covers.
    pub turn: u32,
}

impl Compacted {
    /// As a checkpoint keeps it: the summary as upstream's `AgentMessage` with
    /// `IsCompactionSummary`, and the extent it covers.
    pub fn to_json(&self) -> Json {
        json!({
            "Summary": {
                "AgentName": "system",
                "Role": "user",
                "Content": self.summary,
                "TurnIndex": self.turn,
                "IsCompactionSummary": true,
            },
            "Through": self.through,
            "Count": self.count,
        })
    }

    pub fn from_json(value: Option<&Json>, history: usize) -> Result<Option<Compacted>, String> {
        let Some(value) = value.filter(|value| !value.is_null()) else {
            return Ok(None);
        };
        let summary = value
            .pointer("/Summary/Content")
            .and_then(Json::as_str)
            .ok_or("`Machine.Compaction` has no summary text")?;
        let through = value
            .get("Through")
            .and_then(Json::as_u64)
            .ok_or("`Machine.Compaction` has no `Through`")? as usize;
        if through < 1 || through > history {
            return Err(format!(
                "`Machine.Compaction.Through` ({through}) is outside the {history} stored messages"
            ));
        }
        Ok(Some(Compacted {
            summary: summary.to_string(),
            through,
            count: value.get("Count").and_then(Json::as_u64).unwrap_or(1) as u32,
            turn: value
                .pointer("/Summary/TurnIndex")
                .and_then(Json::as_u64)
                .unwrap_or(0) as u32,
        }))
    }

    /// The message that stands in for the compacted history in a request.
    pub(super) fn message(&self) -> String {
        format!(
            "[fuseraft: summary of the conversation through turn {}, which replaces the earlier messages]\n{}",
            self.turn, self.summary
        )
    }
}

/// The system prompt of the summarising call.
const SUMMARISER: &str = "You compact the history of a team of agents working on a task. \
Write a summary that lets the team continue without the messages it replaces: decisions made, \
files and artifacts written, commands run and their results, open problems, and who is to act \
next. Keep names, paths and routing keywords exact. Reply with the summary only.";

impl Machine<'_> {
    /// The first history index a request carries verbatim (after the task): 1, or the end
    /// of the compacted part.
    pub(super) fn first_verbatim(&self) -> usize {
        self.run
            .compaction
            .as_ref()
            .map_or(1, |compacted| compacted.through)
    }

    /// Where a compaction due now would end (`through`): the requests' assistant turns have
    /// reached the trigger and more than the kept messages lie past the last compaction.
    fn compaction_due(&self, policy: &Compaction) -> Option<usize> {
        let start = self.first_verbatim().min(self.run.history.len());
        let tail = &self.run.history[start..];
        let turns = tail
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count();
        if turns < policy.trigger_turn_count as usize {
            return None;
        }
        let through = self
            .run
            .history
            .len()
            .saturating_sub(policy.keep_recent as usize);
        (through > start).then_some(through)
    }

    /// A compaction's model call, when one is due before the next turn.
    pub(super) fn start_compaction(&mut self, agent: Option<&str>) -> Option<Request> {
        let policy = self.program.compaction()?;
        let through = self.compaction_due(&policy)?;
        // `Compaction.Model`, else the model of the agent about to run, else (a fork or a
        // select state) the first agent's that names one.
        let model = policy
            .model
            .clone()
            .or_else(|| {
                let id = self.program.agent_named(agent?)?;
                self.program.agent(id).model.clone()
            })
            .or_else(|| {
                self.program
                    .agents
                    .iter()
                    .find_map(|agent| agent.model.clone())
            });
        let messages = if self.options.skip_prompts {
            Vec::new()
        } else {
            self.summariser_messages(&policy, through)
        };
        self.phase = Phase::Compaction { through };
        Some(Request::Model(ModelCall {
            agent: COMPACTION_AGENT.to_string(),
            model: model.map(Box::new),
            messages,
            tools: Vec::new(),
            turn: self.run.turn,
        }))
    }

    /// The summariser's request: the task, the summary in force, and the messages to fold in.
    fn summariser_messages(&self, policy: &Compaction, through: usize) -> Vec<ChatMessage> {
        let start = self.first_verbatim();
        let mut text = format!("The task:\n{}\n", self.run.task);
        if let Some(compacted) = &self.run.compaction {
            text.push_str(&format!(
                "\nThe summary so far (through turn {}):\n{}\n",
                compacted.turn, compacted.summary
            ));
        }
        text.push_str("\nThe messages to summarise:\n");
        for message in &self.run.history[start..through] {
            let content = context::bounded(
                context::with_tool_summary(message),
                policy.max_chars_per_message,
            );
            text.push_str(&format!(
                "[turn {}] {}: {content}\n",
                message.turn, message.agent
            ));
        }
        vec![
            chat(ChatRole::System, SUMMARISER.to_string()),
            chat(ChatRole::User, text),
        ]
    }

    /// The summariser answered: the summary stands in for `history[1..through]` from now on.
    pub(super) fn on_compaction(&mut self, through: usize, reply: Result<ModelReply, String>) {
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => {
                let kind = EventKind::CompactionFailed {
                    error: error.clone(),
                };
                self.emit(None, kind);
                self.finish(Outcome::Error, Some(format!("compaction failed: {error}")));
                return;
            }
        };
        if !self.add_usage(reply.usage, crate::history::Spend::of(reply.cost)) {
            return;
        }
        let policy = self.program.compaction();
        let start = self.first_verbatim();
        let through = through.min(self.run.history.len());
        let mut summary = reply.text.trim().to_string();
        if summary.is_empty() {
            summary = "(the summariser returned no text)".to_string();
        }
        if policy.is_some_and(|policy| policy.pin_last_routing_signal) {
            if let Some(pin) = lost_signal(&self.run.history, through) {
                summary.push_str(&pin);
            }
        }
        let turn = self.run.history[..through]
            .last()
            .map_or(0, |message| message.turn);
        let count = self
            .run
            .compaction
            .as_ref()
            .map_or(1, |compacted| compacted.count.saturating_add(1));
        self.emit(
            None,
            EventKind::Compaction {
                reason: "window_size".to_string(),
                turns_compacted: through.saturating_sub(start),
                turns_retained: self.run.history.len() - through,
                through_turn: turn,
                summary_chars: summary.chars().count(),
                input_tokens: reply.usage.input_tokens,
                output_tokens: reply.usage.output_tokens,
            },
        );
        self.run.compaction = Some(Compacted {
            summary,
            through,
            count,
            turn,
        });
    }
}

/// `PinLastRoutingSignal`: the newest `handoff` keyword, when it lies in the compacted part
/// and no kept message repeats it, as a line for the summary's end.
fn lost_signal(history: &[Message], through: usize) -> Option<String> {
    let (at, message) = history
        .iter()
        .enumerate()
        .rev()
        .find(|(_, message)| message.role == Role::Assistant && message.handoff().is_some())?;
    let keyword = message.handoff()?;
    if at >= through {
        return None;
    }
    Some(format!(
        "\n[the last routing signal before this summary: `{keyword}` from {}]",
        message.agent
    ))
}

fn chat(role: ChatRole, content: String) -> ChatMessage {
    ChatMessage {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}
