//! A run's hold on its session: the session key and the session's lock, taken before the
//! session is read (a resume repairs its log) and held until the run ends.

use std::path::Path;
use std::sync::Arc;

use super::key::{Key, KEY_ENV};
use super::lock::{self, LockError, RunLock};

pub struct Store {
    /// The session key, or why there is none.
    pub key: Result<Arc<Key>, String>,
    lock: Option<RunLock>,
    ephemeral: bool,
}

impl Store {
    /// Loads the key, and locks session `id` when `resuming` (a new session is locked by
    /// [`Store::begin`], once its config compiled); `Err` when the run must not start (the
    /// session is in use, or cannot be locked). An ephemeral run keeps no session.
    pub fn open(
        work_dir: &Path,
        id: &str,
        ephemeral: bool,
        resuming: bool,
    ) -> Result<Store, String> {
        if ephemeral {
            return Ok(Store {
                key: Err("an ephemeral run keeps no session".to_string()),
                lock: None,
                ephemeral,
            });
        }
        let key = Key::load_or_create().map(Arc::new);
        if let (Err(problem), false) = (&key, resuming) {
            eprintln!(
                "warning: {problem}; this session is saved without authentication, and resuming it will need `--allow-unverified`"
            );
        }
        if resuming {
            refuse_unfit_dir(work_dir)?;
        }
        let lock = match resuming {
            true => Some(lock::acquire(work_dir, id).map_err(|error| error.message(id))?),
            false => None,
        };
        Ok(Store {
            key,
            lock,
            ephemeral,
        })
    }

    /// Before the run starts: locks a new session (a store that cannot be written is
    /// reported, once, when the first checkpoint is), and warns when the key file lies
    /// under the (canonical) work dir, where the agents' tools could read it.
    pub fn begin(&mut self, work_dir: &Path, id: &str) -> Result<(), String> {
        if self.ephemeral {
            return Ok(());
        }
        if self.lock.is_none() {
            refuse_unfit_dir(work_dir)?;
            match lock::acquire(work_dir, id) {
                Ok(lock) => self.lock = Some(lock),
                Err(error @ LockError::Busy(_)) => return Err(error.message(id)),
                Err(LockError::Io(_)) => {}
            }
        }
        let Ok(key) = &self.key else { return Ok(()) };
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
        Ok(())
    }
}

/// `Err` when the session directory is a link, another user's or writable by others (a
/// cloned repository's planted `.fuseraft/sessions`): the run must not start. A directory
/// that is merely unusable (a file in its place) costs the run its saving, reported once.
fn refuse_unfit_dir(work_dir: &Path) -> Result<(), String> {
    match super::dir(work_dir) {
        Err(error) if error.refused => Err(error.message),
        _ => Ok(()),
    }
}
