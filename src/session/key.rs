//! The per-user session key that authenticates session files (HMAC-SHA256).
//!
//! The key is 32 random bytes, kept as hex in `$FUSERAFT_SESSION_KEY` when that variable is
//! set (a path; for tests and unusual setups), else `$XDG_STATE_HOME/fuseraft/session.key`,
//! else `~/.local/state/fuseraft/session.key`: outside the work dir, where the agents' tools
//! do not reach. It is created on first use, 0600 in a 0700 directory, atomically (written
//! to a temporary file and linked into place), so two runs starting at once agree on one key.

use std::io::Write;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The variable that names the key file instead of the default location.
pub const KEY_ENV: &str = "FUSERAFT_SESSION_KEY";

/// The length of a MAC, in bytes.
pub const MAC_LEN: usize = 32;

pub type Tag = [u8; MAC_LEN];

/// A loaded session key.
pub struct Key {
    /// HMAC-SHA256 keyed with the key's 32 bytes: its inner and outer pads are hashed once
    /// here, not for every record (each MAC starts from a copy).
    keyed: Hmac<Sha256>,
    path: PathBuf,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key itself.
        write!(f, "Key({})", self.path.display())
    }
}

/// Where the key lives, from the environment.
pub fn location() -> Result<PathBuf, String> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(path) = var(KEY_ENV) {
        return Ok(PathBuf::from(path));
    }
    if let Some(state) = var("XDG_STATE_HOME").map(PathBuf::from) {
        if state.is_absolute() {
            return Ok(state.join("fuseraft/session.key"));
        }
    }
    match var("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".local/state/fuseraft/session.key")),
        None => Err(format!(
            "neither `{KEY_ENV}`, `XDG_STATE_HOME` nor `HOME` is set, so there is no place for the session key"
        )),
    }
}

/// What no process a run starts may read, besides the credentials the VM masks by
/// default: the session key, and `extra` (the user's `--deny-read`, made absolute).
pub fn deny_read(extra: &[PathBuf]) -> Vec<PathBuf> {
    let here = std::env::current_dir().unwrap_or_default();
    location()
        .into_iter()
        .chain(extra.iter().map(|path| here.join(path)))
        .collect()
}

impl Key {
    /// The key at [`location`], created when missing.
    pub fn load_or_create() -> Result<Key, String> {
        Key::at(&location()?)
    }

    /// The key in `path`, created when missing.
    pub fn at(path: &Path) -> Result<Key, String> {
        match read(path) {
            Ok(Some(key)) => return Ok(key),
            Ok(None) => {}
            Err(message) => return Err(message),
        }
        create(path)?;
        read(path)?.ok_or_else(|| format!("the session key `{}` vanished", path.display()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn hmac(&self) -> Hmac<Sha256> {
        self.keyed.clone()
    }

    /// The MAC of `parts`, each preceded by its length so that no two splits collide.
    pub fn mac(&self, parts: &[&[u8]]) -> Tag {
        let mut mac = self.hmac();
        for part in parts {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` is the MAC of `parts` (compared in constant time).
    pub fn verify(&self, parts: &[&[u8]], tag: &Tag) -> bool {
        let mut mac = self.hmac();
        for part in parts {
            mac.update(&(part.len() as u64).to_le_bytes());
            mac.update(part);
        }
        mac.verify_slice(tag).is_ok()
    }
}

/// Reads an existing key; `None` when there is none.
fn read(path: &Path) -> Result<Option<Key>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(format!(
                "cannot read the session key `{}`: {error}",
                path.display()
            ))
        }
    };
    let bytes = from_hex(text.trim()).filter(|bytes| bytes.len() == 32).ok_or_else(|| {
        format!(
            "the session key `{}` is damaged (it must hold 64 hex digits); remove it to make a new one (sessions saved with the old key will then fail to verify)",
            path.display()
        )
    })?;
    let keyed = Hmac::<Sha256>::new_from_slice(&bytes).map_err(|_| {
        format!(
            "the session key `{}` cannot key HMAC-SHA256",
            path.display()
        )
    })?;
    Ok(Some(Key {
        keyed,
        path: path.to_path_buf(),
    }))
}

/// Makes a new key file, unless another process made one first.
fn create(path: &Path) -> Result<(), String> {
    let failed = |error: &dyn std::fmt::Display| {
        format!(
            "cannot create the session key `{}`: {error}",
            path.display()
        )
    };
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|error| failed(&error))?;
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|error| failed(&error))?;
    let temp = dir.join(format!(".session.key.{}.tmp", std::process::id()));
    let written = super::private_file(&temp, false).and_then(|mut file| {
        file.write_all(format!("{}\n", to_hex(&bytes)).as_bytes())?;
        file.sync_all()
    });
    // Linking fails when the key exists: then the other process's key is the key.
    let linked = written.and_then(|()| match std::fs::hard_link(&temp, path) {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    });
    let _ = std::fs::remove_file(&temp);
    linked.map_err(|error| failed(&error))
}

pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 15)] as char);
    }
    text
}

pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |byte: u8| match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    };
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// A tag from its hex text.
pub fn tag_from_hex(text: &str) -> Option<Tag> {
    let bytes = from_hex(text)?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fuseraft-key-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_key_is_made_once_private_and_kept() {
        let dir = scratch("made");
        let path = dir.join("state/fuseraft/session.key");
        let first = Key::at(&path).unwrap();
        let second = Key::at(&path).unwrap();
        // The same key: the same MAC of the same parts.
        let parts: [&[u8]; 2] = [b"fuseraft", b"session"];
        assert_eq!(first.mac(&parts), second.mac(&parts));
        assert!(second.verify(&parts, &first.mac(&parts)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        let tag = first.mac(&[b"a", b"bc"]);
        assert!(second.verify(&[b"a", b"bc"], &tag));
        // Parts are length-prefixed: another split of the same bytes is another message.
        assert!(!second.verify(&[b"ab", b"c"], &tag));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_damaged_key_is_an_error_that_says_what_to_do() {
        let dir = scratch("damaged");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("session.key");
        std::fs::write(&path, "not hex").unwrap();
        let error = Key::at(&path).unwrap_err();
        assert!(error.contains("is damaged"), "{error}");
        assert!(error.contains("remove it"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hex_round_trips_and_refuses_odd_text() {
        assert_eq!(
            from_hex(&to_hex(&[0, 1, 0xab, 0xff])).unwrap(),
            [0, 1, 0xab, 0xff]
        );
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
        assert!(from_hex("AB").is_none());
    }
}
