//! The typed syntax of a tama project: `tama.toml` and `agents/<dir>/AGENT.md` front matter.
//!
//! Front matter follows tama's splitting rules (`research/tama.md`): leading whitespace is
//! trimmed, the file must start with `---`, the YAML ends at the first `\n---`, the body is
//! the rest with leading `\n` removed. tama's keys are case-sensitive; unknown keys are
//! reported (tama ignores them silently).

use super::fields::Spanned;
use super::node::{Node, NodeKind};
use super::Loader;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::source::{FileId, Span};

pub const PATTERNS: &[&str] = &[
    "oneshot",
    "react",
    "scatter",
    "parallel",
    "fsm",
    "critic",
    "reflexion",
    "constitutional",
    "chain-of-verification",
    "plan-execute",
    "debate",
    "best-of-n",
    "human",
];

const AGENT_KEYS: &[&str] = &[
    "name",
    "description",
    "version",
    "pattern",
    "initial",
    "states",
    "worker",
    "workers",
    "agents",
    "rounds",
    "judge",
    "n",
    "max_iter",
    "env",
    "call",
];
const CALL_KEYS: &[&str] = &["model", "uses", "max_iter"];
const MODEL_KEYS: &[&str] = &["role", "name", "temperature", "max_tokens"];

/// One parsed `AGENT.md`.
#[derive(Clone, Debug)]
pub struct AgentMd {
    pub file: FileId,
    /// The span of the front matter's YAML (for diagnostics about the whole agent).
    pub span: Span,
    pub name: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub pattern: Option<Spanned<String>>,
    pub initial: Option<Spanned<String>>,
    pub states: Option<Vec<FsmState>>,
    pub states_span: Option<Span>,
    /// Agents this one runs as workers (`worker`, `workers`, `agents`, `judge`).
    pub workers: Vec<Spanned<String>>,
    /// `scatter`'s `worker`.
    pub worker: Option<Spanned<String>>,
    /// `parallel`'s `workers`, `debate`'s `agents`.
    pub worker_list: Vec<Spanned<String>>,
    /// `debate`'s `judge`.
    pub judge: Option<Spanned<String>>,
    /// `debate`'s `rounds`.
    pub rounds: Option<Spanned<u32>>,
    /// `best-of-n`'s `n`.
    pub n: Option<Spanned<u32>>,
    /// `max_iter` (top level).
    pub max_iter: Option<Spanned<u32>>,
    /// The front matter's top-level keys, as written.
    pub keys: Vec<String>,
    pub model_role: Option<Spanned<String>>,
    pub model_name: Option<Spanned<String>>,
    pub temperature: Option<Spanned<String>>,
    pub max_tokens: Option<Spanned<String>>,
    pub uses: Vec<Spanned<String>>,
    pub body: String,
}

#[derive(Clone, Debug)]
pub struct FsmState {
    pub name: Spanned<String>,
    pub next: FsmNext,
}

#[derive(Clone, Debug)]
pub enum FsmNext {
    /// `~`, `null` or an empty value: the state is terminal.
    Terminal(Span),
    /// A string: an unconditional transition.
    Goto(Spanned<String>),
    /// A list of `key: target` maps; `None` targets (`key: ~`) end the FSM.
    Keyed(Vec<(Spanned<String>, Option<Spanned<String>>)>),
}

impl AgentMd {
    /// An agent with nothing set but its body.
    pub fn empty(file: FileId, span: Span, body: String) -> AgentMd {
        AgentMd {
            file,
            span,
            name: None,
            description: None,
            pattern: None,
            initial: None,
            states: None,
            states_span: None,
            workers: Vec::new(),
            worker: None,
            worker_list: Vec::new(),
            judge: None,
            rounds: None,
            n: None,
            max_iter: None,
            keys: Vec::new(),
            model_role: None,
            model_name: None,
            temperature: None,
            max_tokens: None,
            uses: Vec::new(),
            body,
        }
    }
}

/// A pattern's step file (`draft.md`, `reduce.md`, …): front matter is optional, and only its
/// `pattern` and `call` are read; without front matter the whole file is the body.
pub fn read_step_md(file: FileId, loader: &mut Loader<'_>) -> Option<AgentMd> {
    let text = &loader.sources.get(file).text;
    if text.trim_start().starts_with("---") {
        return read_agent_md(file, loader);
    }
    let body = text.clone();
    Some(AgentMd::empty(file, Span::new(file, 0, 0), body))
}

/// Splits front matter from the body and parses the YAML with spans that point into the
/// original file. Returns `None` (with a diagnostic) when the file has no front matter.
pub fn read_agent_md(file: FileId, loader: &mut Loader<'_>) -> Option<AgentMd> {
    let (node, span, body) = front_matter(file, loader)?;
    Some(read_front_matter(
        file,
        &node,
        span,
        body,
        &mut loader.diags,
    ))
}

/// The front matter of an AGENT.md, step or SKILL.md file parsed (spans into the file), its
/// span and the body; `None` (reported) without front matter.
pub(super) fn front_matter(file: FileId, loader: &mut Loader<'_>) -> Option<(Node, Span, String)> {
    let text = loader.sources.get(file).text.clone();
    let start = text.len() - text.trim_start().len();
    let file_start = Span::new(file, start, start);
    if !text[start..].starts_with("---") {
        loader.diags.push(
            Diagnostic::error(
                Code::SyntaxError,
                "file does not start with `---` front matter",
            )
            .with_label(file_start, "expected `---` here")
            .with_help("an AGENT.md starts with YAML front matter between two `---` lines"),
        );
        return None;
    }
    let yaml_start = start + 3;
    let Some(close) = text[yaml_start..].find("\n---") else {
        loader.diags.push(
            Diagnostic::error(Code::SyntaxError, "front matter closing `---` not found")
                .with_label(Span::new(file, start, start + 3), "front matter opens here")
                .with_help("end the front matter with a line `---`"),
        );
        return None;
    };
    let yaml_end = yaml_start + close;
    let body_start = (yaml_end + 4).min(text.len());
    let body = text[body_start..].trim_start_matches('\n').to_string();

    // Blank everything outside the front matter (keeping newlines and byte lengths) so the
    // YAML parser's positions are positions in the original file.
    let mut blanked = String::with_capacity(text.len());
    for (offset, ch) in text.char_indices() {
        if (yaml_start..yaml_end).contains(&offset) || ch == '\n' {
            blanked.push(ch);
        } else {
            for _ in 0..ch.len_utf8() {
                blanked.push(' ');
            }
        }
    }
    let node = match super::yaml::parse(file, &blanked, &loader.budget) {
        Ok(node) => node,
        Err(diag) => {
            loader.diags.push(diag);
            return None;
        }
    };
    let span = Span::new(file, yaml_start, yaml_end);
    Some((node, span, body))
}

/// Front matter that is not `key: value` lines.
pub(super) fn not_a_mapping(node: &Node) -> Diagnostic {
    Diagnostic::error(
        Code::InvalidValue,
        format!("front matter must be a mapping, found {}", node.kind_name()),
    )
    .with_label(node.span, "expected `key: value` lines")
}

pub(super) fn scalar(
    node: &Node,
    key: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Spanned<String>> {
    match &node.kind {
        NodeKind::Scalar { text, .. } => Some(Spanned::new(text.clone(), node.span)),
        NodeKind::Null => None,
        _ => {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`{key}` must be a string, found {}", node.kind_name()),
                )
                .with_label(node.span, "expected a string"),
            );
            None
        }
    }
}

/// A whole number (tama's `u32` fields: `rounds`, `n`, `max_iter`).
fn count(node: &Node, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<u32>> {
    let text = match &node.kind {
        NodeKind::Scalar { text, .. } => Some(text),
        _ => None,
    };
    match text.and_then(|text| text.parse::<u32>().ok()) {
        Some(value) => Some(Spanned::new(value, node.span)),
        None => {
            let found = match text {
                Some(text) => format!("`{text}`"),
                None => node.kind_name().to_string(),
            };
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`{key}` must be a whole number, found {found}"),
                )
                .with_label(node.span, "expected a number such as `3`"),
            );
            None
        }
    }
}

pub(super) fn check_keys(node: &Node, known: &[&str], section: &str, diags: &mut Vec<Diagnostic>) {
    for (key, _) in node.entries() {
        let name = key.as_str().unwrap_or("");
        if !known.contains(&name) {
            let mut diag = Diagnostic::warning(
                Code::UnknownKey,
                format!("unknown key `{name}` in {section}"),
            )
            .with_label(key.span, "tama ignores this key");
            if let Some(help) = did_you_mean(name, known.iter().copied()) {
                diag = diag.with_help(help);
            }
            diags.push(diag);
        }
    }
}

fn read_front_matter(
    file: FileId,
    node: &Node,
    span: Span,
    body: String,
    diags: &mut Vec<Diagnostic>,
) -> AgentMd {
    let mut agent = AgentMd::empty(file, span, body);
    if !matches!(node.kind, NodeKind::Map(_)) {
        diags.push(not_a_mapping(node));
        return agent;
    }
    check_keys(node, AGENT_KEYS, "agent front matter", diags);
    agent.keys = node
        .entries()
        .iter()
        .filter_map(|(key, _)| key.as_str().map(str::to_string))
        .collect();
    agent.name = node
        .get("name")
        .and_then(|value| scalar(value, "name", diags));
    agent.description = node
        .get("description")
        .and_then(|value| scalar(value, "description", diags));
    agent.pattern = node
        .get("pattern")
        .and_then(|value| scalar(value, "pattern", diags));
    agent.initial = node
        .get("initial")
        .and_then(|value| scalar(value, "initial", diags));
    for key in ["worker", "judge"] {
        if let Some(value) = node.get(key).and_then(|value| scalar(value, key, diags)) {
            agent.workers.push(value.clone());
            match key {
                "worker" => agent.worker = Some(value),
                _ => agent.judge = Some(value),
            }
        }
    }
    agent.rounds = node
        .get("rounds")
        .and_then(|value| count(value, "rounds", diags));
    agent.n = node.get("n").and_then(|value| count(value, "n", diags));
    agent.max_iter = node
        .get("max_iter")
        .and_then(|value| count(value, "max_iter", diags));
    for key in ["workers", "agents"] {
        if let Some(list) = node.get(key) {
            match &list.kind {
                NodeKind::Seq(items) => {
                    let names: Vec<_> = items
                        .iter()
                        .filter_map(|item| scalar(item, key, diags))
                        .collect();
                    agent.workers.extend(names.iter().cloned());
                    agent.worker_list.extend(names);
                }
                _ => diags.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("`{key}` must be a list, found {}", list.kind_name()),
                    )
                    .with_label(list.span, "expected a list of agent names"),
                ),
            }
        }
    }
    if let Some(call) = node.get("call") {
        check_keys(call, CALL_KEYS, "`call`", diags);
        if let Some(model) = call.get("model") {
            check_keys(model, MODEL_KEYS, "`call.model`", diags);
            agent.model_role = model
                .get("role")
                .and_then(|value| scalar(value, "role", diags));
            agent.model_name = model
                .get("name")
                .and_then(|value| scalar(value, "name", diags));
            agent.temperature = model
                .get("temperature")
                .and_then(|value| scalar(value, "temperature", diags));
            agent.max_tokens = model
                .get("max_tokens")
                .and_then(|value| scalar(value, "max_tokens", diags));
        }
        if let Some(uses) = call.get("uses") {
            agent.uses = uses
                .items()
                .iter()
                .filter_map(|item| scalar(item, "uses", diags))
                .collect();
        }
    }
    if let Some((_, states)) = node
        .entries()
        .iter()
        .find(|(key, _)| key.as_str() == Some("states"))
    {
        agent.states_span = Some(states.span);
        agent.states = read_states(states, diags);
    }
    agent
}

fn read_states(node: &Node, diags: &mut Vec<Diagnostic>) -> Option<Vec<FsmState>> {
    let NodeKind::Map(pairs) = &node.kind else {
        diags.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!("`states` must be a mapping, found {}", node.kind_name()),
            )
            .with_label(node.span, "expected `state: next` lines"),
        );
        return None;
    };
    let mut states: Vec<FsmState> = Vec::new();
    for (key, value) in pairs {
        let Some(name) = key.as_str() else {
            diags.push(
                Diagnostic::error(Code::InvalidValue, "a state name must be a string")
                    .with_label(key.span, "expected a name"),
            );
            continue;
        };
        let name = Spanned::new(name.to_string(), key.span);
        let Some(next) = read_next(value, diags) else {
            continue;
        };
        if let Some(first) = states
            .iter()
            .position(|state| state.name.value == name.value)
        {
            diags.push(
                Diagnostic::warning(
                    Code::DuplicateName,
                    format!("state `{}` is listed twice; the last one wins", name.value),
                )
                .with_label(name.span, "this entry replaces the earlier one")
                .with_label(states[first].name.span, "first listed here"),
            );
            states.remove(first);
        }
        states.push(FsmState { name, next });
    }
    Some(states)
}

fn read_next(node: &Node, diags: &mut Vec<Diagnostic>) -> Option<FsmNext> {
    match &node.kind {
        NodeKind::Null => Some(FsmNext::Terminal(node.span)),
        NodeKind::Scalar { text, .. } => Some(FsmNext::Goto(Spanned::new(text.clone(), node.span))),
        NodeKind::Seq(items) => {
            let mut keyed = Vec::new();
            for item in items {
                let NodeKind::Map(pairs) = &item.kind else {
                    diags.push(bad_transition(
                        item,
                        "each item must be a `key: target` mapping",
                    ));
                    continue;
                };
                for (key, target) in pairs {
                    let Some(key_text) = key.as_str() else {
                        diags.push(bad_transition(key, "a routing key must be a string"));
                        continue;
                    };
                    let key_text = Spanned::new(key_text.to_string(), key.span);
                    match &target.kind {
                        NodeKind::Null => keyed.push((key_text, None)),
                        NodeKind::Scalar { text, .. } => {
                            keyed.push((key_text, Some(Spanned::new(text.clone(), target.span))))
                        }
                        _ => diags.push(bad_transition(
                            target,
                            "a target must be a state name or `~`",
                        )),
                    }
                }
            }
            Some(FsmNext::Keyed(keyed))
        }
        NodeKind::Map(_) => {
            diags.push(bad_transition(
                node,
                "conditional transitions are a list of `- key: target` items, not a mapping",
            ));
            None
        }
    }
}

fn bad_transition(node: &Node, why: &str) -> Diagnostic {
    Diagnostic::error(Code::InvalidValue, format!("invalid fsm transition: {why}"))
        .with_label(node.span, "here")
        .with_help(
            "a state's value is `~` (terminal), a state name, or a list of `- key: target` items",
        )
}

/// `tama.toml`: the entrypoint and the model roles.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub entrypoint: Option<Spanned<String>>,
    /// `[permissions]` (a fuseraft extension): the policy tama's tools run under.
    pub permissions: crate::ir::Permissions,
    /// role → `provider:model` (or a table's `name`), with temperature and max tokens.
    pub roles: Vec<(String, String, Option<String>, Option<String>)>,
}

/// `None` when the file is not valid TOML (reported).
pub fn read_manifest(file: FileId, loader: &mut Loader<'_>) -> Option<Manifest> {
    let text = loader.sources.get(file).text.clone();
    let table: toml::Table = match text.parse() {
        Ok(table) => table,
        Err(error) => {
            let range = error.span().unwrap_or(0..0);
            loader.diags.push(
                Diagnostic::error(
                    Code::SyntaxError,
                    format!("invalid toml: {}", error.message()),
                )
                .with_label(Span::new(file, range.start, range.end), "here"),
            );
            return None;
        }
    };
    let mut manifest = Manifest::default();
    if let Some(project) = table.get("project").and_then(|value| value.as_table()) {
        if let Some(value) = project.get("entrypoint").filter(|value| !value.is_str()) {
            let shown = value.to_string();
            let at = text.find("entrypoint").unwrap_or(0);
            loader.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`entrypoint` must be a string, found `{shown}`"),
                )
                .with_label(
                    Span::new(file, at, at + "entrypoint".len()),
                    "expected the name of an agent directory",
                )
                .with_help("write `entrypoint = \"<agent>\"`"),
            );
            return None;
        }
        if let Some(entry) = project.get("entrypoint").and_then(|value| value.as_str()) {
            // toml keeps no spans in a plain Table: point at the text of the value.
            let span = text
                .find(&format!("\"{entry}\""))
                .map(|at| Span::new(file, at, at + entry.len() + 2))
                .unwrap_or(Span::new(file, 0, 0));
            manifest.entrypoint = Some(Spanned::new(entry.to_string(), span));
        }
    }
    if let Some(permissions) = table.get("permissions") {
        read_permissions(permissions, &text, file, &mut manifest.permissions, loader);
    }
    if let Some(models) = table.get("models").and_then(|value| value.as_table()) {
        for (role, value) in models {
            match value {
                toml::Value::String(name) => {
                    manifest
                        .roles
                        .push((role.clone(), name.clone(), None, None))
                }
                toml::Value::Table(spec) => manifest.roles.push((
                    role.clone(),
                    spec.get("name")
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string(),
                    spec.get("temperature").map(|v| v.to_string()),
                    spec.get("max_tokens").map(|v| v.to_string()),
                )),
                _ => {}
            }
        }
    }
    Some(manifest)
}

/// `[permissions]`: `preset = "locked-down"` and `command_execution = "block"`-style lines,
/// as a config's `Security.Permissions`.
fn read_permissions(
    value: &toml::Value,
    text: &str,
    file: FileId,
    permissions: &mut crate::ir::Permissions,
    loader: &mut Loader<'_>,
) {
    use crate::ir::{Action, Category, Preset};
    let at = |key: &str| {
        let start = text.find(key).unwrap_or(0);
        Span::new(file, start, start + key.len())
    };
    let Some(table) = value.as_table() else {
        let diag = Diagnostic::error(Code::InvalidValue, "`permissions` must be a table")
            .with_label(at("permissions"), "expected `[permissions]`");
        loader.diags.push(diag);
        return;
    };
    for (key, value) in table {
        let text_value = value.as_str().unwrap_or_default();
        if key == "preset" {
            match Preset::parse(text_value) {
                Some(preset) => permissions.preset = preset,
                None => loader.diags.push(
                    Diagnostic::error(Code::InvalidValue, format!("unknown preset `{}`", value))
                        .with_label(at("preset"), "not a preset")
                        .with_help("presets: unrestricted, approval-required, locked-down"),
                ),
            }
            continue;
        }
        let Some(category) = Category::parse(key) else {
            loader.diags.push(
                Diagnostic::error(
                    Code::UnknownKey,
                    format!("unknown key `{key}` in `[permissions]`"),
                )
                .with_label(at(key), "not a permission category")
                .with_help(
                    "categories: file_write_delete, command_execution, git_write, network_api, mcp",
                ),
            );
            continue;
        };
        match Action::parse(text_value) {
            Some(action) => permissions.overrides.push((category, action)),
            None => loader.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("unknown action `{value}` for `{key}`"),
                )
                .with_label(at(key), "not an action")
                .with_help("actions: allow, require-approval, block"),
            ),
        }
    }
}
