//! The Shell tools about the environment commands get, without running one:
//! `shell_get_env {name}`, `shell_set_env {name, value}` and `shell_which {program}`; and
//! [`agent_command`], how the Shell and Probe tools start `bash` with that environment.
//!
//! Security decisions:
//! - All of them read the environment a command of this agent would get
//!   (`crate::sandbox::env`: the allow-list, with the variables the agent set over it),
//!   never fuseraft's own: an API key, a token or any variable off the list is "not set"
//!   here as it is for `shell_run`. A name that looks like a credential is refused
//!   outright, saying why.
//! - `shell_set_env` changes the environment of this agent's later `shell_run`,
//!   `shell_run_script`, `shell_run_background` and Probe commands in the run, nothing
//!   else (not git's, validators' or another agent's), and only by the sandbox's one rule
//!   (`env::agent_may_set`): no credential-like name, no dynamic-loader variable (`LD_*`,
//!   `DYLD_*`, `GLIBC_TUNABLES`, which would act in the launcher before the sandbox is in
//!   place), none fuseraft sets itself. An empty value unsets the variable.
//! - `shell_which` searches that environment's `PATH` for an executable regular file; it
//!   takes a bare program name (no `/`), so it cannot be used to probe paths.

use crate::history::DenialKind;
use std::ffi::OsString;

use super::{Args, Outcome, ToolContext};
use crate::sandbox::env;

#[cfg(all(test, unix))]
#[path = "shell_env_tests.rs"]
mod tests;

/// The sandboxed `bash ARGS` of a Shell or Probe tool, with this agent's variables.
pub(crate) fn agent_command(
    ctx: &ToolContext,
    policy: &crate::sandbox::Policy,
    args: &[&str],
) -> Result<std::process::Command, String> {
    let vars = ctx.run_state.env_of(&ctx.agent);
    crate::sandbox::agent_command(&ctx.sandbox, policy, "bash", args, &vars)
}

/// The value of `name` in the environment this agent's commands get.
fn child_var(ctx: &ToolContext, name: &str) -> Option<OsString> {
    env::agent_child_env(&ctx.run_state.env_of(&ctx.agent))
        .into_iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value)
}

/// `shell_set_env {name, value}`.
pub(crate) fn set_env(args: &Args, ctx: &ToolContext) -> Outcome {
    let (name, value) = match (args.string("name"), args.string("value")) {
        (Ok(name), Ok(value)) => (name.trim(), value),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    if let Err(reason) = env::agent_may_set(name) {
        let kind = if env::looks_secret(name) || env::is_model_key(name) {
            DenialKind::Credentials
        } else {
            DenialKind::Sandbox
        };
        return Outcome::denied(kind, format!("shell_set_env: {reason}"));
    }
    if value.contains('\0') {
        return Outcome::error(format!(
            "shell_set_env: the value of `{name}` holds a NUL byte"
        ));
    }
    if value.is_empty() {
        ctx.run_state.set_env(&ctx.agent, name, None);
        return Outcome::ok(format!(
            "Unset `{name}` for your later commands in this run"
        ));
    }
    ctx.run_state
        .set_env(&ctx.agent, name, Some(value.to_string()));
    Outcome::ok(format!("Set `{name}` for your later commands in this run"))
}

/// `shell_get_env {name}`.
pub(crate) fn get_env(args: &Args, ctx: &ToolContext) -> Outcome {
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
    match child_var(ctx, name) {
        Some(value) => Outcome::ok(value.to_string_lossy().into_owned()),
        None => Outcome::ok(format!(
            "`{name}` is not set in the environment commands get (fuseraft passes on an allow-list of variables)"
        )),
    }
}

/// `shell_which {program}`.
pub(crate) fn which(args: &Args, ctx: &ToolContext) -> Outcome {
    let program = match args.string("program") {
        Ok(program) => program.trim(),
        Err(outcome) => return outcome,
    };
    if program.is_empty() || program.contains(['/', '\0']) || program == "." || program == ".." {
        return Outcome::error(format!(
            "tool `shell_which` needs a program name without `/`, not `{program}`"
        ));
    }
    let path = child_var(ctx, "PATH").unwrap_or_default();
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
