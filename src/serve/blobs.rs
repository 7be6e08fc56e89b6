//! What a served session keeps that is too large for the engine: a journal entry or a state
//! value longer than the worker's `--inline-limit` is written to a file of the work dir's
//! `.fuseraft/journal/<session>/`, named by its SHA-256, and the engine keeps a reference;
//! reading it back checks the digest. (The engine retries forever a step whose entry is over
//! its own limit, 32 MiB by default, so nothing is left to reach it.)

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::session::key::to_hex;
use fuseraft_vm::state_dir::{Access, StateDir};
use sha2::{Digest, Sha256};

/// How a reference starts: no JSON text does.
const REFERENCE: &str = "fuseraft-kept-by-reference:sha256:";

pub struct Blobs {
    work_dir: PathBuf,
    session: String,
    limit: usize,
}

impl Blobs {
    pub fn new(work_dir: &Path, session: &str, limit: usize) -> Blobs {
        Blobs {
            work_dir: work_dir.to_path_buf(),
            session: session.to_string(),
            limit,
        }
    }

    fn dir(&self) -> Result<StateDir, String> {
        let rel = Path::new(".fuseraft/journal").join(&self.session);
        StateDir::open(&self.work_dir, &rel).map_err(|error| error.message)
    }

    /// `text` as the engine keeps it: itself, or a reference to the file that holds it.
    pub fn keep(&self, text: String) -> Result<String, String> {
        if text.len() <= self.limit {
            return Ok(text);
        }
        let digest = to_hex(&Sha256::digest(text.as_bytes()));
        let dir = self.dir()?;
        dir.replace(&digest, text.as_bytes()).map_err(|error| {
            format!(
                "cannot keep an entry of {} bytes in `{}`: {error}",
                text.len(),
                dir.join(&digest).display()
            )
        })?;
        Ok(format!("{REFERENCE}{digest}"))
    }

    /// The text `kept` stands for: a reference is read back and its digest checked.
    pub fn resolve(&self, kept: String) -> Result<String, String> {
        let Some(digest) = kept.strip_prefix(REFERENCE) else {
            return Ok(kept);
        };
        // A file name of this dir, never a path: a journal edited to name `../x` reads nothing.
        if digest.len() != 64
            || !digest
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(format!("the kept entry `{digest}` is not a SHA-256 name"));
        }
        let dir = self.dir()?;
        let path = dir.join(digest);
        let mut text = String::new();
        dir.open_file(digest, Access::Read)
            .and_then(|mut file| file.read_to_string(&mut text))
            .map_err(|error| {
                format!(
                    "the kept entry `{}` cannot be read: {error}",
                    path.display()
                )
            })?;
        if to_hex(&Sha256::digest(text.as_bytes())) != digest {
            return Err(format!(
                "the kept entry `{}` was changed since it was kept",
                path.display()
            ));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_entry_is_kept_by_reference_and_read_back_checked() {
        let work = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(work.path(), "1a2b3c4d", 16);
        assert_eq!(blobs.keep("short".into()).unwrap(), "short");
        let long = "x".repeat(100);
        let kept = blobs.keep(long.clone()).unwrap();
        assert!(kept.starts_with(REFERENCE) && kept.len() < 100, "{kept}");
        assert_eq!(blobs.resolve(kept.clone()).unwrap(), long);
        let file = work
            .path()
            .join(".fuseraft/journal/1a2b3c4d")
            .join(kept.strip_prefix(REFERENCE).unwrap());
        std::fs::write(&file, "y".repeat(100)).unwrap();
        assert!(blobs.resolve(kept).unwrap_err().contains("was changed"));
        // A reference that names a path, not a digest, reads nothing.
        let planted = format!("{REFERENCE}../../../../etc/passwd");
        assert!(blobs
            .resolve(planted)
            .unwrap_err()
            .contains("not a SHA-256 name"));
    }
}
