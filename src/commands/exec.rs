//! `fuseraft exec INPUT --task TEXT [--replay FILE | --model PROVIDER:MODEL [--endpoint URL] [--api-key-env VAR]]
//! [--events FILE] [--work-dir DIR] [--max-turns N] [--approve all|none] [--resume ID]
//! [--json] [--timeout S] [--idle-timeout S] [--connect-timeout S] [--otlp URL]`: run a
//! workflow, checkpointing after every turn, its events also a trace (`crate::telemetry`). The provider flags are recorded in the session
//! (`ProviderOptions`: the model, the endpoint, the key's variable name, never a key) and a
//! `--resume` without any of them reuses them.

use fuseraft_vm::effect::Question;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::driver::{self, Approval, Approvals, Env, Models};
use fuseraft_vm::event::{Event, Outcome};
use fuseraft_vm::machine::{Machine, Options, Run};
use fuseraft_vm::providers::{Overrides, Providers, Settings};
use fuseraft_vm::replay::Replay;
use serde_json::{json, Value as Json};

use super::exit;

mod agents;
mod ci;
mod hitl;
mod memory;
mod snapshot;
pub(crate) mod summary;
pub(crate) mod transcript;
use crate::cli::{Approve, ExecArgs};
use crate::disk::Project;
use crate::events::EventsFile;
use crate::render::{self, Style};
use crate::terminal::{approval_question, json_line, neutralise, Terminal};
use summary::{RunSummary, Tokens};

#[path = "exec_provider.rs"]
mod provider;
pub(crate) use provider::shell_quoted;
use provider::{
    cost_json, cost_text, provider_options_summary, resume_hint, timeout_flags, tokens_text,
    ProviderFlags,
};

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

/// `approvals` whose every answer from the operator is also an audit record.
fn audited(approvals: Approvals, audit: Option<crate::audit::Shared>) -> Approvals {
    match (approvals, audit) {
        (Approvals::Ask(ask), Some(audit)) => Approvals::Ask(Box::new(
            move |from: &str, to: &str, question: &Question| {
                let answer = ask(from, to, question);
                if let Ok(mut audit) = audit.lock() {
                    audit.operator_answered(from, to, question, &answer);
                }
                answer
            },
        )),
        // `--approve all|none` decides alone: the chain's first record says which.
        (approvals, _) => approvals,
    }
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
    pause: Option<Box<driver::PauseFn>>,
    /// `--otlp` and the like: the run's trace.
    telemetry: Option<crate::telemetry::Telemetry>,
}

pub fn run(args: &ExecArgs, style: Style) -> u8 {
    if let (Some(turn), Some(from)) = (args.from_turn, &args.resume) {
        return rewind(args, from, turn, style);
    }
    let started = Instant::now();
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = match &args.resume {
        Some(id) if !crate::session::valid_id(id) => {
            return usage_error(&crate::session::invalid_id(id))
        }
        Some(id) => id.clone(),
        None => crate::session::new_id(),
    };
    // A resumed session is locked before it is read (a resume repairs its log), a new one
    // once its config compiled; either for the whole run.
    let mut store = match crate::session::Store::open(
        &work_dir,
        &session,
        args.ephemeral,
        args.resume.is_some(),
    ) {
        Ok(store) => store,
        Err(message) => return usage_error(&message),
    };
    let mut chain = crate::session::Chain::default();
    // A resumed session brings its own task.
    let saved = match &args.resume {
        Some(id) => {
            let trust = crate::session::Trust {
                key: store.key.as_deref().map_err(String::as_str),
                allow_unverified: args.allow_unverified,
            };
            match crate::session::load_for_resume(&work_dir, id, &trust) {
                Ok(loaded) => {
                    for note in &loaded.notes {
                        eprintln!("note: {note}");
                    }
                    if loaded.unverified {
                        eprintln!("warning: session `{id}` is not authenticated; resuming it as `--allow-unverified` asks");
                    }
                    chain = loaded.chain;
                    Some(loaded.state)
                }
                Err(message) => return usage_error(&message),
            }
        }
        None => None,
    };
    let task = match (&saved, &args.task) {
        (Some(saved), given) => {
            let task = saved
                .get("Task")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string();
            if given.as_ref().is_some_and(|given| *given != task) {
                eprintln!("warning: `--task` is ignored when resuming; the session's task is kept");
            }
            task
        }
        (None, Some(task)) => task.clone(),
        (None, None) => {
            return usage_error(
                "`--task TEXT` is required: it is what the first agent is asked to do",
            )
        }
    };
    if args.replay.is_some()
        && (args.model.is_some() || args.endpoint.is_some() || args.api_key_env.is_some())
    {
        return usage_error("`--replay` answers every model call; it cannot be combined with `--model`, `--endpoint` or `--api-key-env`");
    }
    // A resume without provider flags runs against the provider the session recorded.
    let provider = match (&saved, ProviderFlags::given(args)) {
        (Some(saved), given) if given.is_empty() && args.replay.is_none() => {
            ProviderFlags::recorded(saved)
        }
        (_, given) => given,
    };
    let timeouts = match timeout_flags(args) {
        Ok(timeouts) => timeouts,
        Err(message) => return usage_error(&message),
    };
    let compiled = fuseraft_compiler::compile(&args.input, &Project::new());
    // `check`'s findings (the compile diagnostics among them) before the first turn: a
    // config that compiles may still never tell an agent its keyword (FR307).
    let mut diagnostics = if compiled.program.is_some() {
        fuseraft_compiler::check::check(&compiled).diagnostics
    } else {
        compiled.diagnostics.clone()
    };
    // A model's missing endpoint (FR105) is moot when the command line names the models'
    // endpoint or replaces the models, or a replay answers every call.
    if args.endpoint.is_some() || args.model.is_some() || args.replay.is_some() {
        diagnostics.retain(|diagnostic| {
            diagnostic.code != fuseraft_compiler::diagnostic::Code::UnknownModelAlias
        });
    }
    // What `check` says would start, this run starts: not a finding to show before it.
    diagnostics.retain(|diagnostic| {
        diagnostic.code != fuseraft_compiler::diagnostic::Code::McpServerStarts
    });
    eprint!("{}", render::all(&diagnostics, &compiled.sources, style));
    let Some(mut program) = compiled.program else {
        super::early::record_compile_failure(&compiled);
        return exit::USAGE;
    };
    // A config `check` rejects would misbehave where the finding says: it does not start.
    if diagnostics
        .iter()
        .any(fuseraft_compiler::Diagnostic::is_error)
    {
        eprintln!("error: not run: `fuseraft check` finds errors in this config (above)");
        super::early::record_errors(&diagnostics, &compiled.sources, "");
        return exit::FINDINGS;
    }
    if args.no_replan {
        announce_no_replan(&mut program);
    }
    let config = if args.ephemeral {
        None
    } else {
        match crate::session::config::check(
            &work_dir,
            &session,
            &program,
            saved.as_ref(),
            &absolute(&args.input),
            args.allow_config_change,
        ) {
            Ok(digest) => Some(digest),
            Err(message) => return usage_error(&message),
        }
    };
    // `--hitl`: shell commands, file writes and git writes are put to the operator unless
    // the config's policy allows them explicitly (after the digest: the session's program is
    // the config's).
    if args.hitl {
        use fuseraft_compiler::ir::Category;
        program.permissions.ask_unless_allowed_explicitly(&[
            Category::CommandExecution,
            Category::FileWriteDelete,
            Category::GitWrite,
        ]);
    }
    if let Err(error) = std::fs::create_dir_all(&work_dir) {
        return usage_error(&format!(
            "cannot create the work dir `{}`: {error}",
            work_dir.display()
        ));
    }
    let work_dir = match std::fs::canonicalize(&work_dir) {
        Ok(dir) => dir,
        Err(error) => {
            return usage_error(&format!(
                "cannot use the work dir `{}`: {error}",
                work_dir.display()
            ))
        }
    };
    // A sandbox that does not exist is an error before the first turn, not a wider sandbox.
    match driver::sandbox_root(&program, &work_dir) {
        Ok(root) => remember(&mut program, &root, &task),
        Err(message) => return usage_error(&format!("{message} (in `{}`)", args.input.display())),
    }
    // Before the first turn: no server the user did not trust starts, no variable they did
    // not allow expands.
    if let Err(message) = mcp_consent(args, &program) {
        return usage_error(&message);
    }
    // fuseraft's own state under the work dir is never reached through a link: a planted
    // `.fuseraft/state -> ~` or `changes.jsonl -> ~/.bashrc` stops the run here.
    let change_log = driver::change_log_path(&program, &work_dir, &session);
    if let Err(message) = fuseraft_vm::changes::store::Files::open(&work_dir, &change_log) {
        return usage_error(&message);
    }
    let events = match &args.events {
        Some(path) => match EventsFile::open(path) {
            Ok(file) => file,
            Err(error) => {
                return usage_error(&format!(
                    "cannot open the events file `{}`: {error}",
                    path.display()
                ))
            }
        },
        None => EventsFile::none(),
    };
    let events = Arc::new(std::sync::Mutex::new(events));
    let file_text = args.events_text.then(|| {
        let (events, session) = (Arc::clone(&events), session.clone());
        crate::stream_text::TextSink::start(Box::new(move |turn, agent, text| {
            if let Ok(mut events) = events.lock() {
                events.write_text(turn, agent, &text, &session);
            }
        }))
    });
    // `--otlp`, the config's `Telemetry` keys, the OTLP variables: the run's trace.
    let telemetry =
        match crate::telemetry::settings(args.otlp.as_deref(), &program.settings, &|name| {
            std::env::var(name).ok()
        }) {
            Ok(None) => None,
            Ok(Some(settings)) => {
                let info = crate::telemetry::RunInfo {
                    session: &session,
                    program: &program,
                    model_flag: provider.model.as_deref(),
                    replay: args.replay.is_some(),
                    resumed: args.resume.is_some(),
                };
                match crate::telemetry::Telemetry::start(&settings, &info) {
                    Ok(telemetry) => Some(telemetry),
                    Err(message) => return usage_error(&message),
                }
            }
            Err(message) => return usage_error(&message),
        };
    let ui = match &args.ui {
        Some(addr) => {
            // The terminal answers alongside the page: approvals unless `--approve` answers
            // them, `--hitl` pauses always.
            let terminal = (args.approve.is_none() || args.hitl) && std::io::stdin().is_terminal();
            match crate::ui::Live::start(addr, &program, terminal) {
                Ok(ui) => {
                    eprintln!("web view: {}", ui.url());
                    Some(ui)
                }
                Err(message) => return usage_error(&message),
            }
        }
        None => None,
    };
    let approvals = match args.approve {
        Some(Approve::All) => Approvals::All,
        Some(Approve::None) => Approvals::None,
        // The page and the terminal (when there is one) both answer, whichever first.
        None if ui.is_some() => {
            let cancel = cancel_on_signal(args, &provider, &session, &work_dir, "an approval");
            let ui = ui.as_ref().expect("checked by the guard");
            ui.approvals(watch_stop_signals(), cancel)
        }
        None if std::io::stdin().is_terminal() => {
            // A prompt blocks the run's thread: a signal during it is seen by a watcher
            // thread, and the prompt ends the process (the last checkpoint stays resumable).
            let stopped = watch_stop_signals();
            let cancel = cancel_on_signal(args, &provider, &session, &work_dir, "an approval");
            Approvals::Ask(Box::new(move |from: &str, to: &str, asked: &Question| {
                let question = approval_question(from, to, asked);
                if matches!(asked, Question::Human { .. }) {
                    // A tama `human` step: the line typed is its input; the end of input
                    // answers nothing, which stops the run.
                    return match crate::terminal::read_answer(&question, &stopped) {
                        Ok(Some(line)) => Approval::Redirected(line),
                        Ok(None) => Approval::Refused,
                        Err(signal) => {
                            cancel(signal);
                            Approval::Refused
                        }
                    };
                }
                let granted = crate::terminal::ask(&question, &stopped).unwrap_or_else(|signal| {
                    cancel(signal);
                    false
                });
                Approval::of(granted)
            }))
        }
        None => Approvals::Ask(Box::new(move |from: &str, to: &str, asked: &Question| {
            let question = approval_question(from, to, asked);
            eprintln!(
                "{}\n  standard input is not a terminal: refused (pass `--approve all` or `--approve none`)",
                question.trim_end_matches(" [y/N] ")
            );
            Approval::Refused
        })),
    };
    let pause = args.hitl.then(|| {
        let cancel = cancel_on_signal(args, &provider, &session, &work_dir, "a pause");
        hitl::pauses(
            ui.as_ref(),
            args.approve.is_some(),
            watch_stop_signals(),
            cancel,
        )
    });
    if let Err(message) = store.begin(&work_dir, &session) {
        return usage_error(&message);
    }

    let options = Options {
        session_id: session,
        task,
        max_turns: args.max_turns,
        skip_prompts: false,
    };
    let prepared = Prepared {
        args,
        program: &program,
        saved,
        key: store.key.ok(),
        chain,
        config,
        options,
        work_dir,
        events,
        file_text: file_text.clone(),
        approvals,
        started,
        provider: provider.clone(),
        ui,
        pause,
        telemetry,
    };
    match &args.replay {
        Some(path) => {
            let script = match crate::replay_file::load(path) {
                Ok(script) => script,
                Err(error) => {
                    let (sources, diag) = *error;
                    eprint!("{}", render::human(&diag, &sources, style));
                    super::early::record_diagnostic(&diag, &sources);
                    return exit::USAGE;
                }
            };
            let terminal = Terminal::new(args.json, false, args.verbose, style);
            execute(&Replay::new(script), prepared, terminal)
        }
        None => {
            let terminal = Terminal::new(args.json, true, args.verbose, style);
            let sink_terminal = Arc::clone(&terminal);
            let page_text = prepared.ui.as_ref().map(crate::ui::Live::text_sink);
            let notice_terminal = Arc::clone(&terminal);
            let overrides = Overrides {
                model: provider.model,
                endpoint: provider.endpoint,
                api_key_env: provider.api_key_env,
                timeouts,
            };
            let providers = Providers::new(
                &program,
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
            .map(|providers| {
                let fit_terminal = notice_terminal.clone();
                providers
                    .with_retry_notices(Arc::new(move |agent: &str, notice: &str| {
                        notice_terminal.retry(agent, notice)
                    }))
                    .with_fit_notices(Arc::new(move |agent: &str, notice: &str| {
                        fit_terminal.notice(agent, notice)
                    }))
            })
            .and_then(|providers| match memory::webhook(&program) {
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
    }
}

/// Runs the prepared workflow with `models`, writing a checkpoint after every turn.
fn execute<M: Models>(models: &M, prepared: Prepared<'_>, terminal: Arc<Terminal>) -> u8 {
    let Prepared {
        args,
        program,
        saved,
        key,
        chain,
        config,
        options,
        work_dir,
        events,
        file_text,
        approvals,
        started,
        provider,
        ui,
        pause,
        mut telemetry,
    } = prepared;
    // The session's audit chain, from the run's start (none for an ephemeral run or without
    // a session key); every answer the operator gives is a record of it.
    let audit = key
        .as_ref()
        .and_then(|key| open_audit(args, key, &work_dir, &options.session_id, program));
    let approvals = audited(approvals, audit.clone());
    let session = options.session_id.clone();
    let task = options.task.clone();
    let mut machine = match &saved {
        Some(saved) => match driver::restore(program, options, models, saved) {
            Ok(machine) => machine,
            Err(message) => return usage_error(&message),
        },
        None => Machine::new(program, driver::options_for(options, models)),
    };
    // `--hitl` with an operator to answer: a run about to end stuck asks them first.
    if args.hitl && args.approve.is_none() {
        machine.ask_when_stuck();
    }
    let env = Env {
        work_dir: work_dir.clone(),
        deny_read: crate::session::key::deny_read(&args.deny_read),
        approvals,
        pause,
    };
    // Per-agent totals: the session's so far, counted on from each turn's events.
    let agents = std::cell::RefCell::new(agents::Agents::restored(saved.as_ref()));
    // The newest turn and tokens the run reported, for the summary of a run a signal ends.
    let mut seen = (0u32, fuseraft_vm::history::Usage::default());
    let mut on_event = |event: &Event, run: &Run| {
        seen = (run.turn, run.usage);
        agents.borrow_mut().on_event(event);
        if let Some(audit) = &audit {
            if let Ok(mut audit) = audit.lock() {
                audit.on_event(event, run);
            }
        }
        // Streamed text first: this event may end its turn.
        if let Some(text) = &file_text {
            text.flush();
            if let fuseraft_vm::event::EventKind::TurnStart { .. } = event.kind {
                text.at_turn(event.turn);
            }
        }
        if let Ok(mut events) = events.lock() {
            events.write_with_upstream(event, run, &session);
        }
        terminal.event(event, run);
        if let Some(ui) = &ui {
            ui.event(event, run, &session);
        }
        if let Some(telemetry) = telemetry.as_mut() {
            telemetry.event(event, &run.history);
        }
    };
    let started_at = saved
        .as_ref()
        .and_then(|saved| saved.get("StartedAt").and_then(Json::as_str))
        .map_or_else(crate::events::timestamp, str::to_string);
    let forked_from = saved
        .as_ref()
        .and_then(|saved| saved.get(crate::session::fork::FORKED_FROM))
        .cloned();
    // The restored history is in the machine now; drop the loaded copy of it.
    drop(saved);
    let config_path = std::fs::canonicalize(&args.input).unwrap_or_else(|_| args.input.clone());
    let mut log = crate::session::SessionLog::new(&work_dir, &session, key, chain);
    if let Some(config) = &config {
        config.keep(&work_dir, &session);
    }
    // Recorded for `--resume` (a replay run records none: its resume names the file).
    let provider_options = args.replay.is_none().then(|| provider.json());
    let mut fields = crate::session::SessionFields {
        config_path: config_path.display().to_string().into(),
        config_digest: config
            .map(|config| config.digest)
            .unwrap_or_default()
            .into(),
        working_directory: work_dir.display().to_string().into(),
        started_at: started_at.into(),
        last_updated_at: Default::default(),
        provider_options: provider_options.map(std::borrow::Cow::Owned),
        cancelled: false,
        forked_from: forked_from.map(std::borrow::Cow::Owned),
        agent_totals: None,
    };
    let mut on_checkpoint = |checkpoint: driver::Checkpoint<'_>| {
        fields.last_updated_at = crate::events::timestamp().into();
        fields.agent_totals = Some(std::borrow::Cow::Owned(agents.borrow().json()));
        // The log reports its first error only, so the warning comes once.
        if let Err(error) = log.append(&checkpoint, &fields) {
            warn_unsaved(&error, &mut log);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let result = runtime.block_on(async {
        // Listening starts before the first turn: from then on SIGINT, SIGTERM and SIGHUP
        // cancel. The drive future is dropped, which kills a running tool's process group.
        let stop = StopSignals::listen();
        tokio::select! {
            summary = driver::drive(
                machine,
                models,
                &env,
                &mut on_event,
                if args.ephemeral { None } else { Some(&mut on_checkpoint) },
            ) => Ok(summary),
            signal = stop.recv() => Err(signal),
        }
    });
    terminal.flush();
    // The trace's last spans go while the run reports (a cancel's end comes below).
    if result.is_ok() {
        finish_telemetry(telemetry.take());
    }
    if let Some(ui) = &ui {
        ui.finish();
        // The page goes with the process: say where the finished run can be seen again.
        if !args.ephemeral {
            eprintln!(
                "web view closed with the run; browse its session with: fuseraft ui --work-dir {}",
                provider::shell_quoted(&work_dir.display().to_string())
            );
        }
    }
    compact_change_log(program, &work_dir, &session);
    let summary = match result {
        // `--hitl` answered `q`: stopped at a turn boundary, resumable like a cancel.
        Ok(summary) if summary.outcome == Outcome::Cancelled => {
            if let Err(error) = log.cancel(json!(crate::events::timestamp())) {
                warn_unsaved(&error, &mut log);
            }
            let reason = summary
                .reason
                .clone()
                .unwrap_or_else(|| "cancelled".to_string());
            let done = Done {
                turns: summary.turns,
                usage: summary.usage,
                unreported: summary.usage_unreported,
                cost: cost_json(&summary.cost),
                agents: agents.borrow().json(),
            };
            let cancel = Cancel::new(args, &provider, &session, &work_dir, &task, started);
            return cancel.report(&reason, done);
        }
        Ok(summary) => summary,
        Err(signal) => {
            // Cancelled: the last checkpoint (after the last completed turn) stays resumable.
            if let Err(error) = log.cancel(json!(crate::events::timestamp())) {
                warn_unsaved(&error, &mut log);
            }
            let (turns, usage) = seen;
            let reason = format!("cancelled ({signal})");
            // The drive future was dropped mid-turn: the events file still gets its end.
            let end = Event::new(
                turns,
                None,
                fuseraft_vm::event::EventKind::SessionEnd {
                    outcome: Outcome::Cancelled,
                    turns,
                    reason: Some(reason.clone()),
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cache_read_tokens: None,
                    cache_write_tokens: None,
                    usage: None,
                    cost: None,
                },
            );
            if let Ok(mut events) = events.lock() {
                events.write(&end, &session);
            }
            if let Some(mut telemetry) = telemetry.take() {
                telemetry.event(&end, &[]);
                finish_telemetry(Some(telemetry));
            }
            let done = Done {
                turns,
                usage,
                unreported: 0,
                cost: Json::Null,
                agents: agents.borrow().json(),
            };
            let cancel = Cancel::new(args, &provider, &session, &work_dir, &task, started);
            return cancel.report(&reason, done);
        }
    };
    // The log is synced and its snapshot written while the transcript is.
    log.finish_soon();
    let mut summary = summary;
    // A turn cap the program sets no reason for: the one the command line gave, else the
    // config's (the session keeps `null`, as it always has).
    if summary.outcome == Outcome::MaxTurns && summary.reason.is_none() {
        summary.reason = Some(match args.max_turns {
            Some(max) if summary.turns >= max => {
                format!("`--max-turns {max}` was reached")
            }
            _ => "the config's turn cap (`MaxIterations`) was reached".to_string(),
        });
    }
    // A run that ended without an error but did not do the work (issue 13) fails.
    let mut code = match summary.shortfall {
        Some(_) => exit::FINDINGS,
        None => summary.outcome.exit_code(),
    };
    // `--ci`: the test report of a run that ended well decides.
    let ci = (args.ci && code == exit::OK)
        .then(|| ci::read(&program.settings, &work_dir, &session))
        .and_then(|read| match read {
            Ok(found) => found,
            Err(message) => {
                eprintln!("error: {message}");
                code = exit::USAGE;
                None
            }
        });
    if let Some(found) = ci.as_ref().filter(|found| found.failed()) {
        eprintln!(
            "ci: the test report has {} FAIL row(s): {}",
            found.failed_criteria.len(),
            found.failed_criteria.join("; ")
        );
        code = exit::USAGE;
    }
    let transcript = if args.ephemeral {
        None
    } else {
        match transcript::write(&work_dir, &session, &task, &summary) {
            Ok(path) => Some(path),
            Err(error) => {
                eprintln!("warning: cannot write the transcript: {error}");
                None
            }
        }
    };
    // `-o FILE`: the same Markdown where the user asked for it.
    if let Some(output) = &args.output {
        let written = std::fs::File::create(output).and_then(|file| {
            let mut out = std::io::BufWriter::new(file);
            transcript::render_to(&mut out, &session, &task, &summary)?;
            out.flush()
        });
        if let Err(error) = written {
            eprintln!(
                "warning: cannot write the transcript to `{}`: {error}",
                output.display()
            );
        }
    }
    if let Err(error) = log.finish() {
        warn_unsaved(&error, &mut log);
    }
    // A session that could not be saved at all keeps no audit chain either.
    if audit.is_some() && !crate::session::path(&work_dir, &session).exists() {
        crate::audit::remove(&work_dir, &session);
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Any run that did not complete can go on from its last checkpoint.
    let resume = (summary.outcome != Outcome::Completed)
        .then(|| resume_hint(args, &provider, &session, &work_dir))
        .filter(|hint| !hint.is_empty())
        .map(|hint| hint.trim_start_matches(" · resume with: ").to_string());
    let _ = writeln!(
        std::io::stderr().lock(),
        "── {} after {} turn(s) · session {session} · {}{} · {:.2}s{}{}{}",
        summary.outcome.as_str(),
        summary.turns,
        tokens_text(summary.usage, summary.usage_unreported),
        cost_text(&summary.cost),
        elapsed,
        summary
            .reason
            .iter()
            .map(|reason| format!("\n   {}", neutralise(reason)))
            .chain(
                summary
                    .shortfall
                    .iter()
                    .map(|why| format!("\n   not done: {}", neutralise(why)))
            )
            .collect::<String>(),
        agents.borrow().lines(),
        resume
            .as_ref()
            .map(|command| format!("\n   resume with: {command}"))
            .unwrap_or_default(),
    );
    if !args.json {
        if let Some(output) = &summary.output {
            println!("{}", neutralise(output));
        }
    }
    if args.json || args.snapshot {
        let finished = RunSummary {
            session_id: Some(session.clone()),
            task: Some(task.clone()),
            config: Some(absolute(&args.input)),
            succeeded: code == exit::OK,
            outcome: summary.outcome.as_str().to_string(),
            error_message: summary.reason.clone().or(summary.shortfall.clone()),
            shortfall: summary.shortfall.clone(),
            output: summary.output.clone(),
            transcript_path: transcript.as_ref().map(|path| path.display().to_string()),
            exit_code: code,
            turns: summary.turns,
            elapsed_seconds: elapsed,
            tokens: Tokens::of(summary.usage, summary.usage_unreported),
            usage: driver::usage_json(summary.usage, summary.usage_unreported),
            cost: cost_json(&summary.cost),
            provider: provider_options_summary(args, &provider),
            resume,
            ci,
            agents: agents.borrow().json(),
        };
        // `--snapshot`: the run's turns and its summary where upstream keeps them.
        if args.snapshot {
            match snapshot::write(&work_dir, &session, &summary.history, &finished.json()) {
                Ok(dir) => eprintln!("snapshot: {}", dir.display()),
                Err(message) => eprintln!("warning: cannot write the snapshot: {message}"),
            }
        }
        if args.json {
            println!("{}", json_line(&finished.json()));
        }
    }
    code
}

/// Sends the trace's last spans, waiting a short deadline at most, and says once what did
/// not reach the collector.
fn finish_telemetry(telemetry: Option<crate::telemetry::Telemetry>) {
    if let Some(report) =
        telemetry.and_then(|telemetry| telemetry.finish(crate::telemetry::export::FLUSH_DEADLINE))
    {
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
    if args.trust_mcp || program.mcp_servers.is_empty() || !std::io::stdin().is_terminal() {
        return crate::mcp_trust::check(program, args.trust_mcp, crate::mcp_trust::Ask::Never);
    }
    let stopped = watch_stop_signals();
    let ask = move |question: &str| crate::terminal::ask(question, &stopped).unwrap_or(false);
    crate::mcp_trust::check(program, false, crate::mcp_trust::Ask::Terminal(&ask))
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

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP: each cancels a run the same way.
struct StopSignals {
    #[cfg(unix)]
    listeners: [(&'static str, Option<tokio::signal::unix::Signal>); 3],
}

impl StopSignals {
    /// Installs the handlers now (not on first poll), so no signal is missed once the run
    /// has started.
    fn listen() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            StopSignals {
                listeners: [
                    ("SIGINT", signal(SignalKind::interrupt()).ok()),
                    ("SIGTERM", signal(SignalKind::terminate()).ok()),
                    ("SIGHUP", signal(SignalKind::hangup()).ok()),
                ],
            }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// The name of the first signal received.
    async fn recv(self) -> &'static str {
        #[cfg(unix)]
        {
            let [(int, mut a), (term, mut b), (hup, mut c)] = self.listeners;
            tokio::select! {
                _ = received(&mut a) => int,
                _ = received(&mut b) => term,
                _ = received(&mut c) => hup,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// Resolves when `listener` receives its signal; never when it could not be installed.
#[cfg(unix)]
async fn received(listener: &mut Option<tokio::signal::unix::Signal>) {
    match listener {
        Some(listener) => {
            if listener.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// The stop signal received, once one is: set by a thread with its own runtime, so it is
/// seen while the run's thread is blocked (in an approval prompt).
/// Ends the process when a stop signal arrives while a prompt (`during`) blocks the run:
/// the resume hint, the `--json` summary, the cancelled exit code. The last checkpoint
/// stays resumable.
fn cancel_on_signal(
    args: &ExecArgs,
    provider: &ProviderFlags,
    session: &str,
    work_dir: &Path,
    during: &'static str,
) -> Box<dyn Fn(&'static str) + Send + Sync> {
    let task = args.task.clone().unwrap_or_default();
    let cancel = Cancel::new(args, provider, session, work_dir, &task, Instant::now());
    Box::new(move |signal: &'static str| {
        let reason = format!("cancelled ({signal}) during {during}");
        std::process::exit(i32::from(cancel.report(&reason, Done::default())));
    })
}

type Stopped = std::sync::Arc<std::sync::OnceLock<&'static str>>;

fn watch_stop_signals() -> Stopped {
    let stopped = Stopped::default();
    let set = stopped.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    if let Ok(runtime) = runtime {
        // Installed here, before the run starts; the thread lives as long as the process.
        let stop = runtime.block_on(async { StopSignals::listen() });
        std::thread::spawn(move || {
            let signal = runtime.block_on(stop.recv());
            let _ = set.set(signal);
        });
    }
    stopped
}
