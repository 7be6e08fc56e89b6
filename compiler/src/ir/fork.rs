//! Forks: branches run at once, their outputs merged, the run going on at the join.

use super::{AgentId, StateId, Target};

#[derive(Clone, Debug, PartialEq)]
pub struct Fork {
    pub branches: Vec<StateId>,
    pub join: Target,
    pub merge: Merge,
    /// The agent that merges for `ranked` and `semantic_diff`.
    pub merge_agent: Option<AgentId>,
    /// `mapreduce`: the branch runs once per item of the JSON list at this path (dot
    /// segments) in the reply before the fork, each run given its item; `None`: each branch
    /// runs once.
    pub per_item: Option<Vec<String>>,
    /// tama `chain-of-verification`: the branch runs once per line of the value before the
    /// fork (blank lines and `#` lines left out).
    pub per_line: bool,
    /// The branch runs are started one after another, each given what the earlier ones
    /// returned (tama `plan-execute`); otherwise all at once.
    pub sequential: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Merge {
    Union,
    Consensus,
    Vote,
    Ranked,
    SemanticDiff,
    /// tama `parallel`: a JSON object of each branch's finish value by its agent.
    Object,
    /// tama `debate` round: each branch's value headed by its agent.
    Transcript,
    /// tama `scatter`, `best-of-n`, `chain-of-verification`, `plan-execute`: each run's value
    /// headed by its item (or its number).
    Items,
}

impl Merge {
    pub const ALL: &'static [Merge] = &[
        Merge::Union,
        Merge::Consensus,
        Merge::Vote,
        Merge::Ranked,
        Merge::SemanticDiff,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Merge::Union => "union",
            Merge::Consensus => "consensus",
            Merge::Vote => "vote",
            Merge::Ranked => "ranked",
            Merge::SemanticDiff => "semantic_diff",
            Merge::Object => "object",
            Merge::Transcript => "transcript",
            Merge::Items => "items",
        }
    }

    pub fn parse(text: &str) -> Option<Merge> {
        let text = text.trim().to_ascii_lowercase();
        if text == "benchmark" {
            return Some(Merge::Union);
        }
        Merge::ALL
            .iter()
            .copied()
            .find(|merge| merge.as_str() == text)
    }
}
