//! The run's result: its output, why the work was not done although the run ended without
//! an error (the shortfall), and the turn cap a program without one gets.

use fuseraft_compiler::ir::{Origin, Program, SelectionKind, StateKind, Target, TermCond};

use super::{Machine, DEFAULT_MAX_TURNS, TAMA_MAX_STEPS};
use crate::event::Outcome;
use crate::history::Role;

impl Machine<'_> {
    /// Why the run did not do its work although it ended without an error: `max_turns`
    /// reached without ever leaving the first state, a magentic manager that never judged
    /// the request satisfied, or an adversarial stage promoted without approval. `None`
    /// while the run goes on.
    pub fn shortfall(&self) -> Option<String> {
        match self.run.outcome? {
            Outcome::MaxTurns if self.run.magentic.is_some() => Some(format!(
                "the magentic manager never judged the request satisfied ({} rounds)",
                self.run.magentic.as_ref().map_or(0, |ledger| ledger.rounds)
            )),
            Outcome::MaxTurns if !self.left_entry && self.entry_has_way_out() => Some(format!(
                "the turn cap was reached without ever leaving the first state `{}`",
                self.program.state(self.program.entry).name
            )),
            Outcome::Completed | Outcome::MaxTurns if !self.unapproved.is_empty() => Some(format!(
                "adversarial stage `{}` was promoted without its critic's approval",
                self.unapproved.join("`, `")
            )),
            _ => None,
        }
    }

    /// Whether the first state has an exit that leaves it (a one-agent rotation has none).
    fn entry_has_way_out(&self) -> bool {
        let entry = self.program.entry;
        self.program
            .state(entry)
            .exits
            .iter()
            .any(|exit| match exit.target {
                Target::End => true,
                Target::State(id) => id != entry,
            })
            || matches!(
                self.program.state(entry).kind,
                StateKind::Fork(_) | StateKind::Select(_)
            )
    }

    /// The run's result: the tama end value, the promoted artifact or the magentic
    /// manager's final answer (`value`), else the newest reply with text.
    pub fn output(&self) -> Option<String> {
        let by_value = matches!(
            self.program.origin,
            Origin::Tama | Origin::Fuseraft(SelectionKind::Adversarial | SelectionKind::Magentic)
        );
        let value = self
            .run
            .value
            .clone()
            .filter(|value| by_value && !value.is_empty());
        value.or_else(|| {
            self.run
                .history
                .iter()
                .rev()
                .find(|message| message.role == Role::Assistant && !message.content.is_empty())
                .map(|message| message.content.to_string())
        })
    }
}

/// The cap a program without its own turn cap gets: [`TAMA_MAX_STEPS`] for tama,
/// [`DEFAULT_MAX_TURNS`] otherwise.
pub(super) fn default_cap(program: &Program) -> Option<u32> {
    let capped = program
        .termination
        .any
        .iter()
        .any(|cond| matches!(cond, TermCond::MaxTurns(_)));
    if capped {
        return None;
    }
    Some(if program.origin == Origin::Tama {
        TAMA_MAX_STEPS
    } else {
        DEFAULT_MAX_TURNS
    })
}
