//! Session files under `<work dir>/.fuseraft/sessions/`, readable only by the user (0600).
//!
//! - `<id>.messages.jsonl`, the session log: append-only, opened once and kept open for the
//!   whole run by the log's writer thread ([`SessionLog`]; the caller serializes each
//!   checkpoint's state, the thread its messages, MAC, writes, syncs and snapshots). Every
//!   checkpoint (after every turn) appends, in one `write(2)` (or with the redoable ones held
//!   before it, below), the history messages added since the last one (one JSON object a
//!   line) and one state record `{"Checkpoint": {...}, "Mac": "..."}`: the run's state, whose
//!   `MessageCount` says how many message lines precede it, and the HMAC-SHA256 that
//!   authenticates the record and the message lines before it ([`load`]). A message line
//!   never starts with the `Checkpoint` key.
//! - `<id>.json`, a snapshot of the newest state with its own `Mac`, rewritten atomically
//!   (temp file, fsync, rename, fsync of the directory) at session start, at most every
//!   [`SNAPSHOT_INTERVAL`], at the end and on cancel. `fuseraft sessions list` reads only it.
//!   The log is fdatasynced before every snapshot, so a snapshot never claims messages the log
//!   could lose.
//! - `<id>.config.fir`, the normalized program the session ran ([`config`]), and `<id>.lock`
//!   while a run holds the session ([`lock`]).
//!
//! Loading takes the newest complete state: the last state record of the log (reading stops at
//! the first line that is torn or not JSON), or the snapshot for sessions written before state
//! records. The lines after that state are the remainder of a turn a crash interrupted:
//! ignored, and cut off on resume so the resumed run appends after the right line. A record
//! whose MAC fails, or a log that ends before the snapshot's state, is an alteration: loading
//! refuses (`docs/security.md`, "Sessions and the change log").
//!
//! Durability. A checkpoint is in the kernel (written) before the next turn starts, and the
//! page cache survives a killed fuseraft, so `--resume` after a SIGKILL at any moment repeats
//! and loses no turn. One exception keeps fast replayed runs from paying a `write(2)` a turn:
//! a checkpoint whose turns are *redoable* (`driver::Checkpoint::redoable`: only replayed
//! model replies and context reads since the last one, no tool call, validator, approval,
//! fork or operator message) is not waited for, and may be held in memory until 64 KiB of
//! them have gathered or the oldest is 50 ms old; it is written at the latest with the next
//! checkpoint that is not redoable (which the run waits for), at the end, on cancel and
//! before a snapshot. A SIGKILL can lose those held turns only, and
//! `--resume` redoes them with the same replies and no effect outside the process, so the
//! resumed run ends as the uninterrupted one would (`tests/kill.rs`). The first checkpoint is
//! never held: the session exists from its start. Against a power loss or an OS crash the
//! log is fdatasynced at the end
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
use std::path::{Path, PathBuf};
use std::time::Duration;

use fuseraft_vm::state_dir::{Access, DirError, StateDir};
use serde_json::Value as Json;

pub mod config;
mod fields;
pub mod fork;
pub mod key;
mod load;
pub mod lock;
mod log;
mod log_file;
mod store;

pub use fields::SessionFields;
pub use key::Key;
pub use load::{load, load_for_resume, Loaded, Trust};
pub use log::SessionLog;
pub use store::Store;

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

/// What opens a state record line.
const RECORD_OPEN: &[u8] = concat!("{\"", record_key!(), "\":").as_bytes();

/// What follows a record's state: `,"Mac":"<64 hex digits>"}` and the newline.
const MAC_OPEN: &[u8] = b",\"Mac\":\"";
const MAC_CLOSE: &[u8] = b"\"}\n";
const MAC_SUFFIX_LEN: usize = MAC_OPEN.len() + 2 * key::MAC_LEN + MAC_CLOSE.len();

/// The key of a snapshot's MAC.
const SNAPSHOT_MAC_KEY: &str = "Mac";

/// What a record's MAC covers besides its bytes (domain separation from snapshots).
const LOG_DOMAIN: &[u8] = b"fuseraft session log record v1";
const SNAPSHOT_DOMAIN: &[u8] = b"fuseraft session snapshot v1";

/// Where a resumed log continues: the MAC of its last record (zeros when it has none with a
/// MAC), and the bytes after that record the first new record's MAC must also cover (the
/// messages of an unverified session loaded from its snapshot; usually none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    pub tag: key::Tag,
    pub carry: Vec<u8>,
}

/// A new session id: eight hex digits from the time and the process id, mixed.
pub fn new_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    let mixed = mixed.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    format!("{:08x}", (mixed >> 32) as u32)
}

/// Session ids are eight lowercase hex digits; anything else never becomes a path.
pub fn valid_id(id: &str) -> bool {
    id.len() == 8
        && id
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// The message for a string that is not a session id.
pub fn invalid_id(id: &str) -> String {
    format!(
        "`{}` is not a session id (eight lowercase hex digits, as `fuseraft sessions list` shows)",
        id.escape_default()
    )
}

pub fn path(work_dir: &Path, id: &str) -> PathBuf {
    work_dir.join(DIR).join(format!("{id}.json"))
}

pub fn messages_path(work_dir: &Path, id: &str) -> PathBuf {
    work_dir.join(DIR).join(format!("{id}.messages.jsonl"))
}

/// The session directory of `work_dir`, opened without following a link at any component
/// (`fuseraft_vm::state_dir`) and made (0700) when missing.
pub fn dir(work_dir: &Path) -> Result<StateDir, DirError> {
    StateDir::open(work_dir, Path::new(DIR))
}

/// [`dir`] when it exists; a reader makes nothing.
pub fn existing_dir(work_dir: &Path) -> Result<Option<StateDir>, DirError> {
    StateDir::find(work_dir, Path::new(DIR))
}

/// A directory that could not be opened, as an I/O error carrying its message.
pub(crate) fn dir_error(error: DirError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, error.message)
}

/// Opens a file readable and writable by its owner only (0600 on creation).
pub(crate) fn private_file(path: &Path, append: bool) -> std::io::Result<File> {
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

/// The MAC of a snapshot's state (its compact JSON text, without its `Mac`).
fn snapshot_mac(key: &Key, id: &str, state: &Json) -> key::Tag {
    let text = serde_json::to_vec(state).unwrap_or_default();
    key.mac(&[SNAPSHOT_DOMAIN, id.as_bytes(), &text])
}

/// Whether a snapshot is authentic: `Some(true)` verified, `Some(false)` altered, `None`
/// without a MAC or without a key to check it. Its `Mac` is removed.
fn verify_snapshot(key: Option<&Key>, id: &str, state: &mut Json) -> Option<bool> {
    let tag = state
        .as_object_mut()
        .and_then(|object| object.remove(SNAPSHOT_MAC_KEY))?;
    let key = key?;
    let text = serde_json::to_vec(state).unwrap_or_default();
    Some(
        tag.as_str()
            .and_then(key::tag_from_hex)
            .is_some_and(|tag| key.verify(&[SNAPSHOT_DOMAIN, id.as_bytes(), &text], &tag)),
    )
}

/// One line of `fuseraft sessions list`.
pub struct Listed {
    pub id: String,
    pub updated: String,
    pub status: String,
    pub turns: u64,
    pub task: String,
    /// Ended `completed` and not altered: nothing can resume it.
    pub completed: bool,
    /// The newest modification time of its snapshot and log: when a run last wrote to it.
    pub last_activity: Option<std::time::SystemTime>,
    /// The session and turn it was forked from (`exec --from-turn`).
    pub forked_from: Option<(String, u64)>,
}

/// The newest modification time among `names` in `dir`.
fn last_written(dir: &StateDir, names: &[String]) -> Option<std::time::SystemTime> {
    names
        .iter()
        .filter_map(|name| dir.open_file(name, Access::Read).ok())
        .filter_map(|file| file.metadata().and_then(|meta| meta.modified()).ok())
        .max()
}

/// The sessions of `work_dir`, newest first. With a key, a snapshot that fails to verify is
/// listed `altered` and one without a MAC `unverified`.
pub fn list(work_dir: &Path, key: Option<&Key>) -> Vec<Listed> {
    let Ok(Some(dir)) = existing_dir(work_dir) else {
        return Vec::new();
    };
    let Ok(names) = dir.names() else {
        return Vec::new();
    };
    let mut listed: Vec<Listed> = names
        .into_iter()
        .filter_map(|name| {
            let id = name.strip_suffix(".json")?.to_string();
            if !valid_id(&id) {
                return None;
            }
            let mut text = String::new();
            let mut file = dir.open_file(&name, Access::Read).ok()?;
            std::io::Read::read_to_string(&mut file, &mut text).ok()?;
            let mut json: Json = serde_json::from_str(&text).ok()?;
            let verified = verify_snapshot(key, &id, &mut json);
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
            let status = match verified {
                Some(true) => status,
                Some(false) => "altered (not resumable)".to_string(),
                None if key.is_some() => format!("{status}, unverified"),
                None => status,
            };
            let completed = outcome == Some("completed") && verified != Some(false);
            let last_activity = last_written(&dir, &[name.clone(), format!("{id}.messages.jsonl")]);
            Some(Listed {
                completed,
                last_activity,
                forked_from: fork::forked_from(&json),
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
