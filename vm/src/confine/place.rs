//! A resolved path and what can be done there: read a regular file (non-blocking), list a
//! directory, replace a file by a fresh one renamed over it, unlink; all relative to the
//! parent directory's descriptor, never by name from the root again.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{describe, open_dir_at, Error, Root, Walk};

/// A resolved path: its parent directory, held open, and its final name (`None` when the
/// path names a directory itself, e.g. `.` or `a/..`).
#[derive(Debug)]
pub struct Place {
    pub(super) dir: OwnedFd,
    /// Directories that do not exist yet between `dir` and `name`.
    pub(super) missing: Vec<OsString>,
    pub(super) name: Option<OsString>,
    pub(super) parts: Vec<OsString>,
}

impl Place {
    /// The resolved path relative to the root, `/`-separated (`""` for the root itself).
    pub fn rel(&self) -> String {
        self.parts
            .iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The resolved components relative to the root.
    pub fn parts(&self) -> &[OsString] {
        &self.parts
    }

    /// The final name (`None`: the place is a directory reached by `.` or `..`).
    pub fn name(&self) -> Option<&OsStr> {
        self.name.as_deref()
    }

    /// Creates the missing parent directories, never following a symlink met on the way.
    pub fn make_dirs(&mut self) -> Result<(), Error> {
        for part in std::mem::take(&mut self.missing) {
            match rustix::fs::mkdirat(&self.dir, &part, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(errno.into()),
            }
            // Made by us or by another process meanwhile: a symlink is not followed (`ELOOP`).
            self.dir = open_dir_at(self.dir.as_fd(), &part)?;
        }
        Ok(())
    }

    /// The type of what is there now (a symlink is not followed), `None` when nothing is.
    pub fn kind(&self) -> Result<Option<FileType>, Error> {
        if !self.missing.is_empty() {
            return Ok(None);
        }
        let Some(name) = &self.name else {
            return Ok(Some(FileType::Directory));
        };
        match rustix::fs::statat(&self.dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(errno) => Err(errno.into()),
        }
    }

    /// Reads the regular file here: at most `cap` + 1 bytes (the caller tells a longer file
    /// by the length) and the file's size. Anything else is refused without blocking.
    pub fn read(&self, cap: u64) -> Result<(Vec<u8>, u64), Error> {
        let Some(name) = &self.name else {
            return Err(Error::NotRegular("a directory"));
        };
        match self.kind()? {
            None => return Err(Error::NotFound),
            Some(FileType::RegularFile) => {}
            Some(kind) => return Err(Error::NotRegular(describe(kind))),
        }
        let fd = rustix::fs::openat(
            &self.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        read_regular(fd, cap)
    }

    /// Opens the directory here for listing.
    pub fn open_dir(&self) -> Result<OwnedFd, Error> {
        if !self.missing.is_empty() {
            return Err(Error::NotFound);
        }
        match &self.name {
            None => Ok(self.dir.try_clone().map_err(Error::Io)?),
            Some(name) => match open_dir_at(self.dir.as_fd(), name) {
                Ok(fd) => Ok(fd),
                Err(Errno::NOTDIR) => Err(Error::NotRegular("not a directory")),
                Err(errno) => Err(errno.into()),
            },
        }
    }

    /// The names in the directory here, sorted, directories ending in `/`.
    pub fn list(&self) -> Result<Vec<String>, Error> {
        let fd = self.open_dir()?;
        let mut dir = rustix::fs::Dir::read_from(&fd)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string();
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => rustix::fs::statat(&fd, &name, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|stat| FileType::from_raw_mode(stat.st_mode))
                    .unwrap_or(FileType::Unknown),
                kind => kind,
            };
            let mut shown = name.to_string_lossy().into_owned();
            if kind == FileType::Directory {
                shown.push('/');
            }
            names.push(shown);
        }
        names.sort();
        Ok(names)
    }

    /// Replaces the file here with `content`: a fresh temporary file in the same (already
    /// open) directory, renamed over the name. Never writes through an existing inode, never
    /// follows a symlink; keeps a replaced regular file's permission bits.
    pub fn replace(&self, content: &[u8]) -> Result<(), Error> {
        self.replace_with_mode(content, None)
    }

    /// [`Place::replace`], the new file given the permission bits `mode` (`& 0o777`) when
    /// set (a copy keeps its source's), else the replaced file's.
    pub fn replace_with_mode(&self, content: &[u8], mode: Option<u32>) -> Result<(), Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let Some(name) = &self.name else {
            return Err(Error::NotRegular("a directory"));
        };
        if !self.missing.is_empty() {
            return Err(Error::NotFound);
        }
        let existing = match rustix::fs::statat(&self.dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                Some(Mode::from_raw_mode(stat.st_mode & 0o7777))
            }
            _ => None,
        };
        let replacing = existing.is_some();
        let mode = mode
            .map(|mode| Mode::from_raw_mode(mode & 0o777))
            .or(existing);
        let mut attempt = 0;
        let (temp, fd) = loop {
            let mut temp = OsString::from(".");
            temp.push(name);
            temp.push(format!(
                ".fuseraft-{}-{}.tmp",
                process_id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match rustix::fs::openat(
                &self.dir,
                &temp,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o666),
            ) {
                Ok(fd) => break (temp, fd),
                Err(Errno::EXIST) if attempt < 16 => attempt += 1,
                Err(errno) => return Err(errno.into()),
            }
        };
        let mut file = std::fs::File::from(fd);
        let written = file
            .write_all(content)
            .map_err(Error::Io)
            .and_then(|()| match mode {
                Some(mode) => rustix::fs::fchmod(&file, mode).map_err(Error::from),
                None => Ok(()),
            })
            .and_then(|()| {
                drop(file);
                install(&self.dir, &temp, name, replacing)
            });
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.dir, &temp, AtFlags::empty());
        }
        written
    }

    /// Removes the file or symlink here (never a directory).
    pub fn unlink(&self) -> Result<(), Error> {
        let Some(name) = &self.name else {
            return Err(Error::NotRegular("a directory"));
        };
        if !self.missing.is_empty() {
            return Err(Error::NotFound);
        }
        rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()).map_err(|errno| match errno {
            Errno::ISDIR | Errno::PERM => Error::NotRegular("a directory"),
            other => other.into(),
        })
    }
}

/// This process's id, asked of the kernel once (it only makes temporary names unlikely to
/// collide; `O_EXCL` and a retry make a collision harmless).
fn process_id() -> u32 {
    static ID: OnceLock<u32> = OnceLock::new();
    *ID.get_or_init(std::process::id)
}

/// Puts the finished temporary file `temp` at `name`, both in `dir`, atomically: `name`
/// names the old object or the new file at every instant, never nothing.
///
/// Over an existing regular file (`replacing`) the two names are exchanged
/// (`renameat2(RENAME_EXCHANGE)`) and the old file, now under `temp`, is unlinked. A plain
/// rename over an existing file would do the same, but ext4 (`auto_da_alloc`, on by default)
/// then starts writing the new file back to disk inside the rename: 0.1 to 1 ms a call on the
/// project machine, for a durability the file tools do not promise (nor does the shell). An
/// exchange never follows a symlink either. Should a directory have been put at `name`
/// meanwhile, it is exchanged back and the write refused, as a rename over it would be.
/// Where the exchange is not supported, or `name` is gone, a plain rename does it.
fn install(dir: &OwnedFd, temp: &OsStr, name: &OsStr, replacing: bool) -> Result<(), Error> {
    use rustix::fs::{renameat_with, RenameFlags};
    if replacing {
        match renameat_with(dir, temp, dir, name, RenameFlags::EXCHANGE) {
            Ok(()) => match rustix::fs::unlinkat(dir, temp, AtFlags::empty()) {
                Ok(()) => return Ok(()),
                Err(Errno::ISDIR | Errno::PERM) => {
                    let back = renameat_with(dir, temp, dir, name, RenameFlags::EXCHANGE);
                    let _ = rustix::fs::unlinkat(dir, temp, AtFlags::empty());
                    return Err(back.map_or_else(Error::from, |()| Errno::ISDIR.into()));
                }
                // The new file is in place; only the old one's removal failed.
                Err(_) => return Ok(()),
            },
            // Nothing there any more, or no exchange on this file system: rename.
            Err(Errno::NOENT | Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    rustix::fs::renameat(dir, temp, dir, name).map_err(Error::from)
}

/// Reads an opened file if it is regular (`fstat`): at most `cap` + 1 bytes, and its size.
fn read_regular(fd: OwnedFd, cap: u64) -> Result<(Vec<u8>, u64), Error> {
    let stat = rustix::fs::fstat(&fd)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Err(Error::NotRegular(describe(kind)));
    }
    let size = stat.st_size.max(0) as u64;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Error::Io)?;
    Ok((bytes, size))
}

/// Reads a regular file by path, never blocking on a FIFO or a device: opened with
/// `O_NONBLOCK` (and `O_NOFOLLOW` for the final component when `follow` is false), checked
/// with `fstat`, at most `cap` + 1 bytes. For paths the user chose or fuseraft built; paths
/// from untrusted input go through [`Root::resolve`].
pub fn read_regular_path(path: &Path, cap: u64, follow: bool) -> Result<(Vec<u8>, u64), Error> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let stat = if follow {
        rustix::fs::stat(path)?
    } else {
        flags |= OFlags::NOFOLLOW;
        rustix::fs::lstat(path)?
    };
    // Judged before opening too: opening a device can have effects of its own.
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Err(Error::NotRegular(describe(kind)));
    }
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    read_regular(fd, cap)
}

/// Reads a regular file under `root` named by untrusted input, at most `cap` bytes (a longer
/// file is [`Error::TooLarge`]), with its resolved path relative to the root.
pub fn read_under(root: &Path, raw: &Path, cap: u64) -> Result<(Vec<u8>, String), Error> {
    let root = Root::open(root).map_err(Error::Io)?;
    let place = root.resolve(
        raw,
        Walk {
            follow_final: true,
            missing_dirs: false,
        },
    )?;
    let (bytes, size) = place.read(cap)?;
    if bytes.len() as u64 > cap {
        return Err(Error::TooLarge(size.max(bytes.len() as u64)));
    }
    Ok((bytes, place.rel()))
}

/// [`read_under`] as text (invalid UTF-8 replaced).
pub fn read_text_under(root: &Path, raw: &Path, cap: u64) -> Result<(String, String), Error> {
    let (bytes, rel) = read_under(root, raw, cap)?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), rel))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-place-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(&dir).unwrap()
    }

    fn open_dir(path: &Path) -> OwnedFd {
        rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap()
    }

    /// Replacing a file exchanges names: the new content is in place, the temporary name is
    /// gone, and a hard link to the old file keeps the old content.
    #[test]
    fn install_replaces_a_file_without_writing_through_it() {
        let dir = scratch("install");
        std::fs::write(dir.join("outside.txt"), "outside").unwrap();
        std::fs::hard_link(dir.join("outside.txt"), dir.join("name")).unwrap();
        std::fs::write(dir.join(".tmp"), "new").unwrap();
        let fd = open_dir(&dir);
        install(&fd, OsStr::new(".tmp"), OsStr::new("name"), true).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("name")).unwrap(), "new");
        assert_eq!(
            std::fs::read_to_string(dir.join("outside.txt")).unwrap(),
            "outside"
        );
        assert!(!dir.join(".tmp").exists());
        // Nothing at the name: a plain rename.
        std::fs::write(dir.join(".tmp"), "fresh").unwrap();
        install(&fd, OsStr::new(".tmp"), OsStr::new("fresh"), true).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("fresh")).unwrap(), "fresh");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A directory found at the name (swapped in after the caller looked) is put back and
    /// the write refused, as a rename over a directory is.
    #[test]
    fn install_refuses_a_directory_and_leaves_it_in_place() {
        let dir = scratch("install-dir");
        std::fs::create_dir_all(dir.join("name/inner")).unwrap();
        std::fs::write(dir.join(".tmp"), "new").unwrap();
        let fd = open_dir(&dir);
        let error = install(&fd, OsStr::new(".tmp"), OsStr::new("name"), true).unwrap_err();
        assert!(error.to_string().contains("directory"), "{error}");
        assert!(dir.join("name/inner").is_dir());
        assert!(!dir.join(".tmp").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A root opened again by the same path after its directory was replaced is the new
    /// directory, never the old one the cache holds.
    #[test]
    fn a_reopened_root_is_the_directory_the_path_names_now() {
        let base = scratch("reopen");
        let root_path = base.join("root");
        std::fs::create_dir_all(&root_path).unwrap();
        std::fs::write(root_path.join("old.txt"), "old").unwrap();
        let walk = Walk {
            follow_final: true,
            missing_dirs: false,
        };
        let first = Root::open(&root_path).unwrap();
        assert!(first
            .resolve(Path::new("old.txt"), walk)
            .unwrap()
            .read(10)
            .is_ok());
        // Moved away and replaced while the first root is still held.
        std::fs::rename(&root_path, base.join("moved")).unwrap();
        std::fs::create_dir_all(&root_path).unwrap();
        std::fs::write(root_path.join("new.txt"), "new").unwrap();
        let second = Root::open(&root_path).unwrap();
        let (bytes, _) = second
            .resolve(Path::new("new.txt"), walk)
            .unwrap()
            .read(10)
            .unwrap();
        assert_eq!(bytes, b"new");
        assert!(matches!(
            second.resolve(Path::new("old.txt"), walk).unwrap().read(10),
            Err(Error::NotFound)
        ));
        // Gone: an error, not the cached descriptor.
        std::fs::remove_dir_all(&root_path).unwrap();
        assert!(Root::open(&root_path).is_err());
        drop(first);
        let _ = std::fs::remove_dir_all(&base);
    }
}
