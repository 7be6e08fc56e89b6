//! Operations on a resolved [`Place`] beyond reading and writing a file: stat, set the
//! permission bits, make a directory, rename one place to another, and walk or remove a
//! whole tree, all relative to descriptors already held and
//! never following a symlink (a symlink met inside a tree is an entry like a file: listed,
//! moved or unlinked itself, its target untouched).

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Stat};
use rustix::io::Errno;

use super::{open_dir_at, Error, Place};

/// The most entries [`Place::scan`] visits in one tree.
pub const MAX_TREE_ENTRIES: usize = 100_000;
/// The deepest [`Place::scan`] and [`Place::remove_tree`] descend.
pub const MAX_TREE_DEPTH: usize = 256;

/// One entry of a tree: its path below the tree's top (`/`-separated) and its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: FileType,
}

impl Place {
    /// The status of what is here, a final symlink not followed; `None` when nothing is.
    pub fn stat(&self) -> Result<Option<Stat>, Error> {
        if !self.missing.is_empty() {
            return Ok(None);
        }
        let result = match &self.name {
            Some(name) => rustix::fs::statat(&self.dir, name, AtFlags::SYMLINK_NOFOLLOW),
            None => rustix::fs::fstat(&self.dir),
        };
        match result {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(errno) => Err(errno.into()),
        }
    }

    /// Creates the directory here (its missing parents first). `Ok(false)`: a directory was
    /// already there; something else there is an error.
    pub fn make_dir(&mut self) -> Result<bool, Error> {
        self.make_dirs()?;
        let Some(name) = self.name.clone() else {
            return Ok(false);
        };
        match rustix::fs::mkdirat(&self.dir, &name, Mode::from_raw_mode(0o777)) {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => match self.kind()? {
                Some(FileType::Directory) => Ok(false),
                Some(kind) => Err(Error::NotRegular(super::describe(kind))),
                None => Err(Error::NotFound),
            },
            Err(errno) => Err(errno.into()),
        }
    }

    /// Renames what is here (a final symlink itself) to `to`, whose parents must exist.
    /// Without `replace` an existing `to` is refused (`renameat2(RENAME_NOREPLACE)`).
    pub fn rename_to(&self, to: &Place, replace: bool) -> Result<(), Error> {
        let (Some(from), Some(name)) = (&self.name, &to.name) else {
            return Err(Error::NotRegular("a directory"));
        };
        if !self.missing.is_empty() || !to.missing.is_empty() {
            return Err(Error::NotFound);
        }
        let flags = if replace {
            RenameFlags::empty()
        } else {
            RenameFlags::NOREPLACE
        };
        rustix::fs::renameat_with(&self.dir, from, &to.dir, name, flags).map_err(Error::from)
    }

    /// Sets the permission bits of the regular file or directory here (`mode & 0o7777`):
    /// opened with `O_NOFOLLOW` and checked with `fstat`, then `fchmod`, so a symlink swapped
    /// in meanwhile is never followed. Anything else (a symlink, a FIFO, a device) is refused
    /// without being opened; a file its owner cannot read cannot be opened for this.
    pub fn set_mode(&self, mode: u32) -> Result<(), Error> {
        let Some(name) = &self.name else {
            return Err(Error::NotRegular("the directory reached by `.` or `..`"));
        };
        match self.kind()? {
            None => return Err(Error::NotFound),
            Some(FileType::RegularFile | FileType::Directory) => {}
            Some(kind) => return Err(Error::NotRegular(super::describe(kind))),
        }
        let fd = rustix::fs::openat(
            &self.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let stat = rustix::fs::fstat(&fd)?;
        let kind = FileType::from_raw_mode(stat.st_mode);
        if !matches!(kind, FileType::RegularFile | FileType::Directory) {
            return Err(Error::NotRegular(super::describe(kind)));
        }
        // A mode belongs to the file, not its name: with another hard link (a name outside
        // the root, perhaps), changing it here changes it there.
        if kind == FileType::RegularFile && stat.st_nlink > 1 {
            // `nlink_t` is 32 bits on some targets.
            #[allow(clippy::useless_conversion)]
            return Err(Error::Linked(u64::from(stat.st_nlink)));
        }
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777)).map_err(Error::from)
    }

    /// Removes the empty directory here.
    pub fn remove_dir(&self) -> Result<(), Error> {
        let Some(name) = &self.name else {
            return Err(Error::NotRegular("a directory reached by `.` or `..`"));
        };
        rustix::fs::unlinkat(&self.dir, name, AtFlags::REMOVEDIR).map_err(Error::from)
    }

    /// Opens the directory here without following a final symlink.
    fn open_own_dir(&self) -> Result<OwnedFd, Error> {
        match &self.name {
            Some(name) => open_dir_at(self.dir.as_fd(), name).map_err(|errno| match errno {
                Errno::NOTDIR | Errno::LOOP => Error::NotRegular("not a directory"),
                other => other.into(),
            }),
            None => self.open_dir(),
        }
    }

    /// Every entry of the directory tree here, parents before children, sorted by name
    /// within a directory; at most [`MAX_TREE_ENTRIES`] and [`MAX_TREE_DEPTH`] levels.
    pub fn scan(&self) -> Result<Vec<Entry>, Error> {
        let top = self.open_own_dir()?;
        let mut entries = Vec::new();
        scan_into(top.as_fd(), "", 0, &mut entries)?;
        Ok(entries)
    }

    /// Removes the directory here and everything in it, depth first, each entry unlinked
    /// relative to its directory's descriptor (a symlink inside is removed, not followed).
    /// An entry `spare` names (by its path below the top) stops the removal before it is
    /// touched, whatever was removed before it: a check on the very names unlinked, which
    /// no earlier scan can give. Returns the paths of the non-directories removed.
    pub fn remove_tree(&self, spare: &dyn Fn(&str) -> bool) -> Result<Vec<String>, Error> {
        let Some(name) = &self.name else {
            return Err(Error::NotRegular("a directory reached by `.` or `..`"));
        };
        let top = self.open_own_dir()?;
        let mut removed = Vec::new();
        remove_contents(top.as_fd(), "", 0, spare, &mut removed)?;
        drop(top);
        rustix::fs::unlinkat(&self.dir, name, AtFlags::REMOVEDIR)?;
        Ok(removed)
    }
}

/// The names in `dir` (without `.` and `..`), sorted, with their types.
fn read_names(dir: BorrowedFd<'_>) -> Result<Vec<(OsString, FileType)>, Error> {
    let mut reader = rustix::fs::Dir::read_from(dir)?;
    let mut names = Vec::new();
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string();
        if name == "." || name == ".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|stat| FileType::from_raw_mode(stat.st_mode))
                .unwrap_or(FileType::Unknown),
            kind => kind,
        };
        names.push((name, kind));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(names)
}

fn joined(prefix: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if prefix.is_empty() {
        name.into_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

fn too_deep() -> Error {
    Error::Io(std::io::Error::other(format!(
        "the tree is deeper than {MAX_TREE_DEPTH} levels"
    )))
}

fn scan_into(
    dir: BorrowedFd<'_>,
    prefix: &str,
    depth: usize,
    entries: &mut Vec<Entry>,
) -> Result<(), Error> {
    if depth > MAX_TREE_DEPTH {
        return Err(too_deep());
    }
    for (name, kind) in read_names(dir)? {
        if entries.len() >= MAX_TREE_ENTRIES {
            return Err(Error::Io(std::io::Error::other(format!(
                "the tree has more than {MAX_TREE_ENTRIES} entries"
            ))));
        }
        let path = joined(prefix, &name);
        entries.push(Entry {
            path: path.clone(),
            kind,
        });
        if kind == FileType::Directory {
            let sub = open_dir_at(dir, &name)?;
            scan_into(sub.as_fd(), &path, depth + 1, entries)?;
        }
    }
    Ok(())
}

fn remove_contents(
    dir: BorrowedFd<'_>,
    prefix: &str,
    depth: usize,
    spare: &dyn Fn(&str) -> bool,
    removed: &mut Vec<String>,
) -> Result<(), Error> {
    if depth > MAX_TREE_DEPTH {
        return Err(too_deep());
    }
    for (name, kind) in read_names(dir)? {
        let path = joined(prefix, &name);
        if spare(&path) {
            return Err(Error::Io(std::io::Error::other(format!(
                "`{path}` appeared in the tree and may not be removed; the deletion stopped there"
            ))));
        }
        if kind == FileType::Directory {
            // Opened with `O_NOFOLLOW`: a directory swapped for a symlink meanwhile fails here.
            let sub = open_dir_at(dir, &name)?;
            remove_contents(sub.as_fd(), &path, depth + 1, spare, removed)?;
            drop(sub);
            rustix::fs::unlinkat(dir, &name, AtFlags::REMOVEDIR)?;
        } else {
            rustix::fs::unlinkat(dir, &name, AtFlags::empty())?;
            removed.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::{Root, Walk};
    use super::*;

    struct Dir(PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tree(name: &str, files: &[&str]) -> Dir {
        let dir = std::env::temp_dir().join(format!("fuseraft-tree-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for file in files {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        Dir(std::fs::canonicalize(&dir).unwrap())
    }

    fn place(root: &Root, rel: &str) -> Place {
        let walk = Walk {
            follow_final: false,
            missing_dirs: false,
        };
        root.resolve(Path::new(rel), walk).unwrap()
    }

    #[test]
    fn a_tree_is_scanned_in_order_and_removed_without_following_links() {
        let dir = tree("scan", &["t/b.txt", "t/a/c.txt", "outside/keep.txt"]);
        std::os::unix::fs::symlink(dir.0.join("outside"), dir.0.join("t/link")).unwrap();
        let root = Root::open(&dir.0).unwrap();
        let entries = place(&root, "t").scan().unwrap();
        let paths: Vec<(&str, bool)> = entries
            .iter()
            .map(|entry| (entry.path.as_str(), entry.kind == FileType::Directory))
            .collect();
        assert_eq!(
            paths,
            [
                ("a", true),
                ("a/c.txt", false),
                ("b.txt", false),
                ("link", false)
            ]
        );
        let removed = place(&root, "t").remove_tree(&|_| false).unwrap();
        assert_eq!(removed, ["a/c.txt", "b.txt", "link"]);
        assert!(!dir.0.join("t").exists());
        assert!(dir.0.join("outside/keep.txt").exists());
    }

    #[test]
    fn a_spared_name_stops_the_removal_before_it_is_touched() {
        let dir = tree("spare", &["t/a.txt", "t/sub/.git/HEAD", "t/z.txt"]);
        let root = Root::open(&dir.0).unwrap();
        let stopped = place(&root, "t").remove_tree(&|path| path.ends_with(".git"));
        assert!(
            matches!(&stopped, Err(Error::Io(error)) if error.to_string().contains("`sub/.git` appeared")),
            "{stopped:?}"
        );
        assert!(dir.0.join("t/sub/.git/HEAD").exists());
        assert!(
            !dir.0.join("t/a.txt").exists(),
            "entries before it were removed"
        );
    }
}
