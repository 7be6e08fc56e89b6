//! # FR015 `mcp-server-starts`
//!
//! ## What it does
//! Names every MCP server a run of the config would start on this machine (a `stdio`
//! entry of `McpServers`: its `Command` and `Args`), at the server's entry. This is advice:
//! it never fails `check`, not even with `--deny-warnings`, and `check` and `compile` start
//! nothing. It cannot be suppressed: the config is what is being audited, so an
//! `allow(FR015)` comment in it silences nothing (and is itself reported as `FR901`).
//!
//! ## Why is this bad?
//! It is not bad in itself, but it is the one thing a config runs before any agent does:
//! an MCP server is a program started with your rights when `exec` begins, outside the
//! command sandbox (`docs/mcp.md`). Before running a config someone else wrote, read
//! what it would start.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   McpServers:
//!     - Name: fs
//!       Command: npx
//!       Args: [-y, "@modelcontextprotocol/server-filesystem", .]
//!   Agents:
//!     - Name: Reader
//!       Instructions: Summarize the repository.
//!       Plugins: [fs]
//! ```
//! Use instead, when nothing should start here, a server reached over HTTP:
//! ```yaml
//! Orchestration:
//!   McpServers:
//!     - Name: fs
//!       Transport: http
//!       Url: http://127.0.0.1:8931/mcp
//!   Agents:
//!     - Name: Reader
//!       Instructions: Summarize the repository.
//!       Plugins: [fs]
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::syntax::mcp::McpServerDecl;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    for server in &config.mcp_servers {
        if let Some(diag) = would_start(server) {
            ctx.push(diag);
        }
    }
}

/// `FR015` for a `stdio` server with a command, at its `Name` (else its entry).
fn would_start(server: &McpServerDecl) -> Option<Diagnostic> {
    let stdio = server
        .transport
        .as_ref()
        .is_none_or(|kind| kind.value.trim().eq_ignore_ascii_case("stdio"));
    let command = server.command.as_ref().filter(|_| stdio)?;
    let line: Vec<String> = std::iter::once(&command.value)
        .chain(server.args.iter().map(|arg| &arg.value))
        .map(|word| quoted(word))
        .collect();
    let name = server.name.as_ref();
    let shown = name.map_or_else(
        || "an unnamed server".to_string(),
        |n| format!("`{}`", n.value),
    );
    let mut diag = Diagnostic::advice(
        Code::McpServerStarts,
        format!("mcp server {shown} would start `{}`", line.join(" ")),
    )
    .with_label(
        name.map_or(server.span, |n| n.span),
        "started when `exec` begins",
    );
    if let Some(dir) = &server.working_directory {
        diag = diag.with_label(dir.span, "in this directory");
    }
    Some(diag)
}

/// A word as a shell would need it: single-quoted when it holds anything but plain
/// characters.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn words_are_shown_as_a_shell_reads_them() {
        assert_eq!(
            quoted("@modelcontextprotocol/server-filesystem"),
            "@modelcontextprotocol/server-filesystem"
        );
        assert_eq!(quoted("a b"), "'a b'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
        assert_eq!(quoted(""), "''");
        assert_eq!(quoted("$(rm -rf ~)"), "'$(rm -rf ~)'");
    }
}
