//! The Search plugin: `search_files` (file names by glob) and `search_content` (lines by
//! regex), over a directory of the sandbox walked the way ripgrep walks it.
//!
//! Security decisions (paths and credentials: see [`super::sandbox`]):
//! - The directory argument resolves through [`crate::confine`] like every path argument;
//!   `.git/` is never searched or listed (refused as the directory, pruned in the walk).
//! - The walk (the `ignore` crate) follows no symlink: a symlink is neither listed nor
//!   searched, so nothing outside the sandbox root is reached through one. It honours
//!   `.gitignore`, `.ignore` and `.git/info/exclude` inside the sandbox (also those of the
//!   directories between the root and the searched directory) and skips hidden entries, as
//!   ripgrep does; ignore files above the root and the user's global git excludes are not
//!   read, so a search answers the same whoever runs it.
//! - A file's bytes are read through `confine` by its path relative to the root, the final
//!   component not followed, so a directory swapped for a symlink during the walk cannot
//!   redirect a read; only regular files are read, at most [`MAX_FILE_BYTES`].
//! - Credential files (`Security.DenyCredentialFiles`) are skipped: neither listed nor searched.
//! - Results are bounded: `maxResults` (at most [`MAX_RESULTS`]), [`MAX_VISITED`] entries
//!   walked, and the run's output cap; the result says when a bound cut it short.

use crate::history::DenialKind;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::WalkBuilder;

use super::fs::{resolve_checked, shown};
use super::grep::{self, Piece};
use super::sandbox::{is_credential_path, open_root};
use super::{Args, Outcome, ToolContext};
use crate::confine::{Root, Walk};

#[cfg(all(test, unix))]
#[path = "search_tests.rs"]
mod tests;

/// The most results `maxResults` can ask for.
pub(crate) const MAX_RESULTS: usize = 1000;
/// The most entries one search walks.
pub(crate) const MAX_VISITED: usize = 100_000;
/// The largest file searched, in bytes.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// The most context lines around a match.
const MAX_CONTEXT: usize = 10;
/// Output kept free for `search_content`'s header.
pub(super) const HEADER_ROOM: usize = 200;

/// The directory a search covers.
pub(super) struct Scope {
    root: Root,
    /// The directory relative to the root (`.` for the root), for messages.
    pub(super) shown: String,
    abs: PathBuf,
}

pub(super) fn open_scope(
    tool: &str,
    args: &Args,
    root: &Path,
    ctx: &ToolContext,
) -> Result<Scope, Outcome> {
    let raw = args
        .opt_text("directory")?
        .filter(|raw| !raw.trim().is_empty())
        .unwrap_or(".");
    let root = open_root(root)?;
    let resolved = resolve_checked(tool, &root, raw, true, false, ctx)?;
    if is_git_internal(&resolved.rel) {
        return Err(Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` is inside `.git/`, git's own state, which {tool} does not search"),
        ));
    }
    match resolved.place.kind() {
        Ok(Some(rustix::fs::FileType::Directory)) => {}
        Ok(Some(_)) => {
            return Err(Outcome::error(format!(
                "{tool}: `{raw}` is a file, not a directory; use grep_file to search one file"
            )))
        }
        Ok(None) => return Err(Outcome::error(format!("{tool}: `{raw}` does not exist"))),
        Err(error) => {
            return Err(Outcome::error(format!(
                "{tool}: cannot open `{raw}`: {error}"
            )))
        }
    }
    let abs = if resolved.rel.is_empty() {
        root.path().to_path_buf()
    } else {
        root.path().join(&resolved.rel)
    };
    Ok(Scope {
        shown: shown(&resolved).to_string(),
        root,
        abs,
    })
}

/// Whether a path relative to the root lies in a `.git` directory (any case, any depth).
fn is_git_internal(rel: &str) -> bool {
    rel.split('/').any(|part| part.eq_ignore_ascii_case(".git"))
}

/// A file-name filter: matched against the path below the searched directory when it
/// holds a `/`, else against the file name (so `*.rs` finds Rust files at any depth).
pub(super) struct NameFilter {
    glob: GlobMatcher,
    by_path: bool,
}

impl NameFilter {
    pub(super) fn new(tool: &str, pattern: &str) -> Result<NameFilter, Outcome> {
        let pattern = pattern.trim();
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|error| {
                Outcome::error(format!(
                    "{tool}: invalid glob `{pattern}`: {}",
                    error.kind()
                ))
            })?;
        Ok(NameFilter {
            glob: glob.compile_matcher(),
            by_path: pattern.contains('/'),
        })
    }

    fn matches(&self, below: &Path) -> bool {
        if self.by_path {
            self.glob.is_match(below)
        } else {
            below
                .file_name()
                .is_some_and(|name| self.glob.is_match(Path::new(name)))
        }
    }
}

/// The ignore rules of the directories between the root and the searched directory (the
/// walk reads those at and below it itself).
fn ancestor_rules(scope: &Scope) -> Vec<Gitignore> {
    let mut rules = Vec::new();
    let mut dir = scope.abs.clone();
    while dir.pop() && dir.starts_with(scope.root.path()) {
        let mut builder = GitignoreBuilder::new(&dir);
        for name in [".gitignore", ".ignore"] {
            let file = dir.join(name);
            // Only a regular file of the sandbox, never one reached through a symlink.
            if std::fs::symlink_metadata(&file).is_ok_and(|meta| meta.is_file()) {
                let _ = builder.add(file);
            }
        }
        if let Ok(rule) = builder.build() {
            if !rule.is_empty() {
                rules.push(rule);
            }
        }
    }
    rules
}

/// A file the walk found: its path relative to the root and below the searched directory.
pub(super) struct Found {
    pub(super) rel: String,
}

/// What a walk found and what it passed over.
pub(super) struct Walked {
    files: Vec<Found>,
    /// The walk stopped at [`MAX_VISITED`] entries.
    pub(super) cut: bool,
}

/// The regular files under `scope` that `keep` accepts, in file-name order, ripgrep's
/// rules applied, none larger than `max_size` bytes when given; stops once `enough` says so.
pub(super) fn walk(
    scope: &Scope,
    keep: &NameFilter,
    max_size: Option<u64>,
    mut enough: impl FnMut(&Found) -> bool,
) -> Walked {
    let rules = ancestor_rules(scope);
    let mut builder = WalkBuilder::new(&scope.abs);
    builder
        .hidden(true)
        .parents(false)
        .git_global(false)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .require_git(false)
        .follow_links(false)
        .max_filesize(max_size)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            !entry.file_name().eq_ignore_ascii_case(".git")
                && !rules
                    .iter()
                    .any(|rule| rule.matched(entry.path(), is_dir).is_ignore())
        });
    let mut files = Vec::new();
    let mut visited = 0;
    for entry in builder.build() {
        visited += 1;
        if visited > MAX_VISITED {
            return Walked { files, cut: true };
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let (Ok(rel), Ok(below)) = (
            entry.path().strip_prefix(scope.root.path()),
            entry.path().strip_prefix(&scope.abs),
        ) else {
            continue;
        };
        let rel = rel
            .components()
            .map(|part| part.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if is_credential_path(&rel) || is_git_internal(&rel) || !keep.matches(below) {
            continue;
        }
        let found = Found { rel };
        let stop = enough(&found);
        files.push(found);
        if stop {
            break;
        }
    }
    Walked { files, cut: false }
}

/// The bytes of a file the walk found, read through the race-free walk (its final
/// component not followed); `None` when it is too large, no longer a regular file (swapped
/// meanwhile) or unreadable.
pub(super) fn read_found(scope: &Scope, found: &Found) -> Option<Vec<u8>> {
    let walk = Walk {
        follow_final: false,
        missing_dirs: false,
    };
    match scope
        .root
        .resolve(Path::new(&found.rel), walk)
        .and_then(|place| place.read(MAX_FILE_BYTES))
    {
        Ok((bytes, _)) if bytes.len() as u64 <= MAX_FILE_BYTES => Some(bytes),
        _ => None,
    }
}

/// Appends `line` and a newline to `text` unless that passes `cap`; false when it would.
fn push_capped(text: &mut String, line: &str, cap: usize) -> bool {
    if text.len() + line.len() + 1 > cap {
        return false;
    }
    text.push_str(line);
    text.push('\n');
    true
}

pub(crate) fn search_files(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "search_files";
    let pattern = match args.opt_text("pattern") {
        Ok(pattern) => pattern.filter(|p| !p.trim().is_empty()).unwrap_or("*"),
        Err(outcome) => return outcome,
    };
    let (max, filter, scope) = match (
        args.opt_count("maxResults", 100, 1, MAX_RESULTS),
        NameFilter::new(tool, pattern),
        open_scope(tool, args, root, ctx),
    ) {
        (Ok(max), Ok(filter), Ok(scope)) => (max, filter, scope),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    // One more than asked, to tell whether there are more.
    let mut count = 0;
    let walked = walk(&scope, &filter, None, |_| {
        count += 1;
        count > max
    });
    if walked.files.is_empty() {
        let cut = if walked.cut {
            " (the walk stopped early; narrow `directory`)"
        } else {
            ""
        };
        return Outcome::ok(format!(
            "No files match `{pattern}` under {}{cut}",
            scope.shown
        ));
    }
    let mut text = String::new();
    let mut listed = 0;
    for found in walked.files.iter().take(max) {
        if !push_capped(&mut text, &found.rel, ctx.limits.output_cap) {
            break;
        }
        listed += 1;
    }
    if listed < walked.files.len() || walked.cut {
        text.push_str(&format!(
            "[truncated: showing the first {listed} files; more exist; narrow `directory` or `pattern`]"
        ));
    } else {
        text.pop();
    }
    Outcome::ok(text)
}

pub(crate) fn search_content(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let tool = "search_content";
    let query = match args.string("query") {
        Ok(query) => query,
        Err(outcome) => return outcome,
    };
    let file_pattern = match args.opt_text("filePattern") {
        Ok(pattern) => pattern.filter(|p| !p.trim().is_empty()).unwrap_or("*"),
        Err(outcome) => return outcome,
    };
    let options = (
        args.opt_count("maxResults", 100, 1, MAX_RESULTS),
        args.opt_count("contextLines", 0, 0, MAX_CONTEXT),
        args.opt_flag("caseSensitive", false),
    );
    let (max, context, case_sensitive) = match options {
        (Ok(max), Ok(context), Ok(case)) => (max as u64, context, case),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    let (matcher, filter, scope) = match (
        grep::compile(tool, query, case_sensitive),
        NameFilter::new(tool, file_pattern),
        open_scope(tool, args, root, ctx),
    ) {
        (Ok(matcher), Ok(filter), Ok(scope)) => (matcher, filter, scope),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    let mut body = String::new();
    let mut matches = 0u64;
    let mut files = 0;
    let mut skipped_binary = 0;
    let mut full = false;
    let walked = walk(&scope, &filter, Some(MAX_FILE_BYTES), |found| {
        let bytes = match read_found(&scope, found) {
            Some(bytes) => bytes,
            None => return false,
        };
        if grep::is_binary(&bytes) {
            skipped_binary += 1;
            return false;
        }
        let (pieces, found_here) = grep::find(&matcher, &bytes, context, max - matches);
        if found_here == 0 {
            return false;
        }
        // Line by line within the output cap, leaving room for the header; only the
        // matches shown are counted.
        let budget = ctx.limits.output_cap.saturating_sub(HEADER_ROOM);
        let lines = pieces.iter().map(|piece| match piece {
            Piece::Line {
                number,
                text,
                matched,
            } => {
                let mark = if *matched { ':' } else { '-' };
                (format!("  L{number}{mark} {}", text.trim()), *matched)
            }
            Piece::Break => ("  --".to_string(), false),
        });
        let named = std::iter::once((found.rel.clone(), false)).chain(lines);
        for (index, (line, matched)) in named.enumerate() {
            if body.len() + line.len() + 1 > budget {
                full = true;
                return true;
            }
            body.push_str(&line);
            body.push('\n');
            matches += u64::from(matched);
            files += usize::from(index == 0);
        }
        matches >= max
    });
    if matches == 0 {
        let mut notes = String::new();
        if skipped_binary > 0 {
            notes.push_str(&format!(" ({skipped_binary} binary file(s) skipped)"));
        }
        if walked.cut || full {
            notes.push_str(" (the search stopped early; narrow `directory` or `filePattern`)");
        }
        return Outcome::ok(format!(
            "No matches for `{query}` under {} (hidden and .gitignored files are not searched){notes}",
            scope.shown
        ));
    }
    let mut header = format!("[RESULTS] {matches} match(es) in {files} file(s)");
    if matches >= max {
        header.push_str(" (limit reached; raise `maxResults` or narrow the search to see more)");
    }
    if full {
        header.push_str(" (output cap reached; narrow the search to see more)");
    }
    if walked.cut {
        header.push_str(" (the walk stopped early; narrow `directory`)");
    }
    if skipped_binary > 0 {
        header.push_str(&format!(" ({skipped_binary} binary file(s) skipped)"));
    }
    body.pop();
    Outcome::ok(format!("{header}\n\n{body}"))
}
