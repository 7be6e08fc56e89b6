//! A context source's block as a prompt carries it: `[Context: label]` and the source's text,
//! capped at its `MaxChars` (0: 4000, or 8000 for `own_history`, as upstream). Shared by the driver, which reads the sources on disk,
//! and the machine, which answers `session_context` and `own_history` from the run.

use fuseraft_compiler::ir::{ContextSource, SourceKind};

/// The cap of a source that sets no `MaxChars`.
pub const DEFAULT_MAX_CHARS: usize = 4000;
/// The cap of an `own_history` source that sets no `MaxChars` (replies run longer).
pub const OWN_HISTORY_MAX_CHARS: usize = 8000;

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
    let max = match (source.max_chars, source.kind()) {
        (0, SourceKind::OwnHistory(_)) => OWN_HISTORY_MAX_CHARS,
        (0, _) => DEFAULT_MAX_CHARS,
        (max, _) => max as usize,
    };
    format!("[Context: {label}]\n{}", capped(body, max))
}

/// `text`, cut after `max` characters with a `[truncated]` line.
pub fn capped(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push_str("\n[truncated]");
    cut
}
