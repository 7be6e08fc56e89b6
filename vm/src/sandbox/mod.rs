//! The OS sandbox for commands: every command that `shell_run`, a validator or a contract
//! predicate runs goes through [`command`], which wraps it in fuseraft's launcher.
//!
//! ```text
//!  fuseraft ──spawn──▶ fuseraft __sandbox <policy> -- bash -c CMD      (launcher.rs)
//!                        unshare user+mount+pid(+net) · uid/gid map · the view (view.rs)
//!                        └─spawn─▶ fuseraft __sandbox-init …   (pid 1 of the new namespace)
//!                                    PDEATHSIG · setsid · fresh /proc · Landlock · spawn, reap
//!                                    └─▶ bash -c CMD
//! ```
//!
//! - The launcher is fuseraft's own binary re-executed (the CLI registers it with
//!   [`install_launcher`]); the policy ([`Policy`]) travels as JSON on its command line.
//! - Every process runs under a [`Policy`] drawn from the run's one [`Confinement`],
//!   computed at its start: a read-only view of the file system with the writable roots
//!   bound back (the work dir unless the process only reads, `.git` only with git writes),
//!   fuseraft's state read-only, private `/tmp` and `/dev/shm`, the credentials and the
//!   session key masked (`view.rs`); Landlock denies the same writes again.
//! - No controlling terminal and no descriptor past stderr reach the command.
//! - Without network permission the command gets an empty network namespace.
//! - The command's whole process tree lives in a PID namespace whose init ends with the
//!   command: daemons (`setsid`, `nohup`) die with it, and a killed fuseraft takes the tree
//!   down (`PR_SET_PDEATHSIG` on the launcher and on init).
//! - The environment is built from an allow-list ([`env`]).
//! - When the kernel cannot do this (no Landlock, no user namespaces) fuseraft says so
//!   once and follows `Security.Sandbox`: `refuse` (the default under `locked-down`) or
//!   `warn` (the default otherwise: the command runs unconfined).

pub mod env;
#[cfg(target_os = "linux")]
mod launcher;
#[cfg(target_os = "linux")]
mod loopback;
mod policy;
mod spec;
#[cfg(target_os = "linux")]
mod view;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

pub use policy::{Access, Confinement, Policy};
pub use spec::{Grant, OnUnavailable, Spec};

/// The argv[1] that makes fuseraft's binary the launcher.
pub const LAUNCHER_ARG: &str = "__sandbox";
/// The argv[1] of the launcher's second stage (pid 1 of the sandbox).
pub const INIT_ARG: &str = "__sandbox-init";
/// The exit code of a launcher that could not set the sandbox up.
pub const SETUP_FAILED: i32 = 125;
/// The one variable of a launcher's environment: the command's environment, as JSON pairs.
pub const ENV_VAR: &str = "FUSERAFT_SANDBOX_ENV";
/// The first line a launcher that failed prints on stderr.
pub const SETUP_FAILED_MARK: &str = "fuseraft sandbox:";

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Registers the launcher program (fuseraft's own binary) for the whole process.
pub fn install_launcher(path: PathBuf) {
    let _ = LAUNCHER.set(path);
}

/// Registers the image this process runs as its launcher, held open: the launcher is
/// started through `/proc/self/fd/N`, never looked up by path again, so a binary that lies
/// in a writable root (replaced by a command) or in the shared temp dir (hidden by the
/// sandbox's private `/tmp`) still launches the real fuseraft. Falls back to the path.
pub fn install_own_binary() {
    #[cfg(target_os = "linux")]
    {
        static IMAGE: OnceLock<std::os::fd::OwnedFd> = OnceLock::new();
        if let Some(path) = own_image()
            .map(|fd| IMAGE.get_or_init(|| fd))
            .map(image_path)
        {
            install_launcher(path);
            return;
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        install_launcher(exe);
    }
}

/// This process's executable, opened through `/proc/self/exe` (the running image, whatever
/// is at its path now): read-only, close-on-exec (the kernel resolves `/proc/self/fd/N` at
/// `execve` before it closes the descriptor).
#[cfg(target_os = "linux")]
fn own_image() -> Option<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        "/proc/self/exe",
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

/// The path that executes the image held by `fd`.
#[cfg(target_os = "linux")]
fn image_path(fd: &std::os::fd::OwnedFd) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The registered launcher, if any.
pub fn launcher() -> Option<PathBuf> {
    LAUNCHER.get().cloned()
}

/// Marks this process non-dumpable, so that no other process of the user (a command it
/// runs included) can read its `/proc/<pid>/environ` or `mem` (errors are ignored: the
/// sandbox's Landlock domain blocks the same reads), and every descriptor it inherited past
/// standard error close-on-exec, so nothing it starts inherits one.
pub fn harden_self() {
    #[cfg(target_os = "linux")]
    {
        let _ =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
        close_fds::set_fds_cloexec(3, &[]);
    }
}

/// The launcher's entry: `args` are the arguments after `argv[0]`, starting with
/// [`LAUNCHER_ARG`] or [`INIT_ARG`]. Returns the exit code, or `None` when `args` is not a
/// launcher invocation. Call it first thing in `main`, before any thread exists.
pub fn dispatch(args: &[std::ffi::OsString]) -> Option<i32> {
    let first = args.first()?.to_str()?;
    if first != LAUNCHER_ARG && first != INIT_ARG {
        return None;
    }
    #[cfg(target_os = "linux")]
    return Some(launcher::main(first == INIT_ARG, &args[1..]));
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!("{SETUP_FAILED_MARK} the OS sandbox needs Linux");
        Some(SETUP_FAILED)
    }
}

/// Whether the sandbox works here (probed once per process by running `true` in it).
fn available(launcher: &Option<PathBuf>) -> Result<&std::path::Path, String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    let Some(launcher) = launcher else {
        return Err("no launcher program is registered (fuseraft is used as a library)".into());
    };
    PROBE
        .get_or_init(|| probe(launcher))
        .clone()
        .map(|()| launcher.as_path())
}

fn probe(launcher: &std::path::Path) -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err("the OS sandbox needs Linux (Landlock and namespaces)".into());
    }
    let temp = std::env::temp_dir();
    let mut policy = Policy::new(&temp, &[], false, false);
    policy.state_dir = None;
    // The probe tries the mechanism only: nothing in the shared temp dir (a `.git` another
    // user planted there) may make it fail, which would leave commands unconfined.
    policy.read_only.clear();
    let mut cmd = wrapped(launcher, &policy, "true", &[]);
    cmd.env_clear()
        .envs(env::child_env())
        .current_dir(&temp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = cmd
        .spawn()
        .map_err(|error| format!("could not start `{}`: {error}", launcher.display()))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut child = child;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the sandbox probe did not finish in 20s".into());
            }
        }
    }
    let output = child
        .wait_with_output()
        .map_err(|error| error.to_string())?;
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output.stderr);
    let reason = text
        .trim()
        .strip_prefix(SETUP_FAILED_MARK)
        .unwrap_or(text.trim())
        .trim()
        .to_string();
    Err(if reason.is_empty() {
        format!("the sandbox probe failed ({})", output.status)
    } else {
        reason
    })
}

fn wrapped(launcher: &std::path::Path, policy: &Policy, program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(launcher);
    cmd.arg(LAUNCHER_ARG)
        .arg(policy.to_json())
        .arg("--")
        .arg(program)
        .args(args);
    cmd
}

/// Says once per process that the OS sandbox is unavailable and what follows.
fn say_once(reason: &str, mode: OnUnavailable) {
    static SAID: Mutex<bool> = Mutex::new(false);
    let mut said = SAID.lock().unwrap_or_else(PoisonError::into_inner);
    if !*said {
        *said = true;
        match mode {
            OnUnavailable::Warn => eprintln!(
                "fuseraft: warning: the OS sandbox is unavailable ({reason}); commands run \
                 unconfined with your rights (Security.Sandbox: warn; set it to `refuse` to \
                 refuse them instead)"
            ),
            OnUnavailable::Refuse => eprintln!(
                "fuseraft: the OS sandbox is unavailable ({reason}); commands are refused \
                 (Security.Sandbox: refuse; `warn` runs them unconfined)"
            ),
        }
    }
}

/// The command that runs `program args` under `policy` as `spec` says: wrapped in the
/// launcher when the sandbox works, unconfined (after one warning) when it does not and
/// `spec` says `warn`; an error text when it does not and `spec` says `refuse`. The
/// environment (allow-list, `GIT_TERMINAL_PROMPT=0`) and the directory are set; standard
/// streams are left to the caller.
pub fn command(
    spec: &Spec,
    policy: &Policy,
    program: &str,
    args: &[&str],
) -> Result<Command, String> {
    agent_command(spec, policy, program, args, &[])
}

/// [`command`] for a command of an agent that set or unset `vars` (`shell_set_env`): its
/// environment is the allow-list with those over it, by the one rule of
/// [`env::with_agent_vars`].
pub fn agent_command(
    spec: &Spec,
    policy: &Policy,
    program: &str,
    args: &[&str],
    vars: &[(String, Option<String>)],
) -> Result<Command, String> {
    build(spec, policy, program, args, vars, &[])
}

/// [`command`] with variables fuseraft sets for this program (git's hardening, an MCP
/// server's `Env`) over the allow-listed environment. Set them here, never on the returned
/// command: that is the launcher, which runs with no environment of its own.
pub fn command_with_env(
    spec: &Spec,
    policy: &Policy,
    program: &str,
    args: &[&str],
    extra: &[(String, String)],
) -> Result<Command, String> {
    build(spec, policy, program, args, &[], extra)
}

fn build(
    spec: &Spec,
    policy: &Policy,
    program: &str,
    args: &[&str],
    vars: &[(String, Option<String>)],
    extra: &[(String, String)],
) -> Result<Command, String> {
    let mut child_env = env::agent_child_env(vars);
    child_env.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
    for (name, value) in extra {
        child_env.retain(|(known, _)| known != name.as_str());
        child_env.push((name.into(), value.into()));
    }
    let mut cmd = match available(&spec.launcher) {
        Ok(launcher) => {
            // The sandbox's temp dir is its private `/tmp`, wherever `$TMPDIR` points.
            child_env.push(("TMPDIR".into(), "/tmp".into()));
            // The environment travels as data: the launcher has no other.
            let pairs: Vec<(&str, &str)> = child_env
                .iter()
                .filter_map(|(name, value)| Some((name.to_str()?, value.to_str()?)))
                .collect();
            let carried = serde_json::to_string(&pairs).map_err(|error| error.to_string())?;
            let mut cmd = wrapped(launcher, policy, program, args);
            cmd.env_clear()
                .env(ENV_VAR, carried)
                .current_dir(&policy.work_dir);
            return Ok(cmd);
        }
        Err(reason) => match spec.on_unavailable {
            OnUnavailable::Refuse => {
                say_once(&reason, OnUnavailable::Refuse);
                return Err(format!(
                    "the OS sandbox is unavailable ({reason}) and Security.Sandbox is `refuse`: \
                     the command was not run"
                ));
            }
            OnUnavailable::Warn => {
                say_once(&reason, OnUnavailable::Warn);
                let mut cmd = Command::new(program);
                cmd.args(args);
                cmd
            }
        },
    };
    cmd.env_clear()
        .envs(child_env)
        .current_dir(&policy.work_dir);
    Ok(cmd)
}

/// Whether a command's merged output and exit code say the launcher failed to set up.
pub fn setup_failure(code: Option<i32>, output: &str) -> Option<String> {
    (code == Some(SETUP_FAILED))
        .then(|| output.trim_start().strip_prefix(SETUP_FAILED_MARK))
        .flatten()
        .map(|rest| rest.lines().next().unwrap_or_default().trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(on_unavailable: OnUnavailable) -> Spec {
        Spec {
            launcher: None,
            on_unavailable,
            ..Spec::default()
        }
    }

    #[test]
    fn without_a_sandbox_refuse_runs_nothing() {
        let dir = std::env::temp_dir();
        let policy = Policy::new(&dir, &[], false, false);
        let error =
            command(&spec(OnUnavailable::Refuse), &policy, "true", &[]).expect_err("refused");
        assert!(error.contains("OS sandbox is unavailable"), "{error}");
        assert!(error.contains("`refuse`"), "{error}");
    }

    #[test]
    fn without_a_sandbox_warn_runs_unconfined_with_the_allow_listed_environment() {
        let dir = std::env::temp_dir();
        let policy = Policy::new(&dir, &[], false, false);
        let mut cmd = command(&spec(OnUnavailable::Warn), &policy, "true", &[]).expect("runs");
        assert_eq!(cmd.get_program(), "true");
        assert!(cmd
            .get_envs()
            .any(|(name, value)| name == "GIT_TERMINAL_PROMPT" && value == Some("0".as_ref())));
        assert!(cmd.status().expect("true runs").success());
    }

    #[test]
    fn a_setup_failure_is_told_apart_from_exit_125() {
        assert_eq!(
            setup_failure(Some(125), "fuseraft sandbox: Landlock: not enabled\n"),
            Some("Landlock: not enabled".to_string())
        );
        assert_eq!(setup_failure(Some(125), "my tool exits 125"), None);
        assert_eq!(setup_failure(Some(1), "fuseraft sandbox: x"), None);
    }

    #[test]
    fn the_policy_protects_git_and_state_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("fuseraft-policy-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        let blocked = Policy::new(&dir, &[], false, false);
        assert!(blocked.read_only.contains(&dir.join(".git")));
        assert_eq!(blocked.state_dir, Some(dir.join(".fuseraft")));
        assert!(blocked.writable.contains(&dir));
        let allowed = Policy::new(&dir, &[], true, true);
        assert!(!allowed.read_only.contains(&dir.join(".git")));
        assert_eq!(Policy::from_json(&allowed.to_json()).unwrap(), allowed);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
