//! The FileSystem tools: `read_file`, `write_file`, `patch_file`, `list_files`, `delete_file`.
//! A `write_file` with `baseVersion` is refused (`VERSION_MISMATCH`) when the file's
//! version in the run (`run_state.rs`, shown by `stat_file`) differs.
//!
//! Security decisions (paths, credentials and protected state: see [`super::sandbox`]):
//! - Every path resolves race-free under the sandbox root ([`crate::confine`]) and the tool
//!   acts relative to the directory descriptor the walk ended in.
//! - Writes never go through an existing file: the new content is written to a fresh
//!   temporary file in the already-open parent directory (created exclusively, never
//!   following a symlink) and put at the name there atomically (an exchange of the two names
//!   and an unlink of the old one, or a plain `renameat` when nothing is there; see
//!   `confine::place`). Tool writes are not fsynced: they promise what the shell's do, no
//!   durability beyond the page cache. A hard link inside
//!   the sandbox to a file outside therefore only loses its name; the outside file is never
//!   modified. The replaced file's permission bits are kept. (Reads cannot tell a hard link
//!   from a file: a hard-linked file's content is readable, as it is to the shell.)
//! - Only regular files are read or patched, opened with `O_NONBLOCK` and checked with
//!   `fstat` (a FIFO, socket, device or directory is refused with a message saying what it
//!   is, and never blocks), at most `read_cap` bytes for `read_file` and
//!   [`MAX_EDIT_BYTES`] for `patch_file`.
//! - The change log, `.git/` and fuseraft's own state are written by fuseraft and git only:
//!   writing, patching or deleting them through these tools is denied, so an agent cannot
//!   forge the records validators trust, plant a git hook or rewrite a session.
//! - `delete_file` removes files and symlinks (the link itself, never its target), not
//!   directories, and never the sandbox root.

use crate::history::DenialKind;
use std::path::{Path, PathBuf};

use super::record::{push_unique, record_into};
use super::sandbox::{
    credential_denial, is_credential_path, open_root, protected_denial, protected_state, resolve,
    walk_error, Resolved,
};
use super::{Args, Outcome, ToolContext};
use crate::confine::{Error, Root};

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;

/// The largest file `patch_file` edits.
pub(crate) const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

/// Resolves a path argument and applies the credential rule.
pub(super) fn resolve_checked(
    tool: &str,
    root: &Root,
    raw: &str,
    follow_final: bool,
    missing_dirs: bool,
    ctx: &ToolContext,
) -> Result<Resolved, Outcome> {
    let resolved = resolve(tool, root, raw, follow_final, missing_dirs)?;
    if is_credential_path(&resolved.rel) {
        return Err(credential_denial(raw));
    }
    // The run's read mask (`DenyRead`, `--deny-read`, the credentials) holds for the file
    // tools as for a command: a masked path, or one holding a masked place, is neither read
    // nor moved away from its mask.
    if ctx.confinement.masks(&root.path().join(&resolved.rel)) {
        return Err(Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` is in the run's read mask (`DenyRead`, `--deny-read`), which no tool reads"),
        ));
    }
    Ok(resolved)
}

/// Denies a mutation of the change log, `.git/` or fuseraft's own state.
pub(super) fn deny_protected(
    root: &Root,
    resolved: &Resolved,
    raw: &str,
    ctx: &ToolContext,
) -> Result<(), Outcome> {
    if let Some(what) = protected_state(&resolved.rel) {
        return Err(protected_denial(raw, what));
    }
    // Git metadata of any name the run found at its start (a `--separate-git-dir`, a bare
    // `backup.git`), as the commands' view keeps it.
    let place = root.path().join(&resolved.rel);
    if ctx.confinement.is_git_metadata(&place) {
        return Err(protected_denial(raw, "a git repository's own state"));
    }
    if ctx.confinement.holds_masked(&place) {
        return Err(Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` is or holds a place in the run's read mask (`DenyRead`, `--deny-read`), which no tool changes or moves"),
        ));
    }
    if ctx.change_log.as_os_str().is_empty() {
        return Ok(());
    }
    // The change log is three files: the snapshot, its append log and its lock.
    let files = [
        ctx.change_log.clone(),
        crate::changes::store::append_log_path(&ctx.change_log),
        crate::changes::store::lock_path(&ctx.change_log),
    ];
    if !files.iter().any(|file| may_be_log(file, &resolved.rel)) {
        return Ok(());
    }
    let is_log = files.iter().any(|file| {
        canonical_target(file)
            .strip_prefix(root.path())
            .ok()
            .map(|rel| {
                rel.components()
                    .map(|part| part.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .is_some_and(|rel| rel.eq_ignore_ascii_case(&resolved.rel))
    });
    if is_log {
        return Err(Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` is the change log, which only fuseraft writes"),
        ));
    }
    Ok(())
}

/// False when `rel` cannot be the change log `log`, decided without canonicalizing `log`
/// (which costs a `readlink` per component on every write): unless its last component is a
/// symlink, `log`'s canonical form ends in its own file name, so a target whose last name
/// differs (ignoring ASCII case, as the full comparison does) is not the log. When in
/// doubt (a symlink, no file name, an error) it answers true and the full check runs.
fn may_be_log(log: &Path, rel: &str) -> bool {
    let Some(name) = log.file_name() else {
        return true;
    };
    let last = rel.rsplit('/').next().unwrap_or(rel);
    if last.eq_ignore_ascii_case(&name.to_string_lossy()) {
        return true;
    }
    match std::fs::symlink_metadata(log) {
        Ok(metadata) => metadata.file_type().is_symlink(),
        Err(error) => error.kind() != std::io::ErrorKind::NotFound,
    }
}

/// A possibly missing file's path with its parent directory canonicalized.
pub(super) fn canonical_target(path: &Path) -> PathBuf {
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

pub(super) fn shown(resolved: &Resolved) -> &str {
    if resolved.rel.is_empty() {
        "."
    } else {
        &resolved.rel
    }
}

/// A failed read in a tool's words.
pub(super) fn read_error(tool: &str, root: &Root, raw: &str, error: Error) -> Outcome {
    match error {
        Error::NotFound => Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Error::NotRegular("a directory") if tool == "read_file" => {
            Outcome::error(format!("read_file: `{raw}` is a directory; use list_files"))
        }
        Error::NotRegular(kind) => Outcome::error(format!(
            "{tool}: `{raw}` is {kind}, not a regular file; only regular files are read"
        )),
        Error::Io(error) => Outcome::error(format!("{tool}: cannot read `{raw}`: {error}")),
        other => walk_error(tool, root, raw, other),
    }
}

pub(crate) fn read_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let raw = match args.string("path") {
        Ok(raw) => raw,
        Err(outcome) => return outcome,
    };
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let resolved = match resolve_checked("read_file", &root, raw, true, false, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let cap = ctx.limits.read_cap;
    let (mut bytes, size) = match resolved.place.read(cap as u64) {
        Ok(read) => read,
        Err(error) => return read_error("read_file", &root, raw, error),
    };
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
    let total = size.max(cap as u64 + 1);
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
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let mut resolved = match writable("write_file", &root, raw, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    if let Err(outcome) = check_version(args, &resolved, raw, ctx) {
        return outcome;
    }
    if let Err(error) = resolved.place.make_dirs() {
        return Outcome::error(format!(
            "write_file: cannot create the directories of `{raw}`: {error}"
        ));
    }
    if let Err(error) = resolved.place.replace(content.as_bytes()) {
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

/// Refuses a `write_file` whose `baseVersion` (when given and not 0) is not the file's
/// current version in the run ([`super::RunState`]): the file was written since the caller
/// looked at it.
fn check_version(
    args: &Args,
    resolved: &Resolved,
    raw: &str,
    ctx: &ToolContext,
) -> Result<(), Outcome> {
    let base = args.opt_count("baseVersion", 0, 0, usize::MAX)? as u64;
    let current = ctx.run_state.version(&resolved.rel);
    if base == 0 || base == current {
        return Ok(());
    }
    Err(Outcome::error(format!(
        "VERSION_MISMATCH: `{raw}` is at version {current} but baseVersion={base} was given; \
         it was written since. Call stat_file for the current version and content, then write again"
    )))
}

/// Resolves a path to write or patch: inside the sandbox, no credential, not protected
/// state, not a directory.
pub(super) fn writable(
    tool: &str,
    root: &Root,
    raw: &str,
    ctx: &ToolContext,
) -> Result<Resolved, Outcome> {
    if raw.trim().is_empty() {
        return Err(Outcome::error("the path is empty"));
    }
    let resolved = resolve_checked(tool, root, raw, true, true, ctx)?;
    deny_protected(root, &resolved, raw, ctx)?;
    let is_dir = matches!(
        resolved.place.kind(),
        Ok(Some(rustix::fs::FileType::Directory))
    );
    if resolved.rel.is_empty() || resolved.place.name().is_none() || is_dir {
        return Err(Outcome::error(format!("`{raw}` is a directory")));
    }
    Ok(resolved)
}

pub(crate) fn patch_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let (raw, old, new) = match (args.string("path"), args.string("old"), args.string("new")) {
        (Ok(raw), Ok(old), Ok(new)) => (raw, old, new),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    if old.is_empty() {
        return Outcome::error("patch_file: `old` is empty; give the exact text to replace (use write_file to create a file)");
    }
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let resolved = match writable("patch_file", &root, raw, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let bytes = match resolved.place.read(MAX_EDIT_BYTES) {
        Ok((bytes, size)) if bytes.len() as u64 > MAX_EDIT_BYTES => {
            return Outcome::error(format!(
                "patch_file: `{raw}` is {} bytes, larger than the {MAX_EDIT_BYTES} bytes patch_file edits",
                size.max(bytes.len() as u64)
            ))
        }
        Ok((bytes, _)) => bytes,
        Err(Error::NotFound) => {
            return Outcome::error(format!(
                "patch_file: `{raw}` does not exist; use write_file to create it"
            ))
        }
        Err(error) => return read_error("patch_file", &root, raw, error),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Outcome::error(format!("patch_file: `{raw}` is not UTF-8 text"));
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
    if let Err(error) = resolved.place.replace(patched.as_bytes()) {
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
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let resolved = match resolve_checked("list_files", &root, raw, true, false, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let names = match resolved.place.list() {
        Ok(names) => names,
        Err(Error::NotFound) => {
            return Outcome::error(format!("list_files: `{raw}` does not exist"))
        }
        Err(Error::NotRegular(_)) => {
            return Outcome::error(format!("list_files: `{raw}` is a file, not a directory"))
        }
        Err(error) => return Outcome::error(format!("list_files: cannot list `{raw}`: {error}")),
    };
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
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    // Missing directories are accepted so that protected state is refused as such.
    let resolved = match resolve_checked("delete_file", &root, raw, false, true, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    if let Err(outcome) = deny_protected(&root, &resolved, raw, ctx) {
        return outcome;
    }
    if resolved.rel.is_empty() {
        return Outcome::error("delete_file: the work directory itself cannot be deleted");
    }
    match resolved.place.kind() {
        Ok(Some(rustix::fs::FileType::Directory)) => {
            return Outcome::error(format!(
                "delete_file: `{raw}` is a directory; delete_file removes files only"
            ))
        }
        Ok(Some(_)) => {}
        Ok(None) => return Outcome::error(format!("delete_file: `{raw}` does not exist")),
        Err(error) => {
            return Outcome::error(format!("delete_file: cannot delete `{raw}`: {error}"))
        }
    }
    match resolved.place.unlink() {
        Ok(()) => {}
        Err(Error::NotRegular(_)) => {
            return Outcome::error(format!(
                "delete_file: `{raw}` is a directory; delete_file removes files only"
            ))
        }
        Err(error) => {
            return Outcome::error(format!("delete_file: cannot delete `{raw}`: {error}"))
        }
    }
    let mut outcome = Outcome::ok(format!("Deleted {}", resolved.rel));
    record_into(&mut outcome, ctx, |entry| {
        push_unique(&mut entry.files_deleted, &resolved.rel)
    });
    outcome
}

/// The change log is refused however it is reached, also when its own path is a symlink or
/// runs through one (the cases where the cheap name check must fall back to the full one),
/// and everything else stays writable.
#[cfg(test)]
mod log_tests {
    use std::path::{Path, PathBuf};

    use serde_json::json;

    use super::super::{execute, ToolContext};
    use crate::history::ToolCall;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-fs-log-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(&dir).unwrap()
    }

    async fn write(ctx: &ToolContext, path: &str) -> ToolCall {
        let mut call = ToolCall {
            id: "call_1".to_string(),
            name: "write_file".to_string(),
            args: json!({"path": path, "content": "forged"}),
            result: None,
            ok: false,
            denied: None,
        };
        execute(&mut call, ctx).await;
        call
    }

    async fn refused(ctx: &ToolContext, path: &str) {
        let call = write(ctx, path).await;
        assert!(!call.ok, "`{path}` was written: {call:?}");
        assert!(
            call.result
                .as_deref()
                .unwrap_or("")
                .contains("is the change log"),
            "{call:?}"
        );
    }

    fn context(root: &Path, log: &str) -> ToolContext {
        let mut ctx = ToolContext::new(root, "s1", "Developer", 1).unwrap();
        ctx.change_log = root.join(log);
        ctx
    }

    #[tokio::test]
    async fn the_change_log_is_refused_wherever_it_is_and_however_it_is_named() {
        let root = scratch("plain");
        let ctx = context(&root, "changes.json");
        refused(&ctx, "changes.json").await;
        refused(&ctx, "CHANGES.JSON").await;
        refused(&ctx, "sub/../changes.json").await;
        assert!(write(&ctx, "other.json").await.ok);
        assert!(write(&ctx, "sub/changes.json").await.ok);
        // The log holds the records of the writes that went through, never the forgery.
        let log = std::fs::read_to_string(root.join("changes.json")).unwrap_or_default();
        assert!(!log.contains("forged"), "{log}");

        // The log is a symlink to a file with another name: that file is the log.
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::write(root.join("notes/real.json"), "{}").unwrap();
        std::os::unix::fs::symlink("notes/real.json", root.join("log.json")).unwrap();
        let ctx = context(&root, "log.json");
        refused(&ctx, "notes/real.json").await;
        assert_eq!(
            std::fs::read_to_string(root.join("notes/real.json")).unwrap(),
            "{}"
        );
        assert!(write(&ctx, "notes/other.json").await.ok);

        // The log's directory is a symlink: the log is reached under the real directory.
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::os::unix::fs::symlink("data", root.join("logs")).unwrap();
        let ctx = context(&root, "logs/changes.json");
        refused(&ctx, "data/changes.json").await;
        refused(&ctx, "logs/changes.json").await;
        assert!(write(&ctx, "data/other.json").await.ok);
        let _ = std::fs::remove_dir_all(&root);
    }
}
