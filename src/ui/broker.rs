//! The approval broker: one pending approval at a time (the run waits for it), answered by
//! whichever comes first, the page (`POST /approve`) or the terminal (a line on standard
//! input when it is a terminal). The question and its answer are published to the pages as
//! `ui_approval` and `ui_approval_answered` messages.
//!
//! Standard input is read by one thread for the whole run, so a line typed after the page
//! answered is not swallowed by a reader left over from an earlier question.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;

use super::hub::Hub;

/// How an answer from the page was taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Answered {
    Taken,
    /// No question with this id is waiting (answered already, by the page or the terminal).
    NotPending,
}

/// What is asked.
pub struct Question<'a> {
    /// The agent (or state) asking.
    pub from: &'a str,
    /// The route's target, or the tool call.
    pub to: &'a str,
    /// The route's signal, or `tool`.
    pub signal: &'a str,
    /// `route` or `tool`.
    pub kind: &'static str,
    /// The terminal's wording of the question (ending in `[y/N] `).
    pub text: &'a str,
}

pub struct Broker {
    hub: Arc<Hub>,
    next: AtomicU64,
    /// The waiting question's id and the page's answer once given.
    pending: Mutex<Option<(u64, Option<bool>)>>,
    answered: Condvar,
    /// Lines of standard input, when it is a terminal.
    terminal: Option<Mutex<Receiver<String>>>,
}

impl Broker {
    /// `terminal`: also ask on the terminal (standard input is one).
    pub fn new(hub: Arc<Hub>, terminal: bool) -> Broker {
        Broker {
            hub,
            next: AtomicU64::new(1),
            pending: Mutex::new(None),
            answered: Condvar::new(),
            terminal: terminal.then(|| Mutex::new(read_lines())),
        }
    }

    /// Asks, and waits for the first answer: `Ok(approved)`, or `Err(signal)` when `stopped`
    /// is set first (a stop signal seen by another thread).
    pub fn ask(
        &self,
        question: &Question<'_>,
        stopped: &OnceLock<&'static str>,
    ) -> Result<bool, &'static str> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        *self.lock() = Some((id, None));
        self.hub.publish(
            json!({"event_type": "ui_approval", "payload": {
                "id": id, "kind": question.kind, "from": question.from, "to": question.to,
                "signal": question.signal,
            }})
            .to_string(),
        );
        let terminal = self.terminal.as_ref().map(|lines| {
            let lines = lines.lock().unwrap_or_else(|poison| poison.into_inner());
            // Lines typed before the question answer nothing.
            while lines.try_recv().is_ok() {}
            eprint!("{}", question.text);
            lines
        });
        let mut terminal_open = terminal.is_some();
        let mut pending = self.lock();
        let (approved, by) = loop {
            if let Some((_, Some(approved))) = *pending {
                break (approved, "page");
            }
            if let Some(signal) = stopped.get() {
                *pending = None;
                return Err(signal);
            }
            if let (Some(lines), true) = (&terminal, terminal_open) {
                match lines.try_recv() {
                    Ok(line) => {
                        let line = line.trim().to_ascii_lowercase();
                        break (matches!(line.as_str(), "y" | "yes"), "terminal");
                    }
                    // The terminal is gone: the page can still answer.
                    Err(TryRecvError::Disconnected) => terminal_open = false,
                    Err(TryRecvError::Empty) => {}
                }
            }
            pending = self
                .answered
                .wait_timeout(pending, Duration::from_millis(50))
                .unwrap_or_else(|poison| poison.into_inner())
                .0;
        };
        *pending = None;
        drop(pending);
        if by == "page" && terminal.is_some() {
            eprintln!(
                "{} (answered in the web view)",
                if approved { "y" } else { "n" }
            );
        }
        self.hub.publish(
            json!({"event_type": "ui_approval_answered", "payload": {
                "id": id, "approved": approved, "by": by,
            }})
            .to_string(),
        );
        Ok(approved)
    }

    /// The page's answer to question `id`.
    pub fn answer(&self, id: u64, approved: bool) -> Answered {
        let mut pending = self.lock();
        match &mut *pending {
            Some((waiting, answer @ None)) if *waiting == id => {
                *answer = Some(approved);
                self.answered.notify_all();
                Answered::Taken
            }
            _ => Answered::NotPending,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, Option<bool>)>> {
        self.pending
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// Standard input's lines, read by one thread for the rest of the process.
fn read_lines() -> Receiver<String> {
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || loop {
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if send.send(line).is_err() {
                    break;
                }
            }
        }
    });
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question() -> Question<'static> {
        Question {
            from: "Developer",
            to: "Deployer",
            signal: "DEPLOY",
            kind: "route",
            text: "approve? [y/N] ",
        }
    }

    #[test]
    fn the_page_answers_a_waiting_question_once() {
        let hub = Arc::new(Hub::default());
        let broker = Arc::new(Broker::new(Arc::clone(&hub), false));
        let asking = {
            let broker = Arc::clone(&broker);
            std::thread::spawn(move || broker.ask(&question(), &OnceLock::new()))
        };
        // The question is published before the run waits.
        let id = loop {
            let (replay, _) = hub.subscribe(0);
            if let Some((_, text)) = replay.first() {
                let message: serde_json::Value = serde_json::from_str(text).unwrap();
                break message["payload"]["id"].as_u64().unwrap();
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(broker.answer(id + 1, true), Answered::NotPending);
        assert_eq!(broker.answer(id, true), Answered::Taken);
        assert_eq!(asking.join().unwrap(), Ok(true));
        assert_eq!(broker.answer(id, false), Answered::NotPending);
        let (replay, _) = hub.subscribe(1);
        assert!(replay[0].1.contains(r#""approved":true,"by":"page""#));
    }

    #[test]
    fn a_stop_signal_ends_the_wait() {
        let broker = Broker::new(Arc::new(Hub::default()), false);
        let stopped = OnceLock::new();
        let _ = stopped.set("SIGTERM");
        assert_eq!(broker.ask(&question(), &stopped), Err("SIGTERM"));
        assert_eq!(broker.answer(1, true), Answered::NotPending);
    }
}
