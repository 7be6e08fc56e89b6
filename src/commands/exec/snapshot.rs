//! `exec --snapshot`: a post-mortem copy of a run, where upstream keeps it:
//! `~/.fuseraft/snapshots/<project>/<session>/` (`$FUSERAFT_SNAPSHOT_DIR` instead of
//! `~/.fuseraft/snapshots`), holding `turns.jsonl` (the run's messages, one a line, in the
//! session log's shape) and `manifest.json` (the run's `--json` summary). The directory is
//! made private (0700) and the files readable only by the user: they hold replies and tool
//! output.

use std::path::{Path, PathBuf};

use fuseraft_vm::history::Message;
use serde_json::Value as Json;

/// Writes the snapshot of session `session`, run in `work_dir`; returns its directory.
pub fn write(
    work_dir: &Path,
    session: &str,
    history: &[Message],
    manifest: &Json,
) -> Result<PathBuf, String> {
    let base = match std::env::var_os("FUSERAFT_SNAPSHOT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".fuseraft/snapshots"))
            .ok_or("neither FUSERAFT_SNAPSHOT_DIR nor HOME is set")?,
    };
    let dir = base.join(project_slug(work_dir)).join(session);
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&dir)
        .map_err(|error| format!("`{}`: {error}", dir.display()))?;
    let mut turns = Vec::new();
    fuseraft_vm::checkpoint::write_message_lines(history, &mut turns)
        .map_err(|error| error.to_string())?;
    let manifest = serde_json::to_vec_pretty(manifest).map_err(|error| error.to_string())?;
    for (name, bytes) in [("turns.jsonl", &turns), ("manifest.json", &manifest)] {
        let path = dir.join(name);
        crate::session::private_file(&path, false)
            .and_then(|mut file| std::io::Write::write_all(&mut file, bytes))
            .map_err(|error| format!("`{}`: {error}", path.display()))?;
    }
    Ok(dir)
}

/// The work dir's name as one path component (its last part, other characters as `-`).
fn project_slug(work_dir: &Path) -> String {
    let name = std::fs::canonicalize(work_dir)
        .ok()
        .and_then(|dir| {
            dir.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    match slug.trim_matches('.') {
        "" => "project".to_string(),
        slug => slug.to_string(),
    }
}
