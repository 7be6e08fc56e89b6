//! `EscalateToHuman`: a failure the `FailureHandling` rule hands to the operator, asked
//! through the approval channel. Approve lets the agent try again, refuse stops the run as
//! stuck, a redirect ([`Response::Redirect`](crate::effect::Response::Redirect)) adds the
//! operator's text to the history and lets the agent try again with it.
//!
//! With an operator at hand ([`Machine::ask_when_stuck`], `--hitl`), every way a run ends
//! stuck is asked the same way first: go on (every failure count starts afresh), go on with
//! the operator's words, or stop (stuck, and resumable).

use super::{Machine, Outcome, Phase};
use crate::effect::{Question, Request};
use crate::event::EventKind;

/// What an escalation waits on: the failure the operator is asked about.
#[derive(Clone, Debug)]
pub(super) struct Escalation {
    /// The failure counter's key, reset when the run goes on.
    pub key: String,
    /// The agent that failed.
    pub agent: String,
    /// The correction the agent gets when the operator lets it try again.
    pub correction: String,
    /// A marker appended after the correction (a blocked exit's `[fuseraft:blocked A→B]`).
    pub marker: Option<String>,
    /// Why the run is stuck if the operator refuses (it says so).
    pub stuck: String,
}

/// The operator's answer to an escalation.
#[derive(Clone, Debug)]
pub(super) enum Verdict {
    Approve,
    Refuse,
    Redirect(String),
}

impl Machine<'_> {
    /// Asks the operator about `escalation`: `Request::Approve` from the state to `to`, a
    /// [`Question::Escalation`] naming the validator that failed.
    pub(super) fn escalate(&mut self, escalation: Escalation, to: String, validator: &str) {
        let question = Question::Escalation {
            why: format!("{validator} failed"),
        };
        self.ask_operator(escalation, to, question);
    }

    /// Asks the operator about `escalation`.
    fn ask_operator(&mut self, escalation: Escalation, to: String, question: Question) {
        let from = self.state_name();
        self.emit(
            Some(&escalation.agent),
            EventKind::HitlRequested {
                from: from.clone(),
                to: to.clone(),
                signal: question.signal(),
            },
        );
        self.phase = Phase::Escalation(Box::new(escalation));
        self.pending = Some(Request::Approve { from, to, question });
    }

    pub(super) fn on_escalation(&mut self, escalation: Escalation, verdict: Verdict) {
        let answer = match &verdict {
            Verdict::Approve => EventKind::HitlAnswered {
                approved: true,
                redirect_chars: None,
            },
            Verdict::Refuse => EventKind::HitlAnswered {
                approved: false,
                redirect_chars: None,
            },
            Verdict::Redirect(text) => EventKind::HitlAnswered {
                approved: true,
                redirect_chars: Some(text.chars().count()),
            },
        };
        self.emit(Some(&escalation.agent), answer);
        self.phase = Phase::Ready;
        let redirect = match verdict {
            Verdict::Refuse => {
                self.end(Outcome::Stuck, Some(escalation.stuck));
                return;
            }
            Verdict::Approve => None,
            Verdict::Redirect(text) => Some(text),
        };
        if escalation.key.is_empty() {
            // The operator let a stuck run go on: every count that led there starts afresh.
            self.run.failures.clear();
            self.run.visit_turns = 0;
        } else {
            self.run.failures.remove(&escalation.key);
        }
        self.inject(escalation.correction);
        self.emit(
            Some(&escalation.agent),
            EventKind::CorrectionInjected {
                reason: "escalated to the operator".to_string(),
            },
        );
        if let Some(marker) = escalation.marker {
            self.inject(marker);
        }
        // The operator's words come after the correction and the marker: the newest
        // instruction the agent reads.
        if let Some(text) = redirect {
            self.run.history.push(crate::history::Message::user(
                "operator",
                text,
                self.run.turn,
            ));
        }
    }

    /// Lets an operator answer before the run ends stuck (`--hitl` on a terminal or the web
    /// view): the run asks them, as an escalation, each time it would end stuck.
    pub fn ask_when_stuck(&mut self) {
        self.ask_when_stuck = true;
    }

    /// Asks the operator whether the run, about to end stuck for `reason`, goes on.
    pub(super) fn ask_before_stuck(&mut self, reason: String) {
        let state = self.state_name();
        // The agent whose replies led here: the state's, else the newest to speak.
        let agent = self
            .program
            .state(self.run.state)
            .agent
            .map(|id| self.program.agent(id).name.clone())
            .or_else(|| {
                self.run.history.iter().rev().find_map(|message| {
                    (message.role == crate::history::Role::Assistant).then(|| message.agent.clone())
                })
            })
            .unwrap_or_else(|| state.clone());
        let escalation = Escalation {
            key: String::new(),
            agent,
            correction: format!(
                "The run was about to stop ({reason}). The operator asked you to try again: read the corrections above and reply as they say."
            ),
            marker: None,
            stuck: reason,
        };
        let question = Question::Escalation {
            why: escalation.stuck.clone(),
        };
        self.ask_operator(escalation, state, question);
    }
}
