//! Models' context windows: the model's `MaxContextTokens` when the config sets it, else a
//! bundled table of the published windows of well-known models (dated), else unknown (and
//! requests are sent unfitted).
//!
//! A model id is matched by the longest entry it starts with at a `-` boundary
//! (`claude-sonnet-4-5-20250929` by `claude-sonnet-4`), on any server: the ids are the
//! providers' own, so a server that serves `gpt-4o` serves its window.

/// How many bytes of a request stand for one token in estimates (a request's size, the
/// room a window leaves): a conservative figure for English and code.
pub const BYTES_PER_TOKEN: u64 = 3;

/// When the windows below were read off the providers' model pages.
pub const TABLE_DATE: &str = "2025-10";

/// (model id prefix, context window in tokens).
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-haiku", 200_000),
];

/// The table: (model id prefix, context window in tokens), as `fuseraft models` lists it.
pub fn known_windows() -> &'static [(&'static str, u64)] {
    WINDOWS
}

/// The context window of `model`: `configured` (its `MaxContextTokens`), else the table's.
pub fn context_window(model: &str, configured: Option<u64>) -> Option<u64> {
    if let Some(window) = configured.filter(|window| *window > 0) {
        return Some(window);
    }
    let model = model.trim().to_ascii_lowercase();
    WINDOWS
        .iter()
        .filter(|(prefix, _)| {
            model == *prefix
                || model
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('-'))
        })
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, window)| window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_wins_then_the_longest_prefix() {
        assert_eq!(context_window("gpt-4o", Some(32_000)), Some(32_000));
        assert_eq!(
            context_window("gpt-4o-mini-2024-07-18", None),
            Some(128_000)
        );
        assert_eq!(context_window("gpt-4-0613", None), Some(8_192));
        assert_eq!(context_window("gpt-4-turbo-preview", None), Some(128_000));
        assert_eq!(
            context_window("claude-sonnet-4-5-20250929", None),
            Some(200_000)
        );
        // A prefix only counts at a `-` boundary; an unknown model has no window.
        assert_eq!(context_window("o3x", None), None);
        assert_eq!(context_window("qwen2.5-coder", None), None);
        assert_eq!(context_window("qwen2.5-coder", Some(0)), None);
    }
}
