//! The session browser's data: the sessions of a work dir, and one session's turns read
//! back from its log (read-only, through `crate::session`'s readers), with the graph of the
//! program it ran (its `<id>.config.fir`) when that parses; and a rewind, which makes a new
//! session from one (`crate::session::fork`) and runs nothing.

use std::path::Path;

use serde_json::{json, Value as Json};

use crate::session::{self, Key, Trust};

/// `[{id, updated, status, turns, task}]`, newest first.
pub fn list(work_dir: &Path) -> Json {
    let key = Key::load_or_create();
    let listed = session::list(work_dir, key.as_ref().ok());
    Json::Array(
        listed
            .into_iter()
            .map(|entry| {
                json!({
                    "id": entry.id, "updated": entry.updated, "status": entry.status,
                    "turns": entry.turns, "task": entry.task,
                })
            })
            .collect(),
    )
}

/// `{id, task, unverified, cancelled, notes, machine, messages, graph}` of session `id`.
pub fn show(work_dir: &Path, id: &str) -> Result<Json, String> {
    if !session::valid_id(id) {
        return Err(session::invalid_id(id));
    }
    let key = Key::load_or_create();
    // Shown, not resumed: a session written without MACs is shown, marked unverified.
    let trust = Trust {
        key: key.as_ref().map_err(String::as_str),
        allow_unverified: true,
    };
    let loaded = session::load(work_dir, id, &trust)?;
    let state = &loaded.state;
    let graph = std::fs::read_to_string(session::config::text_path(work_dir, id))
        .ok()
        .and_then(|text| fuseraft_compiler::ir::parse(&text).ok())
        .map_or(Json::Null, |program| {
            fuseraft_compiler::ir::to_json(&program)
        });
    Ok(json!({
        "id": id,
        "task": state.get("Task").cloned().unwrap_or(Json::Null),
        "started": state.get("StartedAt").cloned().unwrap_or(Json::Null),
        "updated": state.get("LastUpdatedAt").cloned().unwrap_or(Json::Null),
        "unverified": loaded.unverified,
        "cancelled": state.get("Cancelled").and_then(Json::as_bool) == Some(true),
        "notes": loaded.notes,
        "machine": state.get("Machine").cloned().unwrap_or(Json::Null),
        "messages": state.get("Messages").cloned().unwrap_or(Json::Null),
        "graph": graph,
    }))
}

/// A new session from session `id` as it stood after `turn` (nothing run): `{id, from,
/// turn, command}`, `command` being what runs it on.
pub fn rewind(work_dir: &Path, id: &str, turn: u64) -> Result<Json, String> {
    if !session::valid_id(id) {
        return Err(session::invalid_id(id));
    }
    let key = Key::load_or_create()?;
    let new = session::new_id();
    session::fork::fork(work_dir, id, turn, &new, &key)?;
    let trust = Trust {
        key: Ok(&key),
        allow_unverified: false,
    };
    let config = session::load(work_dir, &new, &trust)?
        .state
        .get("ConfigPath")
        .and_then(Json::as_str)
        .unwrap_or("CONFIG")
        .to_string();
    let quoted = |text: &str| crate::commands::exec::shell_quoted(text);
    Ok(json!({
        "id": new, "from": id, "turn": turn,
        "command": format!(
            "fuseraft exec {} --resume {new} --work-dir {}",
            quoted(&config),
            quoted(&work_dir.display().to_string())
        ),
    }))
}
