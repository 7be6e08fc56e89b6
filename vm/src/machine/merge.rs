//! Forks: starting the branches, keeping those that finish, and their merge: `union`, `consensus`, `vote`, and `ranked`/`semantic_diff`
//! through the merge agent (falling back to `union` when it is missing or fails).

use fuseraft_compiler::ir::{Merge, StateKind, Target};
use std::sync::Arc;

use super::{Branch, BranchDone, Machine, Phase};
use crate::effect::{ChatMessage, ChatRole, ModelReply, Request};
use crate::event::EventKind;
use crate::history::{Message, Role, Spend, ToolCall, Usage};

/// What a branch that runs again after an interruption is told first.
const RERUN_NOTE: &str = "[fuseraft: this branch was interrupted before it finished and runs again from its start. Changes it made before the interruption may already be in the work dir and in the change log: check before redoing them.]";

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// One message headed by the strategy, a section per branch in declaration order; a single
/// branch's output is used as is.
pub(crate) fn union(branches: &[(String, String)]) -> String {
    if branches.len() == 1 {
        return branches[0].1.clone();
    }
    let mut text = String::from("[fuseraft: parallel merge — union]");
    for (agent, output) in branches {
        text.push_str(&format!("\n--- {agent} ---\n{output}"));
    }
    text
}

/// Every branch ends on the same line (ignoring case): that line.
pub(crate) fn consensus(branches: &[(String, String)]) -> Option<String> {
    let first = last_line(&branches.first()?.1);
    branches
        .iter()
        .all(|(_, output)| last_line(output).eq_ignore_ascii_case(first))
        .then(|| first.to_string())
}

/// A strict majority of branches end on the same line: that line.
pub(crate) fn vote(branches: &[(String, String)]) -> Option<String> {
    let mut tally: Vec<(String, usize)> = Vec::new();
    for (_, output) in branches {
        let line = last_line(output).to_lowercase();
        match tally.iter_mut().find(|(seen, _)| *seen == line) {
            Some((_, count)) => *count += 1,
            None => tally.push((line, 1)),
        }
    }
    let (line, count) = tally.into_iter().max_by_key(|(_, count)| *count)?;
    (count * 2 > branches.len()).then(|| {
        branches
            .iter()
            .map(|(_, output)| last_line(output))
            .find(|candidate| candidate.to_lowercase() == line)
            .unwrap_or_default()
            .to_string()
    })
}

impl<'p> Machine<'p> {
    /// Starts the fork of the current state: one [`Branch`] per branch state with an agent
    /// that has not finished yet. A fork already under way (a resumed run) keeps the
    /// branches that finished; the others start again from their start, told so.
    pub(super) fn start_fork(&mut self) -> Request {
        let state = self.program.state(self.run.state);
        let StateKind::Fork(fork) = &state.kind else {
            return Request::Done;
        };
        let resumed = self.run.fork.is_some();
        let done = self.run.fork.get_or_insert_with(Vec::new).clone();
        let mut branches = Vec::new();
        let mut agents = Vec::new();
        for branch in &fork.branches {
            let Some(mut call) = self.branch_call(*branch) else {
                continue;
            };
            agents.push(call.agent.clone());
            let name = &self.program.state(*branch).name;
            if done.iter().any(|finished| &finished.state == name) {
                continue;
            }
            if resumed {
                call.messages.push(ChatMessage {
                    role: ChatRole::User,
                    content: RERUN_NOTE.into(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                });
            }
            let name = name.clone();
            let agent = call.agent.clone();
            self.cap_context(&agent, &mut call);
            let cap = self.tool_result_cap(&agent);
            branches.push(Branch::new(name, call, self.run.turn).with_tool_result_cap(cap));
        }
        let kind = EventKind::ForkStart {
            state: state.name.clone(),
            branches: agents,
            kept: resumed.then(|| done.iter().map(|d| d.agent.clone()).collect()),
        };
        self.emit(None, kind);
        if branches.is_empty() {
            self.fork_complete();
            return self.step();
        }
        self.phase = Phase::Fork;
        Request::Fork(branches)
    }

    /// The branch states of the current fork that have an agent (those that run).
    fn branch_states(&self) -> Vec<&'p str> {
        let StateKind::Fork(fork) = &self.program.state(self.run.state).kind else {
            return Vec::new();
        };
        fork.branches
            .iter()
            .map(|branch| self.program.state(*branch))
            .filter(|state| state.agent.is_some())
            .map(|state| state.name.as_str())
            .collect()
    }

    /// Whether every branch of the fork under way is back.
    pub(super) fn fork_finished(&self) -> bool {
        let done = self.run.fork.as_ref().map_or(0, Vec::len);
        done >= self.branch_states().len()
    }

    /// A branch finished: kept (in the run, so the next checkpoint keeps it) until the
    /// machine is stepped after the last one, which joins the fork.
    pub(super) fn on_branch(&mut self, done: BranchDone) {
        self.phase = Phase::Fork;
        let branches = self.branch_states();
        let finished = self.run.fork.get_or_insert_with(Vec::new);
        // A branch this fork does not have, or one already in, is a driver bug: ignored.
        if branches.contains(&done.state.as_str())
            && !finished.iter().any(|seen| seen.state == done.state)
        {
            finished.push(done);
        }
    }

    /// Every branch finished: their outputs merged in declaration order.
    pub(super) fn fork_complete(&mut self) {
        let StateKind::Fork(fork) = &self.program.state(self.run.state).kind else {
            self.phase = Phase::Ready;
            return;
        };
        let fork = fork.clone();
        let mut finished = self.run.fork.take().unwrap_or_default();
        let mut branches = Vec::new();
        let mut tool_calls = Vec::new();
        for branch in &fork.branches {
            let name = &self.program.state(*branch).name;
            let Some(at) = finished.iter().position(|done| &done.state == name) else {
                continue;
            };
            let done = finished.swap_remove(at);
            if !self.add_usage(done.usage, done.spend) {
                return;
            }
            tool_calls.extend(done.tool_calls);
            match done.error {
                None => {
                    let kind = EventKind::BranchEnd {
                        state: name.clone(),
                    };
                    self.emit(Some(&done.agent), kind);
                    branches.push((done.agent, done.text));
                }
                Some(error) => {
                    let kind = EventKind::BranchError {
                        error: error.clone(),
                    };
                    self.emit(Some(&done.agent), kind);
                    branches.push((done.agent, format!("[error: {error}]")));
                }
            }
        }
        let merged = match fork.merge {
            Merge::Union => Some(union(&branches)),
            Merge::Consensus => consensus(&branches).or_else(|| Some(union(&branches))),
            Merge::Vote => vote(&branches).or_else(|| Some(union(&branches))),
            Merge::Ranked | Merge::SemanticDiff => match fork.merge_agent {
                Some(agent) => {
                    let name = self.program.agent(agent).name.clone();
                    let mut call = self.model_call(&name);
                    let mut prompt = format!(
                        "Merge these {} results ({}):",
                        branches.len(),
                        fork.merge.as_str()
                    );
                    for (agent, output) in &branches {
                        prompt.push_str(&format!("\n--- {agent} ---\n{output}"));
                    }
                    call.messages.push(ChatMessage {
                        role: ChatRole::User,
                        content: prompt.into(),
                        tool_calls: Vec::new(),
                        tool_call_id: None,
                    });
                    call.tools = Vec::new().into();
                    self.phase = Phase::Merge(branches, tool_calls);
                    self.pending = Some(Request::Model(Arc::new(call)));
                    return;
                }
                None => Some(union(&branches)),
            },
        };
        self.join(
            fork.join,
            fork.merge.as_str(),
            merged.unwrap_or_default(),
            branches.len(),
            tool_calls,
        );
    }

    pub(super) fn on_merge(
        &mut self,
        branches: Vec<(String, String)>,
        tool_calls: Vec<ToolCall>,
        reply: Result<ModelReply, String>,
    ) {
        let StateKind::Fork(fork) = &self.program.state(self.run.state).kind else {
            return;
        };
        let fork = fork.clone();
        let merged = match reply {
            Ok(reply) if !reply.text.trim().is_empty() => {
                if !self.add_usage(reply.usage, Spend::of(reply.cost)) {
                    return;
                }
                reply.text
            }
            _ => union(&branches),
        };
        self.join(
            fork.join,
            fork.merge.as_str(),
            merged,
            branches.len(),
            tool_calls,
        );
    }

    /// The merged output joins the history as one `parallel` message carrying every
    /// branch's tool calls (in declaration order), so the session keeps what the branches did.
    fn join(
        &mut self,
        join: Target,
        strategy: &str,
        merged: String,
        n_branches: usize,
        tool_calls: Vec<ToolCall>,
    ) {
        self.run.history.push(Message {
            role: Role::Assistant,
            agent: "parallel".to_string(),
            content: merged.into(),
            tool_calls,
            turn: self.run.turn,
            usage: Usage::default(),
        });
        self.emit(
            None,
            EventKind::ForkJoin {
                strategy: strategy.to_string(),
                branches: n_branches,
            },
        );
        self.run.turn = self.run.turn.saturating_add(1);
        self.move_to(join, None, "parallel", None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(texts: &[&str]) -> Vec<(String, String)> {
        texts
            .iter()
            .enumerate()
            .map(|(idx, text)| (format!("A{idx}"), text.to_string()))
            .collect()
    }

    #[test]
    fn merges_follow_upstream() {
        assert_eq!(union(&outputs(&["only"])), "only");
        assert_eq!(
            union(&outputs(&["x", "y"])),
            "[fuseraft: parallel merge — union]\n--- A0 ---\nx\n--- A1 ---\ny"
        );
        assert_eq!(
            consensus(&outputs(&["a\nYES", "b\nyes\n"])),
            Some("YES".to_string())
        );
        assert_eq!(consensus(&outputs(&["YES", "NO"])), None);
        assert_eq!(
            vote(&outputs(&["YES", "no", "yes"])),
            Some("YES".to_string())
        );
        assert_eq!(vote(&outputs(&["YES", "NO"])), None);
    }
}
