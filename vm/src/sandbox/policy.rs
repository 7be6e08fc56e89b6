//! The policy one sandboxed command runs under, as the launcher receives it (JSON on its
//! command line): the work dir, the writable roots, the paths mounted read-only, and
//! whether the network is reachable.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// fuseraft's state directory under the work dir; always read-only for commands.
pub(super) const STATE_DIR: &str = ".fuseraft";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    pub work_dir: PathBuf,
    /// Landlock grants every access beneath these (the work dir, the temp dirs).
    pub writable: Vec<PathBuf>,
    /// Bind-mounted read-only over themselves (those that exist).
    pub read_only: Vec<PathBuf>,
    /// fuseraft's state directory: created when missing (so that a command cannot plant
    /// one), then mounted read-only.
    pub state_dir: Option<PathBuf>,
    /// Hidden from the command (an empty tmpfs over a directory, `/dev/null` over a
    /// file): the sockets of daemons that would run anything for it ([`masked_sockets`]).
    #[serde(default)]
    pub masked: Vec<PathBuf>,
    pub network: bool,
    /// The pid of the fuseraft that starts the launcher (0: not checked).
    pub parent: u32,
}

/// Sockets of daemons that run what a client asks with their own rights (the container
/// engines, the system bus, systemd's private socket, the user's runtime dir with its
/// session bus and rootless engines): Landlock before ABI 9 cannot deny `connect` on a
/// named UNIX socket, so they are masked in the sandbox's mount namespace instead.
pub(super) fn masked_sockets() -> Vec<PathBuf> {
    let uid = rustix_uid();
    [
        "/run/docker.sock".to_string(),
        "/var/run/docker.sock".to_string(),
        "/run/containerd".to_string(),
        "/run/podman".to_string(),
        "/run/crio".to_string(),
        "/run/dbus".to_string(),
        "/var/run/dbus".to_string(),
        "/run/systemd/private".to_string(),
        "/run/systemd/userdb".to_string(),
        format!("/run/user/{uid}"),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

fn rustix_uid() -> u32 {
    #[cfg(unix)]
    return rustix::process::getuid().as_raw();
    #[cfg(not(unix))]
    0
}

/// The git directories of `work_dir`: `.git`, and for a `.git` file (worktree, submodule)
/// the `gitdir:` target and its `commondir`.
fn git_dirs(work_dir: &Path) -> Vec<PathBuf> {
    let dot_git = work_dir.join(".git");
    let mut dirs = vec![dot_git.clone()];
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return dirs;
    };
    let Some(target) = text.lines().find_map(|line| line.strip_prefix("gitdir:")) else {
        return dirs;
    };
    let target = work_dir.join(target.trim());
    if let Ok(target) = std::fs::canonicalize(target) {
        if let Ok(common) = std::fs::read_to_string(target.join("commondir")) {
            if let Ok(common) = std::fs::canonicalize(target.join(common.trim())) {
                dirs.push(common);
            }
        }
        dirs.push(target);
    }
    dirs
}

fn add(list: &mut Vec<PathBuf>, path: PathBuf) {
    if !list.contains(&path) {
        list.push(path);
    }
}

impl Policy {
    /// The policy for a command in `work_dir`: writes to the work dir and the temp dirs;
    /// `.fuseraft/` and the paths in `protect` read-only; `.git` read-only unless
    /// `git_writable` (then a `gitdir:` target outside the work dir is writable too).
    pub fn new(work_dir: &Path, protect: &[PathBuf], git_writable: bool, network: bool) -> Policy {
        let work_dir = std::fs::canonicalize(work_dir).unwrap_or_else(|_| work_dir.to_path_buf());
        let mut writable = vec![work_dir.clone()];
        for temp in [
            std::env::temp_dir(),
            PathBuf::from("/tmp"),
            PathBuf::from("/dev/shm"),
        ] {
            if let Ok(temp) = std::fs::canonicalize(temp) {
                add(&mut writable, temp);
            }
        }
        let state_dir = work_dir.join(STATE_DIR);
        let mut read_only = Vec::new();
        for path in protect {
            add(&mut read_only, path.clone());
        }
        for dir in git_dirs(&work_dir) {
            if git_writable {
                add(&mut writable, dir);
            } else {
                add(&mut read_only, dir);
            }
        }
        Policy {
            work_dir,
            writable,
            read_only,
            state_dir: Some(state_dir),
            masked: masked_sockets(),
            network,
            parent: std::process::id(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a policy serializes")
    }

    pub fn from_json(text: &str) -> Result<Policy, String> {
        serde_json::from_str(text).map_err(|error| format!("bad sandbox policy: {error}"))
    }
}
