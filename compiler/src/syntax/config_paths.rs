//! Paths a config hands fuseraft (the sandbox, the change log, the brief, `file:` context
//! sources, ...) stay in the project: a config may come from anyone, and a path of `..`,
//! an absolute path or a symlink out would point the tools, or fuseraft's own writes, at the
//! user's files.
//!
//! Every such path is relative to the run's work dir, which `check` and `compile` do not
//! know; the project directory (the config's directory, the usual work dir) stands in for
//! it. Lexically, an absolute path or a `..` that climbs above its start is an error
//! whatever the root. Physically, a path that exists and leads out through a symlink is
//! the reader's to find ([`FileReader::leaves_project`]: `src/disk.rs` walks it from the
//! project's descriptor); it is reported at the same key. Keys fuseraft never acts on
//! (`Events.Path`, `Checkpoint.Path`, ..., inert by `key_effects`) are not judged.

use std::path::{Component, Path};

use super::fields::Spanned;
use super::fuseraft::{Config, ContextSourceDecl};
use super::load::Loader;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{ContextSource, SourceKind};

/// The settings whose value is a path fuseraft reads or writes (all relative to the work
/// dir). A test keeps this list in step with `key_effects`.
pub const PATH_SETTINGS: &[&str] = &[
    "Security.FileSystemSandboxPath",
    "ChangeTracking.Path",
    "Validation.BriefPath",
    "Validation.TestReportPath",
    "Validation.ChangeLogPath",
    "Chatroom.Path",
];

/// The parameters of contract predicates that name a file.
const PATH_PARAMS: &[&str] = &["Path", "Source", "PatternSource"];

/// Reports every configured path of `config` that leaves the project.
pub fn check(config: &Config, loader: &mut Loader<'_>) {
    let mut paths: Vec<(String, &Spanned<String>)> = Vec::new();
    for (key, value) in &config.settings {
        if PATH_SETTINGS.contains(&key.as_str()) {
            paths.push((key.clone(), value));
        }
    }
    let mut sources: Vec<&ContextSourceDecl> = Vec::new();
    for agent in &config.agents {
        sources.extend(&agent.context);
    }
    for state in config
        .selection
        .state_machine
        .iter()
        .flat_map(|m| &m.states)
    {
        for transition in &state.transitions {
            sources.extend(&transition.handoff_context);
            if let Some(path) = &transition.review_artifact_path {
                paths.push(("ReviewArtifactPath".to_string(), path));
            }
        }
    }
    let files: Vec<(String, Spanned<String>)> = sources
        .iter()
        .filter_map(|decl| file_of(&decl.source))
        .collect();
    for (key, path) in &files {
        paths.push((key.clone(), path));
    }
    for predicate in config.contracts.iter().flat_map(|c| &c.requires) {
        for (name, value) in &predicate.params {
            if PATH_PARAMS.contains(&name.as_str()) {
                paths.push((name.clone(), value));
            }
        }
    }
    for server in &config.mcp_servers {
        if let Some(dir) = &server.working_directory {
            paths.push(("WorkingDirectory".to_string(), dir));
        }
    }
    for (key, path) in paths {
        if let Some(diag) = judge(&key, path, loader) {
            loader.diags.push(diag);
        }
    }
}

/// Reports every configured path of a program read from `.fir` text (`file`) that leaves
/// the project, by the same rule as a config's; the IR keeps no spans, so each error points
/// at the value's first quoted occurrence in the text.
pub fn check_program(
    program: &crate::ir::Program,
    file: crate::source::FileId,
    loader: &mut Loader<'_>,
) {
    use crate::ir::{Effect, McpTransport};
    let mut paths: Vec<(String, String)> = Vec::new();
    for (key, value) in &program.settings {
        if PATH_SETTINGS.contains(&key.as_str()) {
            paths.push((key.clone(), value.clone()));
        }
    }
    let mut sources: Vec<&ContextSource> = Vec::new();
    for agent in &program.agents {
        sources.extend(&agent.context.sources);
    }
    for exit in program.states.iter().flat_map(|state| &state.exits) {
        for effect in &exit.effects {
            if let Effect::InjectContext(list) = effect {
                sources.extend(list);
            }
        }
    }
    for source in sources {
        if let SourceKind::File(path) = source.kind() {
            paths.push(("file".to_string(), path.to_string()));
        }
    }
    for predicate in program.contracts.iter().flat_map(|c| &c.predicates) {
        for (name, value) in &predicate.params {
            if PATH_PARAMS.contains(&name.as_str()) {
                paths.push((name.clone(), value.clone()));
            }
        }
    }
    for server in &program.mcp_servers {
        if let McpTransport::Stdio {
            working_directory: Some(dir),
            ..
        } = &server.transport
        {
            paths.push(("WorkingDirectory".to_string(), dir.clone()));
        }
    }
    let text = &loader.sources.get(file).text;
    let found: Vec<Diagnostic> = paths
        .into_iter()
        .filter_map(|(key, value)| {
            let quoted = format!("{value:?}");
            let (start, end) = text
                .find(&quoted)
                .map_or((0, 0), |start| (start, start + quoted.len()));
            let at = Spanned::new(value, crate::source::Span::new(file, start, end));
            judge(&key, &at, loader)
        })
        .collect();
    loader.diags.extend(found);
}

/// The path a `file:PATH` context source names, at the source's span.
fn file_of(source: &Spanned<String>) -> Option<(String, Spanned<String>)> {
    let parsed = ContextSource {
        source: source.value.clone(),
        max_chars: 0,
        label: None,
    };
    match parsed.kind() {
        SourceKind::File(path) if !path.is_empty() => Some((
            "file".to_string(),
            Spanned::new(path.to_string(), source.span),
        )),
        _ => None,
    }
}

/// The settings that name a file fuseraft itself writes: never git's metadata nor the state
/// fuseraft keeps for itself (the file tools' rule), whatever the config says.
const WRITTEN_SETTINGS: &[&str] = &["ChangeTracking.Path", "Chatroom.Path"];

/// What `value` names when it is git's metadata or fuseraft's own state that `key` may not
/// be written in (the change log lives in `.fuseraft/state/`, so that one is its own).
fn names_state(key: &str, value: &str) -> Option<&'static str> {
    if !WRITTEN_SETTINGS.contains(&key) {
        return None;
    }
    // Where the path lands after its `..`s (`.fuseraft/state/../memory` is the memory).
    let mut parts: Vec<String> = Vec::new();
    for part in Path::new(value).components() {
        match part {
            Component::Normal(name) => parts.push(name.to_string_lossy().to_ascii_lowercase()),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    if parts.iter().any(|part| part == ".git") {
        return Some("git's own metadata (`.git/`)");
    }
    let own = matches!(
        parts.get(1).map(String::as_str),
        Some("sessions" | "checkpoints" | "memory")
    ) || (parts.get(1).map(String::as_str) == Some("state")
        && key != "ChangeTracking.Path");
    (parts.first().map(String::as_str) == Some(".fuseraft") && own)
        .then_some("fuseraft's own state (sessions, change log, checkpoints, memory)")
}

/// The error for `path` when it leaves the project, lexically or through a symlink, or
/// names git's metadata or fuseraft's state for fuseraft to write.
fn judge(key: &str, path: &Spanned<String>, loader: &Loader<'_>) -> Option<Diagnostic> {
    let value = path.value.trim();
    if let Some(what) = names_state(key, value) {
        return Some(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`{key}: {value}` names {what}, which fuseraft never writes for a config"),
            )
            .with_label(path.span, "this path is git's or fuseraft's own")
            .with_help("name a file of the project's own, e.g. `logs/chatroom.jsonl`"),
        );
    }
    if leaves_lexically(Path::new(value)) {
        return Some(path_outside_project(key, value, None, path));
    }
    let project = loader.project()?;
    let place = loader.reader.leaves_project(&project.join(value))?;
    Some(path_outside_project(key, value, Some(&place), path))
}

/// Whether `path` is absolute or climbs above where it starts.
pub fn leaves_lexically(path: &Path) -> bool {
    let mut depth = 0usize;
    for part in path.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => return true,
            Component::ParentDir if depth == 0 => return true,
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
    }
    false
}

/// `FR004` at the key: a configured path that leaves the project (`place`: where a symlink
/// leads, when that is how it leaves).
fn path_outside_project(
    key: &str,
    value: &str,
    place: Option<&str>,
    at: &Spanned<String>,
) -> Diagnostic {
    let written = if key == "file" {
        format!("file:{value}")
    } else {
        format!("{key}: {value}")
    };
    let message = match place {
        None => format!("`{written}` leaves the project directory"),
        Some(place) => {
            format!("`{written}` leaves the project directory: it resolves to `{place}`")
        }
    };
    Diagnostic::error(Code::InvalidValue, message)
        .with_label(at.span, "this path leaves the project directory")
        .with_help(
            "configured paths are relative to the work dir and must stay inside it (after `..` and symlinks are resolved); to work elsewhere, run with `--work-dir` instead",
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::key_effects::{effect, KeyEffect};

    #[test]
    fn paths_that_climb_or_start_at_a_root_leave() {
        for path in ["..", "../x", "a/../../x", "/etc", "/", "a/../.."] {
            assert!(leaves_lexically(Path::new(path)), "{path}");
        }
        for path in [
            ".",
            "",
            "a",
            "a/../b",
            "./.fuseraft/{session_id}/x.json",
            "~/x",
        ] {
            assert!(!leaves_lexically(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn every_acting_path_setting_is_judged() {
        for (section, keys) in super::super::fuseraft::SETTING_SECTIONS {
            for key in keys.iter().filter(|key| key.ends_with("Path")) {
                let dotted = format!("{section}.{key}");
                let acts = matches!(effect(section, key), Some((_, KeyEffect::Acts)));
                assert_eq!(
                    acts,
                    PATH_SETTINGS.contains(&dotted.as_str()),
                    "{dotted}: judge it exactly when fuseraft acts on it"
                );
            }
        }
    }
}
