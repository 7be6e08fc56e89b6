//! Routing conditions: one type for upstream's `Condition` objects and the string form.
//!
//! `Condition: { Field: verdict, Is: approved }` and `verdict == 'approved'` lower to the same
//! [`Cond`]. Comparisons ignore case, as upstream's evaluator does.

/// A condition over the newest reply and the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cond {
    /// `field == 'v'` / `Is: v`: present and equal ignoring case (absent is false).
    Eq(Field, String),
    /// `field != 'v'` / `IsNot: v`: absent or different ignoring case (absent is true).
    Ne(Field, String),
    /// `contains(field, 'v')` / `Contains: v`: present and contains `v` ignoring case.
    Contains(Field, String),
    /// `exists(field)` / `Exists: true`: present and not null.
    Exists(Field),
    Not(Box<Cond>),
    And(Vec<Cond>),
    Or(Vec<Cond>),
}

/// What a condition reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// `last_agent`: the name of the agent that wrote the newest reply.
    LastAgent,
    /// `last_message`: the newest reply's text.
    LastMessage,
    /// A dot path into the JSON object extracted from the newest reply (`review.verdict`).
    Json(Vec<String>),
}

/// A literal a field is compared with, kept as text (upstream compares rendered text).
pub type Value = String;
