//! `--no-replan`: a state machine without the transitions whose signal contains `REPLAN`,
//! so a run cannot route back to its planning phase mid-run (upstream's flag of that name).

use super::{classify_edges, layer_states, Origin, Program, SelectionKind, Target, Trigger};

/// A transition `--no-replan` removed: from which state, on which signal, to where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedTransition {
    pub from: String,
    pub signal: String,
    pub to: String,
}

/// Whether `program` is a state machine, the only family `--no-replan` changes.
pub fn replans_apply(program: &Program) -> bool {
    program.origin == Origin::Fuseraft(SelectionKind::StateMachine)
}

/// Removes every state-machine transition whose signal contains `REPLAN` (any case), then
/// lays out and classifies the edges again; returns what it removed, in state order.
/// Other routing families are left as they are.
pub fn drop_replan_transitions(program: &mut Program) -> Vec<DroppedTransition> {
    if !replans_apply(program) {
        return Vec::new();
    }
    let names: Vec<String> = program.states.iter().map(|s| s.name.clone()).collect();
    let mut dropped = Vec::new();
    for state in &mut program.states {
        state.exits.retain(|exit| {
            let Trigger::Signal { text, .. } = &exit.trigger else {
                return true;
            };
            if !text.to_ascii_uppercase().contains("REPLAN") {
                return true;
            }
            let to = match exit.target {
                Target::State(id) => names.get(id.0 as usize).cloned().unwrap_or_default(),
                Target::End => "the end".to_string(),
            };
            dropped.push(DroppedTransition {
                from: state.name.clone(),
                signal: text.clone(),
                to,
            });
            false
        });
    }
    if !dropped.is_empty() {
        layer_states(program);
        classify_edges(program);
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_machine() -> Program {
        let yaml = "Orchestration:
  Agents:
    - { Name: Planner, Instructions: Plan. }
    - { Name: Dev, Instructions: Build. }
  Selection:
    Type: statemachine
    StateMachine:
      Initial: Plan
      States:
        Plan:
          Agent: Planner
          Transitions: [{ Signal: PLANNED, To: Build }]
        Build:
          Agent: Dev
          Transitions:
            - { Signal: DONE, To: Done }
            - { Signal: needs replan, To: Plan }
        Done: { Terminal: true }
";
        let files = crate::MemoryFiles([("c.yaml".into(), yaml.to_string())].into());
        let compiled = crate::compile(std::path::Path::new("c.yaml"), &files);
        compiled.program.expect("compiles")
    }

    #[test]
    fn replan_transitions_go_and_the_rest_stay() {
        let mut program = state_machine();
        let dropped = drop_replan_transitions(&mut program);
        assert_eq!(
            dropped,
            vec![DroppedTransition {
                from: "Build".to_string(),
                signal: "needs replan".to_string(),
                to: "Plan".to_string(),
            }]
        );
        let exits = |name: &str| {
            let state = program
                .states
                .iter()
                .find(|s| s.name == name)
                .expect("state");
            state
                .exits
                .iter()
                .map(|exit| crate::ir::trigger_label(&program, &exit.trigger))
                .collect::<Vec<_>>()
        };
        assert_eq!(exits("Build"), ["DONE"]);
        assert_eq!(exits("Plan"), ["PLANNED"]);
        assert!(program
            .states
            .iter()
            .flat_map(|s| &s.exits)
            .all(|e| e.class == super::super::EdgeClass::Forward));
    }
}
