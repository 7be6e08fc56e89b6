//! The filesystem view of a sandboxed process, built by the launcher (stage 1) in the
//! process's own mount namespace, deny-by-default as bubblewrap builds one:
//!
//! 1. every place the view binds back is opened first (`O_PATH`), before anything hides it;
//! 2. every mount is remounted read-only, so nothing outside the writable roots can be
//!    written, created, renamed, `chmod`ed or `touch`ed;
//! 3. `/tmp` and `/dev/shm` become the run's own temp dir (shared by the run's processes
//!    only), or private empty tmpfs without one: the user's sockets and files in the shared
//!    temp dirs are out of sight;
//! 4. the writable roots are bound back writable, with every directory between a root and a
//!    read-only or masked place inside it bound onto itself (a mount point cannot be renamed
//!    away), then `.git` and fuseraft's state inside them read-only, each group shallowest
//!    first, so no writable place covers a read-only one (a root under `/tmp` is bound into
//!    the run's one, below a tmpfs of this namespace alone: [`private_anchors`]);
//! 5. the masked paths (credentials, fuseraft's key, daemons' sockets) are covered by an
//!    empty directory or an empty file that nobody may read (mode `000`), that file made in
//!    a tmpfs of this namespace alone and bound through its descriptor.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::mount::{mount_bind, mount_remount, MountFlags};

use super::Policy;

/// The temp dirs every sandboxed process gets a private, empty copy of.
pub(super) const PRIVATE_TEMP: &[&str] = &["/tmp", "/dev/shm"];

/// How a place appears in the view.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Writable,
    ReadOnly,
}

/// A place of the real file system, held open, and where it appears in the view.
struct Bind {
    target: PathBuf,
    source: OwnedFd,
    dir: bool,
    kind: Kind,
}

/// Builds the view `policy` describes in the current (new, private) mount namespace.
pub(super) fn build(policy: &Policy) -> Result<(), String> {
    let run_temp = hold_run_temp(policy)?;
    let binds = hold(policy)?;
    let blank = blank_file(&policy.masked)?;
    read_only_everywhere()?;
    match run_temp {
        Some(temps) => {
            for bind in &temps {
                bind.apply()?;
            }
        }
        None => {
            for dir in PRIVATE_TEMP {
                private_temp(Path::new(dir))?;
            }
        }
    }
    private_anchors(&binds)?;
    for bind in &binds {
        bind.apply()?;
    }
    mask_all(&policy.masked, blank.as_ref())
}

/// The first directory under a private temp dir (`/tmp/a` of a root `/tmp/a/b/work`) that a
/// bind lands in becomes a fresh tmpfs of this namespace alone, mounted on a directory
/// opened without following a link: the run's commands share `/tmp`, and one of them could
/// otherwise swap what the binds below it land on between two of them (the work dir bound
/// in one place, its read-only `.git` in another).
fn private_anchors(binds: &[Bind]) -> Result<(), String> {
    let mut anchored: Vec<PathBuf> = Vec::new();
    for bind in binds {
        for temp in PRIVATE_TEMP {
            let Some(first) = bind
                .target
                .strip_prefix(temp)
                .ok()
                .and_then(|rest| rest.components().next())
            else {
                continue;
            };
            let anchor = Path::new(temp).join(first);
            if anchored.contains(&anchor) {
                continue;
            }
            let fail = |what: &str, error: rustix::io::Errno| {
                format!("anchoring `{}` ({what}): {error}", anchor.display())
            };
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let parent = open_linkless(Path::new(temp)).map_err(|error| fail("open", error))?;
            let _ = rustix::fs::mkdirat(&parent, first.as_os_str(), Mode::from_raw_mode(0o755));
            let held = rustix::fs::openat2(
                &parent,
                first.as_os_str(),
                flags,
                Mode::empty(),
                rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::BENEATH,
            )
            .map_err(|error| fail("open", error))?;
            let target = format!("/proc/self/fd/{}", held.as_raw_fd());
            rustix::mount::mount(
                "tmpfs",
                target.as_str(),
                "tmpfs",
                MountFlags::NOSUID | MountFlags::NODEV,
                Some(c"mode=0755"),
            )
            .map_err(|error| fail("mount", error))?;
            anchored.push(anchor);
        }
    }
    Ok(())
}

/// Opens every place the view binds back, shallowest first, skipping those that do not
/// exist, except the work dir (the root must exist: nothing is made for it).
fn hold(policy: &Policy) -> Result<Vec<Bind>, String> {
    let mut wanted: Vec<(PathBuf, Kind)> = Vec::new();
    for root in &policy.writable {
        if !is_private_temp(root) {
            wanted.push((root.clone(), Kind::Writable));
        }
    }
    let required = |target: &Path, kind: Kind| kind == Kind::Writable && target == policy.work_dir;
    for path in policy.read_only.iter().chain(&policy.state_dir) {
        wanted.push((path.clone(), Kind::ReadOnly));
    }
    for pin in pins(policy) {
        if !wanted.iter().any(|(path, _)| *path == pin) {
            wanted.push((pin, Kind::Writable));
        }
    }
    // Writable places first, then the read-only ones, each shallowest first: nothing bound
    // writable can cover a read-only place (a git dir named inside `.fuseraft/`).
    wanted.sort_by_key(|(path, kind)| (*kind == Kind::ReadOnly, path.components().count()));
    let mut binds = Vec::new();
    for (target, kind) in wanted {
        // A writable place is taken only as itself, with no symlink at any component (a
        // repository's `.git -> ~`, or a directory a command turned into a link between two
        // commands); a read-only one may be followed, which only narrows.
        let source = match kind {
            Kind::Writable => open_linkless(&target),
            Kind::ReadOnly => {
                rustix::fs::open(&target, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
            }
        };
        let source = match source {
            Ok(source) => source,
            Err(_) if !required(&target, kind) => continue,
            Err(error) => {
                return Err(format!(
                    "the writable root `{}` cannot be opened: {error}",
                    target.display()
                ))
            }
        };
        let file_type = rustix::fs::fstat(&source)
            .map(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode))
            .map_err(|error| format!("`{}`: {error}", target.display()))?;
        if file_type == rustix::fs::FileType::Symlink {
            continue;
        }
        let dir = file_type.is_dir();
        binds.push(Bind {
            target,
            source,
            dir,
            kind,
        });
    }
    Ok(binds)
}

/// Opens `path` (`O_PATH`) only if no component of it is a symlink: the one way the
/// launcher takes a place it grants writes to, for its binds and for Landlock alike.
pub(super) fn open_linkless(path: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS,
    )
}

/// Every directory strictly between a writable root and a read-only or masked place inside
/// it. Each is bound onto itself (still writable), so in every command's view it is a mount
/// point, which cannot be renamed or removed: no command moves a protected place (a nested
/// `.git`, the change log's directory, a masked file) away from the path the next command's
/// view protects, nor swaps one of those directories for a link.
fn pins(policy: &Policy) -> Vec<PathBuf> {
    let roots: Vec<&PathBuf> = policy
        .writable
        .iter()
        .filter(|root| !is_private_temp(root))
        .collect();
    let guarded = policy
        .read_only
        .iter()
        .chain(&policy.state_dir)
        .chain(&policy.masked);
    let mut pins: Vec<PathBuf> = Vec::new();
    for place in guarded {
        let Some(root) = roots.iter().find(|root| place.starts_with(root)) else {
            continue;
        };
        for ancestor in place.ancestors().skip(1) {
            if ancestor == root.as_path() || !ancestor.starts_with(root) {
                break;
            }
            if !pins.iter().any(|pin| pin == ancestor) {
                pins.push(ancestor.to_path_buf());
            }
        }
    }
    pins
}

/// The run's temp dir's `tmp/` and `shm/`, held to be bound onto `/tmp` and `/dev/shm`.
fn hold_run_temp(policy: &Policy) -> Result<Option<Vec<Bind>>, String> {
    let Some(temp) = &policy.temp else {
        return Ok(None);
    };
    let mut binds = Vec::new();
    for (source, target) in [(temp.join("tmp"), "/tmp"), (temp.join("shm"), "/dev/shm")] {
        let flags = OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::DIRECTORY;
        let source = rustix::fs::open(&source, flags, Mode::empty())
            .map_err(|error| format!("the run's temp dir `{}`: {error}", source.display()))?;
        binds.push(Bind {
            target: PathBuf::from(target),
            source,
            dir: true,
            kind: Kind::Writable,
        });
    }
    Ok(Some(binds))
}

fn is_private_temp(path: &Path) -> bool {
    PRIVATE_TEMP.iter().any(|temp| path == Path::new(temp))
}

impl Bind {
    fn apply(&self) -> Result<(), String> {
        let fail = |what: &str, error: rustix::io::Errno| {
            format!("binding `{}` ({what}): {error}", self.target.display())
        };
        if std::fs::symlink_metadata(&self.target).is_err() {
            // Only inside a private temp dir does a place have to be made: elsewhere the
            // file system is read-only by now and this fails, as it should.
            let made = if self.dir {
                std::fs::create_dir_all(&self.target)
            } else {
                std::fs::File::create(&self.target).map(drop)
            };
            made.map_err(|error| format!("making `{}`: {error}", self.target.display()))?;
        }
        let source = format!("/proc/self/fd/{}", self.source.as_raw_fd());
        mount_bind(source.as_str(), &self.target).map_err(|error| fail("bind", error))?;
        let mut flags = MountFlags::BIND | kept_flags(&self.target);
        if self.kind == Kind::ReadOnly {
            flags |= MountFlags::RDONLY;
        }
        mount_remount(&self.target, flags, "").map_err(|error| fail("remount", error))
    }
}

/// The flags a mount inherited into a user namespace keeps locked (`nosuid`, `nodev`,
/// `noexec`, atime): a remount must repeat them or the kernel refuses it.
fn kept_flags(path: &Path) -> MountFlags {
    use rustix::fs::StatVfsMountFlags as St;
    let mut flags = MountFlags::empty();
    if let Ok(stat) = rustix::fs::statvfs(path) {
        for (st, ms) in [
            (St::NOSUID, MountFlags::NOSUID),
            (St::NODEV, MountFlags::NODEV),
            (St::NOEXEC, MountFlags::NOEXEC),
            (St::NOATIME, MountFlags::NOATIME),
            (St::NODIRATIME, MountFlags::NODIRATIME),
            (St::RELATIME, MountFlags::RELATIME),
        ] {
            if stat.f_flag.contains(st) {
                flags |= ms;
            }
        }
    }
    flags
}

/// Remounts every mount of the namespace read-only. `/` must succeed; a mount that cannot
/// be reached (under a directory the user cannot enter, covered by another) is left, and
/// Landlock still denies writing there.
fn read_only_everywhere() -> Result<(), String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|error| format!("reading the mount table: {error}"))?;
    let mut root_done = false;
    for mount_point in mount_points(&table) {
        let flags = MountFlags::BIND | MountFlags::RDONLY | kept_flags(&mount_point);
        let result = mount_remount(&mount_point, flags, "");
        if mount_point == Path::new("/") {
            result.map_err(|error| format!("remounting `/` read-only: {error}"))?;
            root_done = true;
        }
    }
    if !root_done {
        return Err("the mount table lists no `/`".into());
    }
    Ok(())
}

/// The mount points of a `/proc/self/mountinfo` text (its fifth field, octal escapes
/// undone), in the table's order (a parent before what is mounted on it).
fn mount_points(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape(field)))
        .collect()
}

fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|digits| {
            bytes[i] == b'\\' && digits.iter().all(|digit| (b'0'..=b'7').contains(digit))
        });
        match octal {
            Some(digits) => {
                let value = digits
                    .iter()
                    .fold(0u32, |acc, digit| acc * 8 + u32::from(digit - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An empty tmpfs over `dir` (when it exists), writable, not executable for devices.
fn private_temp(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Ok(());
    }
    rustix::mount::mount(
        "tmpfs",
        dir,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(c"mode=1777"),
    )
    .map_err(|error| format!("a private `{}`: {error}", dir.display()))
}

/// The empty file of mode `000` that covers the masked files, when one of them exists:
/// made in a tmpfs of this mount namespace alone (staged on `/tmp` before the run's temp dir
/// covers it), so no other process (a command of the run, sharing its `/tmp`) can reach,
/// replace or change it, and held open: it is bound through its descriptor, not a path.
fn blank_file(masked: &[PathBuf]) -> Result<Option<OwnedFd>, String> {
    let files = masked
        .iter()
        .any(|path| std::fs::metadata(path).is_ok_and(|meta| !meta.is_dir()));
    if !files {
        return Ok(None);
    }
    let fail = |what: &str, error: rustix::io::Errno| format!("the read mask's {what}: {error}");
    let staging = Path::new("/tmp");
    rustix::mount::mount(
        "tmpfs",
        staging,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        Some(c"mode=0700,size=16k"),
    )
    .map_err(|error| fail("staging tmpfs", error))?;
    let blank = staging.join("masked");
    rustix::fs::open(
        &blank,
        OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|error| fail("blank file", error))?;
    let held = rustix::fs::open(
        &blank,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|error| fail("blank file", error))?;
    Ok(Some(held))
}

/// Covers every existing path of `masked`: a directory by an empty read-only tmpfs of mode
/// `000`, anything else by `blank` ([`blank_file`]), bound read-only.
fn mask_all(masked: &[PathBuf], blank: Option<&OwnedFd>) -> Result<(), String> {
    for path in masked {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let fail = |error: rustix::io::Errno| format!("masking `{}`: {error}", path.display());
        if meta.is_dir() {
            rustix::mount::mount(
                "tmpfs",
                path,
                "tmpfs",
                MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC | MountFlags::RDONLY,
                Some(c"mode=000"),
            )
            .map_err(fail)?;
        } else {
            let Some(blank) = blank else {
                // It appeared after the view was staged: denied all the same.
                return Err(format!(
                    "masking `{}`: it appeared while the view was built",
                    path.display()
                ));
            };
            let source = format!("/proc/self/fd/{}", blank.as_raw_fd());
            mount_bind(source.as_str(), path).map_err(fail)?;
            let flags = MountFlags::BIND | MountFlags::RDONLY | kept_flags(path);
            mount_remount(path, flags, "").map_err(fail)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_with_their_escapes_undone() {
        let table = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                     30 22 0:5 / /dev rw,nosuid - devtmpfs udev rw\n\
                     41 22 8:2 / /media/my\\040disk rw - ext4 /dev/sdb1 rw\n";
        assert_eq!(
            mount_points(table),
            vec![
                PathBuf::from("/"),
                PathBuf::from("/dev"),
                PathBuf::from("/media/my disk")
            ]
        );
        assert_eq!(unescape("a\\134b\\011c\\"), "a\\b\tc\\");
    }
}
