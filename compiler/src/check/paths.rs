//! `fuseraft check --paths`: the routing paths from the entry to each way the run can end,
//! one line each, so that a change of routing shows up as a diff (the XState test-model
//! idea). For each end: the shortest path, then every path that takes each exit at most
//! once (so a back edge, a retry loop, is taken at most once per path), depth first in the
//! order the exits are declared, at most [`MAX_SIMPLE`] per end. Fork branches run inside
//! their fork; a path continues at the fork's join.

use crate::ir::{trigger_label, Program, StateId, StateKind, Target};

/// The most simple paths listed for one end.
pub const MAX_SIMPLE: usize = 50;

/// Which kind of path a line shows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PathKind {
    Shortest,
    Simple,
}

/// One line per path: `shortest Done: Plan -[PLANNED]-> Build -[BUILT]-> Done`.
pub fn paths(program: &Program) -> Vec<String> {
    let mut lines = Vec::new();
    if program.entry.0 as usize >= program.states.len() {
        return lines;
    }
    let ends = ends(program);
    for end in &ends {
        let label = end_name(program, end);
        let shortest = shortest(program, end);
        match &shortest {
            Some(path) => lines.push(format!("shortest {label}: {}", show(program, path))),
            None => lines.push(format!(
                "shortest {label}: unreachable from `{}`",
                program.state(program.entry).name
            )),
        }
        let mut simple = Vec::new();
        let mut truncated = false;
        let mut used = Vec::new();
        let mut current = Vec::new();
        simple_paths(
            program,
            program.entry,
            end,
            &mut used,
            &mut current,
            &mut simple,
            &mut truncated,
        );
        for path in &simple {
            if Some(path) != shortest.as_ref() {
                lines.push(format!("path     {label}: {}", show(program, path)));
            }
        }
        if truncated {
            lines.push(format!(
                "simple   {label}: … more than {MAX_SIMPLE} paths, listing stopped"
            ));
        }
    }
    lines
}

/// A step of a path: the state left and the exit taken (`None` for fork branches/joins).
type Step = (StateId, Option<usize>);

#[derive(Clone, PartialEq)]
enum End {
    State(StateId),
    Finish,
}

fn ends(program: &Program) -> Vec<End> {
    let mut out: Vec<End> = program
        .state_ids()
        .filter(|id| matches!(program.state(*id).kind, StateKind::Terminal(_)))
        .map(End::State)
        .collect();
    let finishes = program.states.iter().any(|state| {
        state.exits.iter().any(|exit| exit.target == Target::End)
            || matches!(&state.kind, StateKind::Fork(fork) if fork.join == Target::End)
    });
    if finishes
        && !program.states.iter().all(|s| {
            matches!(s.kind, StateKind::Terminal(_))
                || s.exits.iter().all(|e| e.target != Target::End)
        })
    {
        out.push(End::Finish);
    }
    out
}

fn end_name(program: &Program, end: &End) -> String {
    match end {
        End::State(id) => program.state(*id).name.clone(),
        End::Finish => "(end)".to_string(),
    }
}

/// Successors with the exit taken, in declaration order (fork joins first).
fn next_steps(program: &Program, id: StateId) -> Vec<(Option<StateId>, Option<usize>)> {
    let state = program.state(id);
    let mut out = Vec::new();
    if let StateKind::Fork(fork) = &state.kind {
        match fork.join {
            Target::State(join) => out.push((Some(join), None)),
            Target::End => out.push((None, None)),
        }
    }
    for (idx, exit) in state.exits.iter().enumerate() {
        match exit.target {
            Target::State(target) => out.push((Some(target), Some(idx))),
            Target::End => out.push((None, Some(idx))),
        }
    }
    out
}

fn reaches(end: &End, step: Option<StateId>) -> bool {
    match (end, step) {
        (End::State(goal), Some(id)) => *goal == id,
        (End::Finish, None) => true,
        _ => false,
    }
}

fn shortest(program: &Program, end: &End) -> Option<Vec<Step>> {
    if let End::State(goal) = end {
        if *goal == program.entry {
            return Some(vec![(program.entry, None)]);
        }
    }
    let n_states = program.states.len();
    let mut parent: Vec<Option<Step>> = vec![None; n_states];
    let mut seen = vec![false; n_states];
    let mut queue = std::collections::VecDeque::from([program.entry]);
    seen[program.entry.0 as usize] = true;
    while let Some(id) = queue.pop_front() {
        for (next, exit) in next_steps(program, id) {
            if reaches(end, next) {
                let mut path = vec![(id, exit)];
                let mut cursor = id;
                while let Some(step) = parent[cursor.0 as usize] {
                    path.push(step);
                    cursor = step.0;
                }
                path.reverse();
                if let Some(goal) = next {
                    path.push((goal, None));
                }
                return Some(path);
            }
            if let Some(next) = next {
                if !seen[next.0 as usize] {
                    seen[next.0 as usize] = true;
                    parent[next.0 as usize] = Some((id, exit));
                    queue.push_back(next);
                }
            }
        }
    }
    None
}

fn simple_paths(
    program: &Program,
    id: StateId,
    end: &End,
    used: &mut Vec<(StateId, Option<usize>)>,
    current: &mut Vec<Step>,
    out: &mut Vec<Vec<Step>>,
    truncated: &mut bool,
) {
    if out.len() >= MAX_SIMPLE {
        *truncated = true;
        return;
    }
    if let End::State(goal) = end {
        if *goal == id {
            let mut path = current.clone();
            path.push((id, None));
            out.push(path);
            return;
        }
    }
    for (next, exit) in next_steps(program, id) {
        if used.contains(&(id, exit)) {
            continue;
        }
        used.push((id, exit));
        current.push((id, exit));
        match next {
            None => {
                if *end == End::Finish {
                    if out.len() >= MAX_SIMPLE {
                        *truncated = true;
                    } else {
                        out.push(current.clone());
                    }
                }
            }
            Some(next) => simple_paths(program, next, end, used, current, out, truncated),
        }
        current.pop();
        used.pop();
    }
}

fn show(program: &Program, path: &[Step]) -> String {
    let mut out = String::new();
    for (idx, (id, exit)) in path.iter().enumerate() {
        out.push_str(&program.state(*id).name);
        let last = idx + 1 == path.len();
        let label =
            exit.map(|exit| trigger_label(program, &program.state(*id).exits[exit].trigger));
        match (last, label) {
            (false, Some(label)) => out.push_str(&format!(" -[{label}]-> ")),
            (false, None) => out.push_str(" -> "),
            (true, Some(label)) => out.push_str(&format!(" -[{label}]-> (end)")),
            (true, None) => {}
        }
    }
    out
}
