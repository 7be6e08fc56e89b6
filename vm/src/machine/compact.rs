//! Compaction (`Compaction` section, issue 15): once the messages a request would carry
//! hold `TriggerTurnCount` assistant turns, or the next request would fill most of its
//! model's context window, the older ones are replaced by a summary in every later
//! request: written by a model call (`llm`), rebuilt from the run's state and change log
//! with no model call (`lossless`, `lossless.rs`), both (`hybrid`), listed as the
//! operations the compacted turns' tool calls made (`intent`), or none at all, the oldest
//! messages simply left out until `TokenBudget` holds (`window`). The history itself
//! keeps every message: routing, validators and the session file never read the summary.

use fuseraft_compiler::ir::{Compaction, CompactionMode};

use super::{context, lossless, request_cap, Machine, Phase};
use crate::effect::{ChatMessage, ChatRole, ModelCall, ModelReply, Request};
use crate::event::{EventKind, Outcome};
use crate::history::Usage;
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
    /// The run's turn when the newest compaction was made.
    pub made_at: u32,
    /// The turn index of the newest message the summary covers.
    pub turn: u32,
    /// The share of a request's messages each of the latest compactions saved, in basis
    /// points (1/10000), newest last (`AntiThrashWindow` of them at most).
    pub savings: Vec<u32>,
}

/// Why a compaction runs (the `reason` of its event, upstream's names).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    /// `TriggerTurnCount` assistant turns, or `TokenBudget` in `window` mode.
    WindowSize,
    /// The next request would fill most of its model's context window.
    ContextExceeded,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::WindowSize => "window_size",
            Trigger::ContextExceeded => "context_exceeded",
        }
    }
}

/// A compaction under way: where it ends and why it runs.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub through: usize,
    pub trigger: Trigger,
    /// `hybrid`: the reconstruction the model's summary follows.
    pub reconstruction: Option<String>,
}

impl Compacted {
    /// The message that stands in for the compacted history in a request; none after a
    /// `window` compaction that had no routing signal to pin.
    pub(super) fn message(&self) -> Option<String> {
        (!self.summary.is_empty()).then(|| {
            format!(
                "[fuseraft: summary of the conversation through turn {}, which replaces the earlier messages]\n{}",
                self.turn, self.summary
            )
        })
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

    /// Where a compaction due now would end (`through`), and why: in `window` mode, the
    /// verbatim history is over `TokenBudget` (the end is the first message from which it
    /// fits); otherwise the requests' assistant turns have reached the trigger (unless the
    /// anti-thrash guard holds), or the request `agent` is about to make would fill most of
    /// its model's window, and more than the kept messages lie past the last compaction.
    fn compaction_due(&self, policy: &Compaction, agent: Option<&str>) -> Option<(usize, Trigger)> {
        let len = self.run.history.len();
        let start = self.first_verbatim().min(len);
        if policy.mode == CompactionMode::Window {
            let tokens = |message: &Message| message.content.chars().count() as u64 / 4;
            let mut total: u64 = self.run.history[start..].iter().map(tokens).sum();
            if total <= policy.token_budget {
                return None;
            }
            let mut through = start;
            while total > policy.token_budget && through + 1 < len {
                total -= tokens(&self.run.history[through]);
                through += 1;
            }
            return (through > start).then_some((through, Trigger::WindowSize));
        }
        let through = len.saturating_sub(policy.keep_recent as usize);
        if through <= start {
            return None;
        }
        let turns = self.run.history[start..]
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count();
        if turns >= policy.trigger_turn_count as usize && !self.thrashing(policy) {
            return Some((through, Trigger::WindowSize));
        }
        // Upstream's grace: not again before the turn right after a compaction, which may
        // have kept a large tail (fitting guards that turn's request).
        let just_compacted = self
            .run
            .compaction
            .as_ref()
            .is_some_and(|compacted| self.run.turn < compacted.made_at.saturating_add(2));
        if just_compacted {
            return None;
        }
        let limit = self.window_limit(agent?)?;
        let estimate = request_cap::estimate_tokens(&self.model_call(agent?));
        (estimate > limit).then_some((through, Trigger::ContextExceeded))
    }

    /// `AntiThrashWindow` compactions in a row each saved less than
    /// `AntiThrashMinSavingsRatio` of the request's messages (upstream's guard).
    fn thrashing(&self, policy: &Compaction) -> bool {
        let window = policy.anti_thrash_window as usize;
        if window == 0 || policy.anti_thrash_min_savings <= 0.0 {
            return false;
        }
        let savings = self
            .run
            .compaction
            .as_ref()
            .map_or(&[][..], |compacted| &compacted.savings[..]);
        let min = (policy.anti_thrash_min_savings * 10_000.0) as u32;
        savings.len() >= window
            && savings[savings.len() - window..]
                .iter()
                .all(|ratio| *ratio < min)
    }

    /// A compaction's request, when one is due before the next turn: the summariser's
    /// model call (`llm`), or the change log read (`lossless`, `hybrid`). A `window`
    /// compaction needs none: it is done here and `None` returned.
    pub(super) fn start_compaction(&mut self, agent: Option<&str>) -> Option<Request> {
        let program = self.program;
        let policy = program.compaction.as_ref()?;
        let (through, trigger) = self.compaction_due(policy, agent)?;
        let pending = Pending {
            through,
            trigger,
            reconstruction: None,
        };
        match policy.mode {
            CompactionMode::Window => {
                self.install(policy, pending, String::new(), Usage::default());
                None
            }
            CompactionMode::Intent => {
                let summary = self.operations(pending.through);
                self.install(policy, pending, summary, Usage::default());
                None
            }
            CompactionMode::Lossless | CompactionMode::Hybrid => {
                self.phase = Phase::Reconstruction(pending);
                Some(Request::Context {
                    sources: vec![lossless::change_log_source()],
                    session_id: self.run.session_id.clone(),
                })
            }
            CompactionMode::Llm => Some(self.summariser_call(policy, agent, pending)),
        }
    }

    /// The summarising model call: `Compaction.Model`, else the model of the agent about to
    /// run, else (a fork or a select state) the first agent's that names one.
    fn summariser_call(
        &mut self,
        policy: &Compaction,
        agent: Option<&str>,
        pending: Pending,
    ) -> Request {
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
            self.summariser_messages(policy, pending.through)
        };
        self.phase = Phase::Compaction(pending);
        Request::Model(std::sync::Arc::new(ModelCall {
            agent: crate::effect::Caller::Compaction,
            model: model.map(Box::new),
            messages,
            tools: Vec::new().into(),
            turn: self.run.turn,
            reply_fields: Default::default(),
        }))
    }

    /// The agent about to run, if the next state has one.
    fn next_agent(&self) -> Option<String> {
        self.stand_in.clone().or_else(|| {
            let state = self.program.state(self.run.state);
            state.agent.map(|id| self.program.agent(id).name.clone())
        })
    }

    /// The driver read the change log for a `lossless` or `hybrid` compaction.
    pub(super) fn on_reconstruction(&mut self, mut pending: Pending, change_log: Vec<String>) {
        let program = self.program;
        let Some(policy) = program.compaction.as_ref() else {
            return;
        };
        let text = self.reconstruction(pending.through, &change_log);
        if policy.mode == CompactionMode::Hybrid {
            pending.reconstruction = Some(text);
            let agent = self.next_agent();
            let request = self.summariser_call(policy, agent.as_deref(), pending);
            self.pending = Some(request);
            return;
        }
        self.install(policy, pending, text, Usage::default());
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

    /// The summariser answered: the summary stands in for `history[1..through]` from now
    /// on. In `hybrid` mode it follows the reconstruction, which stands alone when the
    /// model call failed (upstream).
    pub(super) fn on_compaction(&mut self, pending: Pending, reply: Result<ModelReply, String>) {
        let program = self.program;
        let Some(policy) = program.compaction.as_ref() else {
            return;
        };
        let reply = match (reply, pending.reconstruction.clone()) {
            (Ok(reply), _) => reply,
            (Err(error), Some(reconstruction)) => {
                let kind = EventKind::CompactionFailed {
                    error,
                    fallback: Some("lossless".to_string()),
                };
                self.emit(None, kind);
                self.install(policy, pending, reconstruction, Usage::default());
                return;
            }
            (Err(error), None) => {
                let kind = EventKind::CompactionFailed {
                    error: error.clone(),
                    fallback: None,
                };
                self.emit(None, kind);
                self.finish(Outcome::Error, Some(format!("compaction failed: {error}")));
                return;
            }
        };
        if !self.add_usage(reply.usage, crate::history::Spend::of(reply.cost)) {
            return;
        }
        let mut summary = reply.text.trim().to_string();
        if summary.is_empty() {
            summary = "(the summariser returned no text)".to_string();
        }
        if let Some(reconstruction) = &pending.reconstruction {
            summary = format!("{reconstruction}\n\n---\n\n{summary}");
        }
        self.install(policy, pending, summary, reply.usage);
    }

    /// The summary (with the lost routing signal pinned) stands in for
    /// `history[1..through]` in requests from now on.
    fn install(
        &mut self,
        policy: &Compaction,
        pending: Pending,
        mut summary: String,
        usage: Usage,
    ) {
        let start = self.first_verbatim();
        let len = self.run.history.len();
        let through = pending.through.min(len);
        if policy.pin_last_routing_signal {
            if let Some(pin) = lost_signal(&self.run.history, through) {
                let pin = if summary.is_empty() {
                    pin.trim_start()
                } else {
                    &pin
                };
                summary.push_str(pin);
            }
        }
        let turn = self.run.history[..through]
            .last()
            .map_or(0, |message| message.turn);
        let previous = self.run.compaction.take();
        let had_summary = previous
            .as_ref()
            .is_some_and(|compacted| !compacted.summary.is_empty());
        // Upstream's measure: the messages folded into one summary, over the request's.
        let shown = (len - start + usize::from(had_summary)) as f64;
        let folded = (through - start + usize::from(had_summary)) as f64;
        let mut savings = previous
            .as_ref()
            .map_or_else(Vec::new, |compacted| compacted.savings.clone());
        savings.push(((folded - 1.0) / shown * 10_000.0).clamp(0.0, 10_000.0) as u32);
        let keep = (policy.anti_thrash_window as usize).max(1);
        savings.drain(..savings.len().saturating_sub(keep));
        let count = previous.map_or(1, |compacted| compacted.count.saturating_add(1));
        let calls_model = matches!(policy.mode, CompactionMode::Llm | CompactionMode::Hybrid);
        let kind = EventKind::Compaction {
            mode: policy.mode.as_str().to_string(),
            reason: pending.trigger.as_str().to_string(),
            turns_compacted: through.saturating_sub(start),
            turns_retained: len - through,
            through_turn: turn,
            summary_chars: summary.chars().count(),
            input_tokens: calls_model.then_some(usage.input_tokens),
            output_tokens: calls_model.then_some(usage.output_tokens),
        };
        self.emit(None, kind);
        self.run.compaction = Some(Compacted {
            summary,
            through,
            count,
            made_at: self.run.turn,
            turn,
            savings,
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
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}
