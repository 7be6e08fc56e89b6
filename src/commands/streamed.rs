//! What `exec --on` shows of a served turn's model text as it streams (the session's `text`
//! side channel, `serve::stream`): each delta once, under a line naming the turn and the
//! agent; when the server runs a turn again after a kill (another attempt of the same
//! turn), the text shown of the abandoned attempt is said to be discarded before the new
//! attempt's text follows.

use crate::serve::stream::{Cursor, Streamed};
use crate::terminal::neutralise;

#[derive(Default)]
pub(super) struct StreamView {
    cursor: Cursor,
    /// Whether any text was shown, and whether the last ended a line.
    shown: bool,
    mid_line: bool,
}

impl StreamView {
    /// What to print for `streamed`, the newest read; its position is remembered.
    pub(super) fn render(&mut self, streamed: Streamed) -> String {
        let mut out = String::new();
        if !self.continues(&streamed) {
            if streamed.text.is_empty() {
                return out;
            }
            out.push_str(&self.end_line());
            if self.shown && streamed.turn == self.cursor.turn {
                out.push_str("[the server runs this turn again: the text above is discarded]\n");
            }
            out.push_str(&format!(
                "turn {}  {} writes:\n",
                streamed.turn,
                neutralise(&streamed.agent)
            ));
            self.shown = true;
        }
        let text = neutralise(&streamed.text);
        if !text.is_empty() {
            self.mid_line = !text.ends_with('\n');
        }
        out.push_str(&text);
        self.cursor = Cursor {
            turn: streamed.turn,
            attempt: streamed.attempt,
            offset: streamed.offset,
        };
        out
    }

    /// Whether `streamed` goes on with the text shown last (the same turn and attempt).
    pub(super) fn continues(&self, streamed: &Streamed) -> bool {
        self.shown && streamed.turn == self.cursor.turn && streamed.attempt == self.cursor.attempt
    }

    /// A newline when the text shown stopped mid-line (before the next event's line).
    pub(super) fn end_line(&mut self) -> String {
        match std::mem::take(&mut self.mid_line) {
            true => "\n".to_string(),
            false => String::new(),
        }
    }

    pub(super) fn cursor(&self) -> &Cursor {
        &self.cursor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(turn: u32, attempt: &str, text: &str, offset: u64) -> Streamed {
        Streamed {
            turn,
            attempt: attempt.into(),
            agent: "Dev".into(),
            text: text.into(),
            offset,
        }
    }

    #[test]
    fn each_delta_shows_once_and_a_rerun_turn_says_so() {
        let mut view = StreamView::default();
        assert_eq!(view.render(streamed(0, "a1", "", 0)), "");
        assert_eq!(
            view.render(streamed(0, "a1", "Hel", 3)),
            "turn 0  Dev writes:\nHel"
        );
        assert_eq!(view.cursor().offset, 3);
        assert_eq!(view.render(streamed(0, "a1", "lo", 5)), "lo");
        assert_eq!(view.render(streamed(0, "a1", "", 5)), "");
        assert_eq!(
            view.render(streamed(0, "b2", "Hello\n", 6)),
            "\n[the server runs this turn again: the text above is discarded]\nturn 0  Dev writes:\nHello\n"
        );
        assert_eq!(
            view.render(streamed(1, "b2", "\u{1b}]0;x", 4)),
            "turn 1  Dev writes:\n\\x1b]0;x"
        );
        assert_eq!(view.end_line(), "\n");
        assert_eq!(view.end_line(), "");
    }
}
