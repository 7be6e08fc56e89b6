//! The `Verifier` section, read from the program's settings as typed values.

use super::Program;

/// `Verifier: {AgentName, EveryNTurns, TriggerOnSuspiciousTransition, FindingsKeyword}`:
/// an agent that reviews the work every N turns and after a suspicious correction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verifier {
    /// The reviewing agent (an agent of the program).
    pub agent: String,
    /// Review after every N-th turn (0 = only on suspicious corrections).
    pub every_n_turns: u32,
    /// Review after a correction that suggests fabricated or missing work.
    pub on_suspicious: bool,
    /// The word in the verifier's reply that makes it a finding (ignore case).
    pub findings_keyword: String,
}

impl Program {
    fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.trim())
    }

    /// The verifier, when `Verifier.AgentName` names one of the program's agents (upstream
    /// defaults: every 0 turns, suspicious transitions on, keyword `INCONSISTENCY`).
    pub fn verifier(&self) -> Option<Verifier> {
        let agent = self.setting("Verifier.AgentName")?;
        let id = self.agent_named(agent)?;
        let every_n_turns = self
            .setting("Verifier.EveryNTurns")
            .and_then(|value| value.parse().ok())
            .unwrap_or(0);
        let on_suspicious = self
            .setting("Verifier.TriggerOnSuspiciousTransition")
            .map(|value| !value.eq_ignore_ascii_case("false"))
            .unwrap_or(true);
        let findings_keyword = self
            .setting("Verifier.FindingsKeyword")
            .filter(|value| !value.is_empty())
            .unwrap_or("INCONSISTENCY")
            .to_string();
        Some(Verifier {
            agent: self.agent(id).name.clone(),
            every_n_turns,
            on_suspicious,
            findings_keyword,
        })
    }
}
