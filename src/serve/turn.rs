//! One invocation of a served session: the machine restored from the session's checkpoint
//! and driven, on a thread of its own, until its next turn ends (or the run does). What the
//! run does outside itself crosses to the invocation as a [`Step`]: an effect (a model call,
//! a tool call), which the invocation journals, a question, which waits durably for its
//! answer, and what to store (events, the checkpoint). The driver is the one `exec` uses, so the sandbox, the policy,
//! the budgets and the caps apply exactly as in a local run.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fuseraft_compiler::ir::{self, Program};
use fuseraft_vm::driver::{self, Approval, Approvals, Env, Models, Pause, Paused};
use fuseraft_vm::effect::{ModelCall, ModelReply, Question};
use fuseraft_vm::event::{EventKind, Outcome};
use fuseraft_vm::journal::{Journal, Recalled, Repeat};
use fuseraft_vm::machine::{Machine, Options};
use fuseraft_vm::providers::{Overrides, Providers, Settings};
use fuseraft_vm::replay::Replay;
use serde_json::Value as Json;
use tokio::sync::{mpsc, oneshot};

use super::job::Job;
use super::reply;
use super::stream::TextOut;

/// What the journal keeps for an effect that was started, not finished, and is not made
/// again: no result of any effect reads so.
pub const INTERRUPTED_MARK: &str = "fuseraft-interrupted";

/// What the run asks of its invocation.
pub enum Step {
    /// An effect the invocation journals (`name`: a model call, a tool call): `go` asks the
    /// thread to make it (its result comes back on `made`); an invocation that finds the
    /// result in its journal sends it on `journaled` instead.
    Effect {
        name: &'static str,
        repeat: Repeat,
        go: oneshot::Sender<()>,
        made: oneshot::Receiver<String>,
        journaled: oneshot::Sender<String>,
    },
    /// A question for the operator, answered on `answer`.
    Ask {
        question: Question,
        from: String,
        to: String,
        answer: std::sync::mpsc::Sender<Approval>,
    },
    /// An event line, as the events file writes it.
    Event(String),
    /// The checkpoint after a turn: the state without messages, and the messages added
    /// since the one before.
    Checkpoint { state: Json, messages: Vec<Json> },
    /// The run ended (`None`: it stopped after its turn and goes on in the next invocation).
    End {
        outcome: Option<Outcome>,
        reason: Option<String>,
        turns: u32,
    },
}

/// A run to continue: its job, and its checkpoint (state with `Messages`) if it has one.
pub struct Continue {
    pub session: String,
    pub job: Job,
    pub saved: Option<Json>,
}

/// Starts the run's thread; its steps arrive on the receiver, the last one an `End` (or none
/// if the thread could not run the program, then the error says why).
pub fn start(run: Continue) -> mpsc::UnboundedReceiver<Result<Step, String>> {
    let (steps, receiver) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let failed = steps.clone();
        // An abandoned run unwinds (`abandon`); anything else that ends the thread is said.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_thread(run, steps)));
        match ran {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => {
                let _ = failed.send(Err(reason));
            }
            Err(payload) if payload.is::<Abandoned>() => {}
            Err(_) => {
                let _ = failed.send(Err("the run's thread panicked".to_string()));
            }
        }
    });
    receiver
}

/// The invocation this run belonged to is gone (it was suspended to wait for an answer, or
/// its worker is stopping): the run stops where it stands, making nothing more. The server
/// runs the turn again from its journal in a new invocation.
struct Abandoned;

fn abandon() -> ! {
    // Not a panic: no hook runs, nothing is printed; `start` catches it.
    std::panic::resume_unwind(Box::new(Abandoned))
}

type Steps = mpsc::UnboundedSender<Result<Step, String>>;

fn run_thread(run: Continue, steps: Steps) -> Result<(), String> {
    let program = ir::parse(&run.job.ir)
        .map_err(|error| format!("the submitted IR does not parse: {error}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the run's runtime: {error}"))?;
    match &run.job.replay {
        Some(replayed) => {
            let path = PathBuf::from(&replayed.name);
            let script =
                crate::replay_file::parse(&path, replayed.text.clone()).map_err(|error| {
                    let (_, diagnostic) = *error;
                    format!(
                        "the submitted replay file does not load: {}",
                        diagnostic.message
                    )
                })?;
            // A replay answers the same whatever happened before: only its tool calls
            // are journaled.
            let models = Journaled {
                inner: Replay::new(script),
                bridge: Bridge(steps.clone()),
                calls_too: false,
            };
            runtime.block_on(drive(&program, &run, &models, steps, None))
        }
        None => {
            let overrides = Overrides {
                model: run.job.model.clone(),
                endpoint: run.job.endpoint.clone(),
                api_key_env: run.job.api_key_env.clone(),
                timeouts: Default::default(),
            };
            let env = |name: &str| std::env::var(name).ok();
            // The text as it streams goes to the side channel; the journal keeps the reply.
            let text = Arc::new(TextOut::new(Path::new(&run.job.work_dir), &run.session));
            let sink = Arc::clone(&text);
            let on_token: fuseraft_vm::providers::TokenSink =
                Arc::new(move |agent: &str, delta: &str| sink.write(agent, delta));
            let providers = Providers::new(
                &program,
                &overrides,
                Settings::default(),
                &env,
                Some(on_token),
            )?;
            let models = Journaled {
                inner: providers,
                bridge: Bridge(steps.clone()),
                calls_too: true,
            };
            runtime.block_on(drive(&program, &run, &models, steps, Some(&text)))
        }
    }
}

/// Drives the machine through one turn and reports every step.
async fn drive<M: Models>(
    program: &Program,
    run: &Continue,
    models: &M,
    steps: Steps,
    text: Option<&Arc<TextOut>>,
) -> Result<(), String> {
    let options = Options {
        session_id: run.session.clone(),
        task: run.job.task.clone(),
        max_turns: run.job.max_turns,
        skip_prompts: false,
    };
    let machine = match &run.saved {
        Some(saved) => driver::restore(program, options, models, saved)?,
        None => Machine::new(program, driver::options_for(options, models)),
    };
    let resumed = run.saved.is_some();
    // Set when the run stops after its turn: the end event that stop writes is not the run's.
    let stopping = Arc::new(AtomicBool::new(false));
    let env = Env {
        work_dir: PathBuf::from(&run.job.work_dir),
        deny_read: Vec::new(),
        approvals: approvals(run.job.approve.as_deref(), &steps),
        pause: Some(pause_after_turn(steps.clone(), Arc::clone(&stopping))),
    };
    let session = run.session.clone();
    let event_steps = steps.clone();
    let event_stopping = Arc::clone(&stopping);
    let event_text = text.cloned();
    let mut on_event = move |event: &fuseraft_vm::event::Event, run: &fuseraft_vm::machine::Run| {
        if let (EventKind::TurnStart { .. }, Some(text)) = (&event.kind, &event_text) {
            text.turn(event.turn);
        }
        let own = match &event.kind {
            // Each invocation restores the machine: that is no resume of the user's.
            EventKind::SessionResumed { .. } => false,
            EventKind::McpServerStarted { .. } => !resumed,
            EventKind::SessionEnd { .. } => !event_stopping.load(Ordering::SeqCst),
            _ => true,
        };
        if own {
            let mut lines = Vec::new();
            crate::events::write_lines(
                event,
                run,
                &crate::events::timestamp(),
                &session,
                &mut lines,
            );
            for line in String::from_utf8_lossy(&lines).lines() {
                let _ = event_steps.send(Ok(Step::Event(line.to_string())));
            }
        }
    };
    let checkpoint_steps = steps.clone();
    let mut on_checkpoint = move |checkpoint: driver::Checkpoint<'_>| {
        let mut lines = Vec::new();
        if checkpoint.write_messages(&mut lines).is_err() {
            return;
        }
        let messages = lines
            .split(|&byte| byte == b'\n')
            .filter(|line| !line.is_empty())
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect();
        let state = checkpoint.state();
        let _ = checkpoint_steps.send(Ok(Step::Checkpoint { state, messages }));
    };
    let summary = driver::drive(
        machine,
        models,
        &env,
        &mut on_event,
        Some(&mut on_checkpoint),
    )
    .await;
    let stopped = stopping.load(Ordering::SeqCst) && summary.outcome == Outcome::Cancelled;
    if let (false, Some(text)) = (stopped, text) {
        text.clear();
    }
    let _ = steps.send(Ok(Step::End {
        outcome: (!stopped).then_some(summary.outcome),
        reason: (!stopped).then_some(summary.reason).flatten(),
        turns: summary.turns,
    }));
    Ok(())
}

/// The job's answer to every question, or each one asked of the invocation.
fn approvals(approve: Option<&str>, steps: &Steps) -> Approvals {
    match approve {
        Some("all") => Approvals::All,
        Some("none") => Approvals::None,
        _ => {
            let steps = steps.clone();
            Approvals::Ask(std::sync::Arc::new(
                move |from: &str, to: &str, question: &Question| ask(&steps, from, to, question),
            ))
        }
    }
}

/// Puts `question` to the invocation and waits for its answer; a run whose invocation is
/// gone is abandoned.
fn ask(steps: &Steps, from: &str, to: &str, question: &Question) -> Approval {
    let (answer, answered) = std::sync::mpsc::channel();
    let step = Step::Ask {
        question: question.clone(),
        from: from.to_string(),
        to: to.to_string(),
        answer,
    };
    if steps.send(Ok(step)).is_err() {
        abandon();
    }
    answered.recv().unwrap_or_else(|_| abandon())
}

/// After a turn: stop (the next invocation goes on). A question put as a pause (an
/// escalation, a plan review) is asked of the invocation.
fn pause_after_turn(steps: Steps, stopping: Arc<AtomicBool>) -> Arc<driver::PauseFn> {
    Arc::new(move |paused: &Paused<'_>| match paused.about {
        Some(question) => match ask(&steps, paused.agent.unwrap_or(""), paused.state, question) {
            Approval::Granted => Pause::Continue,
            Approval::Redirected(text) => Pause::Message(text),
            Approval::Refused => Pause::Quit,
        },
        None => {
            stopping.store(true, Ordering::SeqCst);
            Pause::Quit
        }
    })
}

/// The run's side of the journal: each effect crosses to the invocation, which answers
/// with the kept result or asks for it to be made.
struct Bridge(Steps);

impl Bridge {
    async fn next(&self, name: &'static str, repeat: Repeat) -> Recalled {
        let (go, asked) = oneshot::channel();
        let (made_tx, made) = oneshot::channel();
        let (journaled, from_journal) = oneshot::channel();
        let step = Step::Effect {
            name,
            repeat,
            go,
            made,
            journaled,
        };
        if self.0.send(Ok(step)).is_ok() {
            tokio::select! {
                Ok(()) = asked => {
                    return Recalled::Make(Box::new(move |text| {
                        let _ = made_tx.send(text);
                    }));
                }
                Ok(text) = from_journal => {
                    return match text == INTERRUPTED_MARK {
                        true => Recalled::Interrupted,
                        false => Recalled::Kept(text),
                    };
                }
                else => {}
            }
        }
        abandon()
    }
}

impl Journal for Bridge {
    fn recall(
        &self,
        effect: &'static str,
        repeat: Repeat,
    ) -> Pin<Box<dyn Future<Output = Recalled> + Send + '_>> {
        Box::pin(self.next(effect, repeat))
    }
}

/// A provider whose run the invocation journals: its tool calls, and its model calls when
/// `calls_too` (a replay's are answered the same again, and it keeps its own position).
struct Journaled<M> {
    inner: M,
    bridge: Bridge,
    calls_too: bool,
}

impl<M: Models> Models for Journaled<M> {
    async fn call(&self, call: &ModelCall) -> Result<ModelReply, String> {
        if !self.calls_too {
            return self.inner.call(call).await;
        }
        match self.bridge.next("model call", Repeat::Safe).await {
            Recalled::Kept(text) => reply::decode(&text),
            // A model call is safe to ask again: never interrupted.
            Recalled::Interrupted => self.inner.call(call).await,
            Recalled::Make(keep) => {
                let result = self.inner.call(call).await;
                keep(reply::encode(&result));
                result
            }
        }
    }

    fn reads_prompts(&self) -> bool {
        self.inner.reads_prompts()
    }

    fn replayed(&self) -> bool {
        self.inner.replayed()
    }

    fn state(&self) -> Json {
        self.inner.state()
    }

    fn checkpoint_state(&self) -> fuseraft_vm::models::ProviderState<'_> {
        self.inner.checkpoint_state()
    }

    fn restore(&self, state: &Json) {
        self.inner.restore(state)
    }

    fn state_keeping(&self, base: &Json, agents: &[String]) -> Json {
        self.inner.state_keeping(base, agents)
    }

    fn usage_unreported(&self) -> u32 {
        self.inner.usage_unreported()
    }

    fn cost(&self) -> fuseraft_vm::driver::Cost {
        self.inner.cost()
    }

    fn notices(&self) -> Option<&fuseraft_vm::notices::Notices> {
        self.inner.notices()
    }

    fn journal(&self) -> Option<&dyn Journal> {
        Some(&self.bridge)
    }
}
