//! Snapshots beside the scenario: `NAME.scenario.snap` (reviewed) and
//! `NAME.scenario.snap.new` (pending review), as insta keeps `.snap` and `.snap.new`.

use std::io;
use std::path::{Path, PathBuf};

use super::{diff, Verdict};

/// `dir/NAME.scenario.yaml` → `dir/NAME.scenario.snap`.
pub fn snap_path(scenario: &Path) -> PathBuf {
    let name = scenario
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .unwrap_or(name);
    scenario.with_file_name(format!("{stem}.snap"))
}

/// `NAME.scenario.snap` → `NAME.scenario.snap.new`.
pub fn pending_path(snap: &Path) -> PathBuf {
    let mut name = snap.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

/// Line endings normalised, so a snapshot checked out with CRLF still matches.
fn normalized(text: &str) -> String {
    text.replace("\r\n", "\n")
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().to_string())
        .unwrap_or_default()
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Compares a trace with the scenario's snapshot. Without `accept`, a difference or a missing
/// snapshot leaves the trace in `.snap.new`; a match removes a stale `.snap.new`. With
/// `accept`, the trace becomes the snapshot.
pub fn check(scenario: &Path, trace: &str, accept: bool) -> io::Result<Verdict> {
    let snap = snap_path(scenario);
    let pending = pending_path(&snap);
    let stored = match std::fs::read_to_string(&snap) {
        Ok(text) => Some(normalized(&text)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    if stored.as_deref() == Some(trace) {
        remove_if_present(&pending)?;
        return Ok(Verdict::Passed);
    }
    if accept {
        std::fs::write(&snap, trace)?;
        remove_if_present(&pending)?;
        return Ok(Verdict::Accepted {
            created: stored.is_none(),
        });
    }
    std::fs::write(&pending, trace)?;
    Ok(match stored {
        None => Verdict::Missing { pending },
        Some(stored) => Verdict::Changed {
            diff: diff::unified(&stored, trace, &file_name(&snap), &file_name(&pending)),
            pending,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sit_beside_the_scenario() {
        let snap = snap_path(Path::new("fixtures/scenarios/keyword.scenario.yaml"));
        assert_eq!(
            snap,
            PathBuf::from("fixtures/scenarios/keyword.scenario.snap")
        );
        assert_eq!(
            pending_path(&snap),
            PathBuf::from("fixtures/scenarios/keyword.scenario.snap.new")
        );
        assert_eq!(
            snap_path(Path::new("a.scenario.yml")),
            PathBuf::from("a.scenario.snap")
        );
    }
}
