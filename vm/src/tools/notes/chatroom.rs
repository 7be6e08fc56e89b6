//! Chatroom (`chatroom_send`, `chatroom_read`): a coordination log of the session that every
//! agent offered the plugin posts to and reads, oldest first, bounded.

use serde::{Deserialize, Serialize};

use super::super::{Args, Outcome};
use super::{Caller, Notes};

/// The most messages the chatroom keeps (older ones are dropped, and counted).
pub const MAX_CHATROOM_MESSAGES: usize = 200;
/// The most characters of one message.
pub(super) const MAX_MESSAGE_CHARS: usize = 2_000;
/// How many messages `chatroom_read` returns by default, and the most it returns.
const DEFAULT_READ: usize = 20;
const MAX_READ: usize = 100;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ChatroomMessage {
    pub from: String,
    pub to: String,
    pub message: String,
    pub turn: u32,
}

pub(super) fn send(notes: &mut Notes, args: &Args, caller: Caller<'_>) -> Outcome {
    let (recipient, message) = match (args.string("recipient"), args.string("message")) {
        (Ok(recipient), Ok(message)) => (recipient.trim(), message.trim()),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    if recipient.is_empty() || message.is_empty() {
        return Outcome::error("tool `chatroom_send`: `recipient` and `message` must not be empty");
    }
    let chars = message.chars().count();
    if chars > MAX_MESSAGE_CHARS || recipient.chars().count() > 200 {
        return Outcome::error(format!(
            "tool `chatroom_send`: a message may have at most {MAX_MESSAGE_CHARS} characters \
             (this one has {chars}) and a recipient at most 200"
        ));
    }
    notes.chatroom.push(ChatroomMessage {
        from: caller.agent.to_string(),
        to: recipient.to_string(),
        message: message.to_string(),
        turn: caller.turn,
    });
    if notes.chatroom.len() > MAX_CHATROOM_MESSAGES {
        let excess = notes.chatroom.len() - MAX_CHATROOM_MESSAGES;
        notes.chatroom.drain(..excess);
        notes.chatroom_dropped = notes.chatroom_dropped.saturating_add(excess as u64);
    }
    Outcome::ok(format!("Message sent to {recipient}."))
}

pub(super) fn read(notes: &Notes, args: &Args) -> Outcome {
    let count = match args.value("count") {
        None => DEFAULT_READ,
        Some(value) => match value
            .as_u64()
            .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
        {
            Some(count) => (count as usize).clamp(1, MAX_READ),
            None => {
                return Outcome::error(
                    "tool `chatroom_read`: `count` must be a positive whole number",
                )
            }
        },
    };
    if notes.chatroom.is_empty() {
        return Outcome::ok("[EMPTY] no chatroom messages yet");
    }
    let recent = &notes.chatroom[notes.chatroom.len().saturating_sub(count)..];
    let body: Vec<String> = recent
        .iter()
        .map(|entry| {
            format!(
                "[turn {}] {} → {}\n{}",
                entry.turn, entry.from, entry.to, entry.message
            )
        })
        .collect();
    Outcome::ok(format!(
        "=== Chatroom (last {} message(s)) ===\n\n{}",
        body.len(),
        body.join("\n\n")
    ))
}
