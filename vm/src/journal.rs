//! A durable engine's hold on a run's effects (`fuseraft serve` on a Restate server): an
//! effect whose result an earlier attempt of the same invocation left is not made again,
//! its kept result stands in for it. A provider offers one through
//! [`crate::models::Models::journal`]; without one every effect is made (a local run).

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

pub mod effects;

use crate::effect::CheckResult;
use crate::history::{DenialKind, ToolCall};

/// What the journal holds for the next effect.
pub enum Recalled {
    /// Its result from an earlier attempt: use it, make nothing.
    Kept(String),
    /// Nothing yet: make the effect, then hand its result to this.
    Make(Box<dyn FnOnce(String) + Send>),
    /// An earlier attempt started this effect and died before its result was kept: it may
    /// have acted or not. An effect that is not [`Repeat::Safe`] is not made again.
    Interrupted,
}

/// Whether an effect may be made twice.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Repeat {
    /// Asking again changes nothing outside the run (a model call, a read).
    Safe,
    /// It acts (writes, runs a command, sends): made at most once.
    Once,
}

/// Keeps a run's effects, in the order the run makes them.
pub trait Journal: Sync {
    /// The next effect (`effect` names its kind, e.g. `tool call`).
    fn recall(
        &self,
        effect: &'static str,
        repeat: Repeat,
    ) -> Pin<Box<dyn Future<Output = Recalled> + Send + '_>>;
}

/// The result a tool call that was interrupted and not made again gives the model.
pub const INTERRUPTED: &str = "[NOT RUN AGAIN] the run was interrupted while this call was under way, so it may have taken effect or not; check before repeating it";

/// Gives `call` the outcome of a call that was interrupted and not made again.
pub fn interrupted(call: &mut ToolCall) {
    call.result = Some(INTERRUPTED.to_string());
    call.ok = false;
    call.denied = None;
}

/// The verdict a step's checks give when an earlier attempt started them (they run
/// commands) and died before their verdict was kept: they are not run again.
pub const CHECKS_INTERRUPTED: &str = "[NOT RUN AGAIN] the run was interrupted while these checks were under way, so their commands may have run or not; run them again before relying on them";

/// The journal entry of a step's check verdicts.
pub fn check_results(results: &[CheckResult]) -> String {
    serde_json::to_string(results).unwrap_or_default()
}

/// The verdicts a journal entry `text` kept; `None` when it does not read (the checks are
/// then run again).
pub fn restore_check_results(text: &str) -> Option<Vec<CheckResult>> {
    serde_json::from_str(text).ok()
}

/// What an executed tool call left, as its journal entry.
#[derive(Serialize, Deserialize)]
struct Outcome {
    result: Option<String>,
    ok: bool,
    denied: Option<DenialKind>,
}

/// The journal entry of an executed `call`.
pub fn tool_outcome(call: &ToolCall) -> String {
    serde_json::to_string(&Outcome {
        result: call.result.clone(),
        ok: call.ok,
        denied: call.denied,
    })
    .unwrap_or_default()
}

/// Gives `call` the outcome its journal entry `text` kept; `false` when the entry does not
/// read (the call is then made again).
pub fn restore_tool_outcome(call: &mut ToolCall, text: &str) -> bool {
    match serde_json::from_str::<Outcome>(text) {
        Ok(outcome) => {
            call.result = outcome.result;
            call.ok = outcome.ok;
            call.denied = outcome.denied;
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_outcome_reads_back_as_it_was() {
        let mut made = ToolCall {
            id: "c1".into(),
            name: "shell_run".into(),
            args: serde_json::json!({"command": "echo ran"}),
            result: Some("[DENIED: sandbox] outside\n".into()),
            ok: false,
            denied: Some(DenialKind::Sandbox),
        };
        let mut kept = ToolCall {
            result: None,
            ok: true,
            denied: None,
            ..made.clone()
        };
        assert!(restore_tool_outcome(&mut kept, &tool_outcome(&made)));
        assert_eq!(kept, made);
        made.denied = None;
        assert!(!restore_tool_outcome(&mut made, "not json"));
    }

    #[test]
    fn check_verdicts_read_back_as_they_were() {
        let results = vec![
            CheckResult::pass(),
            CheckResult::fail("test report not found"),
        ];
        let text = check_results(&results);
        assert_eq!(restore_check_results(&text), Some(results));
        assert_eq!(restore_check_results("[{\"ok\": 1}]"), None);
    }
}
