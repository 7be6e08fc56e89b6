//! tama pattern steps at run time: each step's newest input and value, kept so that later
//! steps' templates can read them, and a step's input filled in when the run enters it.

use fuseraft_compiler::ir::{Part, StateId, Template};

use super::{Machine, Phase};
use crate::effect::Request;
use crate::event::{EventKind, Outcome};

/// A step's newest run: what it was given and what it returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepRecord {
    /// The state's name (a checkpoint names states, not ids).
    pub state: String,
    pub input: String,
    pub value: String,
}

/// What a template is filled with besides the records.
#[derive(Default)]
pub(super) struct Fill<'a> {
    /// A fork run's item.
    pub(super) item: Option<&'a str>,
    /// What the earlier runs of a sequential fork returned.
    pub(super) earlier: Option<&'a str>,
    /// The operator's line.
    pub(super) operator: Option<&'a str>,
}

impl Machine<'_> {
    /// Keeps `state`'s newest input and value (the newest record is the last).
    pub(super) fn record_step(&mut self, state: StateId, input: String, value: String) {
        let name = &self.program.state(state).name;
        self.run.steps.retain(|record| &record.state != name);
        self.run.steps.push(StepRecord {
            state: name.clone(),
            input,
            value,
        });
    }

    /// The newest record among `states`.
    fn newest(&self, states: &[StateId]) -> Option<&StepRecord> {
        self.run.steps.iter().rev().find(|record| {
            states
                .iter()
                .any(|id| self.program.state(*id).name == record.state)
        })
    }

    /// `template` with the records (empty where a step has not run) and `fill` in.
    pub(super) fn fill(&self, template: &Template, fill: &Fill<'_>) -> String {
        let mut out = String::new();
        for part in &template.0 {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Input(states) => {
                    if let Some(record) = self.newest(states) {
                        out.push_str(&record.input);
                    }
                }
                Part::Value(states) => {
                    if let Some(record) = self.newest(states) {
                        out.push_str(&record.value);
                    }
                }
                Part::Item => out.push_str(fill.item.unwrap_or_default()),
                Part::Earlier => out.push_str(fill.earlier.unwrap_or("(none yet)")),
                Part::Operator => out.push_str(fill.operator.unwrap_or_default()),
            }
        }
        out
    }

    /// The input template of the current state, if it has one.
    pub(super) fn input_template(&self) -> Option<&Template> {
        let state = self.program.state(self.run.state);
        state.step.as_ref()?.input.as_ref()
    }

    /// Whether the current state asks the operator for its input (tama `human`).
    pub(super) fn asks_operator(&self) -> bool {
        self.input_template()
            .is_some_and(|template| template.0.contains(&Part::Operator))
    }

    /// The run just entered a state with an input template: the template, filled, is the
    /// value it is given (an operator's line is asked for when its turn starts).
    pub(super) fn enter_step(&mut self) {
        if !std::mem::take(&mut self.fill_pending) || self.asks_operator() {
            return;
        }
        if let Some(template) = self.input_template() {
            let filled = self.fill(template, &Fill::default());
            self.run.value = Some(filled);
        }
    }
}

impl Machine<'_> {
    /// The current state asks the operator for its input and they have not answered in
    /// this visit.
    pub(super) fn needs_answer(&self) -> bool {
        self.asks_operator() && !self.answered && self.run.visit_turns == 0
    }

    /// Asks the operator for the current step's input, showing them the value routed to it.
    pub(super) fn ask_for_input(&mut self) -> Request {
        let state = self.program.state(self.run.state);
        let agent = state
            .agent
            .map(|id| self.program.agent(id).name.clone())
            .unwrap_or_default();
        self.phase = Phase::Asking;
        Request::Ask {
            agent,
            state: state.name.clone(),
            context: self
                .run
                .value
                .clone()
                .unwrap_or_else(|| self.run.task.clone()),
        }
    }

    /// The operator's line is the step's input; no answer stops the run.
    pub(super) fn on_answer(&mut self, answer: Option<String>) {
        self.phase = Phase::Ready;
        let Some(line) = answer else {
            let reason = format!(
                "the operator gave no answer for state `{}`",
                self.state_name()
            );
            self.finish(Outcome::Cancelled, Some(reason));
            return;
        };
        self.answered = true;
        let chars = line.chars().count();
        self.emit(None, EventKind::OperatorMessage { chars });
        if let Some(template) = self.input_template() {
            let fill = Fill {
                operator: Some(&line),
                ..Fill::default()
            };
            let filled = self.fill(template, &fill);
            self.run.value = Some(filled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_record_of_a_state_replaces_the_older() {
        let mut records = vec![
            StepRecord {
                state: "a".into(),
                input: "1".into(),
                value: "x".into(),
            },
            StepRecord {
                state: "b".into(),
                ..StepRecord::default()
            },
        ];
        records.retain(|r| r.state != "a");
        records.push(StepRecord {
            state: "a".into(),
            input: "2".into(),
            value: "y".into(),
        });
        assert_eq!(records.last().map(|r| r.value.as_str()), Some("y"));
    }
}
