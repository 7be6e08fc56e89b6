//! Forks: starting the branches, keeping those that finish, and their merge: `union`, `consensus`, `vote`, and `ranked`/`semantic_diff`
//! through the merge agent (falling back to `union` when it is missing or fails). A
//! `mapreduce` fork runs its branch once per item of the splitter's list (`per_item`).

use fuseraft_compiler::ir::{Fork, Merge, StateId, StateKind, Target};
use serde_json::Value as Json;
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

/// One run of a fork's branch: the branch state, the name it goes by (the state's, or
/// `State #N` for the Nth item of a `mapreduce` list) and the item it is given.
pub(super) struct BranchRun {
    pub state: StateId,
    pub name: String,
    pub item: Option<String>,
}

/// The items of a `mapreduce` splitter's reply: the JSON list at `path` in the object the
/// reply holds (extracted as structured routing extracts it), or the reply itself when it
/// is a JSON list. A string item is its text, any other its JSON.
pub(super) fn items(reply: &str, path: &[String]) -> Option<Vec<String>> {
    let list = match serde_json::from_str::<Json>(reply.trim()) {
        Ok(Json::Array(list)) => list,
        _ => {
            let mut value = fuseraft_compiler::ir::extract_json(reply)?;
            for segment in path {
                value = value.as_object_mut()?.remove(segment)?;
            }
            match value {
                Json::Array(list) => list,
                _ => return None,
            }
        }
    };
    let items: Vec<String> = list
        .into_iter()
        .map(|item| match item {
            Json::String(text) => text,
            other => other.to_string(),
        })
        .collect();
    (!items.is_empty()).then_some(items)
}

/// A value's lines that say something, `#` lines left out (tama `chain-of-verification`'s
/// claims).
fn lines(value: &str) -> Vec<String> {
    value
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// A finished branch's `finish` value, else its text.
fn finish_value(done: &BranchDone) -> String {
    done.tool_calls
        .iter()
        .rev()
        .find(|call| call.is("finish"))
        .map(|call| call.arg("value").unwrap_or_default().to_string())
        .unwrap_or_else(|| done.text.clone())
}

/// tama `parallel`: a JSON object of each branch's value by its agent.
fn object(branches: &[(String, String)]) -> String {
    let map: serde_json::Map<String, Json> = branches
        .iter()
        .map(|(agent, value)| (agent.clone(), Json::String(value.clone())))
        .collect();
    Json::Object(map).to_string()
}

/// Each branch's value under its head.
fn headed(branches: &[(String, String)], head: impl Fn(&str) -> String) -> String {
    let parts: Vec<String> = branches
        .iter()
        .map(|(label, value)| format!("{}\n{value}", head(label)))
        .collect();
    parts.join("\n\n")
}

/// `call`'s input (a tama step's only user message) replaced by `input`.
fn set_input(call: &mut crate::effect::ModelCall, input: String) {
    match call
        .messages
        .iter_mut()
        .rev()
        .find(|message| message.role == ChatRole::User)
    {
        Some(message) => message.content = input.into(),
        None => call.messages.push(ChatMessage {
            role: ChatRole::User,
            content: input.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }),
    }
}

/// The state a branch run's name stands for: `Mapper #2` → `Mapper`.
pub(crate) fn branch_state_name(run: &str) -> &str {
    match run.rsplit_once(" #") {
        Some((state, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => state,
        _ => run,
    }
}

impl<'p> Machine<'p> {
    /// The runs of `fork`'s branches that have an agent, in declaration order (for a
    /// `mapreduce` fork, its branch once per item of the newest reply's list, or once on
    /// the whole reply when it holds no list).
    pub(super) fn branch_runs(&self, fork: &Fork) -> Vec<BranchRun> {
        let with_agent = fork
            .branches
            .iter()
            .filter(|branch| self.program.state(**branch).agent.is_some());
        let tama = self.program.state(self.run.state).step.is_some();
        let listed = if tama {
            // A tama fan-out splits the value routed to it; without a list, the whole value
            // is the one item (`plan-execute`'s plan that is not a JSON array).
            let value = self.run.value.clone().unwrap_or_default();
            let listed = match (&fork.per_item, fork.per_line) {
                (_, true) => Some(lines(&value)),
                (Some(path), false) => Some(items(&value, path).unwrap_or_else(|| vec![value])),
                (None, false) => None,
            };
            listed.filter(|items| !items.is_empty())
        } else {
            fork.per_item.as_ref().and_then(|path| {
                let reply = self
                    .run
                    .history
                    .iter()
                    .rev()
                    .find(|message| message.role == Role::Assistant)?;
                items(&reply.content, path)
            })
        };
        let mut runs = Vec::new();
        for &state in with_agent {
            let name = &self.program.state(state).name;
            match &listed {
                Some(items) => runs.extend(items.iter().enumerate().map(|(idx, item)| BranchRun {
                    state,
                    name: format!("{name} #{}", idx + 1),
                    item: Some(item.clone()),
                })),
                None => runs.push(BranchRun {
                    state,
                    name: name.clone(),
                    item: None,
                }),
            }
        }
        runs
    }

    /// Starts the fork of the current state: one [`Branch`] per branch run that has not
    /// finished yet. A fork already under way (a resumed run) keeps the branches that
    /// finished; the others start again from their start, told so.
    pub(super) fn start_fork(&mut self) -> Request {
        let state = self.program.state(self.run.state);
        let StateKind::Fork(fork) = &state.kind else {
            return Request::Done;
        };
        let resumed = self.run.fork.is_some();
        let tama = state.step.is_some();
        if tama && !resumed {
            let input = self
                .run
                .value
                .clone()
                .unwrap_or_else(|| self.run.task.clone());
            self.record_step(self.run.state, input, String::new());
        }
        self.start_branches(fork, resumed, tama)
    }

    /// A sequential fork's branch run finished and others wait: the next one starts.
    pub(super) fn next_sequential(&mut self) -> Option<Request> {
        let state = self.program.state(self.run.state);
        let StateKind::Fork(fork) = &state.kind else {
            return None;
        };
        if !fork.sequential || self.fork_finished() {
            return None;
        }
        Some(self.start_branches(fork, false, state.step.is_some()))
    }

    /// Starts the fork's branch runs that have not finished (a sequential fork's next one,
    /// given what the earlier runs returned).
    fn start_branches(&mut self, fork: &'p Fork, resumed: bool, tama: bool) -> Request {
        let state = self.program.state(self.run.state);
        let done = self.run.fork.get_or_insert_with(Vec::new).clone();
        let runs = self.branch_runs(fork);
        if let Some(path) = fork
            .per_item
            .as_ref()
            .filter(|_| !tama && runs.iter().all(|run| run.item.is_none()))
        {
            let message = format!(
                "the splitter's reply holds no JSON list at `{}`: the mapper runs once, on the whole reply",
                path.join(".")
            );
            self.emit(
                None,
                EventKind::Warning {
                    message,
                    reason: Some("mapreduce_no_items".to_string()),
                },
            );
        }
        let count = runs.len();
        let first_start = done.is_empty() || resumed;
        let earlier = fork
            .sequential
            .then(|| self.earlier(&runs, &done))
            .filter(|text| !text.is_empty());
        let mut branches = Vec::new();
        let mut agents = Vec::new();
        for run in runs {
            let Some(mut call) = self.branch_call(run.state) else {
                continue;
            };
            agents.push(call.agent.to_string());
            let name = &run.name;
            if done.iter().any(|finished| &finished.state == name) {
                continue;
            }
            if fork.sequential && !branches.is_empty() {
                continue;
            }
            if let Some(template) = tama
                .then(|| self.program.state(run.state).step.as_ref())
                .flatten()
                .and_then(|step| step.input.as_ref())
            {
                let fill = super::steps::Fill {
                    item: run.item.as_deref(),
                    earlier: earlier.as_deref(),
                    operator: None,
                };
                let input = self.fill(template, &fill);
                set_input(&mut call, input);
            } else if let Some(item) = &run.item {
                let position = name.rsplit_once(" #").map_or("1", |(_, n)| n);
                call.messages.push(ChatMessage {
                    role: ChatRole::User,
                    content: format!("[fuseraft: item {position} of {count} from the splitter; handle this item only]\n{item}").into(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                });
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
            let agent = call.agent.to_string();
            self.cap_context(&agent, &mut call);
            let cap = self.tool_result_cap(&agent);
            let branch = Branch::new(name, call, self.run.turn).with_tool_result_cap(cap);
            branches.push(Box::new(branch) as Box<dyn crate::effect::BranchRun>);
        }
        if first_start {
            let kind = EventKind::ForkStart {
                state: state.name.clone(),
                branches: agents,
                kept: resumed.then(|| done.iter().map(|d| d.agent.clone()).collect()),
            };
            self.emit(None, kind);
        }
        if branches.is_empty() {
            self.fork_complete();
            return self.step();
        }
        self.phase = Phase::Fork;
        Request::Fork(branches)
    }

    /// The names of the current fork's branch runs (those that run).
    fn branch_states(&self) -> Vec<String> {
        let StateKind::Fork(fork) = &self.program.state(self.run.state).kind else {
            return Vec::new();
        };
        self.branch_runs(fork)
            .into_iter()
            .map(|run| run.name)
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
        if branches.contains(&done.state) && !finished.iter().any(|seen| seen.state == done.state) {
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
        let runs = self.branch_runs(&fork);
        let mut finished = self.run.fork.take().unwrap_or_default();
        let mut branches = Vec::new();
        let mut tool_calls = Vec::new();
        for run in &runs {
            let name = &run.name;
            let Some(at) = finished.iter().position(|done| &done.state == name) else {
                continue;
            };
            // A `mapreduce` run's output is headed by its item's name, not its agent's.
            let label = |agent: String| {
                if run.item.is_some() {
                    name.clone()
                } else {
                    agent
                }
            };
            let done = finished.swap_remove(at);
            if !self.add_usage(done.usage, done.spend) {
                return;
            }
            // A tama branch returns its `finish` value (its text without one).
            let text = match fork.merge {
                Merge::Object | Merge::Transcript | Merge::Items => finish_value(&done),
                _ => done.text.clone(),
            };
            let label = |agent: String| match fork.merge {
                Merge::Items => match &run.item {
                    Some(item) => format!("Item: {item}"),
                    None => name.rsplit('/').next().unwrap_or(name).to_string(),
                },
                _ => label(agent),
            };
            tool_calls.extend(done.tool_calls);
            match done.error {
                None => {
                    let kind = EventKind::BranchEnd {
                        state: name.clone(),
                    };
                    self.emit(Some(&done.agent), kind);
                    branches.push((label(done.agent), text));
                }
                Some(error) => {
                    let kind = EventKind::BranchError {
                        error: error.clone(),
                    };
                    self.emit(Some(&done.agent), kind);
                    branches.push((label(done.agent), format!("[error: {error}]")));
                }
            }
        }
        let merged = match fork.merge {
            Merge::Union => Some(union(&branches)),
            Merge::Consensus => consensus(&branches).or_else(|| Some(union(&branches))),
            Merge::Vote => vote(&branches).or_else(|| Some(union(&branches))),
            Merge::Object => Some(object(&branches)),
            Merge::Transcript => Some(headed(&branches, |agent| format!("[{agent}]:"))),
            Merge::Items => Some(headed(&branches, |label| format!("[{label}]"))),
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
        if self.program.state(self.run.state).step.is_some() {
            // A tama fan-out's value is the merged text, kept for the steps after it.
            let input = self
                .run
                .steps
                .iter()
                .find(|record| record.state == self.program.state(self.run.state).name)
                .map(|record| record.input.clone())
                .unwrap_or_default();
            let merged = self
                .run
                .history
                .last()
                .map(|message| message.content.to_string())
                .unwrap_or_default();
            self.record_step(self.run.state, input, merged.clone());
            self.run.value = Some(merged);
        }
        self.move_to(join, None, "parallel", None);
    }

    /// What a sequential fork's finished runs returned, each headed by its item.
    fn earlier(&self, runs: &[BranchRun], done: &[BranchDone]) -> String {
        let mut out = String::new();
        for run in runs {
            let Some(finished) = done.iter().find(|d| d.state == run.name) else {
                continue;
            };
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            let head = run.item.as_deref().unwrap_or(&run.name);
            out.push_str(&format!("[{head}]\n{}", finish_value(finished)));
        }
        out
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
    fn a_splitters_items_are_its_list_at_the_path_or_the_reply_itself() {
        let path = |text: &str| -> Vec<String> { text.split('.').map(str::to_string).collect() };
        assert_eq!(
            items(r#"Here: {"items": ["a", {"b": 1}, 2]}"#, &path("items")),
            Some(vec![
                "a".to_string(),
                r#"{"b":1}"#.to_string(),
                "2".to_string()
            ])
        );
        assert_eq!(
            items(
                "```json\n{\"work\": {\"files\": [\"x\"]}}\n```",
                &path("work.files")
            ),
            Some(vec!["x".to_string()])
        );
        assert_eq!(
            items(r#"["x", "y"]"#, &path("items")),
            Some(vec!["x".into(), "y".into()])
        );
        // No list there, an empty list, or no JSON: no items.
        assert_eq!(items(r#"{"items": "a, b"}"#, &path("items")), None);
        assert_eq!(items(r#"{"items": []}"#, &path("items")), None);
        assert_eq!(items("1. a\n2. b", &path("items")), None);
    }

    #[test]
    fn a_runs_name_stands_for_its_state() {
        assert_eq!(branch_state_name("Mapper #12"), "Mapper");
        assert_eq!(branch_state_name("Mapper"), "Mapper");
        assert_eq!(branch_state_name("Issue #x"), "Issue #x");
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
