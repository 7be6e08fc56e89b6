//! The file tools' own record of the calls they made in a served run: the outcome of each
//! call that writes, moves or deletes files, kept under `.fuseraft/effects/<session>/` of
//! the sandbox root, named by its turn and call id, the moment the call returns (the
//! journal's record of it comes a round trip to the engine later). A retried turn that
//! finds such a call interrupted reads the record: a call that was made gives the outcome
//! it gave, and one that was not is made now, so the call leaves one result either way.
//! The records go when the run ends.

use std::path::{Path, PathBuf};

use crate::history::ToolCall;
use crate::state_dir::StateDir;

/// The records of `session`, relative to the sandbox root.
fn dir_of(session: &str) -> PathBuf {
    Path::new(".fuseraft/effects").join(session)
}

/// A call's record name: its turn and its id, hex (ids are the provider's text; the first
/// 100 bytes name it).
fn name(turn: u32, call_id: &str) -> String {
    let id: String = call_id
        .bytes()
        .take(100)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("{turn}-{id}")
}

/// Keeps `outcome` (a [`super::tool_outcome`]) as the record of `call`; a record that
/// cannot be written leaves the journal's mark alone to decide.
pub fn keep(root: &Path, session: &str, turn: u32, call: &ToolCall, outcome: &str) {
    if let Ok(dir) = StateDir::open(root, &dir_of(session)) {
        let _ = dir.replace(&name(turn, &call.id), outcome.as_bytes());
    }
}

/// The record of call `call_id` of `turn`, if the call was made.
pub fn kept(root: &Path, session: &str, turn: u32, call_id: &str) -> Option<String> {
    let dir = StateDir::find(root, &dir_of(session)).ok()??;
    let file = dir
        .open_file(&name(turn, call_id), crate::state_dir::Access::Read)
        .ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 64 << 20), &mut text).ok()?;
    Some(text)
}

/// Removes the records of `session` (its run ended).
pub fn clear(root: &Path, session: &str) {
    if let Ok(Some(dir)) = StateDir::find(root, &dir_of(session)) {
        for name in dir.names().unwrap_or_default() {
            let _ = dir.remove(&name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_by_turn_and_call_and_goes_with_the_run() {
        let root = std::env::temp_dir().join(format!("fuseraft-effects-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let root = root.as_path();
        let call = ToolCall {
            id: "call_1/../x".into(),
            name: "write_file".into(),
            args: serde_json::json!({}),
            result: Some("wrote".into()),
            ok: true,
            denied: None,
        };
        assert_eq!(kept(root, "s1", 2, &call.id), None);
        keep(root, "s1", 2, &call, "{\"ok\":true}");
        assert_eq!(
            kept(root, "s1", 2, &call.id).as_deref(),
            Some("{\"ok\":true}")
        );
        assert_eq!(kept(root, "s1", 3, &call.id), None);
        assert_eq!(kept(root, "s2", 2, &call.id), None);
        clear(root, "s1");
        assert_eq!(kept(root, "s1", 2, &call.id), None);
        let _ = std::fs::remove_dir_all(root);
    }
}
