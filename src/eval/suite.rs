//! The suite file (upstream's format, YAML or JSON): a name, a default workflow and cases.
//!
//! ```yaml
//! name: Smoke tests
//! config: fuseraft.yaml            # relative to the project (below); optional
//! judge: { model: openai:gpt-4o-mini }   # defaults for the cases' judges; optional
//! cases:
//!   - id: says-hello
//!     task: Say hello.
//!     expect_keywords: [hello]
//! ```
//!
//! The project is the directory above the suite's `.fuseraft` folder (upstream keeps suites
//! in `.fuseraft/evals/`), else the suite's own directory: relative paths start there, and
//! each run works in a copy of it. Paths a suite names stay in the repository that holds it
//! (a suite may come from anyone, and a task file is sent to a model). Keys are exact; every
//! problem is a diagnostic with the file, line and column (`case.rs` reads the cases).

use std::path::{Path, PathBuf};

use fuseraft_compiler::syntax::{parse_json, parse_yaml, Budget, Node, NodeKind};
use fuseraft_compiler::{Code, Diagnostic, SourceFile, SourceMap, Span};

use super::case::{self, Case};
use super::values::{self, invalid};
use crate::scenario::within;

/// The keys of a suite.
pub const KEYS: &[&str] = &["name", "config", "judge", "cases"];

/// A loaded suite, its paths resolved.
#[derive(Clone, Debug)]
pub struct Suite {
    pub path: PathBuf,
    pub name: String,
    /// The project: relative paths start here, and runs copy it.
    pub root: PathBuf,
    /// The suite's default workflow.
    pub config: Option<PathBuf>,
    /// Defaults for the cases' judges.
    pub judge: JudgeModel,
    pub cases: Vec<Case>,
}

/// The model a judge asks: `PROVIDER:MODEL`, and optionally its endpoint and key variable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JudgeModel {
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub api_key_env: Option<String>,
}

/// Why a suite could not be loaded: its diagnostics and the sources they point into.
#[derive(Debug)]
pub struct LoadError {
    pub sources: SourceMap,
    pub diagnostics: Vec<Diagnostic>,
}

/// Where a suite's relative paths start and may lead.
pub struct Place {
    /// The bounds (`within::Project`): the repository, else the project.
    pub bounds: within::Project,
}

impl Place {
    fn of(suite: &Path) -> Option<Place> {
        let parent = suite.parent().filter(|dir| !dir.as_os_str().is_empty());
        let dir = std::fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()?;
        let root = dir
            .ancestors()
            .find(|dir| dir.file_name().is_some_and(|name| name == ".fuseraft"))
            .and_then(Path::parent)
            .unwrap_or(&dir)
            .to_path_buf();
        let repository = root
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(&root)
            .to_path_buf();
        Some(Place {
            bounds: within::Project {
                root: repository,
                dir: root,
            },
        })
    }

    /// The project.
    pub fn project(&self) -> &Path {
        &self.bounds.dir
    }

    /// `written` resolved against the project, or an error at `span` when it leaves the
    /// repository (its file is then never read) or does not exist.
    pub fn file(&self, what: &str, written: &str, span: Span) -> Result<PathBuf, Diagnostic> {
        if let Some(place) = self.bounds.leaves(Path::new(written)) {
            return Err(invalid(
                span,
                format!(
                    "the {what} `{written}` leaves the suite's project: it resolves to `{}`",
                    place.display()
                ),
                "this path leaves the project",
            )
            .with_help(format!(
                "a suite may only name files inside `{}` (the repository holding it, else its project), after `..` and symlinks are resolved",
                self.bounds.root.display()
            )));
        }
        let path = crate::scenario::discover::normalize(&self.project().join(written));
        if !path.exists() {
            return Err(Diagnostic::error(
                Code::MissingFile,
                format!("the {what} `{}` does not exist", path.display()),
            )
            .with_label(span, format!("relative to `{}`", self.project().display())));
        }
        Ok(path)
    }
}

/// Reads and checks the suite at `path`.
pub fn load(path: &Path) -> Result<Suite, Box<LoadError>> {
    let mut sources = SourceMap::new();
    let fail = |sources, diag| {
        Box::new(LoadError {
            sources,
            diagnostics: vec![diag],
        })
    };
    let text = match crate::disk::read(path) {
        Ok(text) => text,
        Err(error) => {
            let message = format!("cannot read the suite `{}`: {error}", path.display());
            let diag = Diagnostic::error(Code::MissingFile, message).with_help(
                "`fuseraft eval init` writes a starter suite to `.fuseraft/evals/suite.yaml`",
            );
            return Err(fail(sources, diag));
        }
    };
    let file = sources.add(SourceFile::new(path.display().to_string(), path, text));
    let source = &sources.get(file).text;
    let is_json = path.extension().is_some_and(|ext| ext == "json");
    let parsed = if is_json {
        parse_json(file, source, &Budget::default())
    } else {
        parse_yaml(file, source, &Budget::default())
    };
    let root = match parsed {
        Ok(root) => root,
        Err(diag) => return Err(fail(sources, diag)),
    };
    let Some(place) = Place::of(path) else {
        let message = format!("cannot resolve the directory of `{}`", path.display());
        return Err(fail(sources, Diagnostic::error(Code::MissingFile, message)));
    };
    read(path, &root, &place).map_err(|diagnostics| {
        Box::new(LoadError {
            sources,
            diagnostics,
        })
    })
}

fn read(path: &Path, root: &Node, place: &Place) -> Result<Suite, Vec<Diagnostic>> {
    let entries = values::entries(root, KEYS, "a suite").map_err(|diag| vec![diag])?;
    let name = match values::get(&entries, "name") {
        Some(value) => one(values::text("name", value))?,
        None => path
            .file_stem()
            .map(|stem| stem.to_string_lossy().to_string())
            .unwrap_or_default(),
    };
    let config = match values::get(&entries, "config") {
        Some(value) => {
            let written = one(values::words("config", value))?;
            Some(one(place.file("config", &written, value.span))?)
        }
        None => None,
    };
    let judge = match values::get(&entries, "judge") {
        Some(value) => one(judge_model(value))?,
        None => JudgeModel::default(),
    };
    let Some(listed) = values::get(&entries, "cases") else {
        return Err(vec![Diagnostic::error(
            Code::MissingRequiredKey,
            "the suite has no `cases`",
        )
        .with_label(root.span, "`cases` is required: a list of cases")]);
    };
    let NodeKind::Seq(items) = &listed.kind else {
        return Err(vec![invalid(
            listed.span,
            format!("`cases` is a list of cases; found {}", listed.kind_name()),
            "expected a list",
        )]);
    };
    let cases = case::read_all(items, place)?;
    Ok(Suite {
        path: path.to_path_buf(),
        name,
        root: place.project().to_path_buf(),
        config,
        judge,
        cases,
    })
}

/// One diagnostic as the list `read` returns.
fn one<T>(result: Result<T, Diagnostic>) -> Result<T, Vec<Diagnostic>> {
    result.map_err(|diag| vec![diag])
}

/// A suite's `judge:` mapping: `model`, `endpoint`, `api_key_env`.
fn judge_model(value: &Node) -> Result<JudgeModel, Diagnostic> {
    let entries = values::entries(value, &["model", "endpoint", "api_key_env"], "`judge`")?;
    model_fields(&entries)
}

/// The `model`, `endpoint` and `api_key_env` of a judge's entries.
pub fn model_fields(entries: &[(&str, &Node, &Node)]) -> Result<JudgeModel, Diagnostic> {
    let field = |name: &str| {
        values::get(entries, name)
            .map(|value| values::words(name, value))
            .transpose()
    };
    Ok(JudgeModel {
        model: field("model")?,
        endpoint: field("endpoint")?,
        api_key_env: field("api_key_env")?,
    })
}
