//! The change log's three files, acted on through their directory's descriptor.
//!
//! A run opens the change log once ([`Files::open`]): its directory walked from the work
//! dir without following a link at any component (`crate::state_dir`), the snapshot, the
//! append log and the lock checked to be regular files of the user's (a symlink a cloned
//! repository planted as `changes.jsonl -> ~/.bashrc` is refused before the first turn).
//! The handle is then kept for the process, keyed by the log's path, so the tools' records
//! (which name the log by its path) reach the same directory with no syscall more than
//! before and never by name again. A log no run opened (a validator's unit test, a bench)
//! is reached through its parent directory by path, the trusted way the user named it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::store::{
    failed, header_id, new_id, prepare, records, sibling, Absorbed, Lock, HEADER_CLOSE, HEADER_LEN,
    HEADER_OPEN,
};
use super::{ChangeLog, Entry};
use crate::state_dir::{Access, StateDir};

/// The change log's files: the snapshot, the append log and the lock, in their directory.
#[derive(Clone, Debug)]
pub struct Files {
    /// The directory, once opened (a run's log whose directory does not exist yet opens it
    /// at its first record, through the same walk).
    dir: Arc<OnceLock<StateDir>>,
    /// The work dir and the directory under it, for a directory not opened yet.
    place: Option<(PathBuf, PathBuf)>,
    snapshot: String,
    append: String,
    lock: String,
}

/// The logs runs opened, newest last (a process runs a few: scenarios run many at once).
static HELD: Mutex<Vec<(PathBuf, Files)>> = Mutex::new(Vec::new());
const HELD_CAP: usize = 32;

fn names(path: &Path) -> Option<(String, String, String)> {
    let name = path.file_name()?.to_str()?;
    let sibling_name = |extension: &str| {
        sibling(Path::new(name), extension)
            .to_str()
            .map(str::to_string)
    };
    Some((
        name.to_string(),
        sibling_name("jsonl")?,
        sibling_name("lock")?,
    ))
}

impl Files {
    /// Opens the change log `path` (under `work_dir`) for a run and keeps it for the process;
    /// `Err` says what is wrong (a link, a foreign or shared directory, a log outside the
    /// work dir) and how to fix it.
    pub fn open(work_dir: &Path, path: &Path) -> Result<Files, String> {
        let outside = || {
            format!(
                "the change log `{}` is not under the work dir `{}`: `ChangeTracking.Path` names a place inside it",
                path.display(),
                work_dir.display()
            )
        };
        let rel = path.strip_prefix(work_dir).map_err(|_| outside())?;
        let (Some(parent), Some((snapshot, append, lock))) = (rel.parent(), names(rel)) else {
            return Err(outside());
        };
        if parent.as_os_str().is_empty() {
            // Its directory is the work dir, which commands write: one could plant the
            // append log beside it before fuseraft makes it.
            return Err(format!(
                "the change log `{}` lies at the top of the work dir: `ChangeTracking.Path` names a file in a directory of its own (the default is `{}`), which no command may write",
                path.display(),
                super::DEFAULT_PATH
            ));
        }
        let found = match StateDir::find(work_dir, parent) {
            Ok(found) => found,
            Err(error) if error.refused => return Err(error.message),
            // Unusable (not a directory): every record says so, as before.
            Err(_) => None,
        };
        let dir = OnceLock::new();
        if let Some(found) = found {
            for name in [&snapshot, &append, &lock] {
                found.check_file(name)?;
            }
            let _ = dir.set(found);
        }
        let files = Files {
            dir: Arc::new(dir),
            place: Some((work_dir.to_path_buf(), parent.to_path_buf())),
            snapshot,
            append,
            lock,
        };
        if !parent.starts_with(".fuseraft") {
            // Made now, so that every started process finds it there and read-only (the
            // confinement protects the change log's directory); `.fuseraft/` is so already.
            files
                .dir()
                .map_err(|error| failed(&files.path(&files.snapshot), error))?;
        }
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|(old, _)| old != path);
        if held.len() >= HELD_CAP {
            held.remove(0);
        }
        held.push((path.to_path_buf(), files.clone()));
        Ok(files)
    }

    /// The log `path`: the one a run opened, else through its parent directory by path
    /// (made when `create`); `None` when that directory does not exist.
    pub fn at(path: &Path, create: bool) -> std::io::Result<Option<Files>> {
        let held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, files)) = held.iter().rev().find(|(old, _)| old == path) {
            return Ok(Some(files.clone()));
        }
        drop(held);
        let Some((snapshot, append, lock)) = names(path) else {
            return Err(std::io::Error::other("the change log's path names no file"));
        };
        let parent = path.parent().unwrap_or(Path::new(""));
        if !create && !parent.as_os_str().is_empty() && !parent.is_dir() {
            return Ok(None);
        }
        Ok(Some(Files {
            dir: Arc::new(OnceLock::from(StateDir::trusted(parent)?)),
            place: None,
            snapshot,
            append,
            lock,
        }))
    }

    fn path(&self, name: &str) -> PathBuf {
        match (self.dir.get(), &self.place) {
            (Some(dir), _) => dir.join(name),
            (None, Some((work_dir, parent))) => work_dir.join(parent).join(name),
            (None, None) => PathBuf::from(name),
        }
    }

    /// The directory, opened (and made) now if it was not.
    fn dir(&self) -> std::io::Result<&StateDir> {
        if let Some(dir) = self.dir.get() {
            return Ok(dir);
        }
        let Some((work_dir, parent)) = &self.place else {
            return Err(std::io::ErrorKind::NotFound.into());
        };
        let dir = StateDir::open(work_dir, parent).map_err(|error| {
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, error.message)
        })?;
        Ok(self.dir.get_or_init(|| dir))
    }

    /// The directory when it exists (a reader makes nothing).
    fn existing(&self) -> std::io::Result<Option<&StateDir>> {
        if let Some(dir) = self.dir.get() {
            return Ok(Some(dir));
        }
        let Some((work_dir, parent)) = &self.place else {
            return Ok(None);
        };
        match StateDir::find(work_dir, parent) {
            Ok(Some(dir)) => Ok(Some(self.dir.get_or_init(|| dir))),
            Ok(None) => Ok(None),
            Err(error) => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                error.message,
            )),
        }
    }

    /// Takes the lock (waiting for it), creating the lock file.
    pub fn lock(&self, exclusive: bool) -> std::io::Result<Lock> {
        let dir = match exclusive {
            true => self.dir()?,
            false => self.existing()?.ok_or(std::io::ErrorKind::NotFound)?,
        };
        let file = match dir.open_file(&self.lock, Access::Update) {
            Ok(file) => file,
            // A reader of a store it cannot write still takes the lock when the file exists.
            Err(_) if !exclusive => dir.open_file(&self.lock, Access::Read)?,
            Err(error) => return Err(error),
        };
        let operation = if exclusive {
            rustix::fs::FlockOperation::LockExclusive
        } else {
            rustix::fs::FlockOperation::LockShared
        };
        rustix::fs::flock(&file, operation)?;
        Ok(Lock { _file: file })
    }

    /// Appends one record under the lock; compacts when the append log outgrew the snapshot.
    pub fn record(&self, delta: &Entry) -> Result<(), String> {
        let _lock = self
            .lock(true)
            .map_err(|error| failed(&self.path(&self.lock), error))?;
        let append = self.path(&self.append);
        let mut file = self
            .dir()
            .and_then(|dir| dir.open_file(&self.append, Access::Append))
            .map_err(|error| failed(&append, error))?;
        let len = prepare(&mut file).map_err(|error| failed(&append, error))?;
        let mut line = Vec::with_capacity(256);
        if len == 0 {
            line.extend_from_slice(HEADER_OPEN);
            line.extend_from_slice(new_id().as_bytes());
            line.extend_from_slice(HEADER_CLOSE);
        }
        serde_json::to_writer(&mut line, &delta.to_json())
            .map_err(|error| failed(&append, error))?;
        line.push(b'\n');
        if let Err(error) = file.write_all(&line) {
            // A partial record is undone (or, after a kill, cut by the next writer).
            let _ = file.set_len(len);
            return Err(failed(&append, error));
        }
        let pending = len + line.len() as u64;
        let snapshot = self.dir.get().and_then(|dir| dir.len(&self.snapshot));
        if pending > snapshot.unwrap_or(0) {
            self.compact_locked()?;
        }
        Ok(())
    }

    /// Merges the append log into the snapshot now (at the end of a run).
    pub fn compact(&self) -> Result<(), String> {
        let append = self
            .existing()
            .ok()
            .flatten()
            .and_then(|dir| dir.len(&self.append));
        if append.unwrap_or(0) <= HEADER_LEN as u64 {
            // Nothing recorded since the last compaction.
            return Ok(());
        }
        let _lock = self
            .lock(true)
            .map_err(|error| failed(&self.path(&self.lock), error))?;
        self.compact_locked()
    }

    fn compact_locked(&self) -> Result<(), String> {
        let mut log = self.load_snapshot()?.unwrap_or_default();
        let bytes = self.read_append()?;
        let Some(id) = header_id(&bytes) else {
            return Ok(());
        };
        let deltas = records(&bytes, log.absorbed.as_ref(), &self.path(&self.append))?;
        if deltas.is_empty() && log.absorbed.as_ref().is_some_and(|held| held.id == id) {
            return Ok(());
        }
        log.absorb_all(deltas);
        log.absorbed = Some(Absorbed {
            id: id.to_string(),
            offset: bytes.len() as u64,
        });
        self.write_snapshot(&log)?;
        // The snapshot holds it all: the append log restarts (writers open it under the
        // lock, so none holds the removed file). A kill before this leaves a log the
        // snapshot holds to its end, which is as good.
        if let Some(dir) = self.dir.get() {
            let _ = dir.remove(&self.append);
        }
        Ok(())
    }

    /// The whole text of `name`; empty when it does not exist.
    fn read_all(&self, name: &str) -> Result<Option<Vec<u8>>, String> {
        let mut bytes = Vec::new();
        let opened = self.existing().and_then(|dir| match dir {
            Some(dir) => dir.open_file(name, Access::Read),
            None => Err(std::io::ErrorKind::NotFound.into()),
        });
        match opened {
            Ok(mut file) => file.read_to_end(&mut bytes).map(|_| Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
        .map_err(|error| {
            format!(
                "could not read change log `{}`: {error}",
                self.path(name).display()
            )
        })
    }

    fn read_append(&self) -> Result<Vec<u8>, String> {
        self.read_all(&self.append).map(Option::unwrap_or_default)
    }

    /// Reads the snapshot alone; `None` when it does not exist.
    pub fn load_snapshot(&self) -> Result<Option<ChangeLog>, String> {
        let Some(bytes) = self.read_all(&self.snapshot)? else {
            return Ok(None);
        };
        let shown = self.path(&self.snapshot);
        let text = String::from_utf8(bytes)
            .map_err(|error| format!("could not read change log `{}`: {error}", shown.display()))?;
        ChangeLog::parse(&text)
            .map(Some)
            .map_err(|error| format!("change log `{}` is not valid: {error}", shown.display()))
    }

    /// The snapshot merged with the records it does not hold; `None` when nothing was ever
    /// recorded.
    pub fn read(&self) -> Result<Option<ChangeLog>, String> {
        let Ok(Some(dir)) = self.existing() else {
            return Ok(None);
        };
        if !dir.exists(&self.snapshot) && !dir.exists(&self.append) {
            return Ok(None);
        }
        let _lock = self.lock(false).ok();
        let snapshot = self.load_snapshot()?;
        let pending = self.read_pending(snapshot.as_ref())?;
        if snapshot.is_none() && pending.is_empty() {
            return Ok(None);
        }
        let mut log = snapshot.unwrap_or_default();
        log.absorb_all(pending);
        Ok(Some(log))
    }

    /// The records of the append log that `snapshot` does not hold (under a held lock).
    pub fn read_pending(&self, snapshot: Option<&ChangeLog>) -> Result<Vec<Entry>, String> {
        let bytes = self.read_append()?;
        records(
            &bytes,
            snapshot.and_then(|snapshot| snapshot.absorbed.as_ref()),
            &self.path(&self.append),
        )
    }

    /// Writes a snapshot atomically (a fresh 0600 file, synced, renamed over the old one).
    pub fn write_snapshot(&self, log: &ChangeLog) -> Result<(), String> {
        let text = serde_json::to_string_pretty(&log.to_json()).unwrap_or_default();
        self.dir()
            .and_then(|dir| dir.replace(&self.snapshot, text.as_bytes()))
            .map_err(|error| failed(&self.path(&self.snapshot), error))
    }
}
