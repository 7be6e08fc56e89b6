//! The run's one [`Confinement`] and the [`Policy`] of each process drawn from it, as the
//! launcher receives it (JSON on its command line): the work dir, the writable roots, the
//! paths mounted read-only, the read mask, and whether the network is reachable.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// fuseraft's state directory under the work dir; always read-only for commands.
pub(super) const STATE_DIR: &str = ".fuseraft";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    pub work_dir: PathBuf,
    /// Bound writable into the view, and Landlock grants every access beneath them (the
    /// work dir unless the process only reads, `.git` when it may write it); the private
    /// `/tmp` and `/dev/shm` are always writable.
    pub writable: Vec<PathBuf>,
    /// Bind-mounted read-only over themselves (those that exist).
    pub read_only: Vec<PathBuf>,
    /// fuseraft's state directory: created when missing (so that a command cannot plant
    /// one), then mounted read-only.
    pub state_dir: Option<PathBuf>,
    /// Hidden from the command (an empty directory or file of mode `000` over it): the read
    /// mask and the sockets of daemons that would run anything for it ([`masked_sockets`]).
    #[serde(default)]
    pub masked: Vec<PathBuf>,
    pub network: bool,
    /// The pid of the fuseraft that starts the launcher (0: not checked).
    pub parent: u32,
    /// The run's own temp dir, bound onto `/tmp` (its `shm` onto `/dev/shm`), so that the
    /// processes of one run share their temp files and nothing else does; without one,
    /// each process gets empty ones.
    #[serde(default)]
    pub temp: Option<PathBuf>,
    /// The command's environment, set when the launcher starts it. It travels to the
    /// launcher in one variable ([`super::ENV_VAR`], read by the same user only, unlike a
    /// command line) and the launcher has no other, so nothing a command or an agent chose
    /// (`LD_PRELOAD`, an allocator's or the C library's variables, `PATH`) acts in it while
    /// it holds its namespace's capabilities. `None` (a launcher started by hand): the
    /// command inherits the launcher's environment.
    #[serde(skip)]
    pub env: Option<Vec<(String, String)>>,
}

/// A run's temp dir: `fuseraft-run-<pid>-<n>` (0700) in the user's temp dir, with `shm/`,
/// removed with everything in it when the run's confinement is dropped.
#[derive(Debug, PartialEq)]
struct RunTemp(PathBuf);

impl RunTemp {
    fn make() -> Option<RunTemp> {
        sweep_killed_runs(&std::env::temp_dir());
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("fuseraft-run-{}-{n}", std::process::id()));
            if builder.create(&dir).is_ok() {
                // `tmp/` and `shm/` side by side: no command reaches the parent of either,
                // so none can swap the other for a link.
                let made = RunTemp(dir);
                let both = ["tmp", "shm"]
                    .iter()
                    .all(|sub| builder.create(made.0.join(sub)).is_ok());
                return both.then_some(made);
            }
        }
        None
    }
}

/// Removes the temp dirs that runs killed before they could remove them left in `temp`:
/// `fuseraft-run-<pid>-<n>` directories of this user whose process is gone. Another user's,
/// a link, a live run's and this process's own are left alone.
fn sweep_killed_runs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|name| name.strip_prefix("fuseraft-run-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        if !pid.is_some_and(|pid| pid != me && !alive(pid)) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        #[cfg(unix)]
        let mine = std::os::unix::fs::MetadataExt::uid(&meta) == rustix_uid();
        #[cfg(not(unix))]
        let mine = true;
        if meta.is_dir() && mine {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether process `pid` exists (one of another user's counts).
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return false;
        };
        !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Under `git_write: block`, the root of a work dir that was no repository at the start. A
/// repository is ordinary files, so a command can make one by hand: a `.git` (a directory,
/// or a file naming one), or the root itself laid out as a bare repository (`HEAD`,
/// `objects/`, `refs/`), whose `config` could set a `core.fsmonitor` that runs at the
/// user's next `git status`. When the run ends (or is cancelled: the guard goes with the
/// last copy of its confinement), what makes the root a repository is moved aside to a
/// fresh `<name>.fuseraft-refused-<id>` (or, if that cannot be done, removed), where git
/// never reads it.
#[derive(Debug, PartialEq)]
struct NewGitGuard(PathBuf);

impl NewGitGuard {
    /// A guard for `root` unless it is a repository already (a guard is never made, and so
    /// never dropped, for a root that is one: its drop would set the repository aside).
    fn of(root: &Path) -> Option<NewGitGuard> {
        repository_of(root)
            .is_empty()
            .then(|| NewGitGuard(root.to_path_buf()))
    }

    /// Moves aside (else removes) what made the root a repository; where each went.
    fn undo(&self) -> Vec<PathBuf> {
        repository_of(&self.0)
            .iter()
            .filter_map(|path| set_aside(path))
            .collect()
    }
}

/// What makes `root` a repository: its `.git`, or a bare layout's `HEAD` and `config`.
fn repository_of(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.symlink_metadata().is_ok() {
        return vec![dot_git];
    }
    let bare = root.join("HEAD").symlink_metadata().is_ok()
        && root.join("objects").is_dir()
        && root.join("refs").is_dir();
    if bare {
        return ["HEAD", "config"]
            .iter()
            .map(|name| root.join(name))
            .filter(|path| path.symlink_metadata().is_ok())
            .collect();
    }
    Vec::new()
}

/// `path` renamed, never over anything, to a name no one could have guessed
/// (`.git.fuseraft-refused-<64 random bits>`); removed when it cannot be renamed. Where it
/// went, or `path` itself when it was removed.
fn set_aside(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy().to_string();
    for _ in 0..8 {
        let id = fastrand::u64(..);
        let aside = path.with_file_name(format!("{name}.fuseraft-refused-{id:016x}"));
        #[cfg(target_os = "linux")]
        let renamed = rustix::fs::renameat_with(
            rustix::fs::CWD,
            path,
            rustix::fs::CWD,
            &aside,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .is_ok();
        #[cfg(not(target_os = "linux"))]
        let renamed = !aside.exists() && std::fs::rename(path, &aside).is_ok();
        if renamed {
            return Some(aside);
        }
    }
    let removed = match path.symlink_metadata() {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(error) => Err(error),
    };
    removed.ok().map(|()| path.to_path_buf())
}

impl Drop for NewGitGuard {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}

impl Drop for RunTemp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
        "/run/lxd".to_string(),
        "/var/snap/lxd/common/lxd".to_string(),
        "/run/incus".to_string(),
        "/var/lib/incus".to_string(),
        "/run/libvirt".to_string(),
        "/var/run/libvirt".to_string(),
        "/run/snapd.socket".to_string(),
        "/run/snapd-snap.socket".to_string(),
        // The other terminals of the user: a command reads none of their keystrokes.
        "/dev/pts".to_string(),
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

/// The most directory entries the walk for repositories looks at; past it, the
/// repositories found so far are protected (the work dir's own `.git` always is).
const MAX_WALK: usize = 200_000;

/// Every repository under `root` when the run starts: its `.git` (for a `.git` file, the
/// `gitdir:` target and its common dir), each nested repository's the same way, and bare
/// repositories (a directory holding `HEAD`, `objects/` and `refs/`). Links are not
/// followed; a repository's own directory is not walked.
fn repositories(root: &Path) -> Vec<PathBuf> {
    let mut found = git_dirs(root);
    let mut pending = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK {
                return found;
            }
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            let name = entry.file_name();
            if !is_dir || name == ".git" || name == STATE_DIR {
                continue;
            }
            let path = entry.path();
            // A `.git` that is a link is not followed: its target, if a repository under
            // the root, is found as one itself.
            let dot_git = path.join(".git").symlink_metadata();
            if dot_git.is_ok_and(|meta| meta.is_dir() || meta.is_file()) {
                // Outside the root everything is read-only already: a nested repository's
                // `gitdir:` elsewhere adds nothing to bind (nor a place that cannot be).
                for git_dir in git_dirs(&path)
                    .into_iter()
                    .filter(|dir| dir.starts_with(root))
                {
                    add(&mut found, git_dir);
                }
            }
            let bare = path.join("HEAD").is_file()
                && path.join("objects").is_dir()
                && path.join("refs").is_dir();
            if bare {
                add(&mut found, path);
            } else {
                pending.push(path);
            }
        }
    }
    found
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

/// Where the user keeps credentials, relative to their home: read by no sandboxed process
/// (`Confinement`'s read mask), whatever a config says.
const CREDENTIALS: &[&str] = &[
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".gnupg",
    ".local/share/keyrings",
    ".password-store",
    ".config/gh",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pypirc",
    ".pgpass",
    ".gem/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".config/containers/auth.json",
    ".config/hub",
    ".cache/huggingface/token",
    ".huggingface/token",
    ".local/share/io.datasette.llm/keys.json",
    ".local/state/fuseraft",
];

/// The credentials of [`CREDENTIALS`] that live under `~/.config/`, where
/// `$XDG_CONFIG_HOME` moves them.
const XDG_CONFIG_CREDENTIALS: &[&str] = &[
    "gcloud",
    "gh",
    "git/credentials",
    "containers/auth.json",
    "hub",
];

/// The sockets of container engines that live in the user's home (Docker Desktop, Rancher
/// Desktop, Colima, Lima, OrbStack), masked like the system's.
const HOME_SOCKETS: &[&str] = &[
    ".docker/desktop",
    ".docker/run",
    ".rd",
    ".colima",
    ".lima",
    ".orbstack",
    ".local/share/containers/podman",
];

/// The default read mask: [`CREDENTIALS`] under `home`, and those that live under
/// `~/.config/` under `$XDG_CONFIG_HOME` too when it is set elsewhere.
pub(super) fn credential_paths(home: Option<&Path>, xdg_config: Option<&Path>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = home
        .map(|home| {
            CREDENTIALS
                .iter()
                .chain(HOME_SOCKETS)
                .map(|path| home.join(path))
                .collect()
        })
        .unwrap_or_default();
    if let Some(config) = xdg_config.filter(|config| config.is_absolute()) {
        paths.extend(XDG_CONFIG_CREDENTIALS.iter().map(|path| config.join(path)));
    }
    paths
}

/// What one started process may do besides reading: write the confinement's root, write
/// git metadata, reach the network.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// The root (the work dir or the sandbox path) is writable; else only the private temp.
    pub write: bool,
    /// `.git` (and a worktree's git dirs found at the start) is writable.
    pub git_write: bool,
    pub network: bool,
}

/// The one confinement of a run, computed once at its start from the config and the
/// command line, never from what a command writes later: the root, where the git metadata
/// of every repository in it really lives (`.git`, a `gitdir:` target and its common dir,
/// nested and bare repositories, resolved now), the paths
/// no command may write (the change log), and the read mask (credentials, fuseraft's key,
/// the user's additions, the daemons' sockets). Every process fuseraft starts for a config,
/// a model or a repository runs under a [`Policy`] drawn from it ([`Confinement::policy`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Confinement {
    root: PathBuf,
    git_dirs: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    masked: Vec<PathBuf>,
    temp: Option<std::sync::Arc<RunTemp>>,
    new_git: Option<std::sync::Arc<NewGitGuard>>,
}

impl Confinement {
    /// The confinement of `root` (canonicalized): `protected` read-only, `deny_read` added
    /// to the default read mask (the credentials under `$HOME`, the daemons' sockets).
    pub fn new(root: &Path, protected: &[PathBuf], deny_read: &[PathBuf]) -> Confinement {
        Confinement::build(root, protected, deny_read, true)
    }

    /// `new`, looking for repositories under `root` (`walk`) or only at its own `.git`.
    fn build(root: &Path, protected: &[PathBuf], deny_read: &[PathBuf], walk: bool) -> Confinement {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut masked = Vec::new();
        // Where each place really is now, so the view's pins and mounts meet it by the same
        // path (a credential dir that is a link is masked where it leads).
        let canonical = |path: PathBuf| std::fs::canonicalize(&path).unwrap_or(path);
        let xdg_config = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
        for path in credential_paths(home.as_deref(), xdg_config.as_deref())
            .into_iter()
            .chain(deny_read.iter().cloned())
            .chain(masked_sockets())
        {
            add(&mut masked, canonical(path));
        }
        Confinement {
            git_dirs: if walk {
                repositories(&root)
            } else {
                git_dirs(&root)
            },
            protected: protected.iter().cloned().map(canonical).collect(),
            masked,
            root,
            temp: None,
            new_git: None,
        }
    }

    /// This confinement with a temp dir of its own, shared by every process drawn from it
    /// (the run's commands see one `/tmp`); where it cannot be made, each process gets an
    /// empty one.
    pub fn with_run_temp(mut self) -> Confinement {
        self.temp = RunTemp::make().map(std::sync::Arc::new);
        self
    }

    /// This confinement, for a run under `git_write: block`, watching for a repository made
    /// of its root when it is none now ([`NewGitGuard`]).
    pub fn guarding_new_git(mut self) -> Confinement {
        self.new_git = NewGitGuard::of(&self.root).map(std::sync::Arc::new);
        self
    }

    /// Moves aside what a command made of the root a repository during a run under
    /// `git_write: block` (see [`Confinement::guarding_new_git`]); where each went.
    pub fn undo_new_git(&self) -> Vec<PathBuf> {
        self.new_git
            .as_ref()
            .map_or_else(Vec::new, |guard| guard.undo())
    }

    /// This confinement sharing `other`'s temp dir.
    pub fn sharing_temp(mut self, other: &Confinement) -> Confinement {
        self.temp = other.temp.clone();
        self
    }

    /// The root every process starts in and may write (given [`Access::write`]).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The read mask: what no started process can read.
    pub fn masked(&self) -> &[PathBuf] {
        &self.masked
    }

    /// Whether `path` (absolute, as the tools resolve it) lies in git metadata the run found
    /// at its start (a `.git` of any name: a `--separate-git-dir`, a bare `backup.git`), so
    /// that the file tools refuse it as the commands' view does.
    pub fn is_git_metadata(&self, path: &Path) -> bool {
        self.git_dirs.iter().any(|dir| path.starts_with(dir))
    }

    /// Whether `path` (absolute) is in the read mask: the file tools read it no more than a
    /// command can.
    pub fn masks(&self, path: &Path) -> bool {
        self.masked.iter().any(|masked| path.starts_with(masked))
    }

    /// Whether `path` (absolute) is masked or holds a masked place: the file tools neither
    /// change it nor move it away from its mask (the commands' view pins its parents).
    pub fn holds_masked(&self, path: &Path) -> bool {
        self.masked
            .iter()
            .any(|masked| path.starts_with(masked) || masked.starts_with(path))
    }

    /// The policy of one process with `access`.
    pub fn policy(&self, access: Access) -> Policy {
        let mut writable = Vec::new();
        if access.write {
            writable.push(self.root.clone());
        }
        let mut read_only = self.protected.clone();
        let state_dir = self.root.join(STATE_DIR);
        for dir in &self.git_dirs {
            if access.git_write && self.may_widen_to(dir, &state_dir) {
                add(&mut writable, dir.clone());
            } else {
                add(&mut read_only, dir.clone());
            }
        }
        Policy {
            work_dir: self.root.clone(),
            writable,
            read_only,
            state_dir: Some(self.root.join(STATE_DIR)),
            masked: self.masked.clone(),
            network: access.network,
            parent: std::process::id(),
            temp: self.temp.as_ref().map(|temp| temp.0.clone()),
            env: None,
        }
    }
}

impl Confinement {
    /// Whether git writes may make `dir` writable: the one rule for every place besides the
    /// root, whatever a `.git` file (planted by an earlier run's command, or shipped by the
    /// repository) names. It must lie inside the root, and outside fuseraft's state and every
    /// protected path (which are bound read-only after every writable place, so a git dir
    /// holding one does not uncover it). A worktree whose git dir lies elsewhere keeps it
    /// read-only: its commits fail rather than open a place outside the work dir.
    fn may_widen_to(&self, dir: &Path, state_dir: &Path) -> bool {
        dir.starts_with(&self.root)
            && !dir.starts_with(state_dir)
            && !self
                .protected
                .iter()
                .any(|protected| dir.starts_with(protected))
    }
}

impl Policy {
    /// The policy of a process in `work_dir` with its own confinement (no extra read mask):
    /// for callers without a run (the probe, tests).
    pub fn new(work_dir: &Path, protect: &[PathBuf], git_writable: bool, network: bool) -> Policy {
        Confinement::build(work_dir, protect, &[], false).policy(Access {
            write: true,
            git_write: git_writable,
            network,
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a policy serializes")
    }

    pub fn from_json(text: &str) -> Result<Policy, String> {
        serde_json::from_str(text).map_err(|error| format!("bad sandbox policy: {error}"))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_new_repository_guard_sets_aside_only_what_the_run_made() {
        let temp = std::env::temp_dir().join(format!("fuseraft-guard-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&temp);
        let (repo, plain) = (temp.join("repo"), temp.join("plain"));
        std::fs::create_dir_all(repo.join(".git/refs")).unwrap();
        std::fs::create_dir_all(&plain).unwrap();
        // A root that is a repository at the start gets no guard: its `.git` stays.
        drop(Confinement::new(&repo, &[], &[]).guarding_new_git());
        assert!(
            repo.join(".git/refs").is_dir(),
            "the user's repository was set aside"
        );
        // One that is not: a `.git` made meanwhile goes aside when the last copy drops.
        let guarded = Confinement::new(&plain, &[], &[]).guarding_new_git();
        let copy = guarded.clone();
        std::fs::create_dir_all(plain.join(".git/hooks")).unwrap();
        drop(guarded);
        assert!(plain.join(".git").exists(), "a copy still holds the guard");
        drop(copy);
        assert!(!plain.join(".git").exists());
        let aside = std::fs::read_dir(&plain).unwrap().flatten().count();
        assert_eq!(aside, 1, "set aside, not lost");
        let _ = std::fs::remove_dir_all(&temp);
    }

    #[test]
    fn a_killed_runs_temp_dir_goes_and_a_live_ones_stays() {
        let temp = std::env::temp_dir().join(format!("fuseraft-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&temp);
        std::fs::create_dir_all(&temp).unwrap();
        // A process that has ended, and one still running.
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        ended.wait().unwrap();
        let mut running = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let gone = temp.join(format!("fuseraft-run-{}-0", ended.id()));
        let kept = temp.join(format!("fuseraft-run-{}-0", running.id()));
        let own = temp.join(format!("fuseraft-run-{}-7", std::process::id()));
        for dir in [&gone, &kept, &own] {
            std::fs::create_dir_all(dir.join("shm")).unwrap();
        }
        std::fs::write(gone.join("left.txt"), "x").unwrap();
        sweep_killed_runs(&temp);
        assert!(!gone.exists(), "a killed run's dir is swept");
        assert!(
            kept.exists() && own.exists(),
            "a live run's and this process's stay"
        );
        let _ = running.kill();
        let _ = running.wait();
        let _ = std::fs::remove_dir_all(&temp);
    }
}
