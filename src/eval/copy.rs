//! A run's work dir: a fresh copy of the project in a temporary directory, removed with it.
//! The copy honours `.gitignore` (build output stays behind), leaves out `.git` and
//! fuseraft's own sessions, and copies no symlink (a link could lead out of the copy).

use std::path::{Path, PathBuf};

/// The most files a copy takes: a project larger than this is not a workflow's project.
pub const MAX_FILES: usize = 20_000;

/// A temporary copy of a project; dropping it removes it.
pub struct WorkDir {
    _temp: tempfile::TempDir,
    /// The copy, canonical (the paths a run reports start with it).
    pub path: PathBuf,
}

/// Copies `project` into a new temporary directory.
pub fn copy(project: &Path) -> Result<WorkDir, String> {
    let temp = tempfile::Builder::new()
        .prefix("fuseraft-eval-")
        .tempdir()
        .map_err(|error| format!("cannot create a temporary work dir: {error}"))?;
    let path = std::fs::canonicalize(temp.path())
        .map_err(|error| format!("cannot use a temporary work dir: {error}"))?
        .join("work");
    std::fs::create_dir_all(&path)
        .map_err(|error| format!("cannot create `{}`: {error}", path.display()))?;
    let walker = ignore::WalkBuilder::new(project)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| !skipped(entry.path()))
        .build();
    let mut files = 0usize;
    for entry in walker {
        let entry = entry.map_err(|error| format!("cannot copy the project: {error}"))?;
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let Ok(relative) = entry.path().strip_prefix(project) else {
            continue;
        };
        let target = path.join(relative);
        if kind.is_dir() {
            std::fs::create_dir_all(&target)
                .map_err(|error| format!("cannot create `{}`: {error}", target.display()))?;
        } else if kind.is_file() {
            files += 1;
            if files > MAX_FILES {
                return Err(format!(
                    "the project `{}` has more than {MAX_FILES} files to copy for each run; put the suite in a smaller project, or list the large folders in `.gitignore`",
                    project.display()
                ));
            }
            std::fs::copy(entry.path(), &target)
                .map_err(|error| format!("cannot copy `{}`: {error}", entry.path().display()))?;
        }
    }
    Ok(WorkDir { _temp: temp, path })
}

/// `.git` and `.fuseraft/sessions` (earlier runs' sessions) are not the project's files.
fn skipped(path: &Path) -> bool {
    let name = path.file_name().and_then(|name| name.to_str());
    match name {
        Some(".git") => true,
        Some("sessions") => path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|parent| parent == ".fuseraft"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_the_project_without_git_sessions_ignored_files_or_links() {
        let project = tempfile::tempdir().expect("a temp dir");
        let root = project.path();
        let write = |relative: &str| {
            let path = root.join(relative);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
            std::fs::write(path, relative).expect("a file");
        };
        for file in [
            "fuseraft.yaml",
            ".fuseraft/evals/suite.yaml",
            ".fuseraft/sessions/1a2b3c4d.json",
            ".git/config",
            "target/debug/big",
            "src/main.rs",
        ] {
            write(file);
        }
        std::fs::write(root.join(".gitignore"), "target/\n").expect("gitignore");
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/hostname", root.join("link")).expect("a link");
        let copy = copy(root).expect("the copy");
        for kept in ["fuseraft.yaml", ".fuseraft/evals/suite.yaml", "src/main.rs"] {
            assert!(copy.path.join(kept).is_file(), "{kept} is copied");
        }
        for left in [".fuseraft/sessions", ".git", "target", "link"] {
            assert!(!copy.path.join(left).exists(), "{left} is not copied");
        }
        let temp = copy.path.clone();
        drop(copy);
        assert!(!temp.exists(), "the copy goes with its value");
    }
}
