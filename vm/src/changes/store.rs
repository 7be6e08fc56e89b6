//! The change log on disk: linear to record, safe against a kill and a second process.
//!
//! Three files side by side (for the default `.fuseraft/state/changes.json`):
//!
//! - `changes.jsonl`, the append log: a header line `{"appendLog":"<16 hex digits>"}` naming
//!   this instance of the file, then one record per recorded tool call: an entry in the
//!   snapshot's shape holding only what that call added (a file written, a command run).
//!   A call appends its record in one write: bounded work, however long the log is.
//! - `changes.json`, the snapshot in upstream's shape, plus `"appendLog": {"id", "offset"}`:
//!   it holds the records of append log `id` up to byte `offset`. It is rewritten (merged
//!   from the append log, temp file and rename) when the append log has grown larger than
//!   it, so the rewrites cost a constant per recorded byte on average, and at the end of a
//!   run ([`compact`]); then the append log is removed, and restarts under a new id.
//! - `changes.lock`: every writer holds it exclusively (`flock`), every reader shared, so two
//!   runs in one work dir never lose each other's records and a reader never sees half a
//!   compaction.
//!
//! Readers merge the snapshot with the records it does not hold ([`read`]). A kill at any
//! point leaves a readable log: a torn record (no newline) is ignored and cut by the next
//! writer; a kill after a compaction's rename but before the append log restarts leaves an
//! append log the snapshot holds up to its end, so nothing is applied twice.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::{json, Value as Json};

pub use super::files::Files;
use super::{ChangeLog, Entry};

/// What of an append log a snapshot holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Absorbed {
    /// The append log's id (its header).
    pub id: String,
    /// The bytes of it the snapshot holds.
    pub offset: u64,
}

impl Absorbed {
    pub fn from_json(json: &Json) -> Option<Absorbed> {
        Some(Absorbed {
            id: json.get("id")?.as_str()?.to_string(),
            offset: json.get("offset")?.as_u64()?,
        })
    }

    pub fn to_json(&self) -> Json {
        json!({"id": self.id, "offset": self.offset})
    }
}

pub(super) const HEADER_OPEN: &[u8] = b"{\"appendLog\":\"";
pub(super) const HEADER_CLOSE: &[u8] = b"\"}\n";
const ID_LEN: usize = 16;
pub(super) const HEADER_LEN: usize = HEADER_OPEN.len() + ID_LEN + HEADER_CLOSE.len();

/// The append log beside the change log `path`.
pub fn append_log_path(path: &Path) -> PathBuf {
    sibling(path, "jsonl")
}

/// What no process fuseraft starts may write for the change log at `path`: its directory,
/// bound read-only, which covers the log, its append log and its lock. The files are never
/// named: each is replaced while the run goes on (a write exchanges the log, a compaction
/// makes the append log again), and a file held by its inode to be bound later may be gone
/// by then, which would fail a command of another branch for nothing.
pub fn protected_paths(path: &Path) -> [PathBuf; 1] {
    [path.parent().map(Path::to_path_buf).unwrap_or_default()]
}

/// The lock file beside the change log `path`.
pub fn lock_path(path: &Path) -> PathBuf {
    sibling(path, "lock")
}

pub(super) fn sibling(path: &Path, extension: &str) -> PathBuf {
    if path.extension().is_some_and(|own| own == extension) {
        let mut name = path.as_os_str().to_os_string();
        name.push(format!(".{extension}"));
        PathBuf::from(name)
    } else {
        path.with_extension(extension)
    }
}

/// A held lock of a change log, released when dropped.
pub struct Lock {
    pub(super) _file: File,
}

/// Takes the lock of the change log `path` (waiting for it), creating the lock file.
pub fn lock(path: &Path, exclusive: bool) -> std::io::Result<Lock> {
    match Files::at(path, false)? {
        Some(files) => files.lock(exclusive),
        None => Err(std::io::ErrorKind::NotFound.into()),
    }
}

pub(super) fn new_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

/// The id in a header, when `bytes` start with a whole one.
pub(super) fn header_id(bytes: &[u8]) -> Option<&str> {
    let header = bytes.get(..HEADER_LEN)?;
    let id = &header[HEADER_OPEN.len()..HEADER_OPEN.len() + ID_LEN];
    (header.starts_with(HEADER_OPEN)
        && header.ends_with(HEADER_CLOSE)
        && id.iter().all(u8::is_ascii_hexdigit))
    .then(|| std::str::from_utf8(id).ok())
    .flatten()
}

pub(super) fn failed(path: &Path, error: impl std::fmt::Display) -> String {
    format!("could not write `{}`: {error}", path.display())
}

/// Appends one record: what one tool call added to `(session, agent, turn)`'s entry.
pub fn record(path: &Path, delta: &Entry) -> Result<(), String> {
    let files = Files::at(path, true)
        .ok()
        .flatten()
        .ok_or_else(|| failed(path, "its directory cannot be made"))?;
    files.record(delta)
}

/// Makes the append log end with a whole record (cutting a torn one a killed writer left)
/// and start with a whole header (emptying it otherwise: no record follows a torn header);
/// returns its length. Reads at most one record's bytes.
pub(super) fn prepare(file: &mut File) -> std::io::Result<u64> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(0);
    }
    let mut header = [0u8; HEADER_LEN];
    let whole_header = read_exact_at(file, &mut header, 0).is_ok() && header_id(&header).is_some();
    if !whole_header {
        file.set_len(0)?;
        return Ok(0);
    }
    let mut last = [0u8; 1];
    read_exact_at(file, &mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(len);
    }
    // Back from the end to the last newline.
    let mut end = len;
    let mut chunk = [0u8; 4096];
    loop {
        let start = end
            .saturating_sub(chunk.len() as u64)
            .max(HEADER_LEN as u64 - 1);
        let size = (end - start) as usize;
        if size == 0 {
            break;
        }
        read_exact_at(file, &mut chunk[..size], start)?;
        if let Some(at) = chunk[..size].iter().rposition(|byte| *byte == b'\n') {
            let whole = start + at as u64 + 1;
            if whole < len {
                file.set_len(whole)?;
            }
            return Ok(whole);
        }
        end = start;
    }
    Ok(len)
}

/// Reads `buf.len()` bytes at `offset` (one `pread` where the platform has it, so the
/// append position is untouched and no seek is needed).
fn read_exact_at(file: &mut File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(buf)
    }
}

/// The records of an append log that a snapshot holding `absorbed` does not: whole lines
/// only (a torn last line is a record a kill interrupted).
pub(super) fn records(
    bytes: &[u8],
    absorbed: Option<&Absorbed>,
    append: &Path,
) -> Result<Vec<Entry>, String> {
    let Some(id) = header_id(bytes) else {
        return Ok(Vec::new());
    };
    let start = match absorbed {
        Some(absorbed) if absorbed.id == id => usize::try_from(absorbed.offset)
            .unwrap_or(usize::MAX)
            .max(HEADER_LEN),
        _ => HEADER_LEN,
    };
    let Some(rest) = bytes.get(start..) else {
        return Ok(Vec::new());
    };
    let mut deltas = Vec::new();
    for (number, line) in rest.split_inclusive(|byte| *byte == b'\n').enumerate() {
        let Some(text) = line.strip_suffix(b"\n") else {
            break;
        };
        match serde_json::from_slice::<Json>(text) {
            Ok(record @ Json::Object(_)) => deltas.push(Entry::from_json(&record)),
            _ => {
                return Err(format!(
                    "change log `{}` is not valid: record {} is not a JSON object",
                    append.display(),
                    number + 1
                ))
            }
        }
    }
    Ok(deltas)
}

/// Merges the append log into the snapshot now (at the end of a run), so that
/// `changes.json` alone holds every record.
pub fn compact(path: &Path) -> Result<(), String> {
    match Files::at(path, false) {
        Ok(Some(files)) => files.compact(),
        _ => Ok(()),
    }
}

/// Reads the change log `path` whole: the snapshot merged with the records it does not hold.
/// `None` when nothing was ever recorded there.
pub fn read(path: &Path) -> Result<Option<ChangeLog>, String> {
    match Files::at(path, false) {
        Ok(Some(files)) => files.read(),
        Ok(None) => Ok(None),
        Err(error) => Err(format!(
            "could not read change log `{}`: {error}",
            path.display()
        )),
    }
}

/// The records of the append log beside `path` that `snapshot` does not hold. The caller
/// holds [`lock`] (shared) across reading the snapshot and this.
pub fn read_pending(path: &Path, snapshot: Option<&ChangeLog>) -> Result<Vec<Entry>, String> {
    match Files::at(path, false) {
        Ok(Some(files)) => files.read_pending(snapshot),
        Ok(None) => Ok(Vec::new()),
        Err(error) => Err(format!(
            "could not read change log `{}`: {error}",
            path.display()
        )),
    }
}

/// Reads the snapshot `changes.json` alone; `None` when it does not exist.
pub fn load_snapshot(path: &Path) -> Result<Option<ChangeLog>, String> {
    match Files::at(path, false) {
        Ok(Some(files)) => files.load_snapshot(),
        Ok(None) => Ok(None),
        Err(error) => Err(format!(
            "could not read change log `{}`: {error}",
            path.display()
        )),
    }
}

/// Writes a snapshot atomically (temp file, fsync, rename), 0600.
pub fn write_snapshot(path: &Path, log: &ChangeLog) -> Result<(), String> {
    let files = Files::at(path, true)
        .ok()
        .flatten()
        .ok_or_else(|| failed(path, "its directory cannot be made"))?;
    files.write_snapshot(log)
}
