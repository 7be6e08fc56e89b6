//! The closed set of run events: one [`EventKind`] variant per `event_type`, its payload's
//! fields typed and declared in the order the JSON lines carry them (`docs/events.md`).
//!
//! Serde's adjacently tagged form writes a variant as `{"event_type": name, "payload": {..}}`;
//! an `Option` field is written as `null` unless it says `skip_serializing_if`, in which case
//! it is left out (each payload keeps the keys it always had).

use serde::{Deserialize, Serialize};

use super::Outcome;

/// How a detected routing signal came: in the reply's text or through a `handoff` call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    Handoff,
    Text,
}

/// Which budget a `budget_exceeded` run went over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Budget {
    /// `MaxTotalTokens`.
    Tokens { tokens: u64, max_total_tokens: u64 },
    /// `MaxTotalCost`, in US dollars.
    Cost { cost_usd: f64, max_total_cost: f64 },
}

/// What a `context_cap_warning` reports: the messages over the share of `MaxTailMessages`
/// (upstream's warning), or a request over the share of its model's window, cut.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ContextCap {
    Messages {
        messages: usize,
        cap: u32,
        fraction: f64,
    },
    Window {
        tokens: u64,
        cap_tokens: u64,
        window: u64,
        fraction: f64,
        messages_left_out: usize,
    },
}

/// How a failed model request is sent again (`model_retry`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resend {
    /// The same request, after a wait.
    Again,
    /// Once without streaming: the server refused the streamed form.
    Unstreamed,
    /// Without a reply format: the server refused the one asked for.
    Unformatted,
}

/// A turn's or a run's usage as the driver marks it when some call reported none.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageMark {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// No call of the span lacked a usage report.
    pub complete: bool,
    /// Some call reported usage (else the counts are unknown, not 0).
    pub known: bool,
}

/// What a turn's or a run's calls cost by their models' known prices.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostMark {
    pub usd: f64,
    /// Every call of the span had a known price.
    pub complete: bool,
}

/// Declares [`EventKind`] with each variant's `event_type`, and the list of every name.
macro_rules! event_kinds {
    ($( $(#[$meta:meta])* $variant:ident = $name:literal $body:tt ),* $(,)?) => {
        /// One run event's type and payload.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "event_type", content = "payload")]
        pub enum EventKind {
            $( $(#[$meta])* #[serde(rename = $name)] $variant $body, )*
        }

        impl EventKind {
            /// Every `event_type`, in declaration order.
            pub const ALL: &'static [&'static str] = &[$($name),*];

            /// This event's `event_type`.
            pub fn name(&self) -> &'static str {
                match self {
                    $( EventKind::$variant { .. } => $name, )*
                }
            }
        }
    };
}

event_kinds! {
    /// The run started.
    SessionStart = "session_start" {
        task: String,
        program: String,
        start_state: Option<String>,
    },
    /// A run continued from its checkpoint.
    SessionResumed = "session_resumed" { state: String, turns: u32 },
    /// The run ended.
    SessionEnd = "session_end" {
        outcome: Outcome,
        turns: u32,
        reason: Option<String>,
        input_tokens: u64,
        output_tokens: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_read_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<UsageMark>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<CostMark>,
    },
    /// An agent's turn (or a fork branch's) starts in `state`.
    TurnStart = "turn_start" { state: String },
    /// The turn's final reply is in.
    TurnEnd = "turn_end" {
        state: String,
        input_tokens: u64,
        output_tokens: u64,
        tool_calls: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_read_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<UsageMark>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<CostMark>,
    },
    /// The turn cap was reached.
    MaxTurnsExceeded = "max_turns_exceeded" { turns: u32 },
    /// The operator added a message between turns.
    OperatorMessage = "operator_message" { chars: usize },
    /// A model call failed.
    ModelError = "model_error" { error: String },
    /// A model request failed and is sent again; what the failed attempt streamed is
    /// discarded. `attempt` counts the retries after a wait (`Resend::Again`); a resend in
    /// another form keeps the count.
    ModelRetry = "model_retry" {
        resend: Resend,
        attempt: u32,
        max_retries: u32,
        wait_ms: u64,
        reason: String,
    },
    /// Older messages were left out of a model request so it fits its model's context window.
    RequestFitted = "request_fitted" {
        model: String,
        window: u64,
        messages_left_out: usize,
        tokens: u64,
    },
    /// A routing signal was found in the reply.
    SignalDetected = "signal_detected" { signal: String, via: Via },
    /// The run moved from state `from` to `to` (`end` when it ended).
    AgentRouted = "agent_routed" {
        from: String,
        to: String,
        signal: Option<String>,
        /// The index of the exit of `from` that was taken.
        exit: Option<usize>,
    },
    /// The reply carried more than one routing signal.
    MultiKeyword = "multi_keyword" { keywords: Vec<String>, consecutive: u32 },
    /// The reply carried no routing signal the state knows.
    KeywordNotFound = "keyword_not_found" {
        state: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected_signals: Option<Vec<String>>,
        /// The tama finish key no transition takes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        consecutive: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        foreign_signals: Option<Vec<String>>,
    },
    /// A structured state's reply had no JSON object.
    JsonMissing = "json_missing" { state: String, fields: Vec<String>, consecutive: u32 },
    /// An orchestrator message was added to the history to correct the agent.
    CorrectionInjected = "correction_injected" { reason: String },
    /// A validator, contract, the no-progress check or a termination validator failed.
    ValidationFail = "validation_fail" {
        validator: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        consecutive: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<String>,
        error: String,
        /// The termination condition whose gate failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<usize>,
    },
    /// A recovery agent takes the next turn.
    RecoveryActivated = "recovery_activated" { reason: String, validator: String },
    /// A route or an escalation waits for the operator.
    HitlRequested = "hitl_requested" { from: String, to: String, signal: String },
    /// The operator answered.
    HitlAnswered = "hitl_answered" {
        approved: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redirect_chars: Option<usize>,
    },
    /// An adversarial stage's first round.
    AdversarialStageStart = "adversarial_stage_start" { stage: String },
    /// An adversarial stage passed.
    AdversarialStagePass = "adversarial_stage_pass" { state: String, next: String },
    /// An adversarial stage used its rounds up.
    AdversarialStageTimeout = "adversarial_stage_timeout" { state: String, next: String },
    /// A warning for the operator.
    Warning = "warning" {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A back edge fired more often than it may.
    BackEdgeEscalation = "back_edge_escalation" {
        from: String,
        to: String,
        visit_count: u32,
        max_revisits: u32,
    },
    /// A back edge started a new phase.
    PhaseStart = "phase_start" { phase: u32, from: String, to: String },
    /// The manager of an llm selection named the next agent.
    SelectionMade = "selection_made" { agent: String },
    /// The manager's reply named no agent.
    SelectionFailed = "selection_failed" { reply: String, consecutive: u32 },
    /// A fork's branches start.
    ForkStart = "fork_start" {
        state: String,
        branches: Vec<String>,
        /// On resume: the branches that had finished.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kept: Option<Vec<String>>,
    },
    /// A branch finished.
    BranchEnd = "branch_end" { state: String },
    /// A branch failed.
    BranchError = "branch_error" { error: String },
    /// A fork's branches were merged.
    ForkJoin = "fork_join" { strategy: String, branches: usize },
    /// A termination condition held.
    TerminationTriggered = "termination_triggered" {},
    /// A budget was exceeded.
    BudgetExceeded = "budget_exceeded" (Budget),
    /// A tool call was refused.
    ToolBlocked = "tool_blocked" { tool: String, result: String },
    /// The turn's tool calls went over the per-turn cap.
    ToolLimit = "tool_limit" { max: usize },
    /// An agent's `Context` was assembled before its model call.
    ContextAssembly = "context_assembly" { sources: usize, chars: usize },
    /// The older history was summarised.
    Compaction = "compaction" {
        mode: String,
        reason: String,
        turns_compacted: usize,
        turns_retained: usize,
        through_turn: u32,
        summary_chars: usize,
        /// Only for the modes that call a model (`llm`, `hybrid`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_tokens: Option<u64>,
    },
    /// The summariser's call failed.
    CompactionFailed = "compaction_failed" {
        error: String,
        /// `hybrid`: the summary used instead (`lossless`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fallback: Option<String>,
    },
    /// An agent's request went over its `ContextCapFraction`.
    ContextCapWarning = "context_cap_warning" (ContextCap),
    /// The verifier takes the next turn.
    VerifierScheduled = "verifier_scheduled" { reason: String, after: String },
    /// The verifier found nothing.
    VerifierPassed = "verifier_passed" {},
    /// The verifier reported a finding.
    VerifierFinding = "verifier_finding" { keyword: String },
    /// A sub-agent started.
    SubAgentStart = "sub_agent_start" {
        mode: String,
        query: String,
        max_tool_calls: u32,
        tools: usize,
    },
    /// A sub-agent's tool call was answered.
    SubAgentToolCall = "sub_agent_tool_call" {
        tool: String,
        ok: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    /// A sub-agent ended.
    SubAgentEnd = "sub_agent_end" {
        mode: String,
        outcome: String,
        tool_calls: u32,
        input_tokens: u64,
        output_tokens: u64,
        result_chars: usize,
    },
    /// An MCP server started and listed its tools.
    McpServerStarted = "mcp_server_started" { server: String, transport: String, tools: usize },
    /// An MCP server's tool was called.
    McpToolCall = "mcp_tool_call" { server: String, tool: String, name: String, ok: bool },
    /// The magentic manager's facts and first plan.
    MagenticOrientation = "magentic_orientation" { facts: Option<String>, plan: Option<String> },
    /// The plan the rounds start with.
    MagenticPlan = "magentic_plan" { plan: Option<String> },
    /// The plan revised after the operator's feedback.
    MagenticPlanRevised = "magentic_plan_revised" { plan: Option<String> },
    /// The operator's answer to the plan review.
    MagenticPlanReview = "magentic_plan_review" { answer: String, feedback_chars: Option<usize> },
    /// A new plan after the team stalled.
    MagenticReplan = "magentic_replan" {
        cycle: u32,
        facts: Option<String>,
        plan: Option<String>,
    },
    /// A round's progress ledger.
    MagenticLedger = "magentic_ledger" {
        round: u32,
        satisfied: bool,
        in_loop: bool,
        progress: bool,
        next_speaker: Option<String>,
        reason: Option<String>,
        instruction: Option<String>,
        stalls: u32,
    },
    /// The manager's ledger could not be read.
    MagenticLedgerInvalid = "magentic_ledger_invalid" {
        round: u32,
        error: String,
        consecutive: u32,
        stalls: u32,
    },
    /// The team stalled: the manager replans.
    MagenticStalled = "magentic_stalled" { stalls: u32, cycle: u32 },
    /// The manager used its rounds up.
    MagenticRoundLimit = "magentic_round_limit" { rounds: u32 },
    /// The team stalled after the last replan allowed.
    MagenticResetLimit = "magentic_reset_limit" { resets: u32, stalls: u32 },
    /// The manager's final answer.
    MagenticComplete = "magentic_complete" { rounds: u32, chars: usize },
}
