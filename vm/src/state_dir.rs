//! fuseraft's own state directories under the work dir (`.fuseraft/sessions`, the change
//! log's directory), opened without following a symlink at any component.
//!
//! The work dir is the user's (named on the command line, or the current directory), so it
//! is opened by its path. Every directory below it is opened with
//! `openat(O_NOFOLLOW | O_DIRECTORY)` relative to the one before (made 0700 when missing)
//! and checked with `fstat`: a directory owned by the user running fuseraft that no one
//! else may write. A cloned repository that ships `.fuseraft` (or `.fuseraft/sessions`,
//! `.fuseraft/state`, ...) as a symlink, or as a directory another user can write, is
//! refused with a message naming the path and saying how to fix it.
//!
//! Files inside are opened relative to the held descriptor with `O_NOFOLLOW` (and
//! `O_NONBLOCK`, so a FIFO cannot block), and must be regular files with no other hard link
//! when written; a replacement is a fresh file (`O_CREAT | O_EXCL`) renamed over the old one
//! in the same directory. A run opens each directory once: a directory swapped for a symlink
//! later changes nothing, as every file is opened relative to the descriptor held.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::confine::describe;

/// An open state directory.
#[derive(Clone, Debug)]
pub struct StateDir {
    fd: Arc<OwnedFd>,
    path: PathBuf,
}

/// Why a state directory could not be opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirError {
    /// What is wrong with which path, and how to fix it.
    pub message: String,
    /// A link, another user's directory or one others may write: never used, the run must
    /// not start. Otherwise the directory is merely unusable (not a directory, an I/O
    /// error), which costs the run its saving, as a full disk would.
    pub refused: bool,
}

impl std::fmt::Display for DirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn unusable(message: String) -> DirError {
    DirError {
        message,
        refused: false,
    }
}

/// How a file of a state directory is opened.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read only; the file must exist.
    Read,
    /// Appended to, created (0600) when missing.
    Append,
    /// Read and written in place, created (0600) when missing.
    Update,
    /// Written from empty, created (0600) when missing.
    Truncate,
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The normal components of a relative `rel`, or `None` when it has anything else.
fn normal_parts(rel: &Path) -> Option<Vec<&OsStr>> {
    rel.components()
        .filter(|part| *part != Component::CurDir)
        .map(|part| match part {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// Why a directory found at `path` (described by `stat`) cannot hold fuseraft's state.
fn unfit_dir(path: &Path, stat: &rustix::fs::Stat) -> Option<DirError> {
    let shown = path.display();
    let kind = FileType::from_raw_mode(stat.st_mode);
    let refuse = |message: String| {
        Some(DirError {
            message,
            refused: true,
        })
    };
    if kind != FileType::Directory {
        return Some(unusable(format!(
            "`{shown}` is {}, not a directory; fuseraft keeps its own state there: remove it",
            describe(kind)
        )));
    }
    let me = rustix::process::geteuid().as_raw();
    if stat.st_uid != me {
        return refuse(format!(
            "`{shown}` is owned by uid {}, not by you (uid {me}); fuseraft keeps its own state there: remove it",
            stat.st_uid
        ));
    }
    let mode = stat.st_mode & 0o7777;
    if mode & 0o022 != 0 {
        return refuse(format!(
            "`{shown}` is writable by other users (mode {mode:04o}); fuseraft keeps its own state there: run `chmod go-w {shown}` or remove it"
        ));
    }
    None
}

/// Why the file at `path` (described by `stat`) cannot be fuseraft's state file.
fn unfit_file(path: &Path, stat: &rustix::fs::Stat) -> Option<String> {
    let shown = path.display();
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Some(format!(
            "`{shown}` is {}, not a regular file; fuseraft writes its own state there and never through a link: remove it",
            describe(kind)
        ));
    }
    let me = rustix::process::geteuid().as_raw();
    if stat.st_uid != me {
        return Some(format!(
            "`{shown}` is owned by uid {}, not by you (uid {me}): remove it",
            stat.st_uid
        ));
    }
    if stat.st_nlink > 1 {
        return Some(format!(
            "`{shown}` has {} hard links; fuseraft writes its own state to a file of its own: remove it",
            stat.st_nlink
        ));
    }
    None
}

fn refused(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, message)
}

impl StateDir {
    /// Opens `rel` (relative, plain names only) under the user's `work_dir`, creating missing
    /// directories (0700), following no symlink below the work dir; `Err` says what is wrong
    /// with which path and how to fix it.
    pub fn open(work_dir: &Path, rel: &Path) -> Result<StateDir, DirError> {
        Self::walk(work_dir, rel, true).and_then(|dir| {
            dir.ok_or_else(|| {
                unusable(format!("`{}` does not exist", work_dir.join(rel).display()))
            })
        })
    }

    /// [`StateDir::open`] without creating anything: `Ok(None)` when a directory is missing.
    pub fn find(work_dir: &Path, rel: &Path) -> Result<Option<StateDir>, DirError> {
        Self::walk(work_dir, rel, false)
    }

    fn walk(work_dir: &Path, rel: &Path, create: bool) -> Result<Option<StateDir>, DirError> {
        let Some(parts) = normal_parts(rel) else {
            return Err(DirError {
                message: format!("`{}` is not a plain path under the work dir", rel.display()),
                refused: true,
            });
        };
        let cannot = |path: &Path, error: &dyn std::fmt::Display| {
            unusable(format!("cannot open `{}`: {error}", path.display()))
        };
        if create {
            // The work dir is the user's: made by its path, as before.
            std::fs::create_dir_all(work_dir).map_err(|error| cannot(work_dir, &error))?;
        }
        let mut fd = match rustix::fs::open(
            work_dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if !create => return Ok(None),
            Err(errno) => return Err(cannot(work_dir, &errno)),
        };
        let mut path = work_dir.to_path_buf();
        for part in parts {
            path.push(part);
            let next = match rustix::fs::openat(&fd, part, dir_flags(), Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&fd, part, Mode::from_raw_mode(0o700)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(errno) => return Err(cannot(&path, &errno)),
                    }
                    rustix::fs::openat(&fd, part, dir_flags(), Mode::empty())
                }
                other => other,
            };
            fd = match next {
                Ok(next) => next,
                Err(Errno::NOENT) => return Ok(None),
                // A symlink (`ELOOP`) or something else than a directory: say what it is.
                Err(errno @ (Errno::LOOP | Errno::NOTDIR)) => {
                    return Err(
                        match rustix::fs::statat(&fd, part, AtFlags::SYMLINK_NOFOLLOW) {
                            Ok(stat) => Self::what_is_wrong(&fd, part, &path, &stat),
                            Err(_) => cannot(&path, &errno),
                        },
                    )
                }
                Err(errno) => return Err(cannot(&path, &errno)),
            };
            let stat = rustix::fs::fstat(&fd).map_err(|errno| cannot(&path, &errno))?;
            if let Some(problem) = unfit_dir(&path, &stat) {
                return Err(problem);
            }
        }
        Ok(Some(StateDir {
            fd: Arc::new(fd),
            path,
        }))
    }

    /// The refusal of a component that is no directory (a symlink says where it points).
    fn what_is_wrong(
        parent: &OwnedFd,
        name: &OsStr,
        path: &Path,
        stat: &rustix::fs::Stat,
    ) -> DirError {
        if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
            return unfit_dir(path, stat)
                .unwrap_or_else(|| unusable(format!("cannot open `{}`", path.display())));
        }
        let target = rustix::fs::readlinkat(parent, name, Vec::new())
            .map(|target| target.to_string_lossy().into_owned())
            .unwrap_or_default();
        DirError {
            message: format!(
                "`{}` is a symlink (to `{}`); fuseraft keeps its own state there and never follows a link: remove it",
                path.display(),
                target.escape_default()
            ),
            refused: true,
        }
    }

    /// A directory the user named (trusted: opened by its path, links followed), created
    /// when missing.
    pub fn trusted(dir: &Path) -> std::io::Result<StateDir> {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
        let shown = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let fd = rustix::fs::open(
            shown,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(StateDir {
            fd: Arc::new(fd),
            path: dir.to_path_buf(),
        })
    }

    /// The directory's path (for messages: every access goes through the descriptor).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` in the directory (for messages).
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// `Err` when `name` exists and is not a regular file of the user's with one link.
    pub fn check_file(&self, name: &str) -> Result<(), String> {
        match rustix::fs::statat(&*self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => unfit_file(&self.join(name), &stat).map_or(Ok(()), Err),
            Err(Errno::NOENT) => Ok(()),
            Err(errno) => Err(format!(
                "cannot open `{}`: {errno}",
                self.join(name).display()
            )),
        }
    }

    /// Opens `name` without following a link; a written file must be a regular file of the
    /// user's with no other hard link (`PermissionDenied` saying why, otherwise).
    pub fn open_file(&self, name: &str, access: Access) -> std::io::Result<File> {
        let flags = OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let flags = flags
            | match access {
                Access::Read => OFlags::RDONLY,
                Access::Append => OFlags::RDWR | OFlags::APPEND | OFlags::CREATE,
                Access::Update => OFlags::RDWR | OFlags::CREATE,
                Access::Truncate => OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
            };
        let path = self.join(name);
        let fd = match rustix::fs::openat(&*self.fd, name, flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => {
                return Err(refused(format!(
                    "`{}` is a symlink; fuseraft never reads or writes its own state through a link: remove it",
                    path.display()
                )))
            }
            Err(errno) => return Err(errno.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        let problem = match access {
            Access::Read => {
                let kind = FileType::from_raw_mode(stat.st_mode);
                (kind != FileType::RegularFile).then(|| {
                    format!(
                        "`{}` is {}, not a regular file",
                        path.display(),
                        describe(kind)
                    )
                })
            }
            _ => unfit_file(&path, &stat),
        };
        if let Some(problem) = problem {
            return Err(refused(problem));
        }
        // Regular files ignore `O_NONBLOCK`; clear it all the same.
        rustix::fs::fcntl_setfl(&fd, rustix::fs::fcntl_getfl(&fd)? - OFlags::NONBLOCK)?;
        Ok(File::from(fd))
    }

    /// Replaces `name` with `bytes` atomically: a fresh 0600 file, synced, renamed over it.
    pub fn replace(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let temp = format!(
            ".{name}.{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let fd = rustix::fs::openat(
            &*self.fd,
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut file = File::from(fd);
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_data())
            .and_then(|()| {
                Ok(rustix::fs::renameat(
                    &*self.fd,
                    temp.as_str(),
                    &*self.fd,
                    name,
                )?)
            });
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&*self.fd, temp.as_str(), AtFlags::empty());
        }
        written
    }

    /// Removes `name` (a link itself, never its target); a missing file is no error.
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        match rustix::fs::unlinkat(&*self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(errno) => Err(errno.into()),
        }
    }

    /// The size of `name` when it is a regular file; `None` when it is missing or no file.
    pub fn len(&self, name: &str) -> Option<u64> {
        let stat = rustix::fs::statat(&*self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
            .then_some(stat.st_size as u64)
    }

    /// The device and inode of `name` (a link itself, not followed), when it exists.
    pub fn identity(&self, name: &str) -> Option<(u64, u64)> {
        let stat = rustix::fs::statat(&*self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        #[allow(clippy::unnecessary_cast)]
        Some((stat.st_dev as u64, stat.st_ino as u64))
    }

    /// Whether `name` exists (as anything: a link is not followed).
    pub fn exists(&self, name: &str) -> bool {
        rustix::fs::statat(&*self.fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// The names in the directory.
    pub fn names(&self) -> std::io::Result<Vec<String>> {
        let fd = rustix::fs::openat(&*self.fd, ".", dir_flags(), Mode::empty())?;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd)? {
            let entry = entry?;
            if let Ok(name) = entry.file_name().to_str() {
                if name != "." && name != ".." {
                    names.push(name.to_string());
                }
            }
        }
        Ok(names)
    }

    /// Makes the directory's entries durable (after a rename).
    pub fn sync(&self) {
        let _ = rustix::fs::fsync(&*self.fd);
    }
}

#[cfg(test)]
#[path = "state_dir_tests.rs"]
mod tests;
