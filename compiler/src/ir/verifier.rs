//! The `Verifier` section, read from the program's settings as typed values
//! ([`Program::verifier`], filled by `Program::settle_settings`).

use super::{Origin, Program, SelectionKind};

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

/// The written setting `key` (any case), trimmed.
pub(super) fn setting<'a>(program: &'a Program, key: &str) -> Option<&'a str> {
    program
        .settings
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(key))
        .map(|(_, value)| value.trim())
}

/// The verifier, when `Verifier.AgentName` names one of the program's agents (upstream
/// defaults: every 0 turns, suspicious transitions on, keyword `INCONSISTENCY`).
///
/// Only upstream's group-chat loop runs a verifier: graph, workflow, adversarial,
/// magentic and the fan-out orchestrators have loops of their own without one.
pub(super) fn read(program: &Program) -> Option<Verifier> {
    let Origin::Fuseraft(kind) = program.origin else {
        return None;
    };
    if matches!(
        kind,
        SelectionKind::Graph
            | SelectionKind::Workflow
            | SelectionKind::Adversarial
            | SelectionKind::Magentic
            | SelectionKind::MapReduce
            | SelectionKind::ScatterGather
    ) {
        return None;
    }
    let agent = setting(program, "Verifier.AgentName")?;
    let id = program.agent_named(agent)?;
    let every_n_turns = setting(program, "Verifier.EveryNTurns")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let on_suspicious = setting(program, "Verifier.TriggerOnSuspiciousTransition")
        .and_then(super::settings::flag)
        .unwrap_or(true);
    let findings_keyword = setting(program, "Verifier.FindingsKeyword")
        .filter(|value| !value.is_empty())
        .unwrap_or("INCONSISTENCY")
        .to_string();
    Some(Verifier {
        agent: program.agent(id).name.clone(),
        every_n_turns,
        on_suspicious,
        findings_keyword,
    })
}

#[cfg(test)]
mod tests {
    use super::super::print::samples;
    use super::*;

    fn with_settings(mut program: Program, settings: &[(&str, &str)]) -> Program {
        program.settings = settings
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        program.settle_settings();
        program
    }

    #[test]
    fn the_section_reads_as_typed_values_with_upstream_defaults() {
        let program = with_settings(samples::team(), &[("Verifier.AgentName", "planner")]);
        assert_eq!(
            program.verifier.clone(),
            Some(Verifier {
                agent: "Planner".into(),
                every_n_turns: 0,
                on_suspicious: true,
                findings_keyword: "INCONSISTENCY".into(),
            })
        );
        let program = with_settings(
            samples::team(),
            &[
                ("Verifier.AgentName", "Planner"),
                ("Verifier.EveryNTurns", "4"),
                ("Verifier.TriggerOnSuspiciousTransition", "False"),
                ("Verifier.FindingsKeyword", "MISMATCH"),
            ],
        );
        let verifier = program.verifier.clone().expect("a verifier");
        assert_eq!(verifier.every_n_turns, 4);
        assert!(!verifier.on_suspicious);
        assert_eq!(verifier.findings_keyword, "MISMATCH");
    }

    #[test]
    fn no_agent_or_an_orchestrator_without_the_group_chat_loop_means_no_verifier() {
        let unknown = with_settings(samples::team(), &[("Verifier.AgentName", "Nobody")]);
        assert_eq!(unknown.verifier, None);
        let mut graph = with_settings(samples::team(), &[("Verifier.AgentName", "Planner")]);
        graph.origin = Origin::Fuseraft(SelectionKind::Graph);
        graph.settle_settings();
        assert_eq!(graph.verifier, None);
    }
}
