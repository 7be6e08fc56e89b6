//! The real file system behind the compiler's `FileReader`, with a size cap so a huge or
//! endless file (a FIFO, `/dev/zero`) cannot exhaust memory.

use std::io::Read;
use std::path::Path;

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

/// Reads a text file of at most `limit` bytes.
pub fn read_at_most(path: &Path, limit: u64) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(std::io::Error::other("is a directory"));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "larger than the {} MiB limit",
            limit / 1024 / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not valid UTF-8 text"))
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
