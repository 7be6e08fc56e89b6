//! Session files: one checkpoint per session under `<work dir>/.fuseraft/sessions/<id>.json`,
//! rewritten atomically after every turn (temp file, fsync, rename, fsync of the directory),
//! readable only by the user (mode 0600).

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

/// Writes `checkpoint` as the session's file, atomically.
pub fn save(work_dir: &Path, id: &str, checkpoint: &Json) -> std::io::Result<()> {
    let dir = work_dir.join(DIR);
    std::fs::create_dir_all(&dir)?;
    let target = path(work_dir, id);
    let temp = dir.join(format!(".{id}.json.tmp"));
    let text = serde_json::to_string_pretty(checkpoint).map_err(std::io::Error::other)?;
    {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, &target)?;
    if let Ok(dir) = std::fs::File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Reads a session's checkpoint; errors say what is wrong in words a user can act on.
pub fn load(work_dir: &Path, id: &str) -> Result<Json, String> {
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
