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

use fuseraft_vm::driver::{Approval, Pause, Paused};
use serde_json::{json, Value as Json};

use super::hub::Hub;

/// How an answer from the page was taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Answered {
    Taken,
    /// No question with this id is waiting (answered already, by the page or the terminal).
    NotPending,
    /// The question with this id asks for the other kind of answer (or a redirect was sent
    /// to a question that takes only yes or no).
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
    /// `route`, `tool`, `escalation` or `plan` (the last two also take a redirect).
    pub kind: &'static str,
    /// The terminal's wording of the question (ending in `[y/N] `).
    pub text: &'a str,
}

/// An answer, from the page or the terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Approval(Approval),
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
    /// An approval that takes a redirect (an escalation, a plan review).
    redirectable: bool,
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

    /// Asks an approval, and waits for the first answer: `Ok(answer)`, or `Err(signal)`
    /// when `stopped` is set first (a stop signal seen by another thread). The page can
    /// redirect an escalation or a plan review (`kind` `escalation` or `plan`); the terminal
    /// answers yes or no (a redirect there is a `--hitl` pause's typed line).
    pub fn ask(
        &self,
        question: &Question<'_>,
        stopped: &OnceLock<&'static str>,
    ) -> Result<Approval, &'static str> {
        let redirectable = matches!(question.kind, "escalation" | "plan" | "human");
        let human = question.kind == "human";
        let payload = json!({
            "kind": question.kind, "from": question.from, "to": question.to,
            "signal": question.signal, "redirectable": redirectable,
        });
        let (id, answer, by) = self.wait(
            (Kind::Approval, redirectable),
            ("ui_approval", payload),
            question.text,
            &|line| {
                // A tama `human` step's line is its answer, whatever it says.
                if human {
                    return Answer::Approval(Approval::Redirected(line.to_string()));
                }
                let line = line.trim().to_ascii_lowercase();
                Answer::Approval(Approval::of(matches!(line.as_str(), "y" | "yes")))
            },
            stopped,
        )?;
        let Answer::Approval(approval) = answer else {
            return Ok(Approval::Refused);
        };
        let (approved, redirect) = match &approval {
            Approval::Granted => (true, None),
            Approval::Refused => (false, None),
            Approval::Redirected(text) => (false, Some(text.as_str())),
        };
        if by == "page" && self.terminal.is_some() {
            let shown = match redirect {
                Some(_) => "redirected",
                None if approved => "y",
                None => "n",
            };
            eprintln!("{shown} (answered in the web view)");
        }
        self.hub.publish(
            json!({"event_type": "ui_approval_answered", "payload": {
                "id": id, "approved": approved, "redirect": redirect, "by": by,
            }})
            .to_string(),
        );
        Ok(approval)
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
            (Kind::Pause, false),
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
        (kind, redirectable): (Kind, bool),
        (event_type, mut payload): (&str, Json),
        prompt: &str,
        read_line: &dyn Fn(&str) -> Answer,
        stopped: &OnceLock<&'static str>,
    ) -> Result<(u64, Answer, &'static str), &'static str> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        *self.lock() = Some(Pending {
            id,
            kind,
            redirectable,
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
                let redirect = matches!(answer, Answer::Approval(Approval::Redirected(_)));
                if waiting.kind != answer.kind() || (redirect && !waiting.redirectable) {
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
            broker.answer(id + 1, Answer::Approval(Approval::Granted)),
            Answered::NotPending
        );
        assert_eq!(
            broker.answer(id, Answer::Pause(Pause::Quit)),
            Answered::WrongKind
        );
        // A route takes yes or no, not a redirect.
        assert_eq!(
            broker.answer(id, Answer::Approval(Approval::Redirected("no".into()))),
            Answered::WrongKind
        );
        assert_eq!(
            broker.answer(id, Answer::Approval(Approval::Granted)),
            Answered::Taken
        );
        assert_eq!(asking.join().unwrap(), Ok(Approval::Granted));
        assert_eq!(
            broker.answer(id, Answer::Approval(Approval::Refused)),
            Answered::NotPending
        );
        let (replay, _) = hub.subscribe(1);
        let told: serde_json::Value = serde_json::from_str(&replay[0].1).unwrap();
        assert_eq!(told["payload"]["approved"], true);
        assert_eq!(told["payload"]["by"], "page");
        assert_eq!(told["payload"]["redirect"], serde_json::Value::Null);
    }

    #[test]
    fn an_escalation_is_redirected_from_the_page() {
        let hub = Arc::new(Hub::default());
        let broker = Arc::new(Broker::new(Arc::clone(&hub), false));
        let asking = {
            let broker = Arc::clone(&broker);
            std::thread::spawn(move || {
                let question = Question {
                    signal: "escalation: RequireTests failed",
                    kind: "escalation",
                    ..question()
                };
                broker.ask(&question, &OnceLock::new())
            })
        };
        while hub.subscribe(0).0.is_empty() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let text = "Write the test first.".to_string();
        assert_eq!(
            broker.answer(1, Answer::Approval(Approval::Redirected(text.clone()))),
            Answered::Taken
        );
        assert_eq!(asking.join().unwrap(), Ok(Approval::Redirected(text)));
        let (replay, _) = hub.subscribe(0);
        assert!(replay[0].1.contains(r#""redirectable":true"#));
        let told: serde_json::Value = serde_json::from_str(&replay[1].1).unwrap();
        assert_eq!(told["payload"]["approved"], false);
        assert_eq!(told["payload"]["redirect"], "Write the test first.");
    }

    #[test]
    fn a_stop_signal_ends_the_wait() {
        let broker = Broker::new(Arc::new(Hub::default()), false);
        let stopped = OnceLock::new();
        let _ = stopped.set("SIGTERM");
        assert_eq!(broker.ask(&question(), &stopped), Err("SIGTERM"));
        assert_eq!(
            broker.answer(1, Answer::Approval(Approval::Granted)),
            Answered::NotPending
        );
    }
}
