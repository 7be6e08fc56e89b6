//! The function schemas of the Search tools and of the FileSystem tools beyond the first
//! five, with upstream fuseraft-cli's argument names (camelCase; the snake_case spelling is
//! accepted too, see `Args::either`).

use serde_json::{json, Value as Json};

use super::{schema, string_prop, Tool};
use crate::effect::ToolSchema;

fn count_prop(description: &str) -> Json {
    json!({"type": "integer", "minimum": 0, "description": description})
}

fn flag_prop(description: &str) -> Json {
    json!({"type": "boolean", "description": description})
}

/// The schema of one tool of this set (the others are in `super::schema_of`).
pub(super) fn schema_of(tool: Tool) -> ToolSchema {
    let path = || string_prop("A path relative to the work directory.");
    let directory = || {
        string_prop("Optional: the directory to search, relative to the work directory (default: the work directory).")
    };
    let name = tool.name();
    match tool {
        Tool::GrepFile => schema(
            name,
            "Search one file for a regex (case-insensitive) and return the matching lines with numbers and context. \
             Cheaper than read_file for finding a section.",
            json!({
                "path": path(),
                "pattern": string_prop("The text or regex to find."),
                "contextLines": count_prop("Optional: lines shown before and after each match (default 2, at most 10)."),
                "maxMatches": count_prop("Optional: the most matches returned (default 30)."),
            }),
            &["path", "pattern"],
        ),
        Tool::GetFileInfo => schema(
            name,
            "Get a file's or directory's type, size, modification time and permissions. Also an existence check.",
            json!({"path": path()}),
            &["path"],
        ),
        Tool::GetFileSummary => schema(
            name,
            "The summary saved with save_file_summary while the file is unchanged; else a preview of a text file: \
             its first 30 lines and its length in lines and bytes. Use before read_file on large files.",
            json!({"path": path()}),
            &["path"],
        ),
        // The missing FileSystem tools (issue 29).
        Tool::StatFile => schema(
            name,
            "Get a path's kind, size, modification time and version: how many times fuseraft's file tools wrote it \
             in this run (0: never). Pass the version as write_file's `baseVersion` to refuse a stale overwrite.",
            json!({"path": path()}),
            &["path"],
        ),
        Tool::PathExists => schema(
            name,
            "Check whether a path exists, and whether it is a file or a directory.",
            json!({"path": path()}),
            &["path"],
        ),
        Tool::SaveFileSummary => schema(
            name,
            "Save a summary of a file for later get_file_summary calls in this run (kept until the file changes).",
            json!({"path": path(), "summary": string_prop("The summary text.")}),
            &["path", "summary"],
        ),
        Tool::ListDirectory => schema(
            name,
            "List one directory (not recursive): subdirectories first (ending in `/`), then files, optionally filtered by a glob.",
            json!({
                "directory": string_prop("Optional: the directory, relative to the work directory (default: the work directory)."),
                "pattern": string_prop("Optional: a glob on entry names, e.g. `*.rs` (default `*`)."),
            }),
            &[],
        ),
        Tool::CreateDirectory => schema(
            name,
            "Create a directory and any missing parents. Succeeds when it already exists.",
            json!({"path": path()}),
            &["path"],
        ),
        Tool::CopyFile => schema(
            name,
            "Copy a file, creating the destination's parent directories.",
            json!({
                "source": string_prop("The file to copy, relative to the work directory."),
                "destination": string_prop("The new file's path, relative to the work directory."),
                "overwrite": flag_prop("Optional: replace an existing destination (default false)."),
            }),
            &["source", "destination"],
        ),
        Tool::MoveFile => schema(
            name,
            "Move or rename a file or directory, creating the destination's parent directories.",
            json!({
                "source": string_prop("The file or directory to move, relative to the work directory."),
                "destination": string_prop("Its new path, relative to the work directory."),
                "overwrite": flag_prop("Optional: replace an existing destination file (default false)."),
            }),
            &["source", "destination"],
        ),
        Tool::DeleteDirectory => schema(
            name,
            "Delete a directory. A non-empty one needs `recursive: true`. A symlink is removed itself, never its target.",
            json!({
                "path": path(),
                "recursive": flag_prop("Optional: delete everything inside too (default false)."),
            }),
            &["path"],
        ),
        Tool::SetPermissions => schema(
            name,
            "Set the Unix permission bits of a file or directory (chmod), e.g. `755` to make a script executable.",
            json!({
                "path": path(),
                "mode": string_prop("3 or 4 octal digits, e.g. `755` or `0644` (setuid and setgid are refused)."),
            }),
            &["path", "mode"],
        ),
        Tool::SearchFiles => schema(
            name,
            "Find files by a glob, like `rg --files`: hidden and .gitignored files are skipped. A glob without `/` \
             matches file names at any depth (`*.rs`), one with `/` the path below `directory` (`src/**/*.rs`).",
            json!({
                "pattern": string_prop("Optional: the glob (default `*`, every file)."),
                "directory": directory(),
                "maxResults": count_prop("Optional: the most paths returned (default 100, at most 1000)."),
            }),
            &[],
        ),
        Tool::SearchSymbol | Tool::SearchCallers => {
            let (what, default) = if tool == Tool::SearchSymbol {
                (
                    "Find where a symbol is defined (class, struct, enum, interface, function, method, variable), \
                     across languages, by common definition forms. Hidden and .gitignored files are skipped.",
                    50,
                )
            } else {
                (
                    "Find the call sites and uses of a symbol (calls, `new`, type annotations, base types), its \
                     definitions left out. Hidden and .gitignored files are skipped.",
                    100,
                )
            };
            schema(
                name,
                what,
                json!({
                    "symbol": string_prop("The symbol's name, e.g. `parse_config` (matched as a whole word, in its exact case)."),
                    "directory": directory(),
                    "extension": string_prop("Optional: only files with this extension, e.g. `.rs` or `rs`."),
                    "maxResults": count_prop(&format!("Optional: the most lines returned (default {default}, at most 1000).")),
                }),
                &["symbol"],
            )
        }
        _ => schema(
            name,
            "Search file contents by regex (like grep or ripgrep) under a directory; hidden, .gitignored and binary files are \
             skipped. `query` is the pattern, not a path: use `directory` to scope.",
            json!({
                "query": string_prop("The text or regex to search for."),
                "directory": directory(),
                "filePattern": string_prop("Optional: a glob the files must match, e.g. `*.rs` (default `*`)."),
                "maxResults": count_prop("Optional: the most matching lines returned (default 100, at most 1000)."),
                "caseSensitive": flag_prop("Optional: match case exactly (default false)."),
                "contextLines": count_prop("Optional: lines shown before and after each match (default 0, at most 10)."),
            }),
            &["query"],
        ),
    }
}
