//! Control flow as the checks see it: which exits can fire (live), which states can be
//! reached, which can still finish, and the strongly connected components that trap a run.
//!
//! Two edge sets matter. *All* edges (every exit, fork branch and join, fallback) give
//! true reachability. *Control* edges (live exits, fork → join, fallback) give where a run
//! goes next: a fork's branch runs one turn inside the fork and control continues at the
//! join, so branch states need no way out of their own.

use std::collections::VecDeque;

use petgraph::graph::{DiGraph, NodeIndex};

use super::context::Ctx;
use crate::ir::{NoMatch, Program, StateId, StateKind, Target};

pub(crate) struct Flow {
    /// Reachable from the entry over every edge, dead exits included.
    pub reach_all: Vec<bool>,
    /// Reachable over live exits, fork branches and joins, and fallbacks.
    pub reach_live: Vec<bool>,
    /// Reachable over control edges: the states a run can be "in".
    pub reach_control: Vec<bool>,
    /// Control successors (live exits, join, fallback), in exit order, deduplicated.
    pub control: Vec<Vec<StateId>>,
    /// True when some live exit (or the fork's join) ends the run.
    pub ends_here: Vec<bool>,
    /// Can reach a terminal state or the end of the run over control edges.
    pub finishes: Vec<bool>,
}

impl Flow {
    pub fn new(ctx: &Ctx<'_>, program: &Program) -> Flow {
        let n_states = program.states.len();
        let mut all = vec![Vec::new(); n_states];
        let mut live = vec![Vec::new(); n_states];
        let mut control = vec![Vec::new(); n_states];
        let mut ends_here = vec![false; n_states];
        for id in program.state_ids() {
            let idx = id.0 as usize;
            let state = program.state(id);
            if let StateKind::Fork(fork) = &state.kind {
                all[idx].extend(fork.branches.iter().copied());
                live[idx].extend(fork.branches.iter().copied());
                match fork.join {
                    Target::State(join) => {
                        all[idx].push(join);
                        live[idx].push(join);
                        control[idx].push(join);
                    }
                    Target::End => ends_here[idx] = true,
                }
            }
            for (exit_idx, exit) in state.exits.iter().enumerate() {
                let dead = ctx.is_dead(id, exit_idx);
                match exit.target {
                    Target::State(target) => {
                        all[idx].push(target);
                        if !dead {
                            live[idx].push(target);
                            control[idx].push(target);
                        }
                    }
                    Target::End => {
                        if !dead {
                            ends_here[idx] = true;
                        }
                    }
                }
            }
            if let NoMatch::Fallback(target) = state.no_match {
                all[idx].push(target);
                live[idx].push(target);
                control[idx].push(target);
            }
            control[idx].dedup();
        }
        let entry = program.entry;
        let reach_all = bfs(entry, &all);
        let reach_live = bfs(entry, &live);
        let reach_control = bfs(entry, &control);
        // Reverse search from every state that ends the run.
        let mut reverse = vec![Vec::new(); n_states];
        for (from, nexts) in control.iter().enumerate() {
            for next in nexts {
                reverse[next.0 as usize].push(StateId(from as u32));
            }
        }
        let mut finishes = vec![false; n_states];
        let mut queue = VecDeque::new();
        for id in program.state_ids() {
            let idx = id.0 as usize;
            if matches!(program.state(id).kind, StateKind::Terminal(_)) || ends_here[idx] {
                finishes[idx] = true;
                queue.push_back(id);
            }
        }
        while let Some(id) = queue.pop_front() {
            for prev in &reverse[id.0 as usize] {
                if !finishes[prev.0 as usize] {
                    finishes[prev.0 as usize] = true;
                    queue.push_back(*prev);
                }
            }
        }
        Flow {
            reach_all,
            reach_live,
            reach_control,
            control,
            ends_here,
            finishes,
        }
    }

    /// Strongly connected components of the control graph among control-reachable states,
    /// via Tarjan's algorithm, each sorted by state id.
    pub fn components(&self) -> Vec<Vec<StateId>> {
        let mut graph: DiGraph<StateId, ()> = DiGraph::new();
        for idx in 0..self.control.len() {
            graph.add_node(StateId(idx as u32));
        }
        for (from, nexts) in self.control.iter().enumerate() {
            if !self.reach_control[from] {
                continue;
            }
            for next in nexts {
                graph.add_edge(NodeIndex::new(from), NodeIndex::new(next.0 as usize), ());
            }
        }
        petgraph::algo::tarjan_scc(&graph)
            .into_iter()
            .map(|component| {
                let mut ids: Vec<StateId> = component.into_iter().map(|n| graph[n]).collect();
                ids.sort();
                ids
            })
            .filter(|component| {
                component
                    .first()
                    .is_some_and(|id| self.reach_control[id.0 as usize])
            })
            .collect()
    }

    /// A shortest cycle through `start` that stays inside `members`.
    pub fn cycle_through(&self, start: StateId, members: &[StateId]) -> Vec<StateId> {
        let mut member = vec![false; self.control.len()];
        for id in members {
            member[id.0 as usize] = true;
        }
        let inside: Vec<Vec<StateId>> = self
            .control
            .iter()
            .enumerate()
            .map(|(from, nexts)| {
                if member[from] {
                    nexts
                        .iter()
                        .copied()
                        .filter(|next| member[next.0 as usize])
                        .collect()
                } else {
                    Vec::new()
                }
            })
            .collect();
        if inside[start.0 as usize].contains(&start) {
            return vec![start, start];
        }
        // One breadth-first search from `start`'s successors back to `start`.
        let mut parent: Vec<Option<StateId>> = vec![None; inside.len()];
        let mut seen = vec![false; inside.len()];
        let mut queue = VecDeque::new();
        for next in &inside[start.0 as usize] {
            if !seen[next.0 as usize] {
                seen[next.0 as usize] = true;
                queue.push_back(*next);
            }
        }
        while let Some(id) = queue.pop_front() {
            if inside[id.0 as usize].contains(&start) {
                let mut path = vec![id];
                let mut cursor = id;
                while let Some(prev) = parent[cursor.0 as usize] {
                    path.push(prev);
                    cursor = prev;
                }
                path.push(start);
                path.reverse();
                path.push(start);
                return path;
            }
            for next in &inside[id.0 as usize] {
                if !seen[next.0 as usize] && *next != start {
                    seen[next.0 as usize] = true;
                    parent[next.0 as usize] = Some(id);
                    queue.push_back(*next);
                }
            }
        }
        vec![start]
    }
}

fn bfs(entry: StateId, edges: &[Vec<StateId>]) -> Vec<bool> {
    let mut seen = vec![false; edges.len()];
    if (entry.0 as usize) >= edges.len() {
        return seen;
    }
    let mut queue = VecDeque::from([entry]);
    seen[entry.0 as usize] = true;
    while let Some(id) = queue.pop_front() {
        for next in &edges[id.0 as usize] {
            if !seen[next.0 as usize] {
                seen[next.0 as usize] = true;
                queue.push_back(*next);
            }
        }
    }
    seen
}

/// `A → B → C`, with state names in backticks; a long path keeps its first and last
/// states around a `… (N states) …` gap, so one message never lists thousands of names.
pub(crate) fn show_path(program: &Program, path: &[StateId]) -> String {
    const HEAD: usize = 6;
    const TAIL: usize = 5;
    let name = |id: &StateId| format!("`{}`", program.state(*id).name);
    if path.len() <= HEAD + TAIL + 1 {
        return path.iter().map(name).collect::<Vec<_>>().join(" → ");
    }
    let head: Vec<String> = path[..HEAD].iter().map(name).collect();
    let tail: Vec<String> = path[path.len() - TAIL..].iter().map(name).collect();
    format!(
        "{} → … ({} more states) … → {}",
        head.join(" → "),
        path.len() - HEAD - TAIL,
        tail.join(" → ")
    )
}
