//! Fitting a request to its model's context window before it is sent (issue 14).
//!
//! A request's size in tokens is estimated from its bytes: [`BYTES_PER_TOKEN`] bytes a
//! token, fewer than the 4 or so of English text, so the estimate errs high and a fitted
//! request errs small. Room is kept for the reply (the model's `MaxTokens`, else what the
//! provider is sent by default). When the estimate exceeds the window, the oldest messages
//! that may go are left out of this request, oldest first, and a notice takes their place
//! after the task. Never left out: the system prompt (instructions and routing block), the
//! task (the first message after it), and the request's tail: the turn's own tool calls and
//! results, and the two messages before them (the last reply and what followed it, the
//! handoff marker or a correction). When leaving out every older message is not enough,
//! the turn's own tool results are cut to a marker, oldest first, all but the newest (each
//! call keeps its result message, so the tool loop stays well formed). A request that does
//! not fit even then is an error, before anything is sent.
//!
//! The cut moves in steps of an eighth of the window: what is left out is the fewest oldest
//! messages whose bytes reach the excess rounded up to the next step. The messages' bytes do
//! not change as a run grows, so the cut stays put while the history grows by a step, and
//! the requests in between share their prefix (the provider's prompt cache keeps serving
//! it) at the price of at most a step of room unused.

use crate::effect::{ChatMessage, ChatRole, ModelCall, ToolSchema};
use crate::model_windows::BYTES_PER_TOKEN;

/// Bytes counted for each message's framing (role, keys, separators).
const MESSAGE_FRAME: u64 = 16;
/// The cut moves in steps of the window's bytes divided by this.
const CUT_STEPS: u64 = 8;

/// A request that was cut to fit.
#[derive(Debug)]
pub(crate) struct Fitted {
    pub call: ModelCall,
    /// Messages left out.
    pub dropped: usize,
    /// The estimate of the fitted request, in tokens.
    pub tokens: u64,
}

fn message_bytes(message: &ChatMessage) -> u64 {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|call| {
            call.id.len() + call.name.len() + call.args.to_string().len() + MESSAGE_FRAME as usize
        })
        .sum();
    let id = message.tool_call_id.as_ref().map_or(0, String::len);
    (message.content.len() + calls + id) as u64 + MESSAGE_FRAME
}

fn tools_bytes(tools: &[ToolSchema]) -> u64 {
    tools
        .iter()
        .map(|tool| {
            (tool.name.len() + tool.description.len() + tool.parameters.to_string().len()) as u64
                + MESSAGE_FRAME
        })
        .sum()
}

fn tokens(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The estimated size of `call` in tokens.
pub(crate) fn estimate(call: &ModelCall) -> u64 {
    let bytes: u64 =
        call.messages.iter().map(message_bytes).sum::<u64>() + tools_bytes(&call.tools);
    tokens(bytes)
}

/// The messages of `messages` that may be left out, oldest first: everything between the
/// task and the protected tail.
fn droppable(messages: &[ChatMessage]) -> std::ops::Range<usize> {
    let Some(task) = messages
        .iter()
        .position(|message| message.role != ChatRole::System)
    else {
        return 0..0;
    };
    // The turn's own tool loop: assistant messages with tool calls and tool results.
    let mut tail = messages.len();
    while tail > task + 1 {
        let message = &messages[tail - 1];
        let in_turn = message.role == ChatRole::Tool
            || (message.role == ChatRole::Assistant && !message.tool_calls.is_empty());
        if !in_turn {
            break;
        }
        tail -= 1;
    }
    let tail = tail.saturating_sub(2).max(task + 1);
    (task + 1)..tail
}

/// `call` cut to `window` tokens less `reserve` for the reply; `None` when it fits as it
/// is. `model` names the model in the error of a request that cannot fit.
pub(crate) fn fit(
    call: &ModelCall,
    window: u64,
    reserve: u64,
    model: &str,
) -> Result<Option<Fitted>, String> {
    let budget = window.saturating_sub(reserve);
    if estimate(call) <= budget {
        return Ok(None);
    }
    let range = droppable(&call.messages);
    let notice_bytes = message_bytes(&notice(range.len()));
    let mut bytes: u64 = call.messages.iter().map(message_bytes).sum::<u64>()
        + tools_bytes(&call.tools)
        + notice_bytes;
    // The excess, rounded up to the next step of the window.
    let step = (budget * BYTES_PER_TOKEN / CUT_STEPS).max(1);
    let excess = bytes.saturating_sub(budget * BYTES_PER_TOKEN);
    let target = excess.div_ceil(step).saturating_mul(step);
    let mut dropped = 0;
    let mut left_out = 0;
    for message in &call.messages[range.clone()] {
        if left_out >= target {
            break;
        }
        left_out += message_bytes(message);
        dropped += 1;
    }
    bytes -= left_out;
    if dropped == 0 {
        bytes -= notice_bytes;
    }
    // Still over: the turn's own tool results, oldest first, all but the newest.
    let mut elided = Vec::new();
    let results: Vec<usize> = (range.end..call.messages.len())
        .filter(|idx| call.messages[*idx].role == ChatRole::Tool)
        .collect();
    for &idx in results.iter().rev().skip(1).rev() {
        if tokens(bytes) <= budget {
            break;
        }
        let old = call.messages[idx].content.len() as u64;
        let new = elided_result(old).len() as u64;
        if new < old {
            bytes -= old - new;
            elided.push(idx);
        }
    }
    if tokens(bytes) > budget {
        return Err(format!(
            "agent `{}`: the request needs about {} tokens ({} bytes at {BYTES_PER_TOKEN} bytes a token) with all {} older messages{} left out, over the {window}-token context window of `{model}` less {reserve} kept for the reply; shorten the agent's instructions or the task, or set the model's `MaxContextTokens` if its window is larger",
            call.agent,
            tokens(bytes),
            bytes,
            range.len(),
            match elided.len() {
                0 => String::new(),
                count => format!(" and {count} of the turn's tool results"),
            },
        ));
    }
    let mut messages = Vec::with_capacity(call.messages.len() - dropped + 1);
    messages.extend_from_slice(&call.messages[..range.start]);
    if dropped > 0 {
        messages.push(notice(dropped));
    }
    for (idx, message) in call.messages.iter().enumerate().skip(range.start + dropped) {
        let mut message = message.clone();
        if elided.contains(&idx) {
            message.content = elided_result(message.content.len() as u64).into();
        }
        messages.push(message);
    }
    let fitted = ModelCall {
        messages,
        ..call.clone()
    };
    let tokens = estimate(&fitted);
    Ok(Some(Fitted {
        call: fitted,
        dropped,
        tokens,
    }))
}

/// What stands for a tool result of `bytes` left out of a request.
fn elided_result(bytes: u64) -> String {
    format!("[fuseraft: this tool result ({bytes} bytes) is left out here to fit the model's context window]")
}

/// The message that stands where `dropped` messages were left out.
fn notice(dropped: usize) -> ChatMessage {
    ChatMessage {
        role: ChatRole::User,
        content: format!(
            "[fuseraft: {dropped} older messages are left out here to fit the model's context window]"
        )
        .into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ToolCall;

    fn message(role: ChatRole, content: &str) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    fn call(messages: Vec<ChatMessage>) -> ModelCall {
        ModelCall {
            agent: crate::effect::Caller::from_queue("Developer"),
            model: None,
            messages,
            tools: Vec::new().into(),
            turn: 7,
            reply_fields: Default::default(),
        }
    }

    fn long_run() -> ModelCall {
        let mut messages = vec![
            message(
                ChatRole::System,
                "You write code. Routing: HANDOFF TO TESTER.",
            ),
            message(ChatRole::User, "The task."),
        ];
        for idx in 0..20 {
            messages.push(message(
                ChatRole::User,
                &format!("[Planner]: old reply {idx} {}", "x".repeat(300)),
            ));
        }
        messages.push(message(ChatRole::User, "[Tester]: the last reply"));
        messages.push(message(ChatRole::User, "[fuseraft: Tester → Developer]"));
        let mut asked = message(ChatRole::Assistant, "");
        asked.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            args: serde_json::json!({"path": "a.rs"}),
            result: None,
            ok: true,
            denied: None,
        });
        messages.push(asked);
        let mut result = message(ChatRole::Tool, "fn main() {}");
        result.tool_call_id = Some("c1".into());
        messages.push(result);
        call(messages)
    }

    #[test]
    fn a_request_that_fits_is_sent_as_it_is() {
        let call = long_run();
        assert!(fit(&call, estimate(&call), 0, "m").unwrap().is_none());
    }

    #[test]
    fn the_oldest_turns_go_first_and_the_protected_ones_stay() {
        let call = long_run();
        let window = estimate(&call) / 2;
        let fitted = fit(&call, window, 100, "m").unwrap().expect("cut");
        assert!(
            fitted.tokens <= window - 100,
            "{} > {}",
            fitted.tokens,
            window - 100
        );
        assert!(
            fitted.dropped > 5 && fitted.dropped < 20,
            "{}",
            fitted.dropped
        );
        let texts: Vec<&str> = fitted.call.messages.iter().map(|m| &*m.content).collect();
        assert_eq!(texts[0], "You write code. Routing: HANDOFF TO TESTER.");
        assert_eq!(texts[1], "The task.");
        assert!(texts[2].contains(&format!("{} older messages are left out", fitted.dropped)));
        assert!(texts[3].starts_with(&format!("[Planner]: old reply {} ", fitted.dropped)));
        let tail = &texts[texts.len() - 4..];
        assert_eq!(tail[0], "[Tester]: the last reply");
        assert_eq!(tail[1], "[fuseraft: Tester → Developer]");
        assert_eq!(
            fitted.call.messages.last().unwrap().tool_call_id.as_deref(),
            Some("c1")
        );
    }

    #[test]
    fn the_cut_moves_in_steps_as_the_history_grows() {
        let mut call = long_run();
        let window = estimate(&call) * 3 / 4;
        // Twenty later requests, each with one more short reply before the turn's tool loop:
        // about 2 KB of growth, three steps of the window, six old messages.
        let mut cuts = Vec::new();
        for idx in 0..20 {
            let at = call.messages.len() - 4;
            let reply = format!("[Planner]: a new reply {idx} {}", "y".repeat(50));
            call.messages.insert(at, message(ChatRole::User, &reply));
            let fitted = fit(&call, window, 0, "m").unwrap().expect("cut");
            assert!(fitted.tokens <= window, "{} > {window}", fitted.tokens);
            cuts.push(fitted.dropped);
        }
        let mut moves = cuts.clone();
        moves.dedup();
        assert!(moves.len() >= 2, "the cut moved: {cuts:?}");
        assert!(
            moves.len() <= 4,
            "the cut moves by steps, not by messages: {cuts:?}"
        );
    }

    #[test]
    fn the_turns_older_tool_results_go_when_dropping_turns_is_not_enough() {
        let mut call = long_run();
        // A long tool loop: three big results, then the newest small one.
        for idx in 2..5 {
            let mut asked = message(ChatRole::Assistant, "");
            asked.tool_calls.push(ToolCall {
                id: format!("c{idx}"),
                name: "read_file".into(),
                args: serde_json::json!({"path": "big.log"}),
                result: None,
                ok: true,
                denied: None,
            });
            call.messages.push(asked);
            let mut result = message(ChatRole::Tool, &"log line\n".repeat(400));
            result.tool_call_id = Some(format!("c{idx}"));
            call.messages.push(result);
        }
        let mut asked = message(ChatRole::Assistant, "");
        asked.tool_calls.push(ToolCall {
            id: "c9".into(),
            name: "read_file".into(),
            args: serde_json::json!({"path": "small"}),
            result: None,
            ok: true,
            denied: None,
        });
        call.messages.push(asked);
        let mut newest = message(ChatRole::Tool, "the newest result");
        newest.tool_call_id = Some("c9".into());
        call.messages.push(newest);
        let fitted = fit(&call, 2_000, 0, "m").unwrap().expect("cut");
        assert!(fitted.tokens <= 2_000, "{}", fitted.tokens);
        assert_eq!(fitted.dropped, 20, "every older turn went first");
        let results: Vec<&str> = fitted
            .call
            .messages
            .iter()
            .filter(|message| message.role == ChatRole::Tool)
            .map(|message| &*message.content)
            .collect();
        assert_eq!(results.last(), Some(&"the newest result"));
        assert!(
            results
                .iter()
                .any(|text| text.contains("(3600 bytes) is left out")),
            "{results:?}"
        );
        // Every call keeps its result message, so the tool loop stays well formed.
        assert_eq!(results.len(), 5);
    }

    #[test]
    fn a_request_that_cannot_fit_is_a_clear_error() {
        let call = long_run();
        let error = fit(&call, 150, 100, "gpt-4o").unwrap_err();
        assert!(
            error.starts_with("agent `Developer`: the request needs about"),
            "{error}"
        );
        assert!(error.contains("context window of `gpt-4o`"), "{error}");
        assert!(
            error.contains("with all 20 older messages left out"),
            "{error}"
        );
    }
}
