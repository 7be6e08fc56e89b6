//! A scenario's files stay in its project: `config:`, `replay:` and the snapshots beside it
//! must resolve (after `..` and symlinks) inside the repository that holds the scenario
//! (the nearest directory above it with a `.git`), or, outside any repository, inside the
//! scenario's own directory. A scenario file may come from anyone, and a config or replay
//! file it points at is quoted in diagnostics (and a snapshot in diffs): pointing one at
//! `~/.aws/credentials` must not put that file's lines on the terminal or in a CI log.

use std::path::{Path, PathBuf};

use fuseraft_compiler::{Code, Diagnostic, Span};

use super::discover::normalize;

/// The project of a scenario, canonical.
#[derive(Clone, Debug)]
pub struct Project {
    pub root: PathBuf,
    /// The scenario's directory, canonical: relative paths in it start here.
    pub dir: PathBuf,
}

impl Project {
    /// The project of the scenario at `path`; `None` when its directory cannot be resolved
    /// (the scenario was just read from it, so only a race removes it).
    pub fn of(path: &Path) -> Option<Project> {
        let parent = path.parent().filter(|dir| !dir.as_os_str().is_empty());
        let dir = std::fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()?;
        let root = dir
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(&dir)
            .to_path_buf();
        Some(Project { root, dir })
    }

    /// Where `written` (relative to the scenario's directory) leads when that is outside
    /// the project: lexically, or through a symlink when it exists.
    pub fn leaves(&self, written: &Path) -> Option<PathBuf> {
        let lexical = normalize(&self.dir.join(written));
        if !lexical.starts_with(&self.root) {
            return Some(lexical);
        }
        match std::fs::canonicalize(&lexical) {
            Ok(real) if !real.starts_with(&self.root) => Some(real),
            _ => None,
        }
    }
}

/// The error for a scenario's `what` (`config`, `replay`, its snapshot) that leaves the
/// project, at `span`. It names paths only: the file it points at is never read.
pub fn outside_project(
    what: &str,
    written: &str,
    place: &Path,
    project: &Project,
    span: Span,
) -> Diagnostic {
    Diagnostic::error(
        Code::InvalidValue,
        format!(
            "the {what} `{written}` leaves the scenario's project: it resolves to `{}`",
            place.display()
        ),
    )
    .with_label(span, "this path leaves the project")
    .with_help(format!(
        "a scenario may only name files inside its project `{}` (the repository holding it, else its directory), after `..` and symlinks are resolved",
        project.root.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_judged_lexically_against_the_root() {
        let project = Project {
            root: PathBuf::from("/repo"),
            dir: PathBuf::from("/repo/fixtures/scenarios"),
        };
        assert!(project.leaves(Path::new("../run/config.yaml")).is_none());
        assert!(project.leaves(Path::new("../../config.yaml")).is_none());
        assert_eq!(
            project.leaves(Path::new("../../../etc/passwd")),
            Some(PathBuf::from("/etc/passwd"))
        );
        assert!(project.leaves(Path::new("/etc/passwd")).is_some());
        assert!(project.leaves(Path::new("/repo/x.yaml")).is_none());
    }
}
