//! Session files under `<work dir>/.fuseraft/sessions/`, readable only by the user (0600):
//! `<id>.messages.jsonl`, the history, one message per line, appended and fsynced after
//! every turn; and `<id>.json`, the run's state with `MessageCount` (how many lines of the
//! log belong to it), rewritten atomically (temp file, fsync, rename, fsync of the
//! directory). A crash between the two leaves extra log lines that the count excludes, so
//! each turn costs what it adds, never the whole history.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

pub const DIR: &str = ".fuseraft/sessions";

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

fn private_file(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
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

/// Appends `messages` to the session's log and fsyncs it.
pub fn append_messages(work_dir: &Path, id: &str, messages: &[Json]) -> std::io::Result<()> {
    std::fs::create_dir_all(work_dir.join(DIR))?;
    let mut file = private_file(&messages_path(work_dir, id), true)?;
    if messages.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for message in messages {
        text.push_str(&message.to_string());
        text.push('\n');
    }
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

/// Writes the session's state file, atomically.
pub fn save(work_dir: &Path, id: &str, checkpoint: &Json) -> std::io::Result<()> {
    let dir = work_dir.join(DIR);
    std::fs::create_dir_all(&dir)?;
    let target = path(work_dir, id);
    let temp = dir.join(format!(".{id}.json.tmp"));
    let text = serde_json::to_string_pretty(checkpoint).map_err(std::io::Error::other)?;
    {
        let mut file = private_file(&temp, false)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, &target)?;
    if let Ok(dir) = std::fs::File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Reads a session's whole checkpoint (its state with `Messages` from the log); errors say
/// what is wrong in words a user can act on. With `repair`, log lines past `MessageCount`
/// (left by a crash mid-turn) are cut off so a resumed run appends after the right line.
pub fn load(work_dir: &Path, id: &str) -> Result<Json, String> {
    load_with(work_dir, id, false)
}

/// [`load`] for a run that will continue the session: the log is cut to `MessageCount`.
pub fn load_for_resume(work_dir: &Path, id: &str) -> Result<Json, String> {
    load_with(work_dir, id, true)
}

fn load_with(work_dir: &Path, id: &str, repair: bool) -> Result<Json, String> {
    let mut state = load_state(work_dir, id)?;
    let count = state
        .get("MessageCount")
        .and_then(Json::as_u64)
        .unwrap_or(0) as usize;
    let log_path = messages_path(work_dir, id);
    let log = std::fs::read_to_string(&log_path).map_err(|error| {
        format!(
            "cannot read the session's messages `{}`: {error}",
            log_path.display()
        )
    })?;
    let mut messages = Vec::with_capacity(count);
    let mut kept_bytes = 0;
    for line in log.split_inclusive('\n').take(count) {
        if !line.ends_with('\n') {
            break;
        }
        let message: Json = serde_json::from_str(line.trim_end()).map_err(|error| {
            format!(
                "session log `{}` is damaged at message {}: {error}",
                log_path.display(),
                messages.len() + 1
            )
        })?;
        messages.push(message);
        kept_bytes += line.len();
    }
    if messages.len() < count {
        return Err(format!(
            "session log `{}` holds {} of the session's {count} messages",
            log_path.display(),
            messages.len()
        ));
    }
    if repair && kept_bytes < log.len() {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&log_path)
            .map_err(|error| format!("cannot repair `{}`: {error}", log_path.display()))?;
        file.set_len(kept_bytes as u64)
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
