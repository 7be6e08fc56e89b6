//! `fuseraft serve` and `fuseraft approve`: the clap types of runs kept by a Restate server
//! (workers that run sessions one turn at a time, and answers to their questions).

use std::path::PathBuf;

#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// The Restate server's admin URL: the worker registers itself there at start.
    #[arg(long, value_name = "ADMIN_URL")]
    pub restate: String,
    /// Where the worker listens for the server's calls (HTTP/2, cleartext).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9080")]
    pub listen: String,
    /// The URL the server calls the worker at, when it is not `http://ADDR` (a balancer in
    /// front of several workers, a container's outside address).
    #[arg(long, value_name = "URL")]
    pub advertise: Option<String>,
    /// Register nothing: another worker, or an operator, registered the URL the server
    /// calls (workers behind one balancer register it once).
    #[arg(long)]
    pub no_register: bool,
    /// How long a run waiting on a question keeps its worker before the server suspends it
    /// (it then holds nothing in any worker until answered), in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = positive_seconds)]
    pub suspend_after: f64,
    /// Keep a journal entry or stored value longer than this many bytes in a file of the
    /// work dir (`.fuseraft/journal/SESSION/`), the server keeping a reference: below the
    /// server's own limit (`worker.invoker.message-size-limit`, 32 MiB by default).
    #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024 * 1024)]
    pub inline_limit: usize,
    /// Also serve a front for clients on this address: it forwards fuseraft's own calls to
    /// the server's ingress (`--ingress`), only with the token (`FUSERAFT_SERVE_TOKEN`, or
    /// one made and printed), and refuses a browser's write from another origin.
    #[arg(long, value_name = "ADDR")]
    pub front: Option<String>,
    /// The Restate server's ingress, which `--front` forwards to.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8080")]
    pub ingress: String,
    /// The only directory whose subdirectories submitted runs may act in (default: the
    /// current directory). A run whose work dir lies elsewhere is refused.
    #[arg(long, value_name = "DIR")]
    pub work_root: Option<PathBuf>,
    /// Start the MCP servers a submitted workflow declares (a stdio server runs in the
    /// command sandbox of its run's work dir, started again for each turn). Without it, a
    /// workflow that starts MCP servers is refused at submission.
    #[arg(long)]
    pub trust_mcp: bool,
    /// Let `${VAR}` expand in a submitted workflow's MCP `Url`, `Headers`, `Env` and `Args`
    /// (from the worker's environment); repeatable, e.g. `--mcp-env MCP_REGION`.
    #[arg(long, value_name = "VAR")]
    pub mcp_env: Vec<String>,
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && (0.1..=86_400.0).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "`{text}` is not a number of seconds from 0.1 to 86400"
        )),
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct ApproveArgs {
    /// The session whose waiting question to answer, or one question by its id
    /// (`SESSION.N`, as `exec --on` prints it).
    #[arg(value_name = "ID")]
    pub id: String,
    /// The Restate server's ingress URL.
    #[arg(long, value_name = "URL")]
    pub on: String,
    /// Refuse instead of approving.
    #[arg(long, conflicts_with = "redirect")]
    pub no: bool,
    /// Refuse with this direction for the team (an escalation retries with it, a plan is
    /// revised with it; for a route or a tool call it is a refusal).
    #[arg(long, value_name = "TEXT")]
    pub redirect: Option<String>,
    /// Who answers, recorded with the answer (default: `$USER`).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
}

pub const SERVE_EXAMPLES: &str = "\
Examples:
  restate-server --config-file restate.toml &          # ingress :8080, admin :9070
  fuseraft serve --restate http://127.0.0.1:9070 --listen 127.0.0.1:9080 --work-root ~/work
  fuseraft exec team.yaml --task \"Add a --verbose flag.\" --work-dir ~/work/app --on http://127.0.0.1:8080";

pub const APPROVE_EXAMPLES: &str = "\
Examples:
  fuseraft approve 1a2b3c4d --on http://127.0.0.1:8080                # yes to its waiting question
  fuseraft approve 1a2b3c4d.2 --no --on http://127.0.0.1:8080         # no to question 2
  fuseraft approve 1a2b3c4d --redirect \"Test the parser first.\" --on http://127.0.0.1:8080";

#[derive(Debug, clap::Args)]
pub struct ScheduleArgs {
    #[command(subcommand)]
    pub action: ScheduleAction,
}

#[derive(Debug, clap::Subcommand)]
pub enum ScheduleAction {
    /// Keep a schedule in the server: at every tick of EXPR it submits the run that
    /// `fuseraft exec` would with the arguments after `--`.
    #[command(after_help = SCHEDULE_EXAMPLES)]
    Add(ScheduleAddArgs),
    /// List the server's schedules, each with its next tick and the last run it started.
    List(ScheduleOnArgs),
    /// Remove a schedule (its runs under way go on).
    Remove(ScheduleNameArgs),
    /// Start a schedule's run now, outside its ticks.
    Run(ScheduleNameArgs),
}

#[derive(Debug, clap::Args)]
pub struct ScheduleAddArgs {
    /// The schedule's name (letters, digits, `-`, `_` and `.`).
    pub name: String,
    /// When it fires: five cron fields (minute hour day month weekday), or six and seven
    /// with seconds first, in UTC.
    #[arg(long, value_name = "EXPR")]
    pub cron: String,
    /// The Restate server's ingress URL.
    #[arg(long, value_name = "URL")]
    pub on: String,
    /// What each tick runs, as `fuseraft exec` takes it: `-- CONFIG --task TEXT ...`.
    #[arg(last = true, required = true, value_name = "EXEC ARGS")]
    pub exec: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ScheduleOnArgs {
    /// The Restate server's ingress URL.
    #[arg(long, value_name = "URL")]
    pub on: String,
    /// Print one JSON object per schedule.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ScheduleNameArgs {
    pub name: String,
    /// The Restate server's ingress URL.
    #[arg(long, value_name = "URL")]
    pub on: String,
}

pub const SCHEDULE_EXAMPLES: &str = "\
Examples:
  fuseraft schedule add nightly --cron \"0 2 * * *\" --on http://127.0.0.1:8080 -- \\
      team.yaml --task \"Triage the new issues.\" --work-dir ~/work/app --approve none
  fuseraft schedule list --on http://127.0.0.1:8080
  fuseraft schedule run nightly --on http://127.0.0.1:8080
  fuseraft schedule remove nightly --on http://127.0.0.1:8080";
