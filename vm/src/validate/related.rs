//! `RequireRelatedTestsPass` and the `RelatedTestsPass` predicate: run the tests related to
//! the files changed in the newest turn, through `bash -c` in the work dir under the OS
//! sandbox (`crate::sandbox`), 120 s at most.
//!
//! The loop, as upstream: the changed files are the `filesWritten` of the newest change-log
//! entry of the active session; `TestSelector.FindRelatedCommand` runs once per file with
//! `{file}` replaced, and each non-blank line of a successful run's output is a test target
//! (deduplicated ignoring case; failed discovery runs are skipped); the test command is
//! `TestSelector.FullSuiteCommand` followed by the targets, or alone when none were found.
//! The check passes when that command exits 0.
//!
//! Choice: file paths and targets are shell-quoted when they hold anything but
//! `[A-Za-z0-9_./+@%:,=-]` (upstream pastes them in raw, so a written file named
//! `a;rm -rf ~` would run as a command).

use std::io::Read;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::effect::CheckResult;

use super::artifacts::{newest_entry, truncate, Env};

/// How long one command may run.
pub(super) const TIMEOUT: Duration = Duration::from_secs(120);

/// Output kept per stream; the rest is read and dropped.
const OUTPUT_CAP: usize = 64 * 1024;

/// What a shell command did.
pub(super) struct Outcome {
    /// The exit code; `None` when killed by a signal or by the timeout.
    pub code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub(super) fn succeeded(&self) -> bool {
        !self.timed_out && self.code == Some(0)
    }

    fn describe(&self, timeout: Duration) -> String {
        match (self.timed_out, self.code) {
            (true, _) => format!("timed out after {} s", timeout.as_secs()),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "killed by a signal".to_string(),
        }
    }

    /// Stdout and stderr, trimmed, capped at 2,000 characters.
    fn output(&self) -> String {
        let combined: Vec<&str> = [self.stdout.trim_end(), self.stderr.trim_end()]
            .into_iter()
            .filter(|text| !text.trim().is_empty())
            .collect();
        truncate(&combined.join("\n"), 2000)
    }
}

fn spawn_reader(stream: Option<impl Read + Send + 'static>) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut stream) = stream {
            let mut buffer = [0u8; 8192];
            while let Ok(read) = stream.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
        let _ = sender.send(String::from_utf8_lossy(&kept).into_owned());
    });
    receiver
}

/// Runs `command` with `bash -c` in the confinement's root under the OS sandbox as `spec` says
/// (`crate::sandbox`: git writes and network only when the policy allows them outright;
/// an allow-listed environment), killing it (and its process group, and with it the
/// sandbox's whole process tree) after `timeout`. An error when bash could not be started,
/// the sandbox could not be set up, or `spec` refuses to run without it.
pub(super) fn run_shell(
    command: &str,
    timeout: Duration,
    spec: &crate::sandbox::Spec,
    confinement: &crate::sandbox::Confinement,
) -> Result<Outcome, String> {
    let policy = spec.for_check_command(confinement);
    let mut builder = crate::sandbox::command(spec, &policy, "bash", &["-c", command])?;
    builder
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        builder.process_group(0);
    }
    let mut child = builder
        .spawn()
        .map_err(|error| format!("could not run `bash -c {command}`: {error}"))?;
    let stdout = spawn_reader(child.stdout.take());
    let stderr = spawn_reader(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    let (code, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.code(), false),
            Ok(None) if Instant::now() >= deadline => {
                #[cfg(unix)]
                {
                    // The whole group: bash and whatever it started.
                    if let Some(group) = i32::try_from(child.id())
                        .ok()
                        .and_then(rustix::process::Pid::from_raw)
                    {
                        let _ = rustix::process::kill_process_group(
                            group,
                            rustix::process::Signal::KILL,
                        );
                    }
                }
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(error) => {
                let _ = child.kill();
                return Err(format!("could not wait for `bash -c {command}`: {error}"));
            }
        }
    };
    // A grandchild that escaped the kill may hold the pipes open: do not wait for it forever.
    let grace = Duration::from_secs(if timed_out { 2 } else { 10 });
    let outcome = Outcome {
        code,
        timed_out,
        stdout: stdout.recv_timeout(grace).unwrap_or_default(),
        stderr: stderr.recv_timeout(grace).unwrap_or_default(),
    };
    match crate::sandbox::setup_failure(outcome.code, &outcome.stderr) {
        Some(reason) => Err(format!(
            "the OS sandbox could not start `{command}`: {reason}"
        )),
        None => Ok(outcome),
    }
}

/// Quotes `word` for bash unless it is made of characters that need no quoting.
fn shell_quote(word: &str) -> String {
    // A path, never an option for the test runner: a file the model named `-h` or
    // `--exec=…` is `./-h`.
    let dashed = word.starts_with('-').then(|| format!("./{word}"));
    let word = dashed.as_deref().unwrap_or(word);
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./+@%:,=-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The related-tests loop with the two commands; `Err` is the failure message tail.
fn run_related(
    env: &Env,
    find_related: Option<&str>,
    full_suite: &str,
    timeout: Duration,
) -> Result<(), String> {
    let spec = crate::sandbox::Spec::new(env.context.sandbox, &env.context.permissions);
    let changed: Vec<String> = match env.change_log()? {
        Some(log) => newest_entry(&log)
            .map(|entry| entry.files_written.clone())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut targets: Vec<String> = Vec::new();
    if let Some(find_related) = find_related {
        for file in changed.iter().filter(|file| !file.trim().is_empty()) {
            let command = find_related.replace("{file}", &shell_quote(file));
            let outcome = run_shell(&command, timeout, &spec, env.confinement)?;
            if !outcome.succeeded() {
                continue;
            }
            for line in outcome
                .stdout
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
            {
                if !targets.iter().any(|known| known.eq_ignore_ascii_case(line)) {
                    targets.push(line.to_string());
                }
            }
        }
    }
    let command = if targets.is_empty() {
        full_suite.to_string()
    } else {
        let quoted: Vec<String> = targets.iter().map(|target| shell_quote(target)).collect();
        format!("{} {}", full_suite.trim_end(), quoted.join(" "))
    };
    let outcome = run_shell(&command, timeout, &spec, env.confinement)?;
    if outcome.succeeded() {
        return Ok(());
    }
    Err(format!(
        "targeted tests failed ({}).\n\nCommand: {command}\n\n{}",
        outcome.describe(timeout),
        outcome.output()
    ))
}

/// `RequireRelatedTestsPass`: needs `TestSelector.FullSuiteCommand`;
/// `TestSelector.FindRelatedCommand` is optional (without it the full suite runs).
pub(super) fn require_related_tests_pass(env: &Env) -> CheckResult {
    require_related_tests_pass_within(env, TIMEOUT)
}

fn require_related_tests_pass_within(env: &Env, timeout: Duration) -> CheckResult {
    let Some(full_suite) = env.validation().full_suite_command.as_deref() else {
        return CheckResult::fail(
            "Handoff blocked: RequireRelatedTestsPass has no test command to run.\n\n\
             Set TestSelector.FullSuiteCommand in the orchestration config.",
        );
    };
    match run_related(
        env,
        env.validation().find_related_command.as_deref(),
        full_suite,
        timeout,
    ) {
        Ok(()) => CheckResult::pass(),
        Err(error) => CheckResult::fail(format!("Handoff blocked: {error}")),
    }
}

/// The `RelatedTestsPass` predicate: needs both `TestSelector.FindRelatedCommand` and
/// `TestSelector.FullSuiteCommand`.
pub(super) fn related_tests_pass(env: &Env) -> CheckResult {
    related_tests_pass_within(env, TIMEOUT)
}

fn related_tests_pass_within(env: &Env, timeout: Duration) -> CheckResult {
    let Some(find_related) = env.validation().find_related_command.as_deref() else {
        return CheckResult::fail(
            "RelatedTestsPass config error: it requires TestSelector.FindRelatedCommand to be set \
             at the orchestration level.",
        );
    };
    let Some(full_suite) = env.validation().full_suite_command.as_deref() else {
        return CheckResult::fail(
            "RelatedTestsPass config error: it requires TestSelector.FullSuiteCommand so it has a \
             test runner command to execute.",
        );
    };
    match run_related(env, Some(find_related), full_suite, timeout) {
        Ok(()) => CheckResult::pass(),
        Err(error) => CheckResult::fail(format!("RelatedTestsPass failed — {error}")),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::artifacts::Env;
    use super::super::testutil::*;
    use super::*;
    use crate::effect::{Check, CheckKind};

    // The fake test runner records its arguments in `ran.txt` and fails when one of them
    // contains "broken".
    const SUITE: &str = "echo \"$0 $*\" >> ran.txt; case \"$*\" in *broken*) echo 'FAILED broken' >&2; exit 3;; esac; true";

    fn fixture(name: &str, find: Option<&str>) -> Fixture {
        let fx = Fixture::new(name).with_setting(
            "TestSelector.FullSuiteCommand",
            &format!("bash -c '{}' suite", SUITE.replace('\'', "'\\''")),
        );
        match find {
            Some(find) => fx.with_setting("TestSelector.FindRelatedCommand", find),
            None => fx,
        }
    }

    fn ran(fx: &Fixture) -> String {
        std::fs::read_to_string(fx.dir().join("ran.txt")).unwrap_or_default()
    }

    #[test]
    fn related_tests_run_the_full_suite_with_discovered_targets() {
        let fx = fixture(
            "rt-targets",
            Some("echo tests/{file}_test; echo TESTS/{file}_test"),
        );
        fx.change_log(&[
            entry("Dev", 1, &["old.rs"], &[]),
            entry("Dev", 2, &["a.rs", "b.rs"], &[]),
        ]);
        assert_pass(&fx.validator("RequireRelatedTestsPass", &[], vec![]));
        assert_eq!(ran(&fx).trim(), "suite tests/a.rs_test tests/b.rs_test");
    }

    #[test]
    fn related_tests_fail_when_the_targeted_tests_fail() {
        let fx = fixture("rt-fail", Some("echo {file}"));
        fx.change_log(&[entry("Dev", 2, &["broken.rs"], &[])]);
        let result = fx.validator("RequireRelatedTestsPass", &[], vec![]);
        assert_fail(
            &result,
            &[
                "Handoff blocked: targeted tests failed (exit 3)",
                "Command: bash -c",
                "broken.rs",
                "FAILED broken",
            ],
        );
    }

    #[test]
    fn related_tests_run_the_full_suite_when_discovery_finds_nothing() {
        let fx = fixture("rt-nothing", Some("exit 1"));
        fx.change_log(&[entry("Dev", 2, &["a.rs"], &[])]);
        assert_pass(&fx.validator("RequireRelatedTestsPass", &[], vec![]));
        assert_eq!(ran(&fx).trim(), "suite");
    }

    #[test]
    fn related_tests_run_the_full_suite_without_a_change_log_or_find_command() {
        let fx = fixture("rt-no-log", None);
        assert_pass(&fx.validator("RequireRelatedTestsPass", &[], vec![]));
        assert_eq!(ran(&fx).trim(), "suite");
    }

    #[test]
    fn related_tests_fail_without_a_full_suite_command() {
        let fx = Fixture::new("rt-no-suite")
            .with_setting("TestSelector.FindRelatedCommand", "echo {file}");
        assert_fail(
            &fx.validator("RequireRelatedTestsPass", &[], vec![]),
            &["no test command to run", "TestSelector.FullSuiteCommand"],
        );
    }

    #[test]
    fn related_tests_quote_unsafe_file_names() {
        let fx = fixture("rt-quote", Some("printf '%s\\n' {file}"));
        fx.change_log(&[entry("Dev", 2, &["a b;touch pwned.txt"], &[])]);
        assert_pass(&fx.validator("RequireRelatedTestsPass", &[], vec![]));
        assert!(!fx.dir().join("pwned.txt").exists());
        assert_eq!(ran(&fx).trim(), "suite a b;touch pwned.txt");
    }

    #[test]
    fn a_file_named_like_an_option_reaches_the_runner_as_a_path() {
        let fx = fixture("rt-dash", Some("printf '%s\\n' {file}"));
        fx.change_log(&[entry("Dev", 2, &["-h", "--exec=touch pwned.txt"], &[])]);
        assert_pass(&fx.validator("RequireRelatedTestsPass", &[], vec![]));
        assert!(!fx.dir().join("pwned.txt").exists());
        assert_eq!(ran(&fx).trim(), "suite ./-h ./--exec=touch pwned.txt");
    }

    #[test]
    fn related_tests_run_in_the_work_dir() {
        let fx = Fixture::new("rt-cwd")
            .with_setting("TestSelector.FullSuiteCommand", "test -f marker.txt");
        assert_fail(
            &fx.validator("RequireRelatedTestsPass", &[], vec![]),
            &["exit 1"],
        );
        fx.write("marker.txt", "");
        assert_pass(&fx.validator("RequireRelatedTestsPass", &[], vec![]));
    }

    #[test]
    fn related_tests_fail_on_a_malformed_change_log() {
        let fx = fixture("rt-log-bad", Some("echo {file}"));
        fx.write(".fuseraft/state/changes.json", "{");
        assert_fail(
            &fx.validator("RequireRelatedTestsPass", &[], vec![]),
            &["change log `.fuseraft/state/changes.json` is not valid"],
        );
    }

    #[test]
    fn related_tests_time_out() {
        let fx = Fixture::new("rt-timeout")
            .with_setting("TestSelector.FullSuiteCommand", "sleep 30 & sleep 30");
        let check = Check::new(CheckKind::Validator, "RequireRelatedTestsPass", vec![]);
        let context = fx.context(vec![]);
        let env = Env {
            check: &check,
            context: &context,
            work_dir: fx.dir(),
            confinement: &crate::sandbox::Confinement::new(fx.dir(), &[], &[]),
        };
        let started = Instant::now();
        let result = require_related_tests_pass_within(&env, Duration::from_millis(300));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert_fail(&result, &["timed out after 0 s"]);
    }

    #[test]
    fn related_tests_predicate_passes_when_tests_pass() {
        let fx = fixture("rtp-ok", Some("echo {file}"));
        fx.change_log(&[entry("Dev", 2, &["a.rs"], &[])]);
        assert_pass(&fx.predicate("RelatedTestsPass", &[]));
        assert_eq!(ran(&fx).trim(), "suite a.rs");
    }

    #[test]
    fn related_tests_predicate_fails_when_tests_fail() {
        let fx = fixture("rtp-fail", Some("echo {file}"));
        fx.change_log(&[entry("Dev", 2, &["broken.rs"], &[])]);
        assert_fail(
            &fx.predicate("RelatedTestsPass", &[]),
            &["RelatedTestsPass failed — targeted tests failed (exit 3)"],
        );
    }

    #[test]
    fn related_tests_predicate_needs_both_commands() {
        let fx = fixture("rtp-config", None);
        assert_fail(
            &fx.predicate("RelatedTestsPass", &[]),
            &["requires TestSelector.FindRelatedCommand"],
        );
        let fx = Fixture::new("rtp-config2")
            .with_setting("TestSelector.FindRelatedCommand", "echo {file}");
        assert_fail(
            &fx.predicate("RelatedTestsPass", &[]),
            &["requires TestSelector.FullSuiteCommand"],
        );
    }

    #[test]
    fn related_tests_predicate_times_out() {
        let fx = Fixture::new("rtp-timeout")
            .with_setting("TestSelector.FindRelatedCommand", "echo {file}")
            .with_setting("TestSelector.FullSuiteCommand", "sleep 30 #");
        fx.change_log(&[entry("Dev", 2, &["a.rs"], &[])]);
        let check = Check::new(CheckKind::Predicate, "RelatedTestsPass", vec![]);
        let context = fx.context(vec![]);
        let env = Env {
            check: &check,
            context: &context,
            work_dir: fx.dir(),
            confinement: &crate::sandbox::Confinement::new(fx.dir(), &[], &[]),
        };
        assert_fail(
            &related_tests_pass_within(&env, Duration::from_millis(200)),
            &["timed out"],
        );
    }

    #[test]
    fn related_tests_quote_only_unsafe_words() {
        assert_eq!(shell_quote("src/a_b-c.rs"), "src/a_b-c.rs");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("-h"), "./-h");
        assert_eq!(shell_quote("--exec=rm x"), "'./--exec=rm x'");
    }
}
