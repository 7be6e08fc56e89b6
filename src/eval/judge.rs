//! The LLM judge of a case: one model call that reads the task, the rubric and the run's
//! output and answers `PASS: reason` or `FAIL: reason`. Its verdict and reason go in the
//! report; a run passes only when the judge says `PASS`. Under `--replay` the judge answers
//! as the agent `judge` (scoped like any agent: `CASE:judge`).

use std::sync::Arc;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::driver::Models;
use fuseraft_vm::effect::{ChatMessage, ChatRole, ModelCall, ModelReply};
use fuseraft_vm::providers::{Providers, Settings};
use serde::{Deserialize, Serialize};

use super::case::Judge;
use super::suite::JudgeModel;

/// The queue (agent name) a judge's call takes.
pub const AGENT: &str = "judge";

/// The most characters of a run's output the judge is shown (its head and tail).
const MAX_OUTPUT: usize = 12_000;

/// What the judge said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// `pass`, `fail`, or `unclear` (the answer held neither word; the run fails).
    pub verdict: String,
    pub reason: String,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.verdict == "pass"
    }
}

const INSTRUCTIONS: &str = "You are a strict evaluator. You are given a task, a rubric and \
the output an AI team produced for the task. Decide whether the output satisfies the rubric. \
Answer with one line: `PASS: ` or `FAIL: ` followed by one sentence that says why.";

/// The judge's call for a run of `task` whose output is `output`.
pub fn call(judge: &Judge, task: &str, output: &str) -> ModelCall {
    let output = clip(output);
    let question = format!(
        "## Task\n{task}\n\n## Rubric\n{}\n\n## Output\n{output}\n\nDoes the output satisfy the rubric? Answer `PASS: reason` or `FAIL: reason`.",
        judge.rubric
    );
    let message = |role, text: &str| ChatMessage {
        role,
        content: Arc::from(text),
        tool_calls: Vec::new(),
        tool_call_id: None,
    };
    ModelCall {
        agent: fuseraft_vm::effect::Caller::Agent(AGENT.to_string()),
        model: None,
        messages: vec![
            message(ChatRole::System, INSTRUCTIONS),
            message(ChatRole::User, &question),
        ],
        tools: Arc::from(Vec::new()),
        turn: 0,
        reply_fields: Arc::from(Vec::new()),
    }
}

/// `output` cut to its first and last [`MAX_OUTPUT`]/2 characters when longer.
fn clip(output: &str) -> String {
    let count = output.chars().count();
    if count <= MAX_OUTPUT {
        return output.to_string();
    }
    let head: String = output.chars().take(MAX_OUTPUT / 2).collect();
    let tail: String = output.chars().skip(count - MAX_OUTPUT / 2).collect();
    format!(
        "{head}\n[… {} characters left out …]\n{tail}",
        count - MAX_OUTPUT
    )
}

/// The verdict in a judge's reply: the first `PASS` or `FAIL` word (any case) decides, and
/// what follows it on the line is the reason.
pub fn verdict(reply: &str) -> Verdict {
    for line in reply.lines() {
        let Some((decided, end)) = first_verdict_word(line) else {
            continue;
        };
        let rest = line[end..].trim_start_matches([':', '-', ' ', '*', '.', '\u{2014}']);
        let reason = if rest.trim().is_empty() {
            let after: Vec<&str> = reply.trim().lines().skip(1).map(str::trim).collect();
            after.join(" ")
        } else {
            rest.trim().to_string()
        };
        return Verdict {
            verdict: decided.to_string(),
            reason,
        };
    }
    let first = reply.trim().lines().next().unwrap_or("(an empty reply)");
    Verdict {
        verdict: "unclear".to_string(),
        reason: format!("the judge answered neither PASS nor FAIL: {first}"),
    }
}

/// The first word of `line` that is a verdict, and the byte where it ends.
fn first_verdict_word(line: &str) -> Option<(&'static str, usize)> {
    let mut start = None;
    let ends = line
        .char_indices()
        .chain(std::iter::once((line.len(), ' ')));
    for (idx, ch) in ends {
        if ch.is_ascii_alphabetic() {
            start.get_or_insert(idx);
            continue;
        }
        let Some(from) = start.take() else {
            continue;
        };
        match line[from..idx].to_ascii_lowercase().as_str() {
            "pass" | "passed" => return Some(("pass", idx)),
            "fail" | "failed" => return Some(("fail", idx)),
            _ => {}
        }
    }
    None
}

/// The judge's model: the case's, else the suite's defaults, field by field.
pub fn model_of(judge: &Judge, defaults: &JudgeModel) -> JudgeModel {
    let pick = |own: &Option<String>, default: &Option<String>| own.clone().or(default.clone());
    JudgeModel {
        model: pick(&judge.model.model, &defaults.model),
        endpoint: pick(&judge.model.endpoint, &defaults.endpoint),
        api_key_env: pick(&judge.model.api_key_env, &defaults.api_key_env),
    }
}

/// The network provider of a judge's model (`program` only lends its settings). The model,
/// its endpoint and its key variable come from a suite, a file like a config: a well-known
/// key goes only to its provider's hosts, as a config's `ApiKeyEnvVar` does.
pub fn provider(model: &JudgeModel, program: &Program) -> Result<Providers, String> {
    let Some(name) = &model.model else {
        return Err(
            "the case has a judge but no judge model: give `judge: {model: PROVIDER:MODEL}` in the case or the suite (or run with `--replay`)"
                .to_string(),
        );
    };
    let fail = |message: String| format!("the judge's model: {message}");
    let mut configured = fuseraft_vm::providers::named_model(name).map_err(fail)?;
    configured.endpoint = model.endpoint.clone();
    configured.api_key_env = model.api_key_env.clone();
    let env = |name: &str| std::env::var(name).ok();
    Providers::for_model(program, "the judge", &configured, Settings::default(), &env).map_err(fail)
}

/// Asks `models` for the verdict; a failed call is an `unclear` verdict naming the error.
pub async fn ask<M: Models>(models: &M, call: &ModelCall) -> (Verdict, ModelReply) {
    match models.call(call).await {
        Ok(reply) => (verdict(&reply.text), reply),
        Err(error) => (
            Verdict {
                verdict: "unclear".to_string(),
                reason: format!("the judge's call failed: {error}"),
            },
            ModelReply::default(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_pass_or_fail_word_decides() {
        let pass = verdict("PASS: the greeting is there.");
        assert_eq!(pass.verdict, "pass");
        assert_eq!(pass.reason, "the greeting is there.");
        let fail = verdict("Verdict - **FAIL** — no code was written");
        assert_eq!(
            (fail.verdict.as_str(), fail.reason.as_str()),
            ("fail", "no code was written")
        );
        let bypass = verdict("Bypassed checks.\nfailed: it is off topic");
        assert_eq!(bypass.verdict, "fail", "`Bypassed` is not `pass`");
        let next_line = verdict("PASS\nIt does what was asked.");
        assert_eq!(next_line.reason, "It does what was asked.");
        assert_eq!(verdict("I think so").verdict, "unclear");
        assert!(!verdict("").passed());
    }

    #[test]
    fn long_outputs_keep_their_head_and_tail() {
        let output = format!("{}{}", "a".repeat(MAX_OUTPUT), "b".repeat(10));
        let clipped = clip(&output);
        assert!(clipped.starts_with('a') && clipped.ends_with("bbbbbbbbbb"));
        assert!(clipped.contains("10 characters left out"));
    }
}
