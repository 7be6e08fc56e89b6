//! A run's readable transcript: the task, every message in order (tool calls summarised),
//! how the run ended and its output, as Markdown next to the session files (0600).

use std::io::Write;
use std::path::{Path, PathBuf};

use fuseraft_vm::driver::Summary;
use fuseraft_vm::history::Role;

/// The most characters of one tool result the transcript shows.
const RESULT_CHARS: usize = 400;

/// Where a session's transcript lives.
pub fn path(work_dir: &Path, session: &str) -> PathBuf {
    work_dir
        .join(crate::session::DIR)
        .join(format!("{session}.transcript.md"))
}

/// The transcript of a finished run as Markdown.
pub fn render(session: &str, task: &str, summary: &Summary) -> String {
    let mut out = format!("# fuseraft session {session}\n\n**Task:** {task}\n");
    for message in &summary.history {
        match message.role {
            Role::User if message.agent == "user" => continue,
            Role::User => {
                out.push_str(&format!("\n> _{}:_ {}\n", message.agent, quote(&message.content)));
            }
            Role::Assistant => {
                out.push_str(&format!("\n## Turn {} · {}\n\n", message.turn + 1, message.agent));
                if !message.content.is_empty() {
                    out.push_str(&message.content);
                    out.push('\n');
                }
                for call in &message.tool_calls {
                    let result = call.result.as_deref().unwrap_or("");
                    let mut shown: String = result.chars().take(RESULT_CHARS).collect();
                    if shown.len() < result.len() {
                        shown.push('…');
                    }
                    out.push_str(&format!(
                        "\n- `{}({})` → {}\n",
                        call.name,
                        call.args,
                        quote(&shown)
                    ));
                }
            }
        }
    }
    out.push_str(&format!(
        "\n---\n\n**Outcome:** {} after {} turn(s) · tokens in {} / out {}\n",
        summary.outcome.as_str(),
        summary.turns,
        summary.usage.input_tokens,
        summary.usage.output_tokens
    ));
    if let Some(reason) = &summary.reason {
        out.push_str(&format!("\n**Why:** {reason}\n"));
    }
    if let Some(shortfall) = &summary.shortfall {
        out.push_str(&format!("\n**Not done:** {shortfall}\n"));
    }
    if let Some(output) = &summary.output {
        out.push_str(&format!("\n## Output\n\n{output}\n"));
    }
    out
}

/// Text on one Markdown line: newlines kept inside the quote.
fn quote(text: &str) -> String {
    text.trim_end().replace('\n', "\n> ")
}

/// Writes the transcript (owner-only) and returns its path.
pub fn write(
    work_dir: &Path,
    session: &str,
    task: &str,
    summary: &Summary,
) -> std::io::Result<PathBuf> {
    let path = path(work_dir, session);
    if let Some(dir) = path.parent() {
        crate::session::private_dir(dir)?;
    }
    let mut file = crate::session::private_file(&path, false)?;
    file.write_all(render(session, task, summary).as_bytes())?;
    Ok(path)
}
