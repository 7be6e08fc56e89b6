//! One run per session at a time: `<id>.lock` beside the session files, held (`flock(2)`)
//! for the whole run and holding the holder's pid.
//!
//! The kernel releases the lock when its holder dies, so a killed run leaves no obstacle: the
//! next run takes the lock of the file left behind. A run removes the file while it still
//! holds the lock; a run that locked a file meanwhile removed checks, after locking, that
//! the path still names the file it locked, and starts over when it does not.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use fuseraft_vm::state_dir::{Access, StateDir};

/// Why a session could not be locked.
#[derive(Debug)]
pub enum LockError {
    /// Another run holds it: its pid, when it wrote one.
    Busy(Option<u32>),
    Io(std::io::Error),
}

impl LockError {
    /// The message for a refused `id`.
    pub fn message(&self, id: &str) -> String {
        match self {
            LockError::Busy(Some(pid)) => format!(
                "session `{id}` is in use by another fuseraft run (pid {pid}); wait for it to end or stop it first"
            ),
            LockError::Busy(None) => format!(
                "session `{id}` is in use by another fuseraft run; wait for it to end or stop it first"
            ),
            LockError::Io(error) => format!("cannot lock session `{id}`: {error}"),
        }
    }
}

/// A held session lock, released (and its file removed) when dropped.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    dir: StateDir,
    name: String,
}

pub fn path(work_dir: &Path, id: &str) -> PathBuf {
    work_dir.join(super::DIR).join(format!("{id}.lock"))
}

/// Takes the lock of session `id` without waiting.
pub fn acquire(work_dir: &Path, id: &str) -> Result<RunLock, LockError> {
    let dir = super::dir(work_dir).map_err(|error| LockError::Io(super::dir_error(error)))?;
    let name = format!("{id}.lock");
    loop {
        let mut file = dir
            .open_file(&name, Access::Update)
            .map_err(LockError::Io)?;
        match try_lock(&file, false) {
            Ok(true) => {}
            Ok(false) => return Err(LockError::Busy(holder(&mut file))),
            Err(error) => return Err(LockError::Io(error)),
        }
        if !same_file(&file, &dir, &name) {
            // Its holder removed it between our open and our lock: take the new one.
            continue;
        }
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(pid.as_bytes()))
            .map_err(LockError::Io)?;
        return Ok(RunLock {
            _file: file,
            dir,
            name,
        });
    }
}

/// Whether session `id` is locked by a run now: `Some(pid)` of the holder when it is.
pub fn holder_of(work_dir: &Path, id: &str) -> Option<Option<u32>> {
    let dir = super::existing_dir(work_dir).ok()??;
    let mut file = dir.open_file(&format!("{id}.lock"), Access::Read).ok()?;
    match try_lock(&file, true) {
        Ok(false) => Some(holder(&mut file)),
        _ => None,
    }
}

/// Takes a lock of `file` without waiting: `Ok(false)` when another open file holds it.
#[cfg(unix)]
fn try_lock(file: &File, shared: bool) -> std::io::Result<bool> {
    use rustix::fs::{flock, FlockOperation};
    let operation = if shared {
        FlockOperation::NonBlockingLockShared
    } else {
        FlockOperation::NonBlockingLockExclusive
    };
    match flock(file, operation) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(error) => Err(error.into()),
    }
}

#[cfg(not(unix))]
fn try_lock(_: &File, _: bool) -> std::io::Result<bool> {
    Ok(true)
}

/// The pid written in a lock file.
fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// Whether `name` in `dir` is still the file `file` holds.
fn same_file(file: &File, dir: &StateDir, name: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), dir.identity(name)) {
        (Ok(open), Some(named)) => (open.dev(), open.ino()) == named,
        _ => false,
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed while held, so no run can lock this file and then find it gone.
        let _ = self.dir.remove(&self.name);
        // Closing the file (dropping it after this) releases the lock.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_of_a_session_is_refused_naming_the_pid_and_freed_after() {
        let work = std::env::temp_dir().join(format!("fuseraft-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        let held = acquire(&work, "0000abcd").unwrap();
        match acquire(&work, "0000abcd") {
            Err(error @ LockError::Busy(Some(pid))) => {
                assert_eq!(pid, std::process::id());
                assert!(error.message("0000abcd").contains(&format!("pid {pid}")));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(holder_of(&work, "0000abcd"), Some(Some(std::process::id())));
        // Another session is another lock.
        let other = acquire(&work, "0000abce").unwrap();
        drop(held);
        assert!(!path(&work, "0000abcd").exists());
        assert_eq!(holder_of(&work, "0000abcd"), None);
        let again = acquire(&work, "0000abcd").unwrap();
        drop((again, other));
        let _ = std::fs::remove_dir_all(&work);
    }
}
