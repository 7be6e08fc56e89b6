//! The session log's file: [`LogFile`] appends checkpoint records with their MACs, holds
//! redoable ones for a moment, syncs, and writes the atomic `<id>.json` snapshot (see the
//! module doc of [`super`]). It runs on the log's writer thread ([`super::log`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuseraft_vm::history::Message;
use fuseraft_vm::state_dir::{Access, StateDir};
use serde_json::Value as Json;

use super::key::{self, Key, Tag};
use super::Chain;
use super::{
    snapshot_mac, LOG_DOMAIN, MAC_CLOSE, MAC_OPEN, RECORD_OPEN, SNAPSHOT_INTERVAL,
    SNAPSHOT_MAC_KEY, SYNC_INTERVAL,
};

/// The most bytes of redoable checkpoints held before they are written.
const HOLD_BYTES: usize = 64 * 1024;

/// The longest a redoable checkpoint is held.
pub(super) const HOLD_INTERVAL: Duration = Duration::from_millis(50);

/// The session log of a running session, open for the whole run (see the module doc).
/// Nothing touches the disk before the first checkpoint.
pub(super) struct LogFile {
    work_dir: PathBuf,
    /// The session directory, opened at the first write (once for the run, no link
    /// followed: `super::dir`).
    dir: Option<StateDir>,
    id: String,
    file: Option<File>,
    /// The bytes of the log up to its last whole checkpoint.
    len: u64,
    /// Checkpoints not written yet (held redoable ones, then the one being made); reused
    /// from write to write.
    buffer: Vec<u8>,
    /// When the oldest held checkpoint was made; `None` when none is held.
    held_since: Option<Instant>,
    /// The newest state written to the log (its JSON text): what the next snapshot holds.
    state: Vec<u8>,
    /// The state of the newest checkpoint in the buffer, not written yet.
    newest: Vec<u8>,
    /// Bytes were written since the last fdatasync.
    unsynced: bool,
    last_sync: Instant,
    /// When `<id>.json` was last written; `None` before the first time.
    last_snapshot: Option<Instant>,
    /// A write failed: the log was cut back and nothing more is written.
    failed: bool,
    /// The key that authenticates records and snapshots; without one they are written
    /// without MACs (and resuming them needs `--allow-unverified`).
    key: Option<Arc<Key>>,
    /// The MAC of the last record written (or loaded): the next record's chains to it.
    chain: Tag,
    /// Bytes already in the log that the next record's MAC covers too (see [`Chain`]).
    carry: Vec<u8>,
}

impl LogFile {
    /// A log for session `id`, continuing after `chain` (the MAC of the last record of the
    /// log already on disk: [`super::Loaded::chain`]; zeros for a new session).
    pub(super) fn new(work_dir: &Path, id: &str, key: Option<Arc<Key>>, chain: Chain) -> LogFile {
        LogFile {
            work_dir: work_dir.to_path_buf(),
            dir: None,
            id: id.to_string(),
            file: None,
            len: 0,
            buffer: Vec::new(),
            held_since: None,
            state: Vec::new(),
            newest: Vec::new(),
            unsynced: false,
            last_sync: Instant::now(),
            last_snapshot: None,
            failed: false,
            key,
            chain: chain.tag,
            carry: chain.carry,
        }
    }

    /// Whether `<id>.json` exists (written by this run or the one it resumes), so that
    /// `--resume` can continue the session.
    pub(super) fn resumable(&self) -> bool {
        self.last_snapshot.is_some()
            || super::existing_dir(&self.work_dir)
                .ok()
                .flatten()
                .is_some_and(|dir| dir.exists(&format!("{}.json", self.id)))
    }

    /// The session directory, opened now if it was not.
    fn dir(&mut self) -> std::io::Result<StateDir> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let dir = super::dir(&self.work_dir).map_err(super::dir_error)?;
        Ok(self.dir.insert(dir).clone())
    }

    /// Appends a checkpoint: its new `messages` and its `state` (the state record's JSON
    /// object). Returns the first error only: after it the log ends with its last whole
    /// checkpoint and later checkpoints are ignored.
    pub(super) fn append(
        &mut self,
        messages: &[Message],
        state: &[u8],
        redoable: bool,
    ) -> std::io::Result<()> {
        if self.failed {
            return Ok(());
        }
        let record = self.buffer.len();
        let written = fuseraft_vm::checkpoint::write_message_lines(messages, &mut self.buffer);
        let result = match written {
            Ok(()) => {
                self.buffer.extend_from_slice(RECORD_OPEN);
                let start = self.buffer.len();
                self.buffer.extend_from_slice(state);
                self.write_record(record, start..self.buffer.len(), redoable)
            }
            Err(error) => {
                // The held checkpoints before this one are whole: they are kept.
                self.buffer.truncate(record);
                let _ = self.write_held();
                Err(error.into())
            }
        };
        self.fail_on(result)
    }

    /// Ends the saving after an error the caller met: the held checkpoints are written,
    /// later ones ignored.
    pub(super) fn stop(&mut self) {
        if !self.failed {
            let _ = self.write_held();
            self.failed = true;
        }
    }

    /// Whether a write failed (the log ignores later checkpoints).
    pub(super) fn failed(&self) -> bool {
        self.failed
    }

    /// When the oldest held checkpoint must be written at the latest; `None` when none is.
    pub(super) fn due(&self) -> Option<Instant> {
        self.held_since.map(|since| since + HOLD_INTERVAL)
    }

    /// Writes the held checkpoints (their time is up), then syncs or snapshots as due.
    pub(super) fn write_due(&mut self) -> std::io::Result<()> {
        if self.failed {
            return Ok(());
        }
        let result = self.write_held().and_then(|()| self.sync_or_snapshot());
        self.fail_on(result)
    }

    /// Ends the session: the log is synced and `<id>.json` written. After a failed write, the
    /// snapshot of the last whole checkpoint is still tried (quietly), so that `fuseraft
    /// sessions list` shows where `--resume` would continue.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        if self.failed {
            let _ = self.snapshot();
            return Ok(());
        }
        let result = self.snapshot();
        self.fail_on(result)
    }

    /// Ends a cancelled session: its last state, marked `Cancelled` at `updated_at`, is
    /// appended and the session finished.
    pub(super) fn cancel(&mut self, updated_at: Json) -> std::io::Result<()> {
        let held = self.write_held();
        let mut appended = self.fail_on(held);
        if !self.failed && !self.state.is_empty() {
            let result = serde_json::from_slice::<Json>(&self.state)
                .and_then(|mut state| {
                    state["Cancelled"] = Json::Bool(true);
                    state["LastUpdatedAt"] = updated_at;
                    let record = self.buffer.len();
                    self.buffer.extend_from_slice(RECORD_OPEN);
                    let start = self.buffer.len();
                    serde_json::to_writer(&mut self.buffer, &state)?;
                    Ok((record, start..self.buffer.len()))
                })
                .map_err(std::io::Error::from)
                .and_then(|(record, state)| self.write_record(record, state, false));
            appended = self.fail_on(result);
        }
        let finished = self.finish();
        appended.and(finished)
    }

    /// Closes the record that starts at `record` in the buffer (its state at `state`) with
    /// its MAC, which covers the record (the messages and the state since the last record)
    /// and the previous record's MAC. A `redoable` record may be held in the buffer (see
    /// [`HOLD_BYTES`]); otherwise the buffer is written in one write, then synced or
    /// snapshotted as due.
    fn write_record(
        &mut self,
        record: usize,
        state: std::ops::Range<usize>,
        redoable: bool,
    ) -> std::io::Result<()> {
        let tag = match &self.key {
            Some(key) => {
                let bytes = &self.buffer[record..];
                let tag = if self.carry.is_empty() {
                    key.mac(&[LOG_DOMAIN, self.id.as_bytes(), &self.chain, bytes])
                } else {
                    let mut covered = std::mem::take(&mut self.carry);
                    covered.extend_from_slice(bytes);
                    key.mac(&[LOG_DOMAIN, self.id.as_bytes(), &self.chain, &covered])
                };
                self.buffer.extend_from_slice(MAC_OPEN);
                self.buffer.extend_from_slice(key::to_hex(&tag).as_bytes());
                self.buffer.extend_from_slice(MAC_CLOSE);
                tag
            }
            None => {
                self.buffer.extend_from_slice(b"}\n");
                [0; key::MAC_LEN]
            }
        };
        self.chain = tag;
        self.newest.clear();
        self.newest.extend_from_slice(&self.buffer[state]);
        let held_since = *self.held_since.get_or_insert_with(Instant::now);
        // The first checkpoint is written at once: the session exists from its start.
        if redoable
            && self.last_snapshot.is_some()
            && self.buffer.len() < HOLD_BYTES
            && held_since.elapsed() < HOLD_INTERVAL
        {
            return Ok(());
        }
        self.write_held()?;
        self.sync_or_snapshot()
    }

    /// Writes `<id>.json` when the last one is [`SNAPSHOT_INTERVAL`] old, else syncs the log
    /// when the last sync is [`SYNC_INTERVAL`] old.
    fn sync_or_snapshot(&mut self) -> std::io::Result<()> {
        if self
            .last_snapshot
            .is_none_or(|at| at.elapsed() >= SNAPSHOT_INTERVAL)
        {
            self.snapshot()
        } else if self.last_sync.elapsed() >= SYNC_INTERVAL {
            self.sync()
        } else {
            Ok(())
        }
    }

    /// Writes the checkpoints in the buffer in one write.
    fn write_held(&mut self) -> std::io::Result<()> {
        self.held_since = None;
        if self.buffer.is_empty() {
            return Ok(());
        }
        if self.file.is_none() {
            let name = format!("{}.messages.jsonl", self.id);
            let file = self.dir()?.open_file(&name, Access::Append)?;
            self.len = file.metadata()?.len();
            self.file = Some(file);
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        if let Err(error) = file.write_all(&self.buffer) {
            // A partial write is undone so the log still ends with a whole checkpoint.
            let _ = file.set_len(self.len);
            return Err(error);
        }
        self.len += self.buffer.len() as u64;
        self.unsynced = true;
        self.buffer.clear();
        std::mem::swap(&mut self.state, &mut self.newest);
        self.newest.clear();
        if self.buffer.capacity() > 1 << 20 {
            // Do not keep a megabyte reply's worth of buffer for the rest of the run.
            self.buffer = Vec::new();
        }
        Ok(())
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.write_held()?;
        if self.unsynced {
            if let Some(file) = &self.file {
                file.sync_data()?;
            }
            self.unsynced = false;
        }
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Writes `<id>.json` from the newest state, after syncing the log it must not outrun.
    fn snapshot(&mut self) -> std::io::Result<()> {
        if self.state.is_empty() {
            return Ok(());
        }
        self.sync()?;
        let mut state: Json = serde_json::from_slice(&self.state)?;
        if let Some(key) = &self.key {
            let tag = snapshot_mac(key, &self.id, &state);
            if let Some(object) = state.as_object_mut() {
                object.insert(
                    SNAPSHOT_MAC_KEY.to_string(),
                    Json::String(key::to_hex(&tag)),
                );
            }
        }
        save(&self.dir()?, &self.id, &state)?;
        self.last_snapshot = Some(Instant::now());
        Ok(())
    }

    fn fail_on(&mut self, result: std::io::Result<()>) -> std::io::Result<()> {
        if result.is_err() {
            self.failed = true;
            self.buffer = Vec::new();
            self.held_since = None;
            if self.len == 0 && self.last_snapshot.is_none() {
                // Nothing was saved: leave no empty log behind.
                if let Some(dir) = &self.dir {
                    let _ = dir.remove(&format!("{}.messages.jsonl", self.id));
                }
            }
        }
        result
    }
}

/// A log dropped without [`LogFile::finish`] or [`LogFile::cancel`] (an early return) still
/// writes the checkpoints it holds.
impl Drop for LogFile {
    fn drop(&mut self) {
        if !self.failed {
            let _ = self.write_held();
        }
    }
}

/// Writes the session's state file, atomically (a fresh file, synced, renamed over it, and
/// the directory synced).
fn save(dir: &StateDir, id: &str, checkpoint: &Json) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(checkpoint).map_err(std::io::Error::other)?;
    dir.replace(&format!("{id}.json"), text.as_bytes())?;
    dir.sync();
    Ok(())
}
