//! The Probe tools (upstream's names and arguments): `probe_code {language, code}` runs a
//! snippet, `probe_assert_output {command, expected, matchType}` runs a command and
//! judges its output PASS or FAIL, `probe_compare_outputs {commandA, commandB}` runs two
//! and shows both, `probe_run_hypothesis {hypothesis, command, expectedObservation,
//! setupCommand}` frames an experiment as given/when/then. Each takes `directory` and
//! `timeoutSeconds` (default 30, capped by the run's limit).
//!
//! Security decisions:
//! - Every process goes the way `shell_run`'s does: `bash` under the OS sandbox through
//!   [`super::shell_env::agent_command`] (the allow-listed environment with this agent's
//!   variables, the same policy, process group killed at the end), with its time limit and
//!   output cap. A snippet in another language runs as that language's interpreter inside
//!   that `bash`; the code travels as an argument, never spliced into the script, and a
//!   snippet that needs a file (Go, C#) is written to the sandbox's private temp dir.
//! - Every probe is `command_execution` (its text, with setup and both commands, decides
//!   `git_write` as `shell_run`'s does) and is recorded in the change log as a command.
//! - `directory` resolves under the sandbox root like a file tool's path (credential rule,
//!   no symlink out of it) and must be a directory.
//! - Output is standard output and error together (as `shell_run`'s); the assertions judge
//!   it. An untrusted `regex` is compiled with size limits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use super::fs::resolve_checked;
use super::process::{self, format_secs, Ended};
use super::record::{cap_text, record_into, LOG_OUTPUT_CAP};
use super::sandbox::open_root;
use super::{Args, Outcome, Tool, ToolContext};

#[cfg(all(test, unix))]
#[path = "probe_tests.rs"]
mod tests;

/// A probe's time limit without `timeoutSeconds` (upstream's).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a language's snippet runs inside `bash`, with the code as `$1`.
pub(super) const RUNNERS: &[(&[&str], &str)] = &[
    (&["bash", "sh"], r#"exec bash -c "$1""#),
    (&["python", "python3", "py"], r#"exec python3 -c "$1""#),
    (&["node", "javascript", "js"], r#"exec node -e "$1""#),
    (&["powershell", "ps"], r#"exec pwsh -Command "$1""#),
    (&["kiwi"], r#"exec kiwi -e "$1""#),
    (
        &["go"],
        r#"d=$(mktemp -d) || exit 1; printf '%s' "$1" > "$d/probe.go"; go run "$d/probe.go"; s=$?; rm -rf "$d"; exit $s"#,
    ),
    (
        &["csharp", "cs"],
        r#"d=$(mktemp -d) || exit 1; printf '%s' "$1" > "$d/probe.csx"; dotnet script "$d/probe.csx"; s=$?; rm -rf "$d"; exit $s"#,
    ),
];

/// Where and for how long a probe's processes run.
pub(super) struct Setting {
    dir: PathBuf,
    pub(super) timeout: Duration,
    /// The script runs code its call does not show (a REPL replays the session's earlier
    /// code): an approval saw only part of it, so it never gets a writable `.git`.
    pub(super) replays: bool,
}

/// A finished process: its exit code (`None` when its time was up), its output, and a
/// warning when the change log could not record it.
pub(super) struct Ran {
    pub(super) code: Option<i32>,
    pub(super) output: String,
    warning: String,
}

impl Ran {
    pub(super) fn exit(&self) -> String {
        self.code
            .map_or_else(|| "TIMEOUT".to_string(), |code| code.to_string())
    }
}

/// `outcome` with the change log's warnings of `runs` after its text.
pub(super) fn with_warnings(mut outcome: Outcome, runs: &[&Ran]) -> Outcome {
    for ran in runs {
        outcome.text.push_str(&ran.warning);
    }
    outcome
}

/// Runs a Probe tool.
pub(crate) async fn run(tool: Tool, args: &Args, ctx: &ToolContext) -> Outcome {
    let setting = match setting(args, ctx) {
        Ok(setting) => setting,
        Err(outcome) => return outcome,
    };
    let outcome = match tool {
        Tool::ProbeCode => probe_code(args, ctx, &setting).await,
        Tool::ProbeAssertOutput => assert_output(args, ctx, &setting).await,
        Tool::ProbeCompareOutputs => compare_outputs(args, ctx, &setting).await,
        _ => run_hypothesis(args, ctx, &setting).await,
    };
    outcome.unwrap_or_else(|outcome| outcome)
}

/// A required string argument by its upstream name (or its snake_case spelling).
pub(super) fn text<'a>(args: &'a Args, key: &str) -> Result<&'a str, Outcome> {
    match args.opt_text(key)? {
        Some(text) if !text.trim().is_empty() => Ok(text),
        _ => Err(Outcome::error(format!(
            "tool `{}` needs a non-empty `{key}`",
            args.tool
        ))),
    }
}

/// The directory and time limit of a call.
pub(super) fn setting(args: &Args, ctx: &ToolContext) -> Result<Setting, Outcome> {
    let limit = ctx.limits.shell_timeout;
    let asked = match args.opt_seconds("timeoutSeconds")? {
        Some(seconds) => Some(seconds),
        None => args.opt_seconds("timeout_seconds")?,
    };
    let timeout = asked
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .unwrap_or(DEFAULT_TIMEOUT)
        .min(limit);
    let raw = args
        .opt_text("directory")?
        .filter(|raw| !raw.trim().is_empty())
        .unwrap_or(".");
    Ok(Setting {
        dir: directory(args.tool, raw, &ctx.work_dir, ctx)?,
        timeout,
        replays: false,
    })
}

/// The directory `raw` names under the sandbox root, absolute.
fn directory(tool: &str, raw: &str, root: &Path, ctx: &ToolContext) -> Result<PathBuf, Outcome> {
    let opened = open_root(root)?;
    let resolved = resolve_checked(tool, &opened, raw, true, false, ctx)?;
    match resolved.place.kind() {
        Ok(Some(rustix::fs::FileType::Directory)) => Ok(opened.path().join(&resolved.rel)),
        Ok(Some(_)) => Err(Outcome::error(format!(
            "{tool}: `{raw}` is not a directory"
        ))),
        Ok(None) => Err(Outcome::error(format!("{tool}: `{raw}` does not exist"))),
        Err(error) => Err(Outcome::error(format!(
            "{tool}: cannot inspect `{raw}`: {error}"
        ))),
    }
}

/// Runs `bash -c SCRIPT probe ARGS` sandboxed in the setting's directory and records it
/// as a command (`shown` is what the change log and `git_write` see).
pub(super) async fn bash(
    ctx: &ToolContext,
    setting: &Setting,
    shown: &str,
    script: &str,
    args: &[&str],
) -> Result<Ran, Outcome> {
    let git_write = super::is_git_write(shown) && !setting.replays;
    let mut policy = ctx.sandbox.for_tool_command(&ctx.confinement, git_write);
    policy.work_dir = setting.dir.clone();
    let mut argv = vec!["-c", script, "probe"];
    argv.extend_from_slice(args);
    let cmd = super::shell_env::agent_command(ctx, &policy, &argv).map_err(Outcome::error)?;
    let started = process::run(
        Command::from(cmd),
        setting.timeout,
        ctx.limits.output_cap,
        true,
    );
    let (ended, output) = started.await.map_err(|error| {
        Outcome::error(format!(
            "could not start `bash` in `{}`: {error}",
            setting.dir.display()
        ))
    })?;
    let (code, output) = match ended {
        Ended::Exited(code) => match crate::sandbox::setup_failure(Some(code), &output) {
            Some(reason) => {
                return Err(Outcome::error(format!(
                    "the OS sandbox could not start the command: {reason}"
                )))
            }
            None => (Some(code), output),
        },
        Ended::TimedOut => (None, output),
        Ended::Failed(error) => {
            return Err(Outcome::error(format!(
                "waiting for the command failed: {error}"
            )))
        }
    };
    let mut note = Outcome::ok("");
    let logged = cap_text(&output, LOG_OUTPUT_CAP);
    record_into(&mut note, ctx, |entry| {
        entry.commands_run.push(crate::changes::Command {
            command: shown.to_string(),
            succeeded: code == Some(0),
            output: logged,
        })
    });
    Ok(Ran {
        code,
        output,
        warning: note.text,
    })
}

/// Runs a shell command line.
async fn command(ctx: &ToolContext, setting: &Setting, line: &str) -> Result<Ran, Outcome> {
    bash(ctx, setting, line, &format!("exec 2>&1\n{line}"), &[]).await
}

/// `  `-indented lines of `text`.
fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|line| format!("{prefix}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `OUTPUT   : (empty)` or `OUTPUT   :` and the indented output, with a timeout's note.
pub(super) fn output_block(ran: &Ran, setting: &Setting, prefix: &str) -> String {
    let mut block = if ran.output.trim().is_empty() {
        format!("{prefix}OUTPUT   : (empty)")
    } else {
        format!(
            "{prefix}OUTPUT   :\n{}",
            indent(ran.output.trim_end(), &format!("{prefix}  "))
        )
    };
    if ran.code.is_none() {
        block.push_str(&format!(
            "\n{prefix}[TIMEOUT] after {}",
            format_secs(setting.timeout)
        ));
    }
    block
}

async fn probe_code(args: &Args, ctx: &ToolContext, setting: &Setting) -> Result<Outcome, Outcome> {
    let language = text(args, "language")?.trim();
    let code = text(args, "code")?;
    let Some((_, runner)) = RUNNERS
        .iter()
        .find(|(names, _)| names.iter().any(|name| name.eq_ignore_ascii_case(language)))
    else {
        let supported: Vec<&str> = RUNNERS
            .iter()
            .flat_map(|(names, _)| names.iter().copied())
            .collect();
        return Err(Outcome::error(format!(
            "probe_code: unsupported language `{language}`; supported: {}",
            supported.join(", ")
        )));
    };
    let script = format!("exec 2>&1\n{runner}");
    let shown = format!("probe_code ({language}): {code}");
    let ran = bash(ctx, setting, &shown, &script, &[code]).await?;
    let text = format!(
        "LANGUAGE : {language}\nEXIT CODE: {}\n{}",
        ran.exit(),
        output_block(&ran, setting, "")
    );
    Ok(with_warnings(
        verdict_outcome(text, ran.code == Some(0)),
        &[&ran],
    ))
}

pub(super) fn verdict_outcome(text: String, passed: bool) -> Outcome {
    if passed {
        Outcome::ok(text)
    } else {
        Outcome::fail(text)
    }
}

/// The few HTML entities some models put in arguments (`&lt;` for `<`).
fn html_decode(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Whether `actual` passes `expected` under `match_type`, and why.
fn judge(match_type: &str, expected: &str, actual: &str, code: Option<i32>) -> (bool, String) {
    match match_type.to_ascii_lowercase().as_str() {
        "contains" => {
            let passed = actual.to_lowercase().contains(&expected.to_lowercase());
            let reason = if passed {
                format!("Output contains '{expected}'.")
            } else {
                format!("Output does not contain '{expected}'.")
            };
            (passed, reason)
        }
        "equals" if actual.trim() == expected.trim() => (true, "Output matches exactly.".into()),
        "equals" => (
            false,
            format!(
                "Outputs differ.\n  EXPECTED:\n{}\n  ACTUAL:\n{}",
                indent(expected.trim(), "    "),
                indent(actual.trim(), "    ")
            ),
        ),
        "regex" => match regex::RegexBuilder::new(expected)
            .case_insensitive(true)
            .multi_line(true)
            .size_limit(1 << 20)
            .dfa_size_limit(1 << 20)
            .nest_limit(64)
            .build()
        {
            Ok(regex) if regex.is_match(actual) => {
                (true, format!("Output matches regex '{expected}'."))
            }
            Ok(_) => (false, format!("Output does not match regex '{expected}'.")),
            Err(error) => (false, format!("Invalid regex pattern: {error}")),
        },
        "exitcode" => match (expected.trim().parse::<i32>(), code) {
            (Ok(want), Some(got)) if want == got => {
                (true, format!("Exit code is {got} as expected."))
            }
            (_, got) => (
                false,
                format!(
                    "Expected exit code {expected}, got {}.",
                    got.map_or_else(|| "none (timed out)".to_string(), |got| got.to_string())
                ),
            ),
        },
        _ => (
            false,
            format!("Unknown matchType '{match_type}'. Use: contains, equals, regex, exitcode."),
        ),
    }
}

async fn assert_output(
    args: &Args,
    ctx: &ToolContext,
    setting: &Setting,
) -> Result<Outcome, Outcome> {
    let line = text(args, "command")?;
    let expected = html_decode(args.opt_text("expected")?.unwrap_or_default());
    let match_type = args
        .opt_text("matchType")?
        .filter(|kind| !kind.trim().is_empty())
        .unwrap_or("contains")
        .trim();
    let ran = command(ctx, setting, line).await?;
    let (passed, reason) = judge(match_type, &expected, ran.output.trim_end(), ran.code);
    let text = format!(
        "COMMAND  : {line}\nEXPECTED : {expected}  [{match_type}]\nEXIT CODE: {}\n{}\n\nVERDICT: {}\nREASON : {reason}",
        ran.exit(),
        output_block(&ran, setting, ""),
        if passed { "PASS" } else { "FAIL" }
    );
    Ok(with_warnings(verdict_outcome(text, passed), &[&ran]))
}

async fn compare_outputs(
    args: &Args,
    ctx: &ToolContext,
    setting: &Setting,
) -> Result<Outcome, Outcome> {
    let (line_a, line_b) = (text(args, "commandA")?, text(args, "commandB")?);
    let (a, b) = tokio::join!(command(ctx, setting, line_a), command(ctx, setting, line_b));
    let (a, b) = (a?, b?);
    let side = |name: &str, line: &str, ran: &Ran| {
        format!(
            "=== {name} ===\nCOMMAND  : {line}\nEXIT CODE: {}\n{}",
            ran.exit(),
            output_block(ran, setting, "")
        )
    };
    let same = a.output.trim() == b.output.trim();
    let text = format!(
        "{}\n\n{}\n\nOUTPUTS MATCH: {}",
        side("A", line_a, &a),
        side("B", line_b, &b),
        if same { "yes" } else { "no" }
    );
    Ok(with_warnings(Outcome::ok(text), &[&a, &b]))
}

async fn run_hypothesis(
    args: &Args,
    ctx: &ToolContext,
    setting: &Setting,
) -> Result<Outcome, Outcome> {
    let hypothesis = text(args, "hypothesis")?;
    let line = text(args, "command")?;
    let expected = html_decode(text(args, "expectedObservation")?);
    let setup = args
        .opt_text("setupCommand")?
        .filter(|setup| !setup.trim().is_empty());
    let mut out = format!("HYPOTHESIS\n  {hypothesis}\n\n");
    let mut setup_ran = None;
    if let Some(setup) = setup {
        let ran = command(ctx, setting, setup).await?;
        out.push_str(&format!(
            "SETUP\n  COMMAND  : {setup}\n  EXIT CODE: {}\n{}\n\n",
            ran.exit(),
            output_block(&ran, setting, "  ")
        ));
        if ran.code != Some(0) {
            out.push_str("VERDICT: FAIL\nREASON : Setup command failed. Probe was not run.");
            return Ok(with_warnings(Outcome::fail(out), &[&ran]));
        }
        setup_ran = Some(ran);
    }
    let ran = command(ctx, setting, line).await?;
    let passed = ran.output.to_lowercase().contains(&expected.to_lowercase());
    out.push_str(&format!(
        "PROBE\n  COMMAND  : {line}\n  EXIT CODE: {}\n{}\n\nEXPECTED OBSERVATION\n  {expected}\n\nVERDICT: {}\n",
        ran.exit(),
        output_block(&ran, setting, "  "),
        if passed { "PASS" } else { "FAIL" }
    ));
    out.push_str(if passed {
        "REASON : Output contains the expected observation."
    } else {
        "REASON : Output does not contain the expected observation. The hypothesis may be wrong, or the probe needs refining."
    });
    let runs: Vec<&Ran> = setup_ran.iter().chain([&ran]).collect();
    Ok(with_warnings(verdict_outcome(out, passed), &runs))
}
