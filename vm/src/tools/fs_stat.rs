//! The FileSystem tools that look at a path without reading it, and the file summaries:
//! `stat_file`, `path_exists` and `save_file_summary` (upstream's names and arguments);
//! `get_file_summary` (`fs_extra.rs`) returns a saved summary through [`saved_summary`].
//!
//! Security decisions: every path resolves through [`crate::confine`] with the credential
//! rule (`fs::resolve_checked`), as `get_file_info`'s: a path out of the sandbox root is
//! `[DENIED: sandbox]` and a credential file `[DENIED: credentials]`, even for an existence
//! check (an answer would tell whether a key file is there). A summary is kept in the run's
//! memory ([`super::RunState`]), never written to disk, so `save_file_summary` changes no
//! file and needs no write permission beyond its `write` capability; a summary is at most
//! [`MAX_SUMMARY_BYTES`] and is dropped once its file changes.

use std::path::Path;

use rustix::fs::{FileType, Stat};

use super::fs::{resolve_checked, shown};
use super::fs_extra::kind_name;
use super::record::rfc3339;
use super::run_state::Summary;
use super::sandbox::{open_root, Resolved};
use super::{Args, Outcome, ToolContext};

#[cfg(all(test, unix))]
#[path = "fs_stat_tests.rs"]
mod tests;

/// The longest summary `save_file_summary` keeps, in bytes.
pub(crate) const MAX_SUMMARY_BYTES: usize = 16 * 1024;

/// Resolves the `path` argument of `tool` under the sandbox root with the credential rule.
fn resolve_path(
    tool: &str,
    args: &Args,
    root: &Path,
    ctx: &ToolContext,
) -> Result<(String, Resolved), Outcome> {
    let raw = args.string("path")?;
    if raw.trim().is_empty() {
        return Err(Outcome::error(format!("{tool}: the path is empty")));
    }
    let root = open_root(root)?;
    let resolved = resolve_checked(tool, &root, raw, true, true, ctx)?;
    Ok((raw.to_string(), resolved))
}

/// The stat of a resolved path; `Ok(None)` when nothing is there.
fn stat_of(tool: &str, raw: &str, resolved: &Resolved) -> Result<Option<Stat>, Outcome> {
    resolved
        .place
        .stat()
        .map_err(|error| Outcome::error(format!("{tool}: cannot inspect `{raw}`: {error}")))
}

/// A file's size and modification time in nanoseconds: what a saved summary is kept with.
#[allow(clippy::unnecessary_cast)]
fn stamp(stat: &Stat) -> (i64, i128) {
    let nanos = stat.st_mtime as i128 * 1_000_000_000 + stat.st_mtime_nsec as i128;
    (stat.st_size as i64, nanos)
}

/// `stat_file {path}`: `path=… kind=… size=… modified=… version=…`, one line.
pub(crate) fn stat_file(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "stat_file";
    let (raw, resolved) = match resolve_path(tool, args, root, ctx) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let stat = match stat_of(tool, &raw, &resolved) {
        Ok(Some(stat)) => stat,
        Ok(None) => return Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Err(outcome) => return outcome,
    };
    #[allow(clippy::unnecessary_cast)]
    let modified = u64::try_from(stat.st_mtime as i64).unwrap_or(0);
    Outcome::ok(format!(
        "path={} kind={} size={} modified={} version={}",
        shown(&resolved),
        kind_name(FileType::from_raw_mode(stat.st_mode)).replace(' ', "_"),
        stamp(&stat).0.max(0),
        rfc3339(modified),
        ctx.run_state.version(&resolved.rel)
    ))
}

/// `path_exists {path}`: `Exists: … (kind)` or `Does not exist: …`, both a success.
pub(crate) fn path_exists(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "path_exists";
    let (raw, resolved) = match resolve_path(tool, args, root, ctx) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    match stat_of(tool, &raw, &resolved) {
        Ok(Some(stat)) => Outcome::ok(format!(
            "Exists: {} ({})",
            shown(&resolved),
            kind_name(FileType::from_raw_mode(stat.st_mode))
        )),
        Ok(None) => Outcome::ok(format!("Does not exist: {}", shown(&resolved))),
        Err(outcome) => outcome,
    }
}

/// `save_file_summary {path, summary}`: keeps `summary` for `get_file_summary` while the
/// file is unchanged.
pub(crate) fn save_file_summary(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "save_file_summary";
    let summary = match args.string("summary") {
        Ok(summary) => summary.trim(),
        Err(outcome) => return outcome,
    };
    if summary.is_empty() {
        return Outcome::error(format!("{tool}: the summary is empty"));
    }
    if summary.len() > MAX_SUMMARY_BYTES {
        return Outcome::error(format!(
            "{tool}: the summary is {} bytes, more than the {MAX_SUMMARY_BYTES} kept; shorten it",
            summary.len()
        ));
    }
    let (raw, resolved) = match resolve_path(tool, args, root, ctx) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let stat = match stat_of(tool, &raw, &resolved) {
        Ok(Some(stat)) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => stat,
        Ok(Some(stat)) => {
            return Outcome::error(format!(
                "{tool}: `{raw}` is {}, not a regular file; only files have summaries",
                kind_name(FileType::from_raw_mode(stat.st_mode))
            ))
        }
        Ok(None) => return Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Err(outcome) => return outcome,
    };
    let summary = Summary {
        text: summary.to_string(),
        stamp: stamp(&stat),
    };
    ctx.run_state.save_summary(&resolved.rel, summary);
    Outcome::ok(format!(
        "Summary saved for {}; get_file_summary returns it until the file changes",
        shown(&resolved)
    ))
}

/// The summary saved for the file `args` names, if it is unchanged since; `None` on any
/// failure (the caller reports it while reading the file).
pub(crate) fn saved_summary(args: &Args, root: &Path, ctx: &ToolContext) -> Option<String> {
    let (raw, resolved) = resolve_path("get_file_summary", args, root, ctx).ok()?;
    let stat = stat_of("get_file_summary", &raw, &resolved).ok()??;
    ctx.run_state.summary(&resolved.rel, stamp(&stat))
}
