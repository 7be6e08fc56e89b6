//! The caps on one model response: the reply (text, tool names and arguments), the body
//! as received, one line of a stream, and the number of tool calls. Each is checked as the
//! bytes arrive, in time linear in them, so an endless or oversized response ends in a
//! clear error instead of filling memory.

use super::http::Failure;
use super::Settings;
use crate::effect::ModelReply;

/// The most tool calls (content blocks, for Anthropic) one reply may begin.
const MAX_TOOL_CALLS: usize = 1024;

/// The bytes of a whole reply: text, tool names and arguments.
pub(crate) fn reply_size(reply: &ModelReply) -> usize {
    let calls: usize = reply
        .tool_calls
        .iter()
        .map(|call| call.name.len() + call.args.to_string().len())
        .sum();
    reply.text.len() + calls
}

/// The caps of one attempt: the reply, the body as received, one line of a stream.
pub(crate) struct Budget {
    max_reply: usize,
    max_body: usize,
    max_line: usize,
    body: usize,
    /// Bytes since the last line break.
    line: usize,
}

impl Budget {
    pub(crate) fn new(settings: &Settings) -> Budget {
        let max_reply = settings.max_response_bytes;
        Budget {
            max_reply,
            max_body: max_reply.saturating_mul(16),
            max_line: max_reply.saturating_mul(2).saturating_add(64 * 1024),
            body: 0,
            line: 0,
        }
    }

    pub(crate) fn body(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        self.body = self.body.saturating_add(chunk.len());
        if self.body > self.max_body {
            return Err(Failure::fatal(format!(
                "the response body passed {} without completing the reply; stopped reading \
                 (the cap is 16 times the reply limit)",
                bytes(self.max_body)
            )));
        }
        Ok(())
    }

    /// Linear: one backwards scan of each chunk, nothing buffered.
    pub(crate) fn lines(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        self.line = match chunk.iter().rposition(|&byte| byte == b'\n') {
            Some(at) => chunk.len() - at - 1,
            None => self.line.saturating_add(chunk.len()),
        };
        if self.line > self.max_line {
            return Err(Failure::fatal(format!(
                "a line of the response stream passed {} without ending; stopped reading",
                bytes(self.max_line)
            )));
        }
        Ok(())
    }

    pub(crate) fn reply(&self, size: usize) -> Result<(), Failure> {
        if size > self.max_reply {
            return Err(Failure::fatal(format!(
                "the reply passed the limit of {} (text and tool-call arguments); stopped reading",
                bytes(self.max_reply)
            )));
        }
        Ok(())
    }
}

impl Budget {
    pub(crate) fn calls(&self, count: usize) -> Result<(), Failure> {
        if count > MAX_TOOL_CALLS {
            return Err(Failure::fatal(format!(
                "the reply began more than {MAX_TOOL_CALLS} tool calls; stopped reading"
            )));
        }
        Ok(())
    }
}

/// `4 MiB`, `64 KiB`, `100 bytes`.
fn bytes(count: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if count >= MIB && count.is_multiple_of(MIB) {
        format!("{} MiB", count / MIB)
    } else if count >= KIB && count.is_multiple_of(KIB) {
        format!("{} KiB", count / KIB)
    } else {
        format!("{count} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_max(max: usize) -> Budget {
        Budget::new(&Settings {
            max_response_bytes: max,
            ..Settings::default()
        })
    }

    #[test]
    fn lines_are_measured_across_chunks_without_buffering() {
        let mut budget = with_max(8);
        // The line cap is 2 × 8 + 64 KiB.
        let cap = 16 + 64 * 1024;
        let piece = vec![b'x'; 1000];
        let mut sent = 0;
        let error = loop {
            match budget.lines(&piece) {
                Ok(()) => sent += piece.len(),
                Err(error) => break error,
            }
        };
        assert!(sent <= cap && sent + piece.len() > cap, "{sent}");
        assert!(!error.retry);
        assert!(
            error.message.contains("passed 65552 bytes without ending"),
            "{}",
            error.message
        );
        let mut fresh = with_max(8);
        for _ in 0..1000 {
            fresh.lines(b"data: {}\n\n").unwrap();
        }
        fresh.lines(&piece).unwrap();
        fresh.lines(b"\n").unwrap();
    }

    #[test]
    fn reply_body_and_calls_are_capped() {
        let mut budget = with_max(1024);
        assert!(budget.reply(1024).is_ok());
        let error = budget.reply(1025).unwrap_err();
        assert!(
            error.message.contains("limit of 1 KiB"),
            "{}",
            error.message
        );
        assert!(budget.body(&[0; 16 * 1024]).is_ok());
        assert!(budget.body(&[0]).unwrap_err().message.contains("16 KiB"));
        assert!(budget.calls(MAX_TOOL_CALLS).is_ok());
        assert!(budget.calls(MAX_TOOL_CALLS + 1).is_err());
        assert_eq!(bytes(4 * 1024 * 1024), "4 MiB");
        assert_eq!(bytes(100), "100 bytes");
    }
}
