//! Routing after a turn: which exit fires, its guards, its effects, and what happens when
//! nothing matches. Semantics: `research/fuseraft-semantics.md` §2–§9, `docs/semantics.md`.

use fuseraft_compiler::ir::{CondInput, Effect, Guard, Matcher, Target, Trigger};

use super::{failure, Machine, Phase};
use crate::effect::{CheckResult, ModelReply, Question, Request};
use crate::event::{EventKind, Outcome, Via};
use crate::history::{Message, Role, Spend};

/// What the newest reply says, as routing reads it.
pub(super) struct Reply {
    pub(super) agent: String,
    pub(super) text: String,
    /// The `route_keyword` of a `handoff` call.
    pub(super) handoff: Option<String>,
    /// The tama finish key (lowercased) and value; a reply without `finish` is
    /// `finish("done", text)`.
    pub(super) key: String,
    /// `None`: the value is the reply's text.
    pub(super) value: Option<String>,
    pub(super) json: Option<serde_json::Value>,
    pub(super) made_tool_calls: bool,
    /// The reply called `finish` (else its key is the implicit `done`).
    pub(super) finished: bool,
    /// The value the step was given (`None`: the task), kept while routing reads the reply.
    pub(super) input: Option<String>,
}

/// The routing view of `message`, its text copied into `buffer` (whose allocation is kept).
pub(super) fn read_reply(message: &Message, mut buffer: String) -> Reply {
    let finish = message
        .tool_calls
        .iter()
        .rev()
        .find(|call| call.is("finish"));
    let (key, value) = match finish {
        Some(call) => (
            call.arg("key").unwrap_or("done").to_lowercase(),
            Some(call.arg("value").unwrap_or_default().to_string()),
        ),
        None => ("done".to_string(), None),
    };
    Reply {
        agent: message.agent.clone(),
        text: {
            buffer.clear();
            buffer.push_str(&message.content);
            buffer
        },
        handoff: message.handoff().map(str::to_string),
        key,
        value,
        json: None,
        made_tool_calls: message.tool_calls.iter().any(|call| !call.is_routing()),
        finished: finish.is_some(),
        input: None,
    }
}

impl Machine<'_> {
    /// The signals of the current state that the reply carries (distinct, in exit order).
    fn detected_signals(&self, reply: &Reply) -> Vec<String> {
        let state = self.program.state(self.run.state);
        let mut detected: Vec<String> = Vec::new();
        let signals = state.exits.iter().filter_map(|exit| match &exit.trigger {
            Trigger::Signal {
                text,
                matcher,
                sources,
            } => Some((text, *matcher, sources)),
            _ => None,
        });
        let signals: Vec<_> = signals.collect();
        let source_ok = |sources: &Vec<fuseraft_compiler::ir::AgentId>| {
            sources.is_empty()
                || sources.iter().any(|id| {
                    self.program
                        .agent(*id)
                        .name
                        .eq_ignore_ascii_case(&reply.agent)
                })
        };
        if let Some(handoff) = &reply.handoff {
            // A handoff naming a known signal wins over the text and cannot be ambiguous.
            if let Some((text, _, _)) = signals.iter().find(|(text, _, sources)| {
                text.eq_ignore_ascii_case(handoff.trim()) && source_ok(sources)
            }) {
                return vec![(*text).clone()];
            }
            // Keyword and state-machine routing compare only the handoff argument; graphs
            // ignore an unknown argument and scan the text.
            if signals
                .iter()
                .any(|(_, matcher, _)| *matcher == Matcher::Relaxed)
            {
                return Vec::new();
            }
        }
        // One pass over the reply's lines for every signal this agent may send.
        let eligible: Vec<_> = signals
            .into_iter()
            .filter(|(_, _, sources)| source_ok(sources))
            .collect();
        let keywords: Vec<(&str, Matcher)> = eligible
            .iter()
            .map(|(text, matcher, _)| (text.as_str(), *matcher))
            .collect();
        let found = Matcher::find_all(&reply.text, &keywords);
        for ((text, _, _), hit) in eligible.into_iter().zip(found) {
            if hit && !detected.iter().any(|seen| seen.eq_ignore_ascii_case(text)) {
                detected.push(text.clone());
            }
        }
        detected
    }

    /// Routes after a completed turn on its reply. The run's value becomes the reply's
    /// (its `finish` value, else its text), unless taking the exit set another
    /// (`PromoteArtifact`): the text moves there after routing has read it.
    pub(super) fn route(&mut self, reply: Reply) {
        let mut reply = reply;
        let value = reply.value.take();
        // Nothing reads the value while routing; `None` tells whether an exit (or a
        // correction, which gives the step its input again) set one.
        reply.input = self.run.value.take();
        if let Some(step) = &self.program.state(self.run.state).step {
            // A tama pattern step: its key by its kind, its input and value kept for the
            // templates of the steps after it.
            let finished = reply.finished.then_some(reply.key.as_str());
            reply.key = step.key.key_of(finished, &reply.text);
            let input = reply.input.clone().unwrap_or_else(|| self.run.task.clone());
            let returned = value.clone().unwrap_or_else(|| reply.text.clone());
            self.record_step(self.run.state, input, returned);
        }
        self.route_on(&mut reply);
        if self.run.value.is_none() {
            self.run.value = Some(value.unwrap_or(reply.text));
        }
        self.enter_step();
    }

    fn route_on(&mut self, reply: &mut Reply) {
        // Extracting JSON parses the whole reply: only when a condition of this state reads it.
        let state = self.program.state(self.run.state);
        let reads_json = state.exits.iter().any(|exit| {
            matches!(&exit.trigger, Trigger::Cond { cond, .. } if cond.reads_json())
                || exit
                    .guards
                    .iter()
                    .any(|guard| matches!(guard, Guard::Cond(cond) if cond.reads_json()))
        });
        if reads_json {
            reply.json = fuseraft_compiler::ir::extract_json(&reply.text);
        }
        if self.lacks_json(reply) {
            self.no_json(reply);
            return;
        }
        let detected = self.detected_signals(reply);
        for signal in &detected {
            let via = if reply.handoff.is_some() {
                Via::Handoff
            } else {
                Via::Text
            };
            let kind = EventKind::SignalDetected {
                signal: signal.clone(),
                via,
            };
            self.emit(Some(&reply.agent), kind);
        }
        if detected.len() > 1 {
            self.ambiguous(reply, &detected);
            return;
        }
        let state = self.program.state(self.run.state);
        for (idx, exit) in state.exits.iter().enumerate() {
            let fires = match &exit.trigger {
                Trigger::Signal { text, .. } => detected
                    .first()
                    .is_some_and(|found| found.eq_ignore_ascii_case(text)),
                Trigger::FinishKey(key) => *key == reply.key,
                Trigger::AnyKey => !state.exits.iter().any(
                    |other| matches!(&other.trigger, Trigger::FinishKey(k) if *k == reply.key),
                ),
                Trigger::Cond { cond, sources } => {
                    (sources.is_empty()
                        || sources.iter().any(|id| {
                            self.program
                                .agent(*id)
                                .name
                                .eq_ignore_ascii_case(&reply.agent)
                        }))
                        && cond.eval(&CondInput {
                            last_agent: &reply.agent,
                            last_message: &reply.text,
                            json: reply.json.as_ref(),
                        })
                }
                Trigger::Chosen => false,
                Trigger::Always | Trigger::Otherwise => true,
            };
            if !fires {
                continue;
            }
            // Guards the machine can decide itself: a false one passes over this exit.
            let internal_ok = exit.guards.iter().all(|guard| match guard {
                Guard::Cond(cond) => cond.eval(&CondInput {
                    last_agent: &reply.agent,
                    last_message: &reply.text,
                    json: reply.json.as_ref(),
                }),
                Guard::CounterBelow(counter, limit) => {
                    self.run.counters[counter.0 as usize] < *limit
                }
                _ => true,
            });
            if !internal_ok {
                continue;
            }
            self.try_exit(idx);
            return;
        }
        self.no_match(reply);
    }

    /// Starts taking exit `idx`: its checks, then approval, then context, then the move.
    pub(super) fn try_exit(&mut self, idx: usize) {
        let exit = &self.program.state(self.run.state).exits[idx];
        let checks = failure::guard_checks(self.program, &exit.guards);
        if !checks.is_empty() {
            let context = self.check_context();
            self.phase = Phase::Checks { exit: idx };
            self.pending = Some(Request::Validate {
                checks,
                context: Box::new(context),
            });
            return;
        }
        self.after_checks(idx);
    }

    fn after_checks(&mut self, idx: usize) {
        let exit = &self.program.state(self.run.state).exits[idx];
        if exit
            .guards
            .iter()
            .any(|guard| matches!(guard, Guard::HumanApproval))
        {
            let to = match exit.target {
                Target::State(id) => self.program.state(id).name.clone(),
                Target::End => "end".to_string(),
            };
            let signal = match &exit.trigger {
                Trigger::Signal { text, .. } => text.clone(),
                _ => String::new(),
            };
            self.emit(
                None,
                EventKind::HitlRequested {
                    from: self.state_name(),
                    to: to.clone(),
                    signal: signal.clone(),
                },
            );
            self.phase = Phase::Approval { exit: idx };
            self.pending = Some(Request::Approve {
                from: self.state_name(),
                to,
                question: Question::Route { signal },
            });
            return;
        }
        self.read_context(idx);
    }

    fn read_context(&mut self, idx: usize) {
        // The driver reads the sources on disk; the run answers the others itself.
        let on_disk: Vec<_> = self
            .exit_sources(idx)
            .into_iter()
            .filter(|source| !crate::context_block::from_run(source))
            .collect();
        if on_disk.is_empty() {
            self.context_blocks = self.with_run_blocks(idx, Vec::new());
            self.take_exit(idx);
            return;
        }
        self.phase = Phase::Context { exit: idx };
        self.pending = Some(Request::Context {
            sources: on_disk,
            session_id: self.run.session_id.clone(),
        });
    }

    pub(super) fn on_checks(&mut self, idx: usize, results: Vec<CheckResult>) {
        let exit = &self.program.state(self.run.state).exits[idx];
        let names: Vec<String> = failure::guard_checks(self.program, &exit.guards)
            .into_iter()
            .map(|check| check.name().to_string())
            .collect();
        match results.iter().position(|result| !result.ok) {
            None if results.len() >= names.len() => {
                let key = format!("{}::{idx}", self.state_name());
                self.run.failures.remove(&key);
                self.after_checks(idx);
            }
            failed => {
                let at = failed.unwrap_or(results.len());
                let validator = names
                    .get(at)
                    .cloned()
                    .unwrap_or_else(|| "validator".to_string());
                let (error, shortfall) = results
                    .get(at)
                    .map(|result| (result.error.clone(), result.shortfall))
                    .unwrap_or_else(|| {
                        (
                            "the check was not evaluated".to_string(),
                            Default::default(),
                        )
                    });
                self.guard_failed(idx, &validator, &error, shortfall);
            }
        }
    }

    pub(super) fn on_approval(&mut self, idx: usize, approved: bool) {
        let kind = EventKind::HitlAnswered {
            approved,
            redirect_chars: None,
        };
        self.emit(None, kind);
        if approved {
            self.read_context(idx);
            return;
        }
        let exit = &self.program.state(self.run.state).exits[idx];
        let to = match exit.target {
            Target::State(id) => self.program.state(id).name.clone(),
            Target::End => "end".to_string(),
        };
        self.inject(format!(
            "Route to {to} was blocked by the operator. Continue the work and route again when it is ready."
        ));
        self.emit(
            None,
            EventKind::CorrectionInjected {
                reason: format!("route to `{to}` refused by the operator"),
            },
        );
        self.phase = Phase::Ready;
    }

    /// Applies the exit's effects and moves to its target.
    pub(super) fn take_exit(&mut self, idx: usize) {
        // The program outlives the machine's borrow: its exit is read in place, not cloned.
        let program = self.program;
        let state = program.state(self.run.state);
        let exit = &state.exits[idx];
        let agent = state
            .agent
            .map(|id| self.program.agent(id).name.clone())
            .unwrap_or_default();
        let signal = match &exit.trigger {
            Trigger::Signal { text, .. } => Some(text.clone()),
            Trigger::FinishKey(key) => Some(key.clone()),
            _ => None,
        };
        let to_name = match exit.target {
            Target::State(id) => self.program.state(id).name.clone(),
            Target::End => "end".to_string(),
        };
        let mut phase_break = false;
        for effect in &exit.effects {
            match effect {
                Effect::Count(counter) => {
                    let slot = &mut self.run.counters[counter.0 as usize];
                    if *slot == 0 && self.program.counter(*counter).name.ends_with(".rounds") {
                        self.emit(
                            Some(&agent),
                            EventKind::AdversarialStageStart {
                                stage: state.name.split('/').next().unwrap_or_default().to_string(),
                            },
                        );
                    }
                    self.run.counters[counter.0 as usize] =
                        self.run.counters[counter.0 as usize].saturating_add(1);
                }
                Effect::Reset(counter) => self.run.counters[counter.0 as usize] = 0,
                Effect::SetValue(template) => {
                    let value = self.fill(template, &super::steps::Fill::default());
                    self.run.value = Some(value);
                }
                Effect::PhaseBreak => phase_break = true,
                Effect::PromoteArtifact => {
                    // The newest generator reply is the artifact the next stage works on.
                    let artifact = self
                        .run
                        .history
                        .iter()
                        .rev()
                        .filter(|message| message.role == Role::Assistant)
                        .nth(1)
                        .map(|message| message.content.to_string())
                        .unwrap_or_default();
                    self.run.value = Some(artifact);
                    let passed = signal.is_some();
                    if !passed {
                        let stage = state.name.split('/').next().unwrap_or_default();
                        self.unapproved.push(stage.to_string());
                    }
                    self.emit(
                        Some(&agent),
                        if passed {
                            EventKind::AdversarialStagePass {
                                state: state.name.clone(),
                                next: to_name.clone(),
                            }
                        } else {
                            EventKind::AdversarialStageTimeout {
                                state: state.name.clone(),
                                next: to_name.clone(),
                            }
                        },
                    );
                }
                Effect::InjectCritique => {
                    let critique = self
                        .run
                        .history
                        .iter()
                        .rev()
                        .find(|message| message.role == Role::Assistant)
                        .map(|message| message.content.clone())
                        .unwrap_or_default();
                    self.inject(format!("[fuseraft: critique from {agent}]\n{critique}"));
                }
                Effect::Warn(text) => self.emit(
                    Some(&agent),
                    EventKind::Warning {
                        message: text.clone(),
                        reason: None,
                    },
                ),
                Effect::Revisit {
                    counter,
                    max,
                    objections,
                } => {
                    let count = &mut self.run.counters[counter.0 as usize];
                    *count = count.saturating_add(1);
                    let visits = *count;
                    if visits > *max {
                        self.emit(
                            Some(&agent),
                            EventKind::BackEdgeEscalation {
                                from: state.name.clone(),
                                to: to_name.clone(),
                                visit_count: visits,
                                max_revisits: *max,
                            },
                        );
                        let source = objections
                            .as_deref()
                            .map(|path| format!(" (objections: {path})"))
                            .unwrap_or_default();
                        self.inject(format!(
                            "ESCALATION: `{}` → `{to_name}` has fired {visits} times, more than the {max} allowed{source}. Resolve the remaining objections instead of looping.",
                            state.name
                        ));
                    }
                }
                Effect::InjectContext(_) => {}
            }
        }
        for block in std::mem::take(&mut self.context_blocks) {
            self.inject(block);
        }
        self.run.failures.retain(|key, _| {
            !key.strip_prefix(state.name.as_str())
                .is_some_and(|rest| rest.starts_with("::"))
        });
        if phase_break {
            self.run.phase = self.run.phase.saturating_add(1);
            self.inject(format!(
                "[fuseraft: {} → {to_name} — new phase {}]",
                signal.clone().unwrap_or_default(),
                self.run.phase
            ));
            self.emit(
                Some(&agent),
                EventKind::PhaseStart {
                    phase: self.run.phase,
                    from: state.name.clone(),
                    to: to_name.clone(),
                },
            );
        }
        self.move_to(exit.target.clone(), signal, &agent, Some(idx));
    }

    /// Moves to a target: the boundary marker, the routed event, and the new state.
    /// `exit` is the index of the exit taken in the state being left (`None` for fallbacks and
    /// fork joins); it rides on the `agent_routed` event so coverage can name the exit.
    pub(super) fn move_to(
        &mut self,
        target: Target,
        signal: Option<String>,
        agent: &str,
        exit: Option<usize>,
    ) {
        let from = self.state_name();
        match target {
            Target::End => {
                self.left_entry = true;
                self.emit(
                    Some(agent),
                    EventKind::AgentRouted {
                        from,
                        to: "end".to_string(),
                        signal,
                        exit,
                    },
                );
                self.finish(Outcome::Completed, None);
            }
            Target::State(id) => {
                let to_state = self.program.state(id);
                let to_agent = to_state.agent.map(|a| self.program.agent(a).name.clone());
                self.emit(
                    Some(agent),
                    EventKind::AgentRouted {
                        from,
                        to: to_state.name.clone(),
                        signal,
                        exit,
                    },
                );
                if let Some(to_agent) = &to_agent {
                    if to_agent != agent {
                        self.inject(format!("[fuseraft: {agent} → {to_agent}]"));
                    }
                }
                if id != self.run.state {
                    self.run.visit_turns = 0;
                    self.answered = false;
                }
                if to_state
                    .step
                    .as_ref()
                    .is_some_and(|step| step.input.is_some())
                {
                    self.fill_pending = true;
                }
                if id != self.program.entry {
                    self.left_entry = true;
                }
                self.run.state = id;
                self.phase = Phase::Ready;
                // Routing fills the template once the reply's value is in (`route`).
                if self.run.value.is_some() {
                    self.enter_step();
                }
            }
        }
    }

    /// The manager named the next agent.
    pub(super) fn on_select(&mut self, reply: Result<ModelReply, String>) {
        let reply = match reply {
            Ok(reply) => reply,
            Err(error) => {
                let kind = EventKind::ModelError {
                    error: error.clone(),
                };
                self.emit(None, kind);
                self.finish(Outcome::Error, Some(error));
                return;
            }
        };
        if !self.add_usage(reply.usage, Spend::of(reply.cost)) {
            return;
        }
        let state = self.program.state(self.run.state);
        let choice = reply.text.trim();
        let candidates = self.team();
        let picked = candidates
            .iter()
            .find(|(_, name)| name.eq_ignore_ascii_case(choice))
            .or_else(|| {
                candidates
                    .iter()
                    .find(|(_, name)| choice.to_lowercase().contains(&name.to_lowercase()))
            });
        let name = state.name.clone();
        failure::bump(&mut self.run.failures, &format!("{name}::rounds"));
        match picked {
            Some((idx, agent)) => {
                let kind = EventKind::SelectionMade {
                    agent: agent.to_string(),
                };
                self.emit(None, kind);
                self.run.failures.remove(&format!("{name}::select"));
                let exit = state.exits[*idx].clone();
                self.move_to(exit.target, None, "manager", Some(*idx));
            }
            None => {
                let count = failure::bump(&mut self.run.failures, &format!("{name}::select"));
                self.emit(
                    None,
                    EventKind::SelectionFailed {
                        reply: choice.to_string(),
                        consecutive: count,
                    },
                );
                if count >= 3 {
                    self.finish(
                        Outcome::Stuck,
                        Some(format!("stuck in state `{name}`: the manager named no agent 3 times (last reply: `{choice}`)")),
                    );
                } else {
                    self.phase = Phase::Ready;
                }
            }
        }
    }
}
