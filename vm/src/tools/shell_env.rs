//! The Shell tools that look at the environment commands get, without running one:
//! `shell_get_env {name}` and `shell_which {program}`.
//!
//! Security decisions:
//! - Both read the environment a command would get (`crate::sandbox::env::child_env`, the
//!   allow-list), never fuseraft's own: an API key, a token or any variable off the list
//!   is "not set" here as it is for `shell_run`. A name that looks like a credential is
//!   refused outright, saying why.
//! - `shell_which` searches that environment's `PATH` for an executable regular file; it
//!   takes a bare program name (no `/`), so it cannot be used to probe paths.

use crate::history::DenialKind;
use std::ffi::OsString;

use super::{Args, Outcome};
use crate::sandbox::env;

/// The value of `name` in the environment commands get.
fn child_var(name: &str) -> Option<OsString> {
    env::child_env()
        .into_iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value)
}

/// `shell_get_env {name}`.
pub(crate) fn get_env(args: &Args) -> Outcome {
    let name = match args.string("name") {
        Ok(name) => name.trim(),
        Err(outcome) => return outcome,
    };
    if name.is_empty() || name.contains(['=', '\0']) {
        return Outcome::error(format!(
            "tool `shell_get_env`: `{name}` is not a variable name"
        ));
    }
    if env::looks_secret(name) || super::is_secret_env(name) {
        return Outcome::denied(
            DenialKind::Credentials,
            format!(
            "`{name}` looks like a credential; commands never get one and this tool never reads one"
        ),
        );
    }
    match child_var(name) {
        Some(value) => Outcome::ok(value.to_string_lossy().into_owned()),
        None => Outcome::ok(format!(
            "`{name}` is not set in the environment commands get (fuseraft passes on an allow-list of variables)"
        )),
    }
}

/// `shell_which {program}`.
pub(crate) fn which(args: &Args) -> Outcome {
    let program = match args.string("program") {
        Ok(program) => program.trim(),
        Err(outcome) => return outcome,
    };
    if program.is_empty() || program.contains(['/', '\0']) || program == "." || program == ".." {
        return Outcome::error(format!(
            "tool `shell_which` needs a program name without `/`, not `{program}`"
        ));
    }
    let path = child_var("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate));
    match found {
        Some(found) => Outcome::ok(found.display().to_string()),
        None => Outcome::fail(format!(
            "[NOT FOUND] `{program}` is not on the `PATH` commands get"
        )),
    }
}

fn is_executable(path: &std::path::Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    meta.is_file()
}
