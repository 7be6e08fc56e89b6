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
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value as Json};

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

const HEADER_OPEN: &[u8] = b"{\"appendLog\":\"";
const HEADER_CLOSE: &[u8] = b"\"}\n";
const ID_LEN: usize = 16;
const HEADER_LEN: usize = HEADER_OPEN.len() + ID_LEN + HEADER_CLOSE.len();

/// The append log beside the change log `path`.
pub fn append_log_path(path: &Path) -> PathBuf {
    sibling(path, "jsonl")
}

/// The lock file beside the change log `path`.
pub fn lock_path(path: &Path) -> PathBuf {
    sibling(path, "lock")
}

fn sibling(path: &Path, extension: &str) -> PathBuf {
    if path.extension().is_some_and(|own| own == extension) {
        let mut name = path.as_os_str().to_os_string();
        name.push(format!(".{extension}"));
        PathBuf::from(name)
    } else {
        path.with_extension(extension)
    }
}

fn private_options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// A held lock of a change log, released when dropped.
pub struct Lock {
    _file: File,
}

/// Takes the lock of the change log `path` (waiting for it), creating the lock file.
pub fn lock(path: &Path, exclusive: bool) -> std::io::Result<Lock> {
    let lock = lock_path(path);
    let file = match private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
    {
        Ok(file) => file,
        // A reader of a store it cannot write still takes the lock when the file exists.
        Err(_) if !exclusive => File::open(&lock)?,
        Err(error) => return Err(error),
    };
    #[cfg(unix)]
    {
        use rustix::fs::{flock, FlockOperation};
        let operation = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        flock(&file, operation)?;
    }
    Ok(Lock { _file: file })
}

fn new_id() -> String {
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
fn header_id(bytes: &[u8]) -> Option<&str> {
    let header = bytes.get(..HEADER_LEN)?;
    let id = &header[HEADER_OPEN.len()..HEADER_OPEN.len() + ID_LEN];
    (header.starts_with(HEADER_OPEN)
        && header.ends_with(HEADER_CLOSE)
        && id.iter().all(u8::is_ascii_hexdigit))
    .then(|| std::str::from_utf8(id).ok())
    .flatten()
}

fn failed(path: &Path, error: impl std::fmt::Display) -> String {
    format!("could not write `{}`: {error}", path.display())
}

/// Appends one record: what one tool call added to `(session, agent, turn)`'s entry.
pub fn record(path: &Path, delta: &Entry) -> Result<(), String> {
    // The directory is made only when the lock file cannot be created for want of it (the
    // first record), not on every call.
    let _lock = match lock(path, true) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
            {
                std::fs::create_dir_all(parent).map_err(|error| failed(parent, error))?;
            }
            lock(path, true)
        }
        locked => locked,
    }
    .map_err(|error| failed(&lock_path(path), error))?;
    let append = append_log_path(path);
    let mut file = private_options()
        .read(true)
        .append(true)
        .create(true)
        .open(&append)
        .map_err(|error| failed(&append, error))?;
    let len = prepare(&mut file).map_err(|error| failed(&append, error))?;
    let mut line = Vec::with_capacity(256);
    if len == 0 {
        line.extend_from_slice(HEADER_OPEN);
        line.extend_from_slice(new_id().as_bytes());
        line.extend_from_slice(HEADER_CLOSE);
    }
    serde_json::to_writer(&mut line, &delta.to_json()).map_err(|error| failed(&append, error))?;
    line.push(b'\n');
    if let Err(error) = file.write_all(&line) {
        // A partial record is undone (or, after a kill, cut by the next writer).
        let _ = file.set_len(len);
        return Err(failed(&append, error));
    }
    let pending = len + line.len() as u64;
    let snapshot = std::fs::metadata(path).map_or(0, |metadata| metadata.len());
    if pending > snapshot {
        compact_locked(path)?;
    }
    Ok(())
}

/// Makes the append log end with a whole record (cutting a torn one a killed writer left)
/// and start with a whole header (emptying it otherwise: no record follows a torn header);
/// returns its length. Reads at most one record's bytes.
fn prepare(file: &mut File) -> std::io::Result<u64> {
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

/// Merges the append log into the snapshot now (at the end of a run), so that
/// `changes.json` alone holds every record.
pub fn compact(path: &Path) -> Result<(), String> {
    let append = append_log_path(path);
    match std::fs::metadata(&append) {
        Ok(metadata) if metadata.len() > HEADER_LEN as u64 => {}
        // Nothing recorded since the last compaction.
        _ => return Ok(()),
    }
    let _lock = lock(path, true).map_err(|error| failed(&lock_path(path), error))?;
    compact_locked(path)
}

fn compact_locked(path: &Path) -> Result<(), String> {
    let append = append_log_path(path);
    let mut log = ChangeLog::load_snapshot(path)?.unwrap_or_default();
    let bytes = read_append(&append)?;
    let Some(id) = header_id(&bytes) else {
        return Ok(());
    };
    let deltas = records(&bytes, log.absorbed.as_ref(), &append)?;
    if deltas.is_empty()
        && log
            .absorbed
            .as_ref()
            .is_some_and(|absorbed| absorbed.id == id)
    {
        return Ok(());
    }
    log.absorb_all(deltas);
    log.absorbed = Some(Absorbed {
        id: id.to_string(),
        offset: bytes.len() as u64,
    });
    write_snapshot(path, &log)?;
    // The snapshot holds it all: the append log restarts (writers open it under the lock,
    // so none holds the removed file). A kill before this leaves a log the snapshot holds to
    // its end, which is as good.
    let _ = std::fs::remove_file(&append);
    Ok(())
}

fn read_append(append: &Path) -> Result<Vec<u8>, String> {
    match std::fs::read(append) {
        Ok(bytes) => Ok(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(format!(
            "could not read change log `{}`: {error}",
            append.display()
        )),
    }
}

/// The records of an append log that a snapshot holding `absorbed` does not: whole lines
/// only (a torn last line is a record a kill interrupted).
fn records(bytes: &[u8], absorbed: Option<&Absorbed>, append: &Path) -> Result<Vec<Entry>, String> {
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

/// Reads the change log `path` whole: the snapshot merged with the records it does not hold.
/// `None` when nothing was ever recorded there.
pub fn read(path: &Path) -> Result<Option<ChangeLog>, String> {
    let append = append_log_path(path);
    if !path.exists() && !append.exists() {
        return Ok(None);
    }
    let _lock = lock(path, false).ok();
    let snapshot = ChangeLog::load_snapshot(path)?;
    let pending = read_pending(path, snapshot.as_ref())?;
    if snapshot.is_none() && pending.is_empty() {
        return Ok(None);
    }
    let mut log = snapshot.unwrap_or_default();
    log.absorb_all(pending);
    Ok(Some(log))
}

/// The records of the append log beside `path` that `snapshot` does not hold. The caller
/// holds [`lock`] (shared) across reading the snapshot and this.
pub fn read_pending(path: &Path, snapshot: Option<&ChangeLog>) -> Result<Vec<Entry>, String> {
    let append = append_log_path(path);
    let bytes = read_append(&append)?;
    records(
        &bytes,
        snapshot.and_then(|snapshot| snapshot.absorbed.as_ref()),
        &append,
    )
}

/// Writes a snapshot atomically (temp file, fsync, rename), 0600.
pub fn write_snapshot(path: &Path, log: &ChangeLog) -> Result<(), String> {
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent).map_err(|error| failed(parent, error))?;
    }
    let text = serde_json::to_string_pretty(&log.to_json()).unwrap_or_default();
    let mut temp = path.as_os_str().to_os_string();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = private_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_data()
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(failed(path, error));
    }
    Ok(())
}
