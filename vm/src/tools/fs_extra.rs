//! The FileSystem tools that inspect, or change without writing a file's content:
//! `grep_file`, `get_file_info`, `get_file_summary` (a summary saved with
//! `save_file_summary`, else a preview), `list_directory`, `create_directory` and
//! `set_permissions` (upstream's names and arguments).
//!
//! Security decisions: every path resolves through [`crate::confine`] with the credential
//! rule (`fs::resolve_checked`); files are read only when regular, at most
//! [`MAX_EDIT_BYTES`]; `grep_file`'s pattern is untrusted (see [`super::grep`]);
//! `create_directory` and `set_permissions` are writes (`file_write_delete`, the change
//! envelope), refused in `.git/` and fuseraft's state; the first makes each missing
//! directory relative to the one before without following a symlink, the second changes a
//! file or directory through an `O_NOFOLLOW` descriptor and never sets setuid or setgid.

use crate::history::DenialKind;
use std::path::Path;

use rustix::fs::FileType;

use super::fs::{deny_protected, read_error, resolve_checked, shown, MAX_EDIT_BYTES};
use super::grep::{self, Piece};
use super::record::rfc3339;
use super::sandbox::{open_root, walk_error};
use super::{Args, Outcome, ToolContext};
use crate::confine::Error;

#[cfg(all(test, unix))]
#[path = "fs_extra_tests.rs"]
mod tests;

/// The most entries `list_directory` shows.
const MAX_ENTRIES: usize = 500;
/// The lines `get_file_summary` previews.
const SUMMARY_LINES: usize = 30;

/// Reads the regular text file a path argument names, in `tool`'s words on failure.
fn read_text(
    tool: &str,
    args: &Args,
    root: &Path,
    ctx: &ToolContext,
) -> Result<(String, Vec<u8>), Outcome> {
    let raw = args.string("path")?;
    let root = open_root(root)?;
    let resolved = resolve_checked(tool, &root, raw, true, false, ctx)?;
    let bytes = match resolved.place.read(MAX_EDIT_BYTES) {
        Ok((bytes, size)) if bytes.len() as u64 > MAX_EDIT_BYTES => {
            return Err(Outcome::error(format!(
                "{tool}: `{raw}` is {} bytes, larger than the {MAX_EDIT_BYTES} bytes {tool} reads",
                size.max(bytes.len() as u64)
            )))
        }
        Ok((bytes, _)) => bytes,
        Err(error) => return Err(read_error(tool, &root, raw, error)),
    };
    if grep::is_binary(&bytes) {
        return Err(Outcome::error(format!(
            "{tool}: `{raw}` looks binary (it holds NUL bytes); only text files are read"
        )));
    }
    Ok((shown(&resolved).to_string(), bytes))
}

fn line_count(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|byte| **byte == b'\n').count();
    newlines + usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}

pub(crate) fn grep_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "grep_file";
    let (pattern, context, max) = match (
        args.string("pattern"),
        args.opt_count("contextLines", 2, 0, 10),
        args.opt_count("maxMatches", 30, 1, 1000),
    ) {
        (Ok(pattern), Ok(context), Ok(max)) => (pattern, context, max as u64),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    let matcher = match grep::compile(tool, pattern, false) {
        Ok(matcher) => matcher,
        Err(outcome) => return outcome,
    };
    let (path, bytes) = match read_text(tool, args, root, ctx) {
        Ok(read) => read,
        Err(outcome) => return outcome,
    };
    let (pieces, matches) = grep::find(&matcher, &bytes, context, max);
    if matches == 0 {
        return Outcome::ok(format!("No matches for `{pattern}` in {path}"));
    }
    let mut text = format!(
        "[{matches} match(es) in {path} ({} lines total)]\n",
        line_count(&bytes)
    );
    if matches >= max {
        text.push_str(&format!(
            "[capped at {max} matches; use a more specific pattern or raise `maxMatches`]\n"
        ));
    }
    let cap = ctx.limits.output_cap;
    for piece in &pieces {
        let line = match piece {
            Piece::Line {
                number,
                text,
                matched,
            } => format!("{number:>6}{} {text}", if *matched { ':' } else { '-' }),
            Piece::Break => "  ---".to_string(),
        };
        if text.len() + line.len() + 1 > cap {
            text.push_str("[output truncated: narrow the pattern]\n");
            break;
        }
        text.push_str(&line);
        text.push('\n');
    }
    text.pop();
    Outcome::ok(text)
}

/// A file type in words.
pub(super) fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "FIFO (named pipe)",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        _ => "unknown",
    }
}

/// Permission bits as `rwxr-xr-x (755)`.
fn permissions(mode: u32) -> String {
    let mut rwx = String::new();
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 0o7;
        rwx.push(if bits & 4 != 0 { 'r' } else { '-' });
        rwx.push(if bits & 2 != 0 { 'w' } else { '-' });
        rwx.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    format!("{rwx} ({:03o})", mode & 0o777)
}

pub(crate) fn get_file_info(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "get_file_info";
    let raw = match args.string("path") {
        Ok(raw) => raw,
        Err(outcome) => return outcome,
    };
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let resolved = match resolve_checked(tool, &root, raw, true, false, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let stat = match resolved.place.stat() {
        Ok(Some(stat)) => stat,
        Ok(None) => return Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Err(error) => return Outcome::error(format!("{tool}: cannot inspect `{raw}`: {error}")),
    };
    let kind = FileType::from_raw_mode(stat.st_mode);
    let mut text = format!("Path: {}\nType: {}\n", shown(&resolved), kind_name(kind));
    if kind == FileType::RegularFile {
        text.push_str(&format!("Size: {} bytes\n", stat.st_size.max(0)));
    }
    #[allow(clippy::unnecessary_cast)]
    let modified = stat.st_mtime as i64;
    text.push_str(&format!(
        "Modified: {}\nPermissions: {}",
        rfc3339(u64::try_from(modified).unwrap_or(0)),
        permissions(stat.st_mode)
    ));
    Outcome::ok(text)
}

pub(crate) fn get_file_summary(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let (path, bytes) = match read_text("get_file_summary", args, root, ctx) {
        Ok(read) => read,
        Err(outcome) => return outcome,
    };
    if let Some(summary) = super::fs_stat::saved_summary(args, root, ctx) {
        return Outcome::ok(format!("[saved summary of {path}]\n{summary}"));
    }
    let text = String::from_utf8_lossy(&bytes);
    let total = line_count(&bytes);
    let preview: Vec<&str> = text.lines().take(SUMMARY_LINES).collect();
    let mut out = preview.join("\n");
    if total > SUMMARY_LINES {
        out.push_str(&format!(
            "\n\n[preview of {path}: the first {SUMMARY_LINES} of {total} lines ({} bytes); \
             grep_file finds a section, read_file reads it all]",
            bytes.len()
        ));
    } else {
        out.push_str(&format!(
            "\n\n[all of {path}: {total} lines, {} bytes]",
            bytes.len()
        ));
    }
    Outcome::ok(out)
}

pub(crate) fn list_directory(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "list_directory";
    let (raw, pattern) = match (args.opt_text("directory"), args.opt_text("pattern")) {
        (Ok(raw), Ok(pattern)) => (
            raw.filter(|raw| !raw.trim().is_empty()).unwrap_or("."),
            pattern.filter(|p| !p.trim().is_empty()).unwrap_or("*"),
        ),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    let glob = match globset::GlobBuilder::new(pattern.trim())
        .literal_separator(true)
        .backslash_escape(true)
        .build()
    {
        Ok(glob) => glob.compile_matcher(),
        Err(error) => {
            return Outcome::error(format!(
                "{tool}: invalid glob `{pattern}`: {}",
                error.kind()
            ))
        }
    };
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let resolved = match resolve_checked(tool, &root, raw, true, false, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    let names = match resolved.place.list() {
        Ok(names) => names,
        Err(Error::NotFound) => return Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Err(Error::NotRegular(_)) => {
            return Outcome::error(format!(
                "{tool}: `{raw}` is a file, not a directory; read_file reads it"
            ))
        }
        Err(error) => return Outcome::error(format!("{tool}: cannot list `{raw}`: {error}")),
    };
    let matching = |name: &&String| glob.is_match(name.trim_end_matches('/'));
    let dirs = names
        .iter()
        .filter(|name| name.ends_with('/'))
        .filter(matching);
    let files = names
        .iter()
        .filter(|name| !name.ends_with('/'))
        .filter(matching);
    let entries: Vec<&String> = dirs.chain(files).collect();
    if entries.is_empty() {
        return Outcome::ok(format!(
            "No entries of {} match `{pattern}`",
            shown(&resolved)
        ));
    }
    let mut text = String::new();
    for (index, name) in entries.iter().enumerate() {
        if index == MAX_ENTRIES || text.len() + name.len() + 1 > ctx.limits.output_cap {
            text.push_str(&format!(
                "[truncated: {} more entries; use a more specific `pattern`]\n",
                entries.len() - index
            ));
            break;
        }
        text.push_str(name);
        text.push('\n');
    }
    text.pop();
    Outcome::ok(text)
}

pub(crate) fn create_directory(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "create_directory";
    let raw = match args.string("path") {
        Ok(raw) if raw.trim().is_empty() => return Outcome::error("the path is empty"),
        Ok(raw) => raw,
        Err(outcome) => return outcome,
    };
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let mut resolved = match resolve_checked(tool, &root, raw, true, true, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    if let Err(outcome) = deny_protected(&root, &resolved, raw, ctx) {
        return outcome;
    }
    match resolved.place.make_dir() {
        Ok(true) => Outcome::ok(format!("Created directory {}", shown(&resolved))),
        Ok(false) => Outcome::ok(format!("Directory {} already exists", shown(&resolved))),
        Err(Error::NotRegular(kind)) => Outcome::error(format!(
            "{tool}: `{raw}` exists and is {kind}, not a directory"
        )),
        Err(error) => Outcome::error(format!("{tool}: cannot create `{raw}`: {error}")),
    }
}

/// `set_permissions`' `mode`: three or four octal digits (`755`, `0644`), as a string or a
/// number written with those digits.
fn octal_mode(tool: &str, args: &Args) -> Result<u32, Outcome> {
    let text = match args.value("mode") {
        Some(serde_json::Value::String(text)) => text.trim().to_string(),
        Some(serde_json::Value::Number(number)) => number.to_string(),
        _ => String::new(),
    };
    let digits = (3..=4).contains(&text.len()) && text.bytes().all(|b| (b'0'..=b'7').contains(&b));
    let mode = match u32::from_str_radix(&text, 8) {
        Ok(mode) if digits => mode,
        _ => {
            return Err(Outcome::error(format!(
                "{tool}: `mode` must be 3 or 4 octal digits, such as `755` or `0644`"
            )))
        }
    };
    if mode & 0o6000 != 0 {
        return Err(Outcome::error(format!(
            "{tool}: the setuid and setgid bits ({mode:04o}) are not set by the tools"
        )));
    }
    Ok(mode)
}

pub(crate) fn set_permissions(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "set_permissions";
    let (raw, mode) = match (args.string("path"), octal_mode(tool, args)) {
        (Ok(raw), Ok(mode)) => (raw, mode),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    let root = match open_root(root) {
        Ok(root) => root,
        Err(outcome) => return outcome,
    };
    let resolved = match resolve_checked(tool, &root, raw, true, false, ctx) {
        Ok(resolved) => resolved,
        Err(outcome) => return outcome,
    };
    if let Err(outcome) = deny_protected(&root, &resolved, raw, ctx) {
        return outcome;
    }
    if let Some(what) = super::sandbox::mode_protected(&resolved.rel) {
        return Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` is {what}, whose permissions the tools do not change"),
        );
    }
    if resolved.rel.is_empty() || resolved.place.name().is_none() {
        return Outcome::denied(
            DenialKind::Sandbox,
            format!(
                "`{raw}` is the work directory itself, whose permissions the tools do not change"
            ),
        );
    }
    match resolved.place.set_mode(mode) {
        Ok(()) => Outcome::ok(format!(
            "Permissions of {} set to {}",
            resolved.rel,
            permissions(mode)
        )),
        Err(Error::NotFound) => Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Err(Error::NotRegular(kind)) => Outcome::error(format!(
            "{tool}: `{raw}` is {kind}; only files and directories are changed"
        )),
        Err(error @ Error::Linked(_)) => walk_error(tool, &root, raw, error),
        Err(error) => Outcome::error(format!(
            "{tool}: cannot change the permissions of `{raw}`: {error}"
        )),
    }
}
