//! The printer of the textual IR (`.fir`), the inverse of [`super::parse`].
//!
//! The format is described in `docs/ir.md` ("Text form"). Output is deterministic: items
//! appear in the order of the program's vectors, references are by name, strings are
//! JSON-escaped, and optional values are omitted when they are `None` or the default.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use super::{
    Agent, AgentId, Context, ContextMode, ContextSource, Contract, ContractId, CounterId,
    EdgeClass, Effect, Exit, FailurePolicy, FailureRule, Fork, Guard, Loc, McpServer, McpTransport,
    Model, NoMatch, Origin, Program, Select, SelectStyle, State, StateId, StateKind, StuckPolicy,
    Target, TermCond, TerminalMode, Termination, ToolChoice, Trigger, TurnUnit,
};

/// The version written on the first line (`fuseraft-ir 1`).
pub(super) const FORMAT_VERSION: u32 = 1;

/// Options of [`print`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// Replace user prose (agent `instructions` and `description`, select `prompt`) by a
    /// marker `elided(N)` (N = its length in bytes), so that snapshots of third-party
    /// configs keep their structure but not their text. The output still parses, but the
    /// elided texts come back empty.
    pub elide_text: bool,
}

/// Prints `program` in the textual IR form.
pub fn print(program: &Program, options: &PrintOptions) -> String {
    let mut printer = Printer {
        program,
        options: *options,
        out: String::new(),
    };
    printer.program();
    printer.out
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self, &PrintOptions::default()))
    }
}

/// True when `name` can be printed without quotes.
pub(super) fn is_bare_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '/' | '~' | '-'))
        // `end` is the exit target that is not a state.
        && name != "end"
}

/// A name, bare when possible, JSON-quoted otherwise.
pub(super) fn name(name: &str) -> Cow<'_, str> {
    if is_bare_name(name) {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(quote(name))
    }
}

/// A JSON string literal: escapes `"`, `\`, control characters and Unicode line separators,
/// keeps other Unicode as is.
pub(super) fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // Control characters, and separators some tools treat as line breaks.
            ch if ch.is_control() || matches!(ch, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                let _ = write!(out, "\\u{:04x}", ch as u32);
            }
            ch => out.push(ch),
        }
    }
    out.push('"');
    out
}

pub(super) fn origin_str(origin: Origin) -> String {
    match origin {
        Origin::Fuseraft(kind) => format!("fuseraft.{}", kind.as_str()),
        Origin::Tama => "tama".to_string(),
    }
}

pub(super) fn context_mode_str(mode: ContextMode) -> &'static str {
    match mode {
        ContextMode::Shared => "shared",
        ContextMode::Firewall => "firewall",
        ContextMode::Value => "value",
        ContextMode::Artifacts => "artifacts",
    }
}

pub(super) fn tool_choice_str(choice: ToolChoice) -> &'static str {
    match choice {
        ToolChoice::Auto => "auto",
        ToolChoice::Required => "required",
        ToolChoice::None => "none",
    }
}

pub(super) fn terminal_mode_str(mode: TerminalMode) -> &'static str {
    match mode {
        TerminalMode::RunOnce => "run_once",
        TerminalMode::EndNow => "end_now",
        TerminalMode::RunUntilTermination => "run_until_termination",
    }
}

struct Printer<'p> {
    program: &'p Program,
    options: PrintOptions,
    out: String,
}

impl Printer<'_> {
    fn line(&mut self, indent: bool, text: &str) {
        if indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn program(&mut self) {
        let program = self.program;
        self.line(false, &format!("fuseraft-ir {FORMAT_VERSION}"));
        self.line(
            false,
            &format!(
                "program {} origin {}",
                name(&program.name),
                origin_str(program.origin)
            ),
        );
        for (idx, file) in program.files.iter().enumerate() {
            self.line(false, &format!("file {idx} {}", quote(file)));
        }
        if !program.states.is_empty() || program.entry != StateId(0) {
            let entry = self.state_ref(program.entry);
            self.line(false, &format!("entry {entry}"));
        }
        if program.termination != Termination::default() {
            self.termination(&program.termination);
        }
        if program.failure != FailurePolicy::default() {
            self.failure(&program.failure);
        }
        for (key, value) in &program.settings {
            self.line(false, &format!("setting {} {}", quote(key), quote(value)));
        }
        if let Some(model) = &program.compaction_model {
            self.line(false, &format!("compaction model {}", model_fields(model)));
        }
        if !program.permissions.is_default() {
            self.line(
                false,
                &format!("permissions {}", program.permissions.preset),
            );
            for (category, action) in &program.permissions.overrides {
                self.line(false, &format!("permission {category} {action}"));
            }
        }
        for server in &program.mcp_servers {
            self.mcp_server(server);
        }
        for contract in &program.contracts {
            self.contract(contract);
        }
        if !program.counters.is_empty() {
            self.out.push('\n');
            for counter in &program.counters {
                self.line(false, &format!("counter {}", name(&counter.name)));
            }
        }
        for agent in &program.agents {
            self.agent(agent);
        }
        for state in &program.states {
            self.state(state);
        }
    }

    // ------------------------------------------------------------ references

    fn state_ref(&self, id: StateId) -> String {
        match self.program.states.get(id.0 as usize) {
            Some(state) => name(&state.name).into_owned(),
            None => quote(&format!("<invalid state #{}>", id.0)),
        }
    }

    fn agent_ref(&self, id: AgentId) -> String {
        match self.program.agents.get(id.0 as usize) {
            Some(agent) => name(&agent.name).into_owned(),
            None => quote(&format!("<invalid agent #{}>", id.0)),
        }
    }

    fn contract_ref(&self, id: ContractId) -> String {
        match self.program.contracts.get(id.0 as usize) {
            Some(contract) => name(&contract.name).into_owned(),
            None => quote(&format!("<invalid contract #{}>", id.0)),
        }
    }

    fn counter_ref(&self, id: CounterId) -> String {
        match self.program.counters.get(id.0 as usize) {
            Some(counter) => name(&counter.name).into_owned(),
            None => quote(&format!("<invalid counter #{}>", id.0)),
        }
    }

    fn target(&self, target: &Target) -> String {
        match target {
            Target::State(id) => self.state_ref(*id),
            Target::End => "end".to_string(),
        }
    }

    fn agent_list(&self, ids: &[AgentId]) -> String {
        let names: Vec<String> = ids.iter().map(|id| self.agent_ref(*id)).collect();
        format!("[{}]", names.join(", "))
    }

    /// ` @L:C` or ` @F:L:C`; empty for `None`.
    fn loc(loc: Option<Loc>) -> String {
        match loc {
            None => String::new(),
            Some(loc) if loc.file.0 == 0 => format!(" @{}:{}", loc.line, loc.column),
            Some(loc) => format!(" @{}:{}:{}", loc.file.0, loc.line, loc.column),
        }
    }

    /// User prose: quoted, or `elided(N)` when eliding.
    fn prose(&self, text: &str) -> String {
        if self.options.elide_text && !text.is_empty() {
            format!("elided({})", text.len())
        } else {
            quote(text)
        }
    }

    // ------------------------------------------------------------ header blocks

    fn termination(&mut self, termination: &Termination) {
        self.line(false, "termination");
        if termination.unit == TurnUnit::Phases {
            self.line(true, "unit phases");
        }
        if let Some(max) = termination.max_total_tokens {
            self.line(true, &format!("max_total_tokens {max}"));
        }
        if let Some(max) = termination.max_total_cost {
            self.line(true, &format!("max_total_cost {max}"));
        }
        for cond in &termination.any {
            let text = match cond {
                TermCond::MaxTurns(turns) => format!("max_turns {turns}"),
                TermCond::Tokens(tokens) => format!("tokens {tokens}"),
                TermCond::Regex { pattern, agents } => {
                    let mut text = format!("regex {}", quote(pattern));
                    if !agents.is_empty() {
                        text.push_str(&format!(" agents {}", name_list(agents)));
                    }
                    text
                }
                TermCond::Cond(cond) => format!("cond {}", quote(&cond.to_string())),
            };
            self.line(true, &text);
        }
        for guard in &termination.validators {
            let text = format!("require {}", self.guard(guard));
            self.line(true, &text);
        }
        for gate in &termination.gates {
            self.line(true, &format!("gate {} {}", gate.first, gate.end));
            for guard in &gate.validators {
                let text = format!("check {}", self.guard(guard));
                self.line(true, &text);
            }
        }
    }

    fn failure(&mut self, failure: &FailurePolicy) {
        let rule = |key: &str, rule: &FailureRule| {
            format!("{key} {} {}", rule.action.as_str(), rule.threshold)
        };
        let mut items = vec![
            rule("missing_evidence", &failure.missing_evidence),
            rule("invalid_transition", &failure.invalid_transition),
            rule("conflicting_evidence", &failure.conflicting_evidence),
            rule("no_progress", &failure.no_progress),
        ];
        if failure.max_contract_failures != 0 {
            items.push(format!(
                "max_contract_failures {}",
                failure.max_contract_failures
            ));
        }
        self.line(false, &format!("failure {}", items.join(", ")));
    }

    fn contract(&mut self, contract: &Contract) {
        self.out.push('\n');
        self.line(
            false,
            &format!(
                "contract {}{}",
                name(&contract.name),
                Self::loc(contract.loc)
            ),
        );
        for predicate in &contract.predicates {
            let text = format!(
                "require {}{}",
                name(&predicate.kind),
                params(&predicate.params)
            );
            self.line(true, &text);
        }
    }

    // ------------------------------------------------------------ MCP servers

    fn mcp_server(&mut self, server: &McpServer) {
        let target = match &server.transport {
            McpTransport::Stdio { command, .. } => command,
            McpTransport::Http { url, .. } => url,
        };
        self.line(
            false,
            &format!(
                "mcp {} {} {}{}",
                name(&server.name),
                server.transport.kind(),
                quote(target),
                Self::loc(server.loc)
            ),
        );
        match &server.transport {
            McpTransport::Stdio {
                args,
                env,
                working_directory,
                ..
            } => {
                for arg in args {
                    self.line(true, &format!("arg {}", quote(arg)));
                }
                for (key, value) in env {
                    self.line(true, &format!("env {} {}", quote(key), quote(value)));
                }
                if let Some(dir) = working_directory {
                    self.line(true, &format!("cwd {}", quote(dir)));
                }
            }
            McpTransport::Http { headers, .. } => {
                for (key, value) in headers {
                    self.line(true, &format!("header {} {}", quote(key), quote(value)));
                }
            }
        }
        if let Some(seconds) = server.timeout_seconds {
            self.line(true, &format!("timeout {seconds}"));
        }
    }

    // ------------------------------------------------------------ agents

    fn agent(&mut self, agent: &Agent) {
        self.out.push('\n');
        self.line(
            false,
            &format!("agent {}{}", name(&agent.name), Self::loc(agent.loc)),
        );
        if let Some(description) = &agent.description {
            let text = format!("description {}", self.prose(description));
            self.line(true, &text);
        }
        if let Some(model) = &agent.model {
            self.line(true, &format!("model {}", model_fields(model)));
        }
        if !agent.tools.is_empty() {
            self.line(true, &format!("tools {}", name_list(&agent.tools)));
        }
        for (plugin, tags) in &agent.capabilities {
            self.line(
                true,
                &format!(
                    "capability {} {}",
                    name(plugin.as_str()),
                    name_list(
                        &tags
                            .iter()
                            .map(|tag| tag.as_str().to_string())
                            .collect::<Vec<_>>()
                    )
                ),
            );
        }
        if agent.tool_choice != ToolChoice::Auto {
            self.line(
                true,
                &format!("tool_choice {}", tool_choice_str(agent.tool_choice)),
            );
        }
        if agent.context != Context::default() {
            self.line(true, &format!("context {}", context(&agent.context)));
        }
        if let Some(pattern) = &agent.pattern {
            self.line(true, &format!("pattern {}", name(pattern)));
        }
        if let Some(model) = &agent.sub_agent.model {
            self.line(true, &format!("sub_agent_model {}", model_fields(model)));
        }
        if !agent.sub_agent.plugins.is_empty() {
            let plugins: Vec<String> = agent
                .sub_agent
                .plugins
                .iter()
                .map(|plugin| plugin.as_str().to_string())
                .collect();
            self.line(true, &format!("sub_agent_plugins {}", name_list(&plugins)));
        }
        if let Some(max) = agent.sub_agent.max_tool_calls {
            self.line(true, &format!("sub_agent_max_tool_calls {max}"));
        }
        if !agent.instructions.is_empty() {
            let text = format!("instructions {}", self.prose(&agent.instructions));
            self.line(true, &text);
        }
    }

    // ------------------------------------------------------------ states

    fn state(&mut self, state: &State) {
        self.out.push('\n');
        let layer = match state.layer {
            Some(layer) => layer.to_string(),
            None => "-".to_string(),
        };
        self.line(
            false,
            &format!(
                "state {} layer {layer}{}",
                name(&state.name),
                Self::loc(state.loc)
            ),
        );
        let agent = match state.agent {
            Some(id) => format!(" agent {}", self.agent_ref(id)),
            None => String::new(),
        };
        match &state.kind {
            StateKind::Turn => self.line(true, &format!("turn{agent}")),
            StateKind::Terminal(mode) => {
                self.line(
                    true,
                    &format!("terminal {}{agent}", terminal_mode_str(*mode)),
                );
            }
            StateKind::Fork(fork) => {
                let text = self.fork(fork, &agent);
                self.line(true, &text);
            }
            StateKind::Select(select) => self.select(select, &agent),
        }
        if let Some(mode) = state.context {
            self.line(true, &format!("context {}", context_mode_str(mode)));
        }
        for exit in &state.exits {
            let text = self.exit(exit);
            self.line(true, &text);
        }
        match &state.no_match {
            NoMatch::Never => {}
            NoMatch::Correct { nudge: true } => self.line(true, "no_match correct nudge"),
            NoMatch::Correct { nudge: false } => self.line(true, "no_match correct"),
            NoMatch::Fallback(id) => {
                let text = format!("no_match fallback {}", self.state_ref(*id));
                self.line(true, &text);
            }
            NoMatch::Fail => self.line(true, "no_match fail"),
        }
        if state.stuck != StuckPolicy::default() {
            self.line(true, &format!("stuck{}", stuck(&state.stuck)));
        }
    }

    fn fork(&self, fork: &Fork, agent: &str) -> String {
        let branches: Vec<String> = fork.branches.iter().map(|id| self.state_ref(*id)).collect();
        let mut text = format!(
            "fork branches [{}] join {} merge {}",
            branches.join(", "),
            self.target(&fork.join),
            fork.merge.as_str()
        );
        if let Some(id) = fork.merge_agent {
            text.push_str(&format!(" merge_agent {}", self.agent_ref(id)));
        }
        text.push_str(agent);
        text
    }

    fn select(&mut self, select: &Select, agent: &str) {
        let style = match &select.style {
            SelectStyle::Llm => "llm".to_string(),
            SelectStyle::Magentic {
                max_rounds,
                max_stalls,
                max_resets,
                plan_review,
            } => format!(
                "magentic max_rounds {max_rounds} max_stalls {max_stalls} \
                 max_resets {max_resets} plan_review {plan_review}"
            ),
        };
        self.line(true, &format!("select {style}{agent}"));
        if let Some(model) = &select.manager {
            self.line(true, &format!("manager model {}", model_fields(model)));
        }
        if let Some(prompt) = &select.prompt {
            let text = format!("prompt {}", self.prose(prompt));
            self.line(true, &text);
        }
    }

    fn exit(&self, exit: &Exit) -> String {
        let mut text = format!("exit {}", self.trigger(&exit.trigger));
        for guard in &exit.guards {
            text.push_str(" guard ");
            text.push_str(&self.guard(guard));
        }
        for effect in &exit.effects {
            text.push_str(" effect ");
            text.push_str(&self.effect(effect));
        }
        text.push_str(" -> ");
        text.push_str(&self.target(&exit.target));
        text.push_str(match exit.class {
            EdgeClass::Forward => " forward",
            EdgeClass::Back => " back",
        });
        if let Some(id) = exit.recovery {
            text.push_str(" recovery ");
            text.push_str(&self.agent_ref(id));
        }
        text.push_str(&Self::loc(exit.loc));
        text
    }

    fn from(&self, sources: &[AgentId]) -> String {
        if sources.is_empty() {
            String::new()
        } else {
            format!(" from {}", self.agent_list(sources))
        }
    }

    fn trigger(&self, trigger: &Trigger) -> String {
        match trigger {
            Trigger::Signal {
                text,
                matcher,
                sources,
            } => format!(
                "signal {} {}{}",
                quote(text),
                matcher.as_str(),
                self.from(sources)
            ),
            Trigger::FinishKey(key) => format!("finish_key {}", quote(key)),
            Trigger::AnyKey => "any_key".to_string(),
            Trigger::Cond { cond, sources } => {
                format!("cond {}{}", quote(&cond.to_string()), self.from(sources))
            }
            Trigger::Chosen => "chosen".to_string(),
            Trigger::Always => "always".to_string(),
            Trigger::Otherwise => "otherwise".to_string(),
        }
    }

    fn guard(&self, guard: &Guard) -> String {
        match guard {
            Guard::Validator {
                name: validator,
                params: list,
            } => {
                format!("validator {}{}", name(validator), params(list))
            }
            Guard::Contract(id) => format!("contract {}", self.contract_ref(*id)),
            Guard::Cond(cond) => format!("cond {}", quote(&cond.to_string())),
            Guard::HumanApproval => "human_approval".to_string(),
            Guard::CounterBelow(id, limit) => {
                format!("counter_below {} {limit}", self.counter_ref(*id))
            }
        }
    }

    fn effect(&self, effect: &Effect) -> String {
        match effect {
            Effect::InjectContext(list) => format!("inject_context {}", source_list(list)),
            Effect::Count(id) => format!("count {}", self.counter_ref(*id)),
            Effect::Reset(id) => format!("reset {}", self.counter_ref(*id)),
            Effect::PhaseBreak => "phase_break".to_string(),
            Effect::PromoteArtifact => "promote_artifact".to_string(),
            Effect::InjectCritique => "inject_critique".to_string(),
            Effect::Warn(text) => format!("warn {}", quote(text)),
            Effect::Revisit {
                counter,
                max,
                objections,
            } => {
                let mut text = format!("revisit {} max {max}", self.counter_ref(*counter));
                if let Some(path) = objections {
                    text.push_str(&format!(" objections {}", quote(path)));
                }
                text
            }
        }
    }
}

fn name_list(names: &[String]) -> String {
    let names: Vec<Cow<'_, str>> = names.iter().map(|text| name(text)).collect();
    format!("[{}]", names.join(", "))
}

/// ` Key="value" ...` (leading space per parameter).
fn params(params: &[(String, String)]) -> String {
    let mut text = String::new();
    for (key, value) in params {
        let _ = write!(text, " {}={}", name(key), quote(value));
    }
    text
}

fn source_list(sources: &[ContextSource]) -> String {
    let sources: Vec<String> = sources
        .iter()
        .map(|source| {
            let mut text = quote(&source.source);
            if source.max_chars != 0 {
                let _ = write!(text, " max_chars {}", source.max_chars);
            }
            if let Some(label) = &source.label {
                let _ = write!(text, " label {}", quote(label));
            }
            text
        })
        .collect();
    format!("[{}]", sources.join(", "))
}

fn model_fields(model: &Model) -> String {
    let mut text = String::new();
    if let Some(alias) = &model.alias {
        let _ = write!(text, "alias {} ", name(alias));
    }
    if let Some(provider) = &model.provider {
        let _ = write!(text, "provider {} ", name(provider));
    }
    let _ = write!(text, "id {}", quote(&model.id));
    if let Some(endpoint) = &model.endpoint {
        let _ = write!(text, " endpoint {}", quote(endpoint));
    }
    if let Some(key_env) = &model.api_key_env {
        let _ = write!(text, " key_env {}", name(key_env));
    }
    if model.has_literal_key {
        text.push_str(" literal_key");
    }
    if let Some(temperature) = &model.temperature {
        let _ = write!(text, " temperature {}", quote(temperature));
    }
    if let Some(max_tokens) = model.max_tokens {
        let _ = write!(text, " max_tokens {max_tokens}");
    }
    if let Some(reasoning) = &model.reasoning_effort {
        let _ = write!(text, " reasoning {}", name(reasoning));
    }
    if let Some(window) = model.context_window {
        let _ = write!(text, " context_window {window}");
    }
    if let Some(pricing) = &model.pricing {
        let _ = write!(text, " pricing {} {}", pricing.input, pricing.output);
        if let Some(cached) = pricing.cached_input {
            let _ = write!(text, " cached {cached}");
        }
    }
    let timeouts = &model.timeouts;
    for (keyword, seconds) in [
        ("connect_timeout", timeouts.connect),
        ("idle_timeout", timeouts.idle),
        ("timeout", timeouts.overall),
    ] {
        if let Some(seconds) = seconds {
            let _ = write!(text, " {keyword} {seconds}");
        }
    }
    text
}

fn context(context: &Context) -> String {
    let mut text = context_mode_str(context.mode).to_string();
    if context.text_only {
        text.push_str(" text_only");
    }
    if !context.exclude_agents.is_empty() {
        let _ = write!(text, " exclude {}", name_list(&context.exclude_agents));
    }
    if context.max_tail != 0 {
        let _ = write!(text, " tail {}", context.max_tail);
    }
    if context.max_turn_age != 0 {
        let _ = write!(text, " turn_age {}", context.max_turn_age);
    }
    if context.max_tool_result_chars != 0 {
        let _ = write!(text, " tool_result_chars {}", context.max_tool_result_chars);
    }
    if context.max_replay_chars != 0 {
        let _ = write!(text, " replay_chars {}", context.max_replay_chars);
    }
    for (tool, chars) in &context.tool_result_overrides {
        let _ = write!(text, " tool_result_chars_for {} {chars}", tool.name());
    }
    if let Some(fraction) = context.cap_fraction {
        let _ = write!(text, " cap_fraction {fraction}");
    }
    if !context.sources.is_empty() {
        let _ = write!(text, " sources {}", source_list(&context.sources));
    }
    text
}

fn stuck(stuck: &StuckPolicy) -> String {
    let mut text = String::new();
    if let Some(max) = stuck.max_retries {
        let _ = write!(text, " max_retries {max}");
    }
    if let Some(max) = stuck.max_visit_turns {
        let _ = write!(text, " max_visit_turns {max}");
    }
    if let Some(max) = stuck.max_without_signal {
        let _ = write!(text, " max_without_signal {max}");
    }
    text
}

/// The sample programs shared by the printer and parser tests: `fixtures/ir/*.fir` (a new
/// case is a new file there; `tests/ir_fixtures.rs` holds each to printing back the same
/// bytes), and two small ones built here.
#[cfg(test)]
pub(super) mod samples {
    use crate::ir::*;

    /// A fixture of `fixtures/ir/`, parsed.
    fn fixture(name: &str, text: &str) -> Program {
        crate::ir::parse(text).unwrap_or_else(|error| panic!("fixtures/ir/{name}: {error:?}"))
    }

    /// An agent with nothing but its name.
    pub(in crate::ir) fn agent_named(name: &str) -> Agent {
        Agent {
            name: name.to_string(),
            description: None,
            model: None,
            instructions: String::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            capabilities: Vec::new(),
            context: Context::default(),
            pattern: None,
            sub_agent: SubAgentSettings::default(),
            loc: None,
        }
    }

    /// A state-machine team in the shape the fuseraft lowering produces.
    pub fn team() -> Program {
        fixture("team.fir", include_str!("../../../fixtures/ir/team.fir"))
    }

    /// Every kind of line and option of the text form at least once.
    pub fn kitchen_sink() -> Program {
        fixture(
            "kitchen-sink.fir",
            include_str!("../../../fixtures/ir/kitchen-sink.fir"),
        )
    }

    /// The smallest program: one agentless state that ends at once, no files.
    pub fn empty() -> Program {
        Program {
            name: String::new(),
            origin: Origin::Fuseraft(SelectionKind::Sequential),
            files: Vec::new(),
            entry: StateId(0),
            agents: Vec::new(),
            states: vec![State {
                name: "only".into(),
                agent: None,
                kind: StateKind::Terminal(TerminalMode::EndNow),
                context: None,
                layer: Some(0),
                exits: Vec::new(),
                no_match: NoMatch::Never,
                stuck: StuckPolicy::default(),
                loc: None,
            }],
            contracts: Vec::new(),
            counters: Vec::new(),
            termination: Termination::default(),
            failure: FailurePolicy::default(),
            settings: Vec::new(),
            permissions: Permissions::default(),
            mcp_servers: Vec::new(),
            compaction_model: None,
        }
    }

    /// Every sample, with `team` once per selection kind.
    pub fn all() -> Vec<Program> {
        let mut programs = vec![team(), kitchen_sink(), empty()];
        for kind in SelectionKind::ALL {
            let mut program = team();
            program.origin = Origin::Fuseraft(*kind);
            programs.push(program);
        }
        programs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixtures print back byte for byte (`tests/ir_fixtures.rs` walks every file of
    /// `fixtures/ir/`; these two are the ones the unit tests build on).
    #[test]
    fn the_sample_fixtures_print_back_the_same() {
        let team = include_str!("../../../fixtures/ir/team.fir");
        assert_eq!(print(&samples::team(), &PrintOptions::default()), team);
        let sink = include_str!("../../../fixtures/ir/kitchen-sink.fir");
        assert_eq!(samples::kitchen_sink().to_string(), sink);
    }

    #[test]
    fn elided_snapshot() {
        let options = PrintOptions { elide_text: true };
        insta::assert_snapshot!(print(&samples::team(), &options));
    }

    #[test]
    fn docs_example_is_current() {
        let docs = include_str!("../../../docs/ir.md");
        let example = docs
            .split_once("### Example\n\n```text\n")
            .and_then(|(_, rest)| rest.split_once("```"))
            .map(|(example, _)| example)
            .expect("docs/ir.md has an example");
        assert_eq!(example, print(&samples::team(), &PrintOptions::default()));
    }

    #[test]
    fn names_are_bare_only_when_safe() {
        for bare in ["Planner", "_x", "a.b/c~d-e", "stage1.rounds", "End", "ends"] {
            assert_eq!(name(bare), bare, "{bare}");
        }
        for quoted in [
            "", "end", "1st", "a b", "-x", "a\"b", "é", "a:b", "a,b", "a=b",
        ] {
            assert!(name(quoted).starts_with('"'), "{quoted}");
        }
    }

    #[test]
    fn quote_matches_json() {
        let text =
            "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{1f}j\u{7f}k\u{85}\u{2028}\u{2029}\u{feff}é🚀";
        let quoted = quote(text);
        assert_eq!(
            quoted,
            "\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001i\\u001fj\\u007fk\\u0085\\u2028\\u2029\\ufeffé🚀\""
        );
        let back: String = serde_json::from_str(&quoted).expect("valid JSON string");
        assert_eq!(back, text);
        assert!(!quoted.contains('\n') && !quoted.contains('\r'));
    }

    #[test]
    fn printing_is_deterministic() {
        for program in samples::all() {
            assert_eq!(program.to_string(), program.to_string());
        }
    }

    #[test]
    fn invalid_ids_print_without_panicking() {
        let mut program = samples::team();
        program.entry = StateId(99);
        program.states[0].agent = Some(AgentId(42));
        program.states[0].exits[0].target = Target::State(StateId(77));
        let text = program.to_string();
        assert!(text.contains("entry \"<invalid state #99>\""), "{text}");
        assert!(text.contains("<invalid agent #42>"), "{text}");
    }
}
