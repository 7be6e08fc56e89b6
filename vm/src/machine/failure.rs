//! Guard failures: classification (upstream's `FailureClassifier`), the `FailureHandling`
//! action and threshold for the class, corrections, the recovery agent, stuck runs, and
//! the escalations to the operator (`escalate.rs`).

use std::collections::HashMap;

use fuseraft_compiler::ir::{FailureAction, Guard, Program, Target};

use super::escalate::Escalation;
use super::{Machine, Phase};
use crate::effect::{Check, CheckKind, Shortfall};
use crate::event::{EventKind, Outcome};
use crate::history::Role;

/// Increments a consecutive-failure counter and returns the new count.
pub(super) fn bump(failures: &mut HashMap<String, u32>, key: &str) -> u32 {
    let count = failures.entry(key.to_string()).or_insert(0);
    *count = count.saturating_add(1);
    *count
}

/// The checks the driver must evaluate for these guards, in order: validators as named,
/// contracts expanded into their predicates.
pub(crate) fn guard_checks(program: &Program, guards: &[Guard]) -> Vec<Check> {
    let mut checks = Vec::new();
    for guard in guards {
        match guard {
            Guard::Validator { name, params } => {
                checks.push(Check::new(CheckKind::Validator, name, params.clone()))
            }
            Guard::Contract(id) => {
                for predicate in &program.contract(*id).predicates {
                    let params = predicate.params.clone();
                    checks.push(Check::new(CheckKind::Predicate, &predicate.kind, params));
                }
            }
            Guard::Cond(_) | Guard::HumanApproval | Guard::CounterBelow(..) => {}
        }
    }
    checks
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum FailureClass {
    NoProgress,
    ConflictingEvidence,
    MissingEvidence,
    InvalidTransition,
}

/// Upstream's classifier, in its order: a repeated failure after a reply without tool
/// calls is `NoProgress`; otherwise the check's own shortfall decides.
fn classify(shortfall: Shortfall, made_tool_calls: bool, first: bool) -> FailureClass {
    if !first && !made_tool_calls {
        return FailureClass::NoProgress;
    }
    match shortfall {
        Shortfall::Conflicting => FailureClass::ConflictingEvidence,
        Shortfall::Missing => FailureClass::MissingEvidence,
        Shortfall::Unmet => FailureClass::InvalidTransition,
    }
}

/// Two replies say the same and did nothing else: the same text, the same routing calls
/// (names and arguments), and no other tool call (a tool may make progress whatever the
/// reply says, as upstream's `NoProgress` is "no tool calls").
fn same_reply(a: &crate::history::Message, b: &crate::history::Message) -> bool {
    let idle = |m: &crate::history::Message| m.tool_calls.iter().all(|call| call.is_routing());
    idle(a)
        && idle(b)
        && a.content.trim() == b.content.trim()
        && a.tool_calls.len() == b.tool_calls.len()
        && a.tool_calls
            .iter()
            .zip(&b.tool_calls)
            .all(|(x, y)| x.name == y.name && x.args == y.args)
}

impl Machine<'_> {
    /// The newest reply repeats the previous reply, by the same agent, word for word and
    /// without tool calls (issue 13): that is `NoProgress`, counted per agent and answered by its `FailureHandling`
    /// rule (a correction, or a stuck run at the threshold or on `EscalateToHuman`). Returns
    /// whether the run stopped.
    pub(super) fn repeated_reply(&mut self) -> bool {
        let mut replies = self
            .run
            .history
            .iter()
            .rev()
            .filter(|message| message.role == Role::Assistant);
        let Some(newest) = replies.next() else {
            return false;
        };
        // Only the agent's own previous reply, with no other agent's in between: an agent
        // run again (after a correction, a refusal, a self-loop) that says the same again.
        let agent = newest.agent.clone();
        let repeated = replies
            .next()
            .is_some_and(|previous| previous.agent == agent && same_reply(newest, previous));
        let key = format!("identical::{agent}");
        if !repeated {
            self.run.failures.remove(&key);
            return false;
        }
        let count = bump(&mut self.run.failures, &key);
        let rule = self.program.failure.no_progress;
        let threshold = rule.threshold.max(1);
        self.emit(
            Some(&agent),
            EventKind::ValidationFail {
                validator: "no-progress".to_string(),
                state: Some(self.state_name()),
                to: None,
                consecutive: Some(count),
                class: Some("NoProgress".to_string()),
                error: "the reply repeats the previous one word for word".to_string(),
                strategy: None,
            },
        );
        let stuck = |refused: &str| {
            format!(
                "stuck in state `{}`: validator `no-progress` failed {count} times{refused}: `{agent}` repeated its previous reply word for word",
                self.state_name()
            )
        };
        let correction = format!(
            "NO PROGRESS ({count}/{threshold}): your reply repeats your previous one word for word. Do the next step of the work instead."
        );
        if rule.action == FailureAction::EscalateToHuman {
            let escalation = Escalation {
                key,
                stuck: stuck(" and the operator refused to go on"),
                agent,
                correction,
                marker: None,
            };
            let to = self.state_name();
            self.escalate(escalation, to, "no-progress");
            return true;
        }
        if count >= threshold {
            let reason = stuck("");
            self.finish(Outcome::Stuck, Some(reason));
            return true;
        }
        self.inject(correction);
        self.emit(
            Some(&agent),
            EventKind::CorrectionInjected {
                reason: "identical reply".to_string(),
            },
        );
        false
    }

    /// A validator or contract of exit `idx` failed with `error`, short by `shortfall`.
    pub(super) fn guard_failed(
        &mut self,
        idx: usize,
        validator: &str,
        error: &str,
        shortfall: Shortfall,
    ) {
        let state = self.program.state(self.run.state);
        let name = state.name.clone();
        let exit = state.exits[idx].clone();
        let key = format!("{name}::{idx}");
        let count = bump(&mut self.run.failures, &key);
        let newest = self
            .run
            .history
            .iter()
            .rev()
            .find(|message| message.role == Role::Assistant);
        let agent = newest
            .map(|message| message.agent.clone())
            .unwrap_or_default();
        let made_tool_calls =
            newest.is_some_and(|message| message.tool_calls.iter().any(|call| !call.is_routing()));
        let class = classify(shortfall, made_tool_calls, count == 1);
        let policy = &self.program.failure;
        let rule = match class {
            FailureClass::NoProgress => policy.no_progress,
            FailureClass::ConflictingEvidence => policy.conflicting_evidence,
            FailureClass::MissingEvidence => policy.missing_evidence,
            FailureClass::InvalidTransition => policy.invalid_transition,
        };
        let to = match exit.target {
            Target::State(id) => self.program.state(id).name.clone(),
            Target::End => "end".to_string(),
        };
        self.emit(
            Some(&agent),
            EventKind::ValidationFail {
                validator: validator.to_string(),
                state: Some(name.clone()),
                to: Some(to.clone()),
                consecutive: Some(count),
                class: Some(format!("{class:?}")),
                error: error.to_string(),
                strategy: None,
            },
        );
        let stuck = |machine: &mut Machine<'_>| {
            machine.finish(
                Outcome::Stuck,
                Some(format!(
                    "stuck in state `{name}`: validator `{validator}` failed {count} times; last error: {error}"
                )),
            );
        };
        let text = match class {
            FailureClass::NoProgress => {
                format!("NO TOOL CALLS: you made no tool calls since the last correction. {error}")
            }
            FailureClass::MissingEvidence => format!("MISSING ARTIFACT: {error}"),
            FailureClass::ConflictingEvidence => format!("EVIDENCE INCONSISTENCY: {error}"),
            FailureClass::InvalidTransition if count == 1 => error.to_string(),
            FailureClass::InvalidTransition => format!(
                "RETRY {count}/{} — Previous attempt did not resolve this: {error}",
                rule.threshold
            ),
        };
        if rule.action == FailureAction::EscalateToHuman {
            let escalation = Escalation {
                key,
                agent,
                correction: text,
                marker: Some(format!("[fuseraft:blocked {name}→{to}]")),
                stuck: format!(
                    "stuck in state `{name}`: validator `{validator}` failed {count} times and the operator refused to go on; last error: {error}"
                ),
            };
            self.escalate(escalation, to, validator);
            return;
        }
        let total_contract_failures: u32 = self.run.failures.values().sum();
        if self.program.failure.max_contract_failures > 0
            && total_contract_failures >= self.program.failure.max_contract_failures
        {
            stuck(self);
            return;
        }
        if let Some(recovery) = exit.recovery {
            let wants = rule.action == FailureAction::ActivateRecovery || count >= 2;
            if wants && !self.run.recovered.contains(&key) {
                self.run.recovered.insert(key.clone());
                let recovery = self.program.agent(recovery).name.clone();
                self.inject(format!(
                    "RECOVERY ACTIVATED: {recovery}, `{agent}` cannot pass `{validator}` on the way to `{to}`: {error}. Fix what blocks it."
                ));
                self.emit(
                    Some(&recovery),
                    EventKind::RecoveryActivated {
                        reason: error.to_string(),
                        validator: validator.to_string(),
                    },
                );
                self.run.failures.insert(key, 0);
                self.stand_in = Some(recovery);
                self.phase = Phase::Ready;
                return;
            }
        }
        if count >= rule.threshold.max(1) {
            stuck(self);
            return;
        }
        self.inject(text);
        self.emit(
            Some(&agent),
            EventKind::CorrectionInjected {
                reason: format!("{validator} failed"),
            },
        );
        self.inject(format!("[fuseraft:blocked {name}→{to}]"));
        self.phase = Phase::Ready;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_upstream_order() {
        let all = [Shortfall::Unmet, Shortfall::Missing, Shortfall::Conflicting];
        // A repeated failure after a reply without tool calls is NoProgress, whatever it was.
        for shortfall in all {
            assert_eq!(classify(shortfall, false, false), FailureClass::NoProgress);
        }
        // A first failure is never NoProgress; the check's shortfall decides.
        let classes = all.map(|shortfall| classify(shortfall, false, true));
        assert_eq!(
            classes,
            [
                FailureClass::InvalidTransition,
                FailureClass::MissingEvidence,
                FailureClass::ConflictingEvidence
            ]
        );
        assert_eq!(
            classify(Shortfall::Missing, true, false),
            FailureClass::MissingEvidence
        );
    }
}
