//! The shapes a checkpoint is written and read in: one `#[derive(Serialize, Deserialize)]`
//! struct per record (a history message, the run's state and its `Machine` part), with the
//! PascalCase keys of upstream's session file. Each type is the only definition of its
//! shape: the session log, the snapshot and [`crate::machine::Machine::checkpoint`] all go
//! through it. Strings borrow (`Cow`) so that writing copies no text and reading borrows
//! where the input has no escapes.
//!
//! Reading is strict: a field of the wrong type or out of range is an error (the caller
//! names the record and the field path). Fields that older sessions lack are `default`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::tools::notes::Notes;

/// A message's author role as stored (`user` or `assistant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleRecord {
    User,
    Assistant,
}

/// `{"InputTokens", "OutputTokens"}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UsageRecord {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

/// One tool call of a message or a fork's branch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ToolCallRecord<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(default)]
    pub args: Cow<'a, Json>,
    #[serde(borrow, default)]
    pub result: Option<Cow<'a, str>>,
    #[serde(default)]
    pub succeeded: bool,
    /// Why the call was refused (absent when it was not; sessions before it have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied: Option<crate::history::DenialKind>,
}

/// One history message: a line of the session log, an entry of a checkpoint's `Messages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MessageRecord<'a> {
    #[serde(borrow)]
    pub agent_name: Cow<'a, str>,
    pub role: RoleRecord,
    #[serde(borrow)]
    pub content: Cow<'a, str>,
    #[serde(default)]
    pub turn_index: u32,
    #[serde(default)]
    pub usage: UsageRecord,
    #[serde(borrow, default)]
    pub tool_calls: Vec<ToolCallRecord<'a>>,
}

/// The run's state: upstream's session layout plus `Machine`, the provider's position
/// (`Provider`, absent from [`crate::machine::Machine::checkpoint`]) and, in a whole
/// checkpoint, its `Messages`. The session log appends the CLI's own keys after `Provider`
/// (`ConfigPath`, `StartedAt`, ...), which this type ignores on read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct StateRecord<'a> {
    pub version: u64,
    #[serde(borrow)]
    pub session_id: Cow<'a, str>,
    #[serde(borrow, default)]
    pub task: Cow<'a, str>,
    #[serde(default)]
    pub is_complete: bool,
    #[serde(borrow, default)]
    pub resume_executor_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub message_count: u64,
    #[serde(borrow)]
    pub machine: MachineRecord<'a>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Cow<'a, Json>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<MessageRecord<'a>>>,
}

/// What the machine keeps (`Machine`). The optional parts are written only when they hold
/// something, so that a run without them writes what older fuseraft wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MachineRecord<'a> {
    #[serde(borrow)]
    pub state: Option<Cow<'a, str>>,
    #[serde(default)]
    pub turn: u32,
    #[serde(default)]
    pub phase: u32,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// In the program's order of counters.
    #[serde(borrow, default, with = "named_counts")]
    pub counters: Vec<(Cow<'a, str>, u32)>,
    /// Sorted by key.
    #[serde(borrow, default, with = "named_counts")]
    pub failures: Vec<(Cow<'a, str>, u32)>,
    /// Sorted.
    #[serde(borrow, default)]
    pub recovered: Vec<Cow<'a, str>>,
    #[serde(default)]
    pub visit_turns: u32,
    #[serde(borrow, default)]
    pub value: Option<Cow<'a, str>>,
    #[serde(default)]
    pub value_is_last_reply: bool,
    #[serde(borrow, default)]
    pub stand_in: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub outcome: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub reason: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<Cow<'a, Notes>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<SpendRecord>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkRecord<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionRecord<'a>>,
    /// Present (both) only when a provider cached part of a prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub magentic: Option<MagenticRecord<'a>>,
    /// tama pattern steps' newest inputs and values, the newest last.
    #[serde(borrow, default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepRecordOut<'a>>,
}

/// A tama pattern step's newest input and value (`Machine.Steps`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct StepRecordOut<'a> {
    #[serde(borrow)]
    pub state: Cow<'a, str>,
    #[serde(borrow, default)]
    pub input: Cow<'a, str>,
    #[serde(borrow, default)]
    pub value: Cow<'a, str>,
}

impl From<StepRecordOut<'_>> for crate::machine::StepRecord {
    fn from(record: StepRecordOut<'_>) -> Self {
        crate::machine::StepRecord {
            state: record.state.into_owned(),
            input: record.input.into_owned(),
            value: record.value.into_owned(),
        }
    }
}

/// `{"Usd", "Unpriced"}`: what model calls cost, as far as known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SpendRecord {
    #[serde(default, deserialize_with = "cost")]
    pub usd: f64,
    #[serde(default)]
    pub unpriced: u32,
}

/// A cost: a number, or `null`, which is how serde_json writes a sum that overflowed to
/// infinity (read as nothing, as [`crate::history::Spend::add`] treats it).
fn cost<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(0.0))
}

/// The fork under way (`Machine.Fork`): its finished branches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ForkRecord<'a> {
    #[serde(borrow, default)]
    pub done: Vec<BranchRecord<'a>>,
}

/// A finished branch of the fork under way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BranchRecord<'a> {
    #[serde(borrow)]
    pub state: Cow<'a, str>,
    #[serde(borrow, default)]
    pub agent_name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub content: Cow<'a, str>,
    #[serde(default)]
    pub usage: UsageRecord,
    #[serde(borrow, default)]
    pub tool_calls: Vec<ToolCallRecord<'a>>,
    #[serde(borrow, default)]
    pub error: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<SpendRecord>,
}

/// The compaction summary in force (`Machine.Compaction`): the summary as upstream's
/// `AgentMessage` with `IsCompactionSummary`, and the extent it covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CompactionRecord<'a> {
    #[serde(borrow)]
    pub summary: SummaryRecord<'a>,
    pub through: u64,
    #[serde(default = "one")]
    pub count: u32,
    /// The turn the summary was made at (the anti-thrash guard's and the window trigger's
    /// grace period reads it).
    #[serde(default)]
    pub made_at_turn: u32,
    /// The recent compactions' savings in basis points (whole numbers: a float would not
    /// round-trip exactly), newest last.
    #[serde(default)]
    pub recent_savings: Vec<u32>,
}

fn one() -> u32 {
    1
}

/// A compaction's summary message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SummaryRecord<'a> {
    #[serde(borrow, default)]
    pub agent_name: Cow<'a, str>,
    #[serde(default = "user_role")]
    pub role: RoleRecord,
    #[serde(borrow)]
    pub content: Cow<'a, str>,
    #[serde(default)]
    pub turn_index: u32,
    #[serde(default)]
    pub is_compaction_summary: bool,
}

fn user_role() -> RoleRecord {
    RoleRecord::User
}

/// The magentic manager's ledger (`Machine.Magentic`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MagenticRecord<'a> {
    #[serde(borrow)]
    pub next: Cow<'a, str>,
    #[serde(borrow, default)]
    pub facts: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub plan: Option<Cow<'a, str>>,
    #[serde(default)]
    pub rounds: u32,
    #[serde(default)]
    pub stalls: u32,
    #[serde(default)]
    pub resets: u32,
    #[serde(default)]
    pub invalid_ledgers: u32,
    #[serde(borrow, default)]
    pub retry: Option<RetryRecord<'a>>,
    #[serde(borrow, default)]
    pub feedback: Option<Cow<'a, str>>,
}

/// The last unusable ledger and the correction sent with the manager's next question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RetryRecord<'a> {
    #[serde(borrow)]
    pub reply: Cow<'a, str>,
    #[serde(borrow)]
    pub correction: Cow<'a, str>,
}

/// Named counts kept in a given order, written as a JSON object (`{"name": n, ...}`).
mod named_counts {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        counts: &[(Cow<'_, str>, u32)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(counts.len()))?;
        for (name, count) in counts {
            map.serialize_entry(name, count)?;
        }
        map.end()
    }

    pub(super) fn deserialize<'de: 'a, 'a, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(Cow<'a, str>, u32)>, D::Error> {
        struct Counts;
        impl<'de> Visitor<'de> for Counts {
            type Value = Vec<(Cow<'de, str>, u32)>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an object of counts")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut counts = Vec::new();
                while let Some(entry) = map.next_entry::<Cow<'de, str>, u32>()? {
                    counts.push(entry);
                }
                Ok(counts)
            }
        }
        deserializer.deserialize_map(Counts)
    }
}
