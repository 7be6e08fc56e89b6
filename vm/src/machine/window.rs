//! An agent's `ContextWindow` limits on what its requests replay of the shared history:
//! `MaxTurnAge`, `MaxReplayChars`, `MaxToolResultChars` (per tool
//! `ToolResultCharOverrides`) and `ContextCapFraction`. Only requests are shaped; the
//! session and routing keep every message.

use fuseraft_compiler::ir::{Context, Tool};

use crate::effect::{ChatMessage, ChatRole};

/// How tool results are cut before they are fed back: `MaxToolResultChars`, unless
/// `ToolResultCharOverrides` names the tool (0 = whole).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct ResultCaps {
    default: usize,
    overrides: Vec<(Tool, usize)>,
}

impl ResultCaps {
    pub(super) fn of(context: &Context) -> ResultCaps {
        ResultCaps {
            default: context.max_tool_result_chars as usize,
            overrides: context
                .tool_result_overrides
                .iter()
                .map(|(tool, chars)| (*tool, *chars as usize))
                .collect(),
        }
    }

    /// The result of a call of `tool_name`, cut to its cap with a marker.
    pub(super) fn cut(&self, tool_name: &str, result: String) -> String {
        let tool = Tool::resolve(tool_name);
        match self
            .overrides
            .iter()
            .find(|(known, _)| Some(*known) == tool)
        {
            Some((_, chars)) => cut_to(result, *chars, "ToolResultCharOverrides"),
            None => cut_to(result, self.default, "MaxToolResultChars"),
        }
    }
}

/// `ContextCapFraction`: leaves the oldest messages after the task out of `messages` until
/// at least `excess` bytes (as `bytes` counts them) are gone; the last two messages (the
/// newest reply and what followed it, or the turn's tool loop) are never left out. Returns
/// how many were left out.
pub(super) fn cap_request(
    messages: &mut Vec<ChatMessage>,
    excess: u64,
    bytes: impl Fn(&ChatMessage) -> u64,
) -> usize {
    let Some(task) = messages
        .iter()
        .position(|message| message.role != ChatRole::System)
    else {
        return 0;
    };
    let first = task + 1;
    let last = messages.len().saturating_sub(2).max(first);
    let mut removed = 0;
    let mut end = first;
    while removed < excess && end < last {
        removed += bytes(&messages[end]);
        end += 1;
    }
    messages.drain(first..end);
    end - first
}

/// Whether a message of turn `message_turn` is young enough for a request made in
/// `current_turn` under `MaxTurnAge` `max_age` (0 = every message is).
pub(super) fn within_turn_age(message_turn: u32, current_turn: u32, max_age: u32) -> bool {
    max_age == 0 || current_turn.saturating_sub(message_turn) <= max_age
}

/// Drops the oldest messages of the replayed history (`messages[base..]`) after its first
/// (the task, always kept) until it holds at most `max_chars` characters (0 = no cap). The
/// newest message is kept even when it alone is longer, so a request never loses the turn
/// it answers.
pub(super) fn cap_replay_chars(messages: &mut Vec<ChatMessage>, base: usize, max_chars: usize) {
    let shown = messages.get(base..).unwrap_or_default();
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
    messages.drain(base + 1..base + 1 + drop);
}

/// A tool result as a request carries it under `MaxToolResultChars` `max_chars` (0 =
/// whole): its first `max_chars` characters and a marker saying how many were cut.
#[cfg(test)]
fn cut_tool_result(result: String, max_chars: usize) -> String {
    cut_to(result, max_chars, "MaxToolResultChars")
}

/// `result`'s first `max_chars` characters and a marker naming `key` (0 = whole).
fn cut_to(result: String, max_chars: usize, key: &str) -> String {
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
        "{}\n[... {} characters of this tool result cut (`{key}` {max_chars})]",
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
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    fn contents(shown: &[ChatMessage]) -> Vec<&str> {
        shown.iter().map(|message| &*message.content).collect()
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
        cap_replay_chars(&mut shown, 0, 12);
        assert_eq!(contents(&shown), ["task", "bbbb", "cccc"]);
        let mut shown = vec![user("task"), user("aaaa"), user("a much longer message")];
        cap_replay_chars(&mut shown, 0, 5);
        assert_eq!(contents(&shown), ["task", "a much longer message"]);
        let mut shown = vec![user("task"), user("aaaa")];
        cap_replay_chars(&mut shown, 0, 0);
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

    #[test]
    fn an_override_cuts_its_tool_and_the_default_the_others() {
        let context = Context {
            max_tool_result_chars: 10,
            tool_result_overrides: vec![(Tool::ReadFile, 4), (Tool::ShellRun, 0)],
            ..Context::default()
        };
        let caps = ResultCaps::of(&context);
        let read = caps.cut("FileSystem-read_file", "abcdefgh".into());
        assert!(read.starts_with("abcd\n"), "{read}");
        assert!(read.ends_with("(`ToolResultCharOverrides` 4)]"), "{read}");
        assert_eq!(caps.cut("shell_run", "x".repeat(50)), "x".repeat(50));
        let other = caps.cut("grep_file", "y".repeat(50));
        assert!(other.ends_with("(`MaxToolResultChars` 10)]"), "{other}");
    }

    #[test]
    fn the_context_cap_leaves_out_the_oldest_but_never_the_task_or_the_last_two() {
        let system = ChatMessage {
            role: ChatRole::System,
            ..user("instructions")
        };
        let mut shown = vec![
            system.clone(),
            user("task"),
            user("aaaa"),
            user("bbbb"),
            user("cccc"),
            user("dddd"),
        ];
        let bytes = |message: &ChatMessage| message.content.len() as u64;
        assert_eq!(cap_request(&mut shown, 5, bytes), 2);
        assert_eq!(contents(&shown), ["instructions", "task", "cccc", "dddd"]);
        assert_eq!(cap_request(&mut shown, 1000, bytes), 0, "the last two stay");
        assert_eq!(contents(&shown), ["instructions", "task", "cccc", "dddd"]);
    }
}
