//! The parser of the textual IR (`.fir`), the inverse of [`super::print`].
//!
//! Two steps: the pest grammar (`grammar/ir.pest`) checks the shape, then a builder turns
//! the pairs into a [`Program`], resolving names to ids. Both report a [`ParseError`] with
//! a position; pest pairs and rule names never leave this module.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use pest::error::{ErrorVariant, InputLocation, LineColLocation};
use pest::Parser as _;
use pest_derive::Parser;

use super::print::{context_mode_str, terminal_mode_str, tool_choice_str, FORMAT_VERSION};
use super::SubAgentSettings;
use super::{Action, Capability, Category, McpServer, McpTransport, Plugin, Preset};
use super::{
    Agent, AgentId, Context, ContextMode, ContextSource, Contract, ContractId, Counter, CounterId,
    EdgeClass, Effect, Exit, FailureAction, FailurePolicy, FailureRule, FileIdx, Fork, Guard, Loc,
    Matcher, Merge, Model, ModelTimeouts, NoMatch, Origin, Predicate, Pricing, Program, Select,
    SelectStyle, SelectionKind, State, StateId, StateKind, StopGate, StuckPolicy, Target, TermCond,
    TerminalMode, Termination, ToolChoice, Trigger, TurnUnit,
};
use super::{Fraction, Skill, Step, StepKey, Template, Tool};
use crate::ir::Cond;

#[derive(Parser)]
#[grammar = "../grammar/ir.pest"]
struct IrParser;

type Pair<'i> = pest::iterators::Pair<'i, Rule>;
type Result<T> = std::result::Result<T, ParseError>;

/// A syntax or name-resolution error in IR text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Byte offset into the text.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses IR text (as written by [`super::print`]) back into a [`Program`].
pub fn parse(text: &str) -> std::result::Result<Program, ParseError> {
    let mut pairs = IrParser::parse(Rule::ir, text).map_err(|error| syntax_error(text, error))?;
    let Some(ir) = pairs.next() else {
        return Err(ParseError {
            line: 1,
            column: 1,
            offset: 0,
            message: "empty input".to_string(),
        });
    };
    let builder = Builder::declare(ir.clone())?;
    builder.build(ir)
}

// ---------------------------------------------------------------- syntax errors

fn syntax_error(text: &str, error: pest::error::Error<Rule>) -> ParseError {
    let offset = match error.location {
        InputLocation::Pos(pos) => pos,
        InputLocation::Span((start, _)) => start,
    };
    let (line, column) = match error.line_col {
        LineColLocation::Pos(pos) => pos,
        LineColLocation::Span(start, _) => start,
    };
    let found = found(text, offset);
    let message = match &error.variant {
        ErrorVariant::ParsingError { positives, .. } if !positives.is_empty() => {
            format!("expected {}, found {found}", expected(positives))
        }
        ErrorVariant::ParsingError { .. } => format!("unexpected {found}"),
        ErrorVariant::CustomError { message } => message.to_lowercase(),
    };
    ParseError {
        line,
        column,
        offset,
        message,
    }
}

/// What the text holds at `offset`, for "found ..." in messages.
fn found(text: &str, offset: usize) -> String {
    let rest = text.get(offset..).unwrap_or("");
    if rest.is_empty() {
        return "end of input".to_string();
    }
    if rest.starts_with('\n') || rest.starts_with("\r\n") || rest.starts_with('\r') {
        return "end of line".to_string();
    }
    let token: String = rest
        .chars()
        .take_while(|ch| !ch.is_whitespace())
        .take(24)
        .collect();
    format!("`{token}`")
}

const TOP_LEVEL: &[Rule] = &[
    Rule::file_line,
    Rule::entry_line,
    Rule::termination_block,
    Rule::failure_line,
    Rule::setting_line,
    Rule::compaction_line,
    Rule::permissions_line,
    Rule::permission_line,
    Rule::mcp_block,
    Rule::contract_block,
    Rule::counter_line,
    Rule::skill_line,
    Rule::agent_block,
    Rule::state_block,
];

/// "`a`, `b` or `c`" for the rules pest expected: the specific ones first, then the end of
/// the line, a summary of the top-level lines (when a block could end there), the end of input.
fn expected(rules: &[Rule]) -> String {
    let top_level = TOP_LEVEL.iter().all(|rule| rules.contains(rule));
    let mut words: Vec<&'static str> = Vec::new();
    for rule in rules {
        if matches!(rule, Rule::EOI | Rule::eol) || (top_level && TOP_LEVEL.contains(rule)) {
            continue;
        }
        let word = describe(*rule);
        if !words.contains(&word) {
            words.push(word);
        }
    }
    // A name may always be quoted; "a name" covers both.
    if words.contains(&describe(Rule::bare_name)) {
        words.retain(|word| *word != describe(Rule::string));
    }
    if rules.contains(&Rule::eol) {
        words.push(describe(Rule::eol));
    }
    if top_level {
        words.push("a top-level line (`agent`, `state`, `contract`, ...)");
    }
    if rules.contains(&Rule::EOI) {
        words.push(describe(Rule::EOI));
    }
    match words.split_last() {
        None => "something else".to_string(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

// `describe`: each rule's `///` line in `grammar/ir.pest`, generated by `compiler/build.rs`.
include!(concat!(env!("OUT_DIR"), "/ir_rule_words.rs"));

// ---------------------------------------------------------------- semantic errors

fn error_at(pair: &Pair<'_>, message: impl Into<String>) -> ParseError {
    let pos = pair.as_span().start_pos();
    let (line, column) = pos.line_col();
    ParseError {
        line,
        column,
        offset: pos.pos(),
        message: message.into(),
    }
}

/// Fills `slot` once; a second value is an error at `pair`.
fn set_once<T>(slot: &mut Option<T>, value: T, pair: &Pair<'_>, what: &str) -> Result<()> {
    if slot.is_some() {
        return Err(error_at(pair, format!("duplicate `{what}`")));
    }
    *slot = Some(value);
    Ok(())
}

fn string(pair: &Pair<'_>) -> Result<String> {
    serde_json::from_str::<String>(pair.as_str()).map_err(|_| {
        error_at(
            pair,
            "invalid string: bad escape sequence or raw control character",
        )
    })
}

/// A bare or quoted name.
/// `Security.Permissions.*`, which the IR holds typed in `Program::permissions`.
fn is_permission_setting(key: &str) -> bool {
    key.get(..21)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case("Security.Permissions."))
}

fn name(pair: &Pair<'_>) -> Result<String> {
    match pair.as_rule() {
        Rule::bare_name => Ok(pair.as_str().to_string()),
        Rule::string => string(pair),
        _ => Err(error_at(pair, "expected a name")),
    }
}

/// User prose: a string, or an `elided(N)` marker (which comes back empty).
fn text(pair: &Pair<'_>) -> Result<String> {
    match pair.as_rule() {
        Rule::elided => Ok(String::new()),
        _ => string(pair),
    }
}

fn int<T: FromStr>(pair: &Pair<'_>) -> Result<T> {
    pair.as_str()
        .parse()
        .map_err(|_| error_at(pair, format!("number `{}` is out of range", pair.as_str())))
}

/// A `decimal`: finite (the grammar has no sign, exponent or `inf`), as Rust parses it.
fn decimal(pair: &Pair<'_>) -> Result<f64> {
    pair.as_str()
        .parse::<f64>()
        .ok()
        .filter(|value| value.is_finite())
        .ok_or_else(|| error_at(pair, format!("number `{}` is out of range", pair.as_str())))
}

fn names(list: Pair<'_>) -> Result<Vec<String>> {
    list.into_inner().map(|pair| name(&pair)).collect()
}

fn params<'i>(pairs: impl Iterator<Item = Pair<'i>>) -> Result<Vec<(String, String)>> {
    let mut params = Vec::new();
    for param in pairs.filter(|pair| pair.as_rule() == Rule::param) {
        let mut inner = param.into_inner();
        let (Some(key), Some(value)) = (inner.next(), inner.next()) else {
            continue;
        };
        params.push((name(&key)?, string(&value)?));
    }
    Ok(params)
}

fn sources(list: Pair<'_>) -> Result<Vec<ContextSource>> {
    let mut sources = Vec::new();
    for source in list.into_inner() {
        let mut entry = ContextSource {
            source: String::new(),
            max_chars: 0,
            label: None,
        };
        for part in source.into_inner() {
            match part.as_rule() {
                Rule::string => entry.source = string(&part)?,
                Rule::source_max => entry.max_chars = int(&first(&part)?)?,
                Rule::source_label => entry.label = Some(string(&first(&part)?)?),
                _ => {}
            }
        }
        sources.push(entry);
    }
    Ok(sources)
}

/// The first inner pair (the grammar guarantees there is one).
fn first<'i>(pair: &Pair<'i>) -> Result<Pair<'i>> {
    pair.clone()
        .into_inner()
        .next()
        .ok_or_else(|| error_at(pair, "incomplete line"))
}

fn lookup<T: Copy>(table: &HashMap<String, T>, pair: &Pair<'_>, what: &str) -> Result<T> {
    let key = name(pair)?;
    table
        .get(&key)
        .copied()
        .ok_or_else(|| error_at(pair, format!("unknown {what} `{key}`")))
}

fn condition(pair: &Pair<'_>) -> Result<Cond> {
    let source = string(pair)?;
    crate::condition::parse(&source).map_err(|err| {
        error_at(
            pair,
            format!(
                "invalid condition: {} (at byte {} of the condition)",
                err.message, err.offset
            ),
        )
    })
}

// ---------------------------------------------------------------- builder

/// Names declared anywhere in the text, so references may point forward.
struct Builder {
    files: Vec<String>,
    agents: HashMap<String, AgentId>,
    states: HashMap<String, StateId>,
    contracts: HashMap<String, ContractId>,
    counters: HashMap<String, CounterId>,
}

fn declare<T>(
    table: &mut HashMap<String, T>,
    block: &Pair<'_>,
    what: &str,
    id: impl FnOnce(u32) -> T,
) -> Result<()> {
    let name_pair = first(block)?;
    let key = name(&name_pair)?;
    if table.contains_key(&key) {
        return Err(error_at(&name_pair, format!("duplicate {what} `{key}`")));
    }
    let next = u32::try_from(table.len())
        .map_err(|_| error_at(&name_pair, format!("too many {what}s")))?;
    table.insert(key, id(next));
    Ok(())
}

impl Builder {
    fn declare(ir: Pair<'_>) -> Result<Builder> {
        let mut builder = Builder {
            files: Vec::new(),
            agents: HashMap::new(),
            states: HashMap::new(),
            contracts: HashMap::new(),
            counters: HashMap::new(),
        };
        for item in ir.into_inner() {
            match item.as_rule() {
                Rule::file_line => {
                    let mut inner = item.into_inner();
                    let (Some(idx), Some(path)) = (inner.next(), inner.next()) else {
                        continue;
                    };
                    let index: usize = int(&idx)?;
                    if index != builder.files.len() {
                        return Err(error_at(
                            &idx,
                            format!(
                                "files must be numbered in order: expected file {}, found {index}",
                                builder.files.len()
                            ),
                        ));
                    }
                    builder.files.push(string(&path)?);
                }
                Rule::agent_block => declare(&mut builder.agents, &item, "agent", AgentId)?,
                Rule::state_block => declare(&mut builder.states, &item, "state", StateId)?,
                Rule::contract_block => {
                    declare(&mut builder.contracts, &item, "contract", ContractId)?
                }
                Rule::counter_line => declare(&mut builder.counters, &item, "counter", CounterId)?,
                _ => {}
            }
        }
        Ok(builder)
    }

    fn agent_ref(&self, pair: &Pair<'_>) -> Result<AgentId> {
        lookup(&self.agents, pair, "agent")
    }

    fn state_ref(&self, pair: &Pair<'_>) -> Result<StateId> {
        lookup(&self.states, pair, "state")
    }

    fn agent_refs(&self, list: Pair<'_>) -> Result<Vec<AgentId>> {
        list.into_inner()
            .map(|pair| self.agent_ref(&pair))
            .collect()
    }

    fn target(&self, pair: &Pair<'_>) -> Result<Target> {
        let inner = first(pair)?;
        match inner.as_rule() {
            Rule::end_target => Ok(Target::End),
            _ => Ok(Target::State(self.state_ref(&inner)?)),
        }
    }

    fn loc(&self, pair: &Pair<'_>) -> Result<Loc> {
        let numbers: Vec<Pair<'_>> = pair.clone().into_inner().collect();
        let (file, line, column) = match numbers.as_slice() {
            [line, column] => (0, int(line)?, int(column)?),
            [file, line, column] => (int(file)?, int(line)?, int(column)?),
            _ => return Err(error_at(pair, "invalid location")),
        };
        if file as usize >= self.files.len() {
            return Err(error_at(
                pair,
                format!(
                    "location in file {file}, but {} declared",
                    match self.files.len() {
                        0 => "no files are".to_string(),
                        1 => "only file 0 is".to_string(),
                        n => format!("only files 0 to {} are", n - 1),
                    }
                ),
            ));
        }
        Ok(Loc {
            file: FileIdx(file),
            line,
            column,
        })
    }

    fn build(&self, ir: Pair<'_>) -> Result<Program> {
        let ir_pair = ir.clone();
        let mut items = ir.into_inner();
        let (Some(version), Some(header)) = (items.next(), items.next()) else {
            return Err(error_at(&ir_pair, "missing header"));
        };
        let version_number = first(&version)?;
        if int::<u64>(&version_number).ok() != Some(u64::from(FORMAT_VERSION)) {
            return Err(error_at(
                &version_number,
                format!(
                    "unsupported IR version `{}` (this compiler reads version {FORMAT_VERSION})",
                    version_number.as_str()
                ),
            ));
        }
        let mut header_inner = header.clone().into_inner();
        let (Some(name_pair), Some(origin_pair)) = (header_inner.next(), header_inner.next())
        else {
            return Err(error_at(&header, "incomplete program line"));
        };
        let mut program = Program {
            files: self.files.clone(),
            ..Program::new(name(&name_pair)?, origin(&origin_pair)?)
        };
        let mut entry = None;
        let mut preset = None;
        let mut termination = None;
        let mut failure = None;
        // Where each setting was written, to point at a value its key cannot take.
        let mut setting_lines = Vec::new();
        for item in items {
            match item.as_rule() {
                Rule::entry_line => {
                    let id = self.state_ref(&first(&item)?)?;
                    set_once(&mut entry, id, &item, "entry")?;
                }
                Rule::termination_block => {
                    let value = self.termination(&item)?;
                    set_once(&mut termination, value, &item, "termination")?;
                }
                Rule::failure_line => {
                    set_once(&mut failure, failure_policy(&item)?, &item, "failure")?;
                }
                Rule::setting_line => {
                    let mut inner = item.clone().into_inner();
                    if let (Some(key), Some(value)) = (inner.next(), inner.next()) {
                        let key_text = string(&key)?;
                        if is_permission_setting(&key_text) {
                            return Err(error_at(
                                &key,
                                format!("`{key_text}` is written as a `permissions` or `permission` line, not a setting"),
                            ));
                        }
                        let value_text = string(&value)?;
                        if key_text.eq_ignore_ascii_case("Security.ChangeEnvelope") {
                            for glob in value_text.lines().filter(|glob| !glob.trim().is_empty()) {
                                if let Err(error) = super::envelope_glob(glob) {
                                    return Err(error_at(
                                        &value,
                                        format!(
                                            "invalid `Security.ChangeEnvelope` glob `{glob}`: {}",
                                            error.kind()
                                        ),
                                    ));
                                }
                            }
                        }
                        setting_lines.push((key_text.clone(), error_at(&value, "")));
                        program.settings.push((key_text, value_text));
                    }
                }
                Rule::permissions_line => {
                    let pair = first(&item)?;
                    let text = name(&pair)?;
                    let value = Preset::parse(&text).ok_or_else(|| {
                        error_at(&pair, format!("unknown permission preset `{text}`"))
                    })?;
                    set_once(&mut preset, value, &item, "permissions")?;
                }
                Rule::permission_line => {
                    let mut inner = item.clone().into_inner();
                    let (Some(key), Some(value)) = (inner.next(), inner.next()) else {
                        return Err(error_at(&item, "incomplete `permission` line"));
                    };
                    let key_text = name(&key)?;
                    let category = Category::parse(&key_text).ok_or_else(|| {
                        error_at(&key, format!("unknown permission category `{key_text}`"))
                    })?;
                    let value_text = name(&value)?;
                    let action = Action::parse(&value_text).ok_or_else(|| {
                        error_at(&value, format!("unknown permission action `{value_text}`"))
                    })?;
                    if program
                        .permissions
                        .overrides
                        .iter()
                        .any(|(known, _)| *known == category)
                    {
                        return Err(error_at(
                            &item,
                            format!("duplicate `permission {category}`"),
                        ));
                    }
                    program.permissions.overrides.push((category, action));
                }
                Rule::compaction_line => {
                    let model = model_fields(&first(&item)?)?;
                    set_once(
                        &mut program.compaction_model,
                        model,
                        &item,
                        "compaction model",
                    )?;
                }
                Rule::mcp_block => {
                    let server = self.mcp_server(item.clone())?;
                    if program.mcp_server_named(&server.name).is_some() {
                        return Err(error_at(&item, format!("duplicate `mcp {}`", server.name)));
                    }
                    program.mcp_servers.push(server);
                }
                Rule::contract_block => program.contracts.push(self.contract(item)?),
                Rule::counter_line => program.counters.push(Counter {
                    name: name(&first(&item)?)?,
                }),
                Rule::skill_line => {
                    let mut parts = item.clone().into_inner();
                    let (Some(skill), Some(description), Some(body)) =
                        (parts.next(), parts.next(), parts.next())
                    else {
                        return Err(error_at(&item, "incomplete `skill`"));
                    };
                    program.skills.push(Skill {
                        name: name(&skill)?,
                        description: text(&description)?,
                        body: text(&body)?,
                    });
                }
                Rule::agent_block => program.agents.push(self.agent(item)?),
                Rule::state_block => program.states.push(self.state(item)?),
                _ => {}
            }
        }
        // Every program the compiler produces has states; one without has nowhere to start.
        if program.states.is_empty() {
            return Err(error_at(&header, "a program needs at least one `state`"));
        }
        program.entry = match entry {
            Some(id) => id,
            None => return Err(error_at(&header, "missing `entry` line")),
        };
        program.termination = termination.unwrap_or_default();
        program.failure = failure.unwrap_or_default();
        program.permissions.preset = preset.unwrap_or_default();
        if let Some(bad) = program.settle_settings().into_iter().next() {
            let at = setting_lines.into_iter().find(|(key, _)| *key == bad.key);
            let mut error = at.map_or_else(|| error_at(&header, ""), |(_, at)| at);
            error.message = bad.message;
            return Err(error);
        }
        Ok(program)
    }

    fn termination(&self, block: &Pair<'_>) -> Result<Termination> {
        let mut termination = Termination::default();
        let mut unit = None;
        let mut max_total_tokens = None;
        let mut max_total_cost = None;
        for item in block.clone().into_inner() {
            match item.as_rule() {
                Rule::term_unit => {
                    let value = match first(&item)?.as_str() {
                        "phases" => TurnUnit::Phases,
                        _ => TurnUnit::Turns,
                    };
                    set_once(&mut unit, value, &item, "unit")?;
                }
                Rule::term_max_total_tokens => {
                    let value = int(&first(&item)?)?;
                    set_once(&mut max_total_tokens, value, &item, "max_total_tokens")?;
                }
                Rule::term_max_total_cost => {
                    let value = decimal(&first(&item)?)?;
                    set_once(&mut max_total_cost, value, &item, "max_total_cost")?;
                }
                Rule::term_max_turns => {
                    termination
                        .any
                        .push(TermCond::MaxTurns(int(&first(&item)?)?));
                }
                Rule::term_tokens => {
                    termination.any.push(TermCond::Tokens(int(&first(&item)?)?));
                }
                Rule::term_regex => {
                    let pattern_pair = first(&item)?;
                    let pattern = string(&pattern_pair)?;
                    // The VM compiles it the same way; one that does not compile would never
                    // end the run.
                    if let Err(error) = regex::RegexBuilder::new(&pattern)
                        .case_insensitive(true)
                        .build()
                    {
                        let reason = error.to_string();
                        let reason = reason.lines().last().unwrap_or_default().trim();
                        let reason = reason.trim_start_matches("error: ");
                        return Err(error_at(
                            &pattern_pair,
                            format!("termination pattern `{pattern}` does not compile: {reason}"),
                        ));
                    }
                    let agents = match item
                        .clone()
                        .into_inner()
                        .find(|part| part.as_rule() == Rule::term_agents)
                    {
                        Some(list) => names(first(&list)?)?,
                        None => Vec::new(),
                    };
                    termination.any.push(TermCond::Regex { pattern, agents });
                }
                Rule::term_cond => {
                    termination
                        .any
                        .push(TermCond::Cond(condition(&first(&item)?)?));
                }
                Rule::term_require => {
                    termination.validators.push(self.guard(&first(&item)?)?);
                }
                Rule::term_gate => {
                    let mut bounds = item.clone().into_inner();
                    let first_cond = match bounds.next() {
                        Some(pair) => int(&pair)?,
                        None => return Err(error_at(&item, "`gate` needs two indices")),
                    };
                    let end = match bounds.next() {
                        Some(pair) => int(&pair)?,
                        None => return Err(error_at(&item, "`gate` needs two indices")),
                    };
                    termination.gates.push(StopGate {
                        first: first_cond,
                        end,
                        validators: Vec::new(),
                    });
                }
                Rule::term_gate_check => {
                    let guard = self.guard(&first(&item)?)?;
                    match termination.gates.last_mut() {
                        Some(gate) => gate.validators.push(guard),
                        None => {
                            return Err(error_at(
                                &item,
                                "a `check` line belongs to a `gate` line above it",
                            ))
                        }
                    }
                }
                _ => {}
            }
        }
        termination.unit = unit.unwrap_or_default();
        termination.max_total_tokens = max_total_tokens;
        termination.max_total_cost = max_total_cost;
        Ok(termination)
    }

    fn contract(&self, block: Pair<'_>) -> Result<Contract> {
        let mut contract = Contract {
            name: String::new(),
            predicates: Vec::new(),
            loc: None,
        };
        for part in block.into_inner() {
            match part.as_rule() {
                Rule::bare_name | Rule::string => contract.name = name(&part)?,
                Rule::loc => contract.loc = Some(self.loc(&part)?),
                Rule::predicate_line => {
                    let mut inner = part.clone().into_inner();
                    let kind = name(&first(&part)?)?;
                    if super::PredicateType::parse(&kind).is_none() {
                        return Err(error_at(
                            &part,
                            format!("predicate type `{kind}` is not one fuseraft runs"),
                        ));
                    }
                    inner.next();
                    contract.predicates.push(Predicate {
                        kind,
                        params: params(inner)?,
                    });
                }
                _ => {}
            }
        }
        Ok(contract)
    }

    /// `mcp <name> stdio|http <command or url> [@loc]` and its item lines.
    fn mcp_server(&self, block: Pair<'_>) -> Result<McpServer> {
        let mut server_name = String::new();
        let mut stdio = true;
        let mut target = String::new();
        let mut loc = None;
        let mut timeout = None;
        let (mut args, mut env, mut headers, mut cwd) = (Vec::new(), Vec::new(), Vec::new(), None);
        let pairs = |part: &Pair<'_>| -> Result<(String, String)> {
            let mut inner = part.clone().into_inner();
            match (inner.next(), inner.next()) {
                (Some(key), Some(value)) => Ok((string(&key)?, string(&value)?)),
                _ => Err(error_at(part, "expected a name and a value")),
            }
        };
        for (index, part) in block.clone().into_inner().enumerate() {
            match part.as_rule() {
                Rule::bare_name | Rule::string if index == 0 => server_name = name(&part)?,
                Rule::mcp_kind => stdio = part.as_str() == "stdio",
                Rule::string => target = string(&part)?,
                Rule::loc => loc = Some(self.loc(&part)?),
                Rule::mcp_arg => args.push(string(&first(&part)?)?),
                Rule::mcp_env => env.push(pairs(&part)?),
                Rule::mcp_header => headers.push(pairs(&part)?),
                Rule::mcp_cwd => {
                    let value = string(&first(&part)?)?;
                    set_once(&mut cwd, value, &part, "cwd")?;
                }
                Rule::mcp_timeout => {
                    let value: u32 = int(&first(&part)?)?;
                    if value == 0 {
                        return Err(error_at(&part, "an MCP server's `timeout` is at least 1"));
                    }
                    set_once(&mut timeout, value, &part, "timeout")?;
                }
                _ => {}
            }
        }
        if !McpServer::is_valid_name(&server_name) {
            return Err(error_at(
                &block,
                format!("MCP server name `{server_name}` may hold only ASCII letters, digits, `_` and `-`"),
            ));
        }
        let transport = if stdio {
            if !headers.is_empty() {
                return Err(error_at(
                    &block,
                    "a `stdio` MCP server has no `header` lines",
                ));
            }
            McpTransport::Stdio {
                command: target,
                args,
                env,
                working_directory: cwd,
            }
        } else {
            if !args.is_empty() || !env.is_empty() || cwd.is_some() {
                return Err(error_at(
                    &block,
                    "an `http` MCP server has no `arg`, `env` or `cwd` lines",
                ));
            }
            McpTransport::Http {
                url: target,
                headers,
            }
        };
        Ok(McpServer {
            name: server_name,
            transport,
            timeout_seconds: timeout,
            loc,
        })
    }

    fn agent(&self, block: Pair<'_>) -> Result<Agent> {
        let mut agent_name = String::new();
        let mut loc = None;
        let mut description = None;
        let mut model = None;
        let mut tools = None;
        let mut tool_choice_value = None;
        let mut capabilities = Vec::new();
        let mut context_value = None;
        let mut pattern = None;
        let mut sub_agent = SubAgentSettings::default();
        let mut instructions = None;
        for part in block.into_inner() {
            match part.as_rule() {
                Rule::bare_name | Rule::string => agent_name = name(&part)?,
                Rule::loc => loc = Some(self.loc(&part)?),
                Rule::agent_description => {
                    let value = text(&first(&part)?)?;
                    set_once(&mut description, value, &part, "description")?;
                }
                Rule::agent_model => {
                    let value = model_fields(&first(&part)?)?;
                    set_once(&mut model, value, &part, "model")?;
                }
                Rule::agent_tools => {
                    let value = names(first(&part)?)?;
                    set_once(&mut tools, value, &part, "tools")?;
                }
                Rule::agent_capability => {
                    let mut inner = part.clone().into_inner();
                    let (Some(plugin), Some(tags)) = (inner.next(), inner.next()) else {
                        return Err(error_at(&part, "incomplete `capability` line"));
                    };
                    let plugin_text = name(&plugin)?;
                    let plugin = Plugin::parse(&plugin_text).ok_or_else(|| {
                        error_at(
                            &plugin,
                            format!("unknown plugin `{plugin_text}` in a capability"),
                        )
                    })?;
                    let mut parsed = Vec::new();
                    for tag in tags.clone().into_inner() {
                        let text = name(&tag)?;
                        match Capability::parse(&text)
                            .filter(|tag| plugin.capabilities().contains(tag))
                        {
                            Some(tag) => parsed.push(tag),
                            None => {
                                return Err(error_at(
                                    &tag,
                                    format!("`{text}` is not a capability of plugin `{plugin}`"),
                                ))
                            }
                        }
                    }
                    capabilities.push((plugin, parsed));
                }
                Rule::agent_tool_choice => {
                    let value = tool_choice(&first(&part)?);
                    set_once(&mut tool_choice_value, value, &part, "tool_choice")?;
                }
                Rule::agent_context => {
                    let value = context(&part)?;
                    set_once(&mut context_value, value, &part, "context")?;
                }
                Rule::agent_pattern => {
                    let value = name(&first(&part)?)?;
                    set_once(&mut pattern, value, &part, "pattern")?;
                }
                Rule::agent_sub_model => {
                    let value = model_fields(&first(&part)?)?;
                    set_once(&mut sub_agent.model, value, &part, "sub_agent_model")?;
                }
                Rule::agent_sub_plugins => {
                    let list = first(&part)?;
                    for item in list.clone().into_inner() {
                        let text = name(&item)?;
                        let plugin = Plugin::parse(&text).ok_or_else(|| {
                            error_at(
                                &item,
                                format!("unknown plugin `{text}` in `sub_agent_plugins`"),
                            )
                        })?;
                        sub_agent.plugins.push(plugin);
                    }
                }
                Rule::agent_sub_max_calls => {
                    let value = int(&first(&part)?)?;
                    set_once(
                        &mut sub_agent.max_tool_calls,
                        value,
                        &part,
                        "sub_agent_max_tool_calls",
                    )?;
                }
                Rule::agent_instructions => {
                    let value = text(&first(&part)?)?;
                    set_once(&mut instructions, value, &part, "instructions")?;
                }
                _ => {}
            }
        }
        Ok(Agent {
            name: agent_name,
            description,
            model,
            instructions: instructions.unwrap_or_default(),
            tools: tools.unwrap_or_default(),
            tool_choice: tool_choice_value.unwrap_or(ToolChoice::Auto),
            capabilities,
            context: context_value.unwrap_or_default(),
            pattern,
            sub_agent,
            loc,
        })
    }

    fn state(&self, block: Pair<'_>) -> Result<State> {
        let mut state = State {
            name: String::new(),
            agent: None,
            kind: StateKind::Turn,
            context: None,
            layer: None,
            exits: Vec::new(),
            no_match: NoMatch::Never,
            stuck: StuckPolicy::default(),
            step: None,
            loc: None,
        };
        let mut context = None;
        let mut no_match = None;
        let mut stuck = None;
        for part in block.into_inner() {
            match part.as_rule() {
                Rule::bare_name | Rule::string => state.name = name(&part)?,
                Rule::state_layer => {
                    let value = first(&part)?;
                    state.layer = match value.as_rule() {
                        Rule::int => Some(int(&value)?),
                        _ => None,
                    };
                }
                Rule::loc => state.loc = Some(self.loc(&part)?),
                Rule::turn_line => {
                    state.kind = StateKind::Turn;
                    state.agent = self.state_agent(part)?;
                }
                Rule::terminal_line => {
                    let mode = terminal_mode(&first(&part)?);
                    state.kind = StateKind::Terminal(mode);
                    state.agent = self.state_agent(part)?;
                }
                Rule::fork_line => {
                    let (fork, agent) = self.fork(part)?;
                    state.kind = StateKind::Fork(fork);
                    state.agent = agent;
                }
                Rule::select_block => {
                    let (select, agent) = self.select(part)?;
                    state.kind = StateKind::Select(Box::new(select));
                    state.agent = agent;
                }
                Rule::state_context => {
                    let mode = context_mode(&first(&part)?);
                    set_once(&mut context, mode, &part, "context")?;
                }
                Rule::state_step => {
                    let step = self.step(&part)?;
                    set_once(&mut state.step, step, &part, "step")?;
                }
                Rule::exit_line => state.exits.push(self.exit(part)?),
                Rule::no_match_line => {
                    let value = self.no_match(&first(&part)?)?;
                    set_once(&mut no_match, value, &part, "no_match")?;
                }
                Rule::stuck_line => {
                    let value = stuck_policy(&part)?;
                    set_once(&mut stuck, value, &part, "stuck")?;
                }
                _ => {}
            }
        }
        state.context = context;
        state.no_match = no_match.unwrap_or(NoMatch::Never);
        state.stuck = stuck.unwrap_or_default();
        Ok(state)
    }

    /// The `agent NAME` suffix of a kind line, if any.
    fn state_agent(&self, line: Pair<'_>) -> Result<Option<AgentId>> {
        for part in line.into_inner() {
            if part.as_rule() == Rule::state_agent {
                return Ok(Some(self.agent_ref(&first(&part)?)?));
            }
        }
        Ok(None)
    }

    fn fork(&self, line: Pair<'_>) -> Result<(Fork, Option<AgentId>)> {
        let mut branches = Vec::new();
        let mut join = Target::End;
        let mut merge = Merge::Union;
        let mut merge_agent = None;
        let mut per_item = None;
        let (mut per_line, mut sequential) = (false, false);
        let mut agent = None;
        for part in line.into_inner() {
            match part.as_rule() {
                Rule::name_list => {
                    for branch in part.into_inner() {
                        branches.push(self.state_ref(&branch)?);
                    }
                }
                Rule::target => join = self.target(&part)?,
                Rule::merge => merge = merge_strategy(&part),
                Rule::fork_merge_agent => merge_agent = Some(self.agent_ref(&first(&part)?)?),
                Rule::fork_per_item => {
                    let path = string(&first(&part)?)?;
                    per_item = Some(match path.is_empty() {
                        true => Vec::new(),
                        false => path.split('.').map(str::to_string).collect(),
                    });
                }
                Rule::fork_per_line => per_line = true,
                Rule::fork_sequential => sequential = true,
                Rule::state_agent => agent = Some(self.agent_ref(&first(&part)?)?),
                _ => {}
            }
        }
        let fork = Fork {
            branches,
            join,
            merge,
            merge_agent,
            per_item,
            per_line,
            sequential,
        };
        Ok((fork, agent))
    }

    fn select(&self, block: Pair<'_>) -> Result<(Select, Option<AgentId>)> {
        let mut select = Select {
            style: SelectStyle::Llm,
            manager: None,
            prompt: None,
        };
        let mut agent = None;
        for part in block.into_inner() {
            match part.as_rule() {
                Rule::select_line => {
                    for piece in part.into_inner() {
                        match piece.as_rule() {
                            Rule::select_magentic => select.style = magentic(&piece)?,
                            Rule::state_agent => {
                                agent = Some(self.agent_ref(&first(&piece)?)?);
                            }
                            _ => {}
                        }
                    }
                }
                Rule::select_manager => select.manager = Some(model_fields(&first(&part)?)?),
                Rule::select_prompt => select.prompt = Some(text(&first(&part)?)?),
                _ => {}
            }
        }
        Ok((select, agent))
    }

    fn exit(&self, line: Pair<'_>) -> Result<Exit> {
        let mut trigger = Trigger::Always;
        let mut exit = Exit {
            trigger: Trigger::Always,
            guards: Vec::new(),
            effects: Vec::new(),
            target: Target::End,
            class: EdgeClass::Forward,
            recovery: None,
            loc: None,
        };
        for part in line.into_inner() {
            match part.as_rule() {
                Rule::target => exit.target = self.target(&part)?,
                Rule::edge_class => {
                    exit.class = match part.as_str() {
                        "back" => EdgeClass::Back,
                        _ => EdgeClass::Forward,
                    }
                }
                Rule::recovery => exit.recovery = Some(self.agent_ref(&first(&part)?)?),
                Rule::loc => exit.loc = Some(self.loc(&part)?),
                Rule::guard_clause => exit.guards.push(self.guard(&first(&part)?)?),
                Rule::effect_clause => exit.effects.push(self.effect(&first(&part)?)?),
                rule if is_trigger(rule) => trigger = self.trigger(&part)?,
                _ => {}
            }
        }
        exit.trigger = trigger;
        Ok(exit)
    }

    fn trigger(&self, pair: &Pair<'_>) -> Result<Trigger> {
        let mut parts = pair.clone().into_inner();
        Ok(match pair.as_rule() {
            Rule::trig_signal => {
                let mut text = String::new();
                let mut matcher = Matcher::Relaxed;
                let mut sources = Vec::new();
                for part in parts {
                    match part.as_rule() {
                        Rule::string => text = string(&part)?,
                        Rule::matcher => {
                            matcher = match part.as_str() {
                                "strict" => Matcher::Strict,
                                "exact" => Matcher::Exact,
                                _ => Matcher::Relaxed,
                            }
                        }
                        Rule::trig_from => sources = self.agent_refs(first(&part)?)?,
                        _ => {}
                    }
                }
                Trigger::Signal {
                    text,
                    matcher,
                    sources,
                }
            }
            Rule::trig_finish_key => Trigger::FinishKey(string(&first(pair)?)?),
            Rule::trig_any_key => Trigger::AnyKey,
            Rule::trig_cond => {
                let cond = condition(&first(pair)?)?;
                parts.next();
                let sources = match parts.next() {
                    Some(from) => self.agent_refs(first(&from)?)?,
                    None => Vec::new(),
                };
                Trigger::Cond { cond, sources }
            }
            Rule::trig_chosen => Trigger::Chosen,
            Rule::trig_always => Trigger::Always,
            Rule::trig_otherwise => Trigger::Otherwise,
            _ => return Err(error_at(pair, "expected a trigger")),
        })
    }

    fn guard(&self, pair: &Pair<'_>) -> Result<Guard> {
        Ok(match pair.as_rule() {
            Rule::guard_validator => {
                let mut inner = pair.clone().into_inner();
                let validator = name(&first(pair)?)?;
                if super::Validator::parse(&validator).is_none() {
                    return Err(error_at(
                        pair,
                        format!("validator `{validator}` is not one fuseraft runs"),
                    ));
                }
                inner.next();
                Guard::Validator {
                    name: validator,
                    params: params(inner)?,
                }
            }
            Rule::guard_contract => {
                Guard::Contract(lookup(&self.contracts, &first(pair)?, "contract")?)
            }
            Rule::guard_cond => Guard::Cond(condition(&first(pair)?)?),
            Rule::guard_human => Guard::HumanApproval,
            Rule::guard_counter => {
                let mut inner = pair.clone().into_inner();
                let (Some(counter), Some(limit)) = (inner.next(), inner.next()) else {
                    return Err(error_at(pair, "incomplete `counter_below`"));
                };
                Guard::CounterBelow(lookup(&self.counters, &counter, "counter")?, int(&limit)?)
            }
            _ => return Err(error_at(pair, "expected a guard")),
        })
    }

    fn effect(&self, pair: &Pair<'_>) -> Result<Effect> {
        Ok(match pair.as_rule() {
            Rule::eff_inject_context => Effect::InjectContext(sources(first(pair)?)?),
            Rule::eff_count => Effect::Count(lookup(&self.counters, &first(pair)?, "counter")?),
            Rule::eff_reset => Effect::Reset(lookup(&self.counters, &first(pair)?, "counter")?),
            Rule::eff_phase_break => Effect::PhaseBreak,
            Rule::eff_promote => Effect::PromoteArtifact,
            Rule::eff_inject_critique => Effect::InjectCritique,
            Rule::eff_warn => Effect::Warn(string(&first(pair)?)?),
            Rule::eff_revisit => {
                let mut inner = pair.clone().into_inner();
                let (Some(counter), Some(max)) = (inner.next(), inner.next()) else {
                    return Err(error_at(pair, "incomplete `revisit`"));
                };
                let objections = match inner.next() {
                    Some(objections) => Some(string(&first(&objections)?)?),
                    None => None,
                };
                Effect::Revisit {
                    counter: lookup(&self.counters, &counter, "counter")?,
                    max: int(&max)?,
                    objections,
                }
            }
            Rule::eff_set_value => Effect::SetValue(self.template(&first(pair)?)?),
            _ => return Err(error_at(pair, "expected an effect")),
        })
    }

    /// A `step` line: the key and, if given, the input template.
    fn step(&self, line: &Pair<'_>) -> Result<Step> {
        let mut step = Step::default();
        for part in line.clone().into_inner() {
            match part.as_rule() {
                Rule::step_finish => step.key = StepKey::Finish,
                Rule::step_verdict => step.key = StepKey::Verdict,
                Rule::step_fixed => step.key = StepKey::Fixed(string(&first(&part)?)?),
                Rule::step_react => step.react = true,
                Rule::step_input => step.input = Some(self.template(&first(&part)?)?),
                _ => {}
            }
        }
        Ok(step)
    }

    /// A template's text form, its states looked up by name.
    fn template(&self, pair: &Pair<'_>) -> Result<Template> {
        let text = string(pair)?;
        Template::parse(&text, |name| self.states.get(name).copied())
            .map_err(|err| error_at(pair, format!("invalid template: {}", err.0)))
    }

    fn no_match(&self, pair: &Pair<'_>) -> Result<NoMatch> {
        Ok(match pair.as_rule() {
            Rule::nm_correct => NoMatch::Correct {
                nudge: pair.clone().into_inner().next().is_some(),
            },
            Rule::nm_fallback => NoMatch::Fallback(self.state_ref(&first(pair)?)?),
            Rule::nm_fail => NoMatch::Fail,
            _ => NoMatch::Never,
        })
    }
}

fn is_trigger(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::trig_signal
            | Rule::trig_finish_key
            | Rule::trig_any_key
            | Rule::trig_cond
            | Rule::trig_chosen
            | Rule::trig_always
            | Rule::trig_otherwise
    )
}

fn origin(pair: &Pair<'_>) -> Result<Origin> {
    match pair.as_rule() {
        Rule::origin_tama => Ok(Origin::Tama),
        _ => {
            let kind = first(pair)?;
            SelectionKind::ALL
                .iter()
                .copied()
                .find(|candidate| candidate.as_str() == kind.as_str())
                .map(Origin::Fuseraft)
                .ok_or_else(|| {
                    error_at(&kind, format!("unknown selection kind `{}`", kind.as_str()))
                })
        }
    }
}

fn failure_policy(line: &Pair<'_>) -> Result<FailurePolicy> {
    let mut policy = FailurePolicy::default();
    let mut seen: Vec<&str> = Vec::new();
    for item in line.clone().into_inner() {
        let key = match item.as_rule() {
            Rule::failure_max => "max_contract_failures",
            Rule::failure_rule => first(&item)?.as_str(),
            _ => continue,
        };
        if seen.contains(&key) {
            return Err(error_at(&item, format!("duplicate `{key}`")));
        }
        seen.push(key);
        let parts: Vec<Pair<'_>> = item.clone().into_inner().collect();
        match parts.as_slice() {
            [limit] => policy.max_contract_failures = int(limit)?,
            [key_pair, action, threshold] => {
                let action = FailureAction::ALL
                    .iter()
                    .copied()
                    .find(|candidate| candidate.as_str() == action.as_str())
                    .unwrap_or(FailureAction::Reinstruct);
                let rule = FailureRule::new(action, int(threshold)?);
                match key_pair.as_str() {
                    "missing_evidence" => policy.missing_evidence = rule,
                    "invalid_transition" => policy.invalid_transition = rule,
                    "conflicting_evidence" => policy.conflicting_evidence = rule,
                    _ => policy.no_progress = rule,
                }
            }
            _ => return Err(error_at(&item, "incomplete failure rule")),
        }
    }
    Ok(policy)
}

fn model_fields(pair: &Pair<'_>) -> Result<Model> {
    let mut alias = None;
    let mut provider = None;
    let mut id = None;
    let mut endpoint = None;
    let mut key_env = None;
    let mut literal_key = None;
    let mut temperature = None;
    let mut max_tokens = None;
    let mut reasoning = None;
    let mut context_window = None;
    let mut pricing = None;
    let mut timeouts = ModelTimeouts::default();
    for field in pair.clone().into_inner() {
        match field.as_rule() {
            Rule::model_alias => set_once(&mut alias, name(&first(&field)?)?, &field, "alias")?,
            Rule::model_provider => {
                set_once(&mut provider, name(&first(&field)?)?, &field, "provider")?;
            }
            Rule::model_id => set_once(&mut id, string(&first(&field)?)?, &field, "id")?,
            Rule::model_endpoint => {
                set_once(&mut endpoint, string(&first(&field)?)?, &field, "endpoint")?;
            }
            Rule::model_key_env => {
                set_once(&mut key_env, name(&first(&field)?)?, &field, "key_env")?;
            }
            Rule::model_literal_key => set_once(&mut literal_key, true, &field, "literal_key")?,
            Rule::model_temperature => {
                set_once(
                    &mut temperature,
                    string(&first(&field)?)?,
                    &field,
                    "temperature",
                )?;
            }
            Rule::model_max_tokens => {
                set_once(&mut max_tokens, int(&first(&field)?)?, &field, "max_tokens")?;
            }
            Rule::model_reasoning => {
                set_once(&mut reasoning, name(&first(&field)?)?, &field, "reasoning")?;
            }
            Rule::model_context_window => {
                set_once(
                    &mut context_window,
                    int(&first(&field)?)?,
                    &field,
                    "context_window",
                )?;
            }
            Rule::model_pricing => {
                let prices = field
                    .clone()
                    .into_inner()
                    .map(|price| decimal(&price))
                    .collect::<Result<Vec<f64>>>()?;
                let value = Pricing {
                    input: prices[0],
                    output: prices[1],
                    cached_input: prices.get(2).copied(),
                };
                set_once(&mut pricing, value, &field, "pricing")?;
            }
            Rule::model_connect_timeout => {
                let value = decimal(&first(&field)?)?;
                set_once(&mut timeouts.connect, value, &field, "connect_timeout")?;
            }
            Rule::model_idle_timeout => {
                let value = decimal(&first(&field)?)?;
                set_once(&mut timeouts.idle, value, &field, "idle_timeout")?;
            }
            Rule::model_timeout => {
                let value = decimal(&first(&field)?)?;
                set_once(&mut timeouts.overall, value, &field, "timeout")?;
            }
            _ => {}
        }
    }
    let Some(id) = id else {
        return Err(error_at(pair, "a model needs an `id`"));
    };
    Ok(Model {
        alias,
        provider,
        id,
        endpoint,
        api_key_env: key_env,
        has_literal_key: literal_key.unwrap_or(false),
        temperature,
        max_tokens,
        reasoning_effort: reasoning,
        context_window,
        pricing,
        timeouts,
    })
}

fn context(line: &Pair<'_>) -> Result<Context> {
    let mut mode = ContextMode::Shared;
    let mut text_only = None;
    let mut exclude = None;
    let mut tail = None;
    let mut turn_age = None;
    let mut tool_chars = None;
    let mut replay_chars = None;
    let mut cap_fraction = None;
    let mut overrides: Vec<(Tool, u32)> = Vec::new();
    let mut list = None;
    for part in line.clone().into_inner() {
        match part.as_rule() {
            Rule::context_mode => mode = context_mode(&part),
            Rule::ctx_text_only => set_once(&mut text_only, true, &part, "text_only")?,
            Rule::ctx_exclude => set_once(&mut exclude, names(first(&part)?)?, &part, "exclude")?,
            Rule::ctx_tail => set_once(&mut tail, int(&first(&part)?)?, &part, "tail")?,
            Rule::ctx_turn_age => set_once(&mut turn_age, int(&first(&part)?)?, &part, "turn_age")?,
            Rule::ctx_tool_chars => set_once(
                &mut tool_chars,
                int(&first(&part)?)?,
                &part,
                "tool_result_chars",
            )?,
            Rule::ctx_replay_chars => set_once(
                &mut replay_chars,
                int(&first(&part)?)?,
                &part,
                "replay_chars",
            )?,
            Rule::ctx_sources => set_once(&mut list, sources(first(&part)?)?, &part, "sources")?,
            Rule::ctx_cap_fraction => {
                let value = decimal(&first(&part)?)?;
                let fraction = Fraction::new(value).ok_or_else(|| {
                    error_at(&part, "`cap_fraction` must be above 0 and at most 1")
                })?;
                set_once(&mut cap_fraction, fraction, &part, "cap_fraction")?;
            }
            Rule::ctx_tool_override => {
                let mut inner = part.clone().into_inner();
                let (Some(tool), Some(chars)) = (inner.next(), inner.next()) else {
                    return Err(error_at(
                        &part,
                        "`tool_result_chars_for` needs a tool and a count",
                    ));
                };
                let written = name(&tool)?;
                let tool = Tool::ALL
                    .iter()
                    .copied()
                    .find(|known| known.name() == written)
                    .ok_or_else(|| error_at(&part, format!("no tool is named `{written}`")))?;
                if overrides.iter().any(|(known, _)| *known == tool) {
                    return Err(error_at(
                        &part,
                        format!("the tool `{written}` has two `tool_result_chars_for`"),
                    ));
                }
                overrides.push((tool, int(&chars)?));
            }
            _ => {}
        }
    }
    Ok(Context {
        mode,
        sources: list.unwrap_or_default(),
        text_only: text_only.unwrap_or(false),
        exclude_agents: exclude.unwrap_or_default(),
        max_tail: tail.unwrap_or(0),
        max_turn_age: turn_age.unwrap_or(0),
        max_tool_result_chars: tool_chars.unwrap_or(0),
        max_replay_chars: replay_chars.unwrap_or(0),
        cap_fraction,
        tool_result_overrides: overrides,
    })
}

fn stuck_policy(line: &Pair<'_>) -> Result<StuckPolicy> {
    let mut stuck = StuckPolicy::default();
    for part in line.clone().into_inner() {
        let (slot, what) = match part.as_rule() {
            Rule::stuck_max_retries => (&mut stuck.max_retries, "max_retries"),
            Rule::stuck_max_visit_turns => (&mut stuck.max_visit_turns, "max_visit_turns"),
            Rule::stuck_max_without_signal => (&mut stuck.max_without_signal, "max_without_signal"),
            _ => continue,
        };
        let value = Some(int(&first(&part)?)?);
        if slot.is_some() {
            return Err(error_at(&part, format!("duplicate `{what}`")));
        }
        *slot = value;
    }
    Ok(stuck)
}

fn magentic(pair: &Pair<'_>) -> Result<SelectStyle> {
    let parts: Vec<Pair<'_>> = pair.clone().into_inner().collect();
    let [rounds, stalls, resets, review] = parts.as_slice() else {
        return Err(error_at(pair, "incomplete `magentic`"));
    };
    Ok(SelectStyle::Magentic {
        max_rounds: int(rounds)?,
        max_stalls: int(stalls)?,
        max_resets: int(resets)?,
        plan_review: review.as_str() == "true",
    })
}

fn context_mode(pair: &Pair<'_>) -> ContextMode {
    [
        ContextMode::Shared,
        ContextMode::Firewall,
        ContextMode::Value,
        ContextMode::Artifacts,
    ]
    .into_iter()
    .find(|mode| context_mode_str(*mode) == pair.as_str())
    .unwrap_or(ContextMode::Shared)
}

fn tool_choice(pair: &Pair<'_>) -> ToolChoice {
    [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None]
        .into_iter()
        .find(|choice| tool_choice_str(*choice) == pair.as_str())
        .unwrap_or(ToolChoice::Auto)
}

fn terminal_mode(pair: &Pair<'_>) -> TerminalMode {
    [
        TerminalMode::RunOnce,
        TerminalMode::EndNow,
        TerminalMode::RunUntilTermination,
    ]
    .into_iter()
    .find(|mode| terminal_mode_str(*mode) == pair.as_str())
    .unwrap_or(TerminalMode::RunOnce)
}

fn merge_strategy(pair: &Pair<'_>) -> Merge {
    Merge::ALL
        .iter()
        .chain([Merge::Object, Merge::Transcript, Merge::Items].iter())
        .copied()
        .find(|merge| merge.as_str() == pair.as_str())
        .unwrap_or(Merge::Union)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::print::samples;
    use crate::ir::{print, PrintOptions};

    fn text_of(program: &Program) -> String {
        print(program, &PrintOptions::default())
    }

    fn parse_err(text: &str) -> ParseError {
        match parse(text) {
            Ok(program) => panic!("expected an error, parsed {program:?}"),
            Err(error) => error,
        }
    }

    /// Pest rule names must never reach users.
    fn assert_human(error: &ParseError) {
        for raw in [
            "trig_",
            "eff_",
            "_line",
            "_block",
            "nm_",
            "ctx_",
            "term_",
            "guard_",
            "model_",
            "EOI",
            "bare_name",
            "state_kind",
            "Rule",
        ] {
            assert!(
                !error.message.contains(raw),
                "raw rule name `{raw}` in {error}"
            );
        }
        assert!(!error.message.is_empty());
        assert_eq!(
            error.message.chars().next().map(|ch| ch.is_lowercase()),
            Some(true),
            "{error}"
        );
    }

    #[test]
    fn round_trip_is_exact() {
        for program in samples::all() {
            let text = text_of(&program);
            let back = parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
            assert_eq!(back, program, "\n{text}");
            assert_eq!(text_of(&back), text);
        }
    }

    #[test]
    fn elided_text_parses() {
        let options = PrintOptions { elide_text: true };
        for program in samples::all() {
            let text = print(&program, &options);
            assert!(!text.contains("You are"), "{text}");
            let back = parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
            assert_eq!(
                back.states,
                program
                    .states
                    .iter()
                    .map(|state| {
                        let mut state = state.clone();
                        if let StateKind::Select(select) = &mut state.kind {
                            if let Some(prompt) = &mut select.prompt {
                                prompt.clear();
                            }
                        }
                        state
                    })
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn comments_blank_lines_indentation_and_crlf_are_ignored() {
        let program = samples::team();
        let text = text_of(&program);
        let mut noisy = String::from("# generated\n\n   \n");
        for line in text.lines() {
            noisy.push('\t');
            noisy.push_str(line.trim_start());
            noisy.push_str("   # trailing comment\r\n\r\n");
        }
        assert_eq!(parse(&noisy).expect("noisy text parses"), program);
        // No final newline.
        assert_eq!(parse(text.trim_end()).expect("parses"), program);
    }

    #[test]
    fn unknown_target_points_at_the_name() {
        let text =
            text_of(&samples::team()).replace("-> BriefReview forward", "-> Nowhere forward");
        let error = parse_err(&text);
        assert_eq!(error.message, "unknown state `Nowhere`");
        let line = text.lines().nth(error.line - 1).expect("line exists");
        assert!(line[error.column - 1..].starts_with("Nowhere"), "{line}");
        assert!(text[error.offset..].starts_with("Nowhere"));
        assert_human(&error);
    }

    #[test]
    fn semantic_errors() {
        let team = text_of(&samples::team());
        let cases = [
            (
                team.replace("turn agent Planner", "turn agent Nobody"),
                "unknown agent `Nobody`",
                "Nobody",
            ),
            (
                team.replace("state BriefReview layer", "state Planning layer"),
                "duplicate state `Planning`",
                "Planning layer 1",
            ),
            (
                team.replace("guard contract BriefExists", "guard contract Missing"),
                "unknown contract `Missing`",
                "Missing",
            ),
            (
                team.replace("revisit BriefReview.revisits", "revisit nope"),
                "unknown counter `nope`",
                "nope",
            ),
            (
                team.replace("entry Planning", "entry \"x y\""),
                "unknown state `x y`",
                "\"x y\"",
            ),
            (
                team.replace("@380:9", "@3:380:9"),
                "location in file 3, but only file 0 is declared",
                "@3:380:9",
            ),
            (
                team.replace("fuseraft-ir 1", "fuseraft-ir 2"),
                "unsupported IR version `2` (this compiler reads version 1)",
                "2",
            ),
            (
                team.replace("origin fuseraft.statemachine", "origin fuseraft.nonsense"),
                "unknown selection kind `nonsense`",
                "nonsense",
            ),
            (
                team.replace("max_turns 40", "max_turns 99999999999"),
                "number `99999999999` is out of range",
                "99999999999",
            ),
            (
                team.replace("file 0 ", "file 1 "),
                "files must be numbered in order: expected file 0, found 1",
                "1 \"",
            ),
            (
                team.replace("entry Planning\n", ""),
                "missing `entry` line",
                "program",
            ),
            (
                team.replace("cond \"status == 'done'\"", "cond \"status === 'done'\""),
                "invalid condition",
                "\"status",
            ),
            (
                team.replace("id \"grok-4.3\"", "id \"a\\x\""),
                "invalid string: bad escape sequence or raw control character",
                "\"a\\x\"",
            ),
            (
                team.replace(
                    "  tool_choice required\n",
                    "  tool_choice required\n  tool_choice auto\n",
                ),
                "duplicate `tool_choice`",
                "tool_choice auto",
            ),
            (
                team.replace("max_tokens 4096", "max_tokens 1 max_tokens 2"),
                "duplicate `max_tokens`",
                "max_tokens 2",
            ),
            (
                team.replace("alias fast id \"grok-4.3\"", "alias fast"),
                "a model needs an `id`",
                "alias fast",
            ),
        ];
        for (text, message, at) in cases {
            assert_ne!(text, team, "case `{message}` did not change the text");
            let error = parse_err(&text);
            assert!(
                error.message.starts_with(message),
                "{error} (wanted {message})"
            );
            assert!(
                text[error.offset..].starts_with(at),
                "{error} at {:?}",
                &text[error.offset..]
            );
            assert_human(&error);
        }
    }

    #[test]
    fn syntax_errors_are_human() {
        let cases = [
            ("", 1, 1),
            ("garbage", 1, 1),
            ("fuseraft-ir 1\nprogram x origin tama\nbogus line\n", 3, 1),
            ("fuseraft-ir 1\nprogram x origin tama\nstate s layer 0\n  turn\n  exit always -> \n", 5, 18),
            ("fuseraft-ir 1\nprogram x origin tama\nstate s layer 0\n  turn\n  exit sometimes -> end forward\n", 5, 8),
            ("fuseraft-ir 1\nprogram x origin tama\nstate s layer 0\n  exit always -> end forward\n", 4, 3),
            ("fuseraft-ir 1\nprogram \"x origin tama\n", 2, 9),
        ];
        for (text, line, column) in cases {
            let error = parse_err(text);
            assert_eq!(
                (error.line, error.column),
                (line, column),
                "{error:?} for {text:?}"
            );
            assert_human(&error);
        }
        let error = parse_err(
            "fuseraft-ir 1\nprogram x origin tama\nstate s layer 0\n  turn\n  exit always -> \n",
        );
        assert_eq!(
            error.message,
            "expected a target (a state name or `end`), found end of line"
        );
        let error = parse_err("fuseraft-ir 1\nprogram x origin tama\nbogus line\n");
        assert!(error.message.contains("a top-level line"), "{error}");
        assert!(error.message.ends_with("found `bogus`"), "{error}");
    }

    #[test]
    fn every_prefix_parses_or_fails_without_panicking() {
        for program in [samples::team(), samples::kitchen_sink()] {
            let text = text_of(&program);
            let mut ok = 0;
            for (idx, _) in text.char_indices() {
                match parse(&text[..idx]) {
                    Ok(_) => ok += 1,
                    Err(error) => {
                        assert!(error.offset <= idx, "{error:?}");
                        assert_human(&error);
                    }
                }
            }
            assert!(ok > 0);
        }
    }

    #[test]
    fn mutations_and_garbage_never_panic() {
        let text = text_of(&samples::kitchen_sink());
        let bytes: Vec<char> = text.chars().collect();
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet: Vec<char> = "ab ZZ\"\\\n\r\t#@:-[],=>()0123456789é🚀\u{0}endstateexitagent"
            .chars()
            .collect();
        for _ in 0..1500 {
            let mut chars = bytes.clone();
            for _ in 0..(next() % 4 + 1) {
                let at = (next() as usize) % (chars.len() + 1);
                match next() % 3 {
                    0 if at < chars.len() => {
                        chars.remove(at);
                    }
                    1 if at < chars.len() => {
                        chars[at] = alphabet[(next() as usize) % alphabet.len()]
                    }
                    _ => chars.insert(at, alphabet[(next() as usize) % alphabet.len()]),
                }
            }
            let mutated: String = chars.into_iter().collect();
            if let Err(error) = parse(&mutated) {
                assert_human(&error);
            }
        }
        for _ in 0..300 {
            let len = (next() % 200) as usize;
            let garbage: String = (0..len)
                .map(|_| alphabet[(next() as usize) % alphabet.len()])
                .collect();
            let _ = parse(&garbage);
            let _ = parse(&format!("fuseraft-ir 1\nprogram x origin tama\n{garbage}"));
        }
    }
}
