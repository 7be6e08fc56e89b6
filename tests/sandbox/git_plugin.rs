//! The Git plugin through the real binary, in the OS sandbox: its writes work where the
//! policy grants them (approved) while `.git` stays read-only to `shell_run`; a repository
//! planted with hooks, an fsmonitor, a pager and filters runs none of them; a push without
//! the network is refused.

use super::*;

#[test]
fn the_git_plugin_writes_in_the_sandbox_and_a_planted_repository_runs_nothing() {
    let dir = scratch("git-plugin");
    let work = repo(&dir);
    git(&work, &["config", "user.name", "Tester"]);
    git(&work, &["config", "user.email", "tester@example.com"]);
    // Everything that could run a program writes a marker inside the work dir, which the
    // sandbox lets a command write: only the hardening keeps it absent.
    let marker = work.join("ran");
    let run = format!("touch {}", marker.display());
    for (key, value) in [
        ("core.fsmonitor", format!("{run}; echo")),
        ("core.pager", format!("{run}; cat")),
        ("diff.external", run.clone()),
        ("filter.evil.clean", format!("{run}; cat")),
        ("filter.evil.smudge", format!("{run}; cat")),
        ("diff.evil.textconv", format!("{run}; cat")),
    ] {
        git(&work, &["config", key, &value]);
    }
    std::fs::write(work.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
    for hook in [
        "pre-commit",
        "commit-msg",
        "post-commit",
        "post-checkout",
        "pre-push",
    ] {
        let path = work.join(".git/hooks").join(hook);
        std::fs::write(&path, format!("#!/bin/sh\n{run}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(work.join("feature.txt"), "new\n").unwrap();

    let config = "Orchestration:\n  Name: GitPlugin\n  Security:\n    Permissions: { git_write: require-approval, network_api: block, command_execution: allow }\n  Agents:\n    - Name: Dev\n      Instructions: Work.\n      Plugins: [Git, Shell]\n  Selection: { Type: sequential }\n  Termination: { Type: maxiterations, MaxIterations: 1 }\n";
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    // A background job keeps trying to write `.git` while the Git tools write it: it lives
    // in its own mount namespace, where `.git` stays read-only.
    let job = "for i in $(seq 1 150); do (echo '#' >> .git/config) 2>/dev/null && touch wrote; sleep 0.01; done";
    let calls = json!([
        {"name": "shell_run_background", "args": {"command": job}},
        {"name": "git_status", "args": {}},
        {"name": "git_diff", "args": {}},
        {"name": "git_add", "args": {"paths": "feature.txt .gitattributes"}},
        {"name": "git_commit", "args": {"message": "add feature"}},
        {"name": "git_create_branch", "args": {"branch_name": "topic"}},
        {"name": "git_show", "args": {"commit_ref": "HEAD"}},
        {"name": "shell_run", "args": {"command": "echo '[core]' >> .git/config"}},
        {"name": "git_push", "args": {"remote": "origin", "branch": "topic"}},
    ]);
    let replay = json!({"replies": {"Dev": [{"tool_calls": calls, "text": "Done."}]}});
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
    let events = dir.join("events.jsonl");
    // fuseraft's own `GIT_*` never reach git: were they passed on, git would use another
    // repository and run the marker through an fsmonitor.
    let output = exec_command(&dir)
        .arg("--events")
        .arg(&events)
        .env("GIT_DIR", dir.join("elsewhere"))
        .env(
            "GIT_CONFIG_PARAMETERS",
            format!("'core.fsmonitor'='{run}; echo'"),
        )
        .env("GIT_EXTERNAL_DIFF", &run)
        .output()
        .expect("the fuseraft binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        !text(&output.stderr).contains("OS sandbox is unavailable"),
        "{}",
        text(&output.stderr)
    );

    assert!(
        !marker.exists(),
        "git ran a program planted in the repository"
    );
    assert!(
        !work.join("wrote").exists(),
        "a background job wrote .git while a Git tool had it writable"
    );
    assert!(results(&dir).contains_key(job), "the job was started");
    assert_eq!(
        commits(&work),
        2,
        "the approved commit was made in the sandbox"
    );
    assert_eq!(
        git(&work, &["log", "-1", "--format=%s"]).trim(),
        "add feature"
    );
    assert_eq!(git(&work, &["branch", "--show-current"]).trim(), "topic");
    let results = results(&dir);
    let (shell_ok, shell_output) = &results["echo '[core]' >> .git/config"];
    assert!(!shell_ok, "shell_run wrote .git: {shell_output}");
    assert!(results["git commit --message=add feature"].0);
    let events = std::fs::read_to_string(&events).unwrap();
    let push = events
        .lines()
        .find(|line| line.contains("\"tool_blocked\"") && line.contains("git_push"))
        .unwrap_or_else(|| panic!("no blocked push in {events}"));
    assert!(push.contains("needs the network"), "{push}");
}
