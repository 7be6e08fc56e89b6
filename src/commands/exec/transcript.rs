//! A run's readable transcript: the task, every message in order (tool calls summarised),
//! how the run ended and its output, as Markdown next to the session files (0600).

use std::io::Write;
use std::path::{Path, PathBuf};

use fuseraft_vm::driver::Summary;
use fuseraft_vm::history::Role;
use fuseraft_vm::state_dir::Access;

/// The most characters of one tool result the transcript shows.
const RESULT_CHARS: usize = 400;

/// Where a session's transcript lives.
pub fn path(work_dir: &Path, session: &str) -> PathBuf {
    work_dir
        .join(crate::session::DIR)
        .join(format!("{session}.transcript.md"))
}

/// The transcript of a finished run as Markdown, written to `out` piece by piece (a long
/// run's transcript is never held in memory whole).
pub fn render_to(
    raw: &mut impl Write,
    session: &str,
    task: &str,
    summary: &Summary,
) -> std::io::Result<()> {
    // Terminal escapes in a reply, a file name or a tool's output are shown, never sent to
    // whoever `cat`s the file.
    let out = &mut crate::terminal::Neutral::new(raw);
    write!(out, "# fuseraft session {session}\n\n**Task:** {task}\n")?;
    // A magentic manager's facts and plan (the newest, after any replans) guide the turns.
    if let Some(ledger) = &summary.magentic {
        let replans = match ledger.resets {
            0 => String::new(),
            1 => " (after 1 replan)".to_string(),
            n => format!(" (after {n} replans)"),
        };
        for (heading, text) in [("facts", &ledger.facts), ("plan", &ledger.plan)] {
            if let Some(text) = text {
                write!(
                    out,
                    "\n## The manager's {heading}{replans}\n\n{}\n",
                    text.trim_end()
                )?;
            }
        }
    }
    for message in &summary.history {
        match message.role {
            Role::User if message.agent == "user" => continue,
            Role::User => {
                write!(out, "\n> _{}:_ ", message.agent)?;
                quote(out, &message.content)?;
                out.write_all(b"\n")?;
            }
            Role::Assistant => {
                write!(
                    out,
                    "\n## Turn {} · {}\n\n",
                    message.turn + 1,
                    message.agent
                )?;
                if !message.content.is_empty() {
                    out.write_all(message.content.as_bytes())?;
                    out.write_all(b"\n")?;
                }
                for call in &message.tool_calls {
                    let result = call.result.as_deref().unwrap_or("");
                    let mut shown: String = result.chars().take(RESULT_CHARS).collect();
                    if shown.len() < result.len() {
                        shown.push('…');
                    }
                    write!(out, "\n- `{}({})` → ", call.name, call.args)?;
                    quote(out, &shown)?;
                    out.write_all(b"\n")?;
                }
            }
        }
    }
    // The terminal's and `--json`'s words: unknown usage is not zero.
    write!(
        out,
        "\n---\n\n**Outcome:** {} after {} turn(s) · {}\n",
        summary.outcome.as_str(),
        summary.turns,
        super::provider::tokens_text(summary.usage, summary.usage_unreported)
    )?;
    if let Some(reason) = &summary.reason {
        write!(out, "\n**Why:** {reason}\n")?;
    }
    if let Some(shortfall) = &summary.shortfall {
        write!(out, "\n**Not done:** {shortfall}\n")?;
    }
    if let Some(output) = &summary.output {
        write!(out, "\n## Output\n\n{output}\n")?;
    }
    out.flush()
}

/// The transcript as one string (for tests).
#[cfg(test)]
fn render(session: &str, task: &str, summary: &Summary) -> String {
    let mut out = Vec::new();
    let written = render_to(&mut out, session, task, summary);
    assert!(written.is_ok());
    String::from_utf8(out).unwrap_or_default()
}

/// Text on one Markdown line: newlines kept inside the quote.
fn quote(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    let mut lines = text.trim_end().split('\n');
    if let Some(first) = lines.next() {
        out.write_all(first.as_bytes())?;
    }
    for line in lines {
        out.write_all(b"\n> ")?;
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Writes the transcript (owner-only) and returns its path.
pub fn write(
    work_dir: &Path,
    session: &str,
    task: &str,
    summary: &Summary,
) -> std::io::Result<PathBuf> {
    let path = path(work_dir, session);
    let dir = crate::session::dir(work_dir).map_err(crate::session::dir_error)?;
    let name = format!("{session}.transcript.md");
    let file = dir.open_file(&name, Access::Truncate)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
    let written = render_to(&mut out, session, task, summary).and_then(|()| {
        out.into_inner()
            .map(drop)
            .map_err(|error| error.into_error())
    });
    if let Err(error) = written {
        // A full disk leaves no partial transcript behind.
        let _ = dir.remove(&name);
        return Err(error);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fuseraft_vm::event::Outcome;
    use fuseraft_vm::history::{Message, ToolCall, Usage};

    fn summary() -> Summary {
        let mut reply = Message::user("Developer", "Added the flag.\nHANDOFF TO REVIEWER", 0);
        reply.role = Role::Assistant;
        reply.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: "shell_run".into(),
            args: serde_json::json!({"command": "cargo test"}),
            result: Some(format!("[EXIT 0]\n{}", "x".repeat(1000))),
            ok: true,
            denied: None,
        }];
        Summary {
            outcome: Outcome::MaxTurns,
            reason: None,
            turns: 1,
            usage: Usage::default(),
            history: vec![
                Message::user("user", "Add a flag", 0),
                reply,
                Message::user("orchestrator", "[fuseraft: Developer → Reviewer]", 1),
            ],
            output: Some("Added the flag.".into()),
            shortfall: Some(
                "the turn cap was reached without ever leaving the first state `Developer`".into(),
            ),
            usage_unreported: 0,
            cost: Default::default(),
            magentic: None,
        }
    }

    #[test]
    fn terminal_escapes_in_the_run_are_shown_not_sent() {
        let mut hostile = summary();
        hostile.output = Some("done \x1b]0;owned\x07\x1b[2J\r\u{9b}".into());
        hostile.history[1].tool_calls[0].result = Some("[EXIT 0]\n\x1b]52;c;cm0gLXJm\x07".into());
        let text = render("0000abcd", "Add a flag\x1b[2J", &hostile);
        assert!(!text.contains(['\x1b', '\x07', '\r', '\u{9b}']), "{text:?}");
        assert!(text.contains("done \\x1b]0;owned\\x07"), "{text}");
        assert!(text.contains("**Task:** Add a flag\\x1b[2J"), "{text}");
    }

    #[test]
    fn the_transcript_shows_turns_tools_outcome_and_output() {
        let text = render("0000abcd", "Add a flag", &summary());
        assert!(
            text.starts_with("# fuseraft session 0000abcd\n\n**Task:** Add a flag\n"),
            "{text}"
        );
        assert!(
            text.contains("## Turn 1 · Developer\n\nAdded the flag.\nHANDOFF TO REVIEWER\n"),
            "{text}"
        );
        assert!(
            text.contains("- `shell_run({\"command\":\"cargo test\"})` → [EXIT 0]\n> xxx"),
            "{text}"
        );
        // Long tool results are cut.
        assert!(
            text.contains("x…") && !text.contains(&"x".repeat(500)),
            "{text}"
        );
        assert!(
            text.contains("> _orchestrator:_ [fuseraft: Developer → Reviewer]"),
            "{text}"
        );
        assert!(
            text.contains("**Outcome:** max_turns after 1 turn(s)"),
            "{text}"
        );
        assert!(
            text.contains("**Not done:** the turn cap was reached"),
            "{text}"
        );
        assert!(text.ends_with("## Output\n\nAdded the flag.\n"), "{text}");
        // The task is shown once, not as a message.
        assert_eq!(text.matches("Add a flag").count(), 1, "{text}");
    }

    #[test]
    fn a_magentic_transcript_opens_with_the_managers_newest_facts_and_plan() {
        assert!(!render("0000abcd", "Add a flag", &summary()).contains("manager's"));
        let mut magentic = summary();
        magentic.magentic = Some(fuseraft_vm::machine::Magentic {
            facts: Some("Given: a CLI.".into()),
            plan: Some("1. Developer adds the flag.\n".into()),
            resets: 1,
            ..Default::default()
        });
        let text = render("0000abcd", "Add a flag", &magentic);
        assert!(
            text.starts_with(
                "# fuseraft session 0000abcd\n\n**Task:** Add a flag\n\n\
                 ## The manager's facts (after 1 replan)\n\nGiven: a CLI.\n\n\
                 ## The manager's plan (after 1 replan)\n\n1. Developer adds the flag.\n\n## Turn 1"
            ),
            "{text}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_transcript_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("fuseraft-transcript-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = write(&dir, "0000abcd", "Add a flag", &summary()).unwrap();
        assert_eq!(path, dir.join(".fuseraft/sessions/0000abcd.transcript.md"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("## Output"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
