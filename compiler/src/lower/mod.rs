//! Stage 2: lowering the typed syntax of every frontend into one [`ir::Program`].
//!
//! One module per routing family; they share the [`Builder`], which owns name resolution
//! (with did-you-mean diagnostics) and turns spans into IR locations.

mod adversarial;
mod agents;
mod api_profiles;
mod checks;
mod compaction;
mod context_window;
mod graph;
mod mcp;
mod memory;
mod policy;
mod rotation;
mod routes;
mod settings;
mod state_machine;
mod sub_agent;
pub mod tama;
mod tama_patterns;
mod tama_skills;
mod termination;

use std::collections::HashMap;

use crate::diagnostic::{did_you_mean, known_list, Code, Diagnostic};
use crate::ir::{
    self, AgentId, ContractId, CounterId, Loc, NoMatch, Origin, Program, SelectionKind, State,
    StateId, StateKind, StuckPolicy,
};
use crate::source::{SourceMap, Span};
use crate::syntax::fields::Spanned;
use crate::syntax::fuseraft::Config;

/// Accumulates the program under construction and resolves names.
pub(crate) struct Builder<'a> {
    pub sources: &'a SourceMap,
    pub diags: &'a mut Vec<Diagnostic>,
    pub program: Program,
    state_names: HashMap<String, StateId>,
}

impl<'a> Builder<'a> {
    pub fn new(
        sources: &'a SourceMap,
        diags: &'a mut Vec<Diagnostic>,
        name: String,
        origin: Origin,
    ) -> Builder<'a> {
        let files = sources.files().map(|(_, file)| file.name.clone()).collect();
        Builder {
            sources,
            diags,
            program: Program {
                files,
                ..Program::new(name, origin)
            },
            state_names: HashMap::new(),
        }
    }

    pub fn loc(&self, span: Span) -> Option<Loc> {
        if span.file.0 as usize >= self.sources.len() {
            return None;
        }
        let position = self.sources.line_col(span);
        Some(Loc {
            file: ir::FileIdx(span.file.0),
            line: position.line,
            column: position.column,
        })
    }

    pub fn add_state(
        &mut self,
        name: &str,
        agent: Option<AgentId>,
        kind: StateKind,
        span: Option<Span>,
    ) -> StateId {
        let id = StateId(self.program.states.len() as u32);
        let loc = span.and_then(|span| self.loc(span));
        self.program.states.push(State {
            name: name.to_string(),
            agent,
            kind,
            context: None,
            layer: None,
            exits: Vec::new(),
            no_match: NoMatch::Never,
            stuck: StuckPolicy::default(),
            step: None,
            loc,
        });
        self.state_names.entry(name.to_lowercase()).or_insert(id);
        id
    }

    pub fn state_mut(&mut self, id: StateId) -> &mut State {
        &mut self.program.states[id.0 as usize]
    }

    /// A state by name (case-insensitive, as upstream compares state and node ids).
    pub fn find_state(&self, name: &str) -> Option<StateId> {
        self.state_names.get(&name.to_lowercase()).copied()
    }

    pub fn add_counter(&mut self, name: String) -> CounterId {
        if let Some(idx) = self
            .program
            .counters
            .iter()
            .position(|counter| counter.name == name)
        {
            return CounterId(idx as u32);
        }
        self.program.counters.push(ir::Counter { name });
        CounterId(self.program.counters.len() as u32 - 1)
    }

    /// Reports an unknown name, with the closest known one or the list of known ones.
    fn unknown<'n>(
        &mut self,
        diag: Diagnostic,
        name: &str,
        known: impl Iterator<Item = &'n str> + Clone,
    ) {
        let help = did_you_mean(name, known.clone()).unwrap_or_else(|| known_list(known));
        self.diags.push(diag.with_help(help));
    }

    /// Resolves an agent reference, reporting an unknown name with did-you-mean.
    pub fn agent_ref(&mut self, name: &Spanned<String>, role: &str) -> Option<AgentId> {
        if let Some(id) = self.program.agent_named(&name.value) {
            return Some(id);
        }
        let diag = Diagnostic::error(
            Code::UnknownAgent,
            format!("{role} `{}` is not a defined agent", name.value),
        )
        .with_label(name.span, "no agent has this name");
        let names: Vec<String> = self.program.agents.iter().map(|a| a.name.clone()).collect();
        self.unknown(diag, &name.value, names.iter().map(String::as_str));
        None
    }

    /// Resolves a list of agent references, dropping unknown ones (reported).
    pub fn agent_refs(&mut self, names: &[Spanned<String>], role: &str) -> Vec<AgentId> {
        names
            .iter()
            .filter_map(|name| self.agent_ref(name, role))
            .collect()
    }

    /// Resolves a state reference, reporting an unknown name with did-you-mean.
    pub fn state_ref(&mut self, name: &Spanned<String>, role: &str) -> Option<StateId> {
        if let Some(id) = self.find_state(&name.value) {
            return Some(id);
        }
        let diag = Diagnostic::error(
            Code::UnknownState,
            format!("{role} `{}` is not a defined state", name.value),
        )
        .with_label(name.span, "no state has this name");
        let names: Vec<String> = self.program.states.iter().map(|s| s.name.clone()).collect();
        self.unknown(diag, &name.value, names.iter().map(String::as_str));
        None
    }

    pub fn contract_ref(&mut self, name: &Spanned<String>) -> Option<ContractId> {
        if let Some(idx) = self
            .program
            .contracts
            .iter()
            .position(|contract| contract.name.eq_ignore_ascii_case(&name.value))
        {
            return Some(ContractId(idx as u32));
        }
        let diag = Diagnostic::error(
            Code::UnknownContract,
            format!("contract `{}` is not defined", name.value),
        )
        .with_label(name.span, "no contract under `Contracts:` has this name");
        let names: Vec<String> = self
            .program
            .contracts
            .iter()
            .map(|c| c.name.clone())
            .collect();
        self.unknown(diag, &name.value, names.iter().map(String::as_str));
        None
    }

    /// The state that runs `agent` (one per agent in the group-chat families).
    pub fn agent_state(&self, agent: AgentId) -> Option<StateId> {
        self.program
            .states
            .iter()
            .position(|state| state.agent == Some(agent))
            .map(|idx| StateId(idx as u32))
    }

    pub fn finish(mut self) -> Program {
        self.program.analyse();
        if self.program.origin == Origin::Fuseraft(SelectionKind::Graph) {
            for state in &mut self.program.states {
                for exit in &mut state.exits {
                    if exit.class == ir::EdgeClass::Back {
                        exit.effects.push(ir::Effect::PhaseBreak);
                    }
                }
            }
        }
        self.program
    }
}

/// Lowers a fuseraft config. Returns `None` when the config names no usable selection.
pub(crate) fn lower_config(
    config: &Config,
    sources: &SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> Option<Program> {
    let kind = match &config.selection.kind {
        None => SelectionKind::Sequential,
        Some(text) => match SelectionKind::parse(&text.value) {
            Some(kind) => kind,
            None => {
                let names = SelectionKind::ALL.iter().map(|kind| kind.as_str());
                let mut diag = Diagnostic::error(
                    Code::InvalidValue,
                    format!("unknown selection type `{}`", text.value),
                )
                .with_label(text.span, "not a selection type");
                diag = diag.with_help(match did_you_mean(&text.value, names.clone()) {
                    Some(hint) => hint,
                    None => format!("selection types: {}", names.collect::<Vec<_>>().join(", ")),
                });
                diags.push(diag);
                return None;
            }
        },
    };
    let name = config
        .name
        .as_ref()
        .map(|name| name.value.clone())
        .unwrap_or_default();
    let mut builder = Builder::new(sources, diags, name, Origin::Fuseraft(kind));
    mcp::lower_mcp_servers(config, &mut builder);
    agents::lower_agents(config, &mut builder);
    if builder.program.agents.is_empty() {
        if config.agents_written {
            // The agents were written but none was usable: each problem is already reported.
            return None;
        }
        builder.diags.push(
            Diagnostic::error(Code::MissingRequiredKey, "config defines no agents")
                .with_label(config.span, "`Agents:` is missing or empty here")
                .with_help("add at least one agent under `Agents:`"),
        );
        return None;
    }
    agents::lower_contracts(config, &mut builder);
    agents::lower_compaction_model(config, &mut builder);
    termination::lower_failure(config, &mut builder);
    policy::lower_security(config, &mut builder);
    api_profiles::check_api_profiles(config, &mut builder);
    memory::check_memory(config, &mut builder);
    compaction::check_compaction(config, &mut builder);
    settings::settle(config, &mut builder);
    checks::check_names(config, &mut builder);

    let lowered = match kind {
        SelectionKind::Sequential | SelectionKind::RoundRobin => {
            rotation::lower_rotation(config, &mut builder)
        }
        SelectionKind::Llm | SelectionKind::Magentic => {
            rotation::lower_select(config, kind, &mut builder)
        }
        SelectionKind::MapReduce | SelectionKind::ScatterGather => {
            rotation::lower_fan_out(config, kind, &mut builder)
        }
        SelectionKind::Keyword => routes::lower_keyword(config, &mut builder),
        SelectionKind::Structured => routes::lower_structured(config, &mut builder),
        SelectionKind::StateMachine => state_machine::lower(config, &mut builder),
        SelectionKind::Graph | SelectionKind::Workflow => graph::lower(config, kind, &mut builder),
        SelectionKind::Adversarial => adversarial::lower(config, &mut builder),
    };
    lowered?;
    if !matches!(kind, SelectionKind::Magentic | SelectionKind::Adversarial) {
        termination::lower_termination(config, kind, &mut builder);
    } else {
        builder.program.termination.max_total_tokens =
            config.max_total_tokens.as_ref().map(|max| max.value);
        builder.program.termination.max_total_cost =
            config.max_total_cost.as_ref().map(|max| max.value);
    }
    Some(builder.finish())
}

/// A required selection block is missing.
pub(crate) fn missing_block(
    builder: &mut Builder<'_>,
    block: &str,
    kind: SelectionKind,
    span: Span,
) {
    builder.diags.push(
        Diagnostic::error(
            Code::MissingRequiredKey,
            format!("selection type `{kind}` needs a `Selection.{block}` block"),
        )
        .with_label(span, format!("`{block}:` is missing here")),
    );
}
