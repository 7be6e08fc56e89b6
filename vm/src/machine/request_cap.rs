//! The size of a request and the caps on it: the estimate the providers fit requests by
//! (3 bytes a token), the share of an agent's model window that triggers a compaction
//! (`compact.rs`), and `ContextCapFraction`'s cap on the agent's request (the messages
//! left out by `window::cap_request`).

use crate::event::{ContextCap, EventKind};

use super::Machine;
use crate::effect::{ChatMessage, ChatRole, ModelCall};

/// A compaction runs before a request estimated above this share of its model's context
/// window (or of the agent's `ContextCapFraction` of it, when smaller).
pub(super) const WINDOW_TRIGGER_FRACTION: f64 = 0.8;

impl Machine<'_> {
    /// The estimated tokens above which `agent`'s next request triggers a compaction: a
    /// share of its model's context window (its `MaxContextTokens`, else the table's).
    pub(super) fn window_limit(&self, agent: &str) -> Option<u64> {
        let agent = self.program.agent(self.program.agent_named(agent)?);
        let model = agent.model.as_ref()?;
        let window = crate::model_windows::context_window(&model.id, model.context_window)?;
        let fraction = agent
            .context
            .cap_fraction
            .map_or(WINDOW_TRIGGER_FRACTION, |cap| {
                cap.get().min(WINDOW_TRIGGER_FRACTION)
            });
        Some((window as f64 * fraction) as u64)
    }

    /// `ContextCapFraction` on `agent`'s request: past that share of `MaxTailMessages`
    /// messages, upstream's `context_cap_warning`; past that share of its model's context
    /// window, the oldest messages after the task are left out until it fits, and the
    /// warning says so.
    pub(super) fn cap_context(&mut self, agent: &str, call: &mut ModelCall) {
        let Some(id) = self.program.agent_named(agent) else {
            return;
        };
        let context = &self.program.agent(id).context;
        let Some(fraction) = context.cap_fraction else {
            return;
        };
        let shown = call
            .messages
            .iter()
            .filter(|message| message.role != ChatRole::System)
            .count();
        if context.max_tail > 0 && shown as u64 > fraction.of(context.max_tail.into()) {
            let cap = ContextCap::Messages {
                messages: shown,
                cap: context.max_tail,
                fraction: fraction.get(),
            };
            self.emit(Some(agent), EventKind::ContextCapWarning(cap));
        }
        let model = self.program.agent(id).model.as_ref();
        let Some(window) = model.and_then(|model| {
            crate::model_windows::context_window(&model.id, model.context_window)
        }) else {
            return;
        };
        let cap = fraction.of(window);
        let tokens = estimate_tokens(call);
        if tokens <= cap {
            return;
        }
        let excess = (tokens - cap) * crate::model_windows::BYTES_PER_TOKEN;
        let dropped = super::window::cap_request(&mut call.messages, excess, message_bytes);
        let cap = ContextCap::Window {
            tokens,
            cap_tokens: cap,
            window,
            fraction: fraction.get(),
            messages_left_out: dropped,
        };
        self.emit(Some(agent), EventKind::ContextCapWarning(cap));
    }
}

/// A request's size in tokens as the providers count it when they fit a request to a
/// window: its bytes (texts, tool calls, tool schemas, a little framing per message) over
/// [`crate::model_windows::BYTES_PER_TOKEN`].
pub(super) fn estimate_tokens(call: &ModelCall) -> u64 {
    let messages: u64 = call.messages.iter().map(message_bytes).sum();
    let tools: usize = call
        .tools
        .iter()
        .map(|tool| {
            tool.name.len() + tool.description.len() + tool.parameters.to_string().len() + FRAME
        })
        .sum();
    (messages + tools as u64).div_ceil(crate::model_windows::BYTES_PER_TOKEN)
}

/// Bytes counted for each message's framing (role, keys, separators).
const FRAME: usize = 16;

/// One message's bytes as [`estimate_tokens`] counts them.
fn message_bytes(message: &ChatMessage) -> u64 {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|call| call.id.len() + call.name.len() + call.args.to_string().len() + FRAME)
        .sum();
    let id = message.tool_call_id.as_ref().map_or(0, String::len);
    (message.content.len() + calls + id + FRAME) as u64
}
