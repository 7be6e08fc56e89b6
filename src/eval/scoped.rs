//! `eval run --replay FILE`: one replay file for a whole suite. A queue named `AGENT` answers
//! that agent in every run; `CASE:AGENT` only in the runs of case CASE, and `CASE#N:AGENT`
//! only in its N-th run (from 1), each beating the wider one. Every run starts at the head of
//! its queues, so runs are independent of each other and of `--jobs`. The judge answers as
//! the agent `judge`.

use fuseraft_vm::replay::Script;

/// A queue's scope, read from its name.
#[derive(Debug, PartialEq, Eq)]
enum Scope<'a> {
    Every,
    Case(&'a str),
    Run(&'a str, u32),
}

/// The scope of a queue named `name` and the agent it answers, given the suite's case ids;
/// `None` for a scoped name whose case is not among them.
fn scope<'a>(name: &'a str, ids: &[&str]) -> Option<(Scope<'a>, &'a str)> {
    let Some((prefix, agent)) = name.split_once(':') else {
        return Some((Scope::Every, name));
    };
    let (id, run) = match prefix.split_once('#') {
        Some((id, run)) => (id, run.trim().parse::<u32>().ok().filter(|run| *run > 0)?),
        None => (prefix, 0),
    };
    if !ids.contains(&id) {
        return None;
    }
    Some((
        if run == 0 {
            Scope::Case(id)
        } else {
            Scope::Run(id, run)
        },
        agent,
    ))
}

/// The names of queues scoped to no case of the suite (a typo in a case id).
pub fn unknown_scopes(script: &Script, ids: &[&str]) -> Vec<String> {
    script
        .queues
        .iter()
        .filter(|(name, _)| name.contains(':') && scope(name, ids).is_none())
        .map(|(name, _)| name.clone())
        .collect()
}

/// The script of run `run` (from 1) of case `id`: each agent's narrowest queue, named by
/// the agent.
pub fn for_run(script: &Script, ids: &[&str], id: &str, run: u32) -> Script {
    let rank = |scope: &Scope<'_>| match scope {
        Scope::Run(case, n) if *case == id && *n == run => Some(0),
        Scope::Case(case) if *case == id => Some(1),
        Scope::Every => Some(2),
        _ => None,
    };
    let mut picked: Vec<(usize, &str, usize)> = Vec::new();
    for (idx, (name, _)) in script.queues.iter().enumerate() {
        let Some((scope, agent)) = scope(name, ids) else {
            continue;
        };
        let Some(rank) = rank(&scope) else {
            continue;
        };
        match picked.iter_mut().find(|(_, known, _)| *known == agent) {
            Some(slot) if rank < slot.0 => *slot = (rank, agent, idx),
            Some(_) => {}
            None => picked.push((rank, agent, idx)),
        }
    }
    Script {
        queues: picked
            .into_iter()
            .map(|(_, agent, idx)| (agent.to_string(), script.queues[idx].1.clone()))
            .collect(),
        on_exhausted: script.on_exhausted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fuseraft_vm::replay::OnExhausted;
    use serde_json::json;

    fn script() -> Script {
        Script::from_json(json!({
            "replies": {
                "Writer": ["everyone"],
                "hello:Writer": ["case hello"],
                "hello#2:Writer": ["run 2 of hello"],
                "judge": ["PASS"],
                "Planner/sub_agent": ["a sub-agent's queue"],
                "typo:Writer": ["nobody"],
            }
        }))
        .expect("a script")
    }

    fn first(script: &Script, agent: &str) -> String {
        let queue = script.queues.iter().find(|(name, _)| name == agent);
        queue.expect("the agent's queue").1[0].text.clone()
    }

    #[test]
    fn each_run_gets_its_narrowest_queue() {
        let ids = ["hello", "other"];
        let script = script();
        assert_eq!(
            first(&for_run(&script, &ids, "hello", 1), "Writer"),
            "case hello"
        );
        assert_eq!(
            first(&for_run(&script, &ids, "hello", 2), "Writer"),
            "run 2 of hello"
        );
        assert_eq!(
            first(&for_run(&script, &ids, "other", 2), "Writer"),
            "everyone"
        );
        let run = for_run(&script, &ids, "other", 1);
        assert_eq!(first(&run, "judge"), "PASS");
        assert_eq!(first(&run, "Planner/sub_agent"), "a sub-agent's queue");
        assert_eq!(run.queues.len(), 3);
        assert_eq!(run.on_exhausted, OnExhausted::Error);
        assert_eq!(
            unknown_scopes(&script, &ids),
            vec!["typo:Writer".to_string()]
        );
    }
}
