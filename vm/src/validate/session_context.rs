//! `RequireSessionContextWrite`: the turn being routed wrote the session context. Attached to
//! a route whose next agent starts from the summary (an agent with `Context` sources, a
//! `HandoffContext` listing `session_context`), it turns a forgotten summary into a visible
//! failure at handoff time. Upstream accepts any `session_context_write` result; fuseraft
//! wants one that succeeded, so an empty or refused summary does not pass.

use crate::effect::CheckResult;

use super::artifacts::Env;
use super::shell::{succeeded, turn_calls};

pub(super) fn require_session_context_write(env: &Env<'_>) -> CheckResult {
    if turn_calls(env).any(|call| call.is("session_context_write") && succeeded(call)) {
        return CheckResult::pass();
    }
    let refused = turn_calls(env)
        .find(|call| call.is("session_context_write"))
        .and_then(|call| call.result.as_deref());
    let why = match refused {
        Some(result) => format!("this turn's `session_context_write` failed ({result})"),
        None => "this turn did not call `session_context_write`".to_string(),
    };
    CheckResult::fail(format!(
        "handoff blocked: {why}; the next agent starts from the session context, not from this \
         conversation. Call `session_context_write` with what you did, the files you changed \
         and what the next agent must know, then hand off in the same reply."
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use serde_json::json;

    #[test]
    fn passes_only_on_a_successful_write_in_the_turn() {
        let fx = Fixture::new("session-context-write");
        let run = |calls| fx.validator("RequireSessionContextWrite", &[], vec![assistant(calls)]);
        assert_fail(&run(vec![]), &["did not call `session_context_write`"]);
        let refused = tool(
            "session_context_write",
            json!({"summary": ""}),
            "[ERROR] tool `session_context_write`: `summary` must not be empty",
            false,
        );
        assert_fail(&run(vec![refused]), &["failed", "must not be empty"]);
        let written = tool(
            "SessionContext-session_context_write",
            json!({"summary": "done"}),
            "Session context updated (4 characters); the next agent can read it.",
            true,
        );
        assert_pass(&run(vec![write_file("a.txt"), written]));
    }
}
