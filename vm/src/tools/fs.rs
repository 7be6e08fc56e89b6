//! The FileSystem tools: `read_file`, `write_file`, `patch_file`, `list_files`, `delete_file`.
//!
//! Security decisions (paths and credentials: see [`super::sandbox`]):
//! - Writes never go through an existing file: the new content is written to a fresh
//!   temporary file beside the target (created exclusively, so a planted symlink at the
//!   temporary name is not followed) and renamed over it. A hard link inside the sandbox to
//!   a file outside therefore only loses its name; the outside file is never modified.
//!   The replaced file's permission bits are kept. (Reads cannot tell a hard link from a
//!   file: a hard-linked file's content is readable, as it is to the shell.)
//! - Only regular files are read or patched (no FIFOs or devices, which could block), at
//!   most `read_cap` bytes for `read_file` and [`MAX_EDIT_BYTES`] for `patch_file`.
//! - The change log is written by fuseraft only: writing, patching or deleting it through
//!   these tools is denied, so an agent cannot forge the records validators trust.
//! - `delete_file` removes files and symlinks (the link itself, never its target), not
//!   directories, and never the sandbox root.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::record::{push_unique, record_into};
use super::sandbox::{credential_denial, is_credential_path, resolve, Resolved};
use super::{Args, Outcome, ToolContext};

/// The largest file `patch_file` edits.
pub(crate) const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

/// Resolves a path argument and applies the credential rule.
fn resolve_checked(root: &Path, raw: &str, follow_final: bool) -> Result<Resolved, Outcome> {
    let resolved = resolve(root, raw, follow_final)?;
    if is_credential_path(&resolved.rel) {
        return Err(credential_denial(raw));
    }
    Ok(resolved)
}

/// Denies a mutation of the change log itself.
fn deny_change_log(resolved: &Resolved, raw: &str, ctx: &ToolContext) -> Result<(), Outcome> {
    if ctx.change_log.as_os_str().is_empty() {
        return Ok(());
    }
    let log = canonical_target(&ctx.change_log);
    if resolved.abs == log {
        return Err(Outcome::fail(format!(
            "[DENIED: sandbox] `{raw}` is the change log, which only fuseraft writes"
        )));
    }
    Ok(())
}

/// A possibly missing file's path with its parent directory canonicalized.
fn canonical_target(path: &Path) -> PathBuf {
    if let Ok(path) = std::fs::canonicalize(path) {
        return path;
    }
    match (
        path.parent()
            .and_then(|parent| std::fs::canonicalize(parent).ok()),
        path.file_name(),
    ) {
        (Some(parent), Some(name)) => parent.join(name),
        _ => path.to_path_buf(),
    }
}

fn shown(resolved: &Resolved) -> &str {
    if resolved.rel.is_empty() {
        "."
    } else {
        &resolved.rel
    }
}

pub(crate) fn read_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let raw = match args.string("path") {
        Ok(raw) => raw,
        Err(outcome) => return outcome,
    };
    let resolved = match resolve_checked(root, raw, true) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let meta = match std::fs::metadata(&resolved.abs) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::error(format!("read_file: `{raw}` does not exist"))
        }
        Err(error) => return Outcome::error(format!("read_file: cannot read `{raw}`: {error}")),
    };
    if meta.is_dir() {
        return Outcome::error(format!("read_file: `{raw}` is a directory; use list_files"));
    }
    if !meta.is_file() {
        return Outcome::error(format!("read_file: `{raw}` is not a regular file"));
    }
    let cap = ctx.limits.read_cap;
    let mut bytes = Vec::new();
    let read = std::fs::File::open(&resolved.abs)
        .and_then(|file| file.take(cap as u64 + 1).read_to_end(&mut bytes));
    if let Err(error) = read {
        return Outcome::error(format!("read_file: cannot read `{raw}`: {error}"));
    }
    if bytes.len() <= cap {
        return Outcome::ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    bytes.truncate(cap);
    // Do not end on half a character.
    if let Err(error) = std::str::from_utf8(&bytes) {
        if error.error_len().is_none() {
            bytes.truncate(error.valid_up_to());
        }
    }
    let total = meta.len().max(cap as u64 + 1);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    text.push_str(&format!(
        "\n[truncated: showing the first {} of {total} bytes of `{raw}`]",
        bytes.len()
    ));
    Outcome::ok(text)
}

pub(crate) fn write_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let (raw, content) = match (args.string("path"), args.string("content")) {
        (Ok(raw), Ok(content)) => (raw, content),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    let resolved = match writable(root, raw, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    if let Some(parent) = resolved.abs.parent() {
        if let Err(error) = std::fs::create_dir_all(parent) {
            return Outcome::error(format!(
                "write_file: cannot create the directories of `{raw}`: {error}"
            ));
        }
    }
    if let Err(error) = replace(&resolved.abs, content.as_bytes()) {
        return Outcome::error(format!("write_file: cannot write `{raw}`: {error}"));
    }
    let mut outcome = Outcome::ok(format!(
        "Wrote {} bytes to {}",
        content.len(),
        shown(&resolved)
    ));
    record_into(&mut outcome, ctx, |entry| {
        push_unique(&mut entry.files_written, &resolved.rel)
    });
    outcome
}

/// Resolves a path to write or patch: inside the sandbox, no credential, not the change
/// log, not a directory.
fn writable(root: &Path, raw: &str, ctx: &ToolContext) -> Result<Resolved, Outcome> {
    if raw.trim().is_empty() {
        return Err(Outcome::error("the path is empty"));
    }
    let resolved = resolve_checked(root, raw, true)?;
    deny_change_log(&resolved, raw, ctx)?;
    if resolved.rel.is_empty() || resolved.abs.is_dir() {
        return Err(Outcome::error(format!("`{raw}` is a directory")));
    }
    Ok(resolved)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `target` with a new file holding `content`: temp file + rename, never writing
/// through an existing inode (hard links stay untouched). Keeps the old file's permissions.
fn replace(target: &Path, content: &[u8]) -> std::io::Result<()> {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let permissions = std::fs::metadata(target)
        .ok()
        .filter(|meta| meta.is_file())
        .map(|meta| meta.permissions());
    let mut attempt = 0;
    let (temp, mut file) = loop {
        let temp = dir.join(format!(
            ".{name}.fuseraft-{}-{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => break (temp, file),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => {
                attempt += 1
            }
            Err(error) => return Err(error),
        }
    };
    let written = file
        .write_all(content)
        .and_then(|()| match permissions {
            Some(permissions) => file.set_permissions(permissions),
            None => Ok(()),
        })
        .and_then(|()| {
            drop(file);
            std::fs::rename(&temp, target)
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

pub(crate) fn patch_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let (raw, old, new) = match (args.string("path"), args.string("old"), args.string("new")) {
        (Ok(raw), Ok(old), Ok(new)) => (raw, old, new),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    if old.is_empty() {
        return Outcome::error("patch_file: `old` is empty; give the exact text to replace (use write_file to create a file)");
    }
    let resolved = match writable(root, raw, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let meta = match std::fs::metadata(&resolved.abs) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::error(format!(
                "patch_file: `{raw}` does not exist; use write_file to create it"
            ))
        }
        Err(error) => return Outcome::error(format!("patch_file: cannot read `{raw}`: {error}")),
    };
    if !meta.is_file() {
        return Outcome::error(format!("patch_file: `{raw}` is not a regular file"));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Outcome::error(format!(
            "patch_file: `{raw}` is {} bytes, larger than the {MAX_EDIT_BYTES} bytes patch_file edits",
            meta.len()
        ));
    }
    let text = match std::fs::read(&resolved.abs).map(String::from_utf8) {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => return Outcome::error(format!("patch_file: `{raw}` is not UTF-8 text")),
        Err(error) => return Outcome::error(format!("patch_file: cannot read `{raw}`: {error}")),
    };
    let Some(at) = text.find(old) else {
        return Outcome::error(format!(
            "patch_file: the `old` text was not found in `{raw}`; it must match the file exactly, \
             whitespace and line endings included (read_file shows the current text)"
        ));
    };
    let step = old.chars().next().map_or(1, char::len_utf8);
    if text[at + step..].contains(old) {
        let count = text.matches(old).count().max(2);
        return Outcome::error(format!(
            "patch_file: the `old` text occurs {count} times in `{raw}`; include more surrounding lines so it matches exactly once"
        ));
    }
    let patched = format!("{}{new}{}", &text[..at], &text[at + old.len()..]);
    if let Err(error) = replace(&resolved.abs, patched.as_bytes()) {
        return Outcome::error(format!("patch_file: cannot write `{raw}`: {error}"));
    }
    let line = text[..at].matches('\n').count() + 1;
    let mut outcome = Outcome::ok(format!(
        "Patched {} at line {line} (1 replacement)",
        shown(&resolved)
    ));
    record_into(&mut outcome, ctx, |entry| {
        push_unique(&mut entry.files_written, &resolved.rel)
    });
    outcome
}

pub(crate) fn list_files(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let raw = match args.opt_string("path") {
        Ok(raw) => raw.filter(|raw| !raw.trim().is_empty()).unwrap_or("."),
        Err(outcome) => return outcome,
    };
    let resolved = match resolve_checked(root, raw, true) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let entries = match std::fs::read_dir(&resolved.abs) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::error(format!("list_files: `{raw}` does not exist"))
        }
        Err(_) if resolved.abs.is_file() => {
            return Outcome::error(format!("list_files: `{raw}` is a file, not a directory"))
        }
        Err(error) => return Outcome::error(format!("list_files: cannot list `{raw}`: {error}")),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                name.push('/');
            }
            name
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Outcome::ok(format!("({} is empty)", shown(&resolved)));
    }
    let mut text = String::new();
    let cap = ctx.limits.output_cap;
    for (idx, name) in names.iter().enumerate() {
        if text.len() + name.len() + 1 > cap {
            text.push_str(&format!(
                "[output truncated: {} more entries]\n",
                names.len() - idx
            ));
            break;
        }
        text.push_str(name);
        text.push('\n');
    }
    text.pop();
    Outcome::ok(text)
}

pub(crate) fn delete_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let raw = match args.string("path") {
        Ok(raw) => raw,
        Err(outcome) => return outcome,
    };
    if raw.trim().is_empty() {
        return Outcome::error("the path is empty");
    }
    let resolved = match resolve_checked(root, raw, false) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    if let Err(outcome) = deny_change_log(&resolved, raw, ctx) {
        return outcome;
    }
    if resolved.rel.is_empty() {
        return Outcome::error("delete_file: the work directory itself cannot be deleted");
    }
    match std::fs::symlink_metadata(&resolved.abs) {
        Ok(meta) if meta.is_dir() => {
            return Outcome::error(format!(
                "delete_file: `{raw}` is a directory; delete_file removes files only"
            ))
        }
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::error(format!("delete_file: `{raw}` does not exist"))
        }
        Err(error) => {
            return Outcome::error(format!("delete_file: cannot delete `{raw}`: {error}"))
        }
    }
    if let Err(error) = std::fs::remove_file(&resolved.abs) {
        return Outcome::error(format!("delete_file: cannot delete `{raw}`: {error}"));
    }
    let mut outcome = Outcome::ok(format!("Deleted {}", resolved.rel));
    record_into(&mut outcome, ctx, |entry| {
        push_unique(&mut entry.files_deleted, &resolved.rel)
    });
    outcome
}
