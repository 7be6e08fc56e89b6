//! An agent's `ContextWindow` limits on what its requests replay of the shared history:
//! `MaxTurnAge`, `MaxReplayChars` and `MaxToolResultChars`. Only requests are shaped; the
//! session and routing keep every message.

use crate::effect::ChatMessage;

/// Whether a message of turn `message_turn` is young enough for a request made in
/// `current_turn` under `MaxTurnAge` `max_age` (0 = every message is).
pub(super) fn within_turn_age(message_turn: u32, current_turn: u32, max_age: u32) -> bool {
    max_age == 0 || current_turn.saturating_sub(message_turn) <= max_age
}

/// Drops the oldest messages after the first (the task, always kept) until the replayed
/// history holds at most `max_chars` characters (0 = no cap). The newest message is kept
/// even when it alone is longer, so a request never loses the turn it answers.
pub(super) fn cap_replay_chars(shown: &mut Vec<ChatMessage>, max_chars: usize) {
    if max_chars == 0 || shown.len() < 2 {
        return;
    }
    let mut total: usize = shown
        .iter()
        .map(|message| message.content.chars().count())
        .sum();
    let mut drop = 0;
    while total > max_chars && 1 + drop < shown.len() - 1 {
        total -= shown[1 + drop].content.chars().count();
        drop += 1;
    }
    shown.drain(1..1 + drop);
}

/// A tool result as a request carries it under `MaxToolResultChars` `max_chars` (0 =
/// whole): its first `max_chars` characters and a marker saying how many were cut.
pub(super) fn cut_tool_result(result: String, max_chars: usize) -> String {
    if max_chars == 0 || result.len() <= max_chars {
        return result;
    }
    let count = result.chars().count();
    if count <= max_chars {
        return result;
    }
    let end = result
        .char_indices()
        .nth(max_chars)
        .map_or(result.len(), |(offset, _)| offset);
    format!(
        "{}\n[... {} characters of this tool result cut (`MaxToolResultChars` {max_chars})]",
        &result[..end],
        count - max_chars
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::ChatRole;

    fn user(text: &str) -> ChatMessage {
        ChatMessage {
            role: ChatRole::User,
            content: text.to_string(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    fn contents(shown: &[ChatMessage]) -> Vec<&str> {
        shown
            .iter()
            .map(|message| message.content.as_str())
            .collect()
    }

    #[test]
    fn turn_age_keeps_the_last_n_turns_and_zero_keeps_all() {
        assert!(within_turn_age(5, 7, 2));
        assert!(!within_turn_age(4, 7, 2));
        assert!(within_turn_age(0, 700, 0));
        // A message from a later turn (a resumed run's marker) is never too old.
        assert!(within_turn_age(9, 7, 1));
    }

    #[test]
    fn replay_cap_drops_the_oldest_but_never_the_task_or_the_newest() {
        let mut shown = vec![user("task"), user("aaaa"), user("bbbb"), user("cccc")];
        cap_replay_chars(&mut shown, 12);
        assert_eq!(contents(&shown), ["task", "bbbb", "cccc"]);
        let mut shown = vec![user("task"), user("aaaa"), user("a much longer message")];
        cap_replay_chars(&mut shown, 5);
        assert_eq!(contents(&shown), ["task", "a much longer message"]);
        let mut shown = vec![user("task"), user("aaaa")];
        cap_replay_chars(&mut shown, 0);
        assert_eq!(contents(&shown), ["task", "aaaa"]);
    }

    #[test]
    fn tool_results_are_cut_by_characters_with_a_marker() {
        assert_eq!(cut_tool_result("short".into(), 10), "short");
        assert_eq!(cut_tool_result("x".repeat(50), 0), "x".repeat(50));
        let cut = cut_tool_result("é".repeat(30), 10);
        assert!(cut.starts_with(&"é".repeat(10)));
        assert!(!cut.starts_with(&"é".repeat(11)));
        assert!(
            cut.ends_with("[... 20 characters of this tool result cut (`MaxToolResultChars` 10)]")
        );
    }
}
