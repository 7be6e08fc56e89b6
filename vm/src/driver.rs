//! The driver: performs the machine's requests with tokio and feeds the answers back.
//!
//! Models come from a [`Models`] provider (the replay provider, or a network provider);
//! tools run sandboxed in the work dir; validators read the artifacts there; approvals are
//! answered by the caller's policy. A fork's branches run concurrently, each its agent's
//! whole tool loop (`fork.rs`); tool calls go through one runner (`tool_calls.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fuseraft_compiler::ir::Program;

use crate::effect::{Question, Request, Response};
use crate::event::{Event, EventKind, Outcome};
use crate::history::{Message, Usage};
use crate::machine::{Machine, Options, Run};
use crate::models::ProviderState;
use crate::sandbox::Confinement;

mod chatroom;
mod checks;
mod context;
mod fork;
#[cfg(test)]
mod journal_tests;
mod operator;
#[cfg(all(test, unix))]
#[path = "driver_paths_tests.rs"]
mod paths_tests;
mod sub_agent;
mod tool_calls;
mod usage;

use operator::{ask_operator, escalation_answer, operator_line, pause_operator};

pub use crate::models::{Cost, Models};
use context::{kept_context, read_context};
use fork::ForkRun;
use tool_calls::ToolRunner;
use usage::mark_usage;
pub use usage::usage_json;

/// Asks the operator: `(from, to, question) -> answer` (for a tool call `from` is the agent
/// and `to` the action).
pub type AskFn = dyn Fn(&str, &str, &Question) -> Approval + Send + Sync;

/// The operator's answer to a question of [`Approvals::Ask`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    Granted,
    Refused,
    /// Refused with the operator's text for the model: an escalated failure retries with
    /// it, a magentic plan is revised with it. For a route or a tool call it is a refusal.
    Redirected(String),
}

impl Approval {
    /// `Granted` or `Refused`.
    pub fn of(granted: bool) -> Approval {
        if granted {
            Approval::Granted
        } else {
            Approval::Refused
        }
    }

    pub fn is_granted(&self) -> bool {
        *self == Approval::Granted
    }
}

/// How human approvals are answered.
pub enum Approvals {
    /// Approve every route (`--approve all`).
    All,
    /// Refuse every route (`--approve none`).
    None,
    /// Ask: `(from, to, question) -> answer`, on a thread of its own while the run waits
    /// (a prompt blocks; the run's task does not).
    Ask(Arc<AskFn>),
}

/// Where a run acts.
pub struct Env {
    /// The sandbox root for tools, validators and artifacts.
    pub work_dir: PathBuf,
    /// Paths no started process may read, beyond the credentials under `$HOME` that
    /// every run masks (`crate::sandbox::Confinement`): the session key, `--deny-read`.
    pub deny_read: Vec<PathBuf>,
    pub approvals: Approvals,
    /// Asked after every completed turn (`--hitl`); `None` never pauses.
    pub pause: Option<Arc<PauseFn>>,
}

/// Where a run paused: after `turn`, taken by `agent`, the run now in `state`.
#[derive(Clone, Debug)]
pub struct Paused<'a> {
    pub turn: u32,
    pub agent: Option<&'a str>,
    pub state: &'a str,
    /// The question the pause stands for, when it answers one (an escalation, a plan
    /// review, a `human` step's line); `None` for the pause after a turn.
    pub about: Option<&'a Question>,
}

/// What the operator answered at a pause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pause {
    /// Go on with the next turn.
    Continue,
    /// Add this text to the conversation as the operator's message, then go on.
    Message(String),
    /// Stop here; the checkpoint just written stays resumable.
    Quit,
}

/// Asks the operator at a pause.
pub type PauseFn = dyn Fn(&Paused<'_>) -> Pause + Send + Sync;

/// How a run ended.
#[derive(Clone, Debug)]
pub struct Summary {
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub turns: u32,
    pub usage: Usage,
    /// Model calls of this run whose server reported no usage: when not 0, `usage` is a
    /// lower bound (or unknown when it is 0).
    pub usage_unreported: u32,
    /// What this run's model calls cost (not those of earlier runs of a resumed session).
    pub cost: Cost,
    pub history: Vec<Message>,
    /// The run's result ([`Machine::output`]): the tama end value, the promoted artifact, or
    /// the last reply with text.
    pub output: Option<String>,
    /// Why the work was not done although the run ended without an error
    /// ([`Machine::shortfall`]).
    pub shortfall: Option<String>,
    /// The magentic manager's facts, plan and counters as the run left them (`None`
    /// outside a magentic run).
    pub magentic: Option<crate::machine::Magentic>,
}

impl Summary {
    /// A run that ended before its machine did (a start failure, an operator's `q`): the
    /// run as it stands, with no output and no shortfall.
    fn cut_short(
        run: Run,
        outcome: Outcome,
        reason: String,
        usage_unreported: u32,
        cost: Cost,
    ) -> Summary {
        Summary {
            outcome,
            reason: Some(reason),
            turns: run.turn,
            usage: run.usage,
            usage_unreported,
            cost,
            history: run.history,
            output: None,
            shortfall: None,
            magentic: run.magentic,
        }
    }
}

/// The change log's path: `ChangeTracking.Path` / `Validation.ChangeLogPath`, or the default.
pub fn change_log_path(program: &Program, work_dir: &Path, session_id: &str) -> PathBuf {
    let configured = program
        .validation
        .change_log_path
        .as_ref()
        .map(|value| value.replace("{session_id}", session_id));
    work_dir.join(configured.unwrap_or_else(|| crate::changes::DEFAULT_PATH.to_string()))
}

/// Runs a program to its end.
pub async fn run<M: Models>(
    program: &Program,
    options: Options,
    models: &M,
    env: &Env,
    on_event: &mut dyn FnMut(&Event, &Run),
) -> Summary {
    let options = options_for(options, models);
    drive(Machine::new(program, options), models, env, on_event, None).await
}

/// Options for a machine driven by `models`.
pub fn options_for<M: Models>(options: Options, models: &M) -> Options {
    Options {
        skip_prompts: options.skip_prompts || !models.reads_prompts(),
        ..options
    }
}

/// What a caller stores after a turn: the history messages added since the last checkpoint
/// and the run's state (upstream's session layout plus `Machine`, the provider's position
/// under `Provider`, and `MessageCount`). Storing the messages incrementally keeps each
/// checkpoint proportional to one turn; the `write_*` methods serialize both without
/// building JSON values.
pub struct Checkpoint<'a> {
    pub new_messages: &'a [Message],
    /// Everything since the previous checkpoint can be redone from it with the same result
    /// and nothing done outside the process: only replayed model calls and context reads,
    /// no tool call, validator, approval, fork or operator message. A caller may hold such a
    /// checkpoint in memory for a moment (and write several at once): if the process dies
    /// first, a resumed run redoes those turns exactly.
    pub redoable: bool,
    machine: &'a Machine<'a>,
    provider: ProviderState<'a>,
}

impl Checkpoint<'_> {
    /// The run's state as JSON.
    pub fn state(&self) -> serde_json::Value {
        let mut state = self.machine.checkpoint_state().unwrap_or_default();
        state["Provider"] = self.provider.to_json();
        state
    }

    /// Writes [`Checkpoint::state`] with the `extra` keys (which must be new) added after its
    /// own, as that JSON would serialize.
    pub fn write_state<E: serde::Serialize + ?Sized>(
        &self,
        extra: &E,
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        self.machine
            .write_checkpoint_state(&self.provider, extra, out)
    }

    /// Writes each new message as one line of JSON (a `checkpoint::records::MessageRecord`).
    pub fn write_messages(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        crate::checkpoint::write_message_lines(self.new_messages, out)
    }
}

/// Continues a checkpointed run: the provider returns to its saved position.
pub fn restore<'p, M: Models>(
    program: &'p Program,
    options: Options,
    models: &M,
    saved: &serde_json::Value,
) -> Result<Machine<'p>, String> {
    let mut machine = Machine::restore(program, options_for(options, models), saved)?;
    if let Some(provider) = saved.get("Provider") {
        models.restore(provider);
    }
    // The session log keeps long replies whole; the history keeps their head and tail.
    machine.bound_history(machine.stored_messages());
    Ok(machine)
}

/// The compactions a run made so far (each is checkpointed).
fn compactions(machine: &Machine<'_>) -> u32 {
    machine
        .run()
        .compaction
        .as_ref()
        .map_or(0, |compacted| compacted.count)
}

/// Drives a machine to its end. With `on_checkpoint`, hands it a checkpoint at the start,
/// after every completed turn, and at the end.
pub async fn drive<M: Models>(
    mut machine: Machine<'_>,
    models: &M,
    env: &Env,
    on_event: &mut dyn FnMut(&Event, &Run),
    mut on_checkpoint: Option<&mut dyn FnMut(Checkpoint<'_>)>,
) -> Summary {
    // Messages already stored by an earlier run of this session.
    let mut stored = machine.stored_messages();
    // At a turn boundary: hands the checkpoint to the caller, then bounds in memory the
    // messages the caller now holds whole (issue 7: the session log keeps a long reply whole,
    // the history keeps its head and tail). Without a caller they are bounded all the same.
    // While a fork's branches are out, `provider` is the provider's position to save.
    // Whether the turns since the last checkpoint are redoable (see `Checkpoint::redoable`):
    // cleared by every effect but a replayed model call or a context read, set again by a
    // checkpoint. A run that pauses for its operator after every turn (`--hitl`) has none.
    let holdable = env.pause.is_none();
    let mut redoable = holdable;
    let mut save = |machine: &mut Machine<'_>,
                    stored: &mut usize,
                    provider: Option<serde_json::Value>,
                    redoable: &mut bool| {
        if !machine.checkpointable() {
            return;
        }
        if let Some(sink) = on_checkpoint.as_mut() {
            let history = &machine.run().history;
            sink(Checkpoint {
                new_messages: &history[(*stored).min(history.len())..],
                redoable: *redoable,
                machine,
                provider: provider.map_or_else(|| models.checkpoint_state(), ProviderState::Json),
            });
        }
        *redoable = holdable;
        *stored = machine.run().history.len();
        machine.bound_history(*stored);
    };
    let program = machine.program();
    crate::sandbox::env::withhold(key_variables(program));
    let session_id = machine.run().session_id.clone();
    let change_log = change_log_path(program, &env.work_dir, &session_id);
    // Never in git's metadata, nor in fuseraft's sessions, checkpoints or memory (the file
    // tools' rule; the change log's own place is `.fuseraft/state/`).
    let relative = change_log
        .strip_prefix(&env.work_dir)
        .unwrap_or(&change_log);
    let relative = relative.to_string_lossy().replace('\\', "/");
    if let Some(what) = crate::tools::protected_state(&relative).filter(|_| {
        !relative
            .to_ascii_lowercase()
            .starts_with(".fuseraft/state/")
    }) {
        let reason = format!(
            "the change log `{}` is in {what}, which fuseraft never writes for a config",
            change_log.display()
        );
        let run = machine.into_run();
        return Summary::cut_short(run, Outcome::Error, reason, 0, Cost::default());
    }
    // The change log's directory, opened once for the run without following a link: a
    // repository's planted `.fuseraft/state -> ~` ends the run before the first turn.
    if let Err(reason) = crate::changes::store::Files::open(&env.work_dir, &change_log) {
        let run = machine.into_run();
        return Summary::cut_short(run, Outcome::Error, reason, 0, Cost::default());
    }
    let sandbox = match sandbox_root(program, &env.work_dir) {
        Ok(sandbox) => sandbox,
        Err(reason) => {
            // Before the first turn: nothing ran.
            let run = machine.into_run();
            return Summary::cut_short(run, Outcome::Error, reason, 0, Cost::default());
        }
    };
    // No record can be planted beside the log (its directory is made before the first turn),
    // by a command or by the chatroom's copy.
    let protected = crate::changes::store::protected_paths(&change_log);
    let mut chatroom = chatroom::ChatroomFile::new(
        chatroom::setting(program),
        &env.work_dir,
        &session_id,
        &machine.run().notes,
    )
    .sparing(&protected);
    // Copies the chatroom's new messages to `Chatroom.Path` (between turns), warning once.
    let mut copy_chatroom = |machine: &Machine<'_>, on_event: &mut dyn FnMut(&Event, &Run)| {
        if let Err(why) = chatroom.sync(&machine.run().notes) {
            let warning = Event::new(
                machine.run().turn,
                None,
                EventKind::Warning {
                    message: why,
                    reason: None,
                },
            );
            on_event(&warning, machine.run());
        }
    };
    if change_log.parent() == Some(sandbox.as_path()) {
        let reason = format!(
            "the change log `{}` lies at the top of the sandbox `{}`: `ChangeTracking.Path` names a file in a directory of its own, which no command may write",
            change_log.display(),
            sandbox.display()
        );
        return Summary::cut_short(
            machine.into_run(),
            Outcome::Error,
            reason,
            0,
            Cost::default(),
        );
    }
    let deny_read = deny_read(program, &env.work_dir, &env.deny_read);
    // One `/tmp` for every process of the run, removed with the confinement at its end.
    let mut confinement = Confinement::new(&sandbox, &protected, &deny_read).with_run_temp();
    let git_blocked = program
        .permissions
        .action(fuseraft_compiler::ir::Category::GitWrite)
        == fuseraft_compiler::ir::Action::Block;
    if git_blocked {
        confinement = confinement.guarding_new_git();
    }
    let check_confinement = Arc::new(if sandbox == env.work_dir {
        confinement.clone()
    } else {
        Confinement::new(&env.work_dir, &protected, &deny_read).sharing_temp(&confinement)
    });
    // MCP servers start before the first turn; one that cannot start ends the run here.
    let mcp = if program.mcp_servers.is_empty() {
        crate::mcp::McpServers::none()
    } else {
        let spec = crate::sandbox::Spec::new(program.security.sandbox, &program.permissions);
        match crate::mcp::McpServers::start(program, &sandbox, &spec, &confinement).await {
            Ok(servers) => servers,
            Err(reason) => {
                let run = machine.into_run();
                return Summary::cut_short(run, Outcome::Error, reason, 0, Cost::default());
            }
        }
    };
    for (server, transport, tools) in mcp.started(program) {
        let event = Event::new(
            machine.run().turn,
            None,
            EventKind::McpServerStarted {
                server: server.to_string(),
                transport: transport.to_string(),
                tools,
            },
        );
        on_event(&event, machine.run());
    }
    // The servers' tools, known to the machine before its first model call.
    if !program.mcp_servers.is_empty() {
        machine.offer_mcp_tools(mcp.offered(program));
    }
    let mut saved_turn = None;
    let tools = ToolRunner {
        program,
        env,
        sandbox: sandbox.clone(),
        session_id: session_id.clone(),
        change_log: change_log.clone(),
        confinement: Arc::new(confinement),
        jobs: crate::tools::Jobs::default(),
        run_state: crate::tools::RunState::default(),
        mcp: tokio::sync::Mutex::new(mcp),
    };
    // Replies without usage and their cost: before this run, and by the end of the last turn.
    let before = (models.usage_unreported(), models.cost());
    let (unreported_before, cost_before) = before;
    let mut at_turn_end = before;
    let first_turn = machine.run().turn;
    // The turn whose end the operator was already asked about (an escalation put to them as
    // a pause): its after-turn pause would ask a second time.
    let mut asked_after: Option<u32> = None;
    loop {
        let position = (machine.run().turn, machine.run().outcome.is_some());
        // A compaction between turns is checkpointed too (and the turn before it was).
        let saved = (position, compactions(&machine));
        if machine.at_boundary() && saved_turn != Some(saved) {
            let new_turn = saved_turn.map(|(position, _)| position) != Some(position);
            // The turn's events first: what the run reports of a turn (its end, its route)
            // is known before its checkpoint, which may carry totals made from them.
            emit_events(&mut machine, models, on_event, before, &mut at_turn_end);
            save(&mut machine, &mut stored, None, &mut redoable);
            copy_chatroom(&machine, on_event);
            saved_turn = Some(saved);
            // `--hitl`: after each completed turn of a run that goes on.
            if let (Some(pause), (turn, false), true) = (&env.pause, position, new_turn) {
                if turn > first_turn && asked_after != Some(turn) {
                    // The turn's last events (its route) are shown before the question.
                    emit_events(&mut machine, models, on_event, before, &mut at_turn_end);
                    let answer = {
                        let run = machine.run();
                        let state = machine.program().state(run.state).name.as_str();
                        let agent = run.history.iter().rev().find_map(|message| {
                            (message.role == crate::history::Role::Assistant)
                                .then_some(message.agent.as_str())
                        });
                        let at = Paused {
                            turn,
                            agent,
                            state,
                            about: None,
                        };
                        pause_operator(pause, &at).await
                    };
                    match answer {
                        Pause::Continue => {}
                        Pause::Message(text) => {
                            machine.operator_message(text);
                            emit_events(&mut machine, models, on_event, before, &mut at_turn_end);
                            redoable = false;
                            save(&mut machine, &mut stored, None, &mut redoable);
                        }
                        Pause::Quit => {
                            let run = machine.into_run();
                            let reason = format!("paused by the operator after turn {turn}");
                            // The run ends here: its events file and page get its end too.
                            let end = Event::new(
                                run.turn,
                                None,
                                EventKind::SessionEnd {
                                    outcome: Outcome::Cancelled,
                                    turns: run.turn,
                                    reason: Some(reason.clone()),
                                    input_tokens: run.usage.input_tokens,
                                    output_tokens: run.usage.output_tokens,
                                    cache_read_tokens: None,
                                    cache_write_tokens: None,
                                    usage: None,
                                    cost: None,
                                },
                            );
                            on_event(&end, &run);
                            return Summary::cut_short(
                                run,
                                Outcome::Cancelled,
                                reason,
                                models.usage_unreported().saturating_sub(unreported_before),
                                models.cost().since(cost_before),
                            );
                        }
                    }
                }
            }
        }
        let request = machine.step();
        emit_events(&mut machine, models, on_event, before, &mut at_turn_end);
        redoable &= match &request {
            Request::Done | Request::Context { .. } => true,
            Request::Model(_) => models.replayed(),
            _ => false,
        };
        let response = match request {
            Request::Done => break,
            Request::Model(call) => {
                Response::Model(call_model(models, &call, &machine, on_event).await)
            }
            Request::Fork(branches) => {
                // Saved as started: a resumed run knows its unfinished branches run again.
                let base = models.state();
                save(&mut machine, &mut stored, Some(base.clone()), &mut redoable);
                let mut fork = ForkRun::start(branches, models, &tools);
                while let Some(finished) = fork.next().await {
                    machine.resume(Response::Branch(Box::new(finished.branch.finish())));
                    hand_out(
                        finished.events,
                        &machine,
                        models,
                        on_event,
                        before,
                        &mut at_turn_end,
                    );
                    emit_events(&mut machine, models, on_event, before, &mut at_turn_end);
                    // Kept by the checkpoint: a finished branch never runs again. The next
                    // step after the last one joins the fork.
                    let provider = models.state_keeping(&base, &finished.agents_done);
                    // The branch ran its own tool loop.
                    redoable = false;
                    save(&mut machine, &mut stored, Some(provider), &mut redoable);
                }
                continue;
            }
            Request::Tools { agent, turn, calls } => {
                let ran = tools.run(models, agent, turn, calls).await;
                for event in &ran.events {
                    on_event(event, machine.run());
                }
                ran.response()
            }
            Request::Validate { checks, context } => Response::Validate(
                checks::run_checks(
                    models,
                    checks,
                    context,
                    env.work_dir.clone(),
                    check_confinement.clone(),
                )
                .await,
            ),
            Request::Approve { from, to, question } => match &env.approvals {
                Approvals::All => Response::Approve(true),
                Approvals::None => Response::Approve(false),
                // An escalated failure or a magentic plan review, with `--hitl` pauses on:
                // the pause's answer can carry the operator's text (a redirect) as well as
                // go on or stop.
                Approvals::Ask(_) if question.takes_text() && env.pause.is_some() => {
                    asked_after = Some(machine.run().turn);
                    escalation_answer(&machine, env, &from, &question).await
                }
                Approvals::Ask(ask) => match ask_operator(ask, &from, &to, &question).await {
                    Approval::Redirected(text) if question.takes_text() => Response::Redirect(text),
                    answer => Response::Approve(answer.is_granted()),
                },
            },
            Request::Ask {
                agent,
                state,
                context,
            } => {
                asked_after = Some(machine.run().turn);
                Response::Answer(operator_line(env, &machine, &agent, &state, &context).await)
            }
            Request::Context {
                sources,
                session_id,
            } => Response::Context(
                kept_context(models, || {
                    read_context(
                        program,
                        &env.work_dir,
                        &sandbox,
                        &change_log,
                        &sources,
                        &session_id,
                    )
                })
                .await,
            ),
        };
        machine.resume(response);
    }
    tools.mcp.lock().await.shutdown().await;
    // No job of the run may make or move a repository while the guard looks.
    tools.jobs.end_all();
    // A served run's file tools kept a record of each call for a retried turn: it ended.
    if models.journal().is_some() {
        crate::journal::effects::clear(&tools.sandbox, &tools.session_id);
    }
    for aside in tools.confinement.undo_new_git() {
        let warning = EventKind::Warning {
            message: format!(
                "a repository made during the run under `git_write: block` was set aside (`{}`), where git does not read it",
                aside.display()
            ),
            reason: Some("new_repository".to_string()),
        };
        on_event(
            &Event::new(machine.run().turn, None, warning),
            machine.run(),
        );
    }
    let position = (machine.run().turn, machine.run().outcome.is_some());
    if saved_turn != Some((position, compactions(&machine))) {
        save(&mut machine, &mut stored, None, &mut redoable);
        copy_chatroom(&machine, on_event);
    }
    let (output, shortfall) = (machine.output(), machine.shortfall());
    let run = machine.into_run();
    Summary {
        outcome: run.outcome.unwrap_or(Outcome::Error),
        reason: run.reason,
        turns: run.turn,
        usage: run.usage,
        usage_unreported: models.usage_unreported().saturating_sub(unreported_before),
        cost: models.cost().since(cost_before),
        history: run.history,
        output,
        shortfall,
        magentic: run.magentic,
    }
}

/// `models.call(call)`, handing out what the provider reports on the way (a retry, a
/// request cut to fit its window) as it happens, so a view shows a retry while it waits.
async fn call_model<M: Models>(
    models: &M,
    call: &crate::effect::ModelCall,
    machine: &Machine<'_>,
    on_event: &mut dyn FnMut(&Event, &Run),
) -> Result<crate::effect::ModelReply, String> {
    let Some(notices) = models.notices() else {
        return models.call(call).await;
    };
    let reply = models.call(call);
    tokio::pin!(reply);
    loop {
        tokio::select! {
            biased;
            reply = &mut reply => {
                hand_out_notices(models, machine.run(), on_event);
                return reply;
            }
            () = notices.arrived() => hand_out_notices(models, machine.run(), on_event),
        }
    }
}

/// Hands the provider's queued notices to `on_event`, each as an event of its caller's
/// agent (none for the manager's and compaction's calls).
fn hand_out_notices<M: Models>(models: &M, run: &Run, on_event: &mut dyn FnMut(&Event, &Run)) {
    let Some(notices) = models.notices() else {
        return;
    };
    for notice in notices.take() {
        let event = Event::new(run.turn, notice.caller.agent(), notice.kind);
        on_event(&event, run);
    }
}

/// Hands the machine's new events to `on_event`, `turn_end` marked with the usage its
/// replies left unreported and what they cost (since `at_turn_end`, which moves on), others
/// with the run's totals since `before`.
fn emit_events<M: Models>(
    machine: &mut Machine<'_>,
    models: &M,
    on_event: &mut dyn FnMut(&Event, &Run),
    before: (u32, Cost),
    at_turn_end: &mut (u32, Cost),
) {
    let events = machine.drain_events();
    hand_out(events, machine, models, on_event, before, at_turn_end);
}

/// Hands `events` to `on_event`, marked as [`emit_events`] says.
fn hand_out<M: Models>(
    events: Vec<Event>,
    machine: &Machine<'_>,
    models: &M,
    on_event: &mut dyn FnMut(&Event, &Run),
    before: (u32, Cost),
    at_turn_end: &mut (u32, Cost),
) {
    // What the provider reported during calls the driver did not wait on itself (a fork's
    // branches, sub-agents), before the events of the turn they belong to.
    hand_out_notices(models, machine.run(), on_event);
    for event in events {
        let (unreported, cost) = (models.usage_unreported(), models.cost());
        let (missing, spent) = match event.kind {
            EventKind::TurnEnd { .. } => {
                let (unreported_turn, cost_turn) =
                    std::mem::replace(at_turn_end, (unreported, cost));
                (
                    unreported.saturating_sub(unreported_turn),
                    cost.since(cost_turn),
                )
            }
            _ => (unreported.saturating_sub(before.0), cost.since(before.1)),
        };
        match mark_usage(&event, missing, spent) {
            Some(marked) => on_event(&marked, machine.run()),
            None => on_event(&event, machine.run()),
        }
    }
}

/// Every model's `ApiKeyEnvVar`: never passed to a command.
fn key_variables(program: &Program) -> Vec<String> {
    let managers = program.states.iter().filter_map(|state| match &state.kind {
        fuseraft_compiler::ir::StateKind::Select(select) => select.manager.as_ref(),
        _ => None,
    });
    program
        .agents
        .iter()
        .filter_map(|agent| agent.model.as_ref())
        .chain(managers)
        .filter_map(|model| model.api_key_env.clone())
        .collect()
}

/// `Security.FileSystemSandboxPath` (relative to the work dir), canonical, or the work dir
/// itself when it is not set. A configured path that does not exist or is not a directory
/// is an error naming it: the sandbox never silently widens to the work dir, nor leaves it.
pub fn sandbox_root(program: &Program, work_dir: &Path) -> Result<PathBuf, String> {
    let Some(value) = &program.security.sandbox_path else {
        return Ok(work_dir.to_path_buf());
    };
    let path = work_dir.join(value);
    let base = std::fs::canonicalize(work_dir).unwrap_or_else(|_| work_dir.to_path_buf());
    let problem = match std::fs::canonicalize(&path) {
        // `..`, an absolute path or a symlink out (the compiler refuses the first two where
        // the config names them; the work dir here may be another than the config's).
        Ok(root) if !root.starts_with(&base) => {
            format!("resolves to `{}`, outside the work dir", root.display())
        }
        Ok(root) if is_state_dir(&root) => {
            "is inside `.git/` or fuseraft's own state, which the file tools may not change"
                .to_string()
        }
        Ok(root) if root.is_dir() => return Ok(root),
        Ok(_) => "is not a directory".to_string(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => "does not exist".to_string(),
        Err(error) => format!("is not accessible ({error})"),
    };
    Err(format!(
        "the sandbox `{}` (`Security.FileSystemSandboxPath: {value}`, relative to the work dir `{}`) {problem}; create it or change the setting",
        path.display(),
        work_dir.display()
    ))
}

/// What no started process may read besides the default mask: the command line's paths
/// (`given`) and the config's `Security.DenyRead` (one path a line; `~/` is the home,
/// a relative path is relative to the work dir). A config only adds to the list.
fn deny_read(program: &Program, work_dir: &Path, given: &[PathBuf]) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let configured = program.security.deny_read.iter().filter_map(|line| {
        match (line.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => Some(home.join(rest)),
            (Some(_), None) => None,
            (None, _) => Some(work_dir.join(line)),
        }
    });
    given.iter().cloned().chain(configured).collect()
}

/// Whether a directory lies in a `.git` directory or in `.fuseraft/{sessions,state,checkpoints}`
/// (ignoring case): as a sandbox root it would hand the tools what they may not change.
fn is_state_dir(dir: &Path) -> bool {
    let parts: Vec<String> = dir
        .components()
        .map(|part| part.as_os_str().to_string_lossy().to_ascii_lowercase())
        .collect();
    parts.iter().any(|part| part == ".git")
        || parts.windows(2).any(|pair| {
            pair[0] == ".fuseraft"
                && matches!(pair[1].as_str(), "sessions" | "state" | "checkpoints")
        })
}

/// Tool limits, with `Security.ReadFileSizeLimit` applied.
fn limits(program: &Program) -> crate::tools::Limits {
    let mut limits = crate::tools::Limits::default();
    if let Some(read_cap) = program.security.read_file_size_limit {
        limits.read_cap = read_cap;
    }
    limits
}
