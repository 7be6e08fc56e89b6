//! The launcher: fuseraft's binary run as `fuseraft __sandbox <policy-json> -- PROGRAM ARGS`
//! (Linux only). It must run before any other thread exists (`unshare(CLONE_NEWUSER)`
//! refuses a multi-threaded caller), so `main` dispatches to it first.
//!
//! The launcher runs with no environment but [`super::ENV_VAR`], the command's environment
//! as data, applied only when stage 2 starts the command: nothing a command or an agent set
//! acts in a process that holds its namespace's capabilities.
//!
//! Stage 1 (`__sandbox`, in fuseraft's PID namespace): dies with fuseraft
//! (`PR_SET_PDEATHSIG`); marks inherited descriptors close-on-exec; unshares a user, mount
//! and PID namespace, and a network namespace unless the policy allows the network; maps
//! its uid and gid onto themselves; makes every mount private and builds the file system
//! view (`view.rs`: read-only everywhere, private temp dirs, the writable roots bound back,
//! `.git` and fuseraft's state read-only, the read mask); starts stage 2 (the first process
//! it starts becomes the namespace's pid 1) and exits with its code.
//!
//! Stage 2 (`__sandbox-init`, pid 1 of the new PID namespace): dies with stage 1; starts a
//! session of its own (no controlling terminal); mounts a
//! fresh `/proc` (processes outside the namespace are not listed); applies Landlock (reads
//! everywhere, writes only beneath the writable roots and to a few devices; signals and
//! abstract UNIX sockets scoped to the sandbox; `ptrace` and `/proc/<pid>/environ` of
//! processes outside it denied); spawns the program, reaps every orphan, and exits with
//! the program's code. When pid 1 exits the kernel kills every process left in the
//! namespace, daemons included.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use landlock::{
    path_beneath_rules, Access, AccessFs, PathBeneath, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, ABI,
};
use nix::sched::{unshare, CloneFlags};
use rustix::mount::{mount_change, MountFlags, MountPropagationFlags};
use rustix::process::{set_parent_process_death_signal, Signal};

use super::{Policy, INIT_ARG, SETUP_FAILED, SETUP_FAILED_MARK};

/// The Landlock ABI the rules are written for; older kernels get the best they support.
const LANDLOCK_ABI: ABI = ABI::V7;

/// Devices a command may write (and open) wherever it runs.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// What a command may read under `/dev`: the harmless devices and the places under it that
/// hold files, not devices (never a disk, a terminal of someone else's, memory).
const READABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    // `/dev/fd`, `/dev/stdin`, ... lead into `/proc/self`, readable already (a rule on the
    // pipe a standard stream is would fail the ruleset).
    "/dev/shm",
    "/dev/mqueue",
];

/// Every entry of `/` but `/dev`, each readable beneath (a link, as `/lib -> usr/lib`, for
/// where it leads).
fn readable_roots() -> Vec<PathBuf> {
    let entries = std::fs::read_dir("/").map(|entries| {
        entries
            .flatten()
            .filter(|entry| entry.file_name() != "dev")
            .map(|entry| entry.path())
            .collect::<Vec<_>>()
    });
    existing(entries.unwrap_or_default())
}

/// The paths of `paths` that lead somewhere (a rule on a dangling link fails the ruleset).
fn existing(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    paths.into_iter().filter(|path| path.exists()).collect()
}

/// Runs stage 1 (`init == false`) or stage 2; `args` follow the stage's argv[1].
pub(super) fn main(init: bool, args: &[OsString]) -> i32 {
    let result = parse(args).and_then(|(policy, argv)| {
        if init {
            stage_init(&policy, &argv)
        } else {
            stage_outer(&policy, &args[0], &argv)
        }
    });
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{SETUP_FAILED_MARK} {error}");
            SETUP_FAILED
        }
    }
}

fn parse(args: &[OsString]) -> Result<(Policy, Vec<OsString>), String> {
    let usage = || "usage: fuseraft __sandbox <policy-json> -- PROGRAM [ARGS...]".to_string();
    let json = args
        .first()
        .and_then(|arg| arg.to_str())
        .ok_or_else(usage)?;
    if args.get(1).and_then(|arg| arg.to_str()) != Some("--") || args.len() < 3 {
        return Err(usage());
    }
    let mut policy = Policy::from_json(json)?;
    policy.env = match std::env::var(super::ENV_VAR) {
        Ok(text) => Some(
            serde_json::from_str(&text)
                .map_err(|error| format!("bad command environment: {error}"))?,
        ),
        Err(_) => None,
    };
    Ok((policy, args[2..].to_vec()))
}

fn die_with_parent() -> Result<(), String> {
    set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|error| format!("prctl(PR_SET_PDEATHSIG): {error}"))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(SETUP_FAILED)
}

fn stage_outer(policy: &Policy, json: &OsString, argv: &[OsString]) -> Result<i32, String> {
    die_with_parent()?;
    // Nothing fuseraft inherited (a descriptor its own caller left open) reaches the command.
    close_fds::set_fds_cloexec(3, &[]);
    let parent = rustix::process::getppid().map_or(0, |pid| pid.as_raw_nonzero().get());
    if policy.parent != 0 && u32::try_from(parent).ok() != Some(policy.parent) {
        return Err("fuseraft, which started this command, is gone".into());
    }
    // Stage 2 is this image again, held open now: the view about to be built may hide its
    // path (a binary under `/tmp`), and nothing at a path decides what runs next.
    let image = super::own_image()
        .ok_or_else(|| "cannot open the launcher's own program (/proc/self/exe)".to_string())?;
    let exe = super::image_path(&image);
    if let Some(state) = &policy.state_dir {
        let _ = std::fs::create_dir_all(state);
    }
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    if !policy.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|error| {
        format!("unprivileged user namespaces are unavailable (unshare: {error})")
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|error| format!("writing {file}: {error}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|error| format!("making mounts private: {error}"))?;
    super::view::build(policy)?;
    keep_mount_capability();
    let status = Command::new(exe)
        .arg(INIT_ARG)
        .arg(json)
        .arg("--")
        .args(argv)
        .current_dir(&policy.work_dir)
        .env_clear()
        .envs(carried_environment(policy))
        .status()
        .map_err(|error| format!("starting the sandbox's init: {error}"))?;
    Ok(exit_code(status))
}

fn stage_init(policy: &Policy, argv: &[OsString]) -> Result<i32, String> {
    die_with_parent()?;
    close_fds::set_fds_cloexec(3, &[]);
    // A session of its own: no controlling terminal, so `/dev/tty` cannot be opened and
    // nothing can be typed into (TIOCSTI) or drawn on the operator's terminal.
    rustix::process::setsid().map_err(|error| format!("setsid: {error}"))?;
    // A /proc of this PID namespace; where the kernel refuses (a masked /proc in a
    // container), the outer one stays and Landlock still hides other processes' secrets.
    let _ = rustix::mount::mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    );
    if !policy.network {
        // Loopback inside the empty namespace, for tests that talk to themselves; set by
        // this process, never by a program found on the command's `PATH` (it would run with
        // the namespace's capabilities, before Landlock).
        let _ = super::loopback::up();
    }
    // The mount capability stage 1 passed on is not the command's.
    let _ = rustix::thread::clear_ambient_capability_set();
    if let Ok(mut sets) = rustix::thread::capabilities(None) {
        sets.inheritable = rustix::thread::CapabilitySet::empty();
        let _ = rustix::thread::set_capabilities(None, sets);
    }
    let mut writable = policy.writable.clone();
    writable.extend(super::view::PRIVATE_TEMP.iter().map(PathBuf::from));
    landlock(&writable)?;
    no_root_privileges();
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(&policy.work_dir);
    if let Some(vars) = &policy.env {
        command
            .env_clear()
            .envs(vars.iter().map(|(name, value)| (name, value)));
    }
    // A terminal handed over as a standard stream is not the command's to read or draw on.
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        command.stdin(Stdio::null());
    }
    if std::io::stdout().is_terminal() {
        command.stdout(Stdio::null());
    }
    if std::io::stderr().is_terminal() {
        command.stderr(Stdio::null());
    }
    let child = command
        .spawn()
        .map_err(|error| format!("starting `{}`: {error}", argv[0].to_string_lossy()))?;
    let pid = child.id();
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((reaped, status))) if reaped.as_raw_nonzero().get() as u32 == pid => {
                return Ok(status
                    .exit_status()
                    .or_else(|| status.terminating_signal().map(|signal| 128 + signal))
                    .unwrap_or(SETUP_FAILED));
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(format!("waiting for the command: {error}")),
        }
    }
}

/// Stage 2's environment: the command's carried on in its one variable, or (a launcher
/// started by hand, with none) this process's own.
fn carried_environment(policy: &Policy) -> Vec<(OsString, OsString)> {
    match &policy.env {
        Some(_) => std::env::var_os(super::ENV_VAR)
            .map(|carried| vec![(OsString::from(super::ENV_VAR), carried)])
            .unwrap_or_default(),
        None => std::env::vars_os().collect(),
    }
}

/// Lets stage 2 keep `CAP_SYS_ADMIN` of the new user namespace across its exec (an ambient
/// capability), so that it can mount the `/proc` of its PID namespace when the user is not
/// root (an exec drops every other capability of a non-root user); stage 2 clears the
/// ambient set before it starts the command. Where this fails, stage 2 keeps the outer
/// `/proc`, and Landlock still denies other processes' secrets.
fn keep_mount_capability() {
    use rustix::thread::CapabilitySet;
    if let Ok(mut sets) = rustix::thread::capabilities(None) {
        sets.inheritable |= CapabilitySet::SYS_ADMIN;
        if rustix::thread::set_capabilities(None, sets).is_ok() {
            let _ =
                rustix::thread::configure_capability_in_ambient_set(CapabilitySet::SYS_ADMIN, true);
        }
    }
}

/// Makes uid 0 an ordinary user for everything this process starts (`SECBIT_NOROOT`,
/// locked): a command run by root gets no capability in the sandbox's user namespace, so
/// file modes (the read mask's `000`) hold for it as for anyone. Without the capability to
/// set it (any other user), there is nothing to take away.
fn no_root_privileges() {
    use rustix::thread::CapabilitiesSecureBits as Bits;
    let _ = rustix::thread::set_capabilities_secure_bits(Bits::NO_ROOT | Bits::NO_ROOT_LOCKED);
}

/// Applies the Landlock rules to this process (inherited by everything it starts).
fn landlock(writable: &[PathBuf]) -> Result<(), String> {
    let fail = |error: landlock::RulesetError| format!("Landlock: {error}");
    let abi = LANDLOCK_ABI;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(fail)?
        .scope(Scope::from_all(abi))
        .map_err(fail)?
        .create()
        .map_err(fail)?
        // Reads everywhere but `/dev`, where only the harmless devices read: a command run by
        // root owns the disks' device nodes, and reading one would read every masked file.
        .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))
        .map_err(fail)?
        .add_rules(path_beneath_rules(
            readable_roots(),
            AccessFs::from_read(abi),
        ))
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/dev"], AccessFs::ReadDir))
        .map_err(fail)?
        .add_rules(path_beneath_rules(
            existing(READABLE_DEVICES.iter().map(PathBuf::from)),
            AccessFs::from_read(abi),
        ))
        .map_err(fail)?
        // Each writable place as the view bound it, opened with no symlink at any
        // component; one that cannot be (a link a command put there) gets no rule.
        .add_rules(
            writable
                .iter()
                .filter_map(|path| super::view::open_linkless(path).ok())
                .map(|fd| Ok(PathBeneath::new(fd, AccessFs::from_all(abi)))),
        )
        .map_err(fail)?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(abi)))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock is not supported or not enabled by this kernel".into());
    }
    Ok(())
}
