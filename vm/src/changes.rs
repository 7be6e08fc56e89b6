//! The change log (`changes.json`): what each agent turn wrote, deleted and ran.
//!
//! Written by the tools after every call, read by the validators and contract predicates.
//! The format is upstream's `ChangeTracker` file (camelCase keys), so logs stay comparable:
//! `{activeSessionId, entries: [{agent, turnIndex, timestamp, sessionId, filesWritten[],
//! filesDeleted[], commandsRun: [{command, succeeded, output}], gitCommits[]}]}`.

use std::path::Path;

use serde_json::{json, Value as Json};

/// Where the change log lives under the work dir unless `ChangeTracking.Path` says otherwise.
pub const DEFAULT_PATH: &str = ".fuseraft/state/changes.json";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChangeLog {
    pub active_session_id: String,
    pub entries: Vec<Entry>,
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
    /// Reads a change log; a missing file is an empty log, a malformed one is an error.
    pub fn load(path: &Path) -> Result<ChangeLog, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ChangeLog::default())
            }
            Err(error) => {
                return Err(format!(
                    "could not read change log `{}`: {error}",
                    path.display()
                ))
            }
        };
        ChangeLog::parse(&text)
            .map_err(|error| format!("change log `{}` is not valid: {error}", path.display()))
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
        };
        for entry in root
            .get("entries")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            log.entries.push(Entry {
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
            });
        }
        Ok(log)
    }

    pub fn to_json(&self) -> Json {
        json!({
            "activeSessionId": self.active_session_id,
            "entries": self.entries.iter().map(|entry| json!({
                "agent": entry.agent,
                "turnIndex": entry.turn_index,
                "timestamp": entry.timestamp,
                "sessionId": entry.session_id,
                "filesWritten": entry.files_written,
                "filesDeleted": entry.files_deleted,
                "commandsRun": entry.commands_run.iter().map(|c| json!({
                    "command": c.command, "succeeded": c.succeeded, "output": c.output,
                })).collect::<Vec<_>>(),
                "gitCommits": entry.git_commits,
            })).collect::<Vec<_>>(),
        })
    }

    /// Writes the log atomically (temp file, then rename), creating parent directories.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|error| format!("could not create `{}`: {error}", parent.display()))?;
        }
        let text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        let temp = path.with_extension("json.tmp");
        std::fs::write(&temp, text)
            .map_err(|error| format!("could not write `{}`: {error}", temp.display()))?;
        std::fs::rename(&temp, path)
            .map_err(|error| format!("could not write `{}`: {error}", path.display()))
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
