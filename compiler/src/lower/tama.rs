//! Lowering a tama project: the entry agent's `fsm` (with nested FSMs inlined) or one
//! opaque state for any other pattern.
//!
//! A nested FSM is inlined under its state's name (`workshop/poet`). Its exits that end the
//! inner FSM are spliced with the outer state's transitions, so the outer FSM routes on
//! the key of the inner state that decided the stop: tama's key propagation, made static.
//! Terminal states follow the mixed rule of `research/tama.md`: a null state with an agent
//! directory runs once and ends; one without is a pass-through marker (`end`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::Builder;
use crate::diagnostic::{did_you_mean, known_list, Code, Diagnostic};
use crate::ir::{
    Agent, AgentId, Context, ContextMode, EdgeClass, Exit, Model, NoMatch, Origin, Program,
    StateId, StateKind, Step, StepKey, Target, TerminalMode, ToolChoice, Trigger,
};
use crate::source::Span;
use crate::syntax::fields::Spanned;
use crate::syntax::tama::{read_agent_md, read_manifest, AgentMd, FsmNext, Manifest};
use crate::syntax::Loader;

/// Upper bound on states produced by inlining nested FSMs.
const MAX_STATES: usize = 100_000;

pub(super) enum Entry {
    Loaded(Box<AgentMd>),
    /// No `agents/<name>/AGENT.md`.
    Missing,
    /// The file exists but could not be read or parsed (already reported).
    Broken,
}

/// Loads the project's manifest and every agent reachable from `entry`, then lowers.
pub(crate) fn lower_project(
    loader: &mut Loader<'_>,
    root: &Path,
    entry: &str,
    entry_span: Option<Span>,
) -> Option<Program> {
    let manifest_path = root.join("tama.toml");
    let manifest = if loader.reader.exists(&manifest_path) {
        match loader.read(&manifest_path, None, "tama manifest") {
            Some(file) => read_manifest(file, loader).unwrap_or_default(),
            None => Manifest::default(),
        }
    } else {
        Manifest::default()
    };
    let mut agents = HashMap::new();
    let mut steps = HashMap::new();
    collect(loader, root, entry, &mut agents, &mut steps);
    let mut skills = HashMap::new();
    let mut missing = Vec::new();
    // In name order, so that a missing skill is reported at the same place every time.
    let mut uses: Vec<(&String, Vec<Spanned<String>>)> = agents
        .iter()
        .filter_map(|(name, entry)| match entry {
            Entry::Loaded(md) => Some((name, md.uses.clone())),
            _ => None,
        })
        .chain(steps.iter().map(|(name, md)| (name, md.uses.clone())))
        .collect();
    uses.sort_by(|a, b| a.0.cmp(b.0));
    for (_, uses) in &uses {
        super::tama_skills::collect_skills(loader, root, uses, &mut skills, &mut missing);
    }
    match agents.get(entry) {
        Some(Entry::Loaded(_)) => {}
        Some(Entry::Broken) => return None,
        _ => {
            let mut diag = Diagnostic::error(
                Code::MissingFile,
                format!(
                    "agent `{entry}` not found (checked `{}`)",
                    agent_path(root, entry).display()
                ),
            );
            if let Some(span) = entry_span {
                diag = diag.with_label(span, "named as the entrypoint here");
            }
            loader.diags.push(diag);
            return None;
        }
    }
    let Loader { sources, diags, .. } = loader;
    let mut lowering = TamaLowering {
        builder: Builder::new(sources, diags, entry.to_string(), Origin::Tama),
        agents: &agents,
        steps: &steps,
        skills: &skills,
        manifest: &manifest,
        agent_ids: HashMap::new(),
        stack: Vec::new(),
    };
    let Some(Entry::Loaded(md)) = agents.get(entry) else {
        return None;
    };
    if let Some(name) = &md.name {
        lowering.builder.program.name = name.value.clone();
    }
    lowering.builder.program.permissions = manifest.permissions.clone();
    let program_entry = if is_fsm(md) {
        let fragment = lowering.inline_fsm(entry, md, "")?;
        fragment.entry
    } else if let Some(fragment) = lowering.pattern(entry, md, entry, md.span) {
        fragment.entry
    } else {
        let agent = lowering.agent(entry);
        let state = lowering
            .builder
            .add_state(entry, Some(agent), StateKind::Turn, Some(md.span));
        let lowered = lowering.builder.state_mut(state);
        lowered.step = oneshot_step(md);
        lowered.exits.push(exit(Trigger::AnyKey, Target::End));
        state
    };
    lowering.builder.program.entry = program_entry;
    Some(lowering.builder.finish())
}

fn agent_path(root: &Path, name: &str) -> PathBuf {
    root.join("agents").join(name).join("AGENT.md")
}

/// A tama agent named `name` with nothing else set: it reads only its input.
pub(super) fn value_agent(name: &str) -> Agent {
    Agent {
        name: name.to_string(),
        description: None,
        model: None,
        instructions: String::new(),
        tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        capabilities: Vec::new(),
        context: Context {
            mode: ContextMode::Value,
            ..Context::default()
        },
        pattern: None,
        sub_agent: crate::ir::SubAgentSettings::default(),
        loc: None,
    }
}

/// A `oneshot` agent's step: one call, no tools, key `result`.
fn oneshot_step(md: &AgentMd) -> Option<Step> {
    md.pattern
        .as_ref()
        .filter(|pattern| pattern.value == "oneshot")
        .map(|_| Step {
            input: None,
            key: StepKey::Fixed("result".to_string()),
            react: false,
        })
}

fn is_fsm(md: &AgentMd) -> bool {
    md.pattern
        .as_ref()
        .is_some_and(|pattern| pattern.value == "fsm")
}

/// Loads `name`, its pattern's step files, and every agent its states or workers name
/// (depth-first, once each).
fn collect(
    loader: &mut Loader<'_>,
    root: &Path,
    name: &str,
    agents: &mut HashMap<String, Entry>,
    steps: &mut HashMap<String, AgentMd>,
) {
    if agents.contains_key(name) {
        return;
    }
    let path = agent_path(root, name);
    if !loader.reader.exists(&path) {
        agents.insert(name.to_string(), Entry::Missing);
        return;
    }
    let Some(file) = loader.read(&path, None, "agent") else {
        agents.insert(name.to_string(), Entry::Broken);
        return;
    };
    let Some(md) = read_agent_md(file, loader) else {
        agents.insert(name.to_string(), Entry::Broken);
        return;
    };
    if let Some(pattern) = &md.pattern {
        if !crate::syntax::tama::PATTERNS.contains(&pattern.value.as_str()) {
            let mut diag = Diagnostic::error(
                Code::InvalidValue,
                format!("unknown pattern `{}`", pattern.value),
            )
            .with_label(pattern.span, "not a tama pattern");
            diag = diag.with_help(
                did_you_mean(
                    &pattern.value,
                    crate::syntax::tama::PATTERNS.iter().copied(),
                )
                .unwrap_or_else(|| {
                    format!("patterns: {}", crate::syntax::tama::PATTERNS.join(", "))
                }),
            );
            loader.diags.push(diag);
        }
    } else {
        loader.diags.push(
            Diagnostic::error(
                Code::MissingRequiredKey,
                "agent front matter has no `pattern`",
            )
            .with_label(md.span, "add `pattern:` (e.g. `pattern: fsm`)"),
        );
    }
    let mut children: Vec<String> = if is_fsm(&md) {
        md.states
            .iter()
            .flatten()
            .map(|state| state.name.value.clone())
            .collect()
    } else {
        Vec::new()
    };
    children.extend(md.workers.iter().map(|worker| worker.value.clone()));
    super::tama_patterns::collect_steps(loader, root, name, &md, steps);
    agents.insert(name.to_string(), Entry::Loaded(Box::new(md)));
    for child in children {
        collect(loader, root, &child, agents, steps);
    }
}

pub(super) fn exit(trigger: Trigger, target: Target) -> Exit {
    Exit {
        trigger,
        guards: Vec::new(),
        effects: Vec::new(),
        target,
        class: EdgeClass::Forward,
        recovery: None,
        loc: None,
    }
}

/// A lowered FSM or pattern: where it starts, and its exits that end it (target `end`),
/// which an enclosing FSM splices with its own transitions.
#[derive(Default)]
pub(super) struct Fragment {
    pub(super) entry: StateId,
    pub(super) open: Vec<(StateId, usize)>,
    /// Open exits whose key is known statically, with that key: a pattern's fixed key,
    /// routed once by the enclosing FSM.
    pub(super) fixed: Vec<(StateId, usize, String)>,
    /// Forks whose join ends the fragment, with the key they return (`parallel`).
    pub(super) joins: Vec<(StateId, String)>,
    /// The pattern the fragment lowers (for messages); `None` for an fsm.
    pub(super) pattern: Option<String>,
}

enum Node {
    Plain(StateId),
    Nested(Fragment),
    Marker,
}

pub(super) struct TamaLowering<'a, 'b> {
    pub(super) builder: Builder<'a>,
    pub(super) agents: &'b HashMap<String, Entry>,
    /// Step files by `agent/step` (`critic/draft`).
    pub(super) steps: &'b HashMap<String, AgentMd>,
    /// The skills the agents use, by name.
    pub(super) skills: &'b HashMap<String, crate::syntax::tama_skill::SkillMd>,
    manifest: &'b Manifest,
    pub(super) agent_ids: HashMap<String, AgentId>,
    /// FSM agents being inlined (to refuse an FSM that contains itself).
    stack: Vec<String>,
}

impl TamaLowering<'_, '_> {
    pub(super) fn loaded(&self, name: &str) -> Option<&AgentMd> {
        match self.agents.get(name) {
            Some(Entry::Loaded(md)) => Some(md),
            _ => None,
        }
    }

    pub(super) fn has_agent(&self, name: &str) -> bool {
        matches!(
            self.agents.get(name),
            Some(Entry::Loaded(_) | Entry::Broken)
        )
    }

    /// The IR agent for an agent directory, created on first use.
    pub(super) fn agent(&mut self, name: &str) -> AgentId {
        if let Some(id) = self.agent_ids.get(name) {
            return *id;
        }
        let uses = self
            .loaded(name)
            .map(|md| md.uses.clone())
            .unwrap_or_default();
        let tools = self.skill_tools(&uses);
        let block = self.skills_block(&uses);
        let md = self.loaded(name);
        let agent = Agent {
            description: md.and_then(|md| md.description.as_ref().map(|d| d.value.clone())),
            model: md.and_then(|md| self.model(md)),
            instructions: md.map(|md| md.body.clone() + &block).unwrap_or_default(),
            tools,
            pattern: md.and_then(|md| md.pattern.as_ref().map(|p| p.value.clone())),
            loc: md.and_then(|md| self.builder.loc(md.span)),
            ..value_agent(name)
        };
        self.push_agent(agent)
    }

    /// Adds `agent` to the program under its name.
    pub(super) fn push_agent(&mut self, agent: Agent) -> AgentId {
        let name = agent.name.clone();
        self.builder.program.agents.push(agent);
        let id = AgentId(self.builder.program.agents.len() as u32 - 1);
        self.agent_ids.insert(name, id);
        id
    }

    /// tama's model resolution: `call.model.name`, else the role (`call.model.role`, or the
    /// pattern's default role) looked up in `tama.toml [models]`, falling back to `default`.
    pub(super) fn model(&self, md: &AgentMd) -> Option<Model> {
        let (alias, spec, temperature, max_tokens) = if let Some(name) = &md.model_name {
            (None, name.value.clone(), None, None)
        } else {
            let role = md
                .model_role
                .as_ref()
                .map(|r| r.value.clone())
                .unwrap_or_else(|| match md.pattern.as_ref().map(|p| p.value.as_str()) {
                    Some("react") => "thinker".to_string(),
                    Some("oneshot") => "worker".to_string(),
                    _ => "default".to_string(),
                });
            let found = self
                .manifest
                .roles
                .iter()
                .find(|(name, ..)| *name == role)
                .or_else(|| {
                    self.manifest
                        .roles
                        .iter()
                        .find(|(name, ..)| name == "default")
                })?;
            (
                Some(found.0.clone()),
                found.1.clone(),
                found.2.clone(),
                found.3.clone(),
            )
        };
        let (provider, id) = match spec.split_once(':') {
            Some((provider, id)) => (Some(provider.to_string()), id.to_string()),
            None => (None, spec),
        };
        Some(Model {
            alias,
            provider,
            id,
            temperature: md
                .temperature
                .as_ref()
                .map(|t| t.value.clone())
                .or(temperature),
            max_tokens: md
                .max_tokens
                .as_ref()
                .and_then(|t| t.value.parse().ok())
                .or(max_tokens.and_then(|t| t.parse().ok())),
            ..Model::default()
        })
    }

    fn inline_fsm(&mut self, agent_name: &str, md: &AgentMd, prefix: &str) -> Option<Fragment> {
        if self.builder.program.states.len() > MAX_STATES {
            self.builder.diags.push(
                Diagnostic::error(
                    Code::ResourceLimit,
                    format!("nested fsms expand to more than {MAX_STATES} states"),
                )
                .with_label(md.span, "while inlining this fsm"),
            );
            return None;
        }
        let Some(states) = &md.states else {
            self.builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    format!("fsm `{agent_name}` has no `states`"),
                )
                .with_label(
                    md.states_span.unwrap_or(md.span),
                    "add `states:` mapping each state to its next",
                ),
            );
            return None;
        };
        self.stack.push(agent_name.to_string());

        // Pass 1: a node per state.
        let mut nodes: Vec<(String, Node)> = Vec::new();
        for state in states {
            let name = &state.name.value;
            let full = format!("{prefix}{name}");
            let terminal = matches!(state.next, FsmNext::Terminal(_));
            let node = if terminal && !self.has_agent(name) {
                Node::Marker
            } else {
                if !self.has_agent(name) {
                    self.builder.diags.push(
                        Diagnostic::error(
                            Code::UnknownAgent,
                            format!("agent `{name}` not found (checked `agents/{name}/AGENT.md`)"),
                        )
                        .with_label(
                            state.name.span,
                            "this state runs the agent of the same name",
                        ),
                    );
                }
                match self.loaded(name) {
                    Some(child) if is_fsm(child) && self.stack.iter().any(|open| open == name) => {
                        self.builder.diags.push(
                            Diagnostic::error(
                                Code::RecursiveAgent,
                                format!("fsm `{name}` contains itself"),
                            )
                            .with_label(
                                state.name.span,
                                "this state would inline its own fsm again",
                            ),
                        );
                        Node::Plain(self.builder.add_state(
                            &full,
                            None,
                            StateKind::Turn,
                            Some(state.name.span),
                        ))
                    }
                    Some(child) if is_fsm(child) => {
                        let child = child.clone();
                        match self.inline_fsm(name, &child, &format!("{full}/")) {
                            Some(fragment) => Node::Nested(fragment),
                            None => Node::Plain(self.builder.add_state(
                                &full,
                                None,
                                StateKind::Turn,
                                Some(state.name.span),
                            )),
                        }
                    }
                    Some(child) if self.pattern_ready(name, child) => {
                        let child = child.clone();
                        match self.pattern(name, &child, &full, state.name.span) {
                            Some(fragment) => Node::Nested(fragment),
                            None => Node::Marker,
                        }
                    }
                    _ => {
                        let agent = self.has_agent(name).then(|| self.agent(name));
                        let kind = if terminal {
                            StateKind::Terminal(TerminalMode::RunOnce)
                        } else {
                            StateKind::Turn
                        };
                        let id = self
                            .builder
                            .add_state(&full, agent, kind, Some(state.name.span));
                        self.builder.state_mut(id).step = self.loaded(name).and_then(oneshot_step);
                        if terminal {
                            self.builder
                                .state_mut(id)
                                .exits
                                .push(exit(Trigger::Always, Target::End));
                        }
                        Node::Plain(id)
                    }
                }
            };
            nodes.push((name.clone(), node));
        }

        let entry = match &md.initial {
            Some(initial) => match nodes.iter().find(|(name, _)| *name == initial.value) {
                Some((_, Node::Plain(id))) => Some(*id),
                Some((_, Node::Nested(fragment))) => Some(fragment.entry),
                Some((_, Node::Marker)) => {
                    self.builder.diags.push(
                        Diagnostic::error(
                            Code::UnknownInitial,
                            format!("initial state `{}` is a terminal marker", initial.value),
                        )
                        .with_label(
                            initial.span,
                            "nothing runs in a null state without an agent",
                        )
                        .with_help("start at a state that runs an agent"),
                    );
                    None
                }
                None => {
                    let names: Vec<&str> = nodes.iter().map(|(name, _)| name.as_str()).collect();
                    self.builder.diags.push(
                        Diagnostic::error(
                            Code::UnknownInitial,
                            format!("initial state `{}` is not in `states`", initial.value),
                        )
                        .with_label(initial.span, "no state has this name")
                        .with_help(
                            did_you_mean(&initial.value, names.iter().copied())
                                .unwrap_or_else(|| known_list(names.iter().copied())),
                        ),
                    );
                    None
                }
            },
            None => {
                self.builder.diags.push(
                    Diagnostic::error(
                        Code::UnknownInitial,
                        format!("fsm `{agent_name}` has no `initial` state"),
                    )
                    .with_label(md.span, "add `initial:` naming the first state"),
                );
                None
            }
        };

        // Pass 2: transitions.
        let mut ends = Fragment::default();
        for (state, (_, node)) in states.iter().zip(nodes.iter()) {
            let (exits, keyed) = match &state.next {
                FsmNext::Terminal(_) => {
                    // A terminal state's own exit (run once, then end) is already in place.
                    if let Node::Plain(id) = node {
                        ends.open.push((*id, 0));
                    }
                    if let Node::Nested(fragment) = node {
                        ends.absorb(fragment);
                    }
                    continue;
                }
                FsmNext::Goto(target) => (
                    self.resolve(target, &nodes)
                        .map(|t| vec![exit(Trigger::Always, t)])
                        .unwrap_or_default(),
                    false,
                ),
                FsmNext::Keyed(items) => (self.keyed_exits(items, &nodes), true),
            };
            match node {
                Node::Marker => {}
                Node::Plain(id) => {
                    if keyed {
                        self.check_fixed_key(*id, &exits, state.name.span);
                    }
                    let target_state = self.builder.state_mut(*id);
                    target_state.no_match = if keyed { NoMatch::Fail } else { NoMatch::Never };
                    for (idx, exit) in exits.iter().enumerate() {
                        if exit.target == Target::End {
                            ends.open.push((*id, idx));
                        }
                    }
                    target_state.exits = exits;
                }
                Node::Nested(fragment) => {
                    let still = self.splice(fragment, &exits, keyed, state.name.span);
                    ends.absorb(&still);
                }
            }
        }
        self.stack.pop();
        ends.entry = entry?;
        Some(ends)
    }

    /// A `oneshot` state always returns `result`: a keyed table that cannot route it.
    fn check_fixed_key(&mut self, id: StateId, exits: &[Exit], span: Span) {
        let key = match self.builder.program.states[id.0 as usize].step.as_ref() {
            Some(Step {
                key: StepKey::Fixed(key),
                ..
            }) => key.clone(),
            _ => return,
        };
        if route_for(exits, &key).is_none() {
            let diag = unrouted_key(&key, "oneshot", span);
            self.builder.diags.push(diag);
        }
    }

    /// Exact keys in list order (first wins), then the last `"*"` as `any_key`.
    fn keyed_exits(
        &mut self,
        items: &[(Spanned<String>, Option<Spanned<String>>)],
        nodes: &[(String, Node)],
    ) -> Vec<Exit> {
        let mut exits = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        let mut catch_all = None;
        for (key, target) in items {
            let resolved = match target {
                None => Some(Target::End),
                Some(target) => self.resolve(target, nodes),
            };
            let Some(resolved) = resolved else { continue };
            if key.value == "*" {
                catch_all = Some(resolved);
                continue;
            }
            if seen.contains(&key.value.as_str()) {
                continue;
            }
            seen.push(&key.value);
            let mut lowered = exit(Trigger::FinishKey(key.value.clone()), resolved);
            lowered.loc = self.builder.loc(key.span);
            exits.push(lowered);
        }
        if let Some(target) = catch_all {
            exits.push(exit(Trigger::AnyKey, target));
        }
        exits
    }

    fn resolve(&mut self, target: &Spanned<String>, nodes: &[(String, Node)]) -> Option<Target> {
        match nodes.iter().find(|(name, _)| *name == target.value) {
            Some((_, Node::Plain(id))) => Some(Target::State(*id)),
            Some((_, Node::Nested(fragment))) => Some(Target::State(fragment.entry)),
            Some((_, Node::Marker)) => Some(Target::End),
            None => {
                let names: Vec<&str> = nodes.iter().map(|(name, _)| name.as_str()).collect();
                self.builder.diags.push(
                    Diagnostic::error(
                        Code::UnknownState,
                        format!(
                            "transition target `{}` is not a state of this fsm",
                            target.value
                        ),
                    )
                    .with_label(target.span, "no state has this name")
                    .with_help(
                        did_you_mean(&target.value, names.iter().copied())
                            .unwrap_or_else(|| known_list(names.iter().copied())),
                    ),
                );
                None
            }
        }
    }

    /// Routes the exits that end a nested FSM or pattern by the outer state's transitions
    /// (a fixed key once, here; a key chosen at run time by the whole table); returns the
    /// exits that still end (the outer FSM ends there too).
    fn splice(&mut self, fragment: &Fragment, outer: &[Exit], keyed: bool, span: Span) -> Fragment {
        let mut still = Fragment::default();
        for (fork, key) in &fragment.joins {
            let target = match route_for(outer, key) {
                Some(route) => route.target.clone(),
                None => {
                    let pattern = fragment.pattern.as_deref().unwrap_or("parallel");
                    let diag = unrouted_key(key, pattern, span);
                    self.builder.diags.push(diag);
                    Target::End
                }
            };
            if target == Target::End {
                still.joins.push((*fork, key.clone()));
            }
            if let StateKind::Fork(fork) = &mut self.builder.state_mut(*fork).kind {
                fork.join = target;
            }
        }
        let mut by_state: Vec<StateId> = fragment.open.iter().map(|(state, _)| *state).collect();
        by_state.dedup();
        for state_id in by_state {
            let old = std::mem::take(&mut self.builder.state_mut(state_id).exits);
            let mut exits = Vec::new();
            let mut dropped = false;
            for (idx, inner) in old.into_iter().enumerate() {
                if !fragment.open.contains(&(state_id, idx)) {
                    exits.push(inner);
                    continue;
                }
                let fixed = fragment
                    .fixed
                    .iter()
                    .find(|(state, at, _)| *state == state_id && *at == idx)
                    .map(|(_, _, key)| key.clone());
                let key = match (&fixed, &inner.trigger) {
                    (Some(key), _) => Some(key.clone()),
                    (None, Trigger::FinishKey(key)) => Some(key.clone()),
                    _ => None,
                };
                match key {
                    Some(key) => match route_for(outer, &key) {
                        Some(route) => {
                            let mut spliced = inner.clone();
                            spliced.target = route.target.clone();
                            spliced.effects.extend(route.effects.iter().cloned());
                            if spliced.target == Target::End {
                                let at = exits.len();
                                still.open.push((state_id, at));
                                if fixed.is_some() {
                                    still.fixed.push((state_id, at, key.clone()));
                                }
                            }
                            exits.push(spliced);
                        }
                        None if fixed.is_some() => {
                            let pattern = fragment
                                .pattern
                                .clone()
                                .unwrap_or_else(|| self.pattern_name(state_id));
                            let diag = unrouted_key(&key, &pattern, span);
                            self.builder.diags.push(diag);
                            dropped = true;
                        }
                        None => dropped = true,
                    },
                    None => {
                        // The key is only known at run time: route it by the whole outer table.
                        for route in outer {
                            let mut spliced = route.clone();
                            if inner.trigger == Trigger::AnyKey && route.trigger == Trigger::Always
                            {
                                spliced.trigger = Trigger::AnyKey;
                            }
                            let mut effects = inner.effects.clone();
                            effects.extend(route.effects.iter().cloned());
                            spliced.effects = effects;
                            if spliced.target == Target::End {
                                still.open.push((state_id, exits.len()));
                            }
                            exits.push(spliced);
                        }
                    }
                }
            }
            let state = self.builder.state_mut(state_id);
            if keyed || dropped {
                state.no_match = NoMatch::Fail;
            }
            if matches!(state.kind, StateKind::Terminal(_))
                && exits.iter().any(|e| e.target != Target::End)
            {
                state.kind = StateKind::Turn;
            }
            state.exits = exits;
        }
        still
    }

    /// The pattern of the agent a state runs (for messages).
    fn pattern_name(&self, state: StateId) -> String {
        let program = &self.builder.program;
        program.states[state.0 as usize]
            .agent
            .and_then(|agent| program.agents[agent.0 as usize].pattern.clone())
            .unwrap_or_else(|| "pattern".to_string())
    }
}

impl Fragment {
    /// Takes over what still ends `other`.
    fn absorb(&mut self, other: &Fragment) {
        self.open.extend(other.open.iter().copied());
        self.fixed.extend(other.fixed.iter().cloned());
        self.joins.extend(other.joins.iter().cloned());
    }
}

/// The outer exit that routes `key`: the exact key, else `"*"`, else an unconditional one.
fn route_for<'e>(outer: &'e [Exit], key: &str) -> Option<&'e Exit> {
    outer
        .iter()
        .find(|e| matches!(&e.trigger, Trigger::FinishKey(k) if k == key))
        .or_else(|| outer.iter().find(|e| e.trigger == Trigger::AnyKey))
        .or_else(|| outer.iter().find(|e| e.trigger == Trigger::Always))
}

/// A state whose pattern always returns `key`, in a table with no transition for it.
fn unrouted_key(key: &str, pattern: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::DeadEndState,
        format!("this `{pattern}` state always returns key `{key}`, which none of its transitions route"),
    )
    .with_label(span, format!("returns `{key}` here"))
    .with_help(format!("add `- {key}: NEXT` (or `- \"*\": NEXT`) to its transitions"))
}
