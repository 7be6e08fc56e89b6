//! A command's process tree is contained: daemons end with the command, on timeout, and
//! when fuseraft is killed.

use super::*;

/// Pids of processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) && !cmdline.contains("fuseraft") {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}

fn wait_until_gone(needle: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = processes_with(needle);
        if found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn daemons_do_not_outlive_their_command() {
    let dir = scratch("daemons");
    let tag = 900_000 + std::process::id() % 90_000;
    let setsid = format!("setsid sleep {tag}1 >/dev/null 2>&1 < /dev/null &");
    let nohup = format!("nohup sleep {tag}2 >/dev/null 2>&1 &");
    let job = format!("set -m; (sleep {tag}3 &) ; disown -a; true");
    let timed_out = format!("setsid sleep {tag}4 >/dev/null 2>&1 & sleep 100");
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        "",
        &[
            (&setsid, None),
            (&nohup, None),
            (&job, None),
            (&timed_out, Some(1.0)),
        ],
    );
    let started = Instant::now();
    let results = run_ok(&dir);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(
        results[&timed_out].1.starts_with("[TIMEOUT]"),
        "{:?}",
        results[&timed_out]
    );
    for n in 1..=4 {
        let left = wait_until_gone(&format!("sleep {tag}{n}"));
        assert!(left.is_empty(), "a daemon outlived its command: {left:?}");
    }
}

#[test]
fn killing_fuseraft_kills_the_command_tree() {
    let dir = scratch("kill");
    let tag = 800_000 + std::process::id() % 90_000;
    let command = format!("sleep {tag}1 & setsid sleep {tag}2 >/dev/null 2>&1 & wait");
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        "",
        &[(&command, None)],
    );
    let mut child = exec_command(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with(&format!("sleep {tag}2")).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for n in 1..=2 {
        let left = wait_until_gone(&format!("sleep {tag}{n}"));
        assert!(
            left.is_empty(),
            "the tree outlived a killed fuseraft: {left:?}"
        );
    }
}

#[test]
fn background_jobs_end_with_their_run() {
    let dir = scratch("background-jobs");
    let tag = 800_000 + std::process::id() % 90_000;
    let config = "Orchestration:\n  Name: Jobs\n  Security:\n    Permissions: { command_execution: allow }\n  Agents:\n    - Name: Dev\n      Instructions: Work.\n      Plugins: [Shell]\n  Selection: { Type: sequential }\n  Termination: { Type: maxiterations, MaxIterations: 1 }\n";
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let calls = json!([
        {"name": "shell_run_background", "args": {"command": format!("touch started1; sleep {tag}1")}},
        {"name": "shell_run_background", "args": {"command": format!("setsid sleep {tag}2 & touch started2; wait")}},
        {"name": "shell_run", "args": {"command": "while [ ! -e started1 ] || [ ! -e started2 ]; do sleep 0.02; done"}},
    ]);
    let replay = json!({"replies": {"Dev": [{"tool_calls": calls, "text": "Done."}]}});
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
    let output = exec(&dir);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(dir.join("work/started1").exists() && dir.join("work/started2").exists());
    for n in 1..=2 {
        let left = wait_until_gone(&format!("sleep {tag}{n}"));
        assert!(
            left.is_empty(),
            "a background job outlived its run: {left:?}"
        );
    }
}
