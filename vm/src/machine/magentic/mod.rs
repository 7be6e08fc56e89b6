//! The magentic loop (`Selection.Type: magentic`), run by a `select` state whose style is
//! `SelectStyle::Magentic`: the manager (the replay queue `manager`) first writes down the
//! facts and a plan (orientation, put to the operator when `EnablePlanReview` is on), then
//! answers a JSON progress ledger every round that names the next agent and its
//! instruction; stalls lead to a replan, too many replans to a stuck run, a satisfied
//! request to the manager's final answer. The ledger lives in `Run::magentic` and is
//! checkpointed (`Machine.Magentic`), so a resumed run continues the same loop.

mod call;
mod ledger;
mod prompts;
mod state;
#[cfg(test)]
mod tests;

pub use state::{Magentic, Step};

use fuseraft_compiler::ir::{SelectStyle, StateKind, Target};

use super::{bounded, Machine, Outcome, Phase, MAX_MESSAGE_CHARS};
use crate::effect::{ModelReply, Question, Request};
use crate::event::EventKind;
use crate::history::{Message, Role};

/// Invalid ledgers in a row after which the run is stuck (each also counts as a stall).
const MAX_INVALID_LEDGERS: u32 = 3;

/// The most characters of the plan's first line a plan review's signal carries.
const SIGNAL_CHARS: usize = 120;

pub use crate::effect::PLAN_REVIEW;

/// The limits of the current state's magentic style.
#[derive(Clone, Copy, Debug)]
struct Limits {
    max_rounds: u32,
    max_stalls: u32,
    max_resets: u32,
    plan_review: bool,
}

impl Machine<'_> {
    fn limits(&self) -> Option<Limits> {
        match &self.program.state(self.run.state).kind {
            StateKind::Select(select) => match select.style {
                SelectStyle::Magentic {
                    max_rounds,
                    max_stalls,
                    max_resets,
                    plan_review,
                } => Some(Limits {
                    max_rounds,
                    max_stalls: max_stalls.max(1),
                    max_resets,
                    plan_review,
                }),
                SelectStyle::Llm => None,
            },
            _ => None,
        }
    }

    /// Whether the current state runs the magentic loop.
    pub(super) fn in_magentic(&self) -> bool {
        self.limits().is_some()
    }

    /// The agents a select state (a magentic or `llm` manager) chooses from: its exits to
    /// agent states, each with the exit's index.
    pub(in crate::machine) fn team(&self) -> Vec<(usize, String)> {
        self.program
            .state(self.run.state)
            .exits
            .iter()
            .enumerate()
            .filter_map(|(idx, exit)| match exit.target {
                Target::State(id) => self
                    .program
                    .state(id)
                    .agent
                    .map(|agent| (idx, self.program.agent(agent).name.clone())),
                Target::End => None,
            })
            .collect()
    }

    /// The next step of the loop: a question to the manager or the operator, or the end.
    pub(super) fn magentic_turn(&mut self) -> Request {
        if self.limits().is_none() {
            self.finish(Outcome::Error, Some("not a magentic state".to_string()));
            return self.step();
        }
        let ledger = self.run.magentic.get_or_insert_with(Magentic::default);
        if ledger.next == Step::Review {
            let plan = ledger.plan.clone().unwrap_or_default();
            let from = self.state_name();
            let first = plan.lines().find(|line| !line.trim().is_empty());
            let first: String = first
                .unwrap_or("(empty plan)")
                .trim()
                .chars()
                .take(SIGNAL_CHARS)
                .collect();
            let question = Question::PlanReview { first_line: first };
            self.emit(
                Some("manager"),
                EventKind::HitlRequested {
                    from: from.clone(),
                    to: "plan".to_string(),
                    signal: question.signal(),
                },
            );
            self.phase = Phase::PlanReview;
            return Request::Approve {
                from,
                to: "plan".to_string(),
                question,
            };
        }
        let step = ledger.next;
        let call = self.manager_call(step);
        self.phase = Phase::Magentic(step);
        Request::Model(std::sync::Arc::new(call))
    }

    /// The manager answered `step`.
    pub(super) fn on_magentic(&mut self, step: Step, reply: Result<ModelReply, String>) {
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => {
                let kind = EventKind::ModelError {
                    error: error.clone(),
                };
                self.emit(Some("manager"), kind);
                self.finish(Outcome::Error, Some(error));
                return;
            }
        };
        if !self.add_usage(reply.usage, crate::history::Spend::of(reply.cost)) {
            return;
        }
        let Some(limits) = self.limits() else {
            self.finish(Outcome::Error, Some("not a magentic state".to_string()));
            return;
        };
        // What the manager wrote is kept in the ledger (and every checkpoint) bounded like a
        // history message; the final answer, the run's value, is kept whole.
        let text = match step {
            Step::Final => reply.text.trim().to_string(),
            _ => bounded(reply.text.trim().to_string(), MAX_MESSAGE_CHARS),
        };
        let review_or_ledger = if limits.plan_review {
            Step::Review
        } else {
            Step::Ledger
        };
        let ledger = self.run.magentic.get_or_insert_with(Magentic::default);
        match step {
            Step::Facts => {
                ledger.facts = Some(text);
                ledger.next = Step::Plan;
            }
            Step::Plan => {
                ledger.plan = Some(text);
                ledger.next = review_or_ledger;
                let payload = EventKind::MagenticOrientation {
                    facts: ledger.facts.clone(),
                    plan: ledger.plan.clone(),
                };
                let plan = EventKind::MagenticPlan {
                    plan: ledger.plan.clone(),
                };
                self.emit(Some("manager"), payload);
                if !limits.plan_review {
                    // Upstream's event for the plan the rounds start with.
                    self.emit(Some("manager"), plan);
                }
            }
            Step::Revise => {
                ledger.plan = Some(text);
                ledger.feedback = None;
                ledger.next = Step::Review;
                let payload = EventKind::MagenticPlanRevised {
                    plan: ledger.plan.clone(),
                };
                self.emit(Some("manager"), payload);
            }
            Step::ReplanFacts => {
                ledger.facts = Some(text);
                ledger.next = Step::ReplanPlan;
            }
            Step::ReplanPlan => {
                ledger.plan = Some(text);
                ledger.next = review_or_ledger;
                let payload = EventKind::MagenticReplan {
                    cycle: ledger.resets,
                    facts: ledger.facts.clone(),
                    plan: ledger.plan.clone(),
                };
                self.emit(Some("manager"), payload);
            }
            Step::Final => self.complete_magentic(text),
            Step::Ledger => self.on_ledger(&text, limits),
            Step::Review => self.finish(
                Outcome::Error,
                Some("the driver answered a plan review with a model reply".to_string()),
            ),
        }
    }

    /// A round's ledger: correct and retry it, replan after stalls, finish, or hand the
    /// round to the agent it names.
    fn on_ledger(&mut self, text: &str, limits: Limits) {
        let team = self.team();
        let names: Vec<String> = team.iter().map(|(_, name)| name.clone()).collect();
        let parsed = ledger::parse(text, &names);
        let ledger = self.run.magentic.get_or_insert_with(Magentic::default);
        let round = ledger.rounds;
        let parsed = match parsed {
            Ok(parsed) => parsed,
            Err(error) => {
                ledger.invalid += 1;
                ledger.stalls += 1;
                let (invalid, stalls) = (ledger.invalid, ledger.stalls);
                ledger.retry = Some((text.to_string(), prompts::correction(&error)));
                self.emit(
                    Some("manager"),
                    EventKind::MagenticLedgerInvalid {
                        round,
                        error: error.clone(),
                        consecutive: invalid,
                        stalls,
                    },
                );
                if stalls >= limits.max_stalls {
                    self.stalled(limits);
                } else if invalid >= MAX_INVALID_LEDGERS {
                    self.finish(
                        Outcome::Stuck,
                        Some(format!(
                            "stuck: the manager gave no usable progress ledger {invalid} times in a row (last: {error})"
                        )),
                    );
                }
                return;
            }
        };
        ledger.invalid = 0;
        ledger.retry = None;
        if !parsed.satisfied {
            if parsed.progress && !parsed.in_loop {
                ledger.stalls = 0;
            } else {
                ledger.stalls += 1;
            }
        }
        let stalls = ledger.stalls;
        self.emit(
            Some("manager"),
            EventKind::MagenticLedger {
                round,
                satisfied: parsed.satisfied,
                in_loop: parsed.in_loop,
                progress: parsed.progress,
                next_speaker: (!parsed.satisfied).then(|| parsed.next_speaker.clone()),
                reason: parsed.reason.clone(),
                instruction: (!parsed.satisfied).then(|| parsed.instruction.clone()),
                stalls,
            },
        );
        if parsed.satisfied {
            match parsed.final_answer {
                Some(answer) => self.complete_magentic(answer),
                None => ledger_next(self, Step::Final),
            }
            return;
        }
        // The rounds are used up: the ledger just asked judged the last one.
        let rounds = self.run.magentic.as_ref().map_or(0, |ledger| ledger.rounds);
        if rounds >= limits.max_rounds {
            self.emit(Some("manager"), EventKind::MagenticRoundLimit { rounds });
            self.finish(
                Outcome::MaxTurns,
                Some(format!(
                    "the manager used its {rounds} rounds (`MaxRoundCount`) without judging the request satisfied"
                )),
            );
            return;
        }
        if stalls >= limits.max_stalls {
            self.stalled(limits);
            return;
        }
        let Some((exit, _)) = team.iter().find(|(_, name)| *name == parsed.next_speaker) else {
            let reason = format!(
                "the manager chose `{}`, not in the team",
                parsed.next_speaker
            );
            self.finish(Outcome::Error, Some(reason));
            return;
        };
        if let Some(ledger) = self.run.magentic.as_mut() {
            ledger.rounds += 1;
        }
        let target = self.program.state(self.run.state).exits[*exit]
            .target
            .clone();
        self.move_to(target, None, "manager", Some(*exit));
        // The agent's task for its turn: the newest message it reads.
        self.run
            .history
            .push(Message::user("manager", parsed.instruction, self.run.turn));
    }

    /// `MaxStallCount` stalls: replan, unless the replans are used up.
    fn stalled(&mut self, limits: Limits) {
        let Some(ledger) = self.run.magentic.as_mut() else {
            return;
        };
        ledger.resets += 1;
        ledger.stalls = 0;
        ledger.invalid = 0;
        ledger.retry = None;
        let resets = ledger.resets;
        if resets > limits.max_resets {
            self.emit(
                Some("manager"),
                EventKind::MagenticResetLimit {
                    resets: limits.max_resets,
                    stalls: limits.max_stalls,
                },
            );
            self.finish(
                Outcome::Stuck,
                Some(format!(
                    "stuck: the team stalled again after the manager's last replan (`MaxStallCount` {}, `MaxResetCount` {})",
                    limits.max_stalls, limits.max_resets
                )),
            );
            return;
        }
        ledger.next = Step::ReplanFacts;
        self.emit(
            Some("manager"),
            EventKind::MagenticStalled {
                stalls: limits.max_stalls,
                cycle: resets,
            },
        );
    }

    /// The manager's final answer: the run's value and last message; the run succeeded.
    fn complete_magentic(&mut self, answer: String) {
        let rounds = self.run.magentic.as_ref().map_or(0, |ledger| ledger.rounds);
        self.emit(
            Some("manager"),
            EventKind::MagenticComplete {
                rounds,
                chars: answer.chars().count(),
            },
        );
        self.run.history.push(Message {
            role: Role::Assistant,
            agent: "manager".to_string(),
            content: answer.as_str().into(),
            tool_calls: Vec::new(),
            turn: self.run.turn,
            usage: Default::default(),
        });
        self.run.value = Some(answer);
        self.finish(Outcome::Completed, None);
    }

    /// The operator's answer to the plan review: `None` approves, `Some(text)` asks for a
    /// revision; a refusal stops the run.
    pub(super) fn on_plan_review(&mut self, approved: bool, feedback: Option<String>) {
        let answer = match (&feedback, approved) {
            (Some(_), _) => "redirected",
            (None, true) => "approved",
            (None, false) => "refused",
        };
        let chars = feedback.as_ref().map(|text| text.chars().count());
        let answered = EventKind::HitlAnswered {
            approved: approved || chars.is_some(),
            redirect_chars: chars,
        };
        self.emit(Some("manager"), answered);
        self.emit(
            Some("manager"),
            EventKind::MagenticPlanReview {
                answer: answer.to_string(),
                feedback_chars: chars,
            },
        );
        self.phase = Phase::Ready;
        let Some(ledger) = self.run.magentic.as_mut() else {
            return;
        };
        match feedback {
            Some(text) => {
                ledger.feedback = Some(text);
                ledger.next = Step::Revise;
            }
            None if approved => {
                ledger.next = Step::Ledger;
                // The first plan approved is the one the rounds start with (upstream's
                // `magentic_plan`); an approved replan was announced by `magentic_replan`.
                if ledger.resets == 0 {
                    let plan = EventKind::MagenticPlan {
                        plan: ledger.plan.clone(),
                    };
                    self.emit(Some("manager"), plan);
                }
            }
            None => self.finish(
                Outcome::Stuck,
                Some("the operator refused the manager's plan".to_string()),
            ),
        }
    }
}

/// Sets the loop's next step (when the machine still has a ledger).
fn ledger_next(machine: &mut Machine<'_>, step: Step) {
    if let Some(ledger) = machine.run.magentic.as_mut() {
        ledger.next = step;
    }
}
