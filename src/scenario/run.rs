//! Running one scenario: compile its config, seed a fresh temporary work dir, drive the VM
//! with the replay provider, and record every event (with the exit each route took).

use std::path::Path;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::driver::{self, Approvals, Env, Summary};
use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::machine::{Options, Run};
use fuseraft_vm::replay::Replay;

use super::route::{self, Route};
use super::spec::Scenario;
use crate::disk::Project;
use crate::render::{self, Style};

/// The session id every scenario runs with, so nothing in a trace depends on the clock.
pub const SESSION_ID: &str = "5ce4a210";

/// One event of a run, and for `agent_routed` the exit it took.
#[derive(Clone, Debug)]
pub struct Record {
    pub event: Event,
    pub route: Option<Route>,
}

/// A finished run.
pub struct Ran {
    pub program: Program,
    pub records: Vec<Record>,
    pub summary: Summary,
    /// Absolute paths that appear in event text and must not reach a snapshot, with what
    /// to print instead (longest first).
    pub scrub: Vec<(String, &'static str)>,
}

/// Why a scenario could not run.
#[derive(Debug)]
pub struct RunError {
    /// Rendered for people (with source snippets).
    pub message: String,
    /// One line (`file:line:col: error[CODE]: message`).
    pub short: String,
}

impl RunError {
    fn plain(message: String) -> RunError {
        RunError {
            short: message.clone(),
            message,
        }
    }
}

fn seed(work_dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    for (relative, content) in files {
        let path = work_dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, content)?;
    }
    Ok(())
}

/// `program` with the network blocked, whatever its config says: a scenario tests routing
/// on a repository's word, so nothing it runs (a command, a git push, an Http tool, a stdio
/// MCP server) reaches the network, nor asks for it; an MCP server reached over HTTP cannot
/// run at all.
fn offline(
    mut program: fuseraft_compiler::ir::Program,
) -> Result<fuseraft_compiler::ir::Program, String> {
    use fuseraft_compiler::ir::{Action, Category, McpTransport};
    if let Some(server) = program
        .mcp_servers
        .iter()
        .find(|server| matches!(server.transport, McpTransport::Http { .. }))
    {
        return Err(format!(
            "the MCP server `{}` is reached over HTTP, and a scenario never reaches the network (`fuseraft test` blocks `network_api`)",
            server.name
        ));
    }
    let permissions = &mut program.permissions;
    permissions
        .overrides
        .retain(|(category, _)| *category != Category::NetworkApi);
    permissions
        .overrides
        .push((Category::NetworkApi, Action::Block));
    Ok(program)
}

/// Runs a loaded scenario to its end; its config's MCP servers start only when `trust_mcp`
/// (`--trust-mcp`) says so.
pub fn run(scenario: &Scenario, trust_mcp: bool) -> Result<Ran, RunError> {
    let compiled = fuseraft_compiler::compile(&scenario.config, &Project::new());
    let Some(program) = compiled.program else {
        let rendered = render::all(&compiled.diagnostics, &compiled.sources, Style::plain());
        let first = compiled
            .diagnostics
            .iter()
            .find(|diag| diag.is_error())
            .map(|diag| render::short(diag, &compiled.sources))
            .unwrap_or_default();
        return Err(RunError {
            message: format!(
                "{}: the config `{}` does not compile\n{rendered}",
                scenario.path.display(),
                scenario.config.display()
            ),
            short: format!(
                "{}: the config `{}` does not compile: {first}",
                scenario.path.display(),
                scenario.config.display()
            ),
        });
    };
    mcp_allowed(scenario, &program, trust_mcp).map_err(RunError::plain)?;
    let program = offline(program)
        .map_err(|why| RunError::plain(format!("{}: {why}", scenario.path.display())))?;
    // Removed when dropped; canonical, so the `<sandbox>` replacement below matches the paths
    // the run reports.
    let temp = tempfile::Builder::new()
        .prefix("fuseraft-scenario-")
        .tempdir()
        .and_then(|temp| std::fs::canonicalize(temp.path()).map(|root| (temp, root)))
        .map_err(|error| RunError::plain(format!("cannot create a temporary work dir: {error}")))?;
    let (_temp, temp_root) = temp;
    let work_dir = temp_root.join("work");
    std::fs::create_dir_all(&work_dir)
        .and_then(|()| seed(&work_dir, &scenario.work_dir))
        .map_err(|error| {
            RunError::plain(format!(
                "{}: cannot seed the work dir: {error}",
                scenario.path.display()
            ))
        })?;
    let options = Options {
        session_id: SESSION_ID.to_string(),
        task: scenario.task.clone(),
        max_turns: scenario.max_turns,
        skip_prompts: true,
    };
    let env = Env {
        pause: None,
        work_dir: work_dir.clone(),
        deny_read: crate::session::key::deny_read(&[]),
        approvals: if scenario.approve {
            Approvals::All
        } else {
            Approvals::None
        },
    };
    let replay = Replay::new(scenario.script.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| RunError::plain(format!("cannot start the runtime: {error}")))?;
    let mut records: Vec<Record> = Vec::new();
    let mut after_not_found = false;
    let mut on_event = |event: &Event, run: &Run| {
        let route = route::infer(&program, event, after_not_found, run);
        after_not_found = matches!(event.kind, EventKind::KeywordNotFound { .. });
        records.push(Record {
            event: event.clone(),
            route,
        });
    };
    let summary = runtime.block_on(driver::run(&program, options, &replay, &env, &mut on_event));
    let scrub = vec![
        (work_dir.display().to_string(), "<work>"),
        (temp_root.display().to_string(), "<sandbox>"),
    ];
    Ok(Ran {
        program,
        records,
        summary,
        scrub,
    })
}

/// Whether the MCP servers `program` starts may start: only with `--trust-mcp` (a scenario
/// is someone's config, run unattended), and only with the variables the user allowed.
fn mcp_allowed(scenario: &Scenario, program: &Program, trust_mcp: bool) -> Result<(), String> {
    crate::mcp_trust::unattended(program, trust_mcp, "fuseraft test").map_err(|why| {
        let why = match why.starts_with("starts MCP server") {
            true => format!("the config `{}` {why}", scenario.config.display()),
            false => why,
        };
        format!("{}: {why}", scenario.path.display())
    })
}
