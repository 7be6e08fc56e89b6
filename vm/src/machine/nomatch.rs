//! When a reply routes nowhere: no valid signal, another role's keyword, several signals,
//! or (structured routing) no JSON at all. Each is a correction that names what is valid,
//! counted per state until the run is stuck (docs/semantics.md, "No match").

use fuseraft_compiler::ir::{NoMatch, StateKind, Target, TerminalMode, Trigger};

use super::route::Reply;
use super::{failure, guide, Machine, Phase};
use crate::event::{EventKind, Outcome};

impl Machine<'_> {
    /// Two routing signals in one reply: a correction that names them, in every mode.
    pub(super) fn ambiguous(&mut self, reply: &Reply, detected: &[String]) {
        let state = self.state_name();
        // Ambiguity and missing signals count together (issue 13).
        let key = format!("{state}::no-signal");
        let count = failure::bump(&mut self.run.failures, &key);
        let listed = detected.join("`, `");
        self.emit(
            Some(&reply.agent),
            EventKind::MultiKeyword {
                keywords: detected.to_vec(),
                consecutive: count,
            },
        );
        if let Some(limit) = self.no_match_threshold() {
            if count >= limit {
                self.finish(
                    Outcome::Stuck,
                    Some(format!(
                        "stuck in state `{state}`: validator `multi-keyword` failed {count} times: the reply carried `{listed}`"
                    )),
                );
                return;
            }
        }
        let valid = self.valid_signals().join(", ");
        self.inject(format!(
            "AMBIGUOUS ROUTING: your reply contains more than one routing signal (`{listed}`). Emit exactly one of: {valid}."
        ));
        self.emit(
            Some(&reply.agent),
            EventKind::CorrectionInjected {
                reason: format!("ambiguous: `{listed}`"),
            },
        );
        self.phase = Phase::Ready;
    }

    pub(super) fn valid_signals(&self) -> Vec<String> {
        let state = self.program.state(self.run.state);
        let mut signals: Vec<String> = Vec::new();
        for exit in &state.exits {
            let text = match &exit.trigger {
                Trigger::Signal { text, .. } => text.clone(),
                Trigger::FinishKey(key) => format!("finish key `{key}`"),
                _ => continue,
            };
            if !signals.contains(&text) {
                signals.push(text);
            }
        }
        signals
    }

    /// How many consecutive routing failures a state tolerates before the run is stuck: the
    /// graph's `MaxRetries`, the state machine's `MaxConsecutiveTurnsWithoutSignal`, else
    /// `InvalidTransition.Threshold` (3 by default) for every mode (issue 13).
    fn no_match_threshold(&self) -> Option<u32> {
        let state = self.program.state(self.run.state);
        state
            .stuck
            .max_retries
            .or(state.stuck.max_without_signal)
            .or(Some(
                self.program.failure.invalid_transition.threshold.max(1),
            ))
    }

    pub(super) fn no_match(&mut self, reply: &Reply) {
        let state = self.program.state(self.run.state);
        let name = state.name.clone();
        match state.no_match.clone() {
            // Keyword states whose agent has no signal to send fall back to `DefaultAgent`.
            NoMatch::Fallback(target) if self.valid_signals().is_empty() => {
                self.emit(
                    Some(&reply.agent),
                    EventKind::KeywordNotFound {
                        state: name,
                        expected_signals: Some(self.valid_signals()),
                        key: None,
                        consecutive: None,
                        foreign_signals: None,
                    },
                );
                self.move_to(Target::State(target), None, &reply.agent, None);
            }
            NoMatch::Fail
                if !guide::choices(self.program, self.run.state, &reply.agent)
                    .keys
                    .is_empty() =>
            {
                self.wrong_key(reply)
            }
            NoMatch::Fail => {
                self.emit(
                    Some(&reply.agent),
                    EventKind::KeywordNotFound {
                        state: name.clone(),
                        expected_signals: None,
                        key: Some(reply.key.clone()),
                        consecutive: None,
                        foreign_signals: None,
                    },
                );
                self.finish(
                    Outcome::Error,
                    Some(format!(
                        "no transition for key `{}` in state `{name}`",
                        reply.key
                    )),
                );
            }
            // Keyword states otherwise correct their agent like state machines (issue 13).
            NoMatch::Fallback(_) => self.correct(reply, true),
            NoMatch::Correct { nudge } => self.correct(reply, nudge),
            NoMatch::Never => {
                if matches!(
                    state.kind,
                    StateKind::Terminal(TerminalMode::RunUntilTermination)
                ) {
                    // A terminal state keeps answering until a termination fires.
                    self.phase = Phase::Ready;
                } else if state.exits.is_empty() && matches!(state.kind, StateKind::Terminal(_)) {
                    self.finish(Outcome::Completed, None);
                } else {
                    self.finish(
                        Outcome::Error,
                        Some(format!("state `{name}` has no way out")),
                    );
                }
            }
        }
    }

    /// No valid signal in the reply: count it (with ambiguity, under one key per state),
    /// stop the run as stuck at the state's threshold, else inject a correction that names
    /// the valid signals (and a foreign keyword the reply used) and run the agent again.
    fn correct(&mut self, reply: &Reply, nudge: bool) {
        let state = self.program.state(self.run.state);
        let name = state.name.clone();
        let key = format!("{name}::no-signal");
        let count = failure::bump(&mut self.run.failures, &key);
        let expected = self.valid_signals();
        let foreign = guide::foreign_signals(
            self.program,
            self.run.state,
            &reply.agent,
            &reply.text,
            reply.handoff.as_deref(),
        );
        let kind = EventKind::KeywordNotFound {
            state: name.clone(),
            expected_signals: Some(expected.clone()),
            key: None,
            consecutive: Some(count),
            foreign_signals: (!foreign.is_empty()).then(|| foreign.clone()),
        };
        self.emit(Some(&reply.agent), kind);
        let structured = state
            .exits
            .iter()
            .any(|exit| matches!(exit.trigger, Trigger::Cond { .. }));
        if let Some(limit) = self.no_match_threshold() {
            if count >= limit {
                let validator = if state.stuck.max_without_signal.is_some()
                    && state.stuck.max_retries.is_none()
                {
                    format!("signal-required:{name}")
                } else {
                    "no-keyword".to_string()
                };
                let what = if foreign.is_empty() {
                    "no routing signal in the reply".to_string()
                } else {
                    format!("the reply used `{}`, not its own", foreign.join("`, `"))
                };
                let wanted = if expected.is_empty() {
                    String::new()
                } else {
                    format!(" (expected one of: {})", expected.join(", "))
                };
                self.finish(
                    Outcome::Stuck,
                    Some(format!(
                        "stuck in state `{name}`: validator `{validator}` failed {count} times: {what}{wanted}"
                    )),
                );
                return;
            }
        }
        let text = if structured {
            let limit = self.no_match_threshold().unwrap_or(3);
            let fields = guide::json_fields(self.program, self.run.state, &reply.agent);
            format!(
                "STRUCTURED ROUTING ERROR ({count}/{limit}): your reply matched no route. Reply with a JSON object whose fields (`{}`) satisfy one of the routes.",
                fields.join("`, `")
            )
        } else if nudge && !expected.is_empty() {
            let hint = if !foreign.is_empty() {
                format!(
                    " WRONG KEYWORD: `{}` is not yours to send here.",
                    foreign.join("`, `")
                )
            } else if reply.made_tool_calls {
                String::new()
            } else {
                " NO TOOL CALLS AND NO KEYWORD.".to_string()
            };
            format!("No routing signal found in your reply.{hint} End your reply with exactly one of these on its own line, or call handoff(route_keyword): {}.", expected.join(", "))
        } else {
            "Your reply did not complete this step. Try again.".to_string()
        };
        self.inject(text);
        self.emit(
            Some(&reply.agent),
            EventKind::CorrectionInjected {
                reason: "no routing signal".to_string(),
            },
        );
        self.phase = Phase::Ready;
    }

    /// A tama step finished with a key its state does not route: count it, stop the run as
    /// stuck at the threshold naming the keys that route, else tell the agent those keys and
    /// run it again. A reply without `finish` counts as key `done`, and is told so.
    fn wrong_key(&mut self, reply: &Reply) {
        let name = self.state_name();
        let count = failure::bump(&mut self.run.failures, &format!("{name}::no-key"));
        let keys = guide::choices(self.program, self.run.state, &reply.agent).keys;
        self.emit(
            Some(&reply.agent),
            EventKind::KeywordNotFound {
                state: name.clone(),
                expected_signals: Some(keys.clone()),
                key: Some(reply.key.clone()),
                consecutive: Some(count),
                foreign_signals: None,
            },
        );
        let listed = format!("`{}`", keys.join("`, `"));
        let called = if !reply.finished {
            format!(
                "a reply without a `finish` call counts as key `{}`",
                reply.key
            )
        } else {
            format!("`finish` was called with key `{}`", reply.key)
        };
        let limit = self.no_match_threshold().unwrap_or(3);
        if count >= limit {
            self.finish(
                Outcome::Stuck,
                Some(format!(
                    "stuck in state `{name}`: no transition for key `{}` {count} times ({called}); the state routes {listed}",
                    reply.key
                )),
            );
            return;
        }
        let correction = format!(
            "FINISH ERROR ({count}/{limit}): this step has no transition for key `{}` ({called}). Call `finish` with `key` set to one of {listed}, and `value` set to your result.",
            reply.key
        );
        // A tama step reads only its input (`ContextMode::Value`): it runs again on that
        // input, followed by the correction.
        let input = reply.input.clone().unwrap_or_else(|| self.run.task.clone());
        self.run.value = Some(format!("{input}\n\n{correction}"));
        self.inject(correction);
        self.emit(
            Some(&reply.agent),
            EventKind::CorrectionInjected {
                reason: "no transition for the finish key".to_string(),
            },
        );
        self.phase = Phase::Ready;
    }

    /// A structured state whose conditions read JSON, for this agent, and a reply with no
    /// JSON object: no condition is evaluated (an `Exists: false` route must not fire on
    /// prose); the correction names the fields the routes read.
    pub(super) fn lacks_json(&self, reply: &Reply) -> bool {
        if reply.json.is_some() || guide::has_signals(self.program, self.run.state) {
            return false;
        }
        !guide::json_fields(self.program, self.run.state, &reply.agent).is_empty()
    }

    pub(super) fn no_json(&mut self, reply: &Reply) {
        let name = self.state_name();
        let count = failure::bump(&mut self.run.failures, &format!("{name}::no-signal"));
        let fields = guide::json_fields(self.program, self.run.state, &reply.agent);
        self.emit(
            Some(&reply.agent),
            EventKind::JsonMissing {
                state: name.clone(),
                fields: fields.clone(),
                consecutive: count,
            },
        );
        let limit = self.no_match_threshold().unwrap_or(3);
        let listed = fields.join("`, `");
        if count >= limit {
            self.finish(
                Outcome::Stuck,
                Some(format!(
                    "stuck in state `{name}`: validator `structured-output` failed {count} times: no JSON object in the reply (fields: `{listed}`)"
                )),
            );
            return;
        }
        self.inject(format!(
            "STRUCTURED ROUTING ERROR ({count}/{limit}): your reply has no JSON object. Reply with a JSON object with the fields `{listed}`."
        ));
        self.emit(
            Some(&reply.agent),
            EventKind::CorrectionInjected {
                reason: "no JSON object".to_string(),
            },
        );
        self.phase = Phase::Ready;
    }
}
