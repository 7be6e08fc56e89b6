//! The conversation a run accumulates: messages, the tool calls made in each turn and
//! their results. Owned by the machine; validators read the current turn from it.

use fuseraft_compiler::ir::Tool;
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// The task, corrections and orchestrator markers (`[fuseraft: A → B]`).
    User,
    Assistant,
}

/// Why a tool call was refused, as data: the machine and the events decide on this, never
/// on the result's text (which says the same in words, `[DENIED: kind] reason`, for the
/// model and for upstream's readers).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenialKind {
    /// The permission policy, the agent's tools, or the operator refused it.
    Permission,
    /// The name is no tool the agent may call.
    UnknownTool,
    /// A path outside the sandbox or on fuseraft's or git's own state.
    Sandbox,
    /// A credential file or variable.
    Credentials,
    /// A write outside `Security.ChangeEnvelope`.
    Envelope,
    /// A host or a header the Http policy refuses.
    Http,
    /// A git invocation or repository the Git tools refuse.
    Git,
    /// A tool a sub-agent may not call.
    SubAgent,
}

impl DenialKind {
    pub const ALL: [DenialKind; 8] = [
        DenialKind::Permission,
        DenialKind::UnknownTool,
        DenialKind::Sandbox,
        DenialKind::Credentials,
        DenialKind::Envelope,
        DenialKind::Http,
        DenialKind::Git,
        DenialKind::SubAgent,
    ];

    /// The word in the result's `[DENIED: word]` prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            DenialKind::Permission => "permission",
            DenialKind::UnknownTool => "unknown tool",
            DenialKind::Sandbox => "sandbox",
            DenialKind::Credentials => "credentials",
            DenialKind::Envelope => "envelope",
            DenialKind::Http => "http",
            DenialKind::Git => "git",
            DenialKind::SubAgent => "sub-agent",
        }
    }
}

/// A refusal: its kind and the text the model is given as the call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    pub kind: DenialKind,
    pub text: String,
}

impl Denial {
    /// `[DENIED: kind] reason`.
    pub fn new(kind: DenialKind, reason: impl std::fmt::Display) -> Denial {
        Denial {
            kind,
            text: format!("[DENIED: {}] {reason}", kind.as_str()),
        }
    }

    /// Records the refusal as `call`'s result.
    pub fn answer(self, call: &mut ToolCall) {
        call.result = Some(self.text);
        call.ok = false;
        call.denied = Some(self.kind);
    }
}

/// One tool call an agent made, with its result once executed.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// Provider-assigned id (or `call_N` for replies without ids).
    pub id: String,
    /// The function name as the model wrote it (`write_file`, `FileSystem-write_file`, ...).
    pub name: String,
    pub args: Json,
    /// The text fed back to the model; `None` until executed.
    pub result: Option<String>,
    /// False when the tool failed, was denied, or timed out.
    pub ok: bool,
    /// Why it was refused, when it was (then `ok` is false).
    pub denied: Option<DenialKind>,
}

impl ToolCall {
    /// Whether this call names the tool `name`: resolved the one way the permission check
    /// and execution resolve it ([`Tool::resolve`]: the exact name or its own plugin's
    /// prefix, `FileSystem-write_file`), so a near miss (`my_finish`, `write_file_x`)
    /// never counts as routing or as evidence. A name outside fuseraft's tools (upstream's
    /// `git_commit`) matches itself or a plugin-qualified form (`Git-git_commit`),
    /// ignoring ASCII case.
    pub fn is(&self, name: &str) -> bool {
        if let Some(tool) = Tool::resolve(&self.name) {
            return tool.name().eq_ignore_ascii_case(name);
        }
        if Tool::resolve(name).is_some() {
            return false;
        }
        let called = self.name.trim();
        let qualified = |separator: char| {
            called
                .rsplit_once(separator)
                .is_some_and(|(_, function)| function.eq_ignore_ascii_case(name))
        };
        called.eq_ignore_ascii_case(name) || qualified('-') || qualified('.')
    }

    /// `handoff` and `finish` end a turn and are answered by the machine, not executed.
    pub fn is_routing(&self) -> bool {
        self.is("handoff") || self.is("finish")
    }

    /// A string argument.
    pub fn arg(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(Json::as_str)
    }
}

/// Token counts of one model call or a whole run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Every prompt token, cached or not.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache (Anthropic's
    /// `cache_read_input_tokens`, OpenAI's `prompt_tokens_details.cached_tokens`), priced at
    /// the model's `CachedInputPerMillion` when it has one.
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Saturating: counts from providers, replay files and checkpoints are untrusted.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}

/// What model calls cost in US dollars, as far as known: `usd` over the calls whose model
/// had a price and whose server reported usage, `unpriced` the calls whose cost is unknown.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Spend {
    pub usd: f64,
    pub unpriced: u32,
}

impl Spend {
    /// One call's: `cost` known, or not.
    pub fn of(cost: Option<f64>) -> Spend {
        match cost {
            Some(usd) => Spend { usd, unpriced: 0 },
            None => Spend {
                usd: 0.0,
                unpriced: 1,
            },
        }
    }

    /// Saturating, and a non-finite or negative cost (a checkpoint is untrusted) adds nothing.
    pub fn add(&mut self, other: Spend) {
        if other.usd.is_finite() && other.usd > 0.0 {
            self.usd += other.usd;
        }
        self.unpriced = self.unpriced.saturating_add(other.unpriced);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    /// The agent that wrote an assistant message; `orchestrator` for corrections and markers.
    pub agent: String,
    pub content: Arc<str>,
    /// Tool calls made while producing this message (assistant messages only).
    pub tool_calls: Vec<ToolCall>,
    /// The turn index the message belongs to.
    pub turn: u32,
    pub usage: Usage,
}

impl Message {
    pub fn user(agent: &str, content: impl Into<Arc<str>>, turn: u32) -> Message {
        Message {
            role: Role::User,
            agent: agent.to_string(),
            content: content.into(),
            tool_calls: Vec::new(),
            turn,
            usage: Usage::default(),
        }
    }

    /// The `route_keyword` of a `handoff` call in this message, if any.
    pub fn handoff(&self) -> Option<&str> {
        self.tool_calls
            .iter()
            .rev()
            .filter(|call| call.is("handoff"))
            .find_map(|call| call.arg("route_keyword"))
            .filter(|keyword| !keyword.trim().is_empty())
    }
}

/// The messages of the current turn: everything after the most recent user message.
pub fn current_turn(history: &[Message]) -> &[Message] {
    let start = history
        .iter()
        .rposition(|message| message.role == Role::User)
        .map_or(0, |idx| idx + 1);
    &history[start..]
}

#[cfg(test)]
mod tests {
    use super::ToolCall;

    fn named(name: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            args: serde_json::Value::Null,
            result: None,
            ok: true,
            denied: None,
        }
    }

    #[test]
    fn near_misses_never_count_as_routing_or_evidence() {
        for name in [
            "finish",
            "FINISH",
            "Finish-finish",
            "handoff",
            "Handoff.handoff",
        ] {
            assert!(named(name).is_routing(), "{name}");
        }
        for name in [
            "my_finish",
            "finish_x",
            "handoffs",
            "Shell-handoff",
            "write_file_x",
        ] {
            assert!(!named(name).is_routing(), "{name}");
        }
        assert!(named("FileSystem-write_file").is("write_file"));
        assert!(!named("write_file_x").is("write_file"));
        assert!(!named("my_write_file").is("write_file"));
        assert!(named("Git-git_commit").is("git_commit"));
        assert!(named("git_commit").is("git_commit"));
        assert!(!named("git_commit_all").is("git_commit"));
    }
}
