//! The keys the CLI adds to every state record and snapshot of a session, after the
//! machine's own (`fuseraft_vm::checkpoint::records::StateRecord`): where the config and the
//! work dir were, the config's digest, when the session started and was last saved, the
//! provider flags it ran with, whether it was cancelled, the session it was forked from, and
//! the per-agent totals. One derived type written after
//! every turn and read strictly on load.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SessionFields<'a> {
    #[serde(borrow, default)]
    pub config_path: Cow<'a, str>,
    /// Empty in sessions from before digests.
    #[serde(borrow, default)]
    pub config_digest: Cow<'a, str>,
    #[serde(borrow, default)]
    pub working_directory: Cow<'a, str>,
    #[serde(borrow, default)]
    pub started_at: Cow<'a, str>,
    #[serde(borrow, default)]
    pub last_updated_at: Cow<'a, str>,
    /// `--model`, `--endpoint` and `--api-key-env`'s variable name (none for a replay run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<Cow<'a, Json>>,
    /// Set on the record a cancelled run appends last.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cancelled: bool,
    /// The session and turn this one was forked from (`exec --from-turn`):
    /// `{"Session": ID, "Turn": N}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<Cow<'a, Json>>,
    /// Turns, tokens, cost, tool calls and time per agent, for the whole session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_totals: Option<Cow<'a, Json>>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Checks the CLI's keys of a state record or snapshot.
pub fn check(state: &Json) -> Result<(), String> {
    fuseraft_vm::checkpoint::read::<SessionFields<'_>>(state).map(drop)
}
