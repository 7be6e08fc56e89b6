//! `fuseraft eval init|run`: the clap types of eval suites (cases run against a model and
//! scored, with pass rates over repeated runs).

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};

#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub action: EvalAction,
}

#[derive(Debug, Subcommand)]
pub enum EvalAction {
    /// Write a starter suite, `.fuseraft/evals/suite.yaml`, for the workflow of DIR: cases
    /// with a task and what the run's output must (or must not) contain. Nothing is
    /// overwritten.
    #[command(after_help = INIT_EXAMPLES)]
    Init(EvalInitArgs),
    /// Run every case of a suite against a model (or a replay file), score each run and
    /// report pass rates. Exit 0 when every case reached its pass rate and none regressed,
    /// 1 when one did not, 2 for a usage error, an invalid suite or a case that cannot run.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<EvalRunArgs>),
}

#[derive(Debug, clap::Args)]
pub struct EvalInitArgs {
    /// The project to write the suite into (default: the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The workflow the cases run, relative to DIR (default: the one found in DIR:
    /// `fuseraft.yaml`, `.fuseraft/config/orchestration.yaml`, a tama project, ...).
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The suite's name (default: the directory's name).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct EvalRunArgs {
    /// The suite file, YAML or JSON (default: `.fuseraft/evals/suite.yaml`).
    #[arg(value_name = "SUITE")]
    pub suite: Option<PathBuf>,
    /// The workflow of every case that names none (beats the suite's `config`).
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run each case N times: its pass rate, with a 95% confidence interval (Wilson), is
    /// what is reported and compared.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Run up to N runs at once, each in its own copy of the project.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Only the cases with this tag; repeatable (a case with any of them runs).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only the cases whose id or a tag contains TEXT, ignoring case (upstream's `--filter`).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// The model under test, for every agent: `PROVIDER:MODEL`, as `exec --model`.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// Send the agents' model calls to this endpoint, as `exec --endpoint`.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Send the key held by this environment variable with every agent's model call, as
    /// `exec --api-key-env`.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Answer every model call (the judge's too) from this replay file: the suite runs
    /// offline. A queue named `CASE:AGENT` answers only case CASE, `CASE#N:AGENT` only its
    /// N-th run.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["model", "endpoint", "api_key_env"])]
    pub replay: Option<PathBuf>,
    /// An earlier run's JSON report (`--format json`): every case whose pass rate dropped
    /// since is named as a regression.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = EvalFormat::Human)]
    pub format: EvalFormat,
    /// Write the report to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Stop a run after this many seconds (it then fails, `timed out`).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Start the MCP servers the workflows declare (otherwise such a case cannot run).
    #[arg(long)]
    pub trust_mcp: bool,
    /// Accepted for upstream's scripts: a failed case always makes the exit code 1.
    #[arg(long)]
    pub ci: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum EvalFormat {
    Human,
    Junit,
    Json,
}

pub const MAIN_EXAMPLES: &str = "\
Examples:
  fuseraft eval init my-team
  fuseraft eval run my-team/.fuseraft/evals/suite.yaml --model openai:gpt-4o-mini --repeat 5";

const INIT_EXAMPLES: &str = "\
Examples:
  fuseraft eval init                          # .fuseraft/evals/suite.yaml for this project
  fuseraft eval init my-team --name \"Smoke tests\"
  fuseraft eval init . --config teams/review.yaml";

const RUN_EXAMPLES: &str = "\
Examples:
  fuseraft eval run --model openai:gpt-4o-mini             # .fuseraft/evals/suite.yaml
  fuseraft eval run suite.yaml --repeat 5 --jobs 4 --format json -o today.json
  fuseraft eval run suite.yaml --repeat 5 --baseline yesterday.json
  fuseraft eval run suite.yaml --model ollama:qwen2.5 --endpoint http://localhost:11434
  fuseraft eval run suite.yaml --replay recorded.yaml --format junit -o eval.xml   # offline, in CI
  fuseraft eval run suite.yaml --tag smoke";
