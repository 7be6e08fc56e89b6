//! Snapshots beside the scenario: `NAME.scenario.snap` (reviewed) and
//! `NAME.scenario.snap.new` (pending review), as insta keeps `.snap` and `.snap.new`.

use std::io;
use std::path::{Path, PathBuf};

use fuseraft_vm::confine::{Error, Place, Root, Walk};

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

/// The most bytes of a stored snapshot read.
const SNAPSHOT_CAP: u64 = 64 << 20;

/// A snapshot file beside the scenario, resolved in the scenario's directory: a symlink is
/// followed only while it stays there (`follow` false: the name itself, for replacing or
/// removing it), so a repository's `.snap -> /proc/self/environ` is never read and a
/// `.snap.new -> ~/.bashrc` never written through.
fn beside(root: &Root, file: &Path, follow: bool) -> io::Result<Place> {
    let name = Path::new(file.file_name().unwrap_or_default());
    let walk = Walk {
        follow_final: follow,
        missing_dirs: false,
    };
    root.resolve(name, walk)
        .map_err(|error| refused(file, error))
}

fn refused(file: &Path, error: Error) -> io::Error {
    io::Error::other(format!(
        "`{}`: {error} (a snapshot is a regular file beside its scenario)",
        file.display()
    ))
}

/// The stored snapshot, `None` when there is none; anything but a regular file inside the
/// scenario's directory is refused, and nothing of it is read.
fn read(root: &Root, snap: &Path) -> io::Result<Option<String>> {
    let place = beside(root, snap, true)?;
    match place.read(SNAPSHOT_CAP) {
        Ok((bytes, _)) if bytes.len() as u64 > SNAPSHOT_CAP => {
            Err(refused(snap, Error::TooLarge(bytes.len() as u64)))
        }
        Ok((bytes, _)) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(Error::NotFound) => Ok(None),
        Err(error) => Err(refused(snap, error)),
    }
}

/// Writes `text` as a fresh file renamed over the name (a link there is replaced, never
/// written through).
fn write(root: &Root, file: &Path, text: &str) -> io::Result<()> {
    beside(root, file, false)?
        .replace(text.as_bytes())
        .map_err(|error| refused(file, error))
}

fn remove_if_present(root: &Root, file: &Path) -> io::Result<()> {
    match beside(root, file, false)?.unlink() {
        Ok(()) | Err(Error::NotFound) => Ok(()),
        Err(error) => Err(refused(file, error)),
    }
}

/// Compares a trace with the scenario's snapshot. Without `accept`, a difference or a missing
/// snapshot leaves the trace in `.snap.new`; a match removes a stale `.snap.new`. With
/// `accept`, the trace becomes the snapshot. Both files are acted on through the scenario's
/// directory (`fuseraft_vm::confine`): the repository under test is not trusted.
pub fn check(scenario: &Path, trace: &str, accept: bool) -> io::Result<Verdict> {
    let snap = snap_path(scenario);
    let pending = pending_path(&snap);
    let dir = match scenario.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let root = Root::open(dir)?;
    let stored = read(&root, &snap)?.map(|text| normalized(&text));
    if stored.as_deref() == Some(trace) {
        remove_if_present(&root, &pending)?;
        return Ok(Verdict::Passed);
    }
    if accept {
        write(&root, &snap, trace)?;
        remove_if_present(&root, &pending)?;
        return Ok(Verdict::Accepted {
            created: stored.is_none(),
        });
    }
    write(&root, &pending, trace)?;
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
