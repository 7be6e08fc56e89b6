//! Path confinement: every path argument of a FileSystem tool resolves under the sandbox root.
//!
//! Security decisions:
//! - Paths resolve *physically*, one component at a time from the root (or from `/` for an
//!   absolute path): every symlink met on the way, the final component included, is read
//!   and its target spliced in, and `..` steps to the parent of the directory actually
//!   reached, as the kernel would. Only the fully resolved path is checked and used, so a
//!   symlinked directory, a symlinked file, a dangling symlink and a symlink in a parent of
//!   a not-yet-existing file all land where the OS would put them, and anything outside the
//!   root is denied (`[DENIED: sandbox] path escapes the sandbox: ...`). An absolute path
//!   inside the root is allowed. More than 40 symlinks (a loop) is an error.
//! - The tools then open the resolved path, not the argument. What remains is a race: a
//!   process running concurrently (a `shell_run` of another fork branch) could swap a
//!   directory for a symlink between the check and the use. The shell is not confined by
//!   this module at all (it runs with the user's rights); confining commands is the
//!   permission policy's job.
//! - Credential files are denied for reading, writing, patching, listing and deleting
//!   (`Security.DenyCredentialFiles`), judged on the resolved path relative to the root,
//!   ignoring case (so a symlink `notes.txt -> .env` is denied too): see
//!   [`is_credential_path`]. A hard link to a credential file under another name cannot
//!   be recognised by path.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::Outcome;

/// Symlinks followed while resolving one path before giving up (Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// A path argument resolved inside the sandbox.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// The physical path, under the root.
    pub abs: PathBuf,
    /// The same path relative to the root, `/`-separated (`""` for the root itself).
    pub rel: String,
}

/// Resolves `raw` under `root` (canonical). `follow_final` false leaves a final symlink
/// itself in place (for deleting the link rather than its target).
pub(crate) fn resolve(root: &Path, raw: &str, follow_final: bool) -> Result<Resolved, Outcome> {
    if raw.contains('\0') {
        return Err(Outcome::error("a path may not contain a NUL character"));
    }
    let raw_path = Path::new(raw.trim());
    let final_name = match raw_path.components().next_back() {
        Some(Component::Normal(name)) if !follow_final => Some(name.to_os_string()),
        _ => None,
    };
    let parent_part = match &final_name {
        Some(_) => raw_path.parent().unwrap_or(Path::new("")),
        None => raw_path,
    };
    let start = if raw_path.is_absolute() {
        PathBuf::from("/")
    } else {
        root.to_path_buf()
    };
    let mut abs = walk(start, parent_part, raw)?;
    if let Some(name) = final_name {
        abs.push(name);
    }
    match abs.strip_prefix(root) {
        Ok(rel) => Ok(Resolved {
            rel: rel
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/"),
            abs,
        }),
        Err(_) => Err(Outcome::fail(format!(
            "[DENIED: sandbox] path escapes the sandbox: `{raw}` resolves to `{}`, outside `{}`",
            abs.display(),
            root.display()
        ))),
    }
}

/// Walks `path` from `start`, following symlinks; components past the first one that does
/// not exist are appended as written (`..` among them removes the previous one).
fn walk(start: PathBuf, path: &Path, raw: &str) -> Result<PathBuf, Outcome> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => pending.push_back(name.to_os_string()),
            Component::ParentDir => pending.push_back("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    let mut current = start;
    let mut missing: Vec<OsString> = Vec::new();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            if missing.pop().is_none() {
                current.pop();
            }
            continue;
        }
        if !missing.is_empty() {
            missing.push(part);
            continue;
        }
        let next = current.join(&part);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Outcome::error(format!(
                        "too many levels of symbolic links in `{raw}`"
                    )));
                }
                let target = std::fs::read_link(&next).map_err(|error| {
                    Outcome::error(format!(
                        "cannot read the symlink `{}`: {error}",
                        next.display()
                    ))
                })?;
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                let mut spliced: Vec<OsString> = Vec::new();
                for piece in target.components() {
                    match piece {
                        Component::Normal(name) => spliced.push(name.to_os_string()),
                        Component::ParentDir => spliced.push("..".into()),
                        Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                    }
                }
                for piece in spliced.into_iter().rev() {
                    pending.push_front(piece);
                }
            }
            Ok(_) => current = next,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => missing.push(part),
            Err(error) => return Err(Outcome::error(format!("cannot access `{raw}`: {error}"))),
        }
    }
    current.extend(missing);
    Ok(current)
}

/// Whether a path (relative to the sandbox root, `/`- or `\`-separated) names a credential
/// file or lies in a credential directory. Ignores case. Matches `.env` and `.env.*` (but
/// not the templates `.env.example`, `.env.sample`, `.env.template`), `*.pem`, `*.key`,
/// `id_rsa*`, `id_dsa*`, `id_ecdsa*`, `id_ed25519*`, `.netrc`, `_netrc`, `.npmrc`,
/// `.pypirc`, `.git-credentials`, anything under `.ssh/`, `.gnupg/`, `.azure/` or
/// `.config/gcloud/`, and `.aws/credentials`, `.kube/config`, `.docker/config.json`.
pub fn is_credential_path(rel: &str) -> bool {
    let lower = rel.to_ascii_lowercase().replace('\\', "/");
    let parts: Vec<&str> = lower
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if parts
        .iter()
        .any(|part| matches!(*part, ".ssh" | ".gnupg" | ".azure"))
    {
        return true;
    }
    let pairs = parts.windows(2).any(|pair| {
        matches!(
            (pair[0], pair[1]),
            (".config", "gcloud")
                | (".aws", "credentials")
                | (".kube", "config")
                | (".docker", "config.json")
        )
    });
    if pairs {
        return true;
    }
    let Some(name) = parts.last() else {
        return false;
    };
    if *name == ".env" {
        return true;
    }
    if let Some(suffix) = name.strip_prefix(".env.") {
        return !matches!(suffix, "example" | "sample" | "template");
    }
    name.ends_with(".pem")
        || name.ends_with(".key")
        || ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"]
            .iter()
            .any(|key| name.starts_with(key))
        || matches!(
            *name,
            ".netrc" | "_netrc" | ".npmrc" | ".pypirc" | ".git-credentials"
        )
}

/// The denial for a credential path.
pub(crate) fn credential_denial(raw: &str) -> Outcome {
    Outcome::fail(format!(
        "[DENIED: credentials] `{raw}` is a credential file; reading and writing it is not allowed (Security.DenyCredentialFiles)"
    ))
}
