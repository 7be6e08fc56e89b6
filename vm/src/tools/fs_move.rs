//! The FileSystem tools that copy, move and delete whole entries: `copy_file`, `move_file`
//! and `delete_directory` (upstream's names and arguments), recorded in the change log.
//!
//! Security decisions (besides the path rules of [`super::sandbox`]):
//! - Both ends of a copy or a move resolve through [`crate::confine`]; the move is one
//!   `renameat2` between the two directory descriptors the walks ended in, refusing an
//!   existing destination (`RENAME_NOREPLACE`) unless `overwrite` is true.
//! - A copy reads the source as a regular file (at most [`MAX_COPY_BYTES`]) and writes the
//!   destination as `write_file` does (a fresh file renamed into place), with the source's
//!   permission bits.
//! - `move_file` moves a symlink itself and `delete_directory` removes a symlink itself,
//!   never its target; a tree is removed entry by entry relative to descriptors opened with
//!   `O_NOFOLLOW`, so a symlink inside it is unlinked, not followed.
//! - Moving or deleting a directory is refused when anything inside it is protected (a
//!   `.git`, fuseraft's state, the change log) or a credential file, and moving one when an
//!   entry would land on such a path at the destination: the tools may not change those by
//!   taking their directory along or by moving a prepared tree into their place.

use crate::history::DenialKind;
use std::path::Path;

use rustix::fs::FileType;

use super::fs::{canonical_target, deny_protected, read_error, resolve_checked, shown, writable};
use super::record::{push_unique, record_into};
use super::sandbox::{is_credential_path, open_root, protected_denial, protected_state, Resolved};
use super::{Args, Outcome, ToolContext};
use crate::confine::{Entry, Error, Root};

#[cfg(all(test, unix))]
#[path = "fs_move_tests.rs"]
mod tests;

/// The largest file `copy_file` copies.
pub(crate) const MAX_COPY_BYTES: u64 = 64 * 1024 * 1024;

/// `top/path`, or `path` at the root.
fn below(top: &str, path: &str) -> String {
    if top.is_empty() {
        path.to_string()
    } else {
        format!("{top}/{path}")
    }
}

/// The entries of the directory at `resolved`, refused when one of them is protected, a
/// credential file or the change log.
fn judge_tree(
    tool: &str,
    root: &Root,
    resolved: &Resolved,
    raw: &str,
    ctx: &ToolContext,
) -> Result<Vec<Entry>, Outcome> {
    let entries = resolved.place.scan().map_err(|error| {
        Outcome::error(format!("{tool}: cannot read the tree `{raw}`: {error}"))
    })?;
    for entry in &entries {
        let rel = below(&resolved.rel, &entry.path);
        if let Some(what) = protected_state(&rel) {
            return Err(protected_denial(
                raw,
                &format!("a directory holding {what} (`{rel}`)"),
            ));
        }
        if is_credential_path(&rel) {
            return Err(Outcome::denied(DenialKind::Credentials,format!(
                "`{raw}` holds the credential file `{rel}`; {tool} may not move or delete it (Security.DenyCredentialFiles)"
            )));
        }
        let place = root.path().join(&rel);
        if ctx.confinement.masks(&place) || ctx.confinement.is_git_metadata(&place) {
            return Err(protected_denial(
                raw,
                &format!("a directory holding `{rel}`, in the read mask or git's state"),
            ));
        }
    }
    if !ctx.change_log.as_os_str().is_empty() {
        let log = canonical_target(&ctx.change_log);
        let top = root.path().join(&resolved.rel);
        if log.starts_with(&top) {
            return Err(Outcome::denied(
                DenialKind::Sandbox,
                format!("`{raw}` holds the change log, which only fuseraft writes"),
            ));
        }
    }
    Ok(entries)
}

/// Refuses a move of a tree whose entries would land on protected state, a credential
/// file or the change log at the destination `to` (`foo/sessions/x` moved to `.fuseraft`).
fn judge_destination(
    tool: &str,
    root: &Root,
    to: &Resolved,
    raw: &str,
    entries: &[Entry],
    ctx: &ToolContext,
) -> Result<(), Outcome> {
    for entry in entries {
        let rel = below(&to.rel, &entry.path);
        if let Some(what) = protected_state(&rel) {
            return Err(protected_denial(
                raw,
                &format!("where the move would put `{rel}`, {what}"),
            ));
        }
        if is_credential_path(&rel) {
            return Err(Outcome::denied(DenialKind::Credentials,format!(
                "{tool} would put the credential file `{rel}` at `{raw}` (Security.DenyCredentialFiles)"
            )));
        }
    }
    if !ctx.change_log.as_os_str().is_empty()
        && canonical_target(&ctx.change_log).starts_with(root.path().join(&to.rel))
    {
        return Err(Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` would hold the change log, which only fuseraft writes"),
        ));
    }
    Ok(())
}

pub(crate) fn copy_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "copy_file";
    let (source, destination, overwrite) = match (
        args.string("source"),
        args.string("destination"),
        args.opt_flag("overwrite", false),
    ) {
        (Ok(source), Ok(destination), Ok(overwrite)) => (source, destination, overwrite),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let from = match resolve_checked(tool, &root, source, true, false, ctx) {
        Ok(from) => from,
        Err(outcome) => return outcome,
    };
    let mut to = match writable(tool, &root, destination, ctx) {
        Ok(to) => to,
        Err(outcome) => return outcome,
    };
    if from.rel == to.rel {
        return Outcome::error(format!(
            "{tool}: `{source}` and `{destination}` are the same file"
        ));
    }
    let (bytes, mode) = match (from.place.read(MAX_COPY_BYTES), from.place.stat()) {
        (Ok((bytes, size)), _) if bytes.len() as u64 > MAX_COPY_BYTES => {
            return Outcome::error(format!(
                "{tool}: `{source}` is {} bytes, larger than the {MAX_COPY_BYTES} bytes {tool} copies",
                size.max(bytes.len() as u64)
            ))
        }
        (Ok((bytes, _)), Ok(Some(stat))) => (bytes, stat.st_mode),
        (Ok(_), _) => return Outcome::error(format!("{tool}: `{source}` changed while it was copied")),
        (Err(Error::NotRegular("a directory")), _) => {
            return Outcome::error(format!("{tool}: `{source}` is a directory; copy_file copies files"))
        }
        (Err(error), _) => return read_error(tool, &root, source, error),
    };
    if !overwrite && matches!(to.place.kind(), Ok(Some(_))) {
        return Outcome::error(format!(
            "{tool}: `{destination}` already exists; pass `overwrite: true` to replace it"
        ));
    }
    let written = to
        .place
        .make_dirs()
        .and_then(|()| to.place.replace_with_mode(&bytes, Some(mode)));
    if let Err(error) = written {
        return Outcome::error(format!("{tool}: cannot write `{destination}`: {error}"));
    }
    let mut outcome = Outcome::ok(format!(
        "Copied {} to {} ({} bytes)",
        shown(&from),
        shown(&to),
        bytes.len()
    ));
    record_into(&mut outcome, ctx, |entry| {
        push_unique(&mut entry.files_written, &to.rel)
    });
    outcome
}

pub(crate) fn move_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "move_file";
    let (source, destination, overwrite) = match (
        args.string("source"),
        args.string("destination"),
        args.opt_flag("overwrite", false),
    ) {
        (Ok(source), Ok(destination), Ok(overwrite)) => (source, destination, overwrite),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    if source.trim().is_empty() || destination.trim().is_empty() {
        return Outcome::error("the path is empty");
    }
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    // A symlink is moved itself, at either end.
    let (from, mut to) = match (
        resolve_checked(tool, &root, source, false, false, ctx),
        resolve_checked(tool, &root, destination, false, true, ctx),
    ) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    for (resolved, raw) in [(&from, source), (&to, destination)] {
        if let Err(outcome) = deny_protected(&root, resolved, raw, ctx) {
            return outcome;
        }
        if resolved.rel.is_empty() || resolved.place.name().is_none() {
            return Outcome::error(format!("{tool}: `{raw}` is the work directory itself"));
        }
    }
    let kind = match from.place.kind() {
        Ok(Some(kind)) => kind,
        Ok(None) => return Outcome::error(format!("{tool}: `{source}` does not exist")),
        Err(error) => return Outcome::error(format!("{tool}: cannot move `{source}`: {error}")),
    };
    let entries = if kind == FileType::Directory {
        match judge_tree(tool, &root, &from, source, ctx).and_then(|entries| {
            judge_destination(tool, &root, &to, destination, &entries, ctx).map(|()| entries)
        }) {
            Ok(entries) => entries,
            Err(outcome) => return outcome,
        }
    } else {
        Vec::new()
    };
    match to.place.kind() {
        Ok(None) => {}
        Ok(Some(FileType::Directory)) => {
            return Outcome::error(format!(
                "{tool}: `{destination}` is an existing directory; give the full new path"
            ))
        }
        Ok(Some(_)) if kind == FileType::Directory || !overwrite => {
            return Outcome::error(format!(
                "{tool}: `{destination}` already exists; pass `overwrite: true` to replace a file"
            ))
        }
        Ok(Some(_)) => {}
        Err(error) => {
            return Outcome::error(format!("{tool}: cannot inspect `{destination}`: {error}"))
        }
    }
    let moved = to
        .place
        .make_dirs()
        .and_then(|()| from.place.rename_to(&to.place, overwrite));
    match moved {
        Ok(()) => {}
        Err(Error::Io(error))
            if error.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) =>
        {
            return Outcome::error(format!("{tool}: cannot move `{source}` into itself"))
        }
        Err(error) => return Outcome::error(format!("{tool}: cannot move `{source}`: {error}")),
    }
    let mut outcome = Outcome::ok(format!("Moved {} to {}", shown(&from), shown(&to)));
    record_into(&mut outcome, ctx, |record| {
        if kind == FileType::Directory {
            // Each path of a tree once: appended without a search.
            for entry in entries
                .iter()
                .filter(|entry| entry.kind != FileType::Directory)
            {
                record.files_deleted.push(below(&from.rel, &entry.path));
                record.files_written.push(below(&to.rel, &entry.path));
            }
        } else {
            push_unique(&mut record.files_deleted, &from.rel);
            push_unique(&mut record.files_written, &to.rel);
        }
    });
    outcome
}

pub(crate) fn delete_directory(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "delete_directory";
    let (raw, recursive) = match (args.string("path"), args.opt_flag("recursive", false)) {
        (Ok(raw), Ok(recursive)) => (raw, recursive),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    if raw.trim().is_empty() {
        return Outcome::error("the path is empty");
    }
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    // A final symlink is not followed: the link is removed, never its target.
    let resolved = match resolve_checked(tool, &root, raw, false, false, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    if let Err(outcome) = deny_protected(&root, &resolved, raw, ctx) {
        return outcome;
    }
    if resolved.rel.is_empty() || resolved.place.name().is_none() {
        return Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` is the work directory itself, which cannot be deleted"),
        );
    }
    let removed = match resolved.place.kind() {
        Ok(Some(FileType::Directory)) => {
            let entries = match judge_tree(tool, &root, &resolved, raw, ctx) {
                Ok(entries) => entries,
                Err(outcome) => return outcome,
            };
            if !entries.is_empty() && !recursive {
                return Outcome::error(format!(
                    "{tool}: `{raw}` is not empty ({} entries); pass `recursive: true` to delete it with everything in it",
                    entries.len()
                ));
            }
            // Judged again on the names actually unlinked: a `.git` or a credential file
            // put there since the scan stops the removal.
            let spare = |path: &str| {
                let rel = below(&resolved.rel, path);
                protected_state(&rel).is_some() || is_credential_path(&rel)
            };
            match resolved.place.remove_tree(&spare) {
                Ok(removed) => removed
                    .iter()
                    .map(|path| below(&resolved.rel, path))
                    .collect(),
                Err(error) => {
                    return Outcome::error(format!("{tool}: cannot delete `{raw}`: {error}"))
                }
            }
        }
        Ok(Some(FileType::Symlink)) => {
            if let Err(error) = resolved.place.unlink() {
                return Outcome::error(format!(
                    "{tool}: cannot remove the symlink `{raw}`: {error}"
                ));
            }
            let mut outcome = Outcome::ok(format!(
                "Removed the symlink {} (its target is untouched)",
                resolved.rel
            ));
            record_into(&mut outcome, ctx, |entry| {
                push_unique(&mut entry.files_deleted, &resolved.rel)
            });
            return outcome;
        }
        Ok(Some(_)) => {
            return Outcome::error(format!(
                "{tool}: `{raw}` is a file; delete_file removes files"
            ))
        }
        Ok(None) => return Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Err(error) => return Outcome::error(format!("{tool}: cannot delete `{raw}`: {error}")),
    };
    let removed: Vec<String> = removed;
    let mut outcome = Outcome::ok(format!(
        "Deleted directory {} ({} file(s) removed)",
        resolved.rel,
        removed.len()
    ));
    if !removed.is_empty() {
        record_into(&mut outcome, ctx, |entry| {
            entry.files_deleted.extend(removed)
        });
    }
    outcome
}
