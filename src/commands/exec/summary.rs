//! The `--json` summary of `exec`: one type for every way a run ends (finished, stuck,
//! cancelled by a signal or at a pause, never started), so a consumer reads the same keys
//! whatever happened. A value the run cannot know is `null`, never a made-up zero.

use fuseraft_vm::history::Usage;
use serde::Serialize;
use serde_json::Value as Json;

/// The summary object `exec --json` prints on standard output.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    pub session_id: Option<String>,
    pub task: Option<String>,
    /// The config's absolute path.
    pub config: Option<String>,
    pub succeeded: bool,
    /// `completed`, `stuck`, `error`, `max_turns`, `cancelled`, `not_started`, ...
    pub outcome: String,
    pub error_message: Option<String>,
    /// Why a run that ended without an error did not do the work.
    pub shortfall: Option<String>,
    pub output: Option<String>,
    pub transcript_path: Option<String>,
    pub exit_code: u8,
    pub turns: u32,
    pub elapsed_seconds: f64,
    /// `null` when the server reported no usage for any call.
    pub tokens: Option<Tokens>,
    /// `{input_tokens, output_tokens, complete, known}`.
    pub usage: Json,
    /// `{usd, complete, prices}`, or `null` when no call had a price.
    pub cost: Json,
    /// The provider flags the run used, or `{replay}`.
    pub provider: Json,
    /// The command that resumes the session, when it can be resumed.
    pub resume: Option<String>,
    /// What `--ci` read of the test report (only with `--ci`, after a run that ended well
    /// and left one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<super::ci::CiResult>,
    /// `{agent: {turns, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
    /// cost_usd, tool_calls, seconds}}` of the whole session (`{}` before any turn).
    pub agents: Json,
}

/// Token counts, as far as the servers reported them.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Tokens {
    /// The counts of `usage`, or `None` when `unreported` calls reported nothing at all.
    pub fn of(usage: Usage, unreported: u32) -> Option<Tokens> {
        (unreported == 0 || usage.total() > 0).then_some(Tokens {
            input: usage.input_tokens,
            output: usage.output_tokens,
            cache_read: usage.cache_read_tokens,
            cache_write: usage.cache_write_tokens,
        })
    }
}

impl RunSummary {
    /// The summary of a run that never started: `message` says why.
    pub fn not_started(
        config: Option<String>,
        task: Option<&str>,
        message: &str,
        code: u8,
    ) -> RunSummary {
        RunSummary {
            task: task.map(str::to_string),
            config,
            outcome: "not_started".to_string(),
            error_message: Some(message.to_string()),
            exit_code: code,
            tokens: Some(Tokens::default()),
            usage: fuseraft_vm::driver::usage_json(Usage::default(), 0),
            agents: Json::Object(Default::default()),
            ..RunSummary::default()
        }
    }

    /// The summary as one JSON line's object.
    pub fn json(&self) -> Json {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tokens_are_null_and_known_zeros_stay_zeros() {
        assert!(Tokens::of(Usage::default(), 2).is_none());
        let zero = Tokens::of(Usage::default(), 0).expect("known");
        assert_eq!((zero.input, zero.output), (0, 0));
        let partial = Usage {
            input_tokens: 10,
            ..Usage::default()
        };
        assert_eq!(Tokens::of(partial, 1).map(|tokens| tokens.input), Some(10));
    }
}
