//! Before a case's first run: its workflow found and compiled, checked as `exec` checks it
//! (a config `fuseraft check` finds an error in does not run), its MCP servers allowed only
//! with `--trust-mcp`, and its judge's model known. What fails here is the case's error, not
//! a failed run: the case is reported as one that cannot run.

use std::path::{Path, PathBuf};

use fuseraft_compiler::diagnostic::Code;
use fuseraft_compiler::ir::Program;

use super::case::Case;
use super::judge;
use super::suite::{JudgeModel, Suite};
use crate::disk::Project;
use crate::render::{self, Style};

/// A case ready to run.
pub struct Ready<'a> {
    pub case: &'a Case,
    /// The workflow, as the report names it.
    pub config: PathBuf,
    pub program: Program,
    /// The judge's model (its case's, else the suite's).
    pub judge: Option<JudgeModel>,
}

/// Why a case cannot run: rendered for people, and in one line.
#[derive(Clone, Debug)]
pub struct CannotRun {
    pub message: String,
    pub short: String,
}

impl CannotRun {
    pub fn plain(message: String) -> CannotRun {
        CannotRun {
            short: message.clone(),
            message,
        }
    }
}

/// What the command line adds: `--config`, whether a replay answers, `--trust-mcp`.
pub struct Given<'a> {
    pub config: Option<&'a Path>,
    pub replay: bool,
    pub trust_mcp: bool,
    /// `--model` or `--endpoint` was given (a model's missing endpoint is then moot).
    pub models_given: bool,
}

/// The workflow of `case`: its own, else `--config`, the suite's, the project's.
pub fn config_of(case: &Case, suite: &Suite, given: &Given<'_>) -> PathBuf {
    let path = case
        .config
        .clone()
        .or_else(|| given.config.map(Path::to_path_buf))
        .or_else(|| suite.config.clone())
        .unwrap_or_else(|| suite.root.clone());
    crate::commands::inputs::workflow_in(&path)
}

pub fn prepare<'a>(
    case: &'a Case,
    suite: &Suite,
    given: &Given<'_>,
) -> Result<Ready<'a>, CannotRun> {
    let config = config_of(case, suite, given);
    let compiled = fuseraft_compiler::compile(&config, &Project::new());
    let mut diagnostics = if compiled.program.is_some() {
        fuseraft_compiler::check::check(&compiled).diagnostics
    } else {
        compiled.diagnostics.clone()
    };
    diagnostics.retain(|diag| {
        diag.code != Code::McpServerStarts
            && !(diag.code == Code::UnknownModelAlias && (given.replay || given.models_given))
    });
    let program = match compiled.program {
        Some(program) if !diagnostics.iter().any(|diag| diag.is_error()) => program,
        _ => {
            let first = diagnostics
                .iter()
                .find(|diag| diag.is_error())
                .map(|diag| render::short(diag, &compiled.sources))
                .unwrap_or_default();
            return Err(CannotRun {
                message: format!(
                    "case `{}`: the workflow `{}` has errors\n{}",
                    case.id,
                    config.display(),
                    render::all(&diagnostics, &compiled.sources, Style::plain())
                ),
                short: format!("the workflow `{}` has errors: {first}", config.display()),
            });
        }
    };
    mcp_allowed(&program, &config, given.trust_mcp).map_err(CannotRun::plain)?;
    let judge = case
        .judge
        .as_ref()
        .map(|judge| judge::model_of(judge, &suite.judge));
    if let Some(model) = judge.as_ref().filter(|_| !given.replay) {
        // Resolved now, so a missing key or model fails before any run is paid for.
        judge::provider(model, &program)
            .map_err(|message| CannotRun::plain(format!("case `{}`: {message}", case.id)))?;
    }
    Ok(Ready {
        case,
        config,
        program,
        judge,
    })
}

/// The MCP servers a workflow starts run only with `--trust-mcp`: a suite runs unattended.
fn mcp_allowed(program: &Program, config: &Path, trust_mcp: bool) -> Result<(), String> {
    crate::mcp_trust::unattended(program, trust_mcp, "fuseraft eval run").map_err(|why| {
        match why.starts_with("starts MCP server") {
            true => format!("the workflow `{}` {why}", config.display()),
            false => why,
        }
    })
}
