//! Path confinement: every path argument of a FileSystem tool resolves under the sandbox root.
//!
//! Security decisions:
//! - Paths resolve *physically* and race-free through [`crate::confine`]: one component at
//!   a time from an open descriptor of the root, never letting the kernel follow a symlink.
//!   A symlink met on the way (the final component included, except for `delete_file`) is
//!   read and followed when its target stays inside the root, so a symlinked directory or
//!   file inside the work dir keeps working; one that leaves the root (absolute, or `..`
//!   past the root) is denied (`[DENIED: sandbox] path escapes the sandbox: ...`), as is any
//!   `..` past the root. An absolute path is allowed when it names a place under the root.
//!   More than 40 symlinks (a loop) is an error.
//! - The tools then act relative to the directory descriptor the walk ended in (`openat`,
//!   `renameat`, `unlinkat` with `O_NOFOLLOW`), never by name from the root again: a
//!   process running concurrently (a `shell_run` of another fork branch) that swaps a
//!   directory for a symlink cannot redirect a read or a write out of the root. The shell
//!   itself is not confined by this module (that is the OS sandbox's job).
//! - Every rule on names is judged on the *resolved* path relative to the root, ignoring
//!   case, so `a/../.env`, a symlink `notes.txt -> .env` or `g -> .git` are caught too:
//!   - credential files are denied for reading, writing, patching, listing and deleting
//!     (`Security.DenyCredentialFiles`): see [`is_credential_path`]. A hard link to a
//!     credential file under another name cannot be recognised by path;
//!   - fuseraft's and git's own state are read-only to the tools: see [`protected_state`].

use crate::history::DenialKind;
use std::path::Path;

use super::Outcome;
use crate::confine::{Error, Place, Root, Walk};

/// A path argument resolved inside the sandbox.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub place: Place,
    /// The resolved path relative to the root, `/`-separated (`""` for the root itself).
    pub rel: String,
}

/// Opens the sandbox root.
pub(crate) fn open_root(root: &Path) -> Result<Root, Outcome> {
    Root::open(root).map_err(|error| {
        Outcome::error(format!(
            "the work dir `{}` is not accessible: {error}",
            root.display()
        ))
    })
}

/// Resolves `raw` under `root`. `follow_final` false leaves a final symlink itself in place
/// (for deleting the link rather than its target); `missing_dirs` accepts parent
/// directories that do not exist yet (for writing).
pub(crate) fn resolve(
    tool: &str,
    root: &Root,
    raw: &str,
    follow_final: bool,
    missing_dirs: bool,
) -> Result<Resolved, Outcome> {
    if raw.contains('\0') {
        return Err(Outcome::error("a path may not contain a NUL character"));
    }
    let walk = Walk {
        follow_final,
        missing_dirs,
    };
    match root.resolve(Path::new(raw.trim()), walk) {
        Ok(place) => Ok(Resolved {
            rel: place.rel(),
            place,
        }),
        Err(error) => Err(walk_error(tool, root, raw, error)),
    }
}

/// The result of `tool` for a failed resolution or access.
pub(crate) fn walk_error(tool: &str, root: &Root, raw: &str, error: Error) -> Outcome {
    match error {
        Error::Escapes(place) => Outcome::denied(
            DenialKind::Sandbox,
            format!(
                "path escapes the sandbox: `{raw}` resolves to `{place}`, outside `{}`",
                root.path().display()
            ),
        ),
        Error::NotFound => Outcome::error(format!("{tool}: `{raw}` does not exist")),
        Error::Loop => Outcome::error(format!("too many levels of symbolic links in `{raw}`")),
        Error::NotRegular(kind) => Outcome::error(format!("`{raw}` is {kind}, not a regular file")),
        Error::TooLarge(size) => Outcome::error(format!("`{raw}` is too large ({size} bytes)")),
        Error::Linked(links) => Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` has {links} hard links: changed in place, it would change under its other names (perhaps outside the work dir) too"),
        ),
        Error::Io(error) => Outcome::error(format!("cannot access `{raw}`: {error}")),
    }
}

/// Why a resolved path (relative to the sandbox root) is fuseraft's or git's own state,
/// which the tools may read but not write, patch or delete; `None` when it is not. Ignores
/// case. Protected: anything under a `.git` directory (or a `.git` file, as in a worktree)
/// at any depth, and `.fuseraft/sessions/`, `.fuseraft/state/` (the change log, evidence),
/// `.fuseraft/checkpoints/`, a served run's `.fuseraft/journal/`, `.fuseraft/stream/` and
/// `.fuseraft/effects/`, and `.fuseraft/memory/` (agents' memories, `MEMORY.md`, the
/// daily notes: only the memory tools write them, so no agent forges another's). Agents' own artifacts elsewhere under `.fuseraft/`
/// (`.fuseraft/artifacts/`, `.fuseraft/brief.json`, ...) stay writable.
pub(crate) fn protected_state(rel: &str) -> Option<&'static str> {
    let lower = rel.to_ascii_lowercase().replace('\\', "/");
    let parts: Vec<&str> = lower
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if parts.contains(&".git") {
        return Some("the git repository's own state (`.git/`)");
    }
    match parts.as_slice() {
        [".fuseraft", "sessions" | "state" | "checkpoints", ..] => {
            Some("fuseraft's own state (sessions, change log, checkpoints)")
        }
        [".fuseraft", "journal" | "stream" | "effects", ..] => {
            Some("a served run's own state (kept entries, streamed text, file tools' records)")
        }
        [".fuseraft", "memory", ..] => {
            Some("the agents' memory (`.fuseraft/memory/`), which only the memory tools write")
        }
        _ => None,
    }
}

/// Whose mode or owner the tools may not change: fuseraft's and git's state
/// ([`protected_state`]) and the `.fuseraft` directory itself, whose mode guards the session
/// store (a world-writable `.fuseraft` would let anyone swap `sessions` for a link; fuseraft
/// refuses to run in it). Judged on the resolved path, ignoring case.
pub(super) fn mode_protected(rel: &str) -> Option<&'static str> {
    protected_state(rel).or_else(|| {
        let lower = rel.to_ascii_lowercase().replace('\\', "/");
        let mut parts = lower
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".");
        (parts.next() == Some(".fuseraft") && parts.next().is_none())
            .then_some("fuseraft's own state directory (`.fuseraft/`)")
    })
}

/// The denial for a protected path.
pub(crate) fn protected_denial(raw: &str, what: &str) -> Outcome {
    Outcome::denied(
        DenialKind::Sandbox,
        format!("`{raw}` is {what}, which the file tools may not change"),
    )
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
    Outcome::denied(DenialKind::Credentials,format!(
        "`{raw}` is a credential file; reading and writing it is not allowed (Security.DenyCredentialFiles)"
    ))
}

/// The bytes of a regular file under the sandbox root `work_dir`, resolved race-free (the
/// way `read_file` reads): a credential file is refused, and so is one over `max` bytes.
pub(crate) fn read_capped(
    tool: &str,
    raw: &str,
    work_dir: &Path,
    max: u64,
) -> Result<Vec<u8>, Outcome> {
    let root = open_root(work_dir)?;
    let resolved = resolve(tool, &root, raw, true, false)?;
    if is_credential_path(&resolved.rel) {
        return Err(credential_denial(raw));
    }
    let (bytes, size) = resolved
        .place
        .read(max)
        .map_err(|error| walk_error(tool, &root, raw, error))?;
    if size > max || bytes.len() as u64 > max {
        return Err(Outcome::error(format!(
            "{tool}: `{raw}` is {size} bytes, more than the {max} bytes read"
        )));
    }
    Ok(bytes)
}
