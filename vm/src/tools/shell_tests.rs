//! Tests of the Shell tools beyond `shell_run`, on real processes: the script tool,
//! background jobs (status, output, kill, the bound, death with the run), the environment
//! and `which`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::jobs::MAX_RUNNING;
use super::tests::Temp;
use super::*;
use crate::changes::ChangeLog;
use crate::tools::testkit::call;

fn text(call: &ToolCall) -> &str {
    call.result.as_deref().unwrap_or_default()
}

fn context(temp: &Temp) -> ToolContext {
    ToolContext::new(&temp.0, "s1", "Dev", 2).unwrap()
}

/// Whether the process whose pid is in `file` is alive (waits up to 5 s for the file).
fn alive(file: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            if let Ok(pid) = text.trim().parse::<i32>() {
                break pid;
            }
        }
        assert!(Instant::now() < deadline, "no pid in {}", file.display());
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // A zombie (`Z`) is dead too.
    !status.is_empty() && !status.contains(") Z ")
}

/// Polls `shell_get_job_status` until its text no longer starts with `[RUNNING]`.
async fn finished(ctx: &ToolContext, id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = call(ctx, "shell_get_job_status", json!({"job_id": id})).await;
        if !text(&status).starts_with("[RUNNING]") {
            return text(&status).to_string();
        }
        assert!(Instant::now() < deadline, "job {id} still running");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_script_runs_whole_with_the_shells_prefixes() {
    let temp = Temp::new("script");
    let ctx = context(&temp);
    let script = "#!/bin/bash\nset -e\necho one\necho two >&2\nfor i in 1 2; do echo \"n$i\"; done > out.txt\n";
    let ran = call(&ctx, "shell_run_script", json!({"script": script})).await;
    assert!(ran.ok, "{}", text(&ran));
    assert_eq!(text(&ran), "one\ntwo\n");
    assert_eq!(temp.read("out.txt"), "n1\nn2\n");
    let failed = call(
        &ctx,
        "shell_run_script",
        json!({"script": "echo before\nfalse\necho never"}),
    )
    .await;
    assert_eq!(
        text(&failed),
        "before\nnever\n",
        "no `set -e`: bash goes on"
    );
    let exit = call(&ctx, "Shell-shell_run_script", json!({"script": "exit 3"})).await;
    assert_eq!(text(&exit), "[EXIT 3]");
    let slow = call(
        &ctx,
        "shell_run_script",
        json!({"script": "sleep 5", "timeout_seconds": 0.3}),
    )
    .await;
    assert!(
        text(&slow).starts_with("[TIMEOUT] after"),
        "{}",
        text(&slow)
    );
    let empty = call(&ctx, "shell_run_script", json!({"script": " "})).await;
    assert_eq!(
        text(&empty),
        "[ERROR] tool `shell_run_script` needs a non-empty `script`"
    );
    let log = ChangeLog::load(&ctx.change_log).unwrap();
    assert_eq!(log.entries[0].commands_run[0].command, script);
}

#[tokio::test]
async fn background_jobs_report_their_status_and_output() {
    let temp = Temp::new("jobs");
    let ctx = context(&temp);
    let started = call(
        &ctx,
        "shell_run_background",
        json!({"command": "echo first; sleep 0.2; echo second >&2"}),
    )
    .await;
    assert!(started.ok, "{}", text(&started));
    assert!(text(&started).starts_with("started background job `1`"));
    let status = finished(&ctx, "1").await;
    assert!(status.starts_with("[DONE] job `1` exited 0"), "{status}");
    assert!(status.contains("first\nsecond"), "{status}");
    let output = call(&ctx, "shell_get_job_output", json!({"job_id": "1"})).await;
    assert_eq!(text(&output), "first\nsecond\n");

    call(&ctx, "shell_run_background", json!({"command": "exit 4"})).await;
    let status = finished(&ctx, "2").await;
    assert!(status.starts_with("[EXIT 4] job `2` failed"), "{status}");

    let unknown = call(&ctx, "shell_get_job_status", json!({"job_id": "9"})).await;
    assert_eq!(
        text(&unknown),
        "[ERROR] there is no background job `9` in this run; the jobs are `1`, `2`"
    );
    let missing = call(&ctx, "shell_kill_job", json!({})).await;
    assert!(text(&missing).starts_with("[ERROR]"), "{}", text(&missing));

    let log = ChangeLog::load(&ctx.change_log).unwrap();
    let run = &log.entries[0].commands_run[0];
    assert_eq!(run.command, "echo first; sleep 0.2; echo second >&2");
    assert_eq!(run.output, "started as background job 1");
}

#[tokio::test]
async fn killing_a_job_ends_its_whole_tree() {
    let temp = Temp::new("jobs-kill");
    let ctx = context(&temp);
    let command = "sleep 100 & echo $! > child.pid; echo $$ > shell.pid; wait";
    call(&ctx, "shell_run_background", json!({"command": command})).await;
    assert!(alive(&temp.path("child.pid")) && alive(&temp.path("shell.pid")));
    let running = call(&ctx, "shell_get_job_status", json!({"job_id": "1"})).await;
    assert!(
        text(&running).starts_with("[RUNNING] job `1`"),
        "{}",
        text(&running)
    );
    let killed = call(&ctx, "shell_kill_job", json!({"job_id": "1"})).await;
    assert_eq!(text(&killed), "killed job `1`");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(&temp.path("child.pid")) {
        assert!(
            Instant::now() < deadline,
            "the job's child outlived the kill"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(finished(&ctx, "1").await.starts_with("[KILLED] job `1`"));
    let again = call(&ctx, "shell_kill_job", json!({"job_id": "1"})).await;
    assert_eq!(text(&again), "job `1` was already killed");
}

#[tokio::test]
async fn jobs_are_bounded_and_die_with_the_run() {
    let temp = Temp::new("jobs-bound");
    let ctx = context(&temp);
    for n in 0..MAX_RUNNING {
        let command = format!("echo $$ > job{n}.pid; sleep 100");
        let started = call(&ctx, "shell_run_background", json!({"command": command})).await;
        assert!(started.ok, "{}", text(&started));
    }
    let refused = call(&ctx, "shell_run_background", json!({"command": "true"})).await;
    assert!(!refused.ok);
    assert!(
        text(&refused).contains("8 background jobs are already running"),
        "{}",
        text(&refused)
    );
    for n in 0..MAX_RUNNING {
        assert!(alive(&temp.path(&format!("job{n}.pid"))));
    }
    // The run ends: its context (and every clone of its table) goes.
    drop(ctx);
    let deadline = Instant::now() + Duration::from_secs(5);
    for n in 0..MAX_RUNNING {
        while alive(&temp.path(&format!("job{n}.pid"))) {
            assert!(Instant::now() < deadline, "job {n} outlived its run");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn the_environment_is_the_commands_and_never_a_secret() {
    let temp = Temp::new("env");
    let ctx = context(&temp);
    let path = call(&ctx, "shell_get_env", json!({"name": "PATH"})).await;
    assert!(path.ok);
    assert_eq!(
        text(&path),
        std::env::var("PATH").unwrap_or_default(),
        "PATH is on the allow-list"
    );
    for secret in [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "db_password",
        "MY_SECRET_THING",
    ] {
        let denied = call(&ctx, "shell_get_env", json!({"name": secret})).await;
        assert!(!denied.ok);
        assert!(
            text(&denied).starts_with("[DENIED: credentials]"),
            "{}",
            text(&denied)
        );
    }
    // Off the allow-list: "not set", whatever fuseraft's own environment holds.
    let cargo = call(&ctx, "shell_get_env", json!({"name": "CARGO_PKG_NAME"})).await;
    assert!(text(&cargo).contains("is not set"), "{}", text(&cargo));
    let bad = call(&ctx, "shell_get_env", json!({"name": "A=B"})).await;
    assert!(text(&bad).starts_with("[ERROR]"), "{}", text(&bad));
}

#[tokio::test]
async fn which_finds_programs_on_the_commands_path() {
    let temp = Temp::new("which");
    let ctx = context(&temp);
    let bash = call(&ctx, "shell_which", json!({"program": "bash"})).await;
    assert!(bash.ok, "{}", text(&bash));
    assert!(text(&bash).ends_with("/bash") && text(&bash).starts_with('/'));
    let missing = call(&ctx, "shell_which", json!({"program": "no-such-program-x"})).await;
    assert!(!missing.ok);
    assert!(text(&missing).starts_with("[NOT FOUND]"));
    for path in ["/bin/sh", "../bash", ""] {
        let refused = call(&ctx, "shell_which", json!({"program": path})).await;
        assert!(text(&refused).starts_with("[ERROR]"), "{}", text(&refused));
    }
}

#[tokio::test]
async fn hostile_arguments_to_every_new_tool_are_results_never_panics() {
    let temp = Temp::new("hostile-args");
    let ctx = context(&temp);
    let shapes = [
        json!(null),
        json!(5),
        json!([]),
        json!("{not json"),
        json!({"paths": {}, "message": [1], "job_id": 3, "name": false, "program": {}}),
        json!({"repo_path": "../../etc", "directory": "/etc", "ref": "-p", "commit_ref": 7}),
        json!({"count": 1e300, "max_lines": -1, "staged": "yes", "mode": 4, "timeout_seconds": "soon"}),
        json!({"script": 5, "command": null, "target": "", "branch_name": "\u{0}"}),
    ];
    let new_tools = Tool::ALL.iter().filter(|tool| {
        tool.plugin() == Plugin::Git || (tool.plugin() == Plugin::Shell && **tool != Tool::ShellRun)
    });
    for tool in new_tools {
        for args in &shapes {
            let done = call(&ctx, tool.name(), args.clone()).await;
            let text = text(&done);
            assert!(!text.contains("internal error"), "{tool} {args}: {text}");
            assert!(!text.is_empty(), "{tool} {args}: an empty result");
        }
    }
}
