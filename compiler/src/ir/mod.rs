//! The state-graph IR: everything the VM knows about a workflow.
//!
//! Built by `lower`, checked by `check`, printed and parsed back by `print`/`parse`,
//! executed by `fuseraft-vm`. Flat and indexed by newtype ids; nothing here mentions YAML
//! or pest. This module is the single contract between the compiler and the VM.

mod analysis;
mod capability;
mod checks;
mod compaction;
mod cond;
mod conditions;
mod diagram;
mod fork;
mod fraction;
pub mod list_prices;
mod matching;
mod mcp;
mod no_replan;
mod parse;
mod policy;
mod print;
mod program;
mod settings;
mod step;
mod sub_agent;
mod tools;
mod verifier;
mod views;

/// The closest of a registry's names to a misspelt one, for the VM's own refusals (the
/// compiler's diagnostics use the same).
pub use crate::diagnostic::did_you_mean;
pub use analysis::{classify_edges, layer_states, Graph};
pub use checks::{PredicateType, Validator, UNIMPLEMENTED_PREDICATES, UNIMPLEMENTED_VALIDATORS};
pub use compaction::{Compaction, CompactionMode};
pub use cond::{Cond, Field, Value};
pub use conditions::{extract_json, CondInput};
pub use diagram::{to_dot, to_mermaid};
pub use fork::{Fork, Merge};
pub use fraction::Fraction;
pub use matching::is_punctuation;
pub use mcp::{
    McpServer, McpServerId, McpToolRef, McpTransport, ToolRef, MAX_TOOL_NAME, MCP_SEPARATOR,
    UPSTREAM_PLUGINS,
};
pub use no_replan::{drop_replan_transitions, replans_apply, DroppedTransition};
pub use parse::{parse, ParseError};
pub use policy::{envelope_glob, Action, Category, Permissions, Preset, SandboxMode};
pub use print::{print, PrintOptions};
pub use settings::{ApiProfile, BadSetting, Security, Validation};
pub use step::{Part, Skill, Step, StepKey, Template, TemplateError};
pub use sub_agent::{
    sub_agent_tools, SubAgentMode, SubAgentSettings, DEFAULT_EXPLORE_CALLS, LOCATE_CALLS,
};
pub use tools::{Capability, Plugin, Tool};
pub use verifier::Verifier;
pub use views::{to_json, trigger_label};

use std::fmt;

/// Index of an agent in [`Program::agents`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(pub u32);

/// Index of a state in [`Program::states`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateId(pub u32);

/// Index of a contract in [`Program::contracts`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContractId(pub u32);

/// Index of a counter in [`Program::counters`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CounterId(pub u32);

/// Index of a source file in [`Program::files`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileIdx(pub u32);

/// Where an IR element came from: file, 1-based line and column.
/// The IR keeps positions rather than byte offsets so that its text form round-trips
/// without the sources; `None` for elements the lowering synthesised.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    pub file: FileIdx,
    pub line: u32,
    pub column: u32,
}

/// One compiled workflow.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    /// Which frontend and routing family produced this program.
    pub origin: Origin,
    /// Source files by [`FileIdx`], as the user should see their paths.
    pub files: Vec<String>,
    pub entry: StateId,
    pub agents: Vec<Agent>,
    pub states: Vec<State>,
    pub contracts: Vec<Contract>,
    pub counters: Vec<Counter>,
    pub termination: Termination,
    pub failure: FailurePolicy,
    /// Run-wide settings as written (`Validation.BriefPath`, `Security.Sandbox`, ...), by
    /// dotted key, in order: what the `.fir` form prints. `Security.Permissions.*` is not
    /// among them: it is [`Program::permissions`]. The VM reads the typed sections below,
    /// which [`Program::settle_settings`] fills from these.
    pub settings: Vec<(String, String)>,
    /// `Security.*` (but `Permissions`), typed.
    pub security: Security,
    /// `Validation.*`, `ChangeTracking.Path` and `TestSelector.*`, typed.
    pub validation: Validation,
    /// `Chatroom.Path`: the file a run's chatroom is copied to, relative to the work dir.
    pub chatroom_path: Option<String>,
    /// `ApiProfiles`, the Http tools' named base URLs.
    pub api_profiles: Vec<ApiProfile>,
    /// Whether each model call carries the routing block (`RoutingInstructions`, on unless
    /// the config says `false`).
    pub routing_instructions: bool,
    /// The `Verifier` section, when it names an agent of a group-chat loop.
    pub verifier: Option<Verifier>,
    /// The `Compaction` section, when there is one.
    pub compaction: Option<Compaction>,
    /// The permission policy (`Security.Permissions`).
    pub permissions: Permissions,
    /// `McpServers`, connected by the VM at run start; agents list them in `Plugins`.
    pub mcp_servers: Vec<McpServer>,
    /// The model `Compaction.Model` names (the section's other keys are written settings,
    /// typed into [`Program::compaction`]).
    pub compaction_model: Option<Model>,
    /// tama skills the agents use, by name.
    pub skills: Vec<Skill>,
}

/// The setting (`Program::settings`) that `RoutingInstructions: false` writes: no routing
/// block after an agent's instructions.
pub const ROUTING_INSTRUCTIONS: &str = "Orchestration.RoutingInstructions";

/// The frontend and routing family a program was lowered from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A fuseraft config (`Orchestration:` root) with this `Selection.Type`.
    Fuseraft(SelectionKind),
    /// A tama project; the entry agent's pattern is `fsm` or an opaque pattern.
    Tama,
}

/// `Selection.Type` of a fuseraft config.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SelectionKind {
    Sequential,
    RoundRobin,
    Keyword,
    Structured,
    StateMachine,
    Graph,
    Workflow,
    Adversarial,
    Llm,
    Magentic,
    MapReduce,
    ScatterGather,
}

impl SelectionKind {
    pub const ALL: &'static [SelectionKind] = &[
        SelectionKind::Sequential,
        SelectionKind::RoundRobin,
        SelectionKind::Keyword,
        SelectionKind::Structured,
        SelectionKind::StateMachine,
        SelectionKind::Graph,
        SelectionKind::Workflow,
        SelectionKind::Adversarial,
        SelectionKind::Llm,
        SelectionKind::Magentic,
        SelectionKind::MapReduce,
        SelectionKind::ScatterGather,
    ];

    /// The spelling used in configs (compared case-insensitively there).
    pub fn as_str(self) -> &'static str {
        match self {
            SelectionKind::Sequential => "sequential",
            SelectionKind::RoundRobin => "roundrobin",
            SelectionKind::Keyword => "keyword",
            SelectionKind::Structured => "structured",
            SelectionKind::StateMachine => "statemachine",
            SelectionKind::Graph => "graph",
            SelectionKind::Workflow => "workflow",
            SelectionKind::Adversarial => "adversarial",
            SelectionKind::Llm => "llm",
            SelectionKind::Magentic => "magentic",
            SelectionKind::MapReduce => "mapreduce",
            SelectionKind::ScatterGather => "scattergather",
        }
    }

    pub fn parse(text: &str) -> Option<SelectionKind> {
        SelectionKind::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

/// An agent: who answers in a state.
#[derive(Clone, Debug, PartialEq)]
pub struct Agent {
    pub name: String,
    pub description: Option<String>,
    /// The resolved model (`Models:` alias applied); `None` when the config names none.
    pub model: Option<Model>,
    /// The system prompt: fuseraft `Instructions`, or the body of a tama `AGENT.md`.
    pub instructions: String,
    /// Tool sets offered to the model: fuseraft `Plugins`, tama `call.uses` skills.
    pub tools: Vec<String>,
    /// `auto`, `required` or `none` (fuseraft `FunctionChoice`).
    pub tool_choice: ToolChoice,
    /// Per-plugin capability tags (`Capabilities: { FileSystem: [read] }`): a plugin listed
    /// here offers only the tools its tags allow; plugins not listed offer all their tools.
    pub capabilities: Vec<(Plugin, Vec<Capability>)>,
    /// What history the agent sees.
    pub context: Context,
    /// The tama pattern of an opaque tama agent (`react`, `oneshot`, `scatter`, ...).
    pub pattern: Option<String>,
    /// Its sub-agent's settings (`SubAgentModel`, `SubAgentPlugins`,
    /// `SubAgentMaxToolCalls`), used when it lists the `SubAgent` plugin.
    pub sub_agent: SubAgentSettings,
    pub loc: Option<Loc>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    Required,
    None,
}

/// A resolved model configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    /// The `Models:` alias (or tama role) this came from.
    pub alias: Option<String>,
    pub provider: Option<String>,
    pub id: String,
    pub endpoint: Option<String>,
    /// Environment variable holding the API key. Literal keys never enter the IR.
    pub api_key_env: Option<String>,
    /// True when the config carried a literal `ApiKey` (kept out of the IR on purpose).
    pub has_literal_key: bool,
    /// Kept as written so the text form round-trips exactly.
    pub temperature: Option<String>,
    pub max_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    /// `MaxContextTokens`: the model's context window in tokens (requests are fitted to
    /// it); `None` leaves it to the VM's table of well-known models.
    pub context_window: Option<u64>,
    /// `Pricing`: what the model's tokens cost, overriding the VM's bundled price table.
    pub pricing: Option<Pricing>,
    /// `ConnectTimeoutSeconds`, `IdleTimeoutSeconds`, `TimeoutSeconds`.
    pub timeouts: ModelTimeouts,
}

/// A model's prices in US dollars per million tokens (`Pricing`). Never negative, always
/// finite (the reader refuses anything else).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Pricing {
    /// `InputPerMillion`.
    pub input: f64,
    /// `OutputPerMillion`.
    pub output: f64,
    /// `CachedInputPerMillion`: input tokens the provider reports as read from its prompt
    /// cache; without it they cost the full input price.
    pub cached_input: Option<f64>,
}

/// How long a model's requests may take, in seconds; each one unset takes the command
/// line's flag or the default. Always positive and finite (the reader refuses anything else).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ModelTimeouts {
    /// `ConnectTimeoutSeconds`: the longest wait to connect.
    pub connect: Option<f64>,
    /// `IdleTimeoutSeconds`: the longest wait for the next bytes of a response.
    pub idle: Option<f64>,
    /// `TimeoutSeconds`: the overall cap of one attempt, streaming included.
    pub overall: Option<f64>,
}

/// What history an agent (or a state) sees when it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    pub mode: ContextMode,
    /// Explicit context sources (`Context:` of an agent): only these plus the task.
    pub sources: Vec<ContextSource>,
    /// `ContextWindow.TextOnly`.
    pub text_only: bool,
    /// `ContextWindow.ExcludeAgents`.
    pub exclude_agents: Vec<String>,
    /// `ContextWindow.MaxTailMessages` (0 = all).
    pub max_tail: u32,
    /// `ContextWindow.MaxTurnAge`: requests leave out messages more than this many turns
    /// old (0 = all).
    pub max_turn_age: u32,
    /// `ContextWindow.MaxToolResultChars`: each tool result a request carries is cut to
    /// this many characters (0 = whole).
    pub max_tool_result_chars: u32,
    /// `ContextWindow.MaxReplayChars`: the replayed history's total characters, oldest
    /// out first, the task always kept (0 = no cap).
    pub max_replay_chars: u32,
    /// `ContextWindow.ContextCapFraction`: a request is capped at this share of its
    /// model's context window, and warned about past this share of `MaxTailMessages`
    /// (`None` = off).
    pub cap_fraction: Option<Fraction>,
    /// `ContextWindow.ToolResultCharOverrides`: per tool, the characters a tool result is
    /// cut to in place of `max_tool_result_chars`.
    pub tool_result_overrides: Vec<(Tool, u32)>,
}

impl Default for Context {
    fn default() -> Context {
        Context {
            mode: ContextMode::Shared,
            sources: Vec::new(),
            text_only: false,
            exclude_agents: Vec::new(),
            max_tail: 0,
            max_turn_age: 0,
            max_tool_result_chars: 0,
            max_replay_chars: 0,
            cap_fraction: None,
            tool_result_overrides: Vec::new(),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ContextMode {
    /// The shared conversation history, filtered.
    Shared,
    /// Instructions plus the artifact under review only (adversarial critic).
    Firewall,
    /// Only the previous state's finish value (tama).
    Value,
    /// Only the declared context sources.
    Artifacts,
}

/// A context source: `session_context`, `changes_recent:N`, `brief_field:F`, `file:PATH`, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextSource {
    pub source: String,
    /// 0 means the default (4000 characters).
    pub max_chars: u32,
    pub label: Option<String>,
}

/// What a context source reads: its text parsed ([`ContextSource::kind`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SourceKind<'a> {
    /// The summary written with `session_context_write`.
    SessionContext,
    /// The newest change-log entries of the session (`changes_recent:N`, default 3).
    ChangesRecent(Option<usize>),
    /// A top-level field of the brief (`brief_field:F`).
    BriefField(&'a str),
    /// A file under the sandbox root (`file:PATH`).
    File(&'a str),
    /// The agent's own newest replies (`own_history:N`, default 6; agent `Context` only).
    OwnHistory(Option<usize>),
    /// A name fuseraft does not read (`execution_state`, `investigation_log`, a typo).
    Other(&'a str),
}

impl SourceKind<'_> {
    /// The names of the sources fuseraft reads, as written before the `:` (the lowering's
    /// did-you-mean and the docs list these; [`ContextSource::kind`] reads each).
    pub const NAMES: &'static [&'static str] = &[
        "session_context",
        "changes_recent",
        "brief_field",
        "file",
        "own_history",
    ];
}

impl ContextSource {
    /// The kind of source this is: the part before the first `:` names it (ASCII
    /// case-insensitive), the rest is its argument.
    pub fn kind(&self) -> SourceKind<'_> {
        let text = self.source.trim();
        let (name, argument) = text.split_once(':').unwrap_or((text, ""));
        let count = || argument.trim().parse::<usize>().ok();
        match name.trim().to_ascii_lowercase().as_str() {
            "session_context" => SourceKind::SessionContext,
            "changes_recent" => SourceKind::ChangesRecent(count()),
            "brief_field" => SourceKind::BriefField(argument.trim()),
            "file" => SourceKind::File(argument.trim()),
            "own_history" => SourceKind::OwnHistory(count()),
            _ => SourceKind::Other(text),
        }
    }
}

/// A state of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub name: String,
    /// The agent that runs in this state (`None` for forks, selects and agentless states).
    pub agent: Option<AgentId>,
    pub kind: StateKind,
    /// A context policy that overrides the agent's own in this state (adversarial critic).
    pub context: Option<ContextMode>,
    /// BFS distance from the entry over every exit kind; `None` when unreachable.
    pub layer: Option<u32>,
    /// Ordered: the first exit whose trigger and guards hold is taken.
    pub exits: Vec<Exit>,
    /// What happens when no exit matches the reply.
    pub no_match: NoMatch,
    pub stuck: StuckPolicy,
    /// A tama state: what it is given and the key its reply routes on (`None` elsewhere).
    pub step: Option<Step>,
    pub loc: Option<Loc>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StateKind {
    /// Run the agent, then choose an exit.
    Turn,
    /// A state where the run ends.
    Terminal(TerminalMode),
    /// Run each branch state's agent once, concurrently, on an isolated history snapshot;
    /// merge the outputs; continue at `join`.
    Fork(Fork),
    /// A manager model picks the next agent (`llm`, `magentic`). Boxed: its model (prices,
    /// timeouts) makes it several times the size of the other kinds.
    Select(Box<Select>),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TerminalMode {
    /// Graph `Terminal: true`, tama null state with an agent: run the agent once
    /// (its exits, all to `end`, carry the terminal validators), then end.
    RunOnce,
    /// End without running anything.
    EndNow,
    /// State machine `Terminal: true`: keep running the agent until a termination fires.
    RunUntilTermination,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub style: SelectStyle,
    /// The manager model (`Selection.Model`, `Magentic.Model`).
    pub manager: Option<Model>,
    /// `Selection.Prompt` / `Magentic.Instructions`.
    pub prompt: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectStyle {
    Llm,
    Magentic {
        max_rounds: u32,
        max_stalls: u32,
        max_resets: u32,
        plan_review: bool,
    },
}

/// One way out of a state.
#[derive(Clone, Debug, PartialEq)]
pub struct Exit {
    pub trigger: Trigger,
    /// All must pass, in order, for the exit to be taken.
    pub guards: Vec<Guard>,
    /// Performed when the exit is taken.
    pub effects: Vec<Effect>,
    pub target: Target,
    /// `back` when the target is an ancestor on the depth-first search from the entry.
    pub class: EdgeClass,
    /// Run once when a guard of this exit keeps failing (`RecoveryAgent`).
    pub recovery: Option<AgentId>,
    pub loc: Option<Loc>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Trigger {
    /// A routing keyword on its own line of the reply, or a `handoff(route_keyword)` call.
    Signal {
        text: String,
        matcher: Matcher,
        /// Only replies by these agents count (empty: any agent).
        sources: Vec<AgentId>,
    },
    /// A tama `finish(key, value)` with exactly this key (lowercased by the VM).
    FinishKey(String),
    /// Any finish key (tama `"*"`): ranked after every exact key.
    AnyKey,
    /// A condition over the reply's JSON and the run (structured routes).
    Cond { cond: Cond, sources: Vec<AgentId> },
    /// The manager of a `select` state chose this exit's target.
    Chosen,
    /// Always taken (unconditional edges, sequential order).
    Always,
    /// Taken when no earlier exit matched.
    Otherwise,
}

/// How a signal is found in a reply's text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Matcher {
    /// Keyword and state-machine routing: `*`/`_` removed, keyword + whitespace or punctuation.
    Relaxed,
    /// Graph and workflow: the line, trimmed of `*`, `_` and spaces, equals the keyword.
    Strict,
    /// Adversarial pass keyword: the whitespace-trimmed line equals the keyword.
    Exact,
}

impl Matcher {
    pub fn as_str(self) -> &'static str {
        match self {
            Matcher::Relaxed => "relaxed",
            Matcher::Strict => "strict",
            Matcher::Exact => "exact",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Guard {
    /// A named validator of the seeds with its parameters (`RequiredCommandPattern`, ...).
    Validator {
        name: String,
        params: Vec<(String, String)>,
    },
    Contract(ContractId),
    /// A condition that must also hold (keyword routes with a `Condition`).
    Cond(Cond),
    /// The operator must approve the route.
    HumanApproval,
    /// The counter must be below the limit.
    CounterBelow(CounterId, u32),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Append these context blocks after the turn-boundary marker (`HandoffContext`).
    InjectContext(Vec<ContextSource>),
    Count(CounterId),
    Reset(CounterId),
    /// Graph back edge: end the phase and restart it from the target.
    PhaseBreak,
    /// Adversarial: the artifact becomes the next stage's input and joins the history.
    PromoteArtifact,
    /// Inject the previous reply (the critique) into the target's next turn.
    InjectCritique,
    /// Emit a warning event with this text.
    Warn(String),
    /// `MaxRevisits`: count firings of this exit; past the limit inject an escalation
    /// message (reading objections from the path, if given) and still fire.
    Revisit {
        counter: CounterId,
        max: u32,
        objections: Option<String>,
    },
    /// tama: the value the target is given becomes this template, filled in.
    SetValue(Template),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    State(StateId),
    End,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EdgeClass {
    Forward,
    Back,
}

/// What a state does when no exit matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoMatch {
    /// Inject a correction (listing the valid signals when `nudge`) and re-invoke the agent.
    Correct { nudge: bool },
    /// Continue at another state (keyword `DefaultAgent`).
    Fallback(StateId),
    /// A tama finish key no transition routes: correct the agent naming the keys that do
    /// (a reply without `finish` is key `done`), and stop the run `stuck` at the state's
    /// threshold; a state with no keyed exit at all stops with an error ("no transition for
    /// key").
    Fail,
    /// Nothing to match: the state has unconditional exits or none.
    Never,
}

/// Per-state bounds that turn a stuck loop into a stopped run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StuckPolicy {
    /// Consecutive failures (no keyword, several keywords, validator) before the run is stuck
    /// (graph `MaxRetries`).
    pub max_retries: Option<u32>,
    /// Turns in one visit of the state before the run is stuck (graph `MaxRetries × MaxTotalTurnsMultiplier`).
    pub max_visit_turns: Option<u32>,
    /// Turns without a routing signal before the run is stuck
    /// (`FailureHandling.MaxConsecutiveTurnsWithoutSignal`).
    pub max_without_signal: Option<u32>,
}

/// How the run ends when no terminal state ends it: any one of these firing stops the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Termination {
    pub any: Vec<TermCond>,
    /// Validators that must pass before a termination may stop the run.
    pub validators: Vec<Guard>,
    /// Validators of a composite's child strategies: each must pass before one of its
    /// child's conditions may stop the run (checked before [`Termination::validators`]).
    pub gates: Vec<StopGate>,
    /// `MaxTotalTokens`: a hard budget; exceeding it ends the run with outcome `budget`.
    pub max_total_tokens: Option<u64>,
    /// `MaxTotalCost`: a hard budget in US dollars; reaching it ends the run with outcome
    /// `budget`. Only calls with a known price count (a model without one cannot be held to
    /// it, which `check` and the run say).
    pub max_total_cost: Option<f64>,
    /// What `max_turns` counts (graph configs count phases).
    pub unit: TurnUnit,
}

/// A composite child's `Validators`: they gate the conditions `any[first..end]` the child
/// lowered to. A failure injects the error and lets the composite try its next child
/// (the conditions from `end` on), as upstream's validated child strategy does.
#[derive(Clone, Debug, PartialEq)]
pub struct StopGate {
    pub first: usize,
    pub end: usize,
    pub validators: Vec<Guard>,
}

impl StopGate {
    pub fn covers(&self, cond: usize) -> bool {
        (self.first..self.end).contains(&cond)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum TermCond {
    /// Case-insensitive regex over the newest reply (of one of `agents`, if given).
    Regex {
        pattern: String,
        agents: Vec<String>,
    },
    MaxTurns(u32),
    /// Cumulative tokens reach this many.
    Tokens(u64),
    /// A structured condition over the newest reply's JSON.
    Cond(Cond),
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TurnUnit {
    #[default]
    Turns,
    Phases,
}

/// `FailureHandling`: how validator and contract failures are classified and escalated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailurePolicy {
    pub missing_evidence: FailureRule,
    pub invalid_transition: FailureRule,
    pub conflicting_evidence: FailureRule,
    pub no_progress: FailureRule,
    /// Global backstop across contract keys (0 = off).
    pub max_contract_failures: u32,
}

impl Default for FailurePolicy {
    fn default() -> FailurePolicy {
        FailurePolicy {
            missing_evidence: FailureRule::new(FailureAction::Reinstruct, 3),
            invalid_transition: FailureRule::new(FailureAction::Reinstruct, 3),
            conflicting_evidence: FailureRule::new(FailureAction::Reinstruct, 2),
            no_progress: FailureRule::new(FailureAction::Abort, 3),
            max_contract_failures: 0,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FailureRule {
    pub action: FailureAction,
    pub threshold: u32,
}

impl FailureRule {
    pub fn new(action: FailureAction, threshold: u32) -> FailureRule {
        FailureRule { action, threshold }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FailureAction {
    Reinstruct,
    ActivateRecovery,
    EscalateToHuman,
    Abort,
}

impl FailureAction {
    pub const ALL: &'static [FailureAction] = &[
        FailureAction::Reinstruct,
        FailureAction::ActivateRecovery,
        FailureAction::EscalateToHuman,
        FailureAction::Abort,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureAction::Reinstruct => "reinstruct",
            FailureAction::ActivateRecovery => "activate_recovery",
            FailureAction::EscalateToHuman => "escalate_to_human",
            FailureAction::Abort => "abort",
        }
    }

    /// Parses config spellings (`Reinstruct`, `ActivateRecovery`, ...) and IR spellings.
    pub fn parse(text: &str) -> Option<FailureAction> {
        let folded: String = text
            .chars()
            .filter(|ch| *ch != '_')
            .collect::<String>()
            .to_ascii_lowercase();
        FailureAction::ALL
            .iter()
            .copied()
            .find(|action| action.as_str().replace('_', "") == folded)
    }
}

/// A named contract: predicates over artifacts on disk, all of which must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Contract {
    pub name: String,
    pub predicates: Vec<Predicate>,
    pub loc: Option<Loc>,
}

/// One contract predicate: `Type` plus its parameters, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Predicate {
    pub kind: String,
    pub params: Vec<(String, String)>,
}

/// A run-wide counter (adversarial rounds, revisit counts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    pub name: String,
}

impl Program {
    /// A template's text form, its states by name.
    pub fn template_text(&self, template: &Template) -> String {
        template.to_text(|id| {
            self.states
                .get(id.0 as usize)
                .map_or_else(|| format!("#{}", id.0), |state| state.name.clone())
        })
    }

    pub fn agent(&self, id: AgentId) -> &Agent {
        &self.agents[id.0 as usize]
    }

    pub fn state(&self, id: StateId) -> &State {
        &self.states[id.0 as usize]
    }

    pub fn contract(&self, id: ContractId) -> &Contract {
        &self.contracts[id.0 as usize]
    }

    pub fn counter(&self, id: CounterId) -> &Counter {
        &self.counters[id.0 as usize]
    }

    pub fn state_ids(&self) -> impl Iterator<Item = StateId> {
        (0..self.states.len() as u32).map(StateId)
    }

    pub fn agent_ids(&self) -> impl Iterator<Item = AgentId> {
        (0..self.agents.len() as u32).map(AgentId)
    }

    pub fn state_named(&self, name: &str) -> Option<StateId> {
        self.states
            .iter()
            .position(|state| state.name == name)
            .map(|idx| StateId(idx as u32))
    }

    pub fn agent_named(&self, name: &str) -> Option<AgentId> {
        self.agents
            .iter()
            .position(|agent| agent.name.eq_ignore_ascii_case(name))
            .map(|idx| AgentId(idx as u32))
    }

    /// Every state a state can continue at: exit targets, fork branches and join.
    pub fn successors(&self, id: StateId) -> Vec<StateId> {
        let state = self.state(id);
        let mut next = Vec::new();
        if let StateKind::Fork(fork) = &state.kind {
            next.extend(fork.branches.iter().copied());
            if let Target::State(join) = fork.join {
                next.push(join);
            }
        }
        for exit in &state.exits {
            if let Target::State(target) = exit.target {
                next.push(target);
            }
        }
        if let NoMatch::Fallback(target) = state.no_match {
            next.push(target);
        }
        next
    }

    /// Recomputes layers and edge classes after the graph changed.
    pub fn analyse(&mut self) {
        layer_states(self);
        classify_edges(self);
    }
}

impl fmt::Display for SelectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::{ContextSource, SourceKind};

    #[test]
    fn context_sources_parse_to_their_kind() {
        let kind = |text: &str| {
            let source = ContextSource {
                source: text.to_string(),
                max_chars: 0,
                label: None,
            };
            format!("{:?}", source.kind())
        };
        let expect = |kind: SourceKind<'_>| format!("{kind:?}");
        assert_eq!(kind("session_context"), expect(SourceKind::SessionContext));
        assert_eq!(
            kind(" Session_Context "),
            expect(SourceKind::SessionContext)
        );
        assert_eq!(
            kind("changes_recent"),
            expect(SourceKind::ChangesRecent(None))
        );
        assert_eq!(
            kind("changes_recent:5"),
            expect(SourceKind::ChangesRecent(Some(5)))
        );
        assert_eq!(
            kind("changes_recent:x"),
            expect(SourceKind::ChangesRecent(None))
        );
        assert_eq!(
            kind("brief_field:goal"),
            expect(SourceKind::BriefField("goal"))
        );
        assert_eq!(kind("file:a/b:c.md"), expect(SourceKind::File("a/b:c.md")));
        assert_eq!(
            kind("own_history:2"),
            expect(SourceKind::OwnHistory(Some(2)))
        );
        assert_eq!(
            kind("execution_state"),
            expect(SourceKind::Other("execution_state"))
        );
        assert_eq!(
            kind("sesion_context"),
            expect(SourceKind::Other("sesion_context"))
        );
    }
}
