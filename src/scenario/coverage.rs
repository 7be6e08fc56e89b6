//! Routing coverage: per config, the exits of its IR that no scenario took.
//!
//! ```text
//! fixtures/run/keyword/config.yaml: 5 of 7 exits taken by 2 scenarios
//!   not taken: Developer exit 1 · signal HANDOFF TO PLANNER → Planner · fixtures/run/keyword/config.yaml:23
//! ```
//!
//! An exit counts as taken when an `agent_routed` event resolves to it (see [`super::route`]);
//! a route that fits several exits marks each of them. Fallback routes and fork joins are not
//! exits.

use std::collections::BTreeSet;
use std::path::PathBuf;

use fuseraft_compiler::ir::{trigger_label, Program, Target, Trigger};

use super::route::Taken as How;
use super::run::Ran;
use super::spec::Scenario;
use super::Report;

/// The exits one run took.
#[derive(Clone, Debug)]
pub struct Taken {
    pub config: PathBuf,
    pub program: Program,
    /// (state index, exit index).
    pub exits: BTreeSet<(usize, usize)>,
}

/// The exits a run took.
pub fn taken(scenario: &Scenario, ran: &Ran) -> Taken {
    let mut exits = BTreeSet::new();
    for route in ran
        .records
        .iter()
        .filter_map(|record| record.route.as_ref())
    {
        match &route.taken {
            How::Exit(idx) => {
                exits.insert((route.state, *idx));
            }
            How::Ambiguous(all) => exits.extend(all.iter().map(|idx| (route.state, *idx))),
            How::Fallback | How::Join | How::Unknown => {}
        }
    }
    Taken {
        config: scenario.config.clone(),
        program: ran.program.clone(),
        exits,
    }
}

/// One config's coverage.
#[derive(Debug)]
pub struct Coverage {
    pub config: PathBuf,
    pub program: Program,
    pub scenarios: usize,
    pub taken: BTreeSet<(usize, usize)>,
}

impl Coverage {
    pub fn total(&self) -> usize {
        self.program
            .states
            .iter()
            .map(|state| state.exits.len())
            .sum()
    }

    /// (state index, exit index) of every exit no scenario took, in program order.
    pub fn untaken(&self) -> Vec<(usize, usize)> {
        self.program
            .states
            .iter()
            .enumerate()
            .flat_map(|(state, s)| (0..s.exits.len()).map(move |exit| (state, exit)))
            .filter(|key| !self.taken.contains(key))
            .collect()
    }
}

/// Merges the runs of each config (configs sorted by path).
pub fn collect(reports: &[Report]) -> Vec<Coverage> {
    let mut all: Vec<Coverage> = Vec::new();
    for taken in reports.iter().filter_map(|report| report.coverage.as_ref()) {
        match all.iter_mut().find(|c| c.config == taken.config) {
            Some(coverage) => {
                coverage.scenarios += 1;
                coverage.taken.extend(taken.exits.iter().copied());
            }
            None => all.push(Coverage {
                config: taken.config.clone(),
                program: taken.program.clone(),
                scenarios: 1,
                taken: taken.exits.clone(),
            }),
        }
    }
    all.sort_by(|a, b| a.config.cmp(&b.config));
    all
}

/// `state exit N · trigger → target · file:line` for one exit.
pub fn describe(program: &Program, state: usize, exit: usize) -> String {
    let s = &program.states[state];
    let e = &s.exits[exit];
    let trigger = match &e.trigger {
        Trigger::Signal { text, .. } => format!("signal {text}"),
        Trigger::FinishKey(key) => format!("key {key}"),
        trigger => trigger_label(program, trigger),
    };
    let target = match e.target {
        Target::State(id) => program.state(id).name.clone(),
        Target::End => "end".to_string(),
    };
    let at = e
        .loc
        .or(s.loc)
        .map(|loc| {
            let file = program
                .files
                .get(loc.file.0 as usize)
                .cloned()
                .unwrap_or_default();
            format!(" · {file}:{}", loc.line)
        })
        .unwrap_or_default();
    format!("{} exit {exit} · {trigger} → {target}{at}", s.name)
}

/// The coverage report for people.
pub fn render(coverage: &[Coverage]) -> String {
    let mut out = String::from("routing coverage\n");
    if coverage.is_empty() {
        out.push_str("  no scenario ran\n");
    }
    for config in coverage {
        let total = config.total();
        let untaken = config.untaken();
        let scenarios = if config.scenarios == 1 {
            "1 scenario".to_string()
        } else {
            format!("{} scenarios", config.scenarios)
        };
        out.push_str(&format!(
            "{}: {} of {total} exits taken by {scenarios}\n",
            config.config.display(),
            total - untaken.len()
        ));
        for (state, exit) in untaken {
            out.push_str(&format!(
                "  not taken: {}\n",
                describe(&config.program, state, exit)
            ));
        }
    }
    out
}
