//! The question broker: one question at a time (the run waits for it), an approval or a
//! `--hitl` pause, answered by whichever comes first, the page (`POST /approve`, `POST
//! /pause`) or the terminal (a line on standard input when it is a terminal). Questions and
//! answers are published to the pages as `ui_approval` / `ui_approval_answered` and
//! `ui_pause` / `ui_pause_answered` messages.
//!
//! Standard input is read by one thread for the whole run, so a line typed after the page
//! answered is not swallowed by a reader left over from an earlier question.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use fuseraft_vm::driver::{Pause, Paused};
use serde_json::{json, Value as Json};

use super::hub::Hub;

/// How an answer from the page was taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Answered {
    Taken,
    /// No question with this id is waiting (answered already, by the page or the terminal).
    NotPending,
    /// The question with this id asks for the other kind of answer.
    WrongKind,
}

/// An approval asked.
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

/// An answer, from the page or the terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Approval(bool),
    Pause(Pause),
}

impl Answer {
    fn kind(&self) -> Kind {
        match self {
            Answer::Approval(_) => Kind::Approval,
            Answer::Pause(_) => Kind::Pause,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Approval,
    Pause,
}

/// The waiting question: its id, kind and the page's answer once given.
struct Pending {
    id: u64,
    kind: Kind,
    answer: Option<Answer>,
}

pub struct Broker {
    hub: Arc<Hub>,
    next: AtomicU64,
    pending: Mutex<Option<Pending>>,
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

    /// Asks an approval, and waits for the first answer: `Ok(approved)`, or `Err(signal)`
    /// when `stopped` is set first (a stop signal seen by another thread).
    pub fn ask(
        &self,
        question: &Question<'_>,
        stopped: &OnceLock<&'static str>,
    ) -> Result<bool, &'static str> {
        let payload = json!({
            "kind": question.kind, "from": question.from, "to": question.to,
            "signal": question.signal,
        });
        let (id, answer, by) = self.wait(
            Kind::Approval,
            ("ui_approval", payload),
            question.text,
            &|line| {
                let line = line.trim().to_ascii_lowercase();
                Answer::Approval(matches!(line.as_str(), "y" | "yes"))
            },
            stopped,
        )?;
        let Answer::Approval(approved) = answer else {
            return Ok(false);
        };
        if by == "page" && self.terminal.is_some() {
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

    /// Asks what to do at a `--hitl` pause (`prompt`: the terminal's wording, `read` what a
    /// line typed there means), and waits for the first answer. A terminal that closes
    /// leaves the page to answer.
    pub fn pause(
        &self,
        at: &Paused<'_>,
        prompt: &str,
        read: &dyn Fn(&str) -> Pause,
        stopped: &OnceLock<&'static str>,
    ) -> Result<Pause, &'static str> {
        let payload = json!({"turn": at.turn, "agent": at.agent, "state": at.state});
        let (id, answer, by) = self.wait(
            Kind::Pause,
            ("ui_pause", payload),
            prompt,
            &|line| Answer::Pause(read(line)),
            stopped,
        )?;
        let Answer::Pause(pause) = answer else {
            return Ok(Pause::Continue);
        };
        let (action, message) = match &pause {
            Pause::Continue => ("continue", None),
            Pause::Message(text) => ("message", Some(text.as_str())),
            Pause::Quit => ("quit", None),
        };
        if by == "page" && self.terminal.is_some() {
            eprintln!("(answered in the web view: {action})");
        }
        self.hub.publish(
            json!({"event_type": "ui_pause_answered", "payload": {
                "id": id, "action": action, "message": message, "by": by,
            }})
            .to_string(),
        );
        Ok(pause)
    }

    /// Publishes a question and waits for its first answer: `(id, answer, by)`.
    fn wait(
        &self,
        kind: Kind,
        (event_type, mut payload): (&str, Json),
        prompt: &str,
        read_line: &dyn Fn(&str) -> Answer,
        stopped: &OnceLock<&'static str>,
    ) -> Result<(u64, Answer, &'static str), &'static str> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        *self.lock() = Some(Pending {
            id,
            kind,
            answer: None,
        });
        payload["id"] = json!(id);
        self.hub
            .publish(json!({"event_type": event_type, "payload": payload}).to_string());
        let terminal = self.terminal.as_ref().map(|lines| {
            let lines = lines.lock().unwrap_or_else(|poison| poison.into_inner());
            // Lines typed before the question answer nothing.
            while lines.try_recv().is_ok() {}
            eprint!("{prompt}");
            lines
        });
        let mut terminal_open = terminal.is_some();
        let mut pending = self.lock();
        let (answer, by) = loop {
            if let Some(answer) = pending.as_mut().and_then(|waiting| waiting.answer.take()) {
                break (answer, "page");
            }
            if let Some(signal) = stopped.get() {
                *pending = None;
                return Err(signal);
            }
            if let (Some(lines), true) = (&terminal, terminal_open) {
                match lines.try_recv() {
                    Ok(line) => break (read_line(line.trim_end_matches(['\n', '\r'])), "terminal"),
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
        Ok((id, answer, by))
    }

    /// The page's answer to question `id`.
    pub fn answer(&self, id: u64, answer: Answer) -> Answered {
        let mut pending = self.lock();
        match &mut *pending {
            Some(waiting) if waiting.id == id && waiting.answer.is_none() => {
                if waiting.kind != answer.kind() {
                    return Answered::WrongKind;
                }
                waiting.answer = Some(answer);
                self.answered.notify_all();
                Answered::Taken
            }
            _ => Answered::NotPending,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Pending>> {
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
        assert_eq!(
            broker.answer(id + 1, Answer::Approval(true)),
            Answered::NotPending
        );
        assert_eq!(
            broker.answer(id, Answer::Pause(Pause::Quit)),
            Answered::WrongKind
        );
        assert_eq!(broker.answer(id, Answer::Approval(true)), Answered::Taken);
        assert_eq!(asking.join().unwrap(), Ok(true));
        assert_eq!(
            broker.answer(id, Answer::Approval(false)),
            Answered::NotPending
        );
        let (replay, _) = hub.subscribe(1);
        assert!(replay[0].1.contains(r#""approved":true,"by":"page""#));
    }

    #[test]
    fn a_stop_signal_ends_the_wait() {
        let broker = Broker::new(Arc::new(Hub::default()), false);
        let stopped = OnceLock::new();
        let _ = stopped.set("SIGTERM");
        assert_eq!(broker.ask(&question(), &stopped), Err("SIGTERM"));
        assert_eq!(
            broker.answer(1, Answer::Approval(true)),
            Answered::NotPending
        );
    }
}
