//! The change log (`changes.json`): what each agent turn wrote, deleted and ran.
//!
//! Written by the tools after every call, read by the validators and contract predicates.
//! The format is upstream's `ChangeTracker` file (camelCase keys), so logs stay comparable:
//! `{activeSessionId, entries: [{agent, turnIndex, timestamp, sessionId, filesWritten[],
//! filesDeleted[], commandsRun: [{command, succeeded, output}], gitCommits[]}]}`, plus
//! `appendLog` (what of the append log it holds).
//!
//! `changes.json` is a compact snapshot; each tool call appends one record to the append
//! log beside it, and readers merge the two ([`store`]), so recording costs the same at the
//! first call and the hundred-thousandth.

use std::collections::HashMap;
use std::path::Path;

mod files;
pub mod store;

use serde_json::{json, Value as Json};

/// Where the change log lives under the work dir unless `ChangeTracking.Path` says otherwise.
pub const DEFAULT_PATH: &str = ".fuseraft/state/changes.json";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChangeLog {
    pub active_session_id: String,
    pub entries: Vec<Entry>,
    /// The append log whose records up to a byte offset this snapshot already holds.
    pub absorbed: Option<store::Absorbed>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    pub agent: String,
    pub turn_index: u32,
    /// RFC 3339, or empty when unknown.
    pub timestamp: String,
    pub session_id: String,
    pub files_written: Vec<String>,
    pub files_deleted: Vec<String>,
    pub commands_run: Vec<Command>,
    pub git_commits: Vec<String>,
    /// Calls of MCP servers' tools (`mcpCalls`, written only when there are some, so a log
    /// without them keeps upstream's shape exactly).
    pub mcp_calls: Vec<McpCall>,
}

/// One call of an MCP server's tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpCall {
    pub server: String,
    pub tool: String,
    /// The arguments as JSON text.
    pub arguments: String,
    pub succeeded: bool,
    pub output: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Command {
    pub command: String,
    pub succeeded: bool,
    pub output: String,
}

fn strings(value: &Json, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(Json::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl ChangeLog {
    /// Reads a change log, its snapshot and its append log merged; a missing log is an
    /// empty log, a malformed one is an error.
    pub fn load(path: &Path) -> Result<ChangeLog, String> {
        store::read(path).map(Option::unwrap_or_default)
    }

    /// Reads the snapshot `changes.json` alone; `None` when it does not exist.
    pub fn load_snapshot(path: &Path) -> Result<Option<ChangeLog>, String> {
        store::load_snapshot(path)
    }

    pub fn parse(text: &str) -> Result<ChangeLog, String> {
        let root: Json = serde_json::from_str(text).map_err(|error| error.to_string())?;
        let mut log = ChangeLog {
            active_session_id: root
                .get("activeSessionId")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            entries: Vec::new(),
            absorbed: root.get("appendLog").and_then(store::Absorbed::from_json),
        };
        for entry in root
            .get("entries")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            log.entries.push(Entry::from_json(entry));
        }
        Ok(log)
    }

    pub fn to_json(&self) -> Json {
        let mut json = json!({
            "activeSessionId": self.active_session_id,
            "entries": self.entries.iter().map(Entry::to_json).collect::<Vec<_>>(),
        });
        if let Some(absorbed) = &self.absorbed {
            json["appendLog"] = absorbed.to_json();
        }
        json
    }

    /// Writes the log atomically (temp file, then rename), 0600, creating parent directories.
    /// Only for a log that is not being recorded into: a run's records go through [`store`].
    pub fn save(&self, path: &Path) -> Result<(), String> {
        store::write_snapshot(path, self)
    }

    /// Merges `deltas` (records, each for one `(session, agent, turn)`) in order, in time
    /// linear in the entries and records.
    pub fn absorb_all(&mut self, deltas: impl IntoIterator<Item = Entry>) {
        let mut index: HashMap<(String, String, u32), usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(at, entry)| {
                (
                    (
                        entry.session_id.clone(),
                        entry.agent.clone(),
                        entry.turn_index,
                    ),
                    at,
                )
            })
            .collect();
        for delta in deltas {
            self.active_session_id = delta.session_id.clone();
            let key = (
                delta.session_id.clone(),
                delta.agent.clone(),
                delta.turn_index,
            );
            match index.get(&key) {
                Some(&at) => self.entries[at].absorb(delta),
                None => {
                    index.insert(key, self.entries.len());
                    let mut entry = Entry {
                        agent: delta.agent.clone(),
                        turn_index: delta.turn_index,
                        timestamp: delta.timestamp.clone(),
                        session_id: delta.session_id.clone(),
                        ..Entry::default()
                    };
                    entry.absorb(delta);
                    self.entries.push(entry);
                }
            }
        }
    }

    /// Entries of the active session.
    pub fn session_entries(&self) -> impl Iterator<Item = &Entry> {
        let session = self.active_session_id.clone();
        self.entries
            .iter()
            .filter(move |entry| session.is_empty() || entry.session_id == session)
    }

    /// The entry for `(session, agent, turn)`, created when missing.
    pub fn entry_mut(
        &mut self,
        session: &str,
        agent: &str,
        turn: u32,
        timestamp: &str,
    ) -> &mut Entry {
        self.active_session_id = session.to_string();
        let idx = match self.entries.iter().position(|entry| {
            entry.session_id == session && entry.agent == agent && entry.turn_index == turn
        }) {
            Some(idx) => idx,
            None => {
                self.entries.push(Entry {
                    agent: agent.to_string(),
                    turn_index: turn,
                    timestamp: timestamp.to_string(),
                    session_id: session.to_string(),
                    ..Entry::default()
                });
                self.entries.len() - 1
            }
        };
        &mut self.entries[idx]
    }
}

impl Entry {
    /// An entry from its JSON (missing or mistyped members are empty).
    pub fn from_json(entry: &Json) -> Entry {
        Entry {
            agent: entry
                .get("agent")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            turn_index: entry.get("turnIndex").and_then(Json::as_u64).unwrap_or(0) as u32,
            timestamp: entry
                .get("timestamp")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            session_id: entry
                .get("sessionId")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            files_written: strings(entry, "filesWritten"),
            files_deleted: strings(entry, "filesDeleted"),
            commands_run: entry
                .get("commandsRun")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .map(|command| Command {
                    command: command
                        .get("command")
                        .and_then(Json::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    succeeded: command
                        .get("succeeded")
                        .and_then(Json::as_bool)
                        .unwrap_or(false),
                    output: command
                        .get("output")
                        .and_then(Json::as_str)
                        .unwrap_or_default()
                        .to_string(),
                })
                .collect(),
            git_commits: strings(entry, "gitCommits"),
            mcp_calls: entry
                .get("mcpCalls")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .map(|call| {
                    let text = |key: &str| {
                        call.get(key)
                            .and_then(Json::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    McpCall {
                        server: text("server"),
                        tool: text("tool"),
                        arguments: text("arguments"),
                        succeeded: call
                            .get("succeeded")
                            .and_then(Json::as_bool)
                            .unwrap_or(false),
                        output: text("output"),
                    }
                })
                .collect(),
        }
    }

    pub fn to_json(&self) -> Json {
        let mut entry = json!({
            "agent": self.agent,
            "turnIndex": self.turn_index,
            "timestamp": self.timestamp,
            "sessionId": self.session_id,
            "filesWritten": self.files_written,
            "filesDeleted": self.files_deleted,
            "commandsRun": self.commands_run.iter().map(|c| json!({
                "command": c.command, "succeeded": c.succeeded, "output": c.output,
            })).collect::<Vec<_>>(),
            "gitCommits": self.git_commits,
        });
        if !self.mcp_calls.is_empty() {
            entry["mcpCalls"] = self
                .mcp_calls
                .iter()
                .map(|call| {
                    json!({
                        "server": call.server, "tool": call.tool, "arguments": call.arguments,
                        "succeeded": call.succeeded, "output": call.output,
                    })
                })
                .collect();
        }
        entry
    }

    /// Adds what `delta` records: files once each, commands and commits in order (the
    /// tools' own rule, so merging records gives what applying them in place gave).
    pub fn absorb(&mut self, delta: Entry) {
        for file in delta.files_written {
            push_unique(&mut self.files_written, file);
        }
        for file in delta.files_deleted {
            push_unique(&mut self.files_deleted, file);
        }
        self.commands_run.extend(delta.commands_run);
        self.git_commits.extend(delta.git_commits);
        self.mcp_calls.extend(delta.mcp_calls);
    }
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

#[cfg(test)]
mod tests;
