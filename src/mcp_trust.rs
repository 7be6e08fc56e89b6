//! Consent before a run starts an MCP server, and the variables its config may expand.
//!
//! A config is shared text (a cloned repository's, a colleague's): its stdio server is a
//! program it names, and its `${VAR}`s are the user's environment. So:
//! - a stdio server starts only when the user trusts it: `--trust-mcp`, or its command
//!   line (as [`fuseraft_vm::mcp::command_line`] prints it) on a line of the user-level
//!   file `trusted-mcp`, or a `y` at a prompt on a terminal naming the server and its full
//!   command. Without any of these (no terminal, or `Security.Permissions.Preset:
//!   locked-down`, which never prompts) the run is refused before its first turn;
//! - `${VAR}` in a server's `Url`, `Headers`, `Env` or `Args` expands only for names the
//!   user allowed: `--mcp-env NAME`, or a line of the user-level file `mcp-env`.
//!
//! - a memory webhook (`Memory: { Provider: webhook }`), to which fuseraft itself sends each
//!   agent's turns, is trusted the same way: `--trust-mcp`, its URL on a line of
//!   `trusted-mcp`, or a `y` at a prompt naming the URL.
//!
//! The user-level files are in `$XDG_CONFIG_HOME/fuseraft/` (else `~/.config/fuseraft/`):
//! one entry a line, `#` starts a comment line.

use std::path::PathBuf;

use fuseraft_compiler::ir::{Preset, Program};
use fuseraft_vm::mcp;

/// The directory of the user-level files.
fn settings_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("fuseraft"))
}

/// The entries of the user-level file `name` (none when it is missing).
fn user_list(name: &str) -> Vec<String> {
    let Some(path) = settings_dir().map(|dir| dir.join(name)) else {
        return Vec::new();
    };
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Allows the variables of `--mcp-env` and of the user-level `mcp-env` file to expand (for
/// the whole process).
pub fn allow_variables(flags: &[String]) {
    mcp::allow_variables(flags.iter().cloned().chain(user_list("mcp-env")));
}

/// Checks every `${VAR}` of the servers that will start: `Err` names the first one refused,
/// its server and field, and how to allow it.
pub fn check_variables(program: &Program) -> Result<(), String> {
    for (server, used) in program.mcp_servers.iter().zip(mcp::used(program)) {
        if !used {
            continue;
        }
        for reference in mcp::references(server) {
            if let Some(reason) = mcp::refusal(&reference.name) {
                return Err(format!(
                    "MCP server `{}`'s `{}`: {reason}",
                    server.name, reference.field
                ));
            }
        }
    }
    Ok(())
}

/// How a run may get the user's consent to start a server.
pub enum Ask<'a> {
    /// It may not: refuse what is not trusted already.
    Never,
    /// On the terminal, with this question asker.
    Terminal(&'a dyn Fn(&str) -> bool),
}

/// Checks that every stdio server the run will start is trusted: by `trust_flag`, by the
/// user-level `trusted-mcp` file, or by the user's answer. `Err` names the first server
/// refused, its command and the flag.
pub fn check(program: &Program, trust_flag: bool, ask: Ask<'_>) -> Result<(), String> {
    if trust_flag {
        return Ok(());
    }
    let trusted = user_list("trusted-mcp");
    let locked_down = program.permissions.preset == Preset::LockedDown;
    for (server, used) in program.mcp_servers.iter().zip(mcp::used(program)) {
        let Some(line) = mcp::command_line(server).filter(|_| used) else {
            continue;
        };
        if trusted.contains(&line) {
            continue;
        }
        let question = format!(
            "start MCP server `{}`, which runs `{line}` with your rights? [y/N] ",
            server.name
        );
        let granted = match (&ask, locked_down) {
            (Ask::Terminal(ask), false) => ask(&question),
            _ => false,
        };
        if !granted {
            let why = if locked_down {
                "`Security.Permissions.Preset: locked-down` starts no server it was not told to trust"
            } else {
                "it was not trusted"
            };
            return Err(format!(
                "MCP server `{}` was not started: its command `{line}` comes from the config, and {why}; \
                 pass `--trust-mcp` if you trust this config, or add the command line to `{}`",
                server.name,
                settings_dir()
                    .map(|dir| dir.join("trusted-mcp").display().to_string())
                    .unwrap_or_else(|| "~/.config/fuseraft/trusted-mcp".into())
            ));
        }
    }
    Ok(())
}

/// Checks that the memory webhook's `urls` are trusted: by `trust_flag`, by the user-level
/// `trusted-mcp` file, or by the user's answer (never under `locked-down`). `Err` names the
/// URL and how to trust it.
pub fn check_webhook(
    program: &Program,
    urls: &[&str],
    trust_flag: bool,
    ask: Ask<'_>,
) -> Result<(), String> {
    if trust_flag {
        return Ok(());
    }
    let trusted = user_list("trusted-mcp");
    let locked_down = program.permissions.preset == Preset::LockedDown;
    for url in urls {
        if trusted.iter().any(|line| line == url) {
            continue;
        }
        let question = format!(
            "send every agent's turns to the memory webhook `{url}` the config names? [y/N] "
        );
        let granted = match (&ask, locked_down) {
            (Ask::Terminal(ask), false) => ask(&question),
            _ => false,
        };
        if !granted {
            return Err(format!(
                "the memory webhook `{url}` comes from the config, and it was not trusted: \
                 pass `--trust-mcp` if you trust this config, or add the URL to `{}`",
                settings_dir()
                    .map(|dir| dir.join("trusted-mcp").display().to_string())
                    .unwrap_or_else(|| "~/.config/fuseraft/trusted-mcp".into())
            ));
        }
    }
    Ok(())
}

/// Whether the MCP servers `program` starts may start in a run nobody attends (`fuseraft
/// test`, `fuseraft eval run`): only with `--trust-mcp`, and only with the variables the
/// user allowed. `Err` names the first server and its command, for `command` to say.
pub fn unattended(program: &Program, trust_mcp: bool, command: &str) -> Result<(), String> {
    let used = mcp::used(program);
    let Some((server, _)) = program.mcp_servers.iter().zip(used).find(|(_, used)| *used) else {
        return Ok(());
    };
    if !trust_mcp {
        let what = mcp::command_line(server)
            .map_or_else(String::new, |line| format!(", which runs `{line}`"));
        return Err(format!(
            "starts MCP server `{}`{what}; `{command}` starts MCP servers only with `--trust-mcp`",
            server.name
        ));
    }
    check_variables(program)
}
