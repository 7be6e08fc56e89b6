//! What git is told before each call about the configuration it is about to read: the
//! repository's config (includes followed) and its `.gitmodules` are listed by name, and
//! each name that could make git run a program, reach a transport, or look into a
//! submodule gets a command-line override (`-c`, which wins over every config file).
//!
//! One rule per mechanism:
//! - **Drivers**: every `filter.*`, `diff.*` and `merge.*` driver named gets its program
//!   emptied (`clean`, `smudge`, `process`, `textconv`, `command`, `driver`; `required`
//!   false). An emptied filter is skipped; an emptied diff or merge driver fails instead.
//! - **Transports**: every `protocol.<name>.allow` named is overridden, `always` for the
//!   transports in [`TRANSPORTS`] and `never` for any other, so a repository cannot allow
//!   `ext::`, `file://` or a remote helper by being more specific than `protocol.allow`.
//! - **Submodules**: every submodule named (in the config or in `.gitmodules`, the work
//!   tree's file, else the index's, else `HEAD`'s, as git reads it) gets
//!   `submodule.<name>.ignore=all`, so no command looks into it (which would run a `git`
//!   there, with the submodule's own config and drivers).
//! - A config that sets `core.worktree` is refused, and so is one whose listing is too
//!   large ([`PROBE_CAP`]) or too slow to read whole: nothing may hide in what was not read.

use std::path::Path;
use std::time::Duration;

use crate::history::DenialKind;
use crate::tools::process::Ended;
use crate::tools::{Outcome, ToolContext};

use super::hardened::{spawn, Access, FIXED};

/// The transports git may use: `https` and `ssh`, and `http` (plain text, but it runs
/// nothing on this machine). `file://` and local paths (whose far side runs that
/// repository's hooks), `git://` (unauthenticated), `ext::` (a command) and remote
/// helpers are never allowed.
pub(super) const TRANSPORTS: &[&str] = &["https", "http", "ssh"];

/// The transports git knows by name, each given its setting explicitly.
const KNOWN_TRANSPORTS: &[&str] = &["https", "http", "ssh", "git", "file", "ext", "fd"];

/// How long one listing may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most config names a listing reads, in bytes: a config padded past it is refused, so
/// no driver can hide in output that was cut.
const PROBE_CAP: usize = 4 * 1024 * 1024;
/// The most bytes of the index's listing read to find its submodules.
const INDEX_CAP: usize = 64 * 1024 * 1024;

/// The `-c` items for the transports, given to every call whatever the configs say.
pub(super) fn transport_overrides() -> Vec<String> {
    let mut items = vec!["protocol.allow=never".to_string()];
    items.extend(KNOWN_TRANSPORTS.iter().map(|name| protocol(name)));
    items
}

fn protocol(name: &str) -> String {
    let allowed = TRANSPORTS
        .iter()
        .any(|known| name.eq_ignore_ascii_case(known));
    format!(
        "protocol.{name}.allow={}",
        if allowed { "always" } else { "never" }
    )
}

/// The `-c` items the configuration that git in `dir` would read calls for; an error for
/// a config git must not run with.
pub(super) async fn overrides(ctx: &ToolContext, dir: &Path) -> Result<Vec<String>, Outcome> {
    let mut overrides = Vec::new();
    let args = ["config", "--list", "--name-only", "-z"];
    let Some(names) = list(ctx, dir, &overrides, &args).await? else {
        // Outside a repository the listing still succeeds (the user's config); a config git
        // cannot read stops every git command the same way.
        return Ok(overrides);
    };
    for name in &names {
        if name.eq_ignore_ascii_case("core.worktree") {
            return Err(Outcome::denied(
                DenialKind::Git,
                "the repository's config sets `core.worktree`, which points git at another directory; the Git tools refuse to run there",
            ));
        }
        if let Some(item) = override_of(name) {
            push_new(&mut overrides, item);
        }
    }
    // Reading `.gitmodules` from the index reads the index: with every override known so far.
    for name in gitmodules(ctx, dir, &overrides.clone()).await? {
        if let Some(item) = override_of(&name) {
            push_new(&mut overrides, item);
        }
    }
    Ok(overrides)
}

fn push_new(items: &mut Vec<String>, item: String) {
    if !items.contains(&item) {
        items.push(item);
    }
}

/// The override a config name calls for, if any.
fn override_of(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let (section, rest) = lower.split_once('.')?;
    let (_, key) = rest.rsplit_once('.')?;
    // The subsection keeps its case: take it from the name as git printed it.
    let prefix = &name[..name.len() - key.len()];
    let subsection = &prefix[section.len() + 1..prefix.len() - 1];
    let value = match (section, key) {
        ("filter", "clean" | "smudge" | "process") => "",
        ("filter", "required") => "false",
        ("diff", "textconv" | "command") => "",
        ("merge", "driver") => "",
        ("protocol", "allow") => return Some(protocol(subsection)),
        ("submodule", _) => return Some(format!("submodule.{subsection}.ignore=all")),
        _ => return None,
    };
    Some(format!("{prefix}{key}={value}"))
}

/// The submodules (gitlinks of the index) among `pathspec`, as paths from the top of the
/// repository. `git add` looks into every populated submodule it meets whatever the config
/// says (a `git status` run there, with the submodule's own config and drivers), so the
/// Git tools never hand it one: each is excluded from its pathspec.
pub(super) async fn gitlinks(
    ctx: &ToolContext,
    dir: &Path,
    pathspec: &[String],
) -> Result<Vec<String>, Outcome> {
    let mut args = vec!["ls-files", "-z", "--stage", "--full-name", "--"];
    args.extend(pathspec.iter().map(String::as_str));
    let overrides = overrides(ctx, dir).await?;
    let Some(entries) = list_capped(ctx, dir, &overrides, &args, INDEX_CAP).await? else {
        return Ok(Vec::new());
    };
    Ok(entries
        .iter()
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            meta.starts_with("160000 ").then(|| path.to_string())
        })
        .collect())
}

/// The names `.gitmodules` sets, read from where git would read it: the work tree's file
/// at the top of the repository, else the index's, else `HEAD`'s.
async fn gitmodules(
    ctx: &ToolContext,
    dir: &Path,
    overrides: &[String],
) -> Result<Vec<String>, Outcome> {
    let top = dir
        .ancestors()
        .take_while(|path| path.starts_with(&ctx.work_dir))
        .find(|path| path.join(".git").symlink_metadata().is_ok());
    let Some(top) = top else {
        return Ok(Vec::new());
    };
    let file = top.join(".gitmodules");
    if file.symlink_metadata().is_ok() {
        let source = format!("--file={}", file.display());
        let args = ["config", source.as_str(), "--list", "--name-only", "-z"];
        return Ok(list(ctx, dir, overrides, &args).await?.unwrap_or_default());
    }
    for blob in ["--blob=:.gitmodules", "--blob=HEAD:.gitmodules"] {
        let args = ["config", blob, "--list", "--name-only", "-z"];
        if let Some(names) = list(ctx, dir, overrides, &args).await? {
            return Ok(names);
        }
    }
    Ok(Vec::new())
}

/// The names a `git config … --name-only -z` listing prints, or `None` when it fails; run
/// with the fixed overrides and `overrides`, like any other call.
async fn list(
    ctx: &ToolContext,
    dir: &Path,
    overrides: &[String],
    args: &[&str],
) -> Result<Option<Vec<String>>, Outcome> {
    list_capped(ctx, dir, overrides, args, PROBE_CAP).await
}

/// [`list`] of a listing of at most `cap` bytes (`-z`: entries end with NUL).
async fn list_capped(
    ctx: &ToolContext,
    dir: &Path,
    overrides: &[String],
    args: &[&str],
    cap: usize,
) -> Result<Option<Vec<String>>, Outcome> {
    let mut argv = vec!["--no-pager".to_string()];
    let fixed = FIXED.iter().map(|item| item.to_string());
    for item in fixed
        .chain(transport_overrides())
        .chain(overrides.iter().cloned())
    {
        argv.push("-c".to_string());
        argv.push(item);
    }
    argv.extend(args.iter().map(|arg| arg.to_string()));
    let (ended, output) = spawn(ctx, dir, Access::Read, &argv, PROBE_TIMEOUT, cap, false).await?;
    match ended {
        Ended::Exited(0) => {}
        Ended::TimedOut => {
            return Err(Outcome::denied(DenialKind::Git, format!(
                "reading the repository's config took over {}s; the Git tools refuse to run with a config they could not check",
                PROBE_TIMEOUT.as_secs()
            )))
        }
        // The probe did not run (the sandbox could not start it; git never exits 125):
        // git must not run unchecked, so the call is refused rather than made without the
        // overrides.
        Ended::Exited(crate::sandbox::SETUP_FAILED) => {
            return Err(Outcome::denied(DenialKind::Git, "the repository's config could not be read (the OS sandbox could not start git); the Git tools refuse to run with a config they could not check"));
        }
        Ended::Failed(error) => {
            return Err(Outcome::denied(DenialKind::Git, format!(
                "the repository's config could not be read ({error}); the Git tools refuse to run with a config they could not check"
            )))
        }
        // git's own refusal (no `.gitmodules` in the index, not a repository): nothing set.
        Ended::Exited(_) => return Ok(None),
    }
    // Names never hold a newline, so this is the capture's own cut.
    if output.contains("\n[output truncated: ") {
        return Err(Outcome::denied(DenialKind::Git, format!(
            "the repository's listing `git {}` passes {} MiB; the Git tools refuse to run with what they could not check",
            args.join(" "),
            cap / (1024 * 1024)
        )));
    }
    Ok(Some(
        output
            .split('\0')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_string)
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::override_of;

    #[test]
    fn each_dangerous_name_gets_its_override() {
        for (name, item) in [
            ("filter.Evil.clean", Some("filter.Evil.clean=")),
            ("filter.a.b.required", Some("filter.a.b.required=false")),
            ("diff.x.textconv", Some("diff.x.textconv=")),
            ("merge.m.driver", Some("merge.m.driver=")),
            ("protocol.ext.allow", Some("protocol.ext.allow=never")),
            ("protocol.FILE.allow", Some("protocol.FILE.allow=never")),
            ("protocol.HTTPS.allow", Some("protocol.HTTPS.allow=always")),
            ("protocol.allow", None),
            ("submodule.Sub.url", Some("submodule.Sub.ignore=all")),
            ("submodule.a.b.ignore", Some("submodule.a.b.ignore=all")),
            ("submodule.recurse", None),
            ("core.pager", None),
        ] {
            assert_eq!(override_of(name).as_deref(), item, "{name}");
        }
    }
}
