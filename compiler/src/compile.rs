//! The compiler's entry point: one input path in, a program and its diagnostics out.
//!
//! Inputs: a fuseraft config (`.yaml`, `.yml`, `.json`), a tama `AGENT.md` (its project is
//! the directory above `agents/`), a tama project (its directory or its `tama.toml`; its
//! `entrypoint` is compiled), or a `.fir` IR file.

use std::path::{Path, PathBuf};

use crate::diagnostic::{Code, Diagnostic};
use crate::ir::Program;
use crate::source::{FileReader, SourceMap, Span};
use crate::syntax::fuseraft::Config;
use crate::syntax::tama::AgentMd;
use crate::syntax::{Loader, Node, NodeKind};

/// The result of compiling one input.
#[derive(Debug)]
pub struct Compiled {
    /// `None` when some diagnostic is an error.
    pub program: Option<Program>,
    pub diagnostics: Vec<Diagnostic>,
    pub sources: SourceMap,
    /// True when the input itself could not be read (a usage error, not a finding).
    pub unreadable: bool,
    /// When some diagnostic is an error: the program as far as it was lowered (references
    /// that did not resolve are left out), so `check` can relate consequences to their cause.
    pub partial: Option<Program>,
    /// The typed syntax the program was lowered from, so `check` can point at exact spans.
    pub syntax: Syntax,
}

/// The typed syntax of one input, kept for the checks.
#[derive(Debug, Default)]
pub enum Syntax {
    /// A `.fir` file, or an input that did not get as far as typed syntax.
    #[default]
    None,
    Config(Box<Config>),
    /// Every `AGENT.md` of a tama project that was read, in load order.
    Tama(Vec<AgentMd>),
}

impl Compiled {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The program, or the partial one lowered despite errors.
    pub fn any_program(&self) -> Option<&Program> {
        self.program.as_ref().or(self.partial.as_ref())
    }
}

/// What kind of input a path is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    Config,
    TamaAgent,
    TamaProject,
    Ir,
}

pub fn input_kind(path: &Path, reader: &dyn FileReader) -> InputKind {
    // A project is named by its directory or by its `tama.toml`.
    if reader.is_dir(path) || path.file_name().is_some_and(|name| name == "tama.toml") {
        return InputKind::TamaProject;
    }
    let extension = path
        .extension()
        .map(|ext| ext.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "fir" => InputKind::Ir,
        "md" => InputKind::TamaAgent,
        _ => InputKind::Config,
    }
}

/// Compiles any supported input.
pub fn compile(path: &Path, reader: &dyn FileReader) -> Compiled {
    compile_keeping(path, reader, Keep::Syntax)
}

/// [`compile`] for a caller that needs no [`Compiled::syntax`] (it is [`Syntax::None`]):
/// the parsed tree is freed before lowering instead of living on in the typed config, so a
/// large config's peak memory is its tree smaller (a sixth of `fuseraft compile` at
/// 10,000 states). Program and diagnostics are the same.
pub fn compile_program(path: &Path, reader: &dyn FileReader) -> Compiled {
    compile_keeping(path, reader, Keep::Program)
}

/// What a compile keeps besides the program and its diagnostics.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Keep {
    Syntax,
    Program,
}

fn compile_keeping(path: &Path, reader: &dyn FileReader, keep: Keep) -> Compiled {
    let mut loader = Loader::new(reader);
    let mut syntax = Syntax::None;
    let program = match input_kind(path, reader) {
        InputKind::Config => compile_config(path, &mut loader, &mut syntax, keep),
        InputKind::TamaAgent => compile_tama_agent(path, &mut loader),
        InputKind::TamaProject => compile_tama_project(path, &mut loader),
        InputKind::Ir => compile_ir(path, &mut loader),
    };
    if keep == Keep::Syntax
        && matches!(
            input_kind(path, reader),
            InputKind::TamaAgent | InputKind::TamaProject
        )
    {
        syntax = Syntax::Tama(reread_agents(&loader.sources, reader));
    }
    let unreadable = loader.sources.is_empty();
    let mut diagnostics = loader.diags;
    crate::misspelt::fold(&mut diagnostics);
    sort_diagnostics(&mut diagnostics);
    let has_errors = diagnostics.iter().any(Diagnostic::is_error);
    let (program, partial) = if has_errors {
        (None, program)
    } else {
        (program, None)
    };
    Compiled {
        program,
        diagnostics,
        sources: loader.sources,
        unreadable,
        partial,
        syntax,
    }
}

/// The typed front matter of every `AGENT.md` that was loaded, read again from the kept
/// sources (same file ids, so spans match); its diagnostics were already reported.
fn reread_agents(sources: &SourceMap, reader: &dyn FileReader) -> Vec<AgentMd> {
    let mut loader = Loader::new(reader);
    for (_, file) in sources.files() {
        loader.sources.add(file.clone());
    }
    let mut agents = Vec::new();
    for (id, file) in sources.files() {
        if file.path.file_name().is_some_and(|name| name == "AGENT.md") {
            if let Some(md) = crate::syntax::tama::read_agent_md(id, &mut loader) {
                agents.push(md);
            }
        }
    }
    agents
}

/// Orders diagnostics by file and position so output is stable whatever the stage order.
fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|diag| {
        let span = diag.span().unwrap_or_default();
        (span.file, span.start, span.end)
    });
}

fn compile_config(
    path: &Path,
    loader: &mut Loader<'_>,
    syntax: &mut Syntax,
    keep: Keep,
) -> Option<Program> {
    let file = loader.read(path, None, "config")?;
    let root = loader.parse(file)?;
    let dir = loader.sources.get(file).dir().to_path_buf();
    let mut config = crate::syntax::fuseraft::read_config(root, &dir, loader)?;
    crate::syntax::config_paths::check(&config, loader);
    if keep == Keep::Program {
        // Only the checks walk the tree as written; the lowering reads the typed config.
        config.root = Node::new(config.root.span, NodeKind::Null);
    }
    let Loader { sources, diags, .. } = loader;
    let program = crate::lower::lower_config(&config, sources, diags);
    if keep == Keep::Syntax {
        *syntax = Syntax::Config(Box::new(config));
    }
    program
}

fn compile_tama_agent(path: &Path, loader: &mut Loader<'_>) -> Option<Program> {
    // `<project>/agents/<name>/AGENT.md`: the agent is found by its directory name.
    let agent_dir = path.parent().unwrap_or(Path::new(""));
    let name = agent_dir
        .file_name()
        .map(|name| name.to_string_lossy().to_string())
        .unwrap_or_default();
    let agents_dir = agent_dir.parent().unwrap_or(Path::new(""));
    let is_project_layout = agents_dir.file_name().is_some_and(|dir| dir == "agents");
    if !is_project_layout || name.is_empty() {
        // Not in a project: read it anyway so its own errors are reported.
        let file = loader.read(path, None, "agent")?;
        crate::syntax::tama::read_agent_md(file, loader)?;
        loader.diags.push(
            Diagnostic::error(
                Code::MissingFile,
                "this AGENT.md is not inside a tama project's `agents/<name>/` folder",
            )
            .with_label(
                Span::new(crate::source::FileId(0), 0, 0),
                "its sibling agents cannot be resolved",
            )
            .with_help("compile `<project>/agents/<name>/AGENT.md` or the project directory"),
        );
        return None;
    }
    let root = agents_dir.parent().unwrap_or(Path::new("")).to_path_buf();
    crate::lower::tama::lower_project(loader, &root, &name, None)
}

fn compile_tama_project(path: &Path, loader: &mut Loader<'_>) -> Option<Program> {
    let path = match path.file_name() {
        Some(name) if name == "tama.toml" => match path.parent() {
            Some(parent) if parent.as_os_str().is_empty() => Path::new("."),
            Some(parent) => parent,
            None => path,
        },
        _ => path,
    };
    let manifest = path.join("tama.toml");
    if !loader.reader.exists(&manifest) {
        loader.diags.push(
            Diagnostic::error(
                Code::MissingFile,
                format!("`{}` is a directory without a `tama.toml`", path.display()),
            )
            .with_help("pass a fuseraft config file, a tama project directory, or an `AGENT.md`"),
        );
        return None;
    }
    let file = loader.read(&manifest, None, "tama manifest")?;
    let parsed = crate::syntax::tama::read_manifest(file, loader)?;
    let Some(entry) = parsed.entrypoint else {
        loader.diags.push(
            Diagnostic::error(
                Code::MissingRequiredKey,
                "tama.toml has no `[project] entrypoint`",
            )
            .with_label(
                Span::new(file, 0, 0),
                "add `entrypoint = \"<agent>\"` under `[project]`",
            ),
        );
        return None;
    };
    let root: PathBuf = path.to_path_buf();
    crate::lower::tama::lower_project(loader, &root, &entry.value.clone(), Some(entry.span))
}

fn compile_ir(path: &Path, loader: &mut Loader<'_>) -> Option<Program> {
    let file = loader.read(path, None, "IR file")?;
    let text = &loader.sources.get(file).text;
    match crate::ir::parse(text) {
        Ok(program) => {
            crate::syntax::config_paths::check_program(&program, file, loader);
            Some(program)
        }
        Err(error) => {
            let start = error.offset.min(text.len());
            let end = text[start..]
                .chars()
                .next()
                .map_or(start, |ch| start + ch.len_utf8());
            loader.diags.push(
                Diagnostic::error(Code::SyntaxError, format!("invalid IR: {}", error.message))
                    .with_label(Span::new(file, start, end), "here"),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::MemoryFiles;

    /// A generated config as large as the FSM state cap: its own nodes are bounded by its
    /// size, not by the alias budget (which refused it near 87,000 states).
    #[test]
    fn a_generated_100000_state_machine_compiles() {
        const STATES: usize = 100_000;
        let mut text = String::with_capacity(STATES * 120);
        text.push_str(
            "Orchestration:\n  Agents:\n    - Name: A\n      Instructions: Go.\n  Selection:\n    Type: statemachine\n    StateMachine:\n      Initial: S0\n      States:\n",
        );
        for state in 0..STATES - 1 {
            text.push_str(&format!(
                "        S{state}:\n          Agent: A\n          Transitions:\n            - To: S{}\n              Signal: NEXT\n",
                state + 1
            ));
        }
        text.push_str(&format!(
            "        S{}:\n          Terminal: true\n",
            STATES - 1
        ));
        let files = MemoryFiles::new().with("big.yaml", text);
        let compiled = compile(Path::new("big.yaml"), &files);
        let errors: Vec<_> = compiled
            .diagnostics
            .iter()
            .filter(|diag| diag.is_error())
            .map(|diag| diag.message.clone())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(compiled.program.expect("a program").states.len(), STATES);
    }
}
