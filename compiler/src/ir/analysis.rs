//! Graph analyses over a [`Program`]: BFS layering from the entry and forward/back
//! classification of every exit, both on a petgraph view of the state graph.

use std::collections::VecDeque;

use petgraph::graph::{DiGraph, NodeIndex};

use super::{EdgeClass, Program, StateId, Target};

/// A petgraph view of the state graph: one node per state (weight = its id), one edge per
/// successor relation (exit targets, fork branches and joins, fallbacks).
pub struct Graph {
    pub graph: DiGraph<StateId, ()>,
}

impl Graph {
    pub fn new(program: &Program) -> Graph {
        let mut graph = DiGraph::with_capacity(program.states.len(), program.states.len() * 2);
        for id in program.state_ids() {
            graph.add_node(id);
        }
        for id in program.state_ids() {
            for next in program.successors(id) {
                graph.add_edge(node(id), node(next), ());
            }
        }
        Graph { graph }
    }
}

fn node(id: StateId) -> NodeIndex {
    NodeIndex::new(id.0 as usize)
}

/// Sets `layer` of every state to its BFS distance from the entry (over every exit kind);
/// unreachable states get `None`.
pub fn layer_states(program: &mut Program) {
    let view = Graph::new(program);
    let mut layers: Vec<Option<u32>> = vec![None; program.states.len()];
    let mut queue = VecDeque::new();
    if (program.entry.0 as usize) < layers.len() {
        layers[program.entry.0 as usize] = Some(0);
        queue.push_back(program.entry);
    }
    while let Some(id) = queue.pop_front() {
        let depth = layers[id.0 as usize].unwrap_or(0);
        for next in view.graph.neighbors(node(id)) {
            // petgraph lists neighbours newest-first; order does not change BFS depths.
            let slot = &mut layers[next.index()];
            if slot.is_none() {
                *slot = Some(depth + 1);
                queue.push_back(StateId(next.index() as u32));
            }
        }
    }
    for (state, layer) in program.states.iter_mut().zip(layers) {
        state.layer = layer;
    }
}

/// Classifies every exit as `forward` or `back`: an exit is a back edge when its target is
/// on the depth-first search stack from the entry when the exit is explored (self-loops
/// included). Exits are explored in their declared order; states unreachable from the
/// entry are searched afterwards in declaration order. Converging forward edges (diamonds)
/// stay forward, which BFS layer comparison would get wrong.
pub fn classify_edges(program: &mut Program) {
    #[derive(Copy, Clone, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    let n_states = program.states.len();
    let mut colour = vec![Colour::White; n_states];
    let mut classes: Vec<Vec<EdgeClass>> = program
        .states
        .iter()
        .map(|state| vec![EdgeClass::Forward; state.exits.len()])
        .collect();

    // Successor lists in a fixed order: fork branches and join first, then exits, then fallback.
    // Entries are (target, Some(exit index)) for exits so their class can be recorded.
    let successors: Vec<Vec<(usize, Option<usize>)>> = program
        .state_ids()
        .map(|id| {
            let state = program.state(id);
            let mut next = Vec::new();
            if let super::StateKind::Fork(fork) = &state.kind {
                next.extend(fork.branches.iter().map(|b| (b.0 as usize, None)));
                if let Target::State(join) = fork.join {
                    next.push((join.0 as usize, None));
                }
            }
            for (idx, exit) in state.exits.iter().enumerate() {
                if let Target::State(target) = exit.target {
                    next.push((target.0 as usize, Some(idx)));
                }
            }
            if let super::NoMatch::Fallback(target) = state.no_match {
                next.push((target.0 as usize, None));
            }
            next
        })
        .collect();

    let roots = std::iter::once(program.entry.0 as usize).chain(0..n_states);
    for root in roots {
        if root >= n_states || colour[root] != Colour::White {
            continue;
        }
        // Iterative DFS: (state, next successor index).
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        colour[root] = Colour::Grey;
        while let Some(top) = stack.last_mut() {
            let (state, cursor) = *top;
            if cursor < successors[state].len() {
                top.1 += 1;
                let (target, exit) = successors[state][cursor];
                match colour[target] {
                    Colour::Grey => {
                        if let Some(exit) = exit {
                            classes[state][exit] = EdgeClass::Back;
                        }
                    }
                    Colour::White => {
                        colour[target] = Colour::Grey;
                        stack.push((target, 0));
                    }
                    Colour::Black => {}
                }
            } else {
                colour[state] = Colour::Black;
                stack.pop();
            }
        }
    }
    for (state, classes) in program.states.iter_mut().zip(classes) {
        for (exit, class) in state.exits.iter_mut().zip(classes) {
            exit.class = class;
        }
    }
}
