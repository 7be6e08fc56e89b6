//! Shared plumbing of the validators: parameters and settings, artifact paths under the
//! work dir, reading files and the change log, and the small matching rules they share.

use std::path::{Component, Path, PathBuf};

use regex::{Regex, RegexBuilder};
use serde_json::Value as Json;

use crate::changes::{self, ChangeLog, Entry};
use crate::effect::{Check, CheckContext};

/// Where the brief lives unless `Validation.BriefPath` says otherwise.
pub const DEFAULT_BRIEF_PATH: &str = ".fuseraft/artifacts/brief.json";
/// Where the test report lives unless `Validation.TestReportPath` says otherwise.
pub const DEFAULT_TEST_REPORT_PATH: &str = ".fuseraft/artifacts/test-report.json";
/// `Validation.TestAssertionPatterns` when the setting is absent (semantics notes §16).
pub const DEFAULT_ASSERTION_PATTERNS: &[&str] = &[
    r"tester::assert",
    r"if .+ throw",
    r"\bassert",
    r"\bexpect\(",
    r"\bself\.assert",
    r"\bt\.(Error|Fatal|Fail|Log)\b",
];

/// Artifacts larger than this are refused rather than read into memory.
const MAX_ARTIFACT_BYTES: u64 = 16 * 1024 * 1024;

/// Everything one check may read: its parameters, the run's context and the work dir.
pub(super) struct Env<'a> {
    pub check: &'a Check,
    pub context: &'a CheckContext,
    pub work_dir: &'a Path,
    /// The run's confinement of the work dir, for the commands a check runs.
    pub confinement: &'a crate::sandbox::Confinement,
}

/// A file the check reads: the path as shown to the agent (relative, after `{session_id}`
/// expansion, so messages stay stable across work dirs) and the path on disk.
#[derive(Clone, Debug)]
pub(super) struct Artifact {
    pub shown: String,
    pub path: PathBuf,
}

/// Why a file could not be read.
pub(super) enum ReadError {
    /// The file does not exist (or is not a regular file).
    Missing,
    /// It exists but could not be read; the message names the file.
    Unreadable(String),
}

impl<'a> Env<'a> {
    /// The check's parameters.
    pub(super) fn params(&self) -> &'a crate::effect::CheckParams {
        &self.check.params
    }

    /// The run's `Validation`, `ChangeTracking` and `TestSelector` settings.
    pub(super) fn validation(&self) -> &'a fuseraft_compiler::ir::Validation {
        &self.context.validation
    }

    /// Resolves an artifact path: `{session_id}` expanded, relative to the work dir, and
    /// refused when it still holds `{session_id}` or leaves the work dir (absolute path,
    /// `..` above the root, or a symlink pointing outside).
    pub(super) fn resolve(&self, raw: &str, what: &str) -> Result<Artifact, String> {
        let raw = raw.trim();
        let session = self.context.session_id.trim();
        let expanded = raw.replace("{session_id}", session);
        if expanded.contains("{session_id}") || (session.is_empty() && raw.contains("{session_id}"))
        {
            return Err(format!(
                "the {what} path `{raw}` contains `{{session_id}}` but no session id is set; \
                 this is a fuseraft internal error. Do NOT create a directory literally named \
                 `{{session_id}}`."
            ));
        }
        let relative = Path::new(&expanded);
        if expanded.starts_with('/') || expanded.starts_with('\\') || relative.is_absolute() {
            return Err(format!(
                "the {what} path `{expanded}` is absolute; artifact paths must be relative to \
                 the work dir"
            ));
        }
        let mut depth = 0usize;
        for component in relative.components() {
            match component {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir => {
                    if depth == 0 {
                        return Err(format!(
                            "the {what} path `{expanded}` escapes the work dir through `..`"
                        ));
                    }
                    depth -= 1;
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!(
                        "the {what} path `{expanded}` is absolute; artifact paths must be \
                         relative to the work dir"
                    ));
                }
            }
        }
        let path = self.work_dir.join(relative);
        if let (Ok(real), Ok(root)) = (path.canonicalize(), self.work_dir.canonicalize()) {
            if !real.starts_with(&root) {
                return Err(format!(
                    "the {what} path `{expanded}` resolves outside the work dir (symlink)"
                ));
            }
        }
        Ok(Artifact {
            shown: expanded,
            path,
        })
    }

    /// A path written inside an artifact (a brief's `files_to_change` entry) on disk, or
    /// `None` when it would leave the work dir: such files are treated as absent, never read.
    pub(super) fn listed_file(&self, raw: &str) -> Option<PathBuf> {
        self.resolve(raw, "listed file")
            .ok()
            .map(|artifact| artifact.path)
    }

    /// The brief: `Validation.BriefPath`, else [`DEFAULT_BRIEF_PATH`].
    pub(super) fn brief(&self) -> Result<Artifact, String> {
        let raw = (self.validation().brief_path.as_deref()).unwrap_or(DEFAULT_BRIEF_PATH);
        self.resolve(raw, "brief")
    }

    /// The test report: `Validation.TestReportPath`, else [`DEFAULT_TEST_REPORT_PATH`].
    pub(super) fn test_report(&self) -> Result<Artifact, String> {
        let raw =
            (self.validation().test_report_path.as_deref()).unwrap_or(DEFAULT_TEST_REPORT_PATH);
        self.resolve(raw, "test report")
    }

    /// The change log: `Validation.ChangeLogPath` (what upstream's validators read), else
    /// `ChangeTracking.Path` (where the tools write; one rule, `ir::Validation`), else
    /// [`changes::DEFAULT_PATH`].
    pub(super) fn change_log_path(&self) -> Result<Artifact, String> {
        let raw = (self.validation().change_log_path.as_deref()).unwrap_or(changes::DEFAULT_PATH);
        self.resolve(raw, "change log")
    }

    /// The change log when it exists (`None` otherwise: every rule that reads it is skipped
    /// or falls back, as upstream's are when the file is absent): the snapshot merged with
    /// the records of its append log (`changes::store`). An unreadable or malformed log is
    /// an error, never an empty log.
    pub(super) fn change_log(&self) -> Result<Option<ChangeLog>, String> {
        let artifact = self.change_log_path()?;
        // Held across both reads, so that no compaction falls between them.
        let _lock = changes::store::lock(&artifact.path, false).ok();
        let snapshot = self.change_log_snapshot(&artifact)?;
        let pending =
            changes::store::read_pending(&artifact.path, snapshot.as_ref()).map_err(|error| {
                error.replace(&artifact.path.display().to_string(), &artifact.shown)
            })?;
        if snapshot.is_none() && pending.is_empty() {
            return Ok(None);
        }
        let mut log = snapshot.unwrap_or_default();
        log.absorb_all(pending);
        Ok(Some(log))
    }

    /// `changes.json` alone, checked for upstream's shape.
    fn change_log_snapshot(&self, artifact: &Artifact) -> Result<Option<ChangeLog>, String> {
        let text = match read_text(artifact) {
            Ok(text) => text,
            Err(ReadError::Missing) => return Ok(None),
            Err(ReadError::Unreadable(error)) => {
                return Err(format!(
                    "could not read change log `{}`: {error}",
                    artifact.shown
                ))
            }
        };
        let invalid =
            |error: String| format!("change log `{}` is not valid: {error}", artifact.shown);
        let root: Json = serde_json::from_str(&text).map_err(|error| invalid(error.to_string()))?;
        if !root.is_object() {
            return Err(invalid(format!(
                "expected a JSON object, found {}",
                kind(&root)
            )));
        }
        if let Some(entries) = root.get("entries") {
            if !entries.is_array() && !entries.is_null() {
                return Err(invalid(format!(
                    "`entries` must be an array, found {}",
                    kind(entries)
                )));
            }
        }
        ChangeLog::parse(&text).map(Some).map_err(invalid)
    }

    /// `Validation.TestAssertionPatterns` (one regex a line), else the defaults of §16.
    /// Patterns match ignoring case. An invalid pattern is a configuration error and fails
    /// the check loudly (upstream skips it silently).
    pub(super) fn assertion_patterns(&self) -> Result<Vec<Regex>, String> {
        let written = &self.validation().test_assertion_patterns;
        let lines: Vec<&str> = match written.is_empty() {
            false => written.iter().map(String::as_str).collect(),
            true => DEFAULT_ASSERTION_PATTERNS.to_vec(),
        };
        lines
            .into_iter()
            .map(|pattern| {
                RegexBuilder::new(pattern)
                    .case_insensitive(true)
                    .build()
                    .map_err(|error| {
                        format!(
                            "Validation.TestAssertionPatterns: invalid regex `{pattern}`: {error}"
                        )
                    })
            })
            .collect()
    }
}

/// Reads a text artifact: refuses directories, files over 16 MiB and non-UTF-8 content
/// with a message instead of failing later.
pub(super) fn read_text(artifact: &Artifact) -> Result<String, ReadError> {
    read_path(&artifact.path)
}

/// [`read_text`] for a path on disk: a regular file only, opened with `O_NONBLOCK` and
/// checked with `fstat` before a byte is read, so a FIFO or a device planted under an
/// artifact's name is refused at once instead of blocking the validator (and Ctrl-C).
pub(super) fn read_path(path: &Path) -> Result<String, ReadError> {
    let bytes = read_regular(path)?;
    String::from_utf8(bytes)
        .map_err(|_| ReadError::Unreadable("it is not valid UTF-8 text".to_string()))
}

#[cfg(unix)]
fn read_regular(path: &Path) -> Result<Vec<u8>, ReadError> {
    use crate::confine::Error;
    match crate::confine::read_regular_path(path, MAX_ARTIFACT_BYTES, true) {
        Ok((_, size)) if size > MAX_ARTIFACT_BYTES => Err(too_large(size)),
        Ok((bytes, _)) if bytes.len() as u64 > MAX_ARTIFACT_BYTES => {
            Err(too_large(bytes.len() as u64))
        }
        Ok((bytes, _)) => Ok(bytes),
        Err(Error::NotFound) => Err(ReadError::Missing),
        Err(Error::NotRegular("a directory")) => Err(ReadError::Unreadable(
            "it is a directory, not a file".to_string(),
        )),
        Err(error) => Err(ReadError::Unreadable(error.to_string())),
    }
}

#[cfg(not(unix))]
fn read_regular(path: &Path) -> Result<Vec<u8>, ReadError> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Err(ReadError::Unreadable(
            "it is a directory, not a file".to_string(),
        )),
        Ok(metadata) if metadata.len() > MAX_ARTIFACT_BYTES => Err(too_large(metadata.len())),
        Ok(_) => std::fs::read(path).map_err(|error| ReadError::Unreadable(error.to_string())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Err(ReadError::Missing),
        Err(error) => Err(ReadError::Unreadable(error.to_string())),
    }
}

fn too_large(size: u64) -> ReadError {
    ReadError::Unreadable(format!(
        "it is {size} bytes, over the {MAX_ARTIFACT_BYTES}-byte limit"
    ))
}

/// The JSON type of a value, for error messages.
pub(super) fn kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// A member of a JSON object: the exact key first, then a case-insensitive match (upstream
/// deserialises with case-insensitive property names).
pub(super) fn member<'v>(object: &'v Json, key: &str) -> Option<&'v Json> {
    let map = object.as_object()?;
    map.get(key).or_else(|| {
        map.iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value)
    })
}

/// An optional string member: absent and `null` are `None`; any other type is an error.
pub(super) fn opt_string(object: &Json, key: &str, at: &str) -> Result<Option<String>, String> {
    match member(object, key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!(
            "`{at}{key}` must be a string, found {}",
            kind(other)
        )),
    }
}

/// Paths listed in an array of path strings or `{path, ...}` objects (a brief's
/// `files_to_change`). Blank paths are dropped; any other element type is an error naming
/// the element.
pub(super) fn path_list(value: &Json, field: &str) -> Result<Vec<String>, String> {
    let Some(items) = value.as_array() else {
        return Err(format!("`{field}` must be an array, found {}", kind(value)));
    };
    let mut paths = Vec::new();
    for (idx, item) in items.iter().enumerate() {
        let path = match item {
            Json::String(path) => path.clone(),
            Json::Object(_) => match opt_string(item, "path", &format!("{field}[{idx}].")) {
                Ok(Some(path)) => path,
                Ok(None) => return Err(format!("`{field}[{idx}]` has no `path` string")),
                Err(error) => return Err(error),
            },
            other => {
                return Err(format!(
                    "`{field}[{idx}]` must be a path string or an object with a `path` string, \
                     found {}",
                    kind(other)
                ))
            }
        };
        if !path.trim().is_empty() {
            paths.push(path);
        }
    }
    Ok(paths)
}

/// Upstream's path normalisation: `\` → `/`, trimmed, a leading `./` removed.
pub(super) fn normalize_path(path: &str) -> String {
    let path = path.replace('\\', "/");
    let path = path.trim();
    path.strip_prefix("./").unwrap_or(path).to_string()
}

/// Two normalised paths name the same file: equal ignoring case, or one ends with `/` +
/// the other (an absolute path in the log matches a relative one in the brief).
pub(super) fn paths_match(written: &str, required: &str) -> bool {
    let written = written.to_lowercase();
    let required = required.to_lowercase();
    written == required
        || written.ends_with(&format!("/{required}"))
        || required.ends_with(&format!("/{written}"))
}

/// Case-insensitive substring test.
pub(super) fn contains_ci(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// The newest change-log entry of the active session: the highest `turnIndex`, the first
/// in file order among equals (upstream's stable `OrderByDescending(...).First()`).
pub(super) fn newest_entry(log: &ChangeLog) -> Option<&Entry> {
    let mut newest: Option<&Entry> = None;
    for entry in log.session_entries() {
        if newest.is_none_or(|best| entry.turn_index > best.turn_index) {
            newest = Some(entry);
        }
    }
    newest
}

/// At most `limit` characters of `text`, marked when cut.
pub(super) fn truncate(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}\n...(truncated)", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    use super::{read_path, ReadError};
    use crate::validate::testutil::Fixture;

    /// Reads on another thread: a blocking open fails the test after 10 s.
    fn read_within(path: std::path::PathBuf) -> Result<String, ReadError> {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(read_path(&path));
        });
        receiver
            .recv_timeout(Duration::from_secs(10))
            .expect("the artifact read returned within 10 s")
    }

    fn unreadable(result: Result<String, ReadError>) -> String {
        match result {
            Err(ReadError::Unreadable(why)) => why,
            Err(ReadError::Missing) => "missing".to_string(),
            Ok(text) => panic!("read {text:?}"),
        }
    }

    /// A FIFO with no writer, `/dev/zero` and a socket under an artifact's name are refused
    /// at once, saying what they are; a directory stays "a directory".
    #[test]
    fn artifacts_that_are_not_regular_files_never_block() {
        let fx = Fixture::new("artifact-fifo");
        let dir = fx.dir().to_path_buf();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("brief.json"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.json")).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(dir.join("sock.json")).unwrap();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let fifo = unreadable(read_within(dir.join("brief.json")));
        assert!(fifo.contains("FIFO"), "{fifo}");
        let zero = unreadable(read_within(dir.join("zero.json")));
        assert!(zero.contains("character device"), "{zero}");
        let sock = unreadable(read_within(dir.join("sock.json")));
        assert!(sock.contains("socket"), "{sock}");
        let sub = unreadable(read_within(dir.join("sub")));
        assert!(sub.contains("it is a directory, not a file"), "{sub}");
        assert_eq!(unreadable(read_within(dir.join("none.json"))), "missing");
    }
}
