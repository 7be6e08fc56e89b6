//! tama's multi-step patterns as states: a state per step file, the text each step is given
//! as a step template, fan-outs as forks (`research/tama.md`, "Patterns").
//!
//! A pattern lowers to a [`Fragment`] whose open exits end it; an enclosing fsm splices them
//! with the transitions of the pattern's state, routing on the key the pattern returns: a
//! fixed key (`done`, `parallel`) is routed once, here; a key a step chooses at run time
//! (`scatter`'s reduce, `debate`'s judge, `human`) is routed by the whole table.

use std::collections::HashMap;
use std::path::Path;

use super::tama::{exit, value_agent, Fragment, TamaLowering};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{
    Agent, AgentId, Effect, Fork, Guard, Merge, Part, StateId, StateKind, Step, StepKey, Target,
    Template, Trigger,
};
use crate::source::Span;
use crate::syntax::tama::{read_step_md, AgentMd};
use crate::syntax::Loader;

/// What `scatter`'s map step is told, after the agent's own instructions.
const SCATTER_MAP: &str = "\n\nWhen you have split the task, call `finish` with `key` set to `parallel` and `value` set to a JSON array of strings, one work item each.";

/// The step files each pattern needs beside its `AGENT.md`.
pub(super) fn required_steps(pattern: &str) -> &'static [&'static str] {
    match pattern {
        "scatter" => &["reduce"],
        "critic" => &["draft", "critique", "refine"],
        "reflexion" => &["act", "reflect"],
        "constitutional" => &["critique", "revise"],
        "chain-of-verification" => &["verify", "check", "revise"],
        "plan-execute" => &["execute", "verify"],
        "best-of-n" => &["judge"],
        "human" => &["resume"],
        _ => &[],
    }
}

/// Reads the step files `name`'s pattern needs (into `steps`, by `agent/step`) and reports
/// those missing and the pattern fields that are absent.
pub(super) fn collect_steps(
    loader: &mut Loader<'_>,
    root: &Path,
    name: &str,
    md: &AgentMd,
    steps: &mut HashMap<String, AgentMd>,
) {
    let Some(pattern) = &md.pattern else { return };
    let mut missing = Vec::new();
    for step in required_steps(&pattern.value) {
        let path = root.join("agents").join(name).join(format!("{step}.md"));
        if !loader.reader.exists(&path) {
            missing.push(format!("`{step}.md`"));
            continue;
        }
        let Some(file) = loader.read(&path, None, "step file") else {
            continue;
        };
        if let Some(step_md) = read_step_md(file, loader) {
            steps.insert(format!("{name}/{step}"), step_md);
        }
    }
    if !missing.is_empty() {
        // tama refuses to load such an agent; fuseraft runs it as one react state, so that
        // a project that loads elsewhere still compiles, and says so.
        loader.diags.push(
            Diagnostic::warning(
                Code::MissingFile,
                format!(
                    "agent `{name}`: missing required files: {}; it runs as one react state",
                    missing.join(", ")
                ),
            )
            .with_label(
                pattern.span,
                format!("`{}` runs these step files", pattern.value),
            )
            .with_help(format!(
                "add them beside `agents/{name}/AGENT.md` (a step file's front matter is optional); tama itself refuses to load this agent"
            )),
        );
    }
    let needs: &[&str] = match pattern.value.as_str() {
        "scatter" => &["worker"],
        "parallel" => &["workers"],
        "debate" => &["agents", "rounds", "judge"],
        "best-of-n" => &["n"],
        _ => &[],
    };
    for key in needs {
        // A key that is there with a bad value is reported as such, not as missing.
        if !md.keys.iter().any(|present| present == key) {
            loader.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    format!("`{}` agent `{name}` has no `{key}`", pattern.value),
                )
                .with_label(md.span, format!("add `{key}:` to the front matter")),
            );
        }
    }
}

fn text(text: &str) -> Part {
    Part::Text(text.to_string())
}

fn template(parts: Vec<Part>) -> Option<Template> {
    Some(Template::new(parts))
}

impl TamaLowering<'_, '_> {
    /// The fragment of the multi-step pattern agent `name`, lowered under the state name
    /// `full`; `None` for `react`, `oneshot` and `fsm` and for an agent missing step files.
    pub(super) fn pattern(
        &mut self,
        name: &str,
        md: &AgentMd,
        full: &str,
        span: Span,
    ) -> Option<Fragment> {
        if !self.pattern_ready(name, md) {
            return None;
        }
        let pattern = md.pattern.as_ref()?.value.clone();
        let fragment = match pattern.as_str() {
            "critic" => self.critic(name, full, span),
            "constitutional" => self.constitutional(name, full, span),
            "chain-of-verification" => self.chain_of_verification(name, full, span),
            "plan-execute" => self.plan_execute(name, full, span),
            "reflexion" => {
                let max = md.max_iter.as_ref().map_or(4, |max| max.value.max(1));
                self.reflexion(name, full, span, max)
            }
            "parallel" => self.parallel(md, full, span),
            "scatter" => self.scatter(name, md, full, span)?,
            "debate" => self.debate(md, full, span)?,
            "best-of-n" => {
                let n = md.n.as_ref().map_or(1, |n| n.value.max(1));
                self.best_of_n(name, full, span, n)
            }
            "human" => self.human(name, full, span),
            _ => return None,
        };
        Some(Fragment {
            pattern: Some(pattern),
            ..fragment
        })
    }

    /// Whether `name` is a multi-step pattern with its step files and the fields it needs
    /// (else it runs as one state, as reported).
    pub(super) fn pattern_ready(&self, name: &str, md: &AgentMd) -> bool {
        let Some(pattern) = md.pattern.as_ref().filter(|_| is_multi_step(md)) else {
            return false;
        };
        let fields = match pattern.value.as_str() {
            "scatter" => md.worker.is_some(),
            "debate" => md.judge.is_some(),
            _ => true,
        };
        fields
            && required_steps(&pattern.value)
                .iter()
                .all(|step| self.steps.contains_key(&format!("{name}/{step}")))
    }

    /// A state of the pattern.
    fn step_state(
        &mut self,
        full: &str,
        agent: Option<AgentId>,
        kind: StateKind,
        span: Span,
        step: Step,
    ) -> StateId {
        let id = self.builder.add_state(full, agent, kind, Some(span));
        self.builder.state_mut(id).step = Some(step);
        id
    }

    /// A state running the step file `step` of `owner`: a `react` step offers `finish` and
    /// routes on its key unless `key` fixes it; a oneshot step returns `done`.
    fn step_file(
        &mut self,
        owner: &str,
        step: &str,
        full: &str,
        span: Span,
        key: Option<StepKey>,
        input: Option<Template>,
    ) -> StateId {
        let (agent, react) = self.step_agent(owner, step);
        let key = key.unwrap_or(if react {
            StepKey::Finish
        } else {
            StepKey::Fixed("done".to_string())
        });
        let step = Step { input, key, react };
        self.step_state(full, Some(agent), StateKind::Turn, span, step)
    }

    /// A state running the agent `name` itself (its body as the instructions).
    fn agent_step(
        &mut self,
        name: &str,
        full: &str,
        span: Span,
        key: StepKey,
        react: bool,
        input: Option<Template>,
    ) -> StateId {
        let agent = self.agent(name);
        let step = Step { input, key, react };
        self.step_state(full, Some(agent), StateKind::Turn, span, step)
    }

    /// The IR agent of a step file, `owner/step`, and whether it is a `react` step.
    fn step_agent(&mut self, owner: &str, step: &str) -> (AgentId, bool) {
        let name = format!("{owner}/{step}");
        let md = self.steps.get(&name);
        let react = md.is_some_and(|md| {
            md.pattern.as_ref().is_some_and(|p| p.value == "react") || !md.uses.is_empty()
        });
        if let Some(id) = self.agent_ids.get(&name) {
            return (*id, react);
        }
        let own_model = md.filter(|md| md.model_name.is_some() || md.model_role.is_some());
        let model = match own_model {
            Some(md) => self.model(md),
            None => self.loaded(owner).and_then(|owner| self.model(owner)),
        };
        // `human`'s resume step runs with no skills.
        let uses = match (md, step) {
            (Some(md), step) if step != "resume" => md.uses.clone(),
            _ => Vec::new(),
        };
        let tools = self.skill_tools(&uses);
        let block = self.skills_block(&uses);
        let agent = Agent {
            model,
            instructions: md.map(|md| md.body.clone() + &block).unwrap_or_default(),
            tools,
            pattern: Some(if react { "react" } else { "oneshot" }.to_string()),
            loc: md.and_then(|md| self.builder.loc(md.span)),
            ..value_agent(&name)
        };
        (self.push_agent(agent), react)
    }

    /// A fork of `branches` that joins nowhere yet (`end`).
    fn fork_state(
        &mut self,
        full: &str,
        span: Span,
        branches: Vec<StateId>,
        fork: Fork,
    ) -> StateId {
        let fork = Fork { branches, ..fork };
        let step = Step::default();
        self.step_state(full, None, StateKind::Fork(fork), span, step)
    }

    /// A branch running the worker agent `worker` as one `react` loop.
    fn worker_branch(
        &mut self,
        worker: &str,
        full: &str,
        span: Span,
        input: Option<Template>,
    ) -> StateId {
        if let Some(pattern) = self
            .loaded(worker)
            .and_then(|md| md.pattern.as_ref())
            .filter(|p| p.value != "react" && p.value != "oneshot")
        {
            let diag = Diagnostic::warning(
                Code::UnsupportedFeature,
                format!(
                    "worker `{worker}` is a `{}` agent; a worker runs as one react loop on its body",
                    pattern.value
                ),
            )
            .with_label(span, "its workers run here")
            .with_help("make the worker a `react` or `oneshot` agent, or use it as an fsm state");
            self.builder.diags.push(diag);
        }
        let agent = self.has_agent(worker).then(|| self.agent(worker));
        if agent.is_none() {
            self.builder.diags.push(
                Diagnostic::error(
                    Code::UnknownAgent,
                    format!("agent `{worker}` not found (checked `agents/{worker}/AGENT.md`)"),
                )
                .with_label(span, "named as a worker of this agent"),
            );
        }
        let oneshot = self
            .loaded(worker)
            .and_then(|md| md.pattern.as_ref())
            .is_some_and(|p| p.value == "oneshot");
        let step = Step {
            input,
            key: StepKey::Finish,
            react: !oneshot,
        };
        self.step_state(full, agent, StateKind::Turn, span, step)
    }

    fn link(&mut self, from: StateId, to: StateId) {
        let state = self.builder.state_mut(from);
        state.exits.push(exit(Trigger::Always, Target::State(to)));
    }

    fn set_join(&mut self, fork: StateId, to: Target) {
        if let StateKind::Fork(fork) = &mut self.builder.state_mut(fork).kind {
            fork.join = to;
        }
    }

    /// An exit of `state` that ends the pattern returning `key` (routed statically).
    fn end_fixed(
        &mut self,
        ends: &mut Fragment,
        state: StateId,
        trigger: Trigger,
        key: &str,
        effects: Vec<Effect>,
    ) {
        let mut out = exit(trigger, Target::End);
        out.effects = effects;
        let exits = &mut self.builder.state_mut(state).exits;
        exits.push(out);
        let idx = exits.len() - 1;
        ends.open.push((state, idx));
        ends.fixed.push((state, idx, key.to_string()));
    }

    /// An exit of `state` that ends the pattern with the key its step chose.
    fn end_any(&mut self, ends: &mut Fragment, state: StateId) {
        let exits = &mut self.builder.state_mut(state).exits;
        exits.push(exit(Trigger::AnyKey, Target::End));
        ends.open.push((state, exits.len() - 1));
    }

    /// draft → critique → refine (given the task and the critique); returns `done`.
    fn critic(&mut self, name: &str, full: &str, span: Span) -> Fragment {
        let draft = self.step_file(name, "draft", full, span, None, None);
        let critique_name = format!("{full}/critique");
        let critique = self.step_file(name, "critique", &critique_name, span, None, None);
        let input = template(vec![
            text("Original task:\n"),
            Part::Input(vec![draft]),
            text("\n\nCritique:\n"),
            Part::Value(vec![critique]),
        ]);
        let done = Some(StepKey::Fixed("done".into()));
        let refine = self.step_file(name, "refine", &format!("{full}/refine"), span, done, input);
        self.link(draft, critique);
        self.link(critique, refine);
        let mut ends = Fragment {
            entry: draft,
            ..Fragment::default()
        };
        self.end_fixed(&mut ends, refine, Trigger::Always, "done", Vec::new());
        ends
    }

    /// generate (the body, one call) → critique → revise (given request, draft, critique).
    fn constitutional(&mut self, name: &str, full: &str, span: Span) -> Fragment {
        let done = StepKey::Fixed("done".into());
        let generate = self.agent_step(name, full, span, done.clone(), false, None);
        let critique_name = format!("{full}/critique");
        let critique = self.step_file(name, "critique", &critique_name, span, None, None);
        let input = template(vec![
            text("Request:\n"),
            Part::Input(vec![generate]),
            text("\n\nDraft:\n"),
            Part::Value(vec![generate]),
            text("\n\nCritique:\n"),
            Part::Value(vec![critique]),
        ]);
        let revise_name = format!("{full}/revise");
        let revise = self.step_file(name, "revise", &revise_name, span, Some(done), input);
        self.link(generate, critique);
        self.link(critique, revise);
        let mut ends = Fragment {
            entry: generate,
            ..Fragment::default()
        };
        self.end_fixed(&mut ends, revise, Trigger::Always, "done", Vec::new());
        ends
    }

    /// generate → verify (claims, one a line) → check each claim in turn → revise.
    fn chain_of_verification(&mut self, name: &str, full: &str, span: Span) -> Fragment {
        let done = StepKey::Fixed("done".into());
        let generate = self.agent_step(name, full, span, done.clone(), false, None);
        let verify = self.step_file(name, "verify", &format!("{full}/verify"), span, None, None);
        let check_name = format!("{full}/check/claim");
        let claim = self.step_file(
            name,
            "check",
            &check_name,
            span,
            None,
            template(vec![Part::Item]),
        );
        let fork = Fork {
            per_line: true,
            sequential: true,
            ..items_fork()
        };
        let checks = self.fork_state(&format!("{full}/check"), span, vec![claim], fork);
        let input = template(vec![
            text("Original response:\n"),
            Part::Value(vec![generate]),
            text("\n\nVerification results:\n"),
            Part::Value(vec![checks]),
        ]);
        let revise_name = format!("{full}/revise");
        let revise = self.step_file(name, "revise", &revise_name, span, Some(done), input);
        self.link(generate, verify);
        self.link(verify, checks);
        self.set_join(checks, Target::State(revise));
        let mut ends = Fragment {
            entry: generate,
            ..Fragment::default()
        };
        self.end_fixed(&mut ends, revise, Trigger::Always, "done", Vec::new());
        ends
    }

    /// plan → execute each step in turn (given the steps done so far) → verify; up to three
    /// cycles, a verdict other than DONE re-planning with it. Returns the results, `done`.
    fn plan_execute(&mut self, name: &str, full: &str, span: Span) -> Fragment {
        let done = StepKey::Fixed("done".into());
        let plan = self.agent_step(name, full, span, done.clone(), false, None);
        let step_input = template(vec![
            text("Task:\n"),
            Part::Input(vec![plan]),
            text("\n\nCompleted steps:\n"),
            Part::Earlier,
            text("\n\nCurrent step:\n"),
            Part::Item,
        ]);
        let step_name = format!("{full}/execute/step");
        let step = self.step_file(name, "execute", &step_name, span, None, step_input);
        let fork = Fork {
            per_item: Some(Vec::new()),
            sequential: true,
            ..items_fork()
        };
        let execute = self.fork_state(&format!("{full}/execute"), span, vec![step], fork);
        let input = template(vec![
            text("Task:\n"),
            Part::Input(vec![plan]),
            text("\n\nResults:\n"),
            Part::Value(vec![execute]),
        ]);
        let verdict = Some(StepKey::Verdict);
        let verify = self.step_file(
            name,
            "verify",
            &format!("{full}/verify"),
            span,
            verdict,
            input,
        );
        let replan_input = template(vec![
            text("Task:\n"),
            Part::Input(vec![plan]),
            text("\n\nResults so far:\n"),
            Part::Value(vec![execute]),
            text("\n\nFeedback:\n"),
            Part::Value(vec![verify]),
        ]);
        let replan = self.agent_step(
            name,
            &format!("{full}/replan"),
            span,
            done,
            false,
            replan_input,
        );
        self.link(plan, execute);
        self.link(replan, execute);
        self.set_join(execute, Target::State(verify));
        let cycles = self.builder.add_counter(format!("{full}/cycles"));
        let results = Effect::SetValue(Template(vec![Part::Value(vec![execute])]));
        let mut ends = Fragment {
            entry: plan,
            ..Fragment::default()
        };
        let effects = vec![results.clone(), Effect::Reset(cycles)];
        self.end_fixed(
            &mut ends,
            verify,
            Trigger::FinishKey("done".into()),
            "done",
            effects,
        );
        let mut again = exit(Trigger::AnyKey, Target::State(replan));
        again.guards.push(Guard::CounterBelow(cycles, 2));
        again.effects.push(Effect::Count(cycles));
        self.builder.state_mut(verify).exits.push(again);
        let warn = Effect::Warn(format!(
            "`{full}` (plan-execute) reached 3 cycles without a DONE verdict: it returns the results so far"
        ));
        let effects = vec![warn, results, Effect::Reset(cycles)];
        self.end_fixed(&mut ends, verify, Trigger::AnyKey, "done", effects);
        ends
    }

    /// act → reflect → act again with the feedback, `max` acts at most (no reflect after the
    /// last); a reflect verdict of DONE stops. Returns the newest act's value, `done`.
    fn reflexion(&mut self, name: &str, full: &str, span: Span, max: u32) -> Fragment {
        let first = self.step_file(name, "act", full, span, None, None);
        let mut ends = Fragment {
            entry: first,
            ..Fragment::default()
        };
        if max == 1 {
            self.end_fixed(&mut ends, first, Trigger::Always, "done", Vec::new());
            return ends;
        }
        let reflect_name = format!("{full}/reflect");
        let reflect = self.step_file(
            name,
            "reflect",
            &reflect_name,
            span,
            Some(StepKey::Verdict),
            None,
        );
        let again = self.step_file(name, "act", &format!("{full}/act"), span, None, None);
        let acts = vec![first, again];
        self.builder.state_mut(reflect).step = Some(Step {
            input: template(vec![
                text("Task:\n"),
                Part::Input(vec![first]),
                text("\n\nResult:\n"),
                Part::Value(acts.clone()),
            ]),
            ..self
                .builder
                .state_mut(reflect)
                .step
                .clone()
                .unwrap_or_default()
        });
        self.builder.state_mut(again).step = Some(Step {
            input: template(vec![
                text("Task:\n"),
                Part::Input(vec![first]),
                text("\n\nPrevious attempt:\n"),
                Part::Value(acts.clone()),
                text("\n\nFeedback:\n"),
                Part::Value(vec![reflect]),
            ]),
            ..self
                .builder
                .state_mut(again)
                .step
                .clone()
                .unwrap_or_default()
        });
        let iterations = self.builder.add_counter(format!("{full}/iterations"));
        self.link(first, reflect);
        let newest = Effect::SetValue(Template(vec![Part::Value(acts)]));
        let effects = vec![newest, Effect::Reset(iterations)];
        self.end_fixed(
            &mut ends,
            reflect,
            Trigger::FinishKey("done".into()),
            "done",
            effects,
        );
        let retry = exit(Trigger::AnyKey, Target::State(again));
        self.builder.state_mut(reflect).exits.push(retry);
        let mut reflect_again = exit(Trigger::Always, Target::State(reflect));
        reflect_again
            .guards
            .push(Guard::CounterBelow(iterations, max.saturating_sub(2)));
        reflect_again.effects.push(Effect::Count(iterations));
        self.builder.state_mut(again).exits.push(reflect_again);
        let effects = vec![Effect::Reset(iterations)];
        self.end_fixed(&mut ends, again, Trigger::Always, "done", effects);
        ends
    }

    /// Every worker at once on the same input; a JSON object of their values, `parallel`.
    fn parallel(&mut self, md: &AgentMd, full: &str, span: Span) -> Fragment {
        let mut branches = Vec::new();
        for worker in &md.worker_list {
            let branch_name = format!("{full}/{}", worker.value);
            branches.push(self.worker_branch(&worker.value, &branch_name, worker.span, None));
        }
        let fork = Fork {
            merge: Merge::Object,
            ..items_fork()
        };
        let fork = self.fork_state(full, span, branches, fork);
        Fragment {
            entry: fork,
            joins: vec![(fork, "parallel".to_string())],
            ..Fragment::default()
        }
    }

    /// map (finish `parallel` with a JSON array) → the worker once per item, at once →
    /// reduce; any other map key ends the pattern with that key.
    fn scatter(&mut self, name: &str, md: &AgentMd, full: &str, span: Span) -> Option<Fragment> {
        let worker = md.worker.as_ref()?;
        let map = self.agent_step(name, full, span, StepKey::Finish, true, None);
        let agent = self.agent(name);
        let instructions = &mut self.builder.program.agents[agent.0 as usize].instructions;
        if !instructions.ends_with(SCATTER_MAP) {
            instructions.push_str(SCATTER_MAP);
        }
        let branch_name = format!("{full}/workers/{}", worker.value);
        let item = template(vec![Part::Item]);
        let branch = self.worker_branch(&worker.value, &branch_name, worker.span, item);
        let fork = Fork {
            per_item: Some(Vec::new()),
            ..items_fork()
        };
        let workers = self.fork_state(&format!("{full}/workers"), span, vec![branch], fork);
        let input = template(vec![
            text("Original task: "),
            Part::Input(vec![map]),
            text("\n\nWorker results:\n"),
            Part::Value(vec![workers]),
        ]);
        let reduce = self.step_file(name, "reduce", &format!("{full}/reduce"), span, None, input);
        let map_exit = exit(
            Trigger::FinishKey("parallel".into()),
            Target::State(workers),
        );
        self.builder.state_mut(map).exits.push(map_exit);
        self.set_join(workers, Target::State(reduce));
        let mut ends = Fragment {
            entry: map,
            ..Fragment::default()
        };
        self.end_any(&mut ends, map);
        match self
            .builder
            .state_mut(reduce)
            .step
            .as_ref()
            .map(|s| s.key.clone())
        {
            Some(StepKey::Fixed(key)) => {
                self.end_fixed(&mut ends, reduce, Trigger::Always, &key, Vec::new());
            }
            _ => self.end_any(&mut ends, reduce),
        }
        Some(ends)
    }

    /// `rounds` rounds of every agent at once (later rounds see the transcript so far),
    /// then the judge, whose key the pattern returns.
    fn debate(&mut self, md: &AgentMd, full: &str, span: Span) -> Option<Fragment> {
        let judge = md.judge.as_ref()?;
        let rounds = md.rounds.as_ref().map_or(1, |r| r.value.max(1));
        let mut forks: Vec<StateId> = Vec::new();
        for round in 1..=rounds {
            let round_name = match round {
                1 => full.to_string(),
                n => format!("{full}/round-{n}"),
            };
            let mut parts = vec![text("Topic: ")];
            if let Some(first) = forks.first() {
                parts.push(Part::Input(vec![*first]));
                parts.push(text("\n\nDebate so far:"));
                for (idx, earlier) in forks.iter().enumerate() {
                    parts.push(text(if idx == 0 { "\n" } else { "\n\n" }));
                    parts.push(Part::Value(vec![*earlier]));
                }
            }
            let mut branches = Vec::new();
            for agent in &md.worker_list {
                let name = format!("{round_name}/{}", agent.value);
                // Round 1's topic is the debate's input, set once its fork exists.
                let input = (round > 1).then(|| Template::new(parts.clone()));
                branches.push(self.worker_branch(&agent.value, &name, agent.span, input));
            }
            let fork = Fork {
                merge: Merge::Transcript,
                ..items_fork()
            };
            let fork = self.fork_state(&round_name, span, branches, fork);
            if let Some(previous) = forks.last() {
                self.set_join(*previous, Target::State(fork));
            }
            forks.push(fork);
        }
        // Round 1's branches read the debate's input: known only now.
        let first = forks[0];
        if let StateKind::Fork(fork) = &self.builder.state_mut(first).kind {
            for branch in fork.branches.clone() {
                if let Some(step) = &mut self.builder.state_mut(branch).step {
                    step.input = template(vec![text("Topic: "), Part::Input(vec![first])]);
                }
            }
        }
        let mut parts = vec![
            text("Topic: "),
            Part::Input(vec![first]),
            text("\n\nDebate transcript:"),
        ];
        for (idx, round) in forks.iter().enumerate() {
            parts.push(text(if idx == 0 { "\n" } else { "\n\n" }));
            parts.push(Part::Value(vec![*round]));
        }
        let judge_name = format!("{full}/judge");
        let judge_state = self.worker_branch(
            &judge.value,
            &judge_name,
            judge.span,
            Some(Template::new(parts)),
        );
        if let Some(last) = forks.last() {
            self.set_join(*last, Target::State(judge_state));
        }
        let mut ends = Fragment {
            entry: first,
            ..Fragment::default()
        };
        self.end_any(&mut ends, judge_state);
        Some(ends)
    }

    /// `n` variants of the agent at once, then its judge step; returns `done`.
    fn best_of_n(&mut self, name: &str, full: &str, span: Span, n: u32) -> Fragment {
        let agent = self.agent(name);
        let mut branches = Vec::new();
        for variant in 1..=n {
            let step = Step {
                input: None,
                key: StepKey::Finish,
                react: true,
            };
            let variant_name = format!("{full}/variant-{variant}");
            branches.push(self.step_state(&variant_name, Some(agent), StateKind::Turn, span, step));
        }
        let fork = self.fork_state(full, span, branches, items_fork());
        let input = template(vec![
            text("Task:\n"),
            Part::Input(vec![fork]),
            text("\n\nCandidates:\n"),
            Part::Value(vec![fork]),
        ]);
        let done = Some(StepKey::Fixed("done".into()));
        let judge = self.step_file(name, "judge", &format!("{full}/judge"), span, done, input);
        self.set_join(fork, Target::State(judge));
        let mut ends = Fragment {
            entry: fork,
            ..Fragment::default()
        };
        self.end_fixed(&mut ends, judge, Trigger::Always, "done", Vec::new());
        ends
    }

    /// A react loop on the body, then the operator's line, then the resume step's loop given
    /// that line; returns the resume step's key.
    fn human(&mut self, name: &str, full: &str, span: Span) -> Fragment {
        let ask = self.agent_step(name, full, span, StepKey::Finish, true, None);
        let input = template(vec![Part::Operator]);
        let resume_name = format!("{full}/resume");
        let resume = self.step_file(
            name,
            "resume",
            &resume_name,
            span,
            Some(StepKey::Finish),
            input,
        );
        if let Some(step) = &mut self.builder.state_mut(resume).step {
            step.react = true;
        }
        self.link(ask, resume);
        let mut ends = Fragment {
            entry: ask,
            ..Fragment::default()
        };
        self.end_any(&mut ends, resume);
        ends
    }
}

/// A fork that runs each branch once, all at once, and heads each value by its run.
fn items_fork() -> Fork {
    Fork {
        branches: Vec::new(),
        join: Target::End,
        merge: Merge::Items,
        merge_agent: None,
        per_item: None,
        per_line: false,
        sequential: false,
    }
}

/// Whether `md`'s pattern lowers to several states (every pattern but `react`, `oneshot`
/// and `fsm`, which is inlined).
pub(super) fn is_multi_step(md: &AgentMd) -> bool {
    md.pattern.as_ref().is_some_and(|pattern| {
        !matches!(pattern.value.as_str(), "react" | "oneshot" | "fsm")
            && crate::syntax::tama::PATTERNS.contains(&pattern.value.as_str())
    })
}
