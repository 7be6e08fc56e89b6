//! The printer of the textual IR (`.fir`), the inverse of [`super::parse`].
//!
//! The format is described in `docs/ir.md` ("Text form"). Output is deterministic: items
//! appear in the order of the program's vectors, references are by name, strings are
//! JSON-escaped, and optional values are omitted when they are `None` or the default.
//!
//! Everything is appended to one `String`: no line, name or quoted string is built on its
//! own first (a 10,000-state program prints 1.4 MB, and a `format!` per piece was a sixth
//! of a whole `fuseraft compile`).

use std::fmt::{self, Write as _};

use super::{
    Agent, AgentId, Context, ContextMode, ContextSource, Contract, ContractId, CounterId,
    EdgeClass, Effect, Exit, FailurePolicy, FailureRule, Fork, Guard, Loc, McpServer, McpTransport,
    Model, NoMatch, Origin, Program, Select, SelectStyle, State, StateId, StateKind, StepKey,
    StuckPolicy, Target, TermCond, TerminalMode, Termination, ToolChoice, Trigger, TurnUnit,
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
        out: String::with_capacity(estimated_size(program)),
    };
    printer.program();
    printer.out
}

/// A little more than the printed size of a typical program: a state of a generated chain
/// prints about 140 bytes, an agent its prose and a line per setting. Too small an estimate
/// would double the buffer at the end, holding twice the text.
fn estimated_size(program: &Program) -> usize {
    let prose: usize = program
        .agents
        .iter()
        .map(|agent| {
            agent.instructions.len() + agent.description.as_ref().map_or(0, String::len) + 256
        })
        .sum();
    1024 + prose + program.states.len() * 160
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self, &PrintOptions::default()))
    }
}

/// True when `name` can be printed without quotes.
pub(super) fn is_bare_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let Some((&first, rest)) = bytes.split_first() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == b'_')
        && rest
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'~' | b'-'))
        // `end` is the exit target that is not a state.
        && name != "end"
}

/// Appends a name, bare when possible, JSON-quoted otherwise.
fn push_name(out: &mut String, name: &str) {
    if is_bare_name(name) {
        out.push_str(name);
    } else {
        push_quoted(out, name);
    }
}

/// A JSON string literal: escapes `"`, `\`, control characters and Unicode line separators,
/// keeps other Unicode as is.
#[cfg(test)]
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_quoted(&mut out, text);
    out
}

/// Appends `text` as a JSON string literal (see [`quote`]). Printable ASCII without `"` or
/// `\`, nearly every string of a config, is copied in one piece.
fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    if text
        .bytes()
        .all(|b| matches!(b, b' '..=b'~') && b != b'"' && b != b'\\')
    {
        out.push_str(text);
    } else {
        push_escaped(out, text);
    }
    out.push('"');
}

fn push_escaped(out: &mut String, text: &str) {
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
}

/// Appends a number in decimal, as `Display` would, without the formatting machinery.
fn push_u64(out: &mut String, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // `value % 10` is below 10, so this is a digit.
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    for &digit in &digits[at..] {
        out.push(char::from(digit));
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
    /// Starts a line: two spaces when `indent`.
    fn open(&mut self, indent: bool, text: &str) {
        if indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
    }

    fn close(&mut self) {
        self.out.push('\n');
    }

    /// A whole line of fixed text.
    fn line(&mut self, indent: bool, text: &str) {
        self.open(indent, text);
        self.close();
    }

    fn program(&mut self) {
        let program = self.program;
        let _ = writeln!(self.out, "fuseraft-ir {FORMAT_VERSION}");
        self.open(false, "program ");
        push_name(&mut self.out, &program.name);
        self.out.push_str(" origin ");
        match program.origin {
            Origin::Fuseraft(kind) => {
                self.out.push_str("fuseraft.");
                self.out.push_str(kind.as_str());
            }
            Origin::Tama => self.out.push_str("tama"),
        }
        self.close();
        for (idx, file) in program.files.iter().enumerate() {
            self.open(false, "file ");
            push_u64(&mut self.out, idx as u64);
            self.out.push(' ');
            push_quoted(&mut self.out, file);
            self.close();
        }
        if !program.states.is_empty() || program.entry != StateId(0) {
            self.open(false, "entry ");
            self.state_ref(program.entry);
            self.close();
        }
        if program.termination != Termination::default() {
            self.termination(&program.termination);
        }
        if program.failure != FailurePolicy::default() {
            self.failure(&program.failure);
        }
        for (key, value) in &program.settings {
            self.open(false, "setting ");
            push_quoted(&mut self.out, key);
            self.out.push(' ');
            push_quoted(&mut self.out, value);
            self.close();
        }
        if let Some(model) = &program.compaction_model {
            self.open(false, "compaction model ");
            model_fields(&mut self.out, model);
            self.close();
        }
        if !program.permissions.is_default() {
            let _ = writeln!(self.out, "permissions {}", program.permissions.preset);
            for (category, action) in &program.permissions.overrides {
                let _ = writeln!(self.out, "permission {category} {action}");
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
                self.open(false, "counter ");
                push_name(&mut self.out, &counter.name);
                self.close();
            }
        }
        for skill in &program.skills {
            self.open(false, "skill ");
            push_name(&mut self.out, &skill.name);
            self.out.push_str(" description ");
            self.prose(&skill.description);
            self.out.push_str(" body ");
            self.prose(&skill.body);
            self.close();
        }
        for agent in &program.agents {
            self.agent(agent);
        }
        for state in &program.states {
            self.state(state);
        }
    }

    // ------------------------------------------------------------ references

    fn state_ref(&mut self, id: StateId) {
        match self.program.states.get(id.0 as usize) {
            Some(state) => push_name(&mut self.out, &state.name),
            None => push_quoted(&mut self.out, &format!("<invalid state #{}>", id.0)),
        }
    }

    fn agent_ref(&mut self, id: AgentId) {
        match self.program.agents.get(id.0 as usize) {
            Some(agent) => push_name(&mut self.out, &agent.name),
            None => push_quoted(&mut self.out, &format!("<invalid agent #{}>", id.0)),
        }
    }

    fn contract_ref(&mut self, id: ContractId) {
        match self.program.contracts.get(id.0 as usize) {
            Some(contract) => push_name(&mut self.out, &contract.name),
            None => push_quoted(&mut self.out, &format!("<invalid contract #{}>", id.0)),
        }
    }

    fn counter_ref(&mut self, id: CounterId) {
        match self.program.counters.get(id.0 as usize) {
            Some(counter) => push_name(&mut self.out, &counter.name),
            None => push_quoted(&mut self.out, &format!("<invalid counter #{}>", id.0)),
        }
    }

    fn target(&mut self, target: &Target) {
        match target {
            Target::State(id) => self.state_ref(*id),
            Target::End => self.out.push_str("end"),
        }
    }

    /// `[a, b]`.
    fn agent_list(&mut self, ids: &[AgentId]) {
        self.out.push('[');
        for (idx, id) in ids.iter().enumerate() {
            if idx > 0 {
                self.out.push_str(", ");
            }
            self.agent_ref(*id);
        }
        self.out.push(']');
    }

    /// ` @L:C` or ` @F:L:C`; nothing for `None`.
    fn loc(&mut self, loc: Option<Loc>) {
        let Some(loc) = loc else {
            return;
        };
        self.out.push_str(" @");
        if loc.file.0 != 0 {
            push_u64(&mut self.out, u64::from(loc.file.0));
            self.out.push(':');
        }
        push_u64(&mut self.out, u64::from(loc.line));
        self.out.push(':');
        push_u64(&mut self.out, u64::from(loc.column));
    }

    /// User prose: quoted, or `elided(N)` when eliding.
    fn prose(&mut self, text: &str) {
        if self.options.elide_text && !text.is_empty() {
            let _ = write!(self.out, "elided({})", text.len());
        } else {
            push_quoted(&mut self.out, text);
        }
    }

    // ------------------------------------------------------------ header blocks

    fn termination(&mut self, termination: &Termination) {
        self.line(false, "termination");
        if termination.unit == TurnUnit::Phases {
            self.line(true, "unit phases");
        }
        if let Some(max) = termination.max_total_tokens {
            let _ = writeln!(self.out, "  max_total_tokens {max}");
        }
        if let Some(max) = termination.max_total_cost {
            let _ = writeln!(self.out, "  max_total_cost {max}");
        }
        for cond in &termination.any {
            match cond {
                TermCond::MaxTurns(turns) => {
                    let _ = write!(self.out, "  max_turns {turns}");
                }
                TermCond::Tokens(tokens) => {
                    let _ = write!(self.out, "  tokens {tokens}");
                }
                TermCond::Regex { pattern, agents } => {
                    self.open(true, "regex ");
                    push_quoted(&mut self.out, pattern);
                    if !agents.is_empty() {
                        self.out.push_str(" agents ");
                        name_list(&mut self.out, agents.iter().map(String::as_str));
                    }
                }
                TermCond::Cond(cond) => {
                    self.open(true, "cond ");
                    push_quoted(&mut self.out, &cond.to_string());
                }
            }
            self.close();
        }
        for guard in &termination.validators {
            self.open(true, "require ");
            self.guard(guard);
            self.close();
        }
        for gate in &termination.gates {
            let _ = writeln!(self.out, "  gate {} {}", gate.first, gate.end);
            for guard in &gate.validators {
                self.open(true, "check ");
                self.guard(guard);
                self.close();
            }
        }
    }

    fn failure(&mut self, failure: &FailurePolicy) {
        let rules = [
            ("missing_evidence", &failure.missing_evidence),
            ("invalid_transition", &failure.invalid_transition),
            ("conflicting_evidence", &failure.conflicting_evidence),
            ("no_progress", &failure.no_progress),
        ];
        self.out.push_str("failure ");
        for (idx, (key, rule)) in rules.into_iter().enumerate() {
            if idx > 0 {
                self.out.push_str(", ");
            }
            push_rule(&mut self.out, key, rule);
        }
        if failure.max_contract_failures != 0 {
            let _ = write!(
                self.out,
                ", max_contract_failures {}",
                failure.max_contract_failures
            );
        }
        self.close();
    }

    fn contract(&mut self, contract: &Contract) {
        self.out.push('\n');
        self.open(false, "contract ");
        push_name(&mut self.out, &contract.name);
        self.loc(contract.loc);
        self.close();
        for predicate in &contract.predicates {
            self.open(true, "require ");
            push_name(&mut self.out, &predicate.kind);
            params(&mut self.out, &predicate.params);
            self.close();
        }
    }

    // ------------------------------------------------------------ MCP servers

    fn mcp_server(&mut self, server: &McpServer) {
        let target = match &server.transport {
            McpTransport::Stdio { command, .. } => command,
            McpTransport::Http { url, .. } => url,
        };
        self.open(false, "mcp ");
        push_name(&mut self.out, &server.name);
        self.out.push(' ');
        self.out.push_str(server.transport.kind());
        self.out.push(' ');
        push_quoted(&mut self.out, target);
        self.loc(server.loc);
        self.close();
        match &server.transport {
            McpTransport::Stdio {
                args,
                env,
                working_directory,
                ..
            } => {
                for arg in args {
                    self.open(true, "arg ");
                    push_quoted(&mut self.out, arg);
                    self.close();
                }
                for (key, value) in env {
                    self.open(true, "env ");
                    push_quoted(&mut self.out, key);
                    self.out.push(' ');
                    push_quoted(&mut self.out, value);
                    self.close();
                }
                if let Some(dir) = working_directory {
                    self.open(true, "cwd ");
                    push_quoted(&mut self.out, dir);
                    self.close();
                }
            }
            McpTransport::Http { headers, .. } => {
                for (key, value) in headers {
                    self.open(true, "header ");
                    push_quoted(&mut self.out, key);
                    self.out.push(' ');
                    push_quoted(&mut self.out, value);
                    self.close();
                }
            }
        }
        if let Some(seconds) = server.timeout_seconds {
            let _ = writeln!(self.out, "  timeout {seconds}");
        }
    }

    // ------------------------------------------------------------ agents

    fn agent(&mut self, agent: &Agent) {
        self.out.push('\n');
        self.open(false, "agent ");
        push_name(&mut self.out, &agent.name);
        self.loc(agent.loc);
        self.close();
        if let Some(description) = &agent.description {
            self.open(true, "description ");
            self.prose(description);
            self.close();
        }
        if let Some(model) = &agent.model {
            self.open(true, "model ");
            model_fields(&mut self.out, model);
            self.close();
        }
        if !agent.tools.is_empty() {
            self.open(true, "tools ");
            name_list(&mut self.out, agent.tools.iter().map(String::as_str));
            self.close();
        }
        for (plugin, tags) in &agent.capabilities {
            self.open(true, "capability ");
            push_name(&mut self.out, plugin.as_str());
            self.out.push(' ');
            name_list(&mut self.out, tags.iter().map(|tag| tag.as_str()));
            self.close();
        }
        if agent.tool_choice != ToolChoice::Auto {
            self.open(true, "tool_choice ");
            self.out.push_str(tool_choice_str(agent.tool_choice));
            self.close();
        }
        if agent.context != Context::default() {
            self.open(true, "context ");
            context(&mut self.out, &agent.context);
            self.close();
        }
        if let Some(pattern) = &agent.pattern {
            self.open(true, "pattern ");
            push_name(&mut self.out, pattern);
            self.close();
        }
        if let Some(model) = &agent.sub_agent.model {
            self.open(true, "sub_agent_model ");
            model_fields(&mut self.out, model);
            self.close();
        }
        if !agent.sub_agent.plugins.is_empty() {
            self.open(true, "sub_agent_plugins ");
            name_list(
                &mut self.out,
                agent.sub_agent.plugins.iter().map(|plugin| plugin.as_str()),
            );
            self.close();
        }
        if let Some(max) = agent.sub_agent.max_tool_calls {
            let _ = writeln!(self.out, "  sub_agent_max_tool_calls {max}");
        }
        if !agent.instructions.is_empty() {
            self.open(true, "instructions ");
            self.prose(&agent.instructions);
            self.close();
        }
    }

    // ------------------------------------------------------------ states

    fn state(&mut self, state: &State) {
        self.out.push('\n');
        self.open(false, "state ");
        push_name(&mut self.out, &state.name);
        self.out.push_str(" layer ");
        match state.layer {
            Some(layer) => push_u64(&mut self.out, u64::from(layer)),
            None => self.out.push('-'),
        }
        self.loc(state.loc);
        self.close();
        match &state.kind {
            StateKind::Turn => {
                self.open(true, "turn");
                self.state_agent(state);
                self.close();
            }
            StateKind::Terminal(mode) => {
                self.open(true, "terminal ");
                self.out.push_str(terminal_mode_str(*mode));
                self.state_agent(state);
                self.close();
            }
            StateKind::Fork(fork) => {
                self.fork(fork);
                self.state_agent(state);
                self.close();
            }
            StateKind::Select(select) => self.select(select, state),
        }
        if let Some(mode) = state.context {
            self.open(true, "context ");
            self.out.push_str(context_mode_str(mode));
            self.close();
        }
        if let Some(step) = &state.step {
            self.open(true, "step key ");
            match &step.key {
                StepKey::Finish => self.out.push_str("finish"),
                StepKey::Fixed(key) => {
                    self.out.push_str("fixed ");
                    push_quoted(&mut self.out, key);
                }
                StepKey::Verdict => self.out.push_str("verdict"),
            }
            if step.react {
                self.out.push_str(" react");
            }
            if let Some(input) = &step.input {
                self.out.push_str(" input ");
                let text = self.program.template_text(input);
                push_quoted(&mut self.out, &text);
            }
            self.close();
        }
        for exit in &state.exits {
            self.exit(exit);
        }
        match &state.no_match {
            NoMatch::Never => {}
            NoMatch::Correct { nudge: true } => self.line(true, "no_match correct nudge"),
            NoMatch::Correct { nudge: false } => self.line(true, "no_match correct"),
            NoMatch::Fallback(id) => {
                self.open(true, "no_match fallback ");
                self.state_ref(*id);
                self.close();
            }
            NoMatch::Fail => self.line(true, "no_match fail"),
        }
        if state.stuck != StuckPolicy::default() {
            self.open(true, "stuck");
            stuck(&mut self.out, &state.stuck);
            self.close();
        }
    }

    /// ` agent NAME` when the state has one.
    fn state_agent(&mut self, state: &State) {
        if let Some(id) = state.agent {
            self.out.push_str(" agent ");
            self.agent_ref(id);
        }
    }

    /// The `fork` line without the state's agent and the line end.
    fn fork(&mut self, fork: &Fork) {
        self.open(true, "fork branches [");
        for (idx, id) in fork.branches.iter().enumerate() {
            if idx > 0 {
                self.out.push_str(", ");
            }
            self.state_ref(*id);
        }
        self.out.push_str("] join ");
        self.target(&fork.join);
        self.out.push_str(" merge ");
        self.out.push_str(fork.merge.as_str());
        if let Some(id) = fork.merge_agent {
            self.out.push_str(" merge_agent ");
            self.agent_ref(id);
        }
        if let Some(path) = &fork.per_item {
            self.out.push_str(" per_item ");
            push_quoted(&mut self.out, &path.join("."));
        }
        if fork.per_line {
            self.out.push_str(" line_items");
        }
        if fork.sequential {
            self.out.push_str(" sequential");
        }
    }

    fn select(&mut self, select: &Select, state: &State) {
        self.open(true, "select ");
        match &select.style {
            SelectStyle::Llm => self.out.push_str("llm"),
            SelectStyle::Magentic {
                max_rounds,
                max_stalls,
                max_resets,
                plan_review,
            } => {
                let _ = write!(
                    self.out,
                    "magentic max_rounds {max_rounds} max_stalls {max_stalls} \
                     max_resets {max_resets} plan_review {plan_review}"
                );
            }
        }
        self.state_agent(state);
        self.close();
        if let Some(model) = &select.manager {
            self.open(true, "manager model ");
            model_fields(&mut self.out, model);
            self.close();
        }
        if let Some(prompt) = &select.prompt {
            self.open(true, "prompt ");
            self.prose(prompt);
            self.close();
        }
    }

    /// A whole `exit` line.
    fn exit(&mut self, exit: &Exit) {
        self.open(true, "exit ");
        self.trigger(&exit.trigger);
        for guard in &exit.guards {
            self.out.push_str(" guard ");
            self.guard(guard);
        }
        for effect in &exit.effects {
            self.out.push_str(" effect ");
            self.effect(effect);
        }
        self.out.push_str(" -> ");
        self.target(&exit.target);
        self.out.push_str(match exit.class {
            EdgeClass::Forward => " forward",
            EdgeClass::Back => " back",
        });
        if let Some(id) = exit.recovery {
            self.out.push_str(" recovery ");
            self.agent_ref(id);
        }
        self.loc(exit.loc);
        self.close();
    }

    /// ` from [a, b]`; nothing for no sources.
    fn from(&mut self, sources: &[AgentId]) {
        if !sources.is_empty() {
            self.out.push_str(" from ");
            self.agent_list(sources);
        }
    }

    fn trigger(&mut self, trigger: &Trigger) {
        match trigger {
            Trigger::Signal {
                text,
                matcher,
                sources,
            } => {
                self.out.push_str("signal ");
                push_quoted(&mut self.out, text);
                self.out.push(' ');
                self.out.push_str(matcher.as_str());
                self.from(sources);
            }
            Trigger::FinishKey(key) => {
                self.out.push_str("finish_key ");
                push_quoted(&mut self.out, key);
            }
            Trigger::AnyKey => self.out.push_str("any_key"),
            Trigger::Cond { cond, sources } => {
                self.out.push_str("cond ");
                push_quoted(&mut self.out, &cond.to_string());
                self.from(sources);
            }
            Trigger::Chosen => self.out.push_str("chosen"),
            Trigger::Always => self.out.push_str("always"),
            Trigger::Otherwise => self.out.push_str("otherwise"),
        }
    }

    fn guard(&mut self, guard: &Guard) {
        match guard {
            Guard::Validator {
                name: validator,
                params: list,
            } => {
                self.out.push_str("validator ");
                push_name(&mut self.out, validator);
                params(&mut self.out, list);
            }
            Guard::Contract(id) => {
                self.out.push_str("contract ");
                self.contract_ref(*id);
            }
            Guard::Cond(cond) => {
                self.out.push_str("cond ");
                push_quoted(&mut self.out, &cond.to_string());
            }
            Guard::HumanApproval => self.out.push_str("human_approval"),
            Guard::CounterBelow(id, limit) => {
                self.out.push_str("counter_below ");
                self.counter_ref(*id);
                let _ = write!(self.out, " {limit}");
            }
        }
    }

    fn effect(&mut self, effect: &Effect) {
        match effect {
            Effect::InjectContext(list) => {
                self.out.push_str("inject_context ");
                source_list(&mut self.out, list);
            }
            Effect::Count(id) => {
                self.out.push_str("count ");
                self.counter_ref(*id);
            }
            Effect::Reset(id) => {
                self.out.push_str("reset ");
                self.counter_ref(*id);
            }
            Effect::PhaseBreak => self.out.push_str("phase_break"),
            Effect::PromoteArtifact => self.out.push_str("promote_artifact"),
            Effect::InjectCritique => self.out.push_str("inject_critique"),
            Effect::Warn(text) => {
                self.out.push_str("warn ");
                push_quoted(&mut self.out, text);
            }
            Effect::Revisit {
                counter,
                max,
                objections,
            } => {
                self.out.push_str("revisit ");
                self.counter_ref(*counter);
                let _ = write!(self.out, " max {max}");
                if let Some(path) = objections {
                    self.out.push_str(" objections ");
                    push_quoted(&mut self.out, path);
                }
            }
            Effect::SetValue(template) => {
                self.out.push_str("set_value ");
                let text = self.program.template_text(template);
                push_quoted(&mut self.out, &text);
            }
        }
    }
}

/// `failure`'s `KEY ACTION THRESHOLD`.
fn push_rule(out: &mut String, key: &str, rule: &FailureRule) {
    let _ = write!(out, "{key} {} {}", rule.action.as_str(), rule.threshold);
}

/// `[a, "b c"]`.
fn name_list<'n>(out: &mut String, names: impl Iterator<Item = &'n str>) {
    out.push('[');
    for (idx, text) in names.enumerate() {
        if idx > 0 {
            out.push_str(", ");
        }
        push_name(out, text);
    }
    out.push(']');
}

/// ` Key="value" ...` (leading space per parameter).
fn params(out: &mut String, params: &[(String, String)]) {
    for (key, value) in params {
        out.push(' ');
        push_name(out, key);
        out.push('=');
        push_quoted(out, value);
    }
}

fn source_list(out: &mut String, sources: &[ContextSource]) {
    out.push('[');
    for (idx, source) in sources.iter().enumerate() {
        if idx > 0 {
            out.push_str(", ");
        }
        push_quoted(out, &source.source);
        if source.max_chars != 0 {
            let _ = write!(out, " max_chars {}", source.max_chars);
        }
        if let Some(label) = &source.label {
            out.push_str(" label ");
            push_quoted(out, label);
        }
    }
    out.push(']');
}

fn model_fields(out: &mut String, model: &Model) {
    if let Some(alias) = &model.alias {
        out.push_str("alias ");
        push_name(out, alias);
        out.push(' ');
    }
    if let Some(provider) = &model.provider {
        out.push_str("provider ");
        push_name(out, provider);
        out.push(' ');
    }
    out.push_str("id ");
    push_quoted(out, &model.id);
    if let Some(endpoint) = &model.endpoint {
        out.push_str(" endpoint ");
        push_quoted(out, endpoint);
    }
    if let Some(key_env) = &model.api_key_env {
        out.push_str(" key_env ");
        push_name(out, key_env);
    }
    if model.has_literal_key {
        out.push_str(" literal_key");
    }
    if let Some(temperature) = &model.temperature {
        out.push_str(" temperature ");
        push_quoted(out, temperature);
    }
    if let Some(max_tokens) = model.max_tokens {
        let _ = write!(out, " max_tokens {max_tokens}");
    }
    if let Some(reasoning) = &model.reasoning_effort {
        out.push_str(" reasoning ");
        push_name(out, reasoning);
    }
    if let Some(window) = model.context_window {
        let _ = write!(out, " context_window {window}");
    }
    if let Some(pricing) = &model.pricing {
        let _ = write!(out, " pricing {} {}", pricing.input, pricing.output);
        if let Some(cached) = pricing.cached_input {
            let _ = write!(out, " cached {cached}");
        }
    }
    let timeouts = &model.timeouts;
    for (keyword, seconds) in [
        ("connect_timeout", timeouts.connect),
        ("idle_timeout", timeouts.idle),
        ("timeout", timeouts.overall),
    ] {
        if let Some(seconds) = seconds {
            let _ = write!(out, " {keyword} {seconds}");
        }
    }
}

fn context(out: &mut String, context: &Context) {
    out.push_str(context_mode_str(context.mode));
    if context.text_only {
        out.push_str(" text_only");
    }
    if !context.exclude_agents.is_empty() {
        out.push_str(" exclude ");
        name_list(out, context.exclude_agents.iter().map(String::as_str));
    }
    if context.max_tail != 0 {
        let _ = write!(out, " tail {}", context.max_tail);
    }
    if context.max_turn_age != 0 {
        let _ = write!(out, " turn_age {}", context.max_turn_age);
    }
    if context.max_tool_result_chars != 0 {
        let _ = write!(out, " tool_result_chars {}", context.max_tool_result_chars);
    }
    if context.max_replay_chars != 0 {
        let _ = write!(out, " replay_chars {}", context.max_replay_chars);
    }
    for (tool, chars) in &context.tool_result_overrides {
        let _ = write!(out, " tool_result_chars_for {} {chars}", tool.name());
    }
    if let Some(fraction) = context.cap_fraction {
        let _ = write!(out, " cap_fraction {fraction}");
    }
    if !context.sources.is_empty() {
        out.push_str(" sources ");
        source_list(out, &context.sources);
    }
}

fn stuck(out: &mut String, stuck: &StuckPolicy) {
    if let Some(max) = stuck.max_retries {
        let _ = write!(out, " max_retries {max}");
    }
    if let Some(max) = stuck.max_visit_turns {
        let _ = write!(out, " max_visit_turns {max}");
    }
    if let Some(max) = stuck.max_without_signal {
        let _ = write!(out, " max_without_signal {max}");
    }
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
            states: vec![State {
                name: "only".into(),
                agent: None,
                kind: StateKind::Terminal(TerminalMode::EndNow),
                context: None,
                layer: Some(0),
                exits: Vec::new(),
                no_match: NoMatch::Never,
                stuck: StuckPolicy::default(),
                step: None,
                loc: None,
            }],
            ..Program::new(String::new(), Origin::Fuseraft(SelectionKind::Sequential))
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

    fn name(text: &str) -> String {
        let mut out = String::new();
        push_name(&mut out, text);
        out
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
