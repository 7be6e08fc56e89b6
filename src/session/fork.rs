//! `exec --resume ID --from-turn N`: a new session that shares session `ID`'s first `N`
//! turns. Its log starts with the original's message lines of those turns, byte for byte,
//! and one state record (the original's state after turn `N`, naming the new session and
//! `ForkedFrom`), authenticated under the new session's id; its snapshot and recorded config
//! are the original's. The original is read, verified, and left as it was.

use std::path::Path;

use serde_json::{json, Value as Json};

use super::key::{self, Key};
use super::load::state_after_turn;
use super::{snapshot_mac, Trust, LOG_DOMAIN, MAC_CLOSE, MAC_OPEN, RECORD_OPEN, SNAPSHOT_MAC_KEY};

/// The key of a forked session's state that names where it came from.
pub const FORKED_FROM: &str = "ForkedFrom";

/// Makes session `new` from session `from` as it stood after turn `turn` (see the module
/// doc). Errors name what is wrong: no such session or turn, an altered session, a write
/// that failed (then nothing of `new` is left).
pub fn fork(work_dir: &Path, from: &str, turn: u64, new: &str, key: &Key) -> Result<(), String> {
    let trust = Trust {
        key: Ok(key),
        allow_unverified: false,
    };
    let (mut state, lines) = state_after_turn(work_dir, from, &trust, turn)?;
    if let Some(object) = state.as_object_mut() {
        object.insert("SessionId".into(), json!(new));
        object.insert(FORKED_FROM.into(), json!({ "Session": from, "Turn": turn }));
    }
    let config = super::dir(work_dir).ok().and_then(|dir| {
        let mut config = String::new();
        dir.open_file(
            &format!("{from}.config.fir"),
            fuseraft_vm::state_dir::Access::Read,
        )
        .and_then(|mut file| std::io::Read::read_to_string(&mut file, &mut config))
        .ok()
        .map(|_| config)
    });
    write_session(work_dir, new, lines, state, config.as_deref(), key)
        .map_err(|error| format!("cannot write the forked session `{new}`: {error}"))
}

/// Writes session `id` whole: its log (the message `lines`, then one record of `state`
/// covering them, authenticated under `key`), its recorded config text when given, and its
/// snapshot. A failed write leaves nothing of `id`.
pub fn write_session(
    work_dir: &Path,
    id: &str,
    lines: Vec<u8>,
    mut state: Json,
    config: Option<&str>,
    key: &Key,
) -> Result<(), String> {
    if let Some(object) = state.as_object_mut() {
        object.remove("Messages");
    }
    let text = serde_json::to_vec(&state).map_err(|error| error.to_string())?;
    // One record covers every message line before it, as a resumed log's first one does.
    let mut log = lines;
    log.extend_from_slice(RECORD_OPEN);
    log.extend_from_slice(&text);
    let tag = key.mac(&[LOG_DOMAIN, id.as_bytes(), &[0; key::MAC_LEN], &log[..]]);
    log.extend_from_slice(MAC_OPEN);
    log.extend_from_slice(key::to_hex(&tag).as_bytes());
    log.extend_from_slice(MAC_CLOSE);
    let snapshot_tag = snapshot_mac(key, id, &state);
    if let Some(object) = state.as_object_mut() {
        object.insert(SNAPSHOT_MAC_KEY.into(), json!(key::to_hex(&snapshot_tag)));
    }
    let snapshot = serde_json::to_string_pretty(&state).map_err(|error| error.to_string())?;
    write(work_dir, id, &log, config, &snapshot).map_err(|error| {
        remove(work_dir, id);
        error.to_string()
    })
}

/// Writes a session's log, recorded config and snapshot.
fn write(
    work_dir: &Path,
    id: &str,
    log: &[u8],
    config: Option<&str>,
    snapshot: &str,
) -> std::io::Result<()> {
    let dir = super::dir(work_dir).map_err(super::dir_error)?;
    dir.replace(&format!("{id}.messages.jsonl"), log)?;
    if let Some(config) = config {
        dir.replace(&format!("{id}.config.fir"), config.as_bytes())?;
    }
    dir.replace(&format!("{id}.json"), snapshot.as_bytes())?;
    dir.sync();
    Ok(())
}

/// Removes what a failed fork wrote of session `new`.
fn remove(work_dir: &Path, new: &str) {
    if let Ok(dir) = super::dir(work_dir) {
        for suffix in [".messages.jsonl", ".config.fir", ".json"] {
            let _ = dir.remove(&format!("{new}{suffix}"));
        }
    }
}

/// The session and turn `state` was forked from, when it was.
pub fn forked_from(state: &Json) -> Option<(String, u64)> {
    let from = state.get(FORKED_FROM)?;
    Some((
        from.get("Session")?.as_str()?.to_string(),
        from.get("Turn")?.as_u64()?,
    ))
}
