//! A context source's block as a prompt carries it: `[Context: label]` and the source's text,
//! capped at its `MaxChars` (0: 4000). Shared by the driver, which reads the sources on disk,
//! and the machine, which answers `session_context` and `own_history` from the run.

use fuseraft_compiler::ir::{ContextSource, SourceKind};

/// The cap of a source that sets no `MaxChars`.
pub const DEFAULT_MAX_CHARS: usize = 4000;

/// Is `source` answered by the machine from the run (not read by the driver)?
pub fn from_run(source: &ContextSource) -> bool {
    matches!(
        source.kind(),
        SourceKind::SessionContext | SourceKind::OwnHistory(_)
    )
}

/// The block of `source` whose text is `body`.
pub fn render(source: &ContextSource, body: &str) -> String {
    let label = source.label.as_deref().unwrap_or(source.source.as_str());
    format!("[Context: {label}]\n{}", capped(body, source.max_chars))
}

fn capped(text: &str, max_chars: u32) -> String {
    let max = if max_chars == 0 {
        DEFAULT_MAX_CHARS
    } else {
        max_chars as usize
    };
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push_str("\n[truncated]");
    cut
}
