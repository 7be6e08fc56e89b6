//! The command line, as clap types only.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

pub mod eval;
pub use eval::{EvalAction, EvalArgs, EvalFormat, EvalInitArgs, EvalRunArgs};
pub mod remote;
pub use remote::{ApproveArgs, ScheduleAction, ScheduleAddArgs, ScheduleArgs, ServeArgs};

/// fuseraft: compile, check and run workflows of LLM agents.
#[derive(Debug, Parser)]
#[command(
    name = "fuseraft",
    version,
    about,
    long_about = None,
    disable_version_flag = true,
    propagate_version = true,
    after_help = examples::MAIN
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Print the version (`-v` as the VS Code extension spells it, `-V` as clap does).
    #[arg(short = 'v', long, short_alias = 'V', action = clap::ArgAction::Version, global = true)]
    pub version: Option<bool>,
    /// Colour in diagnostics: auto (when stderr is a terminal), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compile a workflow into the fuseraft IR.
    ///
    /// INPUT is a fuseraft config (YAML or JSON, `Orchestration:` root), a tama `AGENT.md`
    /// of an fsm agent, a tama project directory (its `entrypoint`), or a `.fir` IR file.
    #[command(after_help = examples::COMPILE)]
    Compile(CompileArgs),
    /// Lint workflows: find broken routing before paying for a model call.
    ///
    /// INPUT is a workflow file, a directory (searched for fuseraft configs and tama
    /// projects, honouring .gitignore), a glob, or `-` for standard input. Without INPUT,
    /// the current directory is checked.
    #[command(visible_alias = "validate", after_help = examples::CHECK)]
    Check(CheckArgs),
    /// Run a workflow.
    #[command(visible_alias = "run", after_help = examples::EXEC)]
    Exec(Box<ExecArgs>),
    /// Snapshot-test routing: run scenarios with scripted replies and compare their traces.
    #[command(after_help = examples::TEST)]
    Test(TestArgs),
    /// Measure a workflow against a model: run a suite of cases, score every run, report
    /// pass rates (`eval init` writes a starter suite, `eval run` runs one).
    #[command(after_help = eval::MAIN_EXAMPLES)]
    Eval(EvalArgs),
    /// List, show or remove saved sessions.
    #[command(after_help = examples::SESSIONS)]
    Sessions(SessionsArgs),
    /// Write a ready-to-run workflow (a config and a replay file) from a template.
    #[command(after_help = examples::INIT)]
    Init(InitArgs),
    /// Print a shell completion script.
    #[command(after_help = examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Write the manual pages: `fuseraft.1` and one page per subcommand.
    #[command(after_help = examples::MAN)]
    Man(ManArgs),
    /// Browse the sessions of a work dir in a web page (loopback, a token in the URL).
    #[command(after_help = examples::UI)]
    Ui(UiArgs),
    /// Print the JSON Schema of the config format, for editors and CI validators.
    #[command(after_help = examples::SCHEMA)]
    Schema,
    /// List the built-in plugins and their tools, with the capability that offers each tool
    /// and the permission category its calls fall in.
    #[command(after_help = examples::PLUGINS)]
    Plugins(PluginsArgs),
    /// List the models fuseraft knows without being told: context window and list price.
    #[command(after_help = examples::MODELS)]
    Models(ModelsArgs),
    /// Show a config as fuseraft reads it: `config show [CONFIG]`.
    #[command(after_help = examples::CONFIG)]
    Config(ConfigArgs),
    /// Read what runs recorded: `log events FILE` prints an events file in words.
    #[command(after_help = examples::LOG)]
    Log(LogArgs),
    /// Check or read a session's audit chain: every decision about what the run may do.
    #[command(after_help = examples::AUDIT)]
    Audit(AuditArgs),
    /// Serve sessions for a Restate server: a worker that runs each submitted session one
    /// turn at a time, its questions waiting durably for `fuseraft approve`.
    #[command(after_help = remote::SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Answer a question a session run by a Restate server waits on (`exec --on`).
    #[command(after_help = remote::APPROVE_EXAMPLES)]
    Approve(ApproveArgs),
    /// Runs a Restate server starts on a cron schedule: `schedule add|list|remove|run`.
    #[command(after_help = remote::SCHEDULE_EXAMPLES)]
    Schedule(ScheduleArgs),
}

#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: ConfigAction,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print a config as YAML, as fuseraft reads it: YAML anchors and aliases expanded, JSON
    /// turned to YAML, every key in its canonical spelling (`agents:` is `Agents:`). A config
    /// with errors gets `check`'s diagnostics instead (exit 1).
    #[command(after_help = examples::CONFIG)]
    Show {
        /// The config, or a directory holding one (default:
        /// `.fuseraft/config/orchestration.yaml`, upstream's place).
        #[arg(value_name = "CONFIG")]
        config: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub struct LogArgs {
    #[command(subcommand)]
    pub action: LogAction,
}

#[derive(Debug, Subcommand)]
pub enum LogAction {
    /// Print an events file (`exec --events FILE`) one event a line, in words: time, turn,
    /// agent and what happened. A line that is not an event is reported with its number and
    /// skipped (the exit code is then 1).
    #[command(after_help = examples::LOG)]
    Events(LogEventsArgs),
}

#[derive(Debug, clap::Args)]
pub struct LogEventsArgs {
    /// The events file, or `-` for standard input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only the events of this session (eight hex digits, as `sessions list` shows).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only events of this type (`agent_routed`, `session_end`, ...); repeatable.
    #[arg(long = "event", value_name = "TYPE")]
    pub events: Vec<String>,
    /// Only the last N events (after the other filters).
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
}

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub action: AuditAction,
    /// The work dir the session ran in (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub work_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum AuditAction {
    /// Check session ID's audit chain: every record's MAC, its link to the record before it
    /// and its place. Exit 0 when the whole chain holds, 1 naming the first record that
    /// breaks it.
    Verify { id: String },
    /// Print session ID's audit records one a line (sequence, time, turn, agent, decision,
    /// detail), checked as `verify` checks them: a broken chain is named and exits 1.
    Show { id: String },
}

#[derive(Debug, clap::Args)]
pub struct PluginsArgs {
    /// Only this plugin, each tool with the first sentence of its description.
    #[arg(long, value_name = "NAME")]
    pub plugin: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ModelsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The kind of workflow to start from.
    #[arg(long, value_enum, default_value_t = Template::DevTeam)]
    pub template: Template,
    /// The directory to write into (created when missing; default: the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Template {
    /// A planner, a developer and a reviewer routed by keywords.
    DevTeam,
    /// One agent that does the task.
    Minimal,
    /// A directed graph: draft, critique, edit.
    Graph,
    /// A state machine with signals and a contract.
    Statemachine,
    /// A generator and a critic in adversarial rounds.
    Adversarial,
    /// A tama project whose entry agent is an fsm.
    TamaFsm,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The directory to write the pages into (created when missing), or `-` to print the
    /// main page on standard output.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct UiArgs {
    /// The work dir the sessions ran in (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "on")]
    pub work_dir: Option<PathBuf>,
    /// Show the sessions a Restate server runs instead, and answer their questions: its
    /// ingress URL, or a worker's front (with `FUSERAFT_SERVE_TOKEN` set).
    #[arg(long, value_name = "URL")]
    pub on: Option<String>,
    /// Listen on this address: `PORT` or `HOST:PORT` (default: a random port on 127.0.0.1).
    #[arg(long, value_name = "ADDR")]
    pub addr: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub action: SessionsAction,
    /// The work dir the sessions ran in (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub work_dir: Option<PathBuf>,
    /// A Restate server's ingress: `sessions list --on URL` lists the sessions it runs (not
    /// ended yet), each with its turn and the question it waits on; `sessions show ID --on
    /// URL` prints one with the server's status; `sessions export ID --on URL` writes one
    /// as a local session.
    #[arg(long, value_name = "URL", global = true)]
    pub on: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// One line per session that can still be resumed (or was altered): id, last update,
    /// status, turns, task. `--all` lists the completed ones too.
    List {
        /// Every session, completed ones included.
        #[arg(short = 'a', long)]
        all: bool,
    },
    /// Print a session's checkpoint (JSON).
    Show {
        id: String,
        /// Show a session saved without authentication (by an older fuseraft or without a
        /// session key).
        #[arg(long)]
        allow_unverified: bool,
    },
    /// Delete a session's checkpoint.
    Rm { id: String },
    /// Write a session a Restate server runs (`--on URL`) as a local session of the work dir,
    /// for `sessions show`, `ui`, `test` and a local `exec --resume`.
    Export { id: String },
    /// Remove the sessions that ended completed, which nothing can resume (an altered or
    /// running session is kept).
    Prune {
        /// Print what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Remove the sessions no run has written to for longer than DURATION, whatever their
    /// status (a running session is kept).
    Cleanup {
        /// How long a session must have been idle: `30m`, `12h`, `7d`, `2w`.
        #[arg(long, value_name = "DURATION", value_parser = parse_age)]
        older_than: std::time::Duration,
        /// Print what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// A `--older-than` duration: a number and a unit (`7d`, `12h`), as humantime reads it.
fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text).map_err(|error| {
        format!("{error}; write a number and a unit, e.g. `30m`, `12h`, `7d` or `2w`")
    })
}

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Scenario files (`*.scenario.yaml`) or directories to search recursively
    /// (default: the current directory).
    pub paths: Vec<PathBuf>,
    /// Accept pending snapshots (`NAME.scenario.snap.new`) and write missing ones.
    #[arg(long)]
    pub accept: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TestFormat::Human)]
    pub format: TestFormat,
    /// Report, per config, the exits of its IR that no scenario took.
    #[arg(long)]
    pub coverage: bool,
    /// Start the MCP servers the scenarios' configs declare (otherwise such a scenario
    /// cannot run), e.g. `--trust-mcp`.
    #[arg(long)]
    pub trust_mcp: bool,
    /// Let `${VAR}` expand in the configs' MCP `Url`, `Headers`, `Env` and `Args`;
    /// repeatable, e.g. `--mcp-env MCP_REGION`.
    #[arg(long, value_name = "VAR")]
    pub mcp_env: Vec<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum TestFormat {
    Human,
    Junit,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Workflows to check: configs, tama AGENT.md files or projects, .fir files,
    /// directories to search, globs, or `-` for standard input (default: `.`).
    pub inputs: Vec<PathBuf>,
    /// The file name standard input (`-`) stands for, in diagnostics; its extension
    /// decides how it is read, and includes resolve beside it.
    #[arg(long, value_name = "NAME")]
    pub stdin_filename: Option<PathBuf>,
    /// Output format (default: `github` when GITHUB_ACTIONS=true, `human` otherwise).
    #[arg(long, value_enum)]
    pub format: Option<CheckFormat>,
    /// Exit 1 when there are warnings, not only errors (`--strict`, as upstream's
    /// `validate` spells it).
    #[arg(long, visible_alias = "strict")]
    pub deny_warnings: bool,
    /// Print the documentation of a diagnostic code (e.g. FR201) and exit.
    #[arg(long, value_name = "CODE")]
    pub explain: Option<String>,
    /// List the routing paths from the entry to each terminal, one per line.
    #[arg(long, conflicts_with = "diagram")]
    pub paths: bool,
    /// Print the Mermaid flowchart of each input that compiles (findings go to stderr).
    #[arg(long)]
    pub diagram: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Human,
    Json,
    Sarif,
    Github,
}

#[derive(Clone, Debug, clap::Args)]
pub struct ExecArgs {
    /// The workflow to run: a config, a directory holding one (`fuseraft.yaml`, `.yml`,
    /// `.json`, or `.fuseraft/config/orchestration.yaml`), a tama fsm AGENT.md or project
    /// directory, or a .fir file. Upstream's form: with `-c FILE`, or when no such path
    /// exists and no task is given, the argument is the task (and the config defaults to
    /// `.fuseraft/config/orchestration.yaml`).
    #[arg(
        value_name = "INPUT|TASK",
        default_value = "",
        hide_default_value = true,
        value_parser = clap::builder::TypedValueParser::map(clap::builder::OsStringValueParser::new(), PathBuf::from)
    )]
    pub input: PathBuf,
    /// The workflow to run (upstream's `-c`); the positional argument is then the task.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The task given to the first agent.
    #[arg(long)]
    pub task: Option<String>,
    /// Read the task from this file (upstream's `-f`).
    #[arg(
        short = 'f',
        long = "task-file",
        value_name = "FILE",
        conflicts_with = "task"
    )]
    pub task_file: Option<PathBuf>,
    /// A specification file appended to the task under `## Specification` (the task is
    /// "Implement the specification." when none is given).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// A text file appended to the task under `## Attached files`; repeatable.
    #[arg(long = "context-file", value_name = "FILE")]
    pub context_files: Vec<PathBuf>,
    /// After a run that ended well, read the test report the agents wrote
    /// (`Validation.TestReportPath`, default `.fuseraft/artifacts/test-report.json`): a `FAIL`
    /// row makes the exit code 2 (upstream's `--ci`). No report passes.
    #[arg(long)]
    pub ci: bool,
    /// Write the run's turns (`turns.jsonl`, one message a line) and its summary
    /// (`manifest.json`, the `--json` object) to `~/.fuseraft/snapshots/<project>/<session>/`
    /// (`$FUSERAFT_SNAPSHOT_DIR` instead of `~/.fuseraft/snapshots`), as upstream's
    /// `--snapshot` does.
    #[arg(long)]
    pub snapshot: bool,
    /// Accepted for upstream's scripts: fuseraft always shows each turn's tool calls.
    #[arg(long)]
    pub tools: bool,
    /// Drop every state-machine transition whose signal contains `REPLAN`, so the run cannot
    /// route back to its planning phase (upstream's `--no-replan`); the dropped transitions
    /// are listed before the first turn.
    #[arg(long)]
    pub no_replan: bool,
    /// Print corrections, failed validators, refused tools and other notices in full instead
    /// of cut at 200 characters.
    #[arg(long)]
    pub verbose: bool,
    /// Accepted for upstream's scripts: fuseraft prints no startup banner.
    #[arg(long)]
    pub no_banner: bool,
    /// Upstream's VS Code extension's mode: the key in `FUSERAFT_API_KEY` stands in for the
    /// provider's own key variable (`OPENAI_API_KEY`, ...) when that is not set, and goes
    /// only where that variable may go.
    #[arg(long)]
    pub vscode: bool,
    /// Also write the run's Markdown transcript to this file (upstream's `-o`), even for an
    /// `--ephemeral` run.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Answer every model call from this replay file instead of a model (YAML or JSON).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Append every event to this JSON Lines file.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Also write the text models stream to the events file as it comes (`model_text`
    /// lines, gathered for 50 ms at most).
    #[arg(long, requires = "events")]
    pub events_text: bool,
    /// Send the run's trace to this OpenTelemetry collector (OTLP over HTTP): a base URL,
    /// spans go to URL/v1/traces and metrics to URL/v1/metrics. Beats the config's
    /// `Telemetry.OtlpEndpoint` and the `OTEL_EXPORTER_OTLP_*` variables.
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// The sandbox root for tools and artifacts (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// A file or directory no command, git call or MCP server of the run may read, besides
    /// the credentials every run masks (`~/.ssh`, `~/.aws`, `~/.netrc`, ..., fuseraft's
    /// session key). Repeatable; a config can add to the list, never remove from it.
    #[arg(long, value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// Stop after this many turns (outcome `max_turns`); at least 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Answer human approvals without asking: `all` approves, `none` refuses.
    #[arg(long, value_enum)]
    pub approve: Option<Approve>,
    /// Print one machine-readable summary object on standard output.
    #[arg(long)]
    pub json: bool,
    /// Pause after every turn: Enter goes on, a line of text is sent to the team as your
    /// message, `q` stops (the session stays resumable). With `--ui` the page answers too,
    /// and without a terminal the run waits for it. Without either, the first pause stops
    /// the run resumable, unless `--approve` is given (then nothing pauses).
    #[arg(long)]
    pub hitl: bool,
    /// Use this model for every agent instead of the config's: `PROVIDER:MODEL`
    /// (`openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`, `ollama:qwen2.5`).
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// Send model calls to this endpoint (an OpenAI-compatible, Anthropic or Ollama base URL).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Send the key held by this environment variable with every model call, to whatever
    /// endpoint it goes (a config cannot aim a well-known key like OPENAI_API_KEY at a host
    /// other than its provider's; this flag, like `--endpoint`, is how you allow it).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Model request timeouts.
    #[command(flatten)]
    pub timeouts: Box<Timeouts>,
    /// Continue the session with this id from its checkpoint; `-r` alone: the newest
    /// resumable session of the work dir (on a terminal with several, a choice).
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = crate::commands::run_line::NEWEST)]
    pub resume: Option<String>,
    /// Keep no session: no checkpoint is written, so the run cannot be resumed (for CI
    /// runs and benchmarks that do not need durability).
    #[arg(long, conflicts_with = "resume")]
    pub ephemeral: bool,
    /// Resume a session saved without authentication (by an older fuseraft or without a
    /// session key), whose files fuseraft cannot tell unaltered.
    #[arg(long, requires = "resume")]
    pub allow_unverified: bool,
    /// Start the config's stdio MCP servers and call its memory webhook without asking: you
    /// trust the programs and URLs this config names (otherwise each is asked for on a
    /// terminal, listed in `~/.config/fuseraft/trusted-mcp`, or refused), e.g. `--trust-mcp`.
    #[arg(long)]
    pub trust_mcp: bool,
    /// Let `${VAR}` expand in the config's MCP `Url`, `Headers`, `Env` and `Args` and its
    /// memory webhook's `Headers` (else the run is refused naming it; a model's key never
    /// expands); repeatable, e.g. `--mcp-env GITHUB_TOKEN --mcp-env MCP_REGION`.
    #[arg(long, value_name = "VAR")]
    pub mcp_env: Vec<String>,
    /// Resume even when the config compiles to another program than the session ran.
    #[arg(long, requires = "resume")]
    pub allow_config_change: bool,
    /// Rewind: start a new session from the resumed one as it stood after turn N (its first N
    /// turns shared, byte for byte) and run on from there, with the config as it is now (how
    /// it differs from the session's is printed). The resumed session is left as it was.
    #[arg(
        long,
        value_name = "N",
        requires = "resume",
        conflicts_with = "ephemeral"
    )]
    pub from_turn: Option<u64>,
    /// Show the run live in a web page, and answer its approvals and pauses there: `--ui` listens on a
    /// random port of 127.0.0.1, `--ui=PORT` or `--ui=HOST:PORT` where given. The page's URL,
    /// with its token, is printed on standard error.
    #[arg(long, visible_alias = "devui", value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub ui: Option<String>,
    /// Run on a Restate server instead of in this process (its ingress URL, served by
    /// `fuseraft serve` workers): the workflow is compiled here, submitted, and followed
    /// until it ends; the work dir must be one the workers see.
    #[arg(long, value_name = "URL")]
    pub on: Option<String>,
    /// With `--on`: print the session id and return once the run is submitted.
    #[arg(long, requires = "on")]
    pub detach: bool,
}

/// `exec`'s model request timeouts, in seconds (boxed: `Command` stays small).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Timeouts {
    /// The overall limit of one model request, in seconds, streaming included (default
    /// 1800; a slow but steady stream is otherwise ended only by `--idle-timeout`).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// End a model request whose server sends nothing for this many seconds (default 60);
    /// it is retried like any timeout.
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<f64>,
    /// The longest wait to connect to a model's server, in seconds (default 30).
    #[arg(long, value_name = "SECONDS")]
    pub connect_timeout: Option<f64>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Approve {
    All,
    None,
}

#[derive(Clone, Debug, clap::Args)]
pub struct CompileArgs {
    /// The workflow to compile (as `exec` takes it: a directory stands for its
    /// `fuseraft.yaml` unless it is a tama project).
    pub input: PathBuf,
    /// What to print: the IR text form, JSON, Graphviz DOT or a Mermaid flowchart.
    #[arg(long, value_enum, default_value_t = Emit::Ir)]
    pub emit: Emit,
    /// Write the output to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace agent instructions and prompts with their length (for sharing structure).
    #[arg(long)]
    pub elide_text: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    Ir,
    Json,
    Dot,
    Mermaid,
}

/// The examples shown at the end of each command's `--help`.
mod examples {
    pub const MAIN: &str = "\
Examples:
  fuseraft init --template statemachine my-team
  fuseraft check my-team
  fuseraft exec my-team/fuseraft.yaml --task \"Add a --verbose flag.\" --replay my-team/replay.yaml
  fuseraft test fixtures/scenarios";
    pub const COMPILE: &str = "\
Examples:
  fuseraft compile fuseraft.yaml
  fuseraft compile fuseraft.yaml --emit mermaid -o team.mmd
  fuseraft compile fuseraft.yaml --emit dot | dot -Tsvg > team.svg
  fuseraft compile team.fir --emit json";
    pub const CHECK: &str = "\
Examples:
  fuseraft check                          # every workflow under the current directory
  fuseraft check fuseraft.yaml configs/   # a file and a directory
  fuseraft check 'teams/**/*.yaml'        # a glob, expanded by fuseraft
  cat team.yaml | fuseraft check - --stdin-filename team.yaml
  fuseraft check . --format sarif > check.sarif
  fuseraft validate --strict fuseraft.yaml   # warnings fail too, as upstream spells it
  fuseraft check --explain FR201";
    pub const EXEC: &str = "\
Examples:
  fuseraft exec fuseraft.yaml --task \"Add a --verbose flag.\" --replay replay.yaml
  fuseraft exec fuseraft.yaml --task \"Add a --verbose flag.\" --model openai:gpt-4o-mini
  fuseraft exec fuseraft.yaml --task \"...\" --work-dir /tmp/run --events events.jsonl --json
  fuseraft exec fuseraft.yaml --resume 1a2b3c4d --work-dir /tmp/run --replay replay.yaml
  fuseraft exec fuseraft.yaml --task \"...\" --replay replay.yaml --ui   # watch it in a browser
  fuseraft exec fuseraft.yaml --task \"...\" --trust-mcp --mcp-env GITHUB_TOKEN   # its MCP servers
  fuseraft exec fuseraft.yaml --task \"...\" --deny-read ~/work/other-client   # hide more from commands
  # upstream fuseraft-cli's spellings work too:
  fuseraft run -c .fuseraft/config/orchestration.yaml \"Add a --verbose flag.\"
  fuseraft run \"Add a --verbose flag.\"          # .fuseraft/config/orchestration.yaml
  fuseraft run -f task.md --spec spec.md --context-file notes.md
  fuseraft run -r                                 # the newest resumable session";
    pub const TEST: &str = "\
Examples:
  fuseraft test                      # every *.scenario.yaml under the current directory
  fuseraft test fixtures/scenarios --coverage
  fuseraft test --accept             # accept the reviewed new traces
  fuseraft test --format junit > junit.xml
  fuseraft test --trust-mcp          # scenarios whose configs start MCP servers";
    pub const SESSIONS: &str = "\
Examples:
  fuseraft sessions list --work-dir /tmp/run   # the sessions a run can resume
  fuseraft sessions list --all                 # completed ones too
  fuseraft sessions show 1a2b3c4d
  fuseraft sessions rm 1a2b3c4d
  fuseraft sessions prune --dry-run            # what prune would remove: completed sessions
  fuseraft sessions cleanup --older-than 7d    # sessions idle for a week, whatever their status";
    pub const INIT: &str = "\
Examples:
  fuseraft init                              # a dev team in the current directory
  fuseraft init --template statemachine my-team
  fuseraft init --template tama-fsm support";
    pub const COMPLETIONS: &str = "\
Examples:
  fuseraft completions bash > ~/.local/share/bash-completion/completions/fuseraft
  fuseraft completions zsh > ~/.zfunc/_fuseraft
  fuseraft completions fish > ~/.config/fish/completions/fuseraft.fish";
    pub const MAN: &str = "\
Examples:
  fuseraft man --out ~/.local/share/man/man1   # then: man fuseraft-exec
  fuseraft man --out - | man -l -              # read the main page without installing it";
    pub const SCHEMA: &str = "\
Examples:
  fuseraft schema > fuseraft.schema.json
  # then, first line of a config, for the YAML language server (VS Code, Neovim, ...):
  # yaml-language-server: $schema=./fuseraft.schema.json";
    pub const PLUGINS: &str = "\
Examples:
  fuseraft plugins                     # every plugin and tool
  fuseraft plugins --plugin FileSystem # one plugin, each tool described
  fuseraft plugins --json | jq '.[].tools[] | select(.category == \"command_execution\") | .name'";
    pub const MODELS: &str = "\
Examples:
  fuseraft models
  fuseraft models --json | jq '.models[] | select(.provider == \"anthropic\")'";
    pub const CONFIG: &str = "\
Examples:
  fuseraft config show                     # .fuseraft/config/orchestration.yaml
  fuseraft config show team.json > team.yaml
  fuseraft config show my-team/            # the directory's fuseraft.yaml";
    pub const LOG: &str = "\
Examples:
  fuseraft log events events.jsonl
  fuseraft log events events.jsonl --session 1a2b3c4d --last 20
  fuseraft log events events.jsonl --event agent_routed --event session_end
  tail -f events.jsonl | fuseraft log events -   # follow a run as it goes";
    pub const AUDIT: &str = "\
Examples:
  fuseraft audit verify 1a2b3c4d
  fuseraft audit show 1a2b3c4d --work-dir /tmp/run";
    pub const UI: &str = "\
Examples:
  fuseraft ui                        # the sessions of the current directory
  fuseraft ui --work-dir /tmp/run --addr 8080";
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
