//! `fuseraft eval init [DIR]` writes a starter suite; `fuseraft eval run [SUITE]` runs one
//! (`crate::eval`) and reports pass rates as text, JUnit or JSON.
//!
//! Exit codes of `run`: 0 every case reached its pass rate and none regressed against the
//! baseline; 1 a case did not, or regressed; 2 a usage error, an invalid suite, replay or
//! baseline file, or a case that cannot run (its workflow has errors, a key is missing).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fuseraft_vm::providers::Overrides;

use super::exit;
use crate::cli::{EvalAction, EvalArgs, EvalFormat, EvalInitArgs, EvalRunArgs};
use crate::eval::prepare::Given;
use crate::eval::report::Report;
use crate::eval::run::{Shared, Source};
use crate::eval::{self, baseline, human, junit, Status};
use crate::render::{self, Style};

/// Where upstream keeps a project's suite.
pub const DEFAULT_SUITE: &str = ".fuseraft/evals/suite.yaml";

const TEMPLATE: &str = include_str!("../eval/starter-suite.yaml");

pub fn run(args: &EvalArgs, style: Style) -> u8 {
    match &args.action {
        EvalAction::Init(init) => run_init(init),
        EvalAction::Run(run) => run_suite(run, style),
    }
}

fn usage(message: &str) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}

fn run_init(args: &EvalInitArgs) -> u8 {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let suite = dir.join(DEFAULT_SUITE);
    if suite.symlink_metadata().is_ok() {
        return usage(&format!(
            "`{}` already exists; `fuseraft eval init` overwrites nothing",
            suite.display()
        ));
    }
    let config = match &args.config {
        Some(config) => config.display().to_string(),
        None => found_workflow(&dir).unwrap_or_else(|| {
            eprintln!(
                "warning: no workflow found in `{}`; the suite names `fuseraft.yaml` (edit its `config:`)",
                dir.display()
            );
            "fuseraft.yaml".to_string()
        }),
    };
    let name = args.name.clone().unwrap_or_else(|| {
        std::fs::canonicalize(&dir)
            .ok()
            .and_then(|dir| {
                dir.file_name()
                    .map(|name| name.to_string_lossy().to_string())
            })
            .unwrap_or_else(|| "Eval suite".to_string())
    });
    // JSON strings are YAML scalars: any name or path reads back as written.
    let quoted = |text: &str| serde_json::to_string(text).unwrap_or_default();
    let text = TEMPLATE
        .replace("{{suite}}", &suite.display().to_string())
        .replace("{{name}}", &quoted(&name))
        .replace("{{config}}", &quoted(&config));
    if let Err(error) = super::init::write_new(&suite, &text) {
        return usage(&format!("cannot write `{}`: {error}", suite.display()));
    }
    eprintln!(
        "wrote {} (3 cases for `{config}`)\nnext: make each case's task and checks your own, then\n  fuseraft eval run {} --model openai:gpt-4o-mini --repeat 3",
        suite.display(),
        suite.display()
    );
    exit::OK
}

/// The workflow `exec DIR` would run, relative to DIR (`.` for a tama project).
fn found_workflow(dir: &Path) -> Option<String> {
    if dir.join("tama.toml").is_file() {
        return Some(".".to_string());
    }
    let found = super::inputs::workflow_in(dir);
    let relative = found.strip_prefix(dir).ok()?;
    (found.is_file() && !relative.as_os_str().is_empty()).then(|| relative.display().to_string())
}

/// `--timeout`: a positive number of seconds.
fn timeout(args: &EvalRunArgs) -> Result<Option<Duration>, String> {
    args.timeout
        .map(|seconds| {
            Duration::try_from_secs_f64(seconds)
                .ok()
                .filter(|limit| !limit.is_zero())
                .ok_or_else(|| {
                    format!("--timeout {seconds}: expected a positive number of seconds")
                })
        })
        .transpose()
}

/// What answers the model calls, and its words for the report.
fn source(args: &EvalRunArgs, ids: Vec<String>, style: Style) -> Result<(Source, String), u8> {
    if let Some(path) = &args.replay {
        let script = crate::replay_file::load(path).map_err(|error| {
            let (sources, diag) = *error;
            eprint!("{}", render::human(&diag, &sources, style));
            exit::USAGE
        })?;
        let names: Vec<&str> = ids.iter().map(String::as_str).collect();
        let unknown = eval::scoped::unknown_scopes(&script, &names);
        if !unknown.is_empty() {
            return Err(usage(&format!(
                "the replay file `{}` has queues for no case of the suite: {} (a queue `CASE:AGENT` names a case id; the cases are {})",
                path.display(),
                unknown.join(", "),
                names.join(", ")
            )));
        }
        return Ok((
            Source::Replay { script, ids },
            format!("replay {}", path.display()),
        ));
    }
    let mut words = args
        .model
        .clone()
        .unwrap_or_else(|| "the workflows' models".to_string());
    if let Some(endpoint) = &args.endpoint {
        words.push_str(&format!(" at {endpoint}"));
    }
    let overrides = Overrides {
        model: args.model.clone(),
        endpoint: args.endpoint.clone(),
        api_key_env: args.api_key_env.clone(),
        ..Overrides::default()
    };
    Ok((Source::Live { overrides }, words))
}

fn run_suite(args: &EvalRunArgs, style: Style) -> u8 {
    let started = Instant::now();
    let path = args
        .suite
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SUITE));
    let suite = match eval::suite::load(&path) {
        Ok(suite) => suite,
        Err(error) => {
            eprint!("{}", render::all(&error.diagnostics, &error.sources, style));
            return exit::USAGE;
        }
    };
    let cases = eval::selected(&suite, &args.tags, args.filter.as_deref());
    if cases.is_empty() {
        return usage(&format!(
            "no case of `{}` is selected (by `--tag` or `--filter`)",
            path.display()
        ));
    }
    let limit = match timeout(args) {
        Ok(limit) => limit,
        Err(message) => return usage(&message),
    };
    let before = match &args.baseline {
        Some(file) => match baseline::read(file) {
            Ok(rates) => Some((file.display().to_string(), rates)),
            Err(message) => return usage(&message),
        },
        None => None,
    };
    let ids = suite.cases.iter().map(|case| case.id.clone()).collect();
    let (source, models) = match source(args, ids, style) {
        Ok(source) => source,
        Err(code) => return code,
    };
    let given = Given {
        config: args.config.as_deref(),
        replay: args.replay.is_some(),
        trust_mcp: args.trust_mcp,
        models_given: args.model.is_some() || args.endpoint.is_some(),
    };
    let shared = Shared {
        source: &source,
        root: &suite.root,
        timeout: limit,
    };
    let reports = eval::run_all(
        &suite,
        &cases,
        &given,
        &shared,
        args.repeat,
        args.jobs as usize,
    );
    let baseline = before.map(|(file, rates)| {
        let regressions = baseline::compare(&rates, &reports);
        (file, regressions)
    });
    let report = Report {
        suite: suite.name.clone(),
        file: path.display().to_string(),
        models,
        repeat: args.repeat,
        cases: reports,
        seconds: started.elapsed().as_secs_f64(),
        baseline,
    };
    finish(args, &report)
}

/// Prints why cases could not run, writes the report, and gives the exit code.
fn finish(args: &EvalRunArgs, report: &Report) -> u8 {
    // The human report on standard output shows them itself.
    if args.format != EvalFormat::Human || args.output.is_some() {
        for case in &report.cases {
            if let Status::Error(cannot) = &case.status {
                eprintln!("{}", cannot.message.trim_end());
            }
        }
    }
    let text = match args.format {
        EvalFormat::Human => human::render(report),
        EvalFormat::Junit => junit::render(report),
        EvalFormat::Json => format!("{:#}\n", report.json()),
    };
    match &args.output {
        Some(file) => {
            if let Err(error) = std::fs::write(file, &text) {
                return usage(&format!("cannot write `{}`: {error}", file.display()));
            }
            // The verdict stays on the terminal when the report goes to a file.
            if args.format != EvalFormat::Human {
                eprint!("{}", human::render(report));
            }
            eprintln!("report written to {}", file.display());
        }
        None => {
            if let Some(code) = super::print_or_fail(&text) {
                return code;
            }
        }
    }
    if report
        .cases
        .iter()
        .any(|case| matches!(case.status, Status::Error(_)))
    {
        exit::USAGE
    } else if report.passed() {
        exit::OK
    } else {
        exit::FINDINGS
    }
}
