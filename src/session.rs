//! Session files under `<work dir>/.fuseraft/sessions/`, readable only by the user (0600).
//!
//! - `<id>.messages.jsonl`, the session log: append-only, opened once and kept open for the
//!   whole run ([`SessionLog`]). Every checkpoint (after every turn) appends, in one
//!   `write(2)`, the history messages added since the last one (one JSON object a line) and
//!   one state record `{"Checkpoint": {...}}`: the run's state, whose `MessageCount` says how
//!   many message lines precede it. A message line never has a top-level `Checkpoint` key.
//! - `<id>.json`, a snapshot of the newest state, rewritten atomically (temp file, fsync,
//!   rename, fsync of the directory) at session start, at most every
//!   [`SNAPSHOT_INTERVAL`], at the end and on cancel. `fuseraft sessions list` reads only it.
//!   The log is fdatasynced before every snapshot, so a snapshot never claims messages the log
//!   could lose.
//!
//! Loading takes the newest complete state: the last state record of the log (reading stops at
//! the first line that is torn or not JSON), or the snapshot when the log has no newer record
//! (sessions written before state records: a log of message lines only, and the snapshot's
//! `MessageCount`). The lines after that state are the remainder of a turn a crash
//! interrupted: ignored, and cut off on resume so the resumed run appends after the right line.
//!
//! Durability. A checkpoint is in the kernel (written) before the next turn starts, and the
//! page cache survives a killed fuseraft, so `--resume` after a SIGKILL at any moment repeats
//! and loses no turn. Against a power loss or an OS crash the log is fdatasynced at the end
//! of a turn when the last sync is [`SYNC_INTERVAL`] (100 ms) old or more (group commit),
//! and always at the end of the session and on cancel. With real models every turn takes
//! longer than that, so every turn is synced; a fast (replay) run syncs once per 100 ms. What
//! a power loss can cost is the turns that ended less than 100 ms after the last sync (they
//! wait for the next turn's end, or the session's, to be synced): `--resume` then continues
//! from the last synced state and redoes them.
//!
//! The log holds every message whole; the run's history keeps at most `MAX_MESSAGE_CHARS` of
//! each (issue 7, `Machine::bound_history`), and a resumed run bounds what it loads.
//!
//! A write that fails (a full disk, a file-size limit, a read-only directory) is undone (the
//! log is cut back to its last whole checkpoint) and ends the saving: [`SessionLog`] reports
//! that one error and ignores later checkpoints, so the run goes on, resumable from the last
//! checkpoint written whole.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fuseraft_vm::driver::Checkpoint;
use serde_json::Value as Json;

pub const DIR: &str = ".fuseraft/sessions";

/// The longest a written checkpoint waits for its fdatasync (group commit).
pub const SYNC_INTERVAL: Duration = Duration::from_millis(100);

/// How often `<id>.json` is rewritten during a run, at most.
pub const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(2);

macro_rules! record_key {
    () => {
        "Checkpoint"
    };
}

/// The key of a state record line of the log.
const RECORD_KEY: &str = record_key!();

/// What opens a state record line; `}\n` closes it.
const RECORD_OPEN: &[u8] = concat!("{\"", record_key!(), "\":").as_bytes();

/// Session ids are eight lowercase hex digits; anything else never becomes a path.
pub fn valid_id(id: &str) -> bool {
    id.len() == 8
        && id
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

pub fn path(work_dir: &Path, id: &str) -> PathBuf {
    work_dir.join(DIR).join(format!("{id}.json"))
}

pub fn messages_path(work_dir: &Path, id: &str) -> PathBuf {
    work_dir.join(DIR).join(format!("{id}.messages.jsonl"))
}

fn private_file(path: &Path, append: bool) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// The session log of a running session, open for the whole run (see the module doc).
/// Nothing touches the disk before the first checkpoint.
pub struct SessionLog {
    work_dir: PathBuf,
    id: String,
    file: Option<File>,
    /// The bytes of the log up to its last whole checkpoint.
    len: u64,
    /// A checkpoint's bytes, reused from turn to turn.
    buffer: Vec<u8>,
    /// The newest state written to the log (its JSON text): what the next snapshot holds.
    state: Vec<u8>,
    /// Bytes were written since the last fdatasync.
    unsynced: bool,
    last_sync: Instant,
    /// When `<id>.json` was last written; `None` before the first time.
    last_snapshot: Option<Instant>,
    /// A write failed: the log was cut back and nothing more is written.
    failed: bool,
}

impl SessionLog {
    pub fn new(work_dir: &Path, id: &str) -> SessionLog {
        SessionLog {
            work_dir: work_dir.to_path_buf(),
            id: id.to_string(),
            file: None,
            len: 0,
            buffer: Vec::new(),
            state: Vec::new(),
            unsynced: false,
            last_sync: Instant::now(),
            last_snapshot: None,
            failed: false,
        }
    }

    /// Whether `<id>.json` exists (written by this run or the one it resumes), so that
    /// `--resume` can continue the session.
    pub fn resumable(&self) -> bool {
        self.last_snapshot.is_some() || path(&self.work_dir, &self.id).exists()
    }

    /// Appends a checkpoint: its new messages and its state with the `extra` keys (which
    /// must be new) after the state's own. Returns the first error only: after it the log
    /// ends with its last whole checkpoint and later checkpoints are ignored.
    pub fn append(
        &mut self,
        checkpoint: &Checkpoint<'_>,
        extra: &[(&str, &Json)],
    ) -> std::io::Result<()> {
        if self.failed {
            return Ok(());
        }
        self.buffer.clear();
        let buffer = &mut self.buffer;
        let state = checkpoint.write_messages(buffer).and_then(|()| {
            buffer.extend_from_slice(RECORD_OPEN);
            let start = buffer.len();
            checkpoint.write_state(extra, buffer)?;
            Ok(start..buffer.len())
        });
        let result = state
            .map_err(std::io::Error::from)
            .and_then(|state| self.write_record(state));
        self.fail_on(result)
    }

    /// Ends the session: the log is synced and `<id>.json` written. After a failed write, the
    /// snapshot of the last whole checkpoint is still tried (quietly), so that `fuseraft
    /// sessions list` shows where `--resume` would continue.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if self.failed {
            let _ = self.snapshot();
            return Ok(());
        }
        let result = self.snapshot();
        self.fail_on(result)
    }

    /// Ends a cancelled session: its last state, marked `Cancelled` at `updated_at`, is
    /// appended and the session finished.
    pub fn cancel(&mut self, updated_at: Json) -> std::io::Result<()> {
        let mut appended = Ok(());
        if !self.failed && !self.state.is_empty() {
            let result = serde_json::from_slice::<Json>(&self.state)
                .and_then(|mut state| {
                    state["Cancelled"] = Json::Bool(true);
                    state["LastUpdatedAt"] = updated_at;
                    self.buffer.clear();
                    self.buffer.extend_from_slice(RECORD_OPEN);
                    let start = self.buffer.len();
                    serde_json::to_writer(&mut self.buffer, &state)?;
                    Ok(start..self.buffer.len())
                })
                .map_err(std::io::Error::from)
                .and_then(|state| self.write_record(state));
            appended = self.fail_on(result);
        }
        let finished = self.finish();
        appended.and(finished)
    }

    /// Closes the record in the buffer (its state at `state`) and writes the buffer in one
    /// write; then syncs or snapshots as due.
    fn write_record(&mut self, state: std::ops::Range<usize>) -> std::io::Result<()> {
        self.buffer.extend_from_slice(b"}\n");
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                std::fs::create_dir_all(self.work_dir.join(DIR))?;
                let file = private_file(&messages_path(&self.work_dir, &self.id), true)?;
                self.len = file.metadata()?.len();
                self.file.insert(file)
            }
        };
        if let Err(error) = file.write_all(&self.buffer) {
            // A partial write is undone so the log still ends with a whole checkpoint.
            let _ = file.set_len(self.len);
            return Err(error);
        }
        self.len += self.buffer.len() as u64;
        self.unsynced = true;
        self.state.clear();
        self.state.extend_from_slice(&self.buffer[state]);
        if self.buffer.capacity() > 1 << 20 {
            // Do not keep a megabyte reply's worth of buffer for the rest of the run.
            self.buffer = Vec::new();
        }
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

    fn sync(&mut self) -> std::io::Result<()> {
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
        let state: Json = serde_json::from_slice(&self.state)?;
        save(&self.work_dir, &self.id, &state)?;
        self.last_snapshot = Some(Instant::now());
        Ok(())
    }

    fn fail_on(&mut self, result: std::io::Result<()>) -> std::io::Result<()> {
        if result.is_err() {
            self.failed = true;
            if self.len == 0 && self.last_snapshot.is_none() {
                // Nothing was saved: leave no empty log behind.
                let _ = std::fs::remove_file(messages_path(&self.work_dir, &self.id));
            }
        }
        result
    }
}

/// Writes the session's state file, atomically.
fn save(work_dir: &Path, id: &str, checkpoint: &Json) -> std::io::Result<()> {
    let dir = work_dir.join(DIR);
    std::fs::create_dir_all(&dir)?;
    let target = path(work_dir, id);
    let temp = dir.join(format!(".{id}.json.tmp"));
    let text = serde_json::to_string_pretty(checkpoint).map_err(std::io::Error::other)?;
    let written = private_file(&temp, false).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        file.sync_all()
    });
    if let Err(error) = written.and_then(|_| std::fs::rename(&temp, &target)) {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    if let Ok(dir) = File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Reads a session's whole checkpoint: its newest complete state (see the module doc) with
/// `Messages` from the log. Errors say what is wrong in words a user can act on.
pub fn load(work_dir: &Path, id: &str) -> Result<Json, String> {
    load_with(work_dir, id, false)
}

/// [`load`] for a run that will continue the session: the log is cut after the state loaded,
/// dropping the remainder of an interrupted turn, so the resumed run appends after it.
pub fn load_for_resume(work_dir: &Path, id: &str) -> Result<Json, String> {
    load_with(work_dir, id, true)
}

fn message_count(state: &Json) -> usize {
    state
        .get("MessageCount")
        .and_then(Json::as_u64)
        .map_or(0, |count| usize::try_from(count).unwrap_or(usize::MAX))
}

/// What a session log holds, read up to its first torn or damaged line.
struct Log {
    messages: Vec<Json>,
    /// The byte offset after each message line.
    message_ends: Vec<usize>,
    /// The last state record and the byte offset after it.
    record: Option<(Json, usize)>,
    /// Where reading stopped before the end, and why.
    damage: Option<String>,
}

fn read_log(bytes: &[u8]) -> Log {
    let mut log = Log {
        messages: Vec::new(),
        message_ends: Vec::new(),
        record: None,
        damage: None,
    };
    let mut start = 0;
    for (number, line) in bytes.split_inclusive(|byte| *byte == b'\n').enumerate() {
        let end = start + line.len();
        let Some(text) = line.strip_suffix(b"\n") else {
            log.damage = Some(format!("line {} is cut off", number + 1));
            break;
        };
        match serde_json::from_slice::<Json>(text) {
            Ok(Json::Object(mut object))
                if object.len() == 1 && object.contains_key(RECORD_KEY) =>
            {
                let state = object.remove(RECORD_KEY).unwrap_or_default();
                if message_count(&state) != log.messages.len() {
                    log.damage = Some(format!(
                        "the state at line {} counts {} messages where {} precede it",
                        number + 1,
                        message_count(&state),
                        log.messages.len()
                    ));
                    break;
                }
                log.record = Some((state, end));
            }
            Ok(message @ Json::Object(_)) => {
                log.messages.push(message);
                log.message_ends.push(end);
            }
            Ok(_) => {
                log.damage = Some(format!("line {} is not a JSON object", number + 1));
                break;
            }
            Err(error) => {
                log.damage = Some(format!("line {}: {error}", number + 1));
                break;
            }
        }
        start = end;
    }
    log
}

fn load_with(work_dir: &Path, id: &str, repair: bool) -> Result<Json, String> {
    let snapshot = load_state(work_dir, id)?;
    let log_path = messages_path(work_dir, id);
    let bytes = std::fs::read(&log_path).map_err(|error| {
        format!(
            "cannot read the session's messages `{}`: {error}",
            log_path.display()
        )
    })?;
    let log = read_log(&bytes);
    let (mut state, end) = match log.record {
        Some((record, end)) if message_count(&record) >= message_count(&snapshot) => (record, end),
        _ => {
            // The snapshot is the newest state: a session written before state records.
            let count = message_count(&snapshot);
            if log.messages.len() < count {
                return Err(format!(
                    "session log `{}` holds {} of the session's {count} messages{}",
                    log_path.display(),
                    log.messages.len(),
                    log.damage
                        .map(|damage| format!(" (it is damaged: {damage})"))
                        .unwrap_or_default()
                ));
            }
            let end = count
                .checked_sub(1)
                .map_or(0, |last| log.message_ends[last]);
            (snapshot, end)
        }
    };
    let mut messages = log.messages;
    messages.truncate(message_count(&state));
    if repair && end < bytes.len() {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&log_path)
            .map_err(|error| format!("cannot repair `{}`: {error}", log_path.display()))?;
        file.set_len(end as u64)
            .and_then(|_| file.sync_all())
            .map_err(|error| format!("cannot repair `{}`: {error}", log_path.display()))?;
    }
    state["Messages"] = Json::Array(messages);
    Ok(state)
}

/// Reads a session's state file only.
fn load_state(work_dir: &Path, id: &str) -> Result<Json, String> {
    if !valid_id(id) {
        return Err(format!(
            "`{id}` is not a session id (eight hex digits, as `fuseraft sessions list` shows)"
        ));
    }
    let file = path(work_dir, id);
    let text = std::fs::read_to_string(&file).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => format!(
            "no session `{id}` in `{}` (is `--work-dir` the one the session ran in?)",
            work_dir.join(DIR).display()
        ),
        _ => format!("cannot read `{}`: {error}", file.display()),
    })?;
    serde_json::from_str(&text)
        .map_err(|error| format!("session file `{}` is damaged: {error}", file.display()))
}

/// One line of `fuseraft sessions list`.
pub struct Listed {
    pub id: String,
    pub updated: String,
    pub status: String,
    pub turns: u64,
    pub task: String,
}

pub fn list(work_dir: &Path) -> Vec<Listed> {
    let Ok(entries) = std::fs::read_dir(work_dir.join(DIR)) else {
        return Vec::new();
    };
    let mut listed: Vec<Listed> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().to_string();
            let id = name.strip_suffix(".json")?.to_string();
            if !valid_id(&id) {
                return None;
            }
            let json: Json =
                serde_json::from_str(&std::fs::read_to_string(entry.path()).ok()?).ok()?;
            let machine = json.get("Machine").cloned().unwrap_or(Json::Null);
            let outcome = machine.get("Outcome").and_then(Json::as_str);
            let status = match outcome {
                Some("completed") => "completed".to_string(),
                Some(outcome) => format!("{outcome} (resumable)"),
                None if json.get("Cancelled").and_then(Json::as_bool) == Some(true) => {
                    "cancelled (resumable)".to_string()
                }
                None => "resumable".to_string(),
            };
            Some(Listed {
                id,
                updated: json
                    .get("LastUpdatedAt")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string(),
                status,
                turns: machine.get("Turn").and_then(Json::as_u64).unwrap_or(0),
                task: json
                    .get("Task")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string(),
            })
        })
        .collect();
    listed.sort_by(|a, b| b.updated.cmp(&a.updated).then(a.id.cmp(&b.id)));
    listed
}
