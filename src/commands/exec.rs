//! `fuseraft exec INPUT --task TEXT [--replay FILE | --model PROVIDER:MODEL [--endpoint URL] [--api-key-env VAR]]
//! [--events FILE] [--work-dir DIR] [--max-turns N] [--approve all|none] [--resume ID]
//! [--json] [--timeout S] [--idle-timeout S] [--connect-timeout S] [--otlp URL]`: run a
//! workflow, checkpointing after every turn, its events also a trace (`crate::telemetry`). The provider flags are recorded in the session
//! (`ProviderOptions`: the model, the endpoint, the key's variable name, never a key) and a
//! `--resume` without any of them reuses them.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::driver::{self, Approvals, Models};
use fuseraft_vm::event::Outcome;
use fuseraft_vm::machine::Options;
use fuseraft_vm::providers::{Overrides, Providers, Settings, TimeoutFlags};
use fuseraft_vm::replay::Replay;
use serde_json::{json, Value as Json};

use super::exit;

mod agents;
mod approvals;
mod ci;
mod hitl;
mod memory;
mod prepare;
mod report;
mod running;
mod signals;
mod snapshot;
pub(crate) mod summary;
pub(crate) mod transcript;
use crate::cli::{Approve, ExecArgs};
use crate::events::EventsFile;
use crate::render::{self, Style};
use crate::terminal::{json_line, neutralise, Terminal};
use summary::{RunSummary, Tokens};

#[path = "exec_provider.rs"]
mod provider;
pub(crate) use provider::shell_quoted;
use provider::{provider_options_summary, resume_hint, ProviderFlags};

fn usage_error(message: &str) -> u8 {
    eprintln!("error: {}", neutralise(message));
    super::early::record(message);
    exit::USAGE
}

/// The session's audit chain, opened where the run keeps a session and has its key, with the
/// run's standing decisions (`--approve`, the permission policy) as its newest record.
fn open_audit(
    args: &ExecArgs,
    key: &Arc<crate::session::Key>,
    work_dir: &Path,
    session: &str,
    program: &Program,
) -> Option<crate::audit::Shared> {
    if args.ephemeral {
        return None;
    }
    let mut audit = match crate::audit::AuditLog::open(work_dir, session, Arc::clone(key)) {
        Ok(audit) => audit,
        Err(message) => {
            eprintln!("warning: {message}; the run goes on without an audit log");
            return None;
        }
    };
    let approve = match args.approve {
        Some(Approve::All) => "all",
        Some(Approve::None) => "none",
        None => "ask",
    };
    let overrides: serde_json::Map<String, Json> = program
        .permissions
        .overrides
        .iter()
        .map(|(category, action)| (category.key().to_string(), json!(action.as_str())))
        .collect();
    audit.record(
        0,
        None,
        "run_started",
        json!({
            "approve": approve,
            "preset": program.permissions.preset.as_str(),
            "overrides": overrides,
            "resumed": args.resume.is_some(),
        }),
    );
    Some(Arc::new(std::sync::Mutex::new(audit)))
}

/// The characters of memories an agent's instructions carry, at most.
const MEMORY_BUDGET: usize = 2000;

/// Each agent that keeps memories (the `Memory` plugin) starts with the ones most relevant
/// to `task` after its instructions, within [`MEMORY_BUDGET`] (after the session's digest:
/// what it remembers is not its config).
fn remember(program: &mut Program, root: &Path, task: &str) {
    let keeps = |agent: &fuseraft_compiler::ir::Agent| {
        agent
            .tools
            .iter()
            .any(|tool| tool.eq_ignore_ascii_case("Memory"))
    };
    if !program.agents.iter().any(keeps) {
        return;
    }
    let (today, yesterday) = fuseraft_vm::memory::today_and_yesterday();
    let project = fuseraft_vm::memory::project_block(root, &today, &yesterday, MEMORY_BUDGET)
        .unwrap_or_else(|message| {
            eprintln!("warning: the project's memory cannot be read ({message}); the run goes on without it");
            None
        });
    for agent in program.agents.iter_mut().filter(|agent| keeps(agent)) {
        match fuseraft_vm::memory::block(root, &agent.name, task, MEMORY_BUDGET) {
            Ok(Some(block)) => agent.instructions.push_str(&format!(
                "\n\n## Your memories\nFrom earlier sessions, most relevant first; `memory_search` finds more, `memory_get` reads one whole.\n{block}"
            )),
            Ok(None) => {}
            Err(message) => eprintln!(
                "warning: agent `{}`'s memories cannot be read ({message}); it runs without them",
                neutralise(&agent.name)
            ),
        }
        if let Some(project) = &project {
            agent.instructions.push_str(&format!(
                "\n\n## Project memory\nThe project's `MEMORY.md` and the team's recent notes.\n{project}"
            ));
        }
    }
}

/// `--resume FROM --from-turn N`: forks session `FROM` after turn `turn` into a new session
/// (`crate::session::fork`), then resumes that one with the config as it is now.
fn rewind(args: &ExecArgs, from: &str, turn: u64, style: Style) -> u8 {
    if !crate::session::valid_id(from) {
        return usage_error(&crate::session::invalid_id(from));
    }
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let key = match crate::session::Key::load_or_create() {
        Ok(key) => key,
        Err(problem) => return usage_error(&format!("cannot fork session `{from}`: {problem}")),
    };
    let new = crate::session::new_id();
    if let Err(message) = crate::session::fork::fork(&work_dir, from, turn, &new, &key) {
        return usage_error(&message);
    }
    eprintln!("note: session `{new}` starts from session `{from}` after turn {turn}; `{from}` is unchanged");
    let forked = ExecArgs {
        resume: Some(new),
        from_turn: None,
        allow_config_change: true,
        ..args.clone()
    };
    run(&forked, style)
}

/// `--no-replan`: the state machine without its `REPLAN` transitions, each one dropped named
/// on standard error (or why nothing was).
fn announce_no_replan(program: &mut Program) {
    use fuseraft_compiler::ir::{drop_replan_transitions, replans_apply};
    if !replans_apply(program) {
        eprintln!("note: `--no-replan` changes state machines only; this workflow is not one");
        return;
    }
    let dropped = drop_replan_transitions(program);
    if dropped.is_empty() {
        eprintln!("note: `--no-replan`: no transition's signal contains `REPLAN`");
    }
    for transition in dropped {
        eprintln!(
            "note: `--no-replan` drops `{}` → `{}` on `{}`",
            neutralise(&transition.from),
            neutralise(&transition.to),
            neutralise(&transition.signal)
        );
    }
}

/// The value of the environment variable `name`; under `--vscode`, `FUSERAFT_API_KEY` stands
/// in for an unset well-known provider key, which the providers send only to that
/// provider's hosts or an endpoint given on the command line.
fn key_variable(name: &str, vscode: bool) -> Option<String> {
    std::env::var(name).ok().or_else(|| {
        (vscode && fuseraft_vm::providers::is_well_known_key(name))
            .then(|| std::env::var("FUSERAFT_API_KEY").ok())
            .flatten()
    })
}

/// Everything a run needs besides its model provider.
struct Prepared<'a> {
    args: &'a ExecArgs,
    program: &'a Program,
    saved: Option<Json>,
    /// The session key (or why there is none) and the chain to continue.
    key: Option<Arc<crate::session::Key>>,
    chain: crate::session::Chain,
    /// The digest of the program, recorded in every checkpoint.
    config: Option<crate::session::config::Recorded>,
    options: Options,
    work_dir: PathBuf,
    events: Arc<std::sync::Mutex<EventsFile>>,
    /// `--events-text`: streamed text on its way to the events file.
    file_text: Option<Arc<crate::stream_text::TextSink>>,
    approvals: Approvals,
    started: Instant,
    /// The provider flags this run uses (given, or recorded by the session).
    provider: ProviderFlags,
    /// The web view (`--ui`), when asked for.
    ui: Option<crate::ui::Live>,
    /// `--hitl`: asked after every turn.
    pause: Option<Arc<driver::PauseFn>>,
    /// `--otlp` and the like: the run's trace.
    telemetry: Option<crate::telemetry::Telemetry>,
    /// Set when a stop signal comes, for the prompts to give up.
    stopped: signals::Stopped,
    /// What the operator is being asked, if anything.
    asking: signals::Asking,
}

pub fn run(args: &ExecArgs, style: Style) -> u8 {
    if let Some(on) = &args.on {
        return super::remote::exec_on(args, on, style);
    }
    if let (Some(turn), Some(from)) = (args.from_turn, &args.resume) {
        return rewind(args, from, turn, style);
    }
    let started = Instant::now();
    let mut begun = match prepare::begin(args) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    let mut program = match prepare::compiled(args, style) {
        Ok(program) => program,
        Err(code) => return code,
    };
    let config = match prepare::made_ready(args, &mut program, &mut begun) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let outputs = match prepare::outputs(args, &program, &begun) {
        Ok(outputs) => outputs,
        Err(code) => return code,
    };
    // Set by the run's `select!` when a stop signal comes: a prompt then gives up.
    let stopped = signals::Stopped::default();
    let asking = signals::Asking::default();
    let approvals = approvals::approvals(args, outputs.ui.as_ref(), &stopped, &asking);
    let pause = args.hitl.then(|| {
        let ui = outputs.ui.as_ref();
        hitl::pauses(ui, args.approve.is_some(), &stopped, &asking)
    });
    if let Err(message) = begun.store.begin(&begun.work_dir, &begun.session) {
        return usage_error(&message);
    }
    let timeouts = begun.timeouts;
    let prepared = Prepared {
        args,
        program: &program,
        saved: begun.saved,
        key: begun.store.key.ok(),
        chain: begun.chain,
        config,
        options: Options {
            session_id: begun.session,
            task: begun.task,
            max_turns: args.max_turns,
            skip_prompts: false,
        },
        work_dir: begun.work_dir,
        events: outputs.events,
        file_text: outputs.file_text,
        approvals,
        started,
        provider: begun.provider,
        ui: outputs.ui,
        pause,
        telemetry: outputs.telemetry,
        stopped,
        asking,
    };
    match &args.replay {
        Some(path) => replayed(path, prepared, style),
        None => live(prepared, timeouts, style),
    }
}

/// The program `exec --on` submits: compiled and checked as a local run's.
pub(crate) fn compiled_for_server(args: &ExecArgs, style: Style) -> Result<Program, u8> {
    prepare::compiled(args, style)
}

/// The text of the replay file at `path`, read and checked as a local run reads it, for a
/// server to replay; a file that cannot be used is reported here.
pub(crate) fn replay_for_server(path: &Path, style: Style) -> Result<String, u8> {
    let text = crate::disk::read_at_most(path, crate::disk::MAX_REPLAY_BYTES)
        .map_err(|error| replay_unusable(&crate::replay_file::unreadable(path, &error), style))?;
    match crate::replay_file::parse(path, text.clone()) {
        Ok(_) => Ok(text),
        Err(error) => Err(replay_unusable(&error, style)),
    }
}

/// Reports a replay file that cannot be used; the exit code.
fn replay_unusable(
    (sources, diag): &(fuseraft_compiler::SourceMap, fuseraft_compiler::Diagnostic),
    style: Style,
) -> u8 {
    eprint!("{}", render::human(diag, sources, style));
    super::early::record_diagnostic(diag, sources);
    exit::USAGE
}

/// Runs `prepared` answered by the replay file at `path`.
fn replayed(path: &Path, prepared: Prepared<'_>, style: Style) -> u8 {
    let script = match crate::replay_file::load(path) {
        Ok(script) => script,
        Err(error) => return replay_unusable(&error, style),
    };
    let args = prepared.args;
    let terminal = Terminal::new(args.json, false, args.verbose, style);
    execute(&Replay::new(script), prepared, terminal)
}

/// Runs `prepared` against the models the program and the command line name.
fn live(prepared: Prepared<'_>, timeouts: TimeoutFlags, style: Style) -> u8 {
    let args = prepared.args;
    let terminal = Terminal::new(args.json, true, args.verbose, style);
    let sink_terminal = Arc::clone(&terminal);
    let page_text = prepared.ui.as_ref().map(crate::ui::Live::text_sink);
    let file_text = prepared.file_text.clone();
    let overrides = Overrides {
        model: prepared.provider.model.clone(),
        endpoint: prepared.provider.endpoint.clone(),
        api_key_env: prepared.provider.api_key_env.clone(),
        timeouts,
    };
    let providers = Providers::new(
        prepared.program,
        &overrides,
        Settings::default(),
        &|name| key_variable(name, args.vscode),
        Some(Arc::new(move |agent: &str, delta: &str| {
            sink_terminal.token(delta);
            for sink in [&page_text, &file_text].into_iter().flatten() {
                sink.text(agent, delta);
            }
        })),
    )
    .and_then(|providers| match memory::webhook(prepared.program) {
        Some(webhook) => providers.with_memory_webhook(webhook),
        None => Ok(providers),
    });
    match providers {
        Ok(providers) => execute(&providers, prepared, terminal),
        Err(message) => usage_error(&format!(
            "{message}\n  (or pass `--replay FILE` to answer model calls from a replay file)"
        )),
    }
}

/// Runs the prepared workflow with `models`, writing a checkpoint after every turn, then
/// reports how it ended.
fn execute<M: Models>(models: &M, prepared: Prepared<'_>, terminal: Arc<Terminal>) -> u8 {
    let args = prepared.args;
    // The session's audit chain, from the run's start (none for an ephemeral run or without
    // a session key); every answer the operator gives is a record of it.
    let audit = prepared.key.as_ref().and_then(|key| {
        let session = &prepared.options.session_id;
        open_audit(args, key, &prepared.work_dir, session, prepared.program)
    });
    let mut running = match running::Running::start(models, prepared, audit, terminal) {
        Ok(running) => running,
        Err(code) => return code,
    };
    let result = running.drive(models);
    running.after_drive(result.is_ok());
    match result {
        // `--hitl` answered `q`: stopped at a turn boundary, resumable like a cancel.
        Ok(summary) if summary.outcome == Outcome::Cancelled => {
            running.stopped_by_operator(&summary)
        }
        Ok(summary) => report::finished(&mut running, summary),
        Err(signal) => running.stopped_by_signal(signal),
    }
}

/// Sends the trace's last spans, waiting a short deadline at most, and says once what did
/// not reach the collector.
fn finish_telemetry(telemetry: Option<crate::telemetry::Telemetry>) {
    let deadline = crate::telemetry::export::flush_deadline(&|name| std::env::var(name).ok());
    if let Some(report) = telemetry.and_then(|telemetry| telemetry.finish(deadline)) {
        eprintln!("{report}");
    }
}

/// What a cancelled run is known to have done.
#[derive(Default)]
struct Done {
    turns: u32,
    usage: fuseraft_vm::history::Usage,
    /// Calls whose server reported no usage.
    unreported: u32,
    cost: Json,
    /// The per-agent totals so far.
    agents: Json,
}

/// A cancelled run's report: the terminal's last line with the resume command, and the
/// `--json` summary.
struct Cancel {
    args: ExecArgs,
    provider: ProviderFlags,
    session: String,
    task: String,
    started: Instant,
    hint: String,
}

impl Cancel {
    fn new(
        args: &ExecArgs,
        provider: &ProviderFlags,
        session: &str,
        work_dir: &Path,
        task: &str,
        started: Instant,
    ) -> Cancel {
        Cancel {
            hint: resume_hint(args, provider, session, work_dir),
            args: args.clone(),
            provider: provider.clone(),
            session: session.to_string(),
            task: task.to_string(),
            started,
        }
    }

    /// Reports the cancel (`reason`), and returns its exit code.
    fn report(&self, reason: &str, done: Done) -> u8 {
        eprintln!("\n── {reason}{}", self.hint);
        if self.args.json {
            let summary = RunSummary {
                session_id: Some(self.session.clone()),
                task: Some(self.task.clone()),
                config: Some(absolute(&self.args.input)),
                succeeded: false,
                outcome: Outcome::Cancelled.as_str().to_string(),
                error_message: Some(reason.to_string()),
                exit_code: Outcome::Cancelled.exit_code(),
                turns: done.turns,
                elapsed_seconds: self.started.elapsed().as_secs_f64(),
                tokens: Tokens::of(done.usage, done.unreported),
                usage: driver::usage_json(done.usage, done.unreported),
                cost: done.cost,
                provider: provider_options_summary(&self.args, &self.provider),
                resume: (!self.hint.is_empty())
                    .then(|| self.hint.trim_start_matches(" · resume with: ").to_string()),
                agents: done.agents,
                ..RunSummary::default()
            };
            println!("{}", json_line(&summary.json()));
        }
        Outcome::Cancelled.exit_code()
    }
}

/// The user's consent to the MCP servers the run starts (`crate::mcp_trust`): asked on a
/// terminal, else refused unless trusted already.
fn mcp_consent(args: &ExecArgs, program: &Program) -> Result<(), String> {
    crate::mcp_trust::allow_variables(&args.mcp_env);
    crate::mcp_trust::check_variables(program)?;
    let webhook = memory::webhook(program);
    let urls: Vec<&str> = webhook
        .iter()
        .flat_map(|webhook| [&webhook.load_url, &webhook.save_url])
        .flatten()
        .map(String::as_str)
        .collect();
    // A replayed run calls no webhook (it reaches no model provider).
    let urls = if args.replay.is_some() {
        &[][..]
    } else {
        &urls[..]
    };
    let nothing_to_ask = program.mcp_servers.is_empty() && urls.is_empty();
    if args.trust_mcp || nothing_to_ask || !std::io::stdin().is_terminal() {
        let never = crate::mcp_trust::Ask::Never;
        crate::mcp_trust::check(program, args.trust_mcp, never)?;
        let never = crate::mcp_trust::Ask::Never;
        return crate::mcp_trust::check_webhook(program, urls, args.trust_mcp, never);
    }
    let stopped = signals::watch_stop_signals();
    let ask = move |question: &str| crate::terminal::ask(question, &stopped).unwrap_or(false);
    crate::mcp_trust::check(program, false, crate::mcp_trust::Ask::Terminal(&ask))?;
    crate::mcp_trust::check_webhook(program, urls, false, crate::mcp_trust::Ask::Terminal(&ask))
}

/// Merges the run's change-log records into `changes.json`, so that it alone holds them all
/// for readers other than fuseraft.
fn compact_change_log(program: &Program, work_dir: &Path, session: &str) {
    let path = driver::change_log_path(program, work_dir, session);
    if let Err(error) = fuseraft_vm::changes::store::compact(&path) {
        eprintln!("warning: {error}");
    }
}

/// The one warning of a session store that cannot be written.
fn warn_unsaved(error: &std::io::Error, log: &mut crate::session::SessionLog) {
    let resume = if log.resumable() {
        "`--resume` continues from the last turn saved"
    } else {
        "it cannot be resumed"
    };
    eprintln!(
        "warning: cannot write the session checkpoint ({error}); the run continues without saving its turns, and {resume}"
    );
}

fn absolute(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
