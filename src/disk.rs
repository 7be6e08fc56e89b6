//! The real file system behind the compiler's `FileReader`, with a size cap so a huge or
//! endless file (a FIFO fed forever, `/dev/zero`) cannot exhaust memory, and a bounded wait
//! for the writer of a named FIFO, whose opening would otherwise block forever.
//!
//! [`Project`] is the reader of a compilation: the file the user named is read like
//! [`Disk`] reads it (the command line is trusted, so `<(...)` works), and every other file
//! (an `AgentFile`, a tama agent or manifest, named by a config that may come from anyone)
//! only when it is a regular file that lies *physically* inside the project directory:
//! resolved race-free from the project's directory descriptor (`fuseraft_vm::confine`),
//! so a symlink out of the project, a FIFO or a device is refused with an error that the
//! compiler reports at the key naming the file.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use fuseraft_compiler::syntax::load::{normalize, project_of};
use fuseraft_compiler::FileReader;

/// Largest config, agent or IR file fuseraft reads.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

pub struct Disk;

/// Reads a text file of at most [`MAX_FILE_BYTES`].
pub fn read(path: &Path) -> std::io::Result<String> {
    read_at_most(path, MAX_FILE_BYTES)
}

/// Largest replay file: scripts for long runs are big (10,000 turns of 2 KB replies are
/// about 22 MB), and they are data, not configs.
pub const MAX_REPLAY_BYTES: u64 = 512 * 1024 * 1024;

/// How long reading a named FIFO waits for a process to open it for writing. Opening a FIFO
/// blocks until a writer appears (a pipe such as `/dev/stdin` or `<(...)` has one already),
/// so without a bound a FIFO nobody writes to would hang fuseraft silently.
pub const FIFO_WRITER_WAIT: Duration = Duration::from_secs(10);

/// Reads a text file of at most `limit` bytes. A regular file over the limit is refused
/// without being read; anything else (a FIFO, a device) is read up to `limit` + 1 bytes.
pub fn read_at_most(path: &Path, limit: u64) -> std::io::Result<String> {
    let file = open(path)?;
    let metadata = file.metadata()?;
    if metadata.is_dir() {
        return Err(std::io::Error::other("is a directory"));
    }
    let too_large =
        || std::io::Error::other(format!("larger than the {} MiB limit", limit / 1024 / 1024));
    if metadata.is_file() && metadata.len() > limit {
        return Err(too_large());
    }
    // A regular file's size is known: one allocation of the right size, instead of a buffer
    // that doubles (and is copied) as it fills. One byte more shows a file that grew past it.
    let expected = if metadata.is_file() {
        metadata.len().saturating_add(1)
    } else {
        0
    };
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not valid UTF-8 text"))
}

/// Opens `path` for reading; a named FIFO only if a writer opens it within
/// [`FIFO_WRITER_WAIT`].
fn open(path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if std::fs::metadata(path)?.file_type().is_fifo() {
            return open_fifo(path, FIFO_WRITER_WAIT);
        }
    }
    File::open(path)
}

/// Opens a FIFO on a helper thread, waiting at most `wait` for a writer. On a timeout the
/// thread stays blocked in `open` until a writer comes or the process exits; the file it
/// may still open is dropped unread.
fn open_fifo(path: &Path, wait: Duration) -> std::io::Result<File> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::Builder::new()
        .name("fifo-open".to_string())
        .spawn(move || {
            let _ = sender.send(File::open(owned));
        })?;
    receiver.recv_timeout(wait).unwrap_or_else(|_| {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "it is a FIFO and no process opened it for writing within {} s",
                wait.as_secs()
            ),
        ))
    })
}

impl FileReader for Disk {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        read_at_most(path, MAX_FILE_BYTES)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// Where `path` leads when a symlink on it leaves `project` (walked from the project's
/// descriptor, as includes are read); `None` when it stays inside or cannot be walked.
#[cfg(unix)]
fn leaves(project: &Path, path: &Path) -> Option<String> {
    use fuseraft_vm::confine::{Error, Root, Walk};
    let rel = normalize(path).strip_prefix(project).ok()?.to_path_buf();
    let root = if project.as_os_str().is_empty() {
        Path::new(".")
    } else {
        project
    };
    let walk = Walk {
        follow_final: true,
        missing_dirs: true,
    };
    match Root::open(root).ok()?.resolve(&rel, walk) {
        Err(Error::Escapes(place)) => Some(place),
        _ => None,
    }
}

#[cfg(not(unix))]
fn leaves(_project: &Path, _path: &Path) -> Option<String> {
    None
}

/// The reader of one compilation: the first file read fixes the project directory (as the
/// compiler's loader does) and is read like [`Disk`] reads; every later file must be a
/// regular file physically inside the project.
#[derive(Default)]
pub struct Project {
    project: OnceLock<PathBuf>,
}

impl Project {
    pub fn new() -> Project {
        Project::default()
    }

    /// Reads an include: a regular file under `project`, never through a symlink leaving it.
    #[cfg(unix)]
    fn read_include(project: &Path, path: &Path) -> std::io::Result<String> {
        use fuseraft_vm::confine::{read_under, Error};
        use std::io::ErrorKind;
        let outside = |place: String| {
            std::io::Error::new(
                ErrorKind::PermissionDenied,
                format!(
                    "it resolves to `{place}`, outside the project directory `{}`",
                    shown(project)
                ),
            )
        };
        let Ok(rel) = normalize(path).strip_prefix(project).map(Path::to_path_buf) else {
            return Err(outside(path.display().to_string()));
        };
        let root = if project.as_os_str().is_empty() {
            Path::new(".")
        } else {
            project
        };
        match read_under(root, &rel, MAX_FILE_BYTES) {
            Ok((bytes, _)) => {
                String::from_utf8(bytes).map_err(|_| std::io::Error::other("not valid UTF-8 text"))
            }
            Err(Error::Escapes(place)) => Err(outside(place)),
            Err(Error::NotFound) => Err(ErrorKind::NotFound.into()),
            Err(Error::Io(error)) => Err(error),
            Err(Error::TooLarge(_)) => Err(std::io::Error::other(format!(
                "larger than the {} MiB limit",
                MAX_FILE_BYTES / 1024 / 1024
            ))),
            Err(other) => Err(std::io::Error::other(other.to_string())),
        }
    }

    #[cfg(not(unix))]
    fn read_include(_project: &Path, path: &Path) -> std::io::Result<String> {
        read_at_most(path, MAX_FILE_BYTES)
    }
}

fn shown(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        ".".to_string()
    } else {
        dir.display().to_string()
    }
}

impl FileReader for Project {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        let mut first = false;
        let project = self.project.get_or_init(|| {
            first = true;
            project_of(path)
        });
        if first {
            return read_at_most(path, MAX_FILE_BYTES);
        }
        let text = Project::read_include(project, path)?;
        Ok(text)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn leaves_project(&self, path: &Path) -> Option<String> {
        let project = self.project.get()?;
        leaves(project, path)
    }
}
