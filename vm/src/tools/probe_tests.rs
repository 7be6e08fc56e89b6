//! The Probe tools on real processes: snippets run through the command sandbox's path with
//! the agent's environment, the assertions judge PASS and FAIL as upstream's do, and bad
//! input (an unknown language, a directory out of the root, a bad regex) is refused.

use serde_json::json;

use super::super::tests::Temp;
use super::super::ToolContext;
use crate::changes::ChangeLog;
use crate::history::{DenialKind, ToolCall};
use crate::tools::testkit::call;

fn text(call: &ToolCall) -> &str {
    call.result.as_deref().unwrap_or_default()
}

fn context(name: &str) -> (Temp, ToolContext) {
    let temp = Temp::new(name);
    let ctx = ToolContext::new(&temp.0, "s1", "Dev", 1).unwrap();
    (temp, ctx)
}

#[tokio::test]
async fn probe_code_runs_bash_and_python_snippets_in_the_work_dir() {
    let (temp, ctx) = context("probe-code");
    std::fs::create_dir_all(temp.0.join("sub")).unwrap();
    let bash = json!({"language": "bash", "code": "echo \"it's $((6*7))\"; pwd -P"});
    let ran = call(&ctx, "probe_code", bash).await;
    assert!(ran.ok, "{ran:?}");
    let expected = format!(
        "LANGUAGE : bash\nEXIT CODE: 0\nOUTPUT   :\n  it's 42\n  {}",
        temp.0.display()
    );
    assert_eq!(text(&ran), expected);

    let failing = json!({"language": "SH", "code": "echo oops >&2; exit 3", "directory": "sub"});
    let ran = call(&ctx, "probe_code", failing).await;
    assert!(!ran.ok);
    assert_eq!(
        text(&ran),
        "LANGUAGE : SH\nEXIT CODE: 3\nOUTPUT   :\n  oops"
    );

    if which("python3") {
        let py = json!({"language": "python", "code": "import os\nprint('x' + \"\\\\\" + os.environ.get('PROBE_V', '-'))"});
        ok(&call(
            &ctx,
            "shell_set_env",
            json!({"name": "PROBE_V", "value": "v"}),
        )
        .await);
        let ran = call(&ctx, "probe_code", py).await;
        assert!(text(&ran).ends_with("OUTPUT   :\n  x\\v"), "{ran:?}");
    }
    // Recorded in the change log as commands.
    let log = ChangeLog::load(&ctx.change_log).unwrap();
    let commands: Vec<String> = log
        .entries
        .iter()
        .flat_map(|entry| entry.commands_run.iter().map(|c| c.command.clone()))
        .collect();
    assert!(
        commands[0].starts_with("probe_code (bash): echo"),
        "{commands:?}"
    );
}

fn ok(call: &ToolCall) -> &str {
    assert!(call.ok, "{call:?}");
    text(call)
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

#[tokio::test]
async fn probe_code_refuses_what_it_cannot_run_safely() {
    let (temp, ctx) = context("probe-refuse");
    let outside = Temp::new("probe-outside");
    std::os::unix::fs::symlink(&outside.0, temp.0.join("out")).unwrap();
    std::fs::write(temp.0.join("file.txt"), "x").unwrap();
    let cobol = call(
        &ctx,
        "probe_code",
        json!({"language": "cobol", "code": "x"}),
    )
    .await;
    assert!(text(&cobol).starts_with(
        "[ERROR] probe_code: unsupported language `cobol`; supported: bash, sh, python"
    ));
    let empty = call(
        &ctx,
        "probe_code",
        json!({"language": "bash", "code": "  "}),
    )
    .await;
    assert!(
        text(&empty).contains("needs a non-empty `code`"),
        "{empty:?}"
    );
    for (directory, kind) in [
        ("out", Some(DenialKind::Sandbox)),
        ("/tmp", Some(DenialKind::Sandbox)),
        ("file.txt", None),
    ] {
        let args = json!({"language": "bash", "code": "touch made", "directory": directory});
        let refused = call(&ctx, "probe_code", args).await;
        assert!(!refused.ok, "{directory}: {refused:?}");
        assert_eq!(refused.denied, kind, "{directory}: {refused:?}");
    }
    assert!(!outside.0.join("made").exists() && !temp.0.join("made").exists());
}

#[tokio::test]
async fn assert_output_judges_each_match_type() {
    let (_temp, ctx) = context("probe-assert");
    let assert = |command: &str, expected: &str, kind: &str| json!({"command": command, "expected": expected, "matchType": kind});
    for (args, passes) in [
        (assert("echo Hello World", "hello", "contains"), true),
        (assert("echo Hello World", "bye", "contains"), false),
        (assert("printf 'a\\n'", "a", "equals"), true),
        (assert("echo ab", "a", "equals"), false),
        (assert("echo v1.2.3", r"^v\d+\.\d+", "regex"), true),
        (assert("exit 4", "4", "exitcode"), true),
        (assert("exit 4", "0", "exitcode"), false),
        (assert("echo 'a < b'", "a &lt; b", "contains"), true),
        (assert("echo x", "(", "regex"), false),
        (assert("echo x", "x", "fuzzy"), false),
    ] {
        let ran = call(&ctx, "probe_assert_output", args.clone()).await;
        let verdict = if passes {
            "VERDICT: PASS"
        } else {
            "VERDICT: FAIL"
        };
        assert!(text(&ran).contains(verdict), "{args}: {ran:?}");
        assert_eq!(ran.ok, passes, "{args}: {ran:?}");
    }
    let bad = call(&ctx, "probe_assert_output", assert("echo x", "(", "regex")).await;
    assert!(
        text(&bad).contains("REASON : Invalid regex pattern"),
        "{bad:?}"
    );
    let slow = json!({"command": "sleep 5", "expected": "0", "matchType": "exitcode", "timeoutSeconds": 0.3});
    let ran = call(&ctx, "probe_assert_output", slow).await;
    assert!(
        text(&ran).contains("[TIMEOUT] after") && text(&ran).contains("VERDICT: FAIL"),
        "{ran:?}"
    );
}

#[tokio::test]
async fn compare_outputs_and_hypotheses_report_as_upstream() {
    let (_temp, ctx) = context("probe-compare");
    let same = json!({"commandA": "echo 2", "commandB": "expr 1 + 1"});
    let ran = call(&ctx, "probe_compare_outputs", same).await;
    assert!(
        text(&ran).starts_with("=== A ===\nCOMMAND  : echo 2\nEXIT CODE: 0"),
        "{ran:?}"
    );
    assert!(text(&ran).ends_with("OUTPUTS MATCH: yes"), "{ran:?}");
    let differ = json!({"command_a": "echo 2", "command_b": "echo 3"});
    assert!(text(&call(&ctx, "probe_compare_outputs", differ).await).ends_with("OUTPUTS MATCH: no"));

    let holds = json!({
        "hypothesis": "the setup's file is there",
        "setupCommand": "echo ready > flag.txt",
        "command": "cat flag.txt",
        "expectedObservation": "READY",
    });
    let ran = call(&ctx, "probe_run_hypothesis", holds).await;
    assert!(ran.ok && text(&ran).contains("VERDICT: PASS"), "{ran:?}");
    let broken_setup = json!({
        "hypothesis": "h", "setupCommand": "exit 1", "command": "touch probed", "expectedObservation": "x",
    });
    let ran = call(&ctx, "probe_run_hypothesis", broken_setup).await;
    assert!(
        text(&ran).ends_with("REASON : Setup command failed. Probe was not run."),
        "{ran:?}"
    );
    assert!(!ctx.work_dir.join("probed").exists());
    let wrong = json!({"hypothesis": "h", "command": "echo no", "expectedObservation": "yes"});
    let ran = call(&ctx, "probe_run_hypothesis", wrong).await;
    assert!(!ran.ok && text(&ran).contains("VERDICT: FAIL"), "{ran:?}");
}
