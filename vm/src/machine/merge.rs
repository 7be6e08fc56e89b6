//! Fork branches and their merge: `union`, `consensus`, `vote`, and `ranked`/`semantic_diff`
//! through the merge agent (falling back to `union` when it is missing or fails).

use fuseraft_compiler::ir::{Merge, StateKind, Target};
use serde_json::json;

use super::{Machine, Phase};
use crate::effect::{ChatMessage, ChatRole, ModelCall, ModelReply, Request};
use crate::history::{Message, Role, Usage};

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

impl Machine<'_> {
    pub(super) fn on_fork(&mut self, replies: Vec<Result<ModelReply, String>>) {
        let StateKind::Fork(fork) = &self.program.state(self.run.state).kind else {
            self.phase = Phase::Ready;
            return;
        };
        let fork = fork.clone();
        let mut branches = Vec::new();
        for (branch, reply) in fork.branches.iter().zip(replies) {
            let agent = self
                .program
                .state(*branch)
                .agent
                .map(|id| self.program.agent(id).name.clone())
                .unwrap_or_default();
            match reply {
                Ok(reply) => {
                    if !self.add_usage(reply.usage) {
                        return;
                    }
                    self.emit(
                        Some(&agent),
                        "branch_end",
                        json!({"state": self.program.state(*branch).name}),
                    );
                    branches.push((agent, reply.text));
                }
                Err(error) => {
                    self.emit(Some(&agent), "branch_error", json!({"error": error}));
                    branches.push((agent, format!("[error: {error}]")));
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
                        content: prompt,
                        tool_calls: Vec::new(),
                        tool_call_id: None,
                    });
                    call.tools.clear();
                    self.phase = Phase::Merge(branches);
                    self.pending = Some(Request::Model(ModelCall { ..call }));
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
        );
    }

    pub(super) fn on_merge(
        &mut self,
        branches: Vec<(String, String)>,
        reply: Result<ModelReply, String>,
    ) {
        let StateKind::Fork(fork) = &self.program.state(self.run.state).kind else {
            return;
        };
        let fork = fork.clone();
        let merged = match reply {
            Ok(reply) if !reply.text.trim().is_empty() => {
                if !self.add_usage(reply.usage) {
                    return;
                }
                reply.text
            }
            _ => union(&branches),
        };
        self.join(fork.join, fork.merge.as_str(), merged, branches.len());
    }

    fn join(&mut self, join: Target, strategy: &str, merged: String, n_branches: usize) {
        self.run.history.push(Message {
            role: Role::Assistant,
            agent: "parallel".to_string(),
            content: merged,
            tool_calls: Vec::new(),
            turn: self.run.turn,
            usage: Usage::default(),
        });
        self.emit(
            None,
            "fork_join",
            json!({"strategy": strategy, "branches": n_branches}),
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
