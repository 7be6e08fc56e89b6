//! A run under way: the machine started or restored, the session log every checkpoint is
//! appended to, what watches each event (the per-agent totals, the audit chain, the events
//! file, the terminal, the web view, the trace), the drive until the run ends or a stop
//! signal comes, and the report of a run stopped before its end.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::driver::{self, Env, Models, Summary};
use fuseraft_vm::event::{Event, EventKind, Outcome};
use fuseraft_vm::history::Usage;
use fuseraft_vm::machine::{Machine, Run};
use serde_json::{json, Value as Json};

use super::provider::{cost_json, shell_quoted, ProviderFlags};
use super::signals::{Asking, StopSignals, Stopped};
use super::{
    agents, compact_change_log, finish_telemetry, usage_error, warn_unsaved, Cancel, Done, Prepared,
};
use crate::cli::ExecArgs;
use crate::events::EventsFile;
use crate::terminal::Terminal;

/// Everything that watches the run's events.
pub(super) struct Observers {
    audit: Option<crate::audit::Shared>,
    events: Arc<std::sync::Mutex<EventsFile>>,
    /// `--events-text`: streamed text on its way to the events file.
    file_text: Option<Arc<crate::stream_text::TextSink>>,
    pub(super) terminal: Arc<Terminal>,
    ui: Option<crate::ui::Live>,
    telemetry: Option<crate::telemetry::Telemetry>,
    session: String,
    /// The newest turn and tokens the run reported, for the summary of a run a signal ends.
    seen: (u32, Usage),
}

impl Observers {
    fn event(&mut self, event: &Event, run: &Run) {
        self.seen = (run.turn, run.usage);
        if let Some(audit) = &self.audit {
            if let Ok(mut audit) = audit.lock() {
                audit.on_event(event, run);
            }
        }
        // Streamed text first: this event may end its turn.
        if let Some(text) = &self.file_text {
            text.flush();
            if let EventKind::TurnStart { .. } = event.kind {
                text.at_turn(event.turn);
            }
        }
        if let Ok(mut events) = self.events.lock() {
            events.write_with_upstream(event, run, &self.session);
        }
        self.terminal.event(event, run);
        if let Some(ui) = &self.ui {
            ui.event(event, run, &self.session);
        }
        if let Some(telemetry) = self.telemetry.as_mut() {
            telemetry.event(event, &run.history);
        }
    }
}

/// A run started and the session it writes.
pub(super) struct Running<'a> {
    pub(super) args: &'a ExecArgs,
    pub(super) program: &'a Program,
    pub(super) session: String,
    pub(super) task: String,
    pub(super) work_dir: PathBuf,
    pub(super) provider: ProviderFlags,
    pub(super) started: Instant,
    pub(super) audit: Option<crate::audit::Shared>,
    pub(super) observers: Observers,
    /// Per-agent totals: the session's so far, counted on from each turn's events.
    pub(super) agents: RefCell<agents::Agents>,
    pub(super) log: crate::session::SessionLog,
    fields: crate::session::SessionFields<'static>,
    machine: Option<Machine<'a>>,
    env: Env,
    runtime: tokio::runtime::Runtime,
    stopped: Stopped,
    asking: Asking,
}

/// A run a stop signal ended: the signal's name, and what the operator was being asked
/// then, if anything.
pub(super) type Signalled = (&'static str, Option<&'static str>);

impl<'a> Running<'a> {
    /// The machine (new, or restored from the session's last state) and the session log.
    pub(super) fn start<M: Models>(
        models: &M,
        prepared: Prepared<'a>,
        audit: Option<crate::audit::Shared>,
        terminal: Arc<Terminal>,
    ) -> Result<Running<'a>, u8> {
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
            telemetry,
            stopped,
            asking,
        } = prepared;
        let (session, task) = (options.session_id.clone(), options.task.clone());
        let mut machine = match &saved {
            Some(saved) => driver::restore(program, options, models, saved)
                .map_err(|message| usage_error(&message))?,
            None => Machine::new(program, driver::options_for(options, models)),
        };
        // `--hitl` with an operator to answer: a run about to end stuck asks them first.
        if args.hitl && args.approve.is_none() {
            machine.ask_when_stuck();
        }
        let env = Env {
            work_dir: work_dir.clone(),
            deny_read: crate::session::key::deny_read(&args.deny_read),
            approvals: super::approvals::audited(approvals, audit.clone(), &stopped),
            pause,
        };
        let agents = RefCell::new(agents::Agents::restored(saved.as_ref()));
        let fields = session_fields(args, &work_dir, saved.as_ref(), &provider, config.as_ref());
        if let Some(config) = &config {
            config.keep(&work_dir, &session);
        }
        let log = crate::session::SessionLog::new(&work_dir, &session, key, chain);
        let runtime = runtime()?;
        let observers = Observers {
            audit: audit.clone(),
            events,
            file_text,
            terminal,
            ui,
            telemetry,
            session: session.clone(),
            seen: (0, Usage::default()),
        };
        Ok(Running {
            args,
            program,
            session,
            task,
            work_dir,
            provider,
            started,
            audit,
            observers,
            agents,
            log,
            fields,
            machine: Some(machine),
            env,
            runtime,
            stopped,
            asking,
        })
    }

    /// Drives the run to its end, or until a stop signal: the drive is dropped then, which
    /// kills a running tool's process group, and a prompt the operator is reading gives up.
    pub(super) fn drive<M: Models>(&mut self, models: &M) -> Result<Summary, Signalled> {
        let Running {
            args,
            observers,
            agents,
            log,
            fields,
            machine,
            env,
            runtime,
            stopped,
            asking,
            ..
        } = self;
        let Some(machine) = machine.take() else {
            return Err(("a second drive", None));
        };
        let mut on_event = |event: &Event, run: &Run| {
            agents.borrow_mut().on_event(event);
            observers.event(event, run);
        };
        let mut on_checkpoint = |checkpoint: driver::Checkpoint<'_>| {
            fields.last_updated_at = crate::events::timestamp().into();
            fields.agent_totals = Some(std::borrow::Cow::Owned(agents.borrow().json()));
            // The log reports its first error only, so the warning comes once.
            if let Err(error) = log.append(&checkpoint, fields) {
                warn_unsaved(&error, log);
            }
        };
        let checkpoints: Option<&mut dyn FnMut(driver::Checkpoint<'_>)> =
            (!args.ephemeral).then_some(&mut on_checkpoint);
        runtime.block_on(async {
            // Listening starts before the first turn: from then on SIGINT, SIGTERM and SIGHUP
            // cancel.
            let stop = StopSignals::listen();
            tokio::select! {
                summary = driver::drive(machine, models, &*env, &mut on_event, checkpoints) => {
                    Ok(summary)
                }
                signal = stop.recv() => {
                    // What was being asked is read before the prompt, told of the signal,
                    // gives up.
                    let during = asking.now();
                    let _ = stopped.set(signal);
                    Err((signal, during))
                }
            }
        })
    }

    /// What follows the drive whatever its end: the terminal flushed, the trace's last spans
    /// sent (a cancel's end comes with its report), the web view closed, the change log
    /// compacted.
    pub(super) fn after_drive(&mut self, ended: bool) {
        self.observers.terminal.flush();
        if ended {
            finish_telemetry(self.observers.telemetry.take());
        }
        if let Some(ui) = &self.observers.ui {
            ui.finish();
            // The page goes with the process: say where the finished run can be seen again.
            if !self.args.ephemeral {
                eprintln!(
                    "web view closed with the run; browse its session with: fuseraft ui --work-dir {}",
                    shell_quoted(&self.work_dir.display().to_string())
                );
            }
        }
        compact_change_log(self.program, &self.work_dir, &self.session);
    }

    fn cancel_report(&mut self, reason: &str, done: Done) -> u8 {
        // The last checkpoint (after the last completed turn) stays resumable.
        if let Err(error) = self.log.cancel(json!(crate::events::timestamp())) {
            warn_unsaved(&error, &mut self.log);
        }
        let cancel = Cancel::new(
            self.args,
            &self.provider,
            &self.session,
            &self.work_dir,
            &self.task,
            self.started,
        );
        cancel.report(reason, done)
    }

    /// `--hitl` answered `q`: stopped at a turn boundary, resumable like a cancel.
    pub(super) fn stopped_by_operator(&mut self, summary: &Summary) -> u8 {
        let reason = summary
            .reason
            .clone()
            .unwrap_or_else(|| "cancelled".to_string());
        let done = Done {
            turns: summary.turns,
            usage: summary.usage,
            unreported: summary.usage_unreported,
            cost: cost_json(&summary.cost),
            agents: self.agents.borrow().json(),
        };
        self.cancel_report(&reason, done)
    }

    /// A stop signal came during the drive.
    pub(super) fn stopped_by_signal(&mut self, (signal, during): Signalled) -> u8 {
        let (turns, usage) = self.observers.seen;
        let reason = match during {
            Some(what) => format!("cancelled ({signal}) during {what}"),
            None => format!("cancelled ({signal})"),
        };
        // The drive future was dropped mid-turn: the events file still gets its end.
        let end = Event::new(
            turns,
            None,
            EventKind::SessionEnd {
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
        if let Ok(mut events) = self.observers.events.lock() {
            events.write(&end, &self.session);
        }
        if let Some(mut telemetry) = self.observers.telemetry.take() {
            telemetry.event(&end, &[]);
            finish_telemetry(Some(telemetry));
        }
        let done = Done {
            turns,
            usage,
            unreported: 0,
            cost: Json::Null,
            agents: self.agents.borrow().json(),
        };
        self.cancel_report(&reason, done)
    }
}

/// The run's runtime: one thread; prompts and blocking reads run on its blocking pool.
fn runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| usage_error(&format!("cannot start the runtime: {error}")))
}

/// The session's own fields every checkpoint record carries.
fn session_fields(
    args: &ExecArgs,
    work_dir: &std::path::Path,
    saved: Option<&Json>,
    provider: &ProviderFlags,
    config: Option<&crate::session::config::Recorded>,
) -> crate::session::SessionFields<'static> {
    let started_at = saved
        .and_then(|saved| saved.get("StartedAt").and_then(Json::as_str))
        .map_or_else(crate::events::timestamp, str::to_string);
    let forked_from = saved
        .and_then(|saved| saved.get(crate::session::fork::FORKED_FROM))
        .cloned();
    let config_path = std::fs::canonicalize(&args.input).unwrap_or_else(|_| args.input.clone());
    // Recorded for `--resume` (a replay run records none: its resume names the file).
    let provider_options = args.replay.is_none().then(|| provider.json());
    crate::session::SessionFields {
        config_path: config_path.display().to_string().into(),
        config_digest: config
            .map(|config| config.digest.clone())
            .unwrap_or_default()
            .into(),
        working_directory: work_dir.display().to_string().into(),
        started_at: started_at.into(),
        last_updated_at: Default::default(),
        provider_options: provider_options.map(std::borrow::Cow::Owned),
        cancelled: false,
        forked_from: forked_from.map(std::borrow::Cow::Owned),
        agent_totals: None,
    }
}
