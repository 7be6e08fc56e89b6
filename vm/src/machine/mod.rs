//! The machine: a pure step/resume interpreter of an `ir::Program`.
//!
//! `step()` says what the run needs next (a [`Request`]); `resume()` takes the answer. The
//! machine owns the history, counters, turn index, token usage and failure counters; it
//! never awaits, reads a file or calls the network. Routing lives in `route.rs` (and, when a
//! reply routes nowhere, `nomatch.rs`), prompt assembly in `context.rs` (the routing block
//! and tool enums in `guide.rs`), failure handling in `failure.rs` (escalations to the
//! operator in `escalate.rs`), fork merging in `merge.rs`, termination in `stop.rs`, the
//! verifier's turns in `verify.rs`, the run's result and default caps in `result.rs`, the
//! magentic manager's loop in `magentic/`.

mod branch;
mod budget;
mod compact;
mod context;
mod escalate;
mod failure;
mod guide;
mod lossless;
mod magentic;
mod merge;
mod nomatch;
mod notes;
mod request_cap;
mod result;
mod route;
mod steps;
mod stop;
mod sub_agent;
mod turn;
mod verify;
mod views;
mod window;

use std::sync::Arc;
use turn::{Next, Turn};

pub use crate::effect::BranchDone;
pub use branch::Branch;
pub use compact::{Compacted, COMPACTION_AGENT};
pub use context::{bounded, MAX_MESSAGE_CHARS};
pub use magentic::{Magentic, Step as MagenticStep, PLAN_REVIEW};
pub(crate) use merge::branch_state_name;
pub use steps::StepRecord;
pub use sub_agent::{SubAgent, SubAgentDone, MAX_ANSWER_CHARS, QUEUE_SUFFIX};

use std::collections::{HashMap, HashSet};

use fuseraft_compiler::ir::{Program, StateId, StateKind, TermCond, TerminalMode, TurnUnit};

use crate::effect::{ModelReply, Request, Response};
use crate::event::{Event, EventKind, Outcome};
use crate::history::{Message, Role, Spend, ToolCall, Usage};

/// Most tool calls one turn may make before it is cut off.
pub const MAX_TOOL_CALLS_PER_TURN: usize = 40;

/// The turn cap of a fuseraft config that sets none (issue 13: every run is bounded).
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// The step cap of a tama FSM (tama's documented 50-step limit, per run here).
pub const TAMA_MAX_STEPS: u32 = 50;

/// Run-level options the caller chooses.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub session_id: String,
    pub task: String,
    /// A turn cap on top of the program's own (`--max-turns`).
    pub max_turns: Option<u32>,
    /// Skip assembling prompts (messages and tool schemas) for providers that do not read
    /// them, such as the replay provider: building a prompt costs time linear in the history.
    pub skip_prompts: bool,
}

/// Everything a run has accumulated: the part of the machine a checkpoint would save.
#[derive(Clone, Debug)]
pub struct Run {
    pub session_id: String,
    pub task: String,
    pub history: Vec<Message>,
    pub state: StateId,
    /// Turns completed.
    pub turn: u32,
    /// Phases started (graph back edges restart a phase).
    pub phase: u32,
    pub usage: Usage,
    /// What the run's model calls cost, as far as their prices are known.
    pub spend: Spend,
    pub counters: Vec<u32>,
    /// Consecutive failures per key (`state::exit`, `state::no-signal`, ...).
    pub failures: HashMap<String, u32>,
    /// Keys whose recovery agent already ran.
    pub recovered: HashSet<String>,
    /// Turns in the current visit of the current state.
    pub visit_turns: u32,
    /// The finish value of the previous tama state (what the next state receives).
    pub value: Option<String>,
    pub outcome: Option<Outcome>,
    /// Why the run stopped, for `stuck` and `error`.
    pub reason: Option<String>,
    /// What agents noted: session context, scratchpads, chatroom (`tools::notes`).
    pub notes: crate::tools::notes::Notes,
    /// The fork under way: its branches that finished, in the order they did (`None` when
    /// no fork is under way). A checkpoint keeps them, so a resumed run does not run them again.
    pub fork: Option<Vec<BranchDone>>,
    /// The compaction summary in force (`compact.rs`): it replaces the older history in
    /// requests; the history keeps every message.
    pub compaction: Option<Compacted>,
    /// The magentic manager's facts, plan and counters (`None` outside a magentic run).
    pub magentic: Option<Magentic>,
    /// tama pattern steps' newest inputs and values, the newest last (`steps.rs`).
    pub steps: Vec<StepRecord>,
}

/// What the machine is waiting for.
#[derive(Clone, Debug)]
enum Phase {
    /// Ready to start the next turn.
    Ready,
    /// A turn is in progress: a model call is out.
    Model(Turn),
    /// A turn is in progress: its tool calls are out.
    Tools(Turn),
    /// A `select` state asked its manager.
    Select,
    /// The operator was asked for a step's input (tama `human`).
    Asking,
    /// The magentic manager was asked this step of its loop.
    Magentic(MagenticStep),
    /// The operator was asked to review the magentic manager's plan.
    PlanReview,
    /// A fork's branches are out; [`Run::fork`] collects those that finished.
    Fork,
    /// A fork's merge agent was asked: the branches' outputs and tool calls.
    Merge(Vec<(String, String)>, Vec<ToolCall>),
    /// An exit's checks are out.
    Checks {
        exit: usize,
    },
    /// Termination validators are out (a composite child's gate or the section's own).
    TerminationChecks(stop::StopCheck),
    /// The operator was asked to approve an exit.
    Approval {
        exit: usize,
    },
    /// A compaction's summarising model call is out; the summary will replace
    /// `history[1..through]` in requests.
    Compaction(compact::Pending),
    /// A `lossless` or `hybrid` compaction's change-log read is out.
    Reconstruction(compact::Pending),
    /// The operator was asked about a failure (`EscalateToHuman`).
    Escalation(Box<escalate::Escalation>),
    /// `file:` context sources of an exit are being read.
    Context {
        exit: usize,
    },
    /// The sources of the agent's own `Context` are being read before its model call.
    Assembly {
        agent: String,
    },
    Finished,
}

/// What a run that ends at its turn cap right after a correction says about it.
const UNSENT_CORRECTION: &str =
    "the correction above was not sent (no turn was left; `--resume` sends it)";

pub struct Machine<'p> {
    program: &'p Program,
    run: Run,
    phase: Phase,
    options: Options,
    events: Vec<Event>,
    /// A request produced while handling a response, returned by the next `step`.
    pending: Option<Request>,
    /// The agent standing in for the current state's agent for one turn (recovery).
    stand_in: Option<String>,
    /// Contents read for the `file:` context sources of the exit being taken.
    context_blocks: Vec<String>,
    /// The blocks of the agent's own `Context` sources, assembled for its turn (the agent's
    /// name and its blocks).
    assembled: Option<(String, Vec<String>)>,
    /// Termination regexes, compiled once (case-insensitive); `None` for an invalid pattern.
    regexes: Vec<Option<regex::Regex>>,
    /// The index events carry: the turn in progress, or the one whose routing is being decided.
    event_turn: u32,
    /// History messages a checkpoint already holds (restored runs), so only newer ones are
    /// stored again.
    stored_messages: usize,
    /// History messages already bounded by [`Machine::bound_history`].
    bounded_messages: usize,
    ended: bool,
    /// A correction was injected and no turn has read it yet.
    correction_pending: bool,
    /// The turn cap that applies because the program sets none ([`DEFAULT_MAX_TURNS`], or
    /// [`TAMA_MAX_STEPS`] for tama).
    default_cap: Option<u32>,
    /// The run moved out of its entry state at least once.
    left_entry: bool,
    /// Adversarial stages promoted without their critic's approval.
    unapproved: Vec<String>,
    /// Instructions, routing block and tools per (state, agent), built once.
    prompts: guide::FixedPrompts,
    /// Per agent (by index), the MCP servers' tools it is offered after its own
    /// ([`Machine::offer_mcp_tools`]).
    mcp_tools: Vec<Vec<crate::effect::ToolSchema>>,
    /// Other agents' messages as prompts show them, built once.
    views: views::Views,
    /// The run already said that `MaxTotalCost` cannot see some calls' cost.
    told_cost_unknown: bool,
    /// An operator answers (`--hitl`): a run about to end stuck asks them first.
    ask_when_stuck: bool,
    /// The run moved to a state whose input is a template, not filled in yet (`steps.rs`).
    fill_pending: bool,
    /// The operator answered for the current visit of a state that asks them (tama `human`).
    answered: bool,
}

impl<'p> Machine<'p> {
    pub fn new(program: &'p Program, options: Options) -> Machine<'p> {
        let run = Run {
            session_id: options.session_id.clone(),
            task: options.task.clone(),
            history: vec![Message::user("user", options.task.clone(), 0)],
            state: program.entry,
            turn: 0,
            phase: 1,
            usage: Usage::default(),
            spend: Spend::default(),
            counters: vec![0; program.counters.len()],
            failures: HashMap::new(),
            recovered: HashSet::new(),
            visit_turns: 0,
            value: None,
            outcome: None,
            reason: None,
            notes: Default::default(),
            fork: None,
            compaction: None,
            magentic: None,
            steps: Vec::new(),
        };
        let mut machine = Machine {
            program,
            run,
            phase: Phase::Ready,
            options,
            events: Vec::new(),
            pending: None,
            stand_in: None,
            context_blocks: Vec::new(),
            assembled: None,
            regexes: program
                .termination
                .any
                .iter()
                .map(|cond| match cond {
                    TermCond::Regex { pattern, .. } => regex::RegexBuilder::new(pattern)
                        .case_insensitive(true)
                        .build()
                        .ok(),
                    _ => None,
                })
                .collect(),
            ended: false,
            ask_when_stuck: false,
            correction_pending: false,
            event_turn: 0,
            stored_messages: 0,
            bounded_messages: 0,
            default_cap: result::default_cap(program),
            left_entry: false,
            unapproved: Vec::new(),
            prompts: guide::FixedPrompts::default(),
            mcp_tools: Vec::new(),
            views: views::Views::default(),
            told_cost_unknown: false,
            fill_pending: false,
            answered: false,
        };
        let start_state = program
            .states
            .get(program.entry.0 as usize)
            .map(|state| state.name.clone());
        machine.emit(
            None,
            EventKind::SessionStart {
                task: machine.run.task.clone(),
                program: program.name.clone(),
                start_state: start_state.clone(),
            },
        );
        if start_state.is_none() {
            machine.finish(
                Outcome::Error,
                Some("the program has no state to start at".to_string()),
            );
        }
        machine
    }

    /// The run, once the machine is no longer needed.
    pub fn into_run(self) -> Run {
        self.run
    }

    pub fn run(&self) -> &Run {
        &self.run
    }

    /// How many history messages came from a checkpoint (0 for a new run).
    pub fn stored_messages(&self) -> usize {
        self.stored_messages
    }

    /// Keeps at most [`MAX_MESSAGE_CHARS`] characters of each of the first `stored`
    /// history messages: a longer one keeps its head and tail around a marker
    /// ([`bounded`]). A driver calls it once those messages are in the session file,
    /// which keeps them whole; the turn being routed and validated is read whole before that.
    pub fn bound_history(&mut self, stored: usize) {
        let end = stored.min(self.run.history.len());
        if let Some(messages) = self.run.history.get_mut(self.bounded_messages..end) {
            for message in messages {
                if message.content.len() > MAX_MESSAGE_CHARS {
                    message.content =
                        bounded(message.content.to_string(), MAX_MESSAGE_CHARS).into();
                }
            }
        }
        self.bounded_messages = self.bounded_messages.max(end);
    }

    /// Between turns (nothing requested and unanswered): the only time a checkpoint is taken.
    pub fn at_boundary(&self) -> bool {
        matches!(self.phase, Phase::Ready | Phase::Finished) && self.pending.is_none()
    }

    /// Whether a checkpoint can be taken: between turns, or while a fork's branches are out
    /// (it keeps the branches that finished; the others run again on resume).
    pub fn checkpointable(&self) -> bool {
        self.at_boundary() || (matches!(self.phase, Phase::Fork) && self.pending.is_none())
    }

    /// The agent standing in for the current state's agent this turn, if any (a checkpoint
    /// keeps it).
    pub(crate) fn stand_in(&self) -> Option<&str> {
        self.stand_in.as_deref()
    }

    /// A machine that continues `run`, read from a checkpoint, where it stopped.
    pub(crate) fn resumed(
        program: &'p Program,
        options: Options,
        mut run: Run,
        stand_in: Option<String>,
    ) -> Result<Machine<'p>, String> {
        // Only a completed session is finished; one that stopped at a cap, stuck, over budget,
        // on an error or cancelled continues with fresh failure counts.
        if run.outcome == Some(Outcome::Completed) {
            return Err(format!(
                "session `{}` is complete; start a new run instead",
                run.session_id
            ));
        }
        if run.outcome.take().is_some() {
            run.reason = None;
            run.failures.clear();
            // The magentic manager's stalls and replans are failure counts too (its rounds,
            // like the turns, are not).
            if let Some(ledger) = run.magentic.as_mut() {
                ledger.forgive();
            }
        }
        let mut machine = Machine::new(program, options);
        machine.events.clear();
        machine.event_turn = run.turn;
        machine.stored_messages = run.history.len();
        machine.left_entry = run.state != program.entry;
        machine.run = run;
        machine.stand_in = stand_in;
        machine.emit(
            None,
            EventKind::SessionResumed {
                state: program.state(machine.run.state).name.clone(),
                turns: machine.run.turn,
            },
        );
        Ok(machine)
    }

    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// Events emitted since the last call.
    pub fn drain_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    pub fn outcome(&self) -> Option<Outcome> {
        self.run.outcome
    }

    fn emit(&mut self, agent: Option<&str>, kind: EventKind) {
        if matches!(kind, EventKind::CorrectionInjected { .. }) {
            self.correction_pending = true;
        }
        self.events.push(Event::new(self.event_turn, agent, kind));
    }

    fn state_name(&self) -> String {
        self.program.state(self.run.state).name.clone()
    }

    /// Ends the run, unless it would end stuck with an operator to ask: then they are asked
    /// first ([`Machine::ask_when_stuck`]).
    fn finish(&mut self, outcome: Outcome, reason: Option<String>) {
        match reason {
            Some(reason) if outcome == Outcome::Stuck && self.ask_when_stuck => {
                self.ask_before_stuck(reason)
            }
            reason => self.end(outcome, reason),
        }
    }

    /// Ends the run with `outcome`, once.
    fn end(&mut self, outcome: Outcome, reason: Option<String>) {
        if self.run.outcome.is_some() {
            return;
        }
        self.run.outcome = Some(outcome);
        self.run.reason = reason;
        self.phase = Phase::Finished;
    }

    /// Appends an orchestrator message (a correction or a marker) to the history.
    fn inject(&mut self, content: String) {
        self.run
            .history
            .push(Message::user("orchestrator", content, self.run.turn));
    }

    /// Adds the operator's `text` (a `--hitl` pause answered with a message) to the history
    /// as a user message, read by every later turn like the task. Only at a turn boundary.
    pub fn operator_message(&mut self, text: String) {
        if !self.at_boundary() || self.run.outcome.is_some() {
            return;
        }
        let chars = text.chars().count();
        self.run
            .history
            .push(Message::user("operator", text, self.run.turn));
        self.emit(None, EventKind::OperatorMessage { chars });
    }

    /// What the run needs next.
    pub fn step(&mut self) -> Request {
        if let Some(request) = self.pending.take() {
            return request;
        }
        if let Some(outcome) = self.run.outcome {
            if !self.ended {
                self.ended = true;
                let usage = self.run.usage;
                let cached = usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0;
                let kind = EventKind::SessionEnd {
                    outcome,
                    turns: self.run.turn,
                    reason: self.run.reason.clone(),
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cache_read_tokens: cached.then_some(usage.cache_read_tokens),
                    cache_write_tokens: cached.then_some(usage.cache_write_tokens),
                    usage: None,
                    cost: None,
                };
                self.emit(None, kind);
            }
            return Request::Done;
        }
        match self.phase {
            Phase::Ready => self.start_turn(),
            // Every branch is back (and was seen by the driver's events and checkpoint).
            Phase::Fork if self.fork_finished() => {
                self.phase = Phase::Ready;
                self.fork_complete();
                self.step()
            }
            Phase::Fork => match self.next_sequential() {
                Some(request) => request,
                None => {
                    let reason = "the driver stepped without answering the last request";
                    self.finish(Outcome::Error, Some(reason.into()));
                    self.step()
                }
            },
            // Waiting for a response: asking again is a driver bug; end the run cleanly.
            _ => {
                self.finish(
                    Outcome::Error,
                    Some("the driver stepped without answering the last request".into()),
                );
                self.step()
            }
        }
    }

    /// Feeds the answer to the last request.
    pub fn resume(&mut self, response: Response) {
        let phase = std::mem::replace(&mut self.phase, Phase::Ready);
        match (phase, response) {
            (Phase::Model(turn), Response::Model(reply)) => self.on_model(turn, reply),
            (Phase::Tools(turn), Response::Tools(calls)) => self.on_tools(turn, calls),
            (Phase::Tools(turn), Response::Delegated(calls, usage, spend)) => {
                self.on_delegated(turn, calls, usage, spend)
            }
            (Phase::Select, Response::Model(reply)) => self.on_select(reply),
            (Phase::Asking, Response::Answer(answer)) => self.on_answer(answer),
            (Phase::Compaction(pending), Response::Model(reply)) => {
                self.on_compaction(pending, reply)
            }
            (Phase::Reconstruction(pending), Response::Context(blocks)) => {
                self.on_reconstruction(pending, blocks)
            }
            (Phase::Magentic(step), Response::Model(reply)) => self.on_magentic(step, reply),
            (Phase::PlanReview, Response::Approve(approved)) => self.on_plan_review(approved, None),
            (Phase::PlanReview, Response::Redirect(text)) => self.on_plan_review(true, Some(text)),
            (Phase::Fork, Response::Branch(done)) => self.on_branch(*done),
            (Phase::Merge(branches, calls), Response::Model(reply)) => {
                self.on_merge(branches, calls, reply)
            }
            (Phase::Checks { exit }, Response::Validate(results)) => self.on_checks(exit, results),
            (Phase::TerminationChecks(check), Response::Validate(results)) => {
                self.on_termination_checks(check, results)
            }
            (Phase::Approval { exit }, Response::Approve(approved)) => {
                self.on_approval(exit, approved)
            }
            (Phase::Escalation(escalation), Response::Approve(approved)) => {
                let verdict = match approved {
                    true => escalate::Verdict::Approve,
                    false => escalate::Verdict::Refuse,
                };
                self.on_escalation(*escalation, verdict)
            }
            (Phase::Escalation(escalation), Response::Redirect(text)) => {
                self.on_escalation(*escalation, escalate::Verdict::Redirect(text))
            }
            (Phase::Context { exit }, Response::Context(blocks)) => {
                self.context_blocks = self.with_run_blocks(exit, blocks);
                self.take_exit(exit);
            }
            (Phase::Assembly { agent }, Response::Context(blocks)) => {
                self.on_assembly(agent, blocks)
            }
            (Phase::Finished, _) => self.phase = Phase::Finished,
            (_, _) => self.finish(
                Outcome::Error,
                Some("the driver answered a different request".into()),
            ),
        }
    }

    /// The default cap, unless the command line set one (`--max-turns` replaces it).
    fn applied_default_cap(&self) -> Option<u32> {
        self.default_cap
            .filter(|_| self.options.max_turns.is_none())
    }

    /// The turn cap that applies now, if it is reached.
    fn turn_cap_reached(&self) -> bool {
        let program_cap = self
            .program
            .termination
            .any
            .iter()
            .find_map(|cond| match cond {
                TermCond::MaxTurns(max) => Some(*max),
                _ => None,
            });
        let counted = match self.program.termination.unit {
            TurnUnit::Turns => self.run.turn,
            TurnUnit::Phases => self.run.phase.saturating_sub(1),
        };
        program_cap.is_some_and(|max| counted >= max)
            || self
                .applied_default_cap()
                .is_some_and(|max| self.run.turn >= max)
            || self
                .options
                .max_turns
                .is_some_and(|max| self.run.turn >= max)
    }

    fn start_turn(&mut self) -> Request {
        self.event_turn = self.run.turn;
        if self.turn_cap_reached() {
            self.emit(
                None,
                EventKind::MaxTurnsExceeded {
                    turns: self.run.turn,
                },
            );
            let reason = self
                .applied_default_cap()
                .filter(|max| self.run.turn >= *max)
                .map(|max| {
                    if self.program.origin == fuseraft_compiler::ir::Origin::Tama {
                        format!("tama's limit of {max} steps was reached")
                    } else {
                        format!("the default cap of {max} turns was reached (the config sets no `Termination` cap; set `MaxIterations`)")
                    }
                });
            // A correction announced on this last turn was never sent: say so (a resumed
            // run sends it). Which cap ended the run the command line says (`exec`).
            let reason = match reason {
                _ if !self.correction_pending => reason,
                Some(reason) => Some(format!("{reason}; {UNSENT_CORRECTION}")),
                None => Some(format!("the turn cap was reached; {UNSENT_CORRECTION}")),
            };
            self.finish(Outcome::MaxTurns, reason);
            return self.step();
        }
        // This turn reads whatever correction is waiting.
        self.correction_pending = false;
        let state = self.program.state(self.run.state);
        if !matches!(state.kind, StateKind::Terminal(TerminalMode::EndNow)) {
            let agent = self
                .stand_in
                .clone()
                .or_else(|| state.agent.map(|id| self.program.agent(id).name.clone()));
            if let Some(request) = self.start_compaction(agent.as_deref()) {
                return request;
            }
        }
        let state = self.program.state(self.run.state);
        match &state.kind {
            StateKind::Terminal(TerminalMode::EndNow) => {
                self.finish(Outcome::Completed, None);
                self.step()
            }
            StateKind::Fork(_) => self.start_fork(),
            StateKind::Select(_) if self.in_magentic() => self.magentic_turn(),
            StateKind::Select(_) => {
                let call = self.select_call();
                self.phase = Phase::Select;
                Request::Model(Arc::new(call))
            }
            StateKind::Turn | StateKind::Terminal(_) if self.needs_answer() => self.ask_for_input(),
            StateKind::Turn | StateKind::Terminal(_) => {
                self.schedule_verifier();
                let state = self.program.state(self.run.state);
                let agent = match self
                    .stand_in
                    .clone()
                    .or_else(|| state.agent.map(|id| self.program.agent(id).name.clone()))
                {
                    Some(agent) => agent,
                    // A terminal state without an agent is where the run ends
                    // (docs/semantics.md); a turn without one cannot run.
                    None if matches!(state.kind, StateKind::Terminal(_)) => {
                        let reason = format!("reached the terminal state `{}`", state.name);
                        self.finish(Outcome::Completed, Some(reason));
                        return self.step();
                    }
                    None => {
                        let reason = format!("state `{}` has no agent to run", state.name);
                        self.finish(Outcome::Error, Some(reason));
                        return self.step();
                    }
                };
                self.emit(
                    Some(&agent),
                    EventKind::TurnStart {
                        state: state.name.clone(),
                    },
                );
                if let Some(request) = self.assemble(&agent) {
                    self.phase = Phase::Assembly { agent };
                    return request;
                }
                self.start_model(agent)
            }
        }
    }

    /// Asks the model for `agent`'s turn.
    fn start_model(&mut self, agent: String) -> Request {
        let mut call = self.model_call(&agent);
        self.cap_context(&agent, &mut call);
        let cap = self.tool_result_cap(&agent);
        let call = Arc::new(call);
        let turn = Turn::new(agent, Arc::clone(&call)).with_tool_result_cap(cap);
        self.phase = Phase::Model(turn);
        Request::Model(call)
    }

    fn on_model(&mut self, mut turn: Turn, reply: Result<ModelReply, String>) {
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => {
                self.emit(
                    Some(&turn.agent),
                    EventKind::ModelError {
                        error: error.clone(),
                    },
                );
                // Keep what the turn produced so far: nothing recorded is lost.
                if !turn.tool_calls.is_empty() || !turn.text.is_empty() {
                    self.record_turn(turn);
                }
                self.finish(Outcome::Error, Some(error));
                return;
            }
        };
        turn.usage.add(reply.usage);
        if !self.add_usage(reply.usage, Spend::of(reply.cost)) {
            self.record_turn(Turn {
                text: reply.text,
                ..turn
            });
            return;
        }
        let mut notes = Vec::new();
        let agent = turn.agent.clone();
        let next = turn.take_reply(reply, &mut notes, &mut |call| {
            self.answer_note(&agent, call)
        });
        self.emit_notes(&turn.agent, notes);
        if let Next::Again = next {
            let call = Arc::clone(&turn.call);
            self.phase = Phase::Model(turn);
            self.pending = Some(Request::Model(call));
            return;
        }
        if let Next::Tools(calls) = next {
            let agent = turn.agent.clone();
            let turn_index = self.run.turn;
            self.phase = Phase::Tools(turn);
            self.pending = Some(Request::Tools {
                agent,
                turn: turn_index,
                calls,
            });
            return;
        }
        self.complete_turn(turn);
    }

    fn on_tools(&mut self, mut turn: Turn, results: Vec<ToolCall>) {
        let mut notes = Vec::new();
        let again = turn.take_results(results, &mut notes);
        self.emit_notes(&turn.agent, notes);
        if again {
            // The model asked for tools and has not answered yet: ask it again.
            let call = Arc::clone(&turn.call);
            self.phase = Phase::Model(turn);
            self.pending = Some(Request::Model(call));
            return;
        }
        self.complete_turn(turn);
    }

    /// Results some of which sub-agents answered: their usage is the turn's, and over the
    /// budget the run ends with the turn recorded.
    fn on_delegated(&mut self, mut turn: Turn, calls: Vec<ToolCall>, usage: Usage, spend: Spend) {
        turn.usage.add(usage);
        if !self.add_usage(usage, spend) {
            let mut notes = Vec::new();
            turn.take_results(calls, &mut notes);
            self.emit_notes(&turn.agent, notes);
            self.record_turn(turn);
            return;
        }
        self.on_tools(turn, calls);
    }

    fn emit_notes(&mut self, agent: &str, notes: turn::Notes) {
        for kind in notes {
            self.emit(Some(agent), kind);
        }
    }

    fn record_turn(&mut self, turn: Turn) {
        self.run.history.push(Message {
            role: Role::Assistant,
            agent: turn.agent,
            content: turn.text.into(),
            tool_calls: turn.tool_calls,
            turn: self.run.turn,
            usage: turn.usage,
        });
    }

    /// The turn's final reply is in: record it, check termination, route.
    fn complete_turn(&mut self, turn: Turn) {
        let (agent, usage, tool_calls) = (turn.agent.clone(), turn.usage, turn.tool_calls.len());
        self.record_turn(turn);
        // The reply routing reads comes from the message just recorded (never searched for
        // in the history, where a later correction or marker could stand after it).
        let recorded = self.run.history.len().saturating_sub(1);
        // Prompt caching: of the input tokens, those read from and written to the cache.
        let cached = usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0;
        let kind = EventKind::TurnEnd {
            state: self.state_name(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            tool_calls,
            cache_read_tokens: cached.then_some(usage.cache_read_tokens),
            cache_write_tokens: cached.then_some(usage.cache_write_tokens),
            usage: None,
            cost: None,
        };
        self.emit(Some(&agent), kind);
        self.run.turn = self.run.turn.saturating_add(1);
        self.run.visit_turns = self.run.visit_turns.saturating_add(1);
        if let Some(stand_in) = self.stand_in.take() {
            // A recovery agent's or the verifier's turn: the state's own agent runs next, no
            // routing.
            self.verifier_findings(&stand_in);
            self.phase = Phase::Ready;
            return;
        }
        if let Some(stuck) = self.visit_limit() {
            self.finish(Outcome::Stuck, Some(stuck));
            return;
        }
        if self.check_termination() {
            return;
        }
        if self.repeated_reply() {
            return;
        }
        let Some(message) = self.run.history.get(recorded) else {
            self.phase = Phase::Ready;
            return;
        };
        // Routing replaces the run's value: its allocation is reused for the reply's text,
        // except in a tama program, where routing reads it as the step's input.
        let buffer = match self.program.origin {
            fuseraft_compiler::ir::Origin::Tama => String::new(),
            _ => self.run.value.take().unwrap_or_default(),
        };
        let reply = route::read_reply(message, buffer);
        self.route(reply);
    }

    /// A graph node visited for too many turns is stuck (`MaxRetries × MaxTotalTurnsMultiplier`).
    fn visit_limit(&self) -> Option<String> {
        let state = self.program.state(self.run.state);
        let max = state.stuck.max_visit_turns?;
        (self.run.visit_turns >= max).then(|| {
            format!(
                "stuck in state `{}`: {} turns in one visit (limit {max}, validator `total-turns`)",
                state.name, self.run.visit_turns
            )
        })
    }
}
