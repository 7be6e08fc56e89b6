//! What the tool tests share: a call run in a tool context, and its result read as a
//! success or as a refusal that starts with an expected prefix.

use serde_json::Value as Json;

use super::{execute, ToolContext};
use crate::history::ToolCall;

/// `name` called with `args` in `ctx`, as the driver runs it.
pub(crate) async fn call(ctx: &ToolContext, name: &str, args: Json) -> ToolCall {
    let mut call = ToolCall {
        id: "call_1".to_string(),
        name: name.to_string(),
        args,
        result: None,
        ok: false,
        denied: None,
    };
    execute(&mut call, ctx).await;
    call
}

/// The result text and whether the call succeeded, of `name` called with `args`.
pub(crate) async fn answer(ctx: &ToolContext, name: &str, args: Json) -> (String, bool) {
    let done = call(ctx, name, args).await;
    (done.result.unwrap_or_default(), done.ok)
}

/// The result of a call that succeeded (the test fails, showing the call, otherwise).
pub(crate) fn ok(call: &ToolCall) -> &str {
    assert!(call.ok, "{call:?}");
    call.result.as_deref().unwrap_or("")
}

/// The result of a call that failed, which must start with `prefix`.
pub(crate) fn failed<'a>(call: &'a ToolCall, prefix: &str) -> &'a str {
    let text = call.result.as_deref().unwrap_or("");
    assert!(!call.ok, "{call:?}");
    assert!(text.starts_with(prefix), "`{prefix}` does not start {text}");
    text
}
