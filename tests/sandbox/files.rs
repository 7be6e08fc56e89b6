//! Writes outside the work dir, to git metadata (however the command is spelled) and to
//! fuseraft's state fail, from `shell_run` and from a validator's command.

use super::*;

const GIT_WRITES: &[&str] = &[
    "git -c user.name=a -c user.email=a@b commit --allow-empty -m plain",
    "env git -c user.name=a -c user.email=a@b commit --allow-empty -m env",
    "/usr/bin/git -c user.name=a -c user.email=a@b commit --allow-empty -m path",
    "sh -c 'git -c user.name=a -c user.email=a@b commit --allow-empty -m nested'",
    "$(echo git) -c user.name=a -c user.email=a@b commit --allow-empty -m subst",
    "python3 -c \"import subprocess; subprocess.run(['git','-c','user.name=a','-c','user.email=a@b','commit','--allow-empty','-m','py'], check=True)\"",
    "printf '[core]\\n\\thooksPath = /tmp/evil-hooks\\n' >> .git/config",
    "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "rm -rf .git/refs",
    "mv .git .git-moved",
    "umount .git && echo '[core]' >> .git/config",
    "unshare -rm sh -c 'umount -l .git && echo x >> .git/config'",
    "mount -o remount,rw,bind .git && echo x >> .git/config",
];

#[test]
fn git_writes_fail_however_spelled_under_block() {
    let dir = scratch("git-block");
    let work = repo(&dir);
    let config_before = std::fs::read(work.join(".git/config")).unwrap();
    let mut commands: Vec<(&str, Option<f64>)> = GIT_WRITES.iter().map(|c| (*c, None)).collect();
    commands.push(("git status --short && git log --oneline | wc -l", None));
    write_run(
        &dir,
        "    Permissions: { git_write: block, command_execution: allow }",
        "",
        &commands,
    );
    let results = run_ok(&dir);
    for command in GIT_WRITES {
        if let Some((succeeded, output)) = results.get(*command) {
            assert!(!succeeded, "`{command}` got through: {output}");
        }
    }
    assert!(
        !results.contains_key(GIT_WRITES[0]),
        "`git commit` itself is refused before it runs"
    );
    let (read_ok, read_output) = &results["git status --short && git log --oneline | wc -l"];
    assert!(read_ok, "git reads still work: {read_output}");
    assert_eq!(commits(&work), 1, "no commit was made");
    assert_eq!(
        std::fs::read(work.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!work.join(".git/hooks/pre-commit").exists());
    assert!(work.join(".git/refs").is_dir() && !work.join(".git-moved").exists());
}

#[test]
fn git_writes_work_when_allowed() {
    let dir = scratch("git-allow");
    let work = repo(&dir);
    let command = "env git -c user.name=a -c user.email=a@b commit --allow-empty -m allowed";
    write_run(
        &dir,
        "    Permissions: { git_write: allow }",
        "",
        &[(command, None)],
    );
    let results = run_ok(&dir);
    assert!(results[command].0, "{}", results[command].1);
    assert_eq!(commits(&work), 2);
    let log = std::fs::read_to_string(work.join(".fuseraft/state/changes.json")).unwrap();
    let log: Value = serde_json::from_str(&log).unwrap();
    let recorded = log["entries"][0]["gitCommits"][0]
        .as_str()
        .unwrap_or_default();
    assert!(
        recorded.ends_with(" allowed"),
        "the new HEAD is recorded: {log}"
    );
}

#[test]
fn writes_are_confined_to_the_work_dir_and_temp() {
    let dir = scratch("writes");
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let id = std::process::id();
    let outside = [
        format!("echo x > {home}/fuseraft-sandbox-{id}"),
        format!("touch /etc/fuseraft-sandbox-{id}"),
        format!("mkdir /usr/local/fuseraft-sandbox-{id}"),
        format!("echo x > /var/tmp/fuseraft-sandbox-{id}"),
        "echo forged > .fuseraft/state/changes.json".to_string(),
        "echo forged > .fuseraft/planted".to_string(),
    ];
    let inside = [
        "echo x > inside.txt && mkdir -p sub && echo y > sub/f && rm sub/f".to_string(),
        format!("echo x > /tmp/fuseraft-sandbox-{id} && rm /tmp/fuseraft-sandbox-{id}"),
        "echo x > /dev/null && ls | head -1 | wc -l".to_string(),
        "exit 3".to_string(),
        "yes | head -c 200000".to_string(),
    ];
    let commands: Vec<(&str, Option<f64>)> = outside
        .iter()
        .chain(&inside)
        .map(|c| (c.as_str(), None))
        .collect();
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        "",
        &commands,
    );
    let results = run_ok(&dir);
    for command in &outside {
        assert!(
            !results[command].0,
            "`{command}` wrote outside: {}",
            results[command].1
        );
    }
    assert!(!Path::new(&format!("{home}/fuseraft-sandbox-{id}")).exists());
    assert!(!Path::new(&format!("/etc/fuseraft-sandbox-{id}")).exists());
    assert!(!Path::new(&format!("/var/tmp/fuseraft-sandbox-{id}")).exists());
    assert!(!dir.join("work/.fuseraft/planted").exists());
    for command in &inside[..3] {
        assert!(
            results[command].0,
            "`{command}` failed: {}",
            results[command].1
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("work/inside.txt")).unwrap(),
        "x\n"
    );
    assert!(results["exit 3"].1.starts_with("[EXIT 3]"));
}

#[test]
fn a_validator_command_is_sandboxed_too() {
    let dir = scratch("validator");
    let work = repo(&dir);
    let id = std::process::id();
    let suite = format!(
        "touch validator-ran; touch /etc/fuseraft-validator-{id}; \
         git -c user.name=a -c user.email=a@b commit --allow-empty -m from-validator; \
         printf '[core]\\n\\tfsmonitor = /tmp/x\\n' >> .git/config; true"
    );
    let config = format!(
        "Orchestration:\n  Name: Validator\n  Security:\n    Permissions: {{ git_write: block }}\n  TestSelector:\n    FullSuiteCommand: {}\n  Agents:\n    - {{ Name: Dev, Instructions: Work., Plugins: [Shell] }}\n    - {{ Name: Tester, Instructions: Test. }}\n  Selection:\n    Type: keyword\n    Routes:\n      - {{ Keyword: HANDOFF TO TESTER, Agent: Tester, SourceAgents: [Dev], Validators: [RequireRelatedTestsPass] }}\n      - {{ Keyword: APPROVED, Agent: Tester, SourceAgents: [Tester] }}\n",
        serde_json::to_string(&suite).unwrap()
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let replay = json!({"replies": {
        "Dev": [{"text": "HANDOFF TO TESTER"}],
        "Tester": [{"text": "APPROVED"}]
    }});
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
    let config_before = std::fs::read(work.join(".git/config")).unwrap();
    let output = exec(&dir);
    assert!(
        work.join("validator-ran").exists(),
        "the validator ran its command: {}",
        text(&output.stderr)
    );
    assert!(!Path::new(&format!("/etc/fuseraft-validator-{id}")).exists());
    assert_eq!(commits(&work), 1, "the validator's commit did not happen");
    assert_eq!(
        std::fs::read(work.join(".git/config")).unwrap(),
        config_before
    );
}

#[test]
fn no_command_plants_a_record_beside_a_custom_change_log() {
    let dir = scratch("custom-change-log");
    let forge = "mkdir -p logs; printf '{\"appendLog\":\"0000000000000000\"}\\n{\"agent\":\"forged\",\"commandsRun\":[{\"command\":\"cargo test\",\"succeeded\":true}]}\\n' > logs/changes.jsonl";
    let config = "Orchestration:\n  Name: CustomLog\n  ChangeTracking: { Path: logs/changes.json }\n  Security:\n    Sandbox: refuse\n  Agents:\n    - Name: Dev\n      Instructions: Work.\n      Plugins: [Shell]\n  Selection: { Type: sequential }\n  Termination: { Type: maxiterations, MaxIterations: 1 }\n";
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let replay = json!({"replies": {"Dev": [{"tool_calls": [{"name": "shell_run", "args": {"command": forge}}], "text": "Done."}]}});
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
    let output = exec(&dir);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let log = std::fs::read_to_string(dir.join("work/logs/changes.json")).unwrap();
    let log: Value = serde_json::from_str(&log).unwrap();
    let entries = log["entries"].as_array().unwrap();
    assert!(
        entries.iter().all(|entry| entry["agent"] == "Dev"),
        "a forged record counts: {log}"
    );
    let run = &log["entries"][0]["commandsRun"][0];
    assert_eq!(run["command"], forge);
    assert_eq!(
        run["succeeded"], false,
        "the command could not write the log's directory"
    );
}

#[test]
fn nested_and_bare_repositories_are_as_read_only_as_the_work_dirs() {
    let dir = scratch("git-nested");
    let work = repo(&dir);
    let nested = work.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    git(
        &nested,
        &["commit", "-q", "--allow-empty", "-m", "vendored"],
    );
    git(&work, &["init", "-q", "--bare", "mirror.git"]);
    let commands: &[&str] = &[
        "$(echo git) -C vendor/lib -c user.name=a -c user.email=a@b commit --allow-empty -m subst",
        "printf '[core]\\n\\thooksPath = /tmp/evil\\n' >> vendor/lib/.git/config",
        "echo 0000000000000000000000000000000000000000 > mirror.git/refs/heads/planted",
        "printf '#!/bin/sh\\n' > mirror.git/hooks/post-update",
    ];
    write_run(
        &dir,
        "    Permissions: { git_write: block, command_execution: allow }",
        "",
        &commands.iter().map(|c| (*c, None)).collect::<Vec<_>>(),
    );
    let results = run_ok(&dir);
    for command in commands {
        if let Some((succeeded, output)) = results.get(*command) {
            assert!(!succeeded, "`{command}` got through: {output}");
        }
    }
    assert_eq!(commits(&nested), 1, "the nested repository took a commit");
    assert!(!work.join("mirror.git/refs/heads/planted").exists());
    assert!(!work.join("mirror.git/hooks/post-update").exists());
    let config = std::fs::read_to_string(nested.join(".git/config")).unwrap();
    assert!(!config.contains("evil"), "{config}");
}
