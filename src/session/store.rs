//! A run's hold on its session: the session key and the session's lock, taken before the
//! session is read (a resume repairs its log) and held until the run ends.

use std::path::Path;
use std::sync::Arc;

use super::key::{Key, KEY_ENV};
use super::lock::{self, LockError, RunLock};

pub struct Store {
    /// The session key, or why there is none.
    pub key: Result<Arc<Key>, String>,
    _lock: Option<RunLock>,
}

impl Store {
    /// Loads the key and locks session `id`; `Err` when the run must not start (the session
    /// is in use, or cannot be locked for a resume). An ephemeral run keeps no session.
    pub fn open(
        work_dir: &Path,
        id: &str,
        ephemeral: bool,
        resuming: bool,
    ) -> Result<Store, String> {
        if ephemeral {
            return Ok(Store {
                key: Err("an ephemeral run keeps no session".to_string()),
                _lock: None,
            });
        }
        let key = Key::load_or_create().map(Arc::new);
        if let (Err(problem), false) = (&key, resuming) {
            eprintln!(
                "warning: {problem}; this session is saved without authentication, and resuming it will need `--allow-unverified`"
            );
        }
        let lock = match lock::acquire(work_dir, id) {
            Ok(lock) => Some(lock),
            Err(error @ LockError::Busy(_)) => return Err(error.message(id)),
            Err(error) if resuming => return Err(error.message(id)),
            // A store that cannot be written is reported (once) when the first checkpoint is.
            Err(LockError::Io(_)) => None,
        };
        Ok(Store { key, _lock: lock })
    }

    /// Warns when the key file lies under the (canonical) work dir, where the agents' tools
    /// could read it.
    pub fn warn_if_key_inside(&self, work_dir: &Path) {
        let Ok(key) = &self.key else { return };
        let dir = key
            .path()
            .parent()
            .and_then(|dir| std::fs::canonicalize(dir).ok())
            .unwrap_or_else(|| key.path().to_path_buf());
        if dir.starts_with(work_dir) {
            eprintln!(
                "warning: the session key `{}` is inside the work dir, where agents' tools can read it and forge sessions; set `{KEY_ENV}` to a path outside it",
                key.path().display()
            );
        }
    }
}
