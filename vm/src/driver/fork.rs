//! A fork's branches, run concurrently (one after another in a journaled run): each steps
//! its agent's whole tool loop (model call, tools through the permission authority and
//! sandbox, results fed back) until its reply is final. Finished branches go back to the machine one by one, so a checkpoint taken
//! between them keeps them; their events are handed out in declaration order.

use futures::stream::{FuturesUnordered, StreamExt};

use super::tool_calls::ToolRunner;
use super::Models;
use crate::effect::BranchRun;
use crate::effect::{Request, Response};
use crate::event::Event;

/// Runs one branch to its end.
async fn run_branch<M: Models>(
    mut branch: Box<dyn BranchRun>,
    models: &M,
    tools: &ToolRunner<'_>,
) -> Box<dyn BranchRun> {
    loop {
        let response = match branch.step() {
            Request::Model(call) => Response::Model(models.call(&call).await),
            Request::Tools { agent, turn, calls } => {
                let mut ran = tools.run(models, agent, turn, calls).await;
                branch.add_events(std::mem::take(&mut ran.events));
                ran.response()
            }
            _ => return branch,
        };
        branch.resume(response);
    }
}

type Running<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = (usize, Box<dyn BranchRun>)> + 'a>>;

/// A fork's branches under way.
pub(super) struct ForkRun<'a> {
    running: FuturesUnordered<Running<'a>>,
    agents: Vec<String>,
    events: Vec<Option<Vec<Event>>>,
    finished: Vec<bool>,
    /// Branches whose events were handed out.
    released: usize,
}

/// A branch that finished, with the events now due and who is done.
pub(super) struct Finished {
    pub branch: Box<dyn BranchRun>,
    /// The events of the branches now out in declaration order (a branch's events wait
    /// for those of the branches declared before it).
    pub events: Vec<Event>,
    /// The agents all of whose branches finished, and their sub-agents' queues.
    pub agents_done: Vec<String>,
}

impl<'a> ForkRun<'a> {
    /// Starts `branches` at once.
    pub(super) fn start<M: Models>(
        branches: Vec<Box<dyn BranchRun>>,
        models: &'a M,
        tools: &'a ToolRunner<'a>,
    ) -> ForkRun<'a> {
        let agents: Vec<String> = branches
            .iter()
            .map(|branch| branch.agent().to_string())
            .collect();
        // A journaled run (`Models::journal`) keeps its effects in the order they are made,
        // so that order must not depend on timing: its branches run one after another.
        let in_order = models.journal().is_some();
        let mut previous: Option<tokio::sync::oneshot::Receiver<()>> = None;
        let running = FuturesUnordered::new();
        for (index, branch) in branches.into_iter().enumerate() {
            let after = if in_order { previous.take() } else { None };
            let (done, next) = tokio::sync::oneshot::channel();
            previous = Some(next);
            let run: Running<'a> = Box::pin(async move {
                if let Some(after) = after {
                    let _ = after.await;
                }
                let branch = run_branch(branch, models, tools).await;
                let _ = done.send(());
                (index, branch)
            });
            running.push(run);
        }
        ForkRun {
            running,
            events: vec![None; agents.len()],
            finished: vec![false; agents.len()],
            agents,
            released: 0,
        }
    }

    /// The next branch to finish; `None` once all have.
    pub(super) async fn next(&mut self) -> Option<Finished> {
        let (index, mut branch) = self.running.next().await?;
        self.finished[index] = true;
        self.events[index] = Some(branch.drain_events());
        let mut events = Vec::new();
        while let Some(list) = self.events.get_mut(self.released).and_then(Option::take) {
            events.extend(list);
            self.released += 1;
        }
        let mut agents_done: Vec<String> = Vec::new();
        for agent in &self.agents {
            let all_done = self
                .agents
                .iter()
                .zip(&self.finished)
                .all(|(other, done)| other != agent || *done);
            if all_done && !agents_done.contains(agent) {
                agents_done.push(agent.clone());
                // Its sub-agents' replies were taken with its own: kept alike.
                agents_done.push(format!("{agent}{}", crate::machine::QUEUE_SUFFIX));
            }
        }
        Some(Finished {
            branch,
            events,
            agents_done,
        })
    }
}
