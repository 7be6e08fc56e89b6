//! Race-free access to files under a root directory, for paths that untrusted input names.
//!
//! A path resolves one component at a time from an open descriptor of the root: each
//! directory is opened with `O_NOFOLLOW` relative to the one before, so the kernel never
//! follows a symlink on our behalf. A symlink met on the way is read (`readlinkat`) and its
//! target spliced in, confined like the rest: `..` steps back to a directory descriptor this
//! walk already holds (never the kernel's `..`), an absolute target must name a place under
//! the root. Whatever another process swaps in meanwhile (a directory replaced by a symlink
//! to `/etc`), the walk either sees the old directory, which it holds open, or the new
//! symlink, which it reads and judges; an open that meets a symlink where a directory was
//! fails (`ELOOP`) and the step is retried. The final component is acted on relative to its
//! parent's descriptor (`openat`, `renameat`, `unlinkat`), again with `O_NOFOLLOW`.
//!
//! The walk also yields the *resolved* path relative to the root, so rules on names
//! (credential files, `.git/`) are judged on where a path lands, not on how it is spelled.
//!
//! Files are read only when they are regular: opened with `O_NONBLOCK` (a FIFO without a
//! writer or a device cannot block the open) and checked with `fstat` before a byte is read,
//! up to a cap. Not promised: a directory the walk holds open being *moved* out of the root
//! by another process meanwhile (the rest of the walk follows it); hard links (a hard-linked
//! file reads like any file).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

mod place;
mod tree;
pub use place::{read_regular_path, read_text_under, read_under, Place};
pub use tree::{Entry, MAX_TREE_DEPTH, MAX_TREE_ENTRIES};

/// Symlinks followed while resolving one path (Linux's `MAXSYMLINKS`).
pub const MAX_LINKS: usize = 40;
/// How often a step that raced with another process is tried again.
const RETRIES: usize = 64;

/// Why a path could not be used.
#[derive(Debug)]
pub enum Error {
    /// The path leaves the root; the text says where it was going.
    Escapes(String),
    NotFound,
    /// More than [`MAX_LINKS`] symlinks.
    Loop,
    /// Not a regular file: what it is instead ("a FIFO", "a directory", ...).
    NotRegular(&'static str),
    /// A regular file larger than the cap, with its size.
    TooLarge(u64),
    /// A regular file with this many hard links: changed in place, it would change under
    /// every other name too.
    Linked(u64),
    Io(std::io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Escapes(place) => write!(f, "it resolves to `{place}`, outside the root"),
            Error::NotFound => write!(f, "it does not exist"),
            Error::Loop => write!(f, "too many levels of symbolic links"),
            Error::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            Error::TooLarge(size) => write!(f, "it is {size} bytes, larger than allowed"),
            Error::Linked(links) => write!(
                f,
                "it has {links} hard links, so changing it here would change it under its other names too"
            ),
            Error::Io(error) => write!(f, "{error}"),
        }
    }
}

impl From<Errno> for Error {
    fn from(errno: Errno) -> Error {
        match errno {
            Errno::NOENT => Error::NotFound,
            Errno::LOOP => Error::Loop,
            other => Error::Io(other.into()),
        }
    }
}

/// What a file of type `kind` is, in words.
pub fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "not a regular file",
    }
}

/// An open root directory.
#[derive(Debug)]
pub struct Root {
    fd: Arc<OwnedFd>,
    path: PathBuf,
}

/// A root opened before: the path it was opened by, its canonical path, its descriptor and
/// the identity (device, inode) of the directory the descriptor holds.
struct Opened {
    given: PathBuf,
    path: PathBuf,
    fd: Arc<OwnedFd>,
    id: (u64, u64),
}

/// The roots opened lately (a run's tools open the same one on every call), newest last.
static OPENED: Mutex<Vec<Opened>> = Mutex::new(Vec::new());
/// How many roots [`OPENED`] keeps.
const OPENED_CAP: usize = 8;

fn identity(stat: &rustix::fs::Stat) -> (u64, u64) {
    #[allow(clippy::unnecessary_cast)]
    (stat.st_dev as u64, stat.st_ino as u64)
}

/// How to resolve a path.
#[derive(Copy, Clone, Debug, Default)]
pub struct Walk {
    /// Follow a symlink in the final component (false: act on the link itself).
    pub follow_final: bool,
    /// Accept missing parent directories (for writing: [`Place::make_dirs`] creates them
    /// once the caller has judged the resolved path).
    pub missing_dirs: bool,
}

fn open_dir_at(dir: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The normal components of `path` with `..` kept (`.` and roots dropped).
fn pieces(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|part| match part {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

impl Root {
    /// Opens `path` (made canonical) as a root.
    ///
    /// A root opened before by the same path is reused when `path` still names the very
    /// directory its descriptor holds (same device and inode, by one `stat` that follows
    /// symlinks as the open would): the same directory as a fresh open would give, without
    /// canonicalizing and opening it again on every tool call. The held descriptor keeps
    /// the inode alive, so its number cannot be reused by another directory meanwhile.
    /// [`Root::path`] is then the canonical path found at the first open (it differs from a
    /// fresh one only if a directory above the root was renamed since; every walk starts
    /// from the descriptor either way).
    pub fn open(path: &Path) -> std::io::Result<Root> {
        let now = rustix::fs::stat(path)?;
        if FileType::from_raw_mode(now.st_mode) == FileType::Directory {
            let opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(hit) = opened
                .iter()
                .rev()
                .find(|hit| hit.given == path && hit.id == identity(&now))
            {
                return Ok(Root {
                    fd: Arc::clone(&hit.fd),
                    path: hit.path.clone(),
                });
            }
        }
        let canonical = std::fs::canonicalize(path)?;
        let fd = Arc::new(rustix::fs::open(
            &canonical,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
        let id = identity(&rustix::fs::fstat(&*fd)?);
        let mut opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
        opened.retain(|old| old.given != path);
        if opened.len() >= OPENED_CAP {
            opened.remove(0);
        }
        opened.push(Opened {
            given: path.to_path_buf(),
            path: canonical.clone(),
            fd: Arc::clone(&fd),
            id,
        });
        Ok(Root {
            fd,
            path: canonical,
        })
    }

    /// The canonical path of the root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The components of an absolute `path` under the root, or `None` when it is not under it.
    fn under(&self, path: &Path) -> Option<Vec<OsString>> {
        path.strip_prefix(&self.path).ok().map(pieces)
    }

    /// Resolves `raw` (relative to the root, or absolute under it) without following any
    /// symlink out of the root.
    pub fn resolve(&self, raw: &Path, walk: Walk) -> Result<Place, Error> {
        let mut pending: VecDeque<OsString> = if raw.is_absolute() {
            match self.under(raw) {
                Some(parts) => parts.into(),
                None => return Err(Error::Escapes(raw.display().to_string())),
            }
        } else {
            pieces(raw).into()
        };
        // Directories opened below the root, with their names.
        let mut stack: Vec<(OwnedFd, OsString)> = Vec::new();
        // Components past the first one that does not exist.
        let mut missing: Vec<OsString> = Vec::new();
        let mut links = 0;
        let mut retries = 0;
        while let Some(part) = pending.pop_front() {
            if part == ".." {
                if missing.pop().is_none() && stack.pop().is_none() {
                    return Err(self.escape(&stack, &missing, "..", &pending));
                }
                continue;
            }
            if !missing.is_empty() {
                missing.push(part);
                continue;
            }
            let is_final = pending.is_empty();
            let dir = stack.last().map_or(self.fd.as_fd(), |(fd, _)| fd.as_fd());
            let stat = match rustix::fs::statat(dir, &part, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::NOENT) => {
                    missing.push(part);
                    continue;
                }
                Err(errno) => return Err(errno.into()),
            };
            let kind = FileType::from_raw_mode(stat.st_mode);
            if kind == FileType::Symlink && (walk.follow_final || !is_final) {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Error::Loop);
                }
                let target = match rustix::fs::readlinkat(dir, &part, Vec::new()) {
                    Ok(target) => PathBuf::from(OsString::from_vec(target.into_bytes())),
                    // Replaced meanwhile: look again.
                    Err(Errno::INVAL | Errno::NOENT) if retries < RETRIES => {
                        retries += 1;
                        pending.push_front(part);
                        continue;
                    }
                    Err(errno) => return Err(errno.into()),
                };
                let spliced = if target.is_absolute() {
                    match self.under(&target) {
                        Some(parts) => {
                            stack.clear();
                            parts
                        }
                        None => return Err(Error::Escapes(target.display().to_string())),
                    }
                } else {
                    pieces(&target)
                };
                for piece in spliced.into_iter().rev() {
                    pending.push_front(piece);
                }
                continue;
            }
            if is_final {
                return self.place(stack, Some(part));
            }
            if kind != FileType::Directory {
                return Err(Error::Io(std::io::Error::other(format!(
                    "`{}` is not a directory",
                    Path::new(&part).display()
                ))));
            }
            match open_dir_at(dir, &part) {
                Ok(fd) => stack.push((fd, part)),
                // Swapped for a symlink or a file, or removed, since the `statat`: look again.
                Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) if retries < RETRIES => {
                    retries += 1;
                    pending.push_front(part);
                }
                Err(errno) => return Err(errno.into()),
            }
        }
        let Some(name) = missing.pop() else {
            // The path names a directory itself.
            return self.place(stack, None);
        };
        if !walk.missing_dirs && !missing.is_empty() {
            return Err(Error::NotFound);
        }
        let mut place = self.place(stack, Some(name))?;
        place.parts.splice(
            place.parts.len() - 1..,
            missing.iter().cloned().chain(place.name.clone()),
        );
        place.missing = missing;
        Ok(place)
    }

    fn place(
        &self,
        stack: Vec<(OwnedFd, OsString)>,
        name: Option<OsString>,
    ) -> Result<Place, Error> {
        let mut parts: Vec<OsString> = stack.iter().map(|(_, name)| name.clone()).collect();
        let dir = match stack.into_iter().next_back() {
            Some((fd, _)) => fd,
            None => self.fd.try_clone().map_err(Error::Io)?,
        };
        parts.extend(name.clone());
        Ok(Place {
            dir,
            missing: Vec::new(),
            name,
            parts,
        })
    }

    /// The escape error: where the path was going, lexically.
    fn escape(
        &self,
        stack: &[(OwnedFd, OsString)],
        missing: &[OsString],
        next: &str,
        rest: &VecDeque<OsString>,
    ) -> Error {
        let mut place = self.path.clone();
        place.extend(stack.iter().map(|(_, name)| name));
        place.extend(missing);
        for part in std::iter::once(OsStr::new(next)).chain(rest.iter().map(OsString::as_os_str)) {
            if part == ".." {
                place.pop();
            } else {
                place.push(part);
            }
        }
        Error::Escapes(place.display().to_string())
    }
}
