//! The web view: `fuseraft exec … --ui` serves a page that shows the run live (its graph,
//! one card per turn, a fork's branches side by side, its approvals and `--hitl` pauses,
//! answerable from the page), and `fuseraft ui` browses
//! past sessions. Loopback by default, a random token in the URL, a static page embedded in
//! the binary that loads nothing from elsewhere (`docs/web-view.md`).
//!
//! Without `--ui` none of this runs: exec holds no [`Live`], so no event is serialized or
//! kept for a page.

pub mod broker;
pub mod cards;
pub mod fork;
pub mod hub;
pub mod resumed;
pub mod served;
pub mod server;
pub mod sessions;

use fuseraft_vm::effect::Question as Asked;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use fuseraft_compiler::ir::{self, Program};
use fuseraft_vm::driver::{Approval, Approvals, Pause, PauseFn, Paused};
use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::Run;
use serde_json::json;

use broker::{Broker, Question};
use hub::Hub;
use server::{App, Mode};

/// Streamed text for the page: `ui_text` messages (`docs/web-view.md`).
fn page_text(hub: Arc<Hub>) -> Arc<crate::stream_text::TextSink> {
    crate::stream_text::TextSink::start(Box::new(move |turn, agent, text| {
        let message = json!({
            "ts": crate::events::timestamp(), "turn": turn, "agent": agent,
            "event_type": "ui_text", "text": text,
        });
        hub.publish(message.to_string());
    }))
}

/// A run's web view, serving from its own thread (the run's thread blocks in approvals).
pub struct Live {
    url: String,
    hub: Arc<Hub>,
    /// The streamed text of the turn in progress, on its way to the page.
    text: Arc<crate::stream_text::TextSink>,
    broker: Arc<Broker>,
    forks: fork::Forks,
    program: String,
}

impl Live {
    /// Listens on `addr` (see [`server::bind`]) and serves `program`'s run from now on.
    /// `terminal`: approvals are asked on the terminal too.
    pub fn start(addr: &str, program: &Program, terminal: bool) -> Result<Live, String> {
        let token = server::token()?;
        let listener = server::bind(addr)?;
        let url = server::url(&listener, &token);
        let hub = Arc::new(Hub::default());
        let broker = Arc::new(Broker::new(Arc::clone(&hub), terminal));
        let app = App {
            token,
            mode: Mode::Live {
                graph: ir::to_json(program),
                hub: Arc::clone(&hub),
                broker: Some(Arc::clone(&broker)),
            },
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the web view: {error}"))?;
        std::thread::spawn(move || {
            if let Err(error) = runtime.block_on(server::serve(listener, app)) {
                eprintln!("warning: the web view stopped: {error}");
            }
        });
        Ok(Live {
            url,
            text: page_text(Arc::clone(&hub)),
            hub,
            broker,
            forks: fork::Forks::of(program),
            program: program.name.clone(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where a provider hands the text it streams (published batched,
    /// `stream_text::BATCH`).
    pub fn text_sink(&self) -> Arc<crate::stream_text::TextSink> {
        Arc::clone(&self.text)
    }

    /// Publishes a run event; a turn's end carries the turn's reply and tool calls (a fork
    /// branch's too), a fork's start its branches' columns, its join the merged text.
    pub fn event(&self, event: &Event, run: &Run, session: &str) {
        // The text streamed so far comes first: this event may end its turn.
        self.text.flush();
        if let EventKind::TurnStart { .. } = event.kind {
            self.text.at_turn(event.turn);
        }
        let mut message = json!({
            "ts": crate::events::timestamp(), "session": session, "turn": event.turn,
            "agent": event.agent, "event_type": event.name(), "payload": event.payload_value(),
            "text": cards::describe(&event.kind),
        });
        match &event.kind {
            EventKind::TurnEnd { state, .. } => {
                let branch = fork::branch_reply(run, state);
                let reply = branch.or_else(|| {
                    run.history
                        .iter()
                        .rev()
                        .find(|message| {
                            message.role == Role::Assistant && message.turn == event.turn
                        })
                        .map(|reply| fork::reply(&reply.content, &reply.tool_calls))
                });
                if let Some(reply) = reply {
                    message["reply"] = reply;
                }
            }
            EventKind::ForkStart { state, .. } => {
                if let Some(columns) = self.forks.columns(state) {
                    message["columns"] = columns.clone();
                }
            }
            EventKind::SessionResumed { .. } => {
                message["earlier"] = resumed::earlier(&self.program, run);
            }
            EventKind::ForkJoin { .. } => {
                if let Some(merged) = fork::merged(run) {
                    message["merged"] = json!(merged);
                }
            }
            _ => {}
        }
        self.hub.publish(message.to_string());
    }

    /// Approvals answered by the page or the terminal, whichever first. `stopped` is set by
    /// a stop signal; the question is then refused (the run is over by then).
    pub fn approvals(&self, stopped: Arc<OnceLock<&'static str>>) -> Approvals {
        let broker = Arc::clone(&self.broker);
        Approvals::Ask(Arc::new(move |from: &str, to: &str, asked: &Asked| {
            let text = crate::terminal::approval_question(from, to, asked);
            let signal = asked.signal();
            let question = Question {
                from,
                to,
                signal: &signal,
                kind: asked.kind(),
                text: &text,
            };
            broker.ask(&question, &stopped).unwrap_or(Approval::Refused)
        }))
    }

    /// `--hitl` pauses answered by the page or the terminal, whichever first (`prompt` and
    /// `read`: the terminal's wording of a pause and what a line typed there means). Without
    /// a terminal the page is the only answerer, and the run waits for it. `stopped` is set
    /// by a stop signal; the pause then quits (the run is over by then).
    pub fn pauses(
        &self,
        prompt: fn(&Paused<'_>) -> String,
        read: fn(&str) -> Pause,
        stopped: Arc<OnceLock<&'static str>>,
    ) -> Arc<PauseFn> {
        let broker = Arc::clone(&self.broker);
        Arc::new(move |at: &Paused<'_>| {
            broker
                .pause(at, &prompt(at), &read, &stopped)
                .unwrap_or(Pause::Quit)
        })
    }

    /// Gives the pages a moment to receive the end of the run before the process exits.
    pub fn finish(&self) {
        if self.hub.listeners() > 0 {
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}
