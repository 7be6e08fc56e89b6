//! The CodeExecution tools on real processes in the command sandbox: a snippet runs and
//! keeps nothing; a Python REPL session keeps its names across calls and returns only the
//! new code's output; reset, stop and unknown sessions and languages are refused with a
//! reason.

use serde_json::json;

use super::super::tests::{answer as call, Temp};
use crate::tools::ToolContext;

#[tokio::test]
async fn snippets_run_and_a_repl_keeps_its_names() {
    let temp = Temp::new("code-exec");
    let ctx = ToolContext::new(&temp.0, "s", "A", 0).unwrap();
    let (checked, ok) = call(&ctx, "code_execution_check_docker", json!({})).await;
    assert!(ok && checked.starts_with("Code runs here"), "{checked}");
    let (ran, ok) = call(
        &ctx,
        "sandbox_run",
        json!({"language": "bash", "code": "echo $((6 * 7))"}),
    )
    .await;
    assert!(
        ok && ran.contains("EXIT CODE: 0") && ran.contains("42"),
        "{ran}"
    );
    let (failed, ok) = call(
        &ctx,
        "sandbox_run",
        json!({"language": "bash", "code": "exit 3"}),
    )
    .await;
    assert!(!ok && failed.contains("EXIT CODE: 3"), "{failed}");
    let (refused, ok) = call(
        &ctx,
        "sandbox_run",
        json!({"language": "cobol", "code": "x"}),
    )
    .await;
    assert!(
        !ok && refused.contains("unsupported language `cobol`"),
        "{refused}"
    );

    if std::process::Command::new("python3")
        .arg("-c")
        .arg("0")
        .status()
        .is_err()
    {
        return;
    }
    let (started, ok) = call(&ctx, "repl_start", json!({"language": "python"})).await;
    assert!(ok, "{started}");
    let id = started
        .lines()
        .find_map(|line| line.strip_prefix("Session ID : "))
        .unwrap()
        .to_string();
    let (first, ok) = call(
        &ctx,
        "repl_exec",
        json!({"sessionId": id, "code": "x = 40\nprint('set')"}),
    )
    .await;
    assert!(ok && first.contains("set"), "{first}");
    let (second, ok) = call(
        &ctx,
        "repl_exec",
        json!({"sessionId": id, "code": "print(x + 2)"}),
    )
    .await;
    assert!(
        ok && second.contains("42") && !second.contains("set"),
        "only the new output: {second}"
    );
    let (_, ok) = call(&ctx, "repl_reset", json!({"sessionId": id})).await;
    assert!(ok);
    let (forgot, ok) = call(
        &ctx,
        "repl_exec",
        json!({"sessionId": id, "code": "print(x)"}),
    )
    .await;
    assert!(!ok && forgot.contains("NameError"), "{forgot}");
    let (_, ok) = call(&ctx, "repl_stop", json!({"sessionId": id})).await;
    assert!(ok);
    let (gone, ok) = call(
        &ctx,
        "repl_exec",
        json!({"sessionId": id, "code": "print(1)"}),
    )
    .await;
    assert!(!ok && gone.contains("no REPL session"), "{gone}");
    let (bash_repl, ok) = call(&ctx, "repl_start", json!({"language": "bash"})).await;
    assert!(!ok && bash_repl.contains("use sandbox_run"), "{bash_repl}");
}
