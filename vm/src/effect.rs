//! The closed set of effects: everything the machine asks of the world, and the answers.
//!
//! The machine never performs these itself: its `step` returns a [`Request`]; the driver
//! performs it and feeds a [`Response`] to its `resume`.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value as Json;

use crate::event::Event;
use crate::history::{Message, Spend, ToolCall, Usage};

/// A chat message as sent to a model.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatMessage {
    pub role: ChatRole,
    /// Shared, not copied: a request carries the history's own text (and the same text again
    /// in every later request), and a provider can tell a message it already sent by this
    /// pointer.
    pub content: Arc<str>,
    /// For assistant messages: the tool calls it made. For tool messages: empty.
    pub tool_calls: Vec<ToolCall>,
    /// For tool messages: the id of the call this answers.
    pub tool_call_id: Option<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ChatRole {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool the model is offered.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Json,
}

/// The suffix of the replay queue a sub-agent's replies come from: `Developer/sub_agent`.
pub const QUEUE_SUFFIX: &str = "/sub_agent";

/// Who a model call is made for: an agent of the program, or one of the machine's own
/// callers. Where it must be text (the replay file's queues, provider caches, the memory
/// webhook) it is its [`Caller::queue`]: the agent's name, `manager`, `compaction`, or
/// `NAME/sub_agent`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Caller {
    /// An agent's own turn (or a step of its pattern).
    Agent(String),
    /// The manager of a `select` state, an `llm` selection or the magentic loop.
    Manager,
    /// The summariser of a compaction.
    Compaction,
    /// The sub-agent the named agent called.
    SubAgent(String),
}

impl Caller {
    /// The queue a replay file keeps this caller's replies under.
    pub fn queue(&self) -> Cow<'_, str> {
        match self {
            Caller::Agent(name) => Cow::Borrowed(name),
            Caller::Manager => Cow::Borrowed("manager"),
            Caller::Compaction => Cow::Borrowed("compaction"),
            Caller::SubAgent(name) => Cow::Owned(format!("{name}{}", QUEUE_SUFFIX)),
        }
    }

    /// The caller a queue name stands for (the inverse of [`Caller::queue`]; any other
    /// name is an agent's).
    pub fn from_queue(queue: &str) -> Caller {
        match queue {
            "manager" => Caller::Manager,
            "compaction" => Caller::Compaction,
            _ => match queue.strip_suffix(QUEUE_SUFFIX) {
                Some(name) => Caller::SubAgent(name.to_string()),
                None => Caller::Agent(queue.to_string()),
            },
        }
    }

    /// The agent of the program the call acts for, if any (a sub-agent's is its caller).
    pub fn agent(&self) -> Option<&str> {
        match self {
            Caller::Agent(name) | Caller::SubAgent(name) => Some(name),
            Caller::Manager | Caller::Compaction => None,
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.queue())
    }
}

/// One model call: who is asked, with what.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCall {
    /// Who the call is for: the agent whose model answers, or the manager, the compaction
    /// or a sub-agent.
    pub agent: Caller,
    /// The agent's resolved model, if the program names one (boxed: a model is large, and
    /// a request should not be).
    pub model: Option<Box<fuseraft_compiler::ir::Model>>,
    pub messages: Vec<ChatMessage>,
    /// Shared: an agent's tools are the same every call, and a provider can tell them so by
    /// this pointer (it keeps their JSON).
    pub tools: Arc<[ToolSchema]>,
    /// The turn this call belongs to (for error messages).
    pub turn: u32,
    /// The JSON fields (dot paths) a structured state's routes read from the reply, when
    /// the agent routes by them: a provider whose server can constrain its output asks for
    /// a JSON object holding them. Empty: the reply is free text.
    pub reply_fields: Arc<[String]>,
}

/// A model's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelReply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// What the call cost in US dollars, when its model has a known price and the server
    /// reported usage; `None` is an unknown cost, not a free call.
    pub cost: Option<f64>,
}

/// What a branch left: kept in the run (and its checkpoint) until the fork joins.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BranchDone {
    /// The branch's state (how a checkpoint names the branch).
    pub state: String,
    pub agent: String,
    pub text: String,
    /// Every tool call the branch made, with its result.
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// What its model calls cost, as far as known.
    pub spend: Spend,
    /// Why its model failed, if it did (the branch then ends with what it had).
    pub error: Option<String>,
}

/// A fork's branch as the driver runs it: its agent's whole tool loop, pure like the
/// machine ([`BranchRun::step`] says what it needs, [`BranchRun::resume`] takes the answer),
/// its events handed out, and what it left once [`BranchRun::step`] says [`Request::Done`].
pub trait BranchRun: std::fmt::Debug + Send + Sync {
    /// The branch's agent.
    fn agent(&self) -> &str;
    fn step(&mut self) -> Request;
    fn resume(&mut self, response: Response);
    /// Adds the events of its tool calls, in order among its own.
    fn add_events(&mut self, events: Vec<Event>);
    /// Its events since the last call.
    fn drain_events(&mut self) -> Vec<Event>;
    /// What it left (once [`BranchRun::step`] said [`Request::Done`]).
    fn finish(self: Box<Self>) -> BranchDone;
    fn boxed_clone(&self) -> Box<dyn BranchRun>;
    /// Whether `other` is the same branch in the same place.
    fn same_as(&self, other: &dyn BranchRun) -> bool;
    fn as_any(&self) -> &dyn std::any::Any;

    /// Steps the branch to its end, answering each request with `answer` in turn (a
    /// synchronous driver's way; the tool-call cap bounds the loop).
    fn run_with(mut self: Box<Self>, answer: &mut dyn FnMut(&Request) -> Response) -> BranchDone {
        loop {
            let request = self.step();
            if request == Request::Done {
                return self.finish();
            }
            self.resume(answer(&request));
        }
    }
}

impl Clone for Box<dyn BranchRun> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

impl PartialEq for Box<dyn BranchRun> {
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other.as_ref())
    }
}

/// How a plan review's signal starts in events.
pub const PLAN_REVIEW: &str = "plan review:";

/// What an approval asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Question {
    /// A route on this signal or finish key (`RequireHumanApproval`, a `human_approval` guard).
    Route { signal: String },
    /// A tool call the permission policy puts to the operator.
    ToolCall,
    /// A failure escalated to the operator (`EscalateToHuman`, or a run about to end stuck
    /// under `--hitl`), `why` saying which: yes lets the agent try again, a redirect gives it
    /// the operator's direction.
    Escalation { why: String },
    /// The magentic manager's plan, whose first line this is: yes runs it, a redirect asks
    /// for a revised one.
    PlanReview { first_line: String },
    /// A tama `human` step's line: the answer is the text; this is what the step before it
    /// returned.
    Human { context: String },
}

impl Question {
    /// Whether the answer may be the operator's text, not only yes or no.
    pub fn takes_text(&self) -> bool {
        matches!(
            self,
            Question::Escalation { .. } | Question::PlanReview { .. } | Question::Human { .. }
        )
    }

    /// Its kind's name, as the web view and a served session's status give it: `route`,
    /// `tool`, `escalation`, `plan` or `human`.
    pub fn kind(&self) -> &'static str {
        match self {
            Question::Route { .. } => "route",
            Question::ToolCall => "tool",
            Question::Escalation { .. } => "escalation",
            Question::PlanReview { .. } => "plan",
            Question::Human { .. } => "human",
        }
    }

    /// The question as events and the audit chain spell it (`signal`): the route's signal,
    /// `tool`, `escalation: V failed`, `plan review: …`, `human: …`.
    pub fn signal(&self) -> String {
        match self {
            Question::Route { signal } => signal.clone(),
            Question::ToolCall => "tool".to_string(),
            Question::Escalation { why } => format!("escalation: {why}"),
            Question::PlanReview { first_line } => format!("{PLAN_REVIEW} {first_line}"),
            Question::Human { context } => format!("human: {context}"),
        }
    }
}

/// One validator or contract predicate to evaluate against the artifacts on disk.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub of: CheckOf,
    pub params: CheckParams,
}

impl Check {
    /// Whether the check runs commands (the related tests): it acts, where every other
    /// check only reads.
    pub fn runs_commands(&self) -> bool {
        use fuseraft_compiler::ir::{PredicateType, Validator};
        matches!(
            self.of,
            CheckOf::Validator(Validator::RequireRelatedTestsPass)
                | CheckOf::Predicate(PredicateType::RelatedTestsPass)
        )
    }
}

/// The parameters a check reads, taken from the program's `key: value` pairs once, when the
/// check is made: keys ignore case, a blank value is unset, a flag is `true`, `yes`, `on` or
/// `1` (any case). Keys no check reads are not kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckParams {
    /// `FileExists`: the file.
    pub path: Option<String>,
    /// `CommandSucceeded`: the command pattern written out.
    pub pattern: Option<String>,
    /// `CommandSucceeded`: the brief field holding the pattern, in `pattern_source`.
    pub pattern_field: Option<String>,
    pub pattern_source: Option<String>,
    /// `RequireShellPass`: which passing command counts.
    pub required_command_pattern: Option<String>,
    /// `RequireWriteFile`: a shell command that counts as writing.
    pub shell_fallback_pattern: Option<String>,
    /// `FilesWritten`: the JSON file and its array field.
    pub source: Option<String>,
    pub field: Option<String>,
    /// `RequireShellPass`: the passing command must be of the current turn.
    pub require_current_turn: bool,
    /// `TestsPassed`: no failures, and at least one assertion.
    pub no_failures: bool,
    pub has_assertions: bool,
}

impl CheckParams {
    /// The parameters among `pairs` (the first of a key written twice).
    pub fn of(pairs: &[(String, String)]) -> CheckParams {
        let text = |key: &str| {
            pairs
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(key))
                .map(|(_, value)| value.trim())
                .filter(|value| !value.is_empty())
                .map(str::to_string)
        };
        let flag = |key: &str| {
            text(key).is_some_and(|value| {
                matches!(
                    value.to_ascii_lowercase().as_str(),
                    "true" | "yes" | "on" | "1"
                )
            })
        };
        CheckParams {
            path: text("Path"),
            pattern: text("Pattern"),
            pattern_field: text("PatternField"),
            pattern_source: text("PatternSource"),
            required_command_pattern: text("RequiredCommandPattern"),
            shell_fallback_pattern: text("ShellFallbackPattern"),
            source: text("Source"),
            field: text("Field"),
            require_current_turn: flag("RequireCurrentTurn"),
            no_failures: flag("NoFailures"),
            has_assertions: flag("HasAssertions"),
        }
    }
}

/// What a check evaluates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckOf {
    Validator(fuseraft_compiler::ir::Validator),
    Predicate(fuseraft_compiler::ir::PredicateType),
    /// A name the program gave that is neither (`fuseraft check` reports it; the check
    /// fails saying so).
    Unknown {
        kind: CheckKind,
        name: String,
    },
}

/// Which table a check's name is read from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CheckKind {
    Validator,
    Predicate,
}

impl Check {
    /// The check a program names: a validator (`RequireShellPass`) or a contract predicate
    /// type (`FileExists`), as the compiler spells them.
    pub fn new(kind: CheckKind, name: &str, params: Vec<(String, String)>) -> Check {
        use fuseraft_compiler::ir::{PredicateType, Validator};
        let of = match kind {
            CheckKind::Validator => Validator::parse(name).map(CheckOf::Validator),
            CheckKind::Predicate => PredicateType::parse(name).map(CheckOf::Predicate),
        };
        Check {
            of: of.unwrap_or_else(|| CheckOf::Unknown {
                kind,
                name: name.to_string(),
            }),
            params: CheckParams::of(&params),
        }
    }

    /// The check's name as the program spells it.
    pub fn name(&self) -> &str {
        match &self.of {
            CheckOf::Validator(validator) => validator.name(),
            CheckOf::Predicate(predicate) => predicate.name(),
            CheckOf::Unknown { name, .. } => name,
        }
    }
}

/// Everything a validator may read besides the files on disk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckContext {
    /// The messages of the current turn (after the newest user message), with tool calls
    /// and their results.
    pub turn_messages: Vec<Message>,
    /// Where the artifacts are and which commands select tests (`Validation`,
    /// `ChangeTracking`, `TestSelector`).
    pub validation: fuseraft_compiler::ir::Validation,
    /// `Security.Sandbox`: what a validator's command does where the OS sandbox is missing.
    pub sandbox: Option<fuseraft_compiler::ir::SandboxMode>,
    /// The run's permission policy (`Security.Permissions`): what commands may do.
    pub permissions: fuseraft_compiler::ir::Permissions,
    pub session_id: String,
    /// The turn index (change-log entries are keyed by it).
    pub turn: u32,
}

/// What a failed check found short, which picks the `FailureHandling` rule that answers
/// it (upstream's failure classes; a repeated reply without tool calls is `NoProgress`
/// whatever the check found, and the machine tells that itself).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shortfall {
    /// The work does not meet the check (`InvalidTransition`).
    #[default]
    Unmet,
    /// An artifact the check reads is absent or unreadable (`MissingEvidence`).
    Missing,
    /// What the reply claims, the record contradicts (`ConflictingEvidence`).
    Conflicting,
}

impl Shortfall {
    /// The class upstream's `FailureClassifier` gives a failure it shows as `text` (phrases,
    /// in its order), decided once where the failure is made, so a run's failure handling
    /// is what upstream's users see.
    pub fn of_text(text: &str) -> Shortfall {
        const CONFLICTING: &[&str] = &[
            "fake",
            "hallucin",
            "inconsistent",
            "no evidence",
            "never ran",
            "never actually ran",
            "not in change log",
            "not recorded",
            "command was not run",
            "no record",
            "fabricated",
            "cannot be verified",
            "unverifiable",
        ];
        const MISSING: &[&str] = &[
            "not found",
            "does not exist",
            "no file",
            "missing",
            "could not read",
            "failed to read",
            "brief not",
            "test report not",
        ];
        let lower = text.to_lowercase();
        if CONFLICTING.iter().any(|phrase| lower.contains(phrase)) {
            Shortfall::Conflicting
        } else if MISSING.iter().any(|phrase| lower.contains(phrase)) {
            Shortfall::Missing
        } else {
            Shortfall::Unmet
        }
    }
}

/// The verdict on one check.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckResult {
    pub ok: bool,
    /// Why it failed (empty when `ok`), for the agent and the operator.
    pub error: String,
    /// What kind of shortfall it was (`Unmet` when `ok`).
    pub shortfall: Shortfall,
}

impl CheckResult {
    pub fn pass() -> CheckResult {
        CheckResult {
            ok: true,
            error: String::new(),
            shortfall: Shortfall::Unmet,
        }
    }

    /// A failure shown as `error`, of the class upstream gives that text
    /// ([`Shortfall::of_text`]).
    pub fn fail(error: impl Into<String>) -> CheckResult {
        let error = error.into();
        CheckResult::short(Shortfall::of_text(&error), error)
    }

    pub fn short(shortfall: Shortfall, error: impl Into<String>) -> CheckResult {
        CheckResult {
            ok: false,
            error: error.into(),
            shortfall,
        }
    }
}

/// What the machine needs next. One is built and consumed per step, so the size of its
/// largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Ask a model. Shared with the turn that asks (which continues the same prompt with
    /// tool results), so the prompt is not copied for the request.
    Model(Arc<ModelCall>),
    /// Run a fork's branches at once, each its agent's whole tool loop on its own history
    /// snapshot: step each [`Branch`] to [`Request::Done`] and answer with one
    /// [`Response::Branch`] per branch, in any order, as each finishes.
    Fork(Vec<Box<dyn BranchRun>>),
    /// Run these tool calls, in order, for `agent`.
    Tools {
        agent: String,
        turn: u32,
        calls: Vec<ToolCall>,
    },
    /// Evaluate these checks, in order, stopping at the first failure.
    Validate {
        checks: Vec<Check>,
        context: Box<CheckContext>,
    },
    /// Ask the operator to approve something (`question` says what): leaving state `from`
    /// for `to`, or, for a tool call, agent `from` running the action `to`.
    Approve {
        from: String,
        to: String,
        question: Question,
    },
    /// Ask the operator for a line of text: the input of `agent`'s step in `state` (tama
    /// `human`), shown `context` (what the step before it returned).
    Ask {
        agent: String,
        state: String,
        context: String,
    },
    /// Read these context sources (`file:PATH`, `brief_field:F`, `changes_recent:N`, ...) for
    /// a handoff; one text block per source, in order.
    Context {
        sources: Vec<fuseraft_compiler::ir::ContextSource>,
        session_id: String,
    },
    /// The run is over.
    Done,
}

/// The answer to a [`Request`].
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    Model(Result<ModelReply, String>),
    /// A fork's branch that finished ([`Branch::finish`]); the fork joins after the last.
    Branch(Box<BranchDone>),
    /// The same calls, with `result` and `ok` filled in.
    Tools(Vec<ToolCall>),
    /// [`Response::Tools`] where some calls were answered by sub-agents, whose model calls
    /// spent `usage` and cost `Spend`: counted in the turn's usage and toward the run's budgets.
    Delegated(Vec<ToolCall>, Usage, Spend),
    /// One result per check evaluated (evaluation stops at the first failure).
    Validate(Vec<CheckResult>),
    Approve(bool),
    /// An answer to a [`Request::Approve`] about an escalated failure (its signal starts
    /// with `escalation:`): let the agent try again with the operator's text in its history.
    Redirect(String),
    Context(Vec<String>),
    /// The operator's line for a [`Request::Ask`]; `None`: nobody answered (the run stops).
    Answer(Option<String>),
}

#[cfg(test)]
mod tests {
    use super::{Caller, CheckParams};

    #[test]
    fn check_params_are_read_once_ignoring_key_case_and_blank_values() {
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect()
        };
        let params = CheckParams::of(&pairs(&[
            ("path", " out/report.json "),
            ("Pattern", "   "),
            ("REQUIREDCOMMANDPATTERN", "cargo test"),
            ("RequiredCommandPattern", "ignored: the first one counts"),
            ("RequireCurrentTurn", "Yes"),
            ("NoFailures", "0"),
            ("Unknown", "dropped"),
        ]));
        assert_eq!(params.path.as_deref(), Some("out/report.json"));
        assert_eq!(params.pattern, None);
        assert_eq!(
            params.required_command_pattern.as_deref(),
            Some("cargo test")
        );
        assert!(params.require_current_turn);
        assert!(!params.no_failures && !params.has_assertions);
        assert_eq!(CheckParams::of(&[]), CheckParams::default());
    }

    #[test]
    fn a_callers_queue_reads_back_as_the_same_caller() {
        let callers = [
            Caller::Agent("Developer".into()),
            Caller::Manager,
            Caller::Compaction,
            Caller::SubAgent("Developer".into()),
        ];
        let queues: Vec<String> = callers.iter().map(Caller::to_string).collect();
        assert_eq!(
            queues,
            ["Developer", "manager", "compaction", "Developer/sub_agent"]
        );
        for caller in callers {
            assert_eq!(Caller::from_queue(&caller.queue()), caller);
        }
        assert_eq!(Caller::SubAgent("Dev".into()).agent(), Some("Dev"));
        assert_eq!(Caller::Manager.agent(), None);
    }
}
