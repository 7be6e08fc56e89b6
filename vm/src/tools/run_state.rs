//! What the tools remember for the length of one run: each file's write version
//! (`stat_file`, `write_file`'s `baseVersion`), the summaries saved with `save_file_summary`
//! the variables each agent set with `shell_set_env`, and the CodeExecution REPL sessions.
//!
//! One [`RunState`] per run, made by the driver and shared by every call's context (like
//! [`super::Jobs`]); nothing of it is written to disk, so it ends with the run.
//!
//! A version counts the writes fuseraft's own file tools made to a path during the run:
//! every path a tool records as written or deleted in the change log (`record.rs`) goes up
//! by one, and so does every counted path beneath it (a directory moved or deleted). A
//! path no tool wrote has version 0. A command that edits a file does not count; a saved
//! summary is kept with the file's size and modification time and dropped once they change.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// A saved summary and the file's (size, modification time in nanoseconds) when saved.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Summary {
    pub text: String,
    pub stamp: (i64, i128),
}

#[derive(Default)]
struct Tables {
    versions: HashMap<String, u64>,
    summaries: HashMap<String, Summary>,
    /// Per agent, the variables it set (`None`: unset for its commands).
    env: HashMap<String, BTreeMap<String, Option<String>>>,
    /// The CodeExecution REPL sessions: id → (language, the code run so far).
    repls: BTreeMap<String, (String, String)>,
}

/// The run's memory of the tools; clones share it.
#[derive(Clone, Default)]
pub struct RunState(Arc<Mutex<Tables>>);

impl fmt::Debug for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tables = self.tables();
        write!(f, "RunState({} versions)", tables.versions.len())
    }
}

impl PartialEq for RunState {
    fn eq(&self, other: &RunState) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl RunState {
    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a REPL session in `language`: its id (`repl-N`).
    pub(crate) fn repl_start(&self, language: &str) -> String {
        let mut tables = self.tables();
        let id = format!("repl-{}", tables.repls.len() + 1);
        tables
            .repls
            .insert(id.clone(), (language.to_string(), String::new()));
        id
    }

    /// A REPL session's language and the code it ran so far.
    pub(crate) fn repl(&self, id: &str) -> Option<(String, String)> {
        self.tables().repls.get(id).cloned()
    }

    /// Sets what REPL session `id` ran so far; `false` when there is no such session.
    pub(crate) fn repl_set(&self, id: &str, code: String) -> bool {
        match self.tables().repls.get_mut(id) {
            Some(session) => {
                session.1 = code;
                true
            }
            None => false,
        }
    }

    /// Ends REPL session `id`; `false` when there was none.
    pub(crate) fn repl_stop(&self, id: &str) -> bool {
        self.tables().repls.remove(id).is_some()
    }

    /// The version of `rel` (a path relative to the sandbox root, as the tools resolve it).
    pub(crate) fn version(&self, rel: &str) -> u64 {
        self.tables().versions.get(rel).copied().unwrap_or(0)
    }

    /// Counts a write to `rel`: it and every counted path beneath it go up by one, and their
    /// saved summaries are dropped.
    pub(crate) fn wrote(&self, rel: &str) {
        let mut tables = self.tables();
        let beneath = |path: &str| {
            rel.is_empty()
                || path == rel
                || path
                    .strip_prefix(rel)
                    .is_some_and(|rest| rest.starts_with('/'))
        };
        for (path, version) in tables.versions.iter_mut() {
            if path != rel && beneath(path) {
                *version += 1;
            }
        }
        *tables.versions.entry(rel.to_string()).or_insert(0) += 1;
        tables.summaries.retain(|path, _| !beneath(path));
    }

    pub(crate) fn save_summary(&self, rel: &str, summary: Summary) {
        self.tables().summaries.insert(rel.to_string(), summary);
    }

    /// The summary saved for `rel` while the file still has `stamp`; a stale one is dropped.
    pub(crate) fn summary(&self, rel: &str, stamp: (i64, i128)) -> Option<String> {
        let mut tables = self.tables();
        match tables.summaries.get(rel) {
            Some(saved) if saved.stamp == stamp => Some(saved.text.clone()),
            Some(_) => {
                tables.summaries.remove(rel);
                None
            }
            None => None,
        }
    }

    /// Sets (`Some`) or unsets (`None`) `name` for `agent`'s later commands.
    pub(crate) fn set_env(&self, agent: &str, name: &str, value: Option<String>) {
        self.tables()
            .env
            .entry(agent.to_string())
            .or_default()
            .insert(name.to_string(), value);
    }

    /// The variables `agent` set, in name order.
    pub(crate) fn env_of(&self, agent: &str) -> Vec<(String, Option<String>)> {
        self.tables()
            .env
            .get(agent)
            .map(|vars| {
                vars.iter()
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_counts_for_the_path_and_everything_beneath_it() {
        let state = RunState::default();
        assert_eq!(state.version("a/b.txt"), 0);
        state.wrote("a/b.txt");
        state.wrote("a/b.txt");
        state.wrote("ab.txt");
        assert_eq!(state.version("a/b.txt"), 2);
        state.wrote("a");
        assert_eq!(state.version("a/b.txt"), 3);
        assert_eq!(state.version("ab.txt"), 1, "a sibling with a common prefix");
    }

    #[test]
    fn a_summary_lasts_until_its_file_changes() {
        let state = RunState::default();
        let summary = Summary {
            text: "the parser".to_string(),
            stamp: (10, 5),
        };
        state.save_summary("p.rs", summary.clone());
        assert_eq!(
            state.summary("p.rs", (10, 5)).as_deref(),
            Some("the parser")
        );
        assert_eq!(state.summary("p.rs", (11, 6)), None);
        assert_eq!(
            state.summary("p.rs", (10, 5)),
            None,
            "a stale summary is gone"
        );
        state.save_summary("p.rs", summary);
        state.wrote("p.rs");
        assert_eq!(state.summary("p.rs", (10, 5)), None);
    }
}
