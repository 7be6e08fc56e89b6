//! The driver: performs the machine's requests with tokio and feeds the answers back.
//!
//! Models come from a [`Models`] provider (the replay provider, or a network provider);
//! tools run sandboxed in the work dir; validators read the artifacts there; approvals are
//! answered by the caller's policy. Fork branches run concurrently.

use std::path::{Path, PathBuf};

use fuseraft_compiler::ir::Program;

use crate::effect::{CheckResult, ModelCall, ModelReply, Request, Response};
use crate::event::{Event, Outcome};
use crate::history::{Message, Usage};
use crate::machine::{Machine, Options, Run};
use crate::replay::Replay;

mod context;
#[cfg(all(test, unix))]
#[path = "driver_paths_tests.rs"]
mod paths_tests;
mod usage;

use context::read_context;
use usage::mark_usage;
pub use usage::{usage_json, Cost};

/// Answers model calls.
pub trait Models: Sync {
    fn call(
        &self,
        call: &ModelCall,
    ) -> impl std::future::Future<Output = Result<ModelReply, String>> + Send;

    /// Whether the provider reads prompts (messages, tool schemas). The machine skips
    /// assembling them for providers that do not.
    fn reads_prompts(&self) -> bool {
        true
    }

    /// The provider's position, saved in checkpoints (the replay provider's cursors).
    fn state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Returns to a position saved by [`Models::state`].
    fn restore(&self, _state: &serde_json::Value) {}

    /// How many replies so far came without token usage (their server reported none), so
    /// their tokens are unknown rather than 0.
    fn usage_unreported(&self) -> u32 {
        0
    }

    /// What the replies so far cost, by their models' known prices.
    fn cost(&self) -> Cost {
        Cost::default()
    }
}

impl Models for Replay {
    async fn call(&self, call: &ModelCall) -> Result<ModelReply, String> {
        self.next(call)
    }

    fn reads_prompts(&self) -> bool {
        false
    }

    fn state(&self) -> serde_json::Value {
        Replay::state(self)
    }

    fn restore(&self, state: &serde_json::Value) {
        Replay::restore(self, state)
    }
}

/// Asks the operator: `(from, to, signal) -> approved`.
pub type AskFn = dyn Fn(&str, &str, &str) -> bool + Send + Sync;

/// How human approvals are answered.
pub enum Approvals {
    /// Approve every route (`--approve all`).
    All,
    /// Refuse every route (`--approve none`).
    None,
    /// Ask: `(from, to, signal) -> approved`.
    Ask(Box<AskFn>),
}

/// Where a run acts.
pub struct Env {
    /// The sandbox root for tools, validators and artifacts.
    pub work_dir: PathBuf,
    pub approvals: Approvals,
}

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
}

/// The change log's path: `ChangeTracking.Path` / `Validation.ChangeLogPath`, or the default.
pub fn change_log_path(program: &Program, work_dir: &Path, session_id: &str) -> PathBuf {
    // `Validation.ChangeLogPath` wins over `ChangeTracking.Path`, as the validators read it.
    let setting = |name: &str| {
        program
            .settings
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    };
    let configured = setting("Validation.ChangeLogPath")
        .or_else(|| setting("ChangeTracking.Path"))
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
    machine: &'a Machine<'a>,
    provider: serde_json::Value,
}

impl Checkpoint<'_> {
    /// The run's state as JSON.
    pub fn state(&self) -> serde_json::Value {
        let mut state = self.machine.checkpoint_state().unwrap_or_default();
        state["Provider"] = self.provider.clone();
        state
    }

    /// Writes [`Checkpoint::state`] with the `extra` keys (which must be new) added after its
    /// own, as that JSON would serialize.
    pub fn write_state(
        &self,
        extra: &[(&str, &serde_json::Value)],
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        self.machine
            .write_checkpoint_state(&self.provider, extra, out)
    }

    /// Writes each new message as one line of JSON (`checkpoint::message_json`'s layout).
    pub fn write_messages(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        for message in self.new_messages {
            crate::checkpoint::write_message(message, out)?;
            out.push(b'\n');
        }
        Ok(())
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
    let mut save = |machine: &mut Machine<'_>, stored: &mut usize| {
        if !machine.at_boundary() {
            return;
        }
        if let Some(sink) = on_checkpoint.as_mut() {
            let history = &machine.run().history;
            sink(Checkpoint {
                new_messages: &history[(*stored).min(history.len())..],
                machine,
                provider: models.state(),
            });
        }
        *stored = machine.run().history.len();
        machine.bound_history(*stored);
    };
    let program = machine.program();
    crate::sandbox::env::withhold(key_variables(program));
    let session_id = machine.run().session_id.clone();
    let change_log = change_log_path(program, &env.work_dir, &session_id);
    let sandbox = match sandbox_root(program, &env.work_dir) {
        Ok(sandbox) => sandbox,
        Err(reason) => {
            // Before the first turn: nothing ran.
            let run = machine.into_run();
            return Summary {
                outcome: Outcome::Error,
                reason: Some(reason),
                turns: run.turn,
                usage: run.usage,
                usage_unreported: 0,
                cost: Cost::default(),
                history: run.history,
                output: None,
                shortfall: None,
            };
        }
    };
    // MCP servers start before the first turn; one that cannot start ends the run here.
    let mut mcp = if program.mcp_servers.is_empty() {
        crate::mcp::McpServers::none()
    } else {
        match crate::mcp::McpServers::start(program, &sandbox).await {
            Ok(servers) => servers,
            Err(reason) => {
                let run = machine.into_run();
                return Summary {
                    outcome: Outcome::Error,
                    reason: Some(reason),
                    turns: run.turn,
                    usage: run.usage,
                    usage_unreported: 0,
                    cost: Cost::default(),
                    history: run.history,
                    output: None,
                    shortfall: None,
                };
            }
        }
    };
    for (server, transport, tools) in mcp.started(program) {
        let event = Event::new(
            machine.run().turn,
            None,
            "mcp_server_started",
            serde_json::json!({"server": server, "transport": transport, "tools": tools}),
        );
        on_event(&event, machine.run());
    }
    let mut saved_turn = None;
    // Replies without usage: before this run, and by the end of the last turn.
    let unreported_before = models.usage_unreported();
    let mut unreported_turn = unreported_before;
    let cost_before = models.cost();
    let mut cost_turn = cost_before;
    loop {
        let position = (machine.run().turn, machine.run().outcome.is_some());
        if machine.at_boundary() && saved_turn != Some(position) {
            save(&mut machine, &mut stored);
            saved_turn = Some(position);
        }
        let request = machine.step();
        for event in machine.drain_events() {
            let (unreported, cost) = (models.usage_unreported(), models.cost());
            let (missing, spent) = match event.event_type {
                "turn_end" => (
                    unreported.saturating_sub(std::mem::replace(&mut unreported_turn, unreported)),
                    cost.since(std::mem::replace(&mut cost_turn, cost)),
                ),
                _ => (
                    unreported.saturating_sub(unreported_before),
                    cost.since(cost_before),
                ),
            };
            match mark_usage(&event, missing, spent) {
                Some(marked) => on_event(&marked, machine.run()),
                None => on_event(&event, machine.run()),
            }
        }
        let response = match request {
            Request::Done => break,
            Request::Model(mut call) => {
                offer_mcp_tools(program, &mcp, &mut call);
                Response::Model(models.call(&call).await)
            }
            Request::Fork(mut calls) => {
                for call in &mut calls {
                    offer_mcp_tools(program, &mcp, call);
                }
                let replies =
                    futures::future::join_all(calls.iter().map(|call| models.call(call))).await;
                Response::Fork(replies)
            }
            Request::Tools {
                agent,
                turn,
                mut calls,
            } => {
                let context = crate::tools::ToolContext {
                    work_dir: sandbox.clone(),
                    session_id: session_id.clone(),
                    agent,
                    turn,
                    change_log: change_log.clone(),
                    limits: limits(program),
                    sandbox: crate::sandbox::Spec::new(&program.settings, &program.permissions),
                };
                let agent_ir = program
                    .agent_named(&context.agent)
                    .map(|id| program.agent(id));
                for call in &mut calls {
                    // The call's name is resolved once, here; that tool is judged and run.
                    use crate::tools::permissions::{decide, Decision, ToolRef};
                    let permitted =
                        match decide(call, agent_ir, program, &context.work_dir, mcp.catalog()) {
                            Decision::Allow(tool) => Ok(tool),
                            Decision::Block(reason) => Err(reason),
                            Decision::Ask(tool, action) => {
                                let approved = match &env.approvals {
                                    Approvals::All => true,
                                    Approvals::None => false,
                                    Approvals::Ask(ask) => ask(&context.agent, &action, "tool"),
                                };
                                approved.then_some(tool).ok_or_else(|| {
                                    format!(
                                        "[DENIED: permission] {action} was refused by the operator"
                                    )
                                })
                            }
                        };
                    match permitted {
                        Err(reason) => {
                            call.result = Some(reason);
                            call.ok = false;
                        }
                        Ok(ToolRef::Builtin(tool)) => {
                            crate::tools::execute_tool(call, tool, &context).await
                        }
                        Ok(ToolRef::Mcp(tool)) => {
                            let event =
                                call_mcp_tool(program, &mut mcp, call, &tool, &context).await;
                            on_event(&event, machine.run());
                        }
                    }
                }
                Response::Tools(calls)
            }
            Request::Validate { checks, context } => {
                // Validators read files and may run test commands: keep them off the runtime.
                let work_dir = env.work_dir.clone();
                let evaluated = tokio::task::spawn_blocking(move || {
                    let mut results = Vec::new();
                    for check in &checks {
                        let result = crate::validate::run(check, &context, &work_dir);
                        let failed = !result.ok;
                        results.push(result);
                        if failed {
                            break;
                        }
                    }
                    results
                })
                .await;
                Response::Validate(evaluated.unwrap_or_else(|error| {
                    vec![CheckResult::fail(format!("a validator crashed: {error}"))]
                }))
            }
            Request::Approve { from, to, signal } => Response::Approve(match &env.approvals {
                Approvals::All => true,
                Approvals::None => false,
                Approvals::Ask(ask) => ask(&from, &to, &signal),
            }),
            Request::Context {
                sources,
                session_id,
            } => Response::Context(read_context(
                program,
                &env.work_dir,
                &sandbox,
                &change_log,
                &sources,
                &session_id,
            )),
        };
        machine.resume(response);
    }
    mcp.shutdown().await;
    let position = (machine.run().turn, machine.run().outcome.is_some());
    if saved_turn != Some(position) {
        save(&mut machine, &mut stored);
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
    }
}

/// Adds the MCP tools the call's agent is offered to a model call (the machine offers the
/// built-ins; the servers' tools are known only to the driver, which started them).
fn offer_mcp_tools(program: &Program, mcp: &crate::mcp::McpServers, call: &mut ModelCall) {
    let Some(agent) = program.agent_named(&call.agent).map(|id| program.agent(id)) else {
        return;
    };
    if agent.tool_choice == fuseraft_compiler::ir::ToolChoice::None {
        return;
    }
    for schema in mcp.schemas(program, agent) {
        if !call.tools.iter().any(|known| known.name == schema.name) {
            call.tools.push(schema);
        }
    }
}

/// Runs an allowed MCP call, records it in the change log, and returns its event.
async fn call_mcp_tool(
    program: &Program,
    mcp: &mut crate::mcp::McpServers,
    call: &mut crate::history::ToolCall,
    tool: &fuseraft_compiler::ir::McpToolRef,
    context: &crate::tools::ToolContext,
) -> Event {
    let (text, ok) = mcp
        .call(
            program,
            tool,
            &call.args,
            context.limits.shell_timeout,
            context.limits.output_cap,
        )
        .await;
    let server = &program.mcp_server(tool.server).name;
    let mut text = text;
    crate::tools::record_mcp_call(&mut text, context, server, &tool.tool, &call.args, ok);
    call.result = Some(text);
    call.ok = ok;
    Event::new(
        context.turn,
        Some(&context.agent),
        "mcp_tool_call",
        serde_json::json!({"server": server, "tool": tool.tool, "name": call.name, "ok": ok}),
    )
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
/// is an error naming it: the sandbox never silently widens to the work dir.
pub fn sandbox_root(program: &Program, work_dir: &Path) -> Result<PathBuf, String> {
    let Some((_, value)) = program
        .settings
        .iter()
        .find(|(key, _)| key == "Security.FileSystemSandboxPath")
    else {
        return Ok(work_dir.to_path_buf());
    };
    let path = work_dir.join(value.trim());
    let problem = match std::fs::canonicalize(&path) {
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
    if let Some(read_cap) = program
        .settings
        .iter()
        .find(|(key, _)| key == "Security.ReadFileSizeLimit")
        .and_then(|(_, value)| value.trim().parse().ok())
    {
        limits.read_cap = read_cap;
    }
    limits
}
