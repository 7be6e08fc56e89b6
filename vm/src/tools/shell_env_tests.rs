//! `shell_set_env` and `shell_get_working_directory` with real commands: a variable set by
//! an agent reaches its later commands (and only its own), the sandbox's environment rule
//! refuses credentials and loader variables, and an empty value unsets.

use serde_json::json;

use super::super::tests::Temp;
use super::super::ToolContext;
use crate::history::{DenialKind, ToolCall};
use crate::tools::testkit::call;

fn ok(call: &ToolCall) -> &str {
    assert!(call.ok, "{call:?}");
    call.result.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn a_set_variable_reaches_the_agents_later_commands_only() {
    let temp = Temp::new("set-env");
    let dev = ToolContext::new(&temp.0, "s1", "Dev", 1).unwrap();
    let mut reviewer = dev.clone();
    reviewer.agent = "Reviewer".to_string();
    let set = json!({"name": "PROBE_MODE", "value": "fast lane"});
    assert!(ok(&call(&dev, "shell_set_env", set).await).contains("PROBE_MODE"));

    let echo = json!({"command": "echo \"[$PROBE_MODE]\""});
    assert_eq!(
        ok(&call(&dev, "shell_run", echo.clone()).await).trim(),
        "[fast lane]"
    );
    let script = json!({"script": "printf '%s' \"$PROBE_MODE\""});
    assert_eq!(
        ok(&call(&dev, "shell_run_script", script).await),
        "fast lane"
    );
    let read = json!({"name": "PROBE_MODE"});
    assert_eq!(
        ok(&call(&dev, "shell_get_env", read.clone()).await),
        "fast lane"
    );
    // Another agent of the same run does not get it.
    assert_eq!(
        ok(&call(&reviewer, "shell_run", echo.clone()).await).trim(),
        "[]"
    );

    // An empty value unsets it, also an inherited one.
    ok(&call(
        &dev,
        "shell_set_env",
        json!({"name": "PROBE_MODE", "value": ""}),
    )
    .await);
    assert_eq!(ok(&call(&dev, "shell_run", echo).await).trim(), "[]");
    ok(&call(&dev, "shell_set_env", json!({"name": "HOME", "value": ""})).await);
    let home = json!({"command": "echo \"[${HOME-unset}]\""});
    assert_eq!(ok(&call(&dev, "shell_run", home).await).trim(), "[unset]");
}

#[tokio::test]
async fn credentials_loader_variables_and_fuseraft_s_own_are_refused() {
    let temp = Temp::new("set-env-refused");
    let ctx = ToolContext::new(&temp.0, "s1", "Dev", 1).unwrap();
    for (name, kind) in [
        ("GITHUB_TOKEN", DenialKind::Credentials),
        ("OPENAI_API_KEY", DenialKind::Credentials),
        ("db_password", DenialKind::Credentials),
        ("LD_PRELOAD", DenialKind::Sandbox),
        ("LD_LIBRARY_PATH", DenialKind::Sandbox),
        ("DYLD_INSERT_LIBRARIES", DenialKind::Sandbox),
        ("GIT_TERMINAL_PROMPT", DenialKind::Sandbox),
        ("TMPDIR", DenialKind::Sandbox),
        ("BAD NAME", DenialKind::Sandbox),
    ] {
        let refused = call(&ctx, "shell_set_env", json!({"name": name, "value": "x"})).await;
        assert!(!refused.ok, "{name}: {refused:?}");
        assert_eq!(refused.denied, Some(kind), "{name}: {refused:?}");
    }
    let env = json!({"command": "env"});
    let seen = ok(&call(&ctx, "shell_run", env).await).to_string();
    assert!(
        !seen.contains("LD_PRELOAD") && !seen.contains("GITHUB_TOKEN"),
        "{seen}"
    );
    let missing = call(&ctx, "shell_set_env", json!({"name": "X"})).await;
    assert!(!missing.ok && missing.result.unwrap_or_default().contains("value"));
}

#[tokio::test]
async fn the_working_directory_is_where_commands_start() {
    let temp = Temp::new("cwd");
    let ctx = ToolContext::new(&temp.0, "s1", "Dev", 1).unwrap();
    let cwd = call(&ctx, "shell_get_working_directory", json!({})).await;
    let pwd = call(&ctx, "shell_run", json!({"command": "pwd -P"})).await;
    assert_eq!(ok(&cwd), ok(&pwd).trim());
    assert_eq!(ok(&cwd), temp.0.display().to_string());
}
