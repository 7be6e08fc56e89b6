//! What every rule sees: the (possibly partial) program, the typed syntax indexed by source
//! position, the sources for exact spans, and the findings so far.

use std::collections::HashMap;

use crate::compile::{Compiled, Syntax};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{AgentId, Exit, Loc, Program, StateId, Trigger};
use crate::source::{FileId, SourceMap, Span};
use crate::syntax::fields::Spanned;
use crate::syntax::fuseraft::{AgentDecl, Config};
use crate::syntax::selection::{EdgeDecl, RouteDecl, TransitionDecl};
use crate::syntax::tama::AgentMd;

/// The syntax an IR exit was lowered from, found by its source position.
#[derive(Copy, Clone)]
pub(crate) enum ExitSyntax<'a> {
    Transition(&'a TransitionDecl),
    Route(&'a RouteDecl),
    Edge(&'a EdgeDecl),
    /// A tama fsm `key: target` item.
    FsmKey(&'a Spanned<String>),
}

impl ExitSyntax<'_> {
    /// The span of the routing signal (keyword, signal or fsm key), if written.
    pub fn signal_span(&self) -> Option<Span> {
        match self {
            ExitSyntax::Transition(decl) => decl.signal.as_ref().map(|s| s.span),
            ExitSyntax::Route(decl) => decl.keyword.as_ref().map(|s| s.span),
            ExitSyntax::Edge(decl) => decl.keyword.as_ref().map(|s| s.span),
            ExitSyntax::FsmKey(key) => Some(key.span),
        }
    }

    /// The span of the whole exit declaration.
    pub fn span(&self) -> Span {
        match self {
            ExitSyntax::Transition(decl) => decl.span,
            ExitSyntax::Route(decl) => decl.span,
            ExitSyntax::Edge(decl) => decl.span,
            ExitSyntax::FsmKey(key) => key.span,
        }
    }

    /// The best single span to point at for this exit: its signal, else the whole exit.
    pub fn anchor(&self) -> Span {
        self.signal_span().unwrap_or_else(|| self.span())
    }
}

/// A finding that some exit can never fire (recorded by route rules, read by graph rules).
#[derive(Copy, Clone, Debug)]
pub(crate) struct DeadExit {
    pub state: StateId,
    pub exit: usize,
    /// Index into [`Ctx::diags`] of the finding that explains why.
    pub cause: usize,
}

pub(crate) struct Ctx<'a> {
    pub program: Option<&'a Program>,
    pub sources: &'a SourceMap,
    pub config: Option<&'a Config>,
    pub tama: &'a [AgentMd],
    /// Every finding so far: the compile diagnostics first, then the rules'.
    pub diags: Vec<Diagnostic>,
    /// How many of `diags` came from the compiler.
    pub n_compile: usize,
    pub dead: Vec<DeadExit>,
    dead_index: std::collections::HashSet<(StateId, usize)>,
    /// Routes the lowering dropped because an earlier one wins (tama duplicate keys): the
    /// finding that says so and the state the dropped route would have led to.
    pub dropped: Vec<(usize, String)>,
    /// Names a finding's did-you-mean points at (a misspelt alias): a definition that looks
    /// unused because of that typo is its consequence.
    pub suggested: Vec<(usize, String)>,
    exits_by_offset: HashMap<(FileId, u32), ExitSyntax<'a>>,
}

impl<'a> Ctx<'a> {
    pub fn new(compiled: &'a Compiled) -> Ctx<'a> {
        let (config, tama): (Option<&Config>, &[AgentMd]) = match &compiled.syntax {
            Syntax::Config(config) => (Some(config), &[]),
            Syntax::Tama(agents) => (None, agents),
            Syntax::None => (None, &[]),
        };
        let mut ctx = Ctx {
            program: compiled.any_program(),
            sources: &compiled.sources,
            config,
            tama,
            diags: compiled.diagnostics.clone(),
            n_compile: compiled.diagnostics.len(),
            dead: Vec::new(),
            dead_index: std::collections::HashSet::new(),
            dropped: Vec::new(),
            suggested: Vec::new(),
            exits_by_offset: HashMap::new(),
        };
        ctx.index();
        // A compile error about a misspelt reference explains why the definition it meant
        // looks unused: remember which definition that is.
        let mut suggested = Vec::new();
        for (idx, diag) in ctx.diags.iter().enumerate() {
            let candidates: Vec<&str> = match (diag.code, ctx.config) {
                (Code::UnknownContract, Some(config)) => config
                    .contracts
                    .iter()
                    .filter_map(|c| c.name.as_ref().map(|n| n.value.as_str()))
                    .collect(),
                (Code::UnknownAgent, Some(config)) => config
                    .agents
                    .iter()
                    .filter_map(|a| a.name.as_ref().map(|n| n.value.as_str()))
                    .collect(),
                _ => continue,
            };
            let Some(written) = diag.message.split('`').nth(1) else {
                continue;
            };
            if let Some(meant) = closest(written, &candidates) {
                suggested.push((idx, meant.to_string()));
            }
        }
        ctx.suggested = suggested;
        ctx
    }

    fn index(&mut self) {
        let mut map = HashMap::new();
        if let Some(config) = self.config {
            let selection = &config.selection;
            for route in &selection.routes {
                map.insert(key(route.span), ExitSyntax::Route(route));
            }
            if let Some(machine) = &selection.state_machine {
                for state in &machine.states {
                    for transition in &state.transitions {
                        map.insert(key(transition.span), ExitSyntax::Transition(transition));
                    }
                }
            }
            if let Some(graph) = &selection.graph {
                for edge in &graph.edges {
                    map.insert(key(edge.span), ExitSyntax::Edge(edge));
                }
            }
        }
        for md in self.tama {
            for state in md.states.iter().flatten() {
                if let crate::syntax::tama::FsmNext::Keyed(items) = &state.next {
                    for (fsm_key, _) in items {
                        map.insert(key(fsm_key.span), ExitSyntax::FsmKey(fsm_key));
                    }
                }
            }
        }
        self.exits_by_offset = map;
    }

    /// The byte span an IR location points at: the token starting there (a key, a name,
    /// a quoted string), or an empty span when the location is outside the sources.
    pub fn loc_span(&self, loc: Option<Loc>) -> Option<Span> {
        let file_id = self.loc_file(loc?)?;
        let loc = loc?;
        let file = self.sources.get(file_id);
        let start = file.offset_of(loc.line as usize, loc.column.saturating_sub(1) as usize);
        let rest = file.text.get(start..).unwrap_or("");
        let len = token_len(rest);
        Some(Span::new(file_id, start, start + len))
    }

    /// The loaded source an IR location points into. A program read from a `.fir` file
    /// keeps the locations of the config it was compiled from, which is not loaded: those
    /// locations point nowhere.
    fn loc_file(&self, loc: Loc) -> Option<FileId> {
        let file_id = FileId(loc.file.0);
        if file_id.0 as usize >= self.sources.len() {
            return None;
        }
        let written = self.program?.files.get(loc.file.0 as usize)?;
        (*written == self.sources.get(file_id).name).then_some(file_id)
    }

    /// The syntax of an exit, found through its location.
    pub fn exit_syntax(&self, exit: &Exit) -> Option<ExitSyntax<'a>> {
        let loc = exit.loc?;
        let file_id = self.loc_file(loc)?;
        let file = self.sources.get(file_id);
        let start = file.offset_of(loc.line as usize, loc.column.saturating_sub(1) as usize);
        self.exits_by_offset.get(&(file_id, start as u32)).copied()
    }

    /// The span to label for an exit: its signal if written, else its declaration.
    pub fn exit_span(&self, exit: &Exit) -> Option<Span> {
        match self.exit_syntax(exit) {
            Some(syntax) => Some(syntax.anchor()),
            None => self.loc_span(exit.loc),
        }
    }

    pub fn state_span(&self, program: &Program, state: StateId) -> Option<Span> {
        self.loc_span(program.state(state).loc)
    }

    /// The front matter of a tama agent as a node tree, for keys the typed syntax does not
    /// keep (`rounds`, `n`, `max_iter`, `call.max_iter`). Parsed again from the kept text.
    pub fn tama_front_matter(&self, md: &AgentMd) -> Option<crate::syntax::Node> {
        if md.file.0 as usize >= self.sources.len() {
            return None;
        }
        let text = &self.sources.get(md.file).text;
        let (start, end) = (md.span.start as usize, md.span.end as usize);
        // Blank everything outside the front matter so positions stay those of the file.
        let blanked: String = text
            .char_indices()
            .map(|(at, ch)| {
                if (start..end).contains(&at) || ch == '\n' {
                    ch.to_string()
                } else {
                    " ".repeat(ch.len_utf8())
                }
            })
            .collect();
        crate::syntax::parse_yaml(md.file, &blanked, &crate::syntax::Budget::default()).ok()
    }

    /// A fuseraft agent declaration by name (case-insensitive).
    pub fn agent_decl(&self, name: &str) -> Option<&'a AgentDecl> {
        self.config?.agents.iter().find(|decl| {
            decl.name
                .as_ref()
                .is_some_and(|n| n.value.eq_ignore_ascii_case(name))
        })
    }

    /// The span naming an agent: its `Name:` value, or its location in the IR.
    pub fn agent_span(&self, program: &Program, agent: AgentId) -> Option<Span> {
        let name = &program.agent(agent).name;
        match self.agent_decl(name).and_then(|decl| decl.name.as_ref()) {
            Some(spanned) => Some(spanned.span),
            None => self.loc_span(program.agent(agent).loc),
        }
    }

    /// Whether every agent that may emit this trigger in `state` can call the `handoff`
    /// tool (whose `route_keyword` is compared by equality, bypassing the line matcher).
    pub fn can_handoff(&self, program: &Program, state: StateId, trigger: &Trigger) -> bool {
        let emitters: Vec<AgentId> = match trigger {
            Trigger::Signal { sources, .. } if !sources.is_empty() => sources.clone(),
            _ => program.state(state).agent.into_iter().collect(),
        };
        !emitters.is_empty()
            && emitters.iter().all(|agent| {
                program
                    .agent(*agent)
                    .tools
                    .iter()
                    .any(|tool| tool.eq_ignore_ascii_case("Handoff"))
            })
    }

    /// Adds a finding; returns its index (for [`DeadExit::cause`] and related findings).
    pub fn push(&mut self, diag: Diagnostic) -> usize {
        self.diags.push(diag);
        self.diags.len() - 1
    }

    /// Records that an exit can never fire, because of finding `cause`.
    pub fn kill(&mut self, state: StateId, exit: usize, cause: usize) {
        if self.dead_index.insert((state, exit)) {
            self.dead.push(DeadExit { state, exit, cause });
        }
    }

    pub fn is_dead(&self, state: StateId, exit: usize) -> bool {
        self.dead_index.contains(&(state, exit))
    }

    /// Every finding, with duplicates (the same code on the same spans, as a global keyword
    /// route copied into every state produces) merged.
    pub fn finish(self) -> Vec<Diagnostic> {
        type Key = (crate::diagnostic::Code, String, Vec<Span>);
        let mut out: Vec<Diagnostic> = Vec::new();
        let mut index: HashMap<Key, usize> = HashMap::new();
        for diag in self.diags {
            let key = (
                diag.code,
                diag.message.clone(),
                diag.labels.iter().map(|label| label.span).collect(),
            );
            match index.get(&key) {
                Some(&at) => {
                    for related in diag.related {
                        if !out[at].related.contains(&related) {
                            out[at].related.push(related);
                        }
                    }
                }
                None => {
                    index.insert(key, out.len());
                    out.push(diag);
                }
            }
        }
        out
    }
}

fn key(span: Span) -> (FileId, u32) {
    (span.file, span.start)
}

/// The length of the token at the start of `text`: a quoted string, or text up to `:`, a
/// comma or the end of the line (trailing spaces dropped).
fn token_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, quote @ ('"' | '\''))) => {
            let mut escaped = false;
            for (idx, ch) in chars {
                if ch == quote && !escaped {
                    return idx + 1;
                }
                escaped = quote == '"' && ch == '\\' && !escaped;
                if ch == '\n' {
                    return idx;
                }
            }
            text.len()
        }
        Some(_) => {
            let end = text
                .find([':', '\n', ',', '#', '}', ']'])
                .unwrap_or(text.len());
            text[..end].trim_end().len()
        }
        None => 0,
    }
}

/// The span of bytes `start..end` of a scalar's *value* inside the scalar as written at
/// `span`: escapes of double-quoted and single-quoted scalars are undone to find the
/// right source bytes. Falls back to the whole scalar when the text cannot be mapped.
pub(crate) fn value_sub_span(
    sources: &SourceMap,
    span: Span,
    value: &str,
    start: usize,
    end: usize,
) -> Span {
    if span.file.0 as usize >= sources.len() {
        return span;
    }
    let text = &sources.get(span.file).text;
    let Some(raw) = text.get(span.start as usize..span.end as usize) else {
        return span;
    };
    let offsets = match raw.chars().next() {
        Some('"') => decode_double(raw),
        Some('\'') => decode_single(raw),
        _ => raw.find(value).map(|at| {
            let (decoded, mut offsets): (String, Vec<usize>) =
                (value.to_string(), (at..at + value.len()).collect());
            offsets.push(at + decoded.len());
            (decoded, offsets)
        }),
    };
    match offsets {
        Some((decoded, offsets)) if decoded == value && end < offsets.len() && start <= end => {
            let from = offsets[start];
            let to = offsets[end];
            Span::new(
                span.file,
                span.start as usize + from,
                span.start as usize + to.max(from),
            )
        }
        _ => span,
    }
}

/// Decodes a double-quoted scalar; returns the text and, per decoded byte, the raw offset
/// of the source character that produced it (plus one final entry for the end).
fn decode_double(raw: &str) -> Option<(String, Vec<usize>)> {
    let mut out = String::new();
    let mut offsets = Vec::new();
    let mut chars = raw.char_indices().skip(1).peekable();
    while let Some((at, ch)) = chars.next() {
        let decoded = match ch {
            '"' => {
                offsets.push(at);
                return Some((out, offsets));
            }
            '\\' => {
                let (_, escape) = chars.next()?;
                match escape {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    '/' => '/',
                    'u' | 'x' | 'U' => {
                        let digits = match escape {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut code = 0u32;
                        for _ in 0..digits {
                            let (_, digit) = chars.next()?;
                            code = code * 16 + digit.to_digit(16)?;
                        }
                        char::from_u32(code)?
                    }
                    other => other,
                }
            }
            '\n' => return None,
            other => other,
        };
        for _ in 0..decoded.len_utf8() {
            offsets.push(at);
        }
        out.push(decoded);
    }
    None
}

fn decode_single(raw: &str) -> Option<(String, Vec<usize>)> {
    let mut out = String::new();
    let mut offsets = Vec::new();
    let mut chars = raw.char_indices().skip(1).peekable();
    while let Some((at, ch)) = chars.next() {
        if ch == '\'' {
            if chars.peek().is_some_and(|(_, next)| *next == '\'') {
                chars.next();
            } else {
                offsets.push(at);
                return Some((out, offsets));
            }
        }
        if ch == '\n' {
            return None;
        }
        for _ in 0..ch.len_utf8() {
            offsets.push(at);
        }
        out.push(ch);
    }
    None
}

/// The candidate a misspelt name most likely meant: within a small edit distance, or the
/// same letters with two neighbours swapped (which plain edit distance counts twice).
pub(crate) fn closest<'c>(name: &str, candidates: &[&'c str]) -> Option<&'c str> {
    if let Some(hint) = crate::diagnostic::did_you_mean(name, candidates.iter().copied()) {
        let meant = hint.split('`').nth(1)?;
        return candidates.iter().copied().find(|c| *c == meant);
    }
    candidates.iter().copied().find(|c| transposed(name, c))
}

/// Whether `a` is `b` with two adjacent characters swapped (ignoring case).
pub(crate) fn transposed(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    if a.len() != b.len() || a == b {
        return false;
    }
    let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    diff.len() == 2
        && diff[1] == diff[0] + 1
        && a[diff[0]] == b[diff[1]]
        && a[diff[1]] == b[diff[0]]
}
