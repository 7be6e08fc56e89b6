//! Finding scenario files: `*.scenario.yaml` (or `.yml`) under the given paths, sorted.

use std::path::{Path, PathBuf};

/// Directories never searched: version control, build output, dependencies.
const SKIPPED_DIRS: &[&str] = &["target", "node_modules"];

/// Is this file name a scenario's?
pub fn is_scenario(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.ends_with(".scenario.yaml") || name.ends_with(".scenario.yml"))
}

/// The scenarios under `paths` (directories searched recursively, hidden directories,
/// `target` and `node_modules` skipped), sorted and without duplicates. A path that does not
/// exist, or a file that is not a scenario, is a usage error.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path)
            .map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
        if metadata.is_dir() {
            walk(path, &mut found)
                .map_err(|error| format!("cannot search `{}`: {error}", path.display()))?;
        } else if is_scenario(path) {
            found.push(path.clone());
        } else {
            return Err(format!(
                "`{}` is not a scenario file (scenario files are named `NAME.scenario.yaml`)",
                path.display()
            ));
        }
    }
    // `./a/b.scenario.yaml` and `a/b.scenario.yaml` are one scenario, shown the short way.
    let mut found: Vec<PathBuf> = found.iter().map(|path| normalize(path)).collect();
    found.sort();
    found.dedup();
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if name.starts_with('.') || SKIPPED_DIRS.contains(&name) {
                continue;
            }
            walk(&path, found)?;
        } else if is_scenario(&path) {
            found.push(path);
        }
    }
    Ok(())
}

/// `a/b/../c` → `a/c`, without touching the file system (so paths stay as the user wrote
/// them, relative where they were relative).
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
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
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_lexically() {
        assert_eq!(
            normalize(Path::new("fixtures/scenarios/../run/keyword/config.yaml")),
            PathBuf::from("fixtures/run/keyword/config.yaml")
        );
        assert_eq!(normalize(Path::new("./a/./b")), PathBuf::from("a/b"));
        assert_eq!(
            normalize(Path::new("../a/../../b")),
            PathBuf::from("../../b")
        );
        assert_eq!(normalize(Path::new("/x/../../y")), PathBuf::from("/y"));
        assert_eq!(normalize(Path::new("a/..")), PathBuf::from("."));
    }

    #[test]
    fn recognises_scenario_names() {
        assert!(is_scenario(Path::new("x/keyword.scenario.yaml")));
        assert!(is_scenario(Path::new("keyword.scenario.yml")));
        assert!(!is_scenario(Path::new("keyword.scenario.snap")));
        assert!(!is_scenario(Path::new("keyword.yaml")));
    }
}
