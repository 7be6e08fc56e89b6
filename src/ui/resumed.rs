//! What a resumed run's page is shown before its new turns: the `session_resumed` event
//! carries the program, the task and the conversation so far, so the page draws the header,
//! the earlier turns and the states they visited as a fresh run's page would have.

use fuseraft_vm::history::Role;
use fuseraft_vm::machine::Run;
use serde_json::{json, Value as Json};

/// What a resumed run's page is shown before its new turns: the program, the task and the
/// conversation so far (`{role, agent, turn, content, tool_calls, usage}` per message).
pub fn earlier(program: &str, run: &Run) -> Json {
    let messages: Vec<Json> = run
        .history
        .iter()
        .map(|message| {
            let mut shown = super::fork::reply(&message.content, &message.tool_calls);
            shown["role"] = json!(match message.role {
                Role::Assistant => "assistant",
                _ => "user",
            });
            shown["agent"] = json!(message.agent);
            shown["turn"] = json!(message.turn);
            shown["usage"] = json!({
                "input": message.usage.input_tokens, "output": message.usage.output_tokens,
            });
            shown
        })
        .collect();
    json!({ "program": program, "task": run.task, "messages": messages })
}
