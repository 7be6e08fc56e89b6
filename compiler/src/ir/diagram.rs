//! The workflow drawn for people: Graphviz DOT and Mermaid `flowchart`, from the same IR
//! walk. States show their agent; exits show their trigger and what gates them (contracts,
//! validators, conditions, counters, a human approval); back edges, no-match fallbacks and
//! fork branches each have their own stroke; `end` is drawn only when an exit reaches it.
//! Every label is escaped for its format (tests render every fixture with Graphviz and
//! mermaid-cli).

use super::views::trigger_label;
use super::{EdgeClass, Exit, Guard, NoMatch, Program, StateKind, Target};

/// How an edge is drawn.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Stroke {
    Forward,
    Back,
    /// A state's no-match fallback.
    Fallback,
    /// A fork to a branch, or to its join.
    Fork,
}

/// One edge of the drawing: from state index, to a state index or `None` for `end`.
struct Edge {
    from: usize,
    to: Option<usize>,
    /// Lines of the label (the trigger first, then the gates).
    label: Vec<String>,
    stroke: Stroke,
}

/// The gates on an exit, one line each.
fn gates(program: &Program, exit: &Exit) -> Vec<String> {
    exit.guards
        .iter()
        .map(|guard| match guard {
            Guard::Validator { name, .. } => format!("validator {name}"),
            Guard::Contract(id) => format!("contract {}", program.contract(*id).name),
            Guard::Cond(cond) => format!("if {cond}"),
            Guard::HumanApproval => "human approval".to_string(),
            Guard::CounterBelow(id, limit) => {
                format!("{} < {limit}", program.counter(*id).name)
            }
        })
        .collect()
}

fn target(target: &Target) -> Option<usize> {
    match target {
        Target::State(id) => Some(id.0 as usize),
        Target::End => None,
    }
}

/// Every edge, in state order: fork branches and join, then exits, then the fallback.
fn edges(program: &Program) -> Vec<Edge> {
    let mut out = Vec::new();
    for (from, state) in program.states.iter().enumerate() {
        if let StateKind::Fork(fork) = &state.kind {
            for branch in &fork.branches {
                out.push(Edge {
                    from,
                    to: Some(branch.0 as usize),
                    label: vec!["branch".to_string()],
                    stroke: Stroke::Fork,
                });
            }
            out.push(Edge {
                from,
                to: target(&fork.join),
                label: vec![format!("join ({})", fork.merge.as_str())],
                stroke: Stroke::Fork,
            });
        }
        for exit in &state.exits {
            let mut label = vec![trigger_label(program, &exit.trigger)];
            label.extend(gates(program, exit));
            out.push(Edge {
                from,
                to: target(&exit.target),
                label,
                stroke: match exit.class {
                    EdgeClass::Forward => Stroke::Forward,
                    EdgeClass::Back => Stroke::Back,
                },
            });
        }
        if let NoMatch::Fallback(to) = state.no_match {
            out.push(Edge {
                from,
                to: Some(to.0 as usize),
                label: vec!["no match".to_string()],
                stroke: Stroke::Fallback,
            });
        }
    }
    out
}

/// A state's name, and its agent's when that differs.
fn state_lines(program: &Program, index: usize) -> Vec<String> {
    let state = &program.states[index];
    let mut lines = vec![state.name.clone()];
    if let Some(agent) = state.agent {
        let agent = &program.agent(agent).name;
        if agent != &state.name {
            lines.push(format!("agent: {agent}"));
        }
    }
    lines
}

/// Text for a double-quoted DOT string: backslashes and quotes escaped, lines joined by
/// `\n` (centred). Control characters become blanks.
fn dot_text(lines: &[String]) -> String {
    lines
        .iter()
        .map(|line| {
            line.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect::<String>()
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
        })
        .collect::<Vec<_>>()
        .join("\\n")
}

/// Graphviz DOT: states as nodes (terminals double-octagons, forks diamonds, selections
/// hexagons), exits as edges labelled with trigger and gates; back edges dashed, fallbacks
/// dotted grey, fork edges bold.
pub fn to_dot(program: &Program) -> String {
    let edges = edges(program);
    let mut out = String::new();
    out.push_str(&format!(
        "digraph \"{}\" {{\n",
        dot_text(std::slice::from_ref(&program.name))
    ));
    out.push_str("  rankdir=TB;\n  node [shape=box, style=rounded];\n");
    out.push_str("  __start [shape=point];\n");
    if edges.iter().any(|edge| edge.to.is_none()) {
        out.push_str("  __end [shape=doublecircle, label=\"end\"];\n");
    }
    for (index, state) in program.states.iter().enumerate() {
        let shape = match state.kind {
            StateKind::Turn => "box",
            StateKind::Terminal(_) => "doubleoctagon",
            StateKind::Fork(_) => "diamond",
            StateKind::Select(_) => "hexagon",
        };
        let label = dot_text(&state_lines(program, index));
        out.push_str(&format!("  s{index} [label=\"{label}\", shape={shape}];\n"));
    }
    out.push_str(&format!("  __start -> s{};\n", program.entry.0));
    for edge in &edges {
        let to = edge
            .to
            .map_or_else(|| "__end".to_string(), |to| format!("s{to}"));
        let style = match edge.stroke {
            Stroke::Forward => "",
            Stroke::Back => ", style=dashed",
            Stroke::Fallback => ", style=dotted, color=gray40, fontcolor=gray40",
            Stroke::Fork => ", style=bold",
        };
        out.push_str(&format!(
            "  s{} -> {to} [label=\"{}\"{style}];\n",
            edge.from,
            dot_text(&edge.label)
        ));
    }
    out.push_str("}\n");
    out
}

/// Text for a double-quoted Mermaid label: the characters Mermaid reads as syntax or HTML
/// written as its entity codes, lines joined by `<br>`.
fn mermaid_text(lines: &[String]) -> String {
    lines
        .iter()
        .map(|line| {
            let mut out = String::new();
            for c in line.chars() {
                match c {
                    '"' => out.push_str("#quot;"),
                    '#' => out.push_str("#35;"),
                    '<' => out.push_str("#lt;"),
                    '>' => out.push_str("#gt;"),
                    '&' => out.push_str("#amp;"),
                    '`' => out.push_str("#96;"),
                    '|' => out.push_str("#124;"),
                    c if c.is_control() => out.push(' '),
                    c => out.push(c),
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// Mermaid `flowchart`: the same graph as [`to_dot`]; back edges dotted, fallbacks drawn
/// with a circle head and grey, fork edges thick.
pub fn to_mermaid(program: &Program) -> String {
    let edges = edges(program);
    let mut out = String::from("flowchart TD\n");
    out.push_str("  start((start))\n");
    if edges.iter().any(|edge| edge.to.is_none()) {
        out.push_str("  stop((end))\n");
    }
    for (index, state) in program.states.iter().enumerate() {
        let name = mermaid_text(&state_lines(program, index));
        let node = match state.kind {
            StateKind::Turn => format!("s{index}[\"{name}\"]"),
            StateKind::Terminal(_) => format!("s{index}[[\"{name}\"]]"),
            StateKind::Fork(_) => format!("s{index}{{\"{name}\"}}"),
            StateKind::Select(_) => format!("s{index}{{{{\"{name}\"}}}}"),
        };
        out.push_str(&format!("  {node}\n"));
    }
    out.push_str(&format!("  start --> s{}\n", program.entry.0));
    let mut fallbacks = Vec::new();
    for (number, edge) in edges.iter().enumerate() {
        let to = edge
            .to
            .map_or_else(|| "stop".to_string(), |to| format!("s{to}"));
        let arrow = match edge.stroke {
            Stroke::Forward => "-->",
            Stroke::Back => "-.->",
            Stroke::Fallback => {
                // `start --> entry` is link 0.
                fallbacks.push(number + 1);
                "--o"
            }
            Stroke::Fork => "==>",
        };
        out.push_str(&format!(
            "  s{} {arrow}|\"{}\"| {to}\n",
            edge.from,
            mermaid_text(&edge.label)
        ));
    }
    for link in fallbacks {
        out.push_str(&format!(
            "  linkStyle {link} stroke:#888,stroke-dasharray:2 4,color:#666\n"
        ));
    }
    out
}
