//! Everything `exec` settles before the first turn, in order: the session (new, or resumed
//! with its task and provider), the program (compiled, checked, and refused on an
//! error-level finding), the work dir and fuseraft's state in it, and where the run's
//! events go (the events file, the trace, the web view). Each step returns the exit code
//! of the refusal that ends the run before it starts.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::driver;
use fuseraft_vm::providers::TimeoutFlags;
use serde_json::Value as Json;

use super::provider::{timeout_flags, ProviderFlags};
use super::{absolute, announce_no_replan, mcp_consent, remember, usage_error};
use crate::cli::ExecArgs;
use crate::disk::Project;
use crate::events::EventsFile;
use crate::render::{self, Style};

/// The session a run continues or starts, and what it was asked.
pub(super) struct Begun {
    pub(super) work_dir: PathBuf,
    pub(super) session: String,
    pub(super) store: crate::session::Store,
    pub(super) chain: crate::session::Chain,
    /// A resumed session's last state.
    pub(super) saved: Option<Json>,
    pub(super) task: String,
    /// The provider flags this run uses (given, or recorded by the session).
    pub(super) provider: ProviderFlags,
    pub(super) timeouts: TimeoutFlags,
}

/// The session (locked), its task and the provider flags.
pub(super) fn begin(args: &ExecArgs) -> Result<Begun, u8> {
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = match &args.resume {
        Some(id) if !crate::session::valid_id(id) => {
            return Err(usage_error(&crate::session::invalid_id(id)))
        }
        Some(id) => id.clone(),
        None => crate::session::new_id(),
    };
    // A resumed session is locked before it is read (a resume repairs its log), a new one
    // once its config compiled; either for the whole run.
    let store =
        crate::session::Store::open(&work_dir, &session, args.ephemeral, args.resume.is_some())
            .map_err(|message| usage_error(&message))?;
    let (saved, chain) = match &args.resume {
        Some(id) => resumed(args, &work_dir, id, &store)?,
        None => (None, crate::session::Chain::default()),
    };
    let task = task_of(args, saved.as_ref())?;
    if args.replay.is_some()
        && (args.model.is_some() || args.endpoint.is_some() || args.api_key_env.is_some())
    {
        return Err(usage_error("`--replay` answers every model call; it cannot be combined with `--model`, `--endpoint` or `--api-key-env`"));
    }
    // A resume without provider flags runs against the provider the session recorded.
    let provider = match (&saved, ProviderFlags::given(args)) {
        (Some(saved), given) if given.is_empty() && args.replay.is_none() => {
            ProviderFlags::recorded(saved)
        }
        (_, given) => given,
    };
    let timeouts = timeout_flags(args).map_err(|message| usage_error(&message))?;
    Ok(Begun {
        work_dir,
        session,
        store,
        chain,
        saved,
        task,
        provider,
        timeouts,
    })
}

/// Session `id`'s last state and audit chain, verified with the session key.
fn resumed(
    args: &ExecArgs,
    work_dir: &std::path::Path,
    id: &str,
    store: &crate::session::Store,
) -> Result<(Option<Json>, crate::session::Chain), u8> {
    let trust = crate::session::Trust {
        key: store.key.as_deref().map_err(String::as_str),
        allow_unverified: args.allow_unverified,
    };
    let loaded = crate::session::load_for_resume(work_dir, id, &trust)
        .map_err(|message| usage_error(&message))?;
    for note in &loaded.notes {
        eprintln!("note: {note}");
    }
    if loaded.unverified {
        eprintln!("warning: session `{id}` is not authenticated; resuming it as `--allow-unverified` asks");
    }
    Ok((Some(loaded.state), loaded.chain))
}

/// The run's task: a resumed session's own, else `--task`.
fn task_of(args: &ExecArgs, saved: Option<&Json>) -> Result<String, u8> {
    match (saved, &args.task) {
        (Some(saved), given) => {
            let task = saved
                .get("Task")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string();
            if given.as_ref().is_some_and(|given| *given != task) {
                eprintln!("warning: `--task` is ignored when resuming; the session's task is kept");
            }
            Ok(task)
        }
        (None, Some(task)) => Ok(task.clone()),
        (None, None) => Err(usage_error(
            "`--task TEXT` is required: it is what the first agent is asked to do",
        )),
    }
}

/// The program, compiled and checked; `check`'s findings are printed first, and a config
/// with an error-level one does not start.
pub(super) fn compiled(args: &ExecArgs, style: Style) -> Result<Program, u8> {
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
    let Some(program) = compiled.program else {
        super::super::early::record_compile_failure(&compiled);
        return Err(super::exit::USAGE);
    };
    // A config `check` rejects would misbehave where the finding says: it does not start.
    if diagnostics
        .iter()
        .any(fuseraft_compiler::Diagnostic::is_error)
    {
        eprintln!("error: not run: `fuseraft check` finds errors in this config (above)");
        super::super::early::record_errors(&diagnostics, &compiled.sources, "");
        return Err(super::exit::FINDINGS);
    }
    Ok(program)
}

/// The program as this run runs it (`--no-replan`, `--hitl`, memories), its digest checked
/// against a resumed session's, the work dir made and resolved, and the places the run
/// writes checked: the sandbox, the MCP servers' consent, fuseraft's state.
pub(super) fn made_ready(
    args: &ExecArgs,
    program: &mut Program,
    begun: &mut Begun,
) -> Result<Option<crate::session::config::Recorded>, u8> {
    if args.no_replan {
        announce_no_replan(program);
    }
    let config = match args.ephemeral {
        true => None,
        false => Some(
            crate::session::config::check(
                &begun.work_dir,
                &begun.session,
                program,
                begun.saved.as_ref(),
                &absolute(&args.input),
                args.allow_config_change,
            )
            .map_err(|message| usage_error(&message))?,
        ),
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
    begun.work_dir = usable_work_dir(&begun.work_dir)?;
    // A sandbox that does not exist is an error before the first turn, not a wider sandbox.
    let root = driver::sandbox_root(program, &begun.work_dir)
        .map_err(|message| usage_error(&format!("{message} (in `{}`)", args.input.display())))?;
    remember(program, &root, &begun.task);
    // Before the first turn: no server the user did not trust starts, no variable they did
    // not allow expands.
    mcp_consent(args, program).map_err(|message| usage_error(&message))?;
    // fuseraft's own state under the work dir is never reached through a link: a planted
    // `.fuseraft/state -> ~` or `changes.jsonl -> ~/.bashrc` stops the run here.
    let change_log = driver::change_log_path(program, &begun.work_dir, &begun.session);
    fuseraft_vm::changes::store::Files::open(&begun.work_dir, &change_log)
        .map_err(|message| usage_error(&message))?;
    Ok(config)
}

/// The work dir, made if missing, as an absolute path.
fn usable_work_dir(work_dir: &std::path::Path) -> Result<PathBuf, u8> {
    std::fs::create_dir_all(work_dir).map_err(|error| {
        usage_error(&format!(
            "cannot create the work dir `{}`: {error}",
            work_dir.display()
        ))
    })?;
    std::fs::canonicalize(work_dir).map_err(|error| {
        usage_error(&format!(
            "cannot use the work dir `{}`: {error}",
            work_dir.display()
        ))
    })
}

/// Where the run's events go besides the terminal.
pub(super) struct Outputs {
    pub(super) events: Arc<std::sync::Mutex<EventsFile>>,
    /// `--events-text`: streamed text on its way to the events file.
    pub(super) file_text: Option<Arc<crate::stream_text::TextSink>>,
    pub(super) telemetry: Option<crate::telemetry::Telemetry>,
    pub(super) ui: Option<crate::ui::Live>,
}

/// The events file (and its streamed text), the trace and the web view, each opened or
/// started now.
pub(super) fn outputs(args: &ExecArgs, program: &Program, begun: &Begun) -> Result<Outputs, u8> {
    let events = match &args.events {
        Some(path) => EventsFile::open(path).map_err(|error| {
            usage_error(&format!(
                "cannot open the events file `{}`: {error}",
                path.display()
            ))
        })?,
        None => EventsFile::none(),
    };
    let events = Arc::new(std::sync::Mutex::new(events));
    let file_text = args.events_text.then(|| {
        let (events, session) = (Arc::clone(&events), begun.session.clone());
        crate::stream_text::TextSink::start(Box::new(move |turn, agent, text| {
            if let Ok(mut events) = events.lock() {
                events.write_text(turn, agent, &text, &session);
            }
        }))
    });
    Ok(Outputs {
        events,
        file_text,
        telemetry: telemetry(args, program, begun)?,
        ui: web_view(args, program)?,
    })
}

/// `--otlp`, the config's `Telemetry` keys, the OTLP variables: the run's trace.
fn telemetry(
    args: &ExecArgs,
    program: &Program,
    begun: &Begun,
) -> Result<Option<crate::telemetry::Telemetry>, u8> {
    let settings = crate::telemetry::settings(args.otlp.as_deref(), &program.settings, &|name| {
        std::env::var(name).ok()
    })
    .map_err(|message| usage_error(&message))?;
    let Some(settings) = settings else {
        return Ok(None);
    };
    let info = crate::telemetry::RunInfo {
        session: &begun.session,
        program,
        model_flag: begun.provider.model.as_deref(),
        replay: args.replay.is_some(),
        resumed: args.resume.is_some(),
    };
    crate::telemetry::Telemetry::start(&settings, &info)
        .map(Some)
        .map_err(|message| usage_error(&message))
}

/// `--ui`: the web view, its URL said on standard error.
fn web_view(args: &ExecArgs, program: &Program) -> Result<Option<crate::ui::Live>, u8> {
    let Some(addr) = &args.ui else {
        return Ok(None);
    };
    // The terminal answers alongside the page: approvals unless `--approve` answers them,
    // `--hitl` pauses always.
    let terminal = (args.approve.is_none() || args.hitl) && std::io::stdin().is_terminal();
    let ui =
        crate::ui::Live::start(addr, program, terminal).map_err(|message| usage_error(&message))?;
    eprintln!("web view: {}", ui.url());
    Ok(Some(ui))
}
