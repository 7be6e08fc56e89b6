//! The verifier turn (`Verifier`): after a turn of another agent, every N turns or when a
//! suspicious correction preceded that turn, the verifier agent takes one turn reviewing the
//! work (standing in for the state's agent, no routing); a reply holding the findings
//! keyword is passed on to the next agent as a `VERIFICATION FINDING`.

use super::Machine;
use crate::event::EventKind;
use crate::history::Role;

impl Machine<'_> {
    /// Before a turn: makes the verifier stand in for it when a review is due.
    pub(super) fn schedule_verifier(&mut self) {
        if self.stand_in.is_some() || self.run.turn == 0 {
            return;
        }
        let program = self.program;
        let Some(verifier) = program.verifier.as_ref() else {
            return;
        };
        let history = &self.run.history;
        let mut replies = history
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, message)| message.role == Role::Assistant)
            .map(|(index, _)| index);
        let Some(newest) = replies.next() else {
            return;
        };
        // Only after another agent's turn: the verifier never reviews itself.
        if history[newest].agent.eq_ignore_ascii_case(&verifier.agent) {
            return;
        }
        // Upstream counts the turn just taken from 0, the verifier's turns included.
        let taken = self.run.turn - 1;
        let periodic =
            verifier.every_n_turns > 0 && taken > 0 && taken.is_multiple_of(verifier.every_n_turns);
        // A suspicious correction was injected before that turn (upstream: while selecting
        // its agent), so the verifier audits the turn that answered it.
        let previous = replies.next().map_or(0, |index| index + 1);
        let suspicious = verifier.on_suspicious
            && history[previous..newest]
                .iter()
                .any(|message| message.role == Role::User && is_suspicious(&message.content));
        if !periodic && !suspicious {
            return;
        }
        let reason = if suspicious { "suspicious" } else { "periodic" };
        self.emit(
            Some(&verifier.agent),
            EventKind::VerifierScheduled {
                reason: reason.to_string(),
                after: history[newest].agent.clone(),
            },
        );
        self.stand_in = Some(verifier.agent.clone());
    }

    /// After a stand-in's turn: a verifier reply with the findings keyword becomes a finding.
    pub(super) fn verifier_findings(&mut self, agent: &str) {
        let program = self.program;
        let Some(verifier) = program.verifier.as_ref() else {
            return;
        };
        if !agent.eq_ignore_ascii_case(&verifier.agent) {
            return;
        }
        let Some(reply) = self
            .run
            .history
            .iter()
            .rev()
            .find(|message| message.role == Role::Assistant)
        else {
            return;
        };
        let keyword = verifier.findings_keyword.to_lowercase();
        if !reply.content.to_lowercase().contains(&keyword) {
            self.emit(Some(agent), EventKind::VerifierPassed {});
            return;
        }
        let finding = format!(
            "VERIFICATION FINDING [{}]: the verifier reports a problem; settle it before going on:\n\n{}",
            reply.agent, reply.content
        );
        self.inject(finding);
        self.emit(
            Some(agent),
            EventKind::VerifierFinding {
                keyword: verifier.findings_keyword.clone(),
            },
        );
    }
}

/// A correction that makes the verifier audit the next turn (upstream's markers: two
/// prefixes and two phrases, case-sensitive).
fn is_suspicious(text: &str) -> bool {
    text.starts_with("NO TOOL CALLS")
        || text.starts_with("CRITICAL:")
        || text.contains("EVIDENCE INCONSISTENCY")
        || text.contains("EVIDENCE AUDIT REQUIRED")
}
