//! Termination: whether a strategy says stop after a turn, and the validators that must
//! pass first (a composite child's own gates, then the section's validators).

use fuseraft_compiler::ir::{Guard, TermCond};

use super::{failure, Machine, Outcome, Phase};
use crate::effect::{CheckResult, Request};
use crate::event::EventKind;
use crate::history::Role;

/// Which validators of the termination are out.
#[derive(Copy, Clone, Debug)]
pub(super) enum StopCheck {
    /// Gate `gate` of the condition `cond` that fired.
    Gate { cond: usize, gate: usize },
    /// The section's own `Validators` (a condition fired and its gates passed).
    Section,
}

impl Machine<'_> {
    /// After a turn: does the run stop? `true` when it ended or validators are out (the
    /// caller then does nothing more), `false` when the run goes on to routing.
    pub(super) fn check_termination(&mut self) -> bool {
        self.stop_from(0)
    }

    /// Looks for a condition from `from` on that says stop and starts its checks.
    fn stop_from(&mut self, from: usize) -> bool {
        let fired = (from..self.program.termination.any.len()).find(|&cond| self.fires(cond));
        match fired {
            Some(cond) => {
                self.next_gate(cond, 0);
                true
            }
            None => false,
        }
    }

    /// Asks for the first gate of `cond` from `start` on; with none left, the section's own.
    fn next_gate(&mut self, cond: usize, start: usize) {
        let gates = &self.program.termination.gates;
        match (start..gates.len()).find(|&gate| gates[gate].covers(cond)) {
            Some(gate) => {
                let guards = &self.program.termination.gates[gate].validators;
                self.ask_stop_checks(StopCheck::Gate { cond, gate }, guards);
            }
            None if self.program.termination.validators.is_empty() => self.stop(),
            None => {
                let guards = &self.program.termination.validators;
                self.ask_stop_checks(StopCheck::Section, guards);
            }
        }
    }

    fn ask_stop_checks(&mut self, check: StopCheck, guards: &[Guard]) {
        let checks = failure::guard_checks(self.program, guards);
        let context = self.check_context();
        self.phase = Phase::TerminationChecks(check);
        self.pending = Some(Request::Validate {
            checks,
            context: Box::new(context),
        });
    }

    fn stop(&mut self) {
        self.emit(None, EventKind::TerminationTriggered {});
        self.finish(Outcome::Completed, None);
    }

    pub(super) fn on_termination_checks(&mut self, check: StopCheck, results: Vec<CheckResult>) {
        let Some(failed) = results.iter().find(|result| !result.ok) else {
            match check {
                StopCheck::Gate { cond, gate } => self.next_gate(cond, gate + 1),
                StopCheck::Section => self.stop(),
            }
            return;
        };
        let error = failed.error.clone();
        let strategy = match check {
            StopCheck::Gate { cond, .. } => Some(cond),
            StopCheck::Section => None,
        };
        let kind = EventKind::ValidationFail {
            validator: "termination".to_string(),
            state: None,
            to: None,
            consecutive: None,
            class: None,
            error: error.clone(),
            strategy,
        };
        self.emit(None, kind);
        self.inject(format!("The session cannot end yet: {error}"));
        self.emit(
            None,
            EventKind::CorrectionInjected {
                reason: "termination validators failed".to_string(),
            },
        );
        self.phase = Phase::Ready;
        // A blocked composite child lets the composite try its later children (upstream's
        // any-of over validated children); the section's own validators end the question.
        if let StopCheck::Gate { gate, .. } = check {
            let end = self.program.termination.gates[gate].end;
            self.stop_from(end);
        }
    }

    /// Does termination condition `cond` (other than the turn cap) say stop after this turn?
    fn fires(&self, cond: usize) -> bool {
        let regex = self.regexes.get(cond).and_then(Option::as_ref);
        match &self.program.termination.any[cond] {
            TermCond::Regex { agents, .. } => {
                let Some(regex) = regex else {
                    return false;
                };
                let newest = self
                    .run
                    .history
                    .iter()
                    .rev()
                    .filter(|message| message.role == Role::Assistant)
                    .find(|message| {
                        (agents.is_empty()
                            || agents
                                .iter()
                                .any(|agent| agent.eq_ignore_ascii_case(&message.agent)))
                            && (!message.content.is_empty() || message.handoff().is_some())
                    });
                newest.is_some_and(|message| {
                    if message.content.is_empty() {
                        message
                            .handoff()
                            .is_some_and(|keyword| regex.is_match(keyword))
                    } else {
                        regex.is_match(&message.content)
                    }
                })
            }
            TermCond::Tokens(max) => self.run.usage.total() >= *max,
            TermCond::Cond(cond) => {
                let newest = self
                    .run
                    .history
                    .iter()
                    .rev()
                    .find(|message| message.role == Role::Assistant);
                newest.is_some_and(|message| {
                    let json = fuseraft_compiler::ir::extract_json(&message.content);
                    cond.eval(&fuseraft_compiler::ir::CondInput {
                        last_agent: &message.agent,
                        last_message: &message.content,
                        json: json.as_ref(),
                    })
                })
            }
            TermCond::MaxTurns(_) => false,
        }
    }
}
