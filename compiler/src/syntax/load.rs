//! The loader: reads root files and includes through the caller's [`FileReader`], parses
//! them into node trees, and collects the sources and diagnostics of one compilation.
//!
//! Includes stay in the project: the first file read fixes the project directory (the
//! config's directory; for `<project>/agents/<name>/AGENT.md`, `<project>`), and every
//! later file (an `AgentFile`, a tama agent or manifest) whose path, with `.` and `..`
//! resolved lexically, leaves it is refused with a diagnostic at the key that names it. The
//! compiler does no IO, so symlinks are the reader's to check (`src/disk.rs` refuses a file
//! whose physical path leaves the project).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::node::{Budget, Node};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, FileReader, SourceFile, SourceMap, Span};

pub struct Loader<'r> {
    pub reader: &'r dyn FileReader,
    pub sources: SourceMap,
    pub diags: Vec<Diagnostic>,
    pub budget: Budget,
    /// How many include files were loaded (bounded to stop runaway includes).
    includes: usize,
    /// The project directory (lexical), fixed by the first file read.
    project: Option<PathBuf>,
}

const MAX_INCLUDES: usize = 1000;

impl<'r> Loader<'r> {
    pub fn new(reader: &'r dyn FileReader) -> Loader<'r> {
        Loader {
            reader,
            sources: SourceMap::new(),
            diags: Vec::new(),
            budget: Budget::default(),
            includes: 0,
            project: None,
        }
    }

    /// The project directory, once the first file was read.
    pub fn project(&self) -> Option<&Path> {
        self.project.as_deref()
    }

    /// Reads a file as text and registers it; an unreadable file is a diagnostic.
    pub fn read(&mut self, path: &Path, from: Option<Span>, what: &str) -> Option<FileId> {
        if let Some((id, _)) = self.sources.files().find(|(_, file)| file.path == path) {
            return Some(id);
        }
        match &self.project {
            None => self.project = Some(project_of(path)),
            Some(project) if !is_within(project, path) => {
                let message = format!(
                    "{what} `{}` is outside the project directory `{}`",
                    path.display(),
                    shown_dir(project)
                );
                self.diags.push(outside_project(message, from));
                return None;
            }
            Some(_) => {}
        }
        match self.reader.read(path) {
            Ok(text) => Some(self.add(path, text)),
            Err(error)
                if error.kind() == std::io::ErrorKind::PermissionDenied && from.is_some() =>
            {
                // The reader found the file physically outside the project (a symlink).
                self.diags.push(outside_project(
                    format!("cannot read {what} `{}`: {error}", path.display()),
                    from,
                ));
                None
            }
            Err(error) => {
                let message = match error.kind() {
                    std::io::ErrorKind::NotFound => {
                        format!("{what} `{}` does not exist", path.display())
                    }
                    _ => format!("cannot read {what} `{}`: {error}", path.display()),
                };
                let mut diag = Diagnostic::error(Code::MissingFile, message);
                if let Some(span) = from {
                    diag = diag.with_label(span, "referenced here");
                }
                if from.is_some() {
                    diag = diag.with_help(
                        "paths are relative to the directory of the file that names them",
                    );
                }
                self.diags.push(diag);
                None
            }
        }
    }

    pub fn add(&mut self, path: &Path, text: String) -> FileId {
        let name = path.display().to_string();
        self.sources.add(SourceFile::new(name, path, text))
    }

    /// Parses a registered file as YAML or JSON (by extension).
    pub fn parse(&mut self, file: FileId) -> Option<Node> {
        let source = self.sources.get(file);
        let is_json = source
            .path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
        let result = if is_json {
            super::json::parse(file, &source.text, &self.budget)
        } else {
            super::yaml::parse(file, &source.text, &self.budget)
        };
        match result {
            Ok(node) => Some(node),
            Err(diag) => {
                self.diags.push(diag);
                None
            }
        }
    }

    /// Reads and parses an included file (`AgentFile`).
    pub fn load_include(&mut self, path: &Path, from: Span, what: &str) -> Option<(FileId, Node)> {
        self.includes += 1;
        if self.includes > MAX_INCLUDES {
            self.diags.push(
                Diagnostic::error(
                    Code::ResourceLimit,
                    format!("more than {MAX_INCLUDES} included files"),
                )
                .with_label(from, "while loading this include"),
            );
            return None;
        }
        let file = self.read(path, Some(from), what)?;
        let node = self.parse(file)?;
        Some((file, node))
    }
}

/// The error for an include outside the project, at the key that names it.
fn outside_project(message: String, from: Option<Span>) -> Diagnostic {
    let mut diag = Diagnostic::error(Code::InvalidValue, message).with_help(
        "a config may include only files inside its own directory (after `..` and symlinks are resolved); copy the file into the project",
    );
    if let Some(span) = from {
        diag = diag.with_label(span, "this path leaves the project directory");
    }
    diag
}

/// The project directory of the first file read: its directory, or `<project>` for
/// `<project>/agents/<name>/AGENT.md`.
pub fn project_of(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new(""));
    let is_tama_agent = path.file_name().is_some_and(|name| name == "AGENT.md")
        && dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|name| name == "agents");
    let project = if is_tama_agent {
        dir.parent().and_then(Path::parent).unwrap_or(Path::new(""))
    } else {
        dir
    };
    normalize(project)
}

/// `path` with `.` and `..` resolved lexically; a `..` that cannot be removed is kept.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(part),
            },
            other => out.push(other),
        }
    }
    out.iter()
        .map(|part| OsString::from(part.as_os_str()))
        .collect()
}

/// Whether `path`, resolved lexically, lies inside the directory `project` (normalized).
pub fn is_within(project: &Path, path: &Path) -> bool {
    let path = normalize(path);
    let below = match path.strip_prefix(project) {
        Ok(rest) => rest,
        Err(_) => return false,
    };
    below
        .components()
        .next()
        .is_some_and(|first| matches!(first, Component::Normal(_)))
}

fn shown_dir(project: &Path) -> String {
    if project.as_os_str().is_empty() {
        ".".to_string()
    } else {
        project.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_judged_lexically_against_the_project() {
        let project = project_of(Path::new("cfg/team/config.yaml"));
        assert_eq!(project, Path::new("cfg/team"));
        assert!(is_within(&project, Path::new("cfg/team/agents/a.yaml")));
        assert!(is_within(
            &project,
            Path::new("cfg/team/x/../agents/a.yaml")
        ));
        assert!(!is_within(&project, Path::new("cfg/team/../../etc/passwd")));
        assert!(!is_within(&project, Path::new("cfg/team/../other/a.yaml")));
        assert!(!is_within(&project, Path::new("/etc/passwd")));
        assert!(!is_within(&project, Path::new("cfg/team")));
        let here = project_of(Path::new("config.yaml"));
        assert!(is_within(&here, Path::new("agents/a.yaml")));
        assert!(!is_within(&here, Path::new("../a.yaml")));
        assert!(!is_within(&here, Path::new("a/../../a.yaml")));
        let tama = project_of(Path::new("/p/agents/lead/AGENT.md"));
        assert_eq!(tama, Path::new("/p"));
        assert!(is_within(&tama, Path::new("/p/agents/dev/AGENT.md")));
        assert!(!is_within(&tama, Path::new("/p/agents/../../etc/AGENT.md")));
    }
}
