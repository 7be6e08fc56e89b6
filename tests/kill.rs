//! Kill test: a `fuseraft exec` replay run killed with SIGKILL at pseudo-random points and
//! resumed from its checkpoint ends with the same history as an uninterrupted run: no
//! completed turn is lost or repeated, and the session file is loadable after every kill.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const TURNS: usize = 40;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-kill-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A ping-pong between two agents for `turns` turns. With `tools`, each turn runs a short
/// shell command (so kills land mid-turn) and writes a file (a side effect a repeated turn
/// would redo); without, every turn is redoable, so the session log may hold a few before
/// writing them (`src/session/log.rs`).
fn write_ping_pong(dir: &Path, turns: usize, tools: bool) -> (PathBuf, PathBuf) {
    let (name, plugins) = match tools {
        true => ("tools", ", Plugins: [Shell, FileSystem]"),
        false => ("plain", ""),
    };
    let config = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &config,
        format!("Orchestration:\n  Name: PingPong\n  Agents:\n    - {{ Name: Ping, Instructions: ping{plugins} }}\n    - {{ Name: Pong, Instructions: pong{plugins} }}\n  Selection:\n    Type: keyword\n    Routes:\n      - {{ Keyword: TO PONG, Agent: Pong, SourceAgents: [Ping] }}\n      - {{ Keyword: TO PING, Agent: Ping, SourceAgents: [Pong] }}\n      - {{ Keyword: FINISHED, Agent: Pong, SourceAgents: [Pong] }}\n  Termination:\n    MaxIterations: 100000\n"),
    )
    .unwrap();
    let mut replay = String::from("replies:\n");
    for (agent, next) in [("Ping", "TO PONG"), ("Pong", "TO PING")] {
        replay.push_str(&format!("  {agent}:\n"));
        for turn in 0..turns / 2 {
            let last = agent == "Pong" && turn == turns / 2 - 1;
            let keyword = if last { "FINISHED" } else { next };
            replay.push_str(&match tools {
                true => format!("    - text: \"{agent} turn {turn}\\n{keyword}\"\n      tool_calls:\n        - {{ name: shell_run, args: {{ command: \"sleep 0.02\" }} }}\n        - {{ name: write_file, args: {{ path: \"log/{agent}-{turn}.txt\", content: \"{turn}\" }} }}\n"),
                false => format!("    - \"{agent} turn {turn}\\n{keyword}\"\n"),
            });
        }
    }
    let replay_path = dir.join(format!("{name}-replay.yaml"));
    std::fs::write(&replay_path, replay).unwrap();
    (config, replay_path)
}

fn exec(config: &Path, replay: &Path, work: &Path, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(config)
        .args([
            "--replay",
            replay.to_str().unwrap(),
            "--work-dir",
            work.to_str().unwrap(),
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fuseraft runs")
}

/// The session's id and its whole checkpoint as `fuseraft sessions show` assembles it (the
/// state file plus the message log): it must load after every kill.
/// Whether a session file exists in `work` (the run has made its first write).
fn has_session(work: &Path) -> bool {
    std::fs::read_dir(work.join(".fuseraft/sessions")).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name().to_string_lossy().to_string();
            name.ends_with(".json") && !name.starts_with('.')
        })
    })
}

fn only_session(work: &Path) -> Option<(String, serde_json::Value)> {
    let dir = work.join(".fuseraft/sessions");
    let entry = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok())
        .find(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.ends_with(".json") && !name.starts_with('.')
        })?;
    let id = entry
        .file_name()
        .to_string_lossy()
        .trim_end_matches(".json")
        .to_string();
    let shown = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "sessions",
            "show",
            &id,
            "--work-dir",
            work.to_str().unwrap(),
        ])
        .output()
        .expect("fuseraft runs");
    assert!(
        shown.status.success(),
        "the session does not load after a kill: {}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let json = serde_json::from_slice(&shown.stdout).expect("sessions show prints JSON");
    Some((id, json))
}

/// The history as (agent, content, tool names) triples: what "the same run" means.
fn history(checkpoint: &serde_json::Value) -> Vec<(String, String, Vec<String>)> {
    checkpoint["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let tools = m["ToolCalls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    // A failed call says why, so that a mismatch explains itself.
                    let why = match c["Succeeded"].as_bool() {
                        Some(false) => format!(" ({})", c["Result"].as_str().unwrap_or("")),
                        _ => String::new(),
                    };
                    format!("{}:{}{why}", c["Name"].as_str().unwrap(), c["Succeeded"])
                })
                .collect();
            (
                m["AgentName"].as_str().unwrap().to_string(),
                m["Content"].as_str().unwrap().to_string(),
                tools,
            )
        })
        .collect()
}

/// The session of an uninterrupted run of the workflow in `dir/straight`, which completes.
fn uninterrupted(config: &Path, replay: &Path, dir: &Path, task: &str) -> serde_json::Value {
    let straight = dir.join("straight");
    let status = exec(config, replay, &straight, &["--task", task])
        .wait()
        .unwrap();
    assert!(status.success());
    let (_, reference) = only_session(&straight).expect("a session file");
    assert_eq!(reference["Machine"]["Outcome"], "completed");
    reference
}

/// Runs the workflow in `work` and kills it (SIGKILL) 8 times at deterministic
/// pseudo-random points `window` ms after each start, resuming after each kill, then
/// resumes it until it completes.
fn kill_and_finish(config: &Path, replay: &Path, work: &Path, window: std::ops::Range<u64>) {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut kills = 0;
    let mut first = true;
    while kills < 8 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let after = window.start + seed % (window.end - window.start);
        let mut args = vec!["--task", "play"];
        let id;
        if !first {
            let (session, checkpoint) =
                only_session(work).expect("a session file survives the kill");
            if checkpoint["Machine"]["Outcome"] == "completed" {
                break;
            }
            id = session;
            args = vec!["--resume", &id];
        }
        let mut child = exec(config, replay, work, &args);
        if first {
            // The kill points count from the session's start: on a loaded machine the
            // process may take longer than the window to reach its first write.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while !has_session(work) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        std::thread::sleep(Duration::from_millis(after));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        first = false;
        kills += 1;
    }
    loop {
        let (id, checkpoint) = only_session(work).expect("a session file");
        if checkpoint["Machine"]["Outcome"] == "completed" {
            break;
        }
        let status = exec(config, replay, work, &["--resume", &id])
            .wait()
            .unwrap();
        assert!(status.success(), "the resumed run completes");
    }
}

#[test]
fn killed_and_resumed_runs_end_like_an_uninterrupted_run() {
    let dir = scratch("kill");
    let (config, replay) = write_ping_pong(&dir, TURNS, true);

    let reference = uninterrupted(&config, &replay, &dir, "play");
    assert_eq!(reference["Machine"]["Turn"], TURNS as u64);
    let expected = history(&reference);

    let work = dir.join("killed");
    kill_and_finish(&config, &replay, &work, 20..270);
    assert_finished_as(&work, TURNS, &expected);
    for turn in 0..TURNS / 2 {
        for agent in ["Ping", "Pong"] {
            assert!(
                work.join(format!("log/{agent}-{turn}.txt")).exists(),
                "turn {turn} of {agent} did its work"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A fan-out over four branches of different lengths; every branch first appends a line to
/// `runs/<agent>.log` (a side effect a repeated branch would repeat), then writes one file a
/// round. Delta's first round waits while the work dir holds a file `hold`.
fn write_fork_workflow(dir: &Path) -> (PathBuf, PathBuf) {
    let config = dir.join("fork.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Name: FanOut\n  Agents:\n    - { Name: Lead, Instructions: lead }\n    - { Name: Alpha, Instructions: a, Plugins: [Shell, FileSystem] }\n    - { Name: Beta, Instructions: b, Plugins: [Shell, FileSystem] }\n    - { Name: Gamma, Instructions: c, Plugins: [Shell, FileSystem] }\n    - { Name: Delta, Instructions: d, Plugins: [Shell, FileSystem] }\n  Selection:\n    Type: statemachine\n    StateMachine:\n      Initial: Plan\n      States:\n        Plan:\n          Agent: Lead\n          Transitions:\n            - { To: Review, Signal: PLANNED, Parallel: true, Targets: [A, B, C, D], Merge: { Strategy: union } }\n        A: { Agent: Alpha, Transitions: [ { To: Review } ] }\n        B: { Agent: Beta, Transitions: [ { To: Review } ] }\n        C: { Agent: Gamma, Transitions: [ { To: Review } ] }\n        D: { Agent: Delta, Transitions: [ { To: Review } ] }\n        Review:\n          Agent: Lead\n          Transitions:\n            - { To: Done, Signal: FINISHED }\n        Done:\n          Terminal: true\n  Termination: { Type: maxiterations, MaxIterations: 6 }\n",
    )
    .unwrap();
    let mut replay = String::from(
        "replies:\n  Lead:\n    - text: \"plan\\nPLANNED\"\n    - text: \"reviewed\\nFINISHED\"\n",
    );
    for (agent, rounds) in [("Alpha", 1), ("Beta", 2), ("Gamma", 3), ("Delta", 2)] {
        replay.push_str(&format!("  {agent}:\n"));
        for round in 0..rounds {
            replay.push_str("    - tool_calls:\n");
            if round == 0 {
                replay.push_str(&format!(
                    "        - {{ name: shell_run, args: {{ command: \"mkdir -p runs && echo run >> runs/{agent}.log\" }} }}\n"
                ));
                if agent == "Delta" {
                    replay.push_str(
                        "        - { name: shell_run, args: { command: \"while [ -e hold ]; do sleep 0.05; done\" } }\n",
                    );
                }
            }
            replay.push_str(&format!(
                "        - {{ name: write_file, args: {{ path: \"log/{agent}-{round}.txt\", content: \"{round}\" }} }}\n"
            ));
        }
        replay.push_str(&format!("    - text: \"{agent} done\"\n"));
    }
    let replay_path = dir.join("fork-replay.yaml");
    std::fs::write(&replay_path, replay).unwrap();
    (config, replay_path)
}

/// The finished branches a session's checkpoint keeps while its fork is under way.
fn kept_branches(checkpoint: &serde_json::Value) -> Vec<String> {
    checkpoint["Machine"]["Fork"]["Done"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|branch| branch["AgentName"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_fork_killed_mid_way_keeps_its_finished_branches_and_reruns_the_others() {
    let dir = scratch("fork");
    let (config, replay) = write_fork_workflow(&dir);

    let reference = uninterrupted(&config, &replay, &dir, "build");
    let expected = history(&reference);

    // Delta waits on `hold`: the run is killed once the other three branches are kept.
    let work = dir.join("killed");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("hold"), "").unwrap();
    let mut child = exec(&config, &replay, &work, &["--task", "build"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let id = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the three short branches never finished"
        );
        std::thread::sleep(Duration::from_millis(50));
        if let Some((id, checkpoint)) = only_session(&work) {
            if kept_branches(&checkpoint).len() == 3 {
                break id;
            }
        }
    };
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    let (_, killed) = only_session(&work).expect("the session survives the kill");
    let mut kept = kept_branches(&killed);
    kept.sort();
    assert_eq!(
        kept,
        ["Alpha", "Beta", "Gamma"],
        "the finished branches are kept"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("runs/Delta.log")).unwrap(),
        "run\n",
        "Delta had started"
    );
    std::fs::remove_file(work.join("hold")).unwrap();

    // The replay has no reply to spare: a kept branch run again would exhaust its queue.
    let status = exec(&config, &replay, &work, &["--resume", &id])
        .wait()
        .unwrap();
    assert!(status.success(), "the resumed run completes");
    let (_, resumed) = only_session(&work).unwrap();
    assert_eq!(resumed["Machine"]["Outcome"], "completed");
    assert_eq!(resumed["Machine"]["Turn"], reference["Machine"]["Turn"]);
    assert_eq!(
        history(&resumed),
        expected,
        "the resumed history equals the uninterrupted one"
    );
    for agent in ["Alpha", "Beta", "Gamma"] {
        assert_eq!(
            std::fs::read_to_string(work.join(format!("runs/{agent}.log"))).unwrap(),
            "run\n",
            "the finished branch of {agent} ran once"
        );
    }
    // Delta's side effects before the kill stay; its re-run starts over and sees them.
    assert_eq!(
        std::fs::read_to_string(work.join("runs/Delta.log")).unwrap(),
        "run\nrun\n",
        "the unfinished branch ran again from its start"
    );
    for (agent, rounds) in [("Alpha", 1), ("Beta", 2), ("Gamma", 3), ("Delta", 2)] {
        for round in 0..rounds {
            assert!(
                work.join(format!("log/{agent}-{round}.txt")).exists(),
                "round {round} of {agent} did its work"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The one session in `work` ended at `turns` with the uninterrupted run's history: no turn
/// lost or repeated across the kills and resumes.
fn assert_finished_as(work: &Path, turns: usize, expected: &[(String, String, Vec<String>)]) {
    let (_, resumed) = only_session(work).unwrap();
    assert_eq!(
        resumed["Machine"]["Turn"], turns as u64,
        "no turn lost or repeated"
    );
    assert_eq!(
        history(&resumed),
        expected,
        "the resumed history equals the uninterrupted one"
    );
}

#[test]
fn killed_runs_of_redoable_turns_resume_without_losing_or_repeating_a_turn() {
    const PLAIN_TURNS: usize = 3000;
    let dir = scratch("plain");
    let (config, replay) = write_ping_pong(&dir, PLAIN_TURNS, false);
    let reference = uninterrupted(&config, &replay, &dir, "play");
    assert_eq!(reference["Machine"]["Turn"], PLAIN_TURNS as u64);

    let work = dir.join("killed");
    kill_and_finish(&config, &replay, &work, 5..120);
    assert_finished_as(&work, PLAIN_TURNS, &history(&reference));
    let _ = std::fs::remove_dir_all(dir);
}

/// A turn that ran a tool is not redoable: its checkpoint is in the session log before the
/// next turn starts, never held (`src/session/log.rs`). Pong's tool marks that the second turn
/// has started, then waits to be killed; by then Ping's turn must be in the log.
#[test]
fn a_turn_that_ran_a_tool_is_saved_before_the_next_turn_starts() {
    let dir = scratch("saved");
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Name: Saved\n  Agents:\n    - { Name: Ping, Instructions: ping, Plugins: [FileSystem] }\n    - { Name: Pong, Instructions: pong, Plugins: [Shell] }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: TO PONG, Agent: Pong, SourceAgents: [Ping] }\n",
    )
    .unwrap();
    let replay = dir.join("replay.yaml");
    std::fs::write(
        &replay,
        "replies:\n  Ping:\n    - text: \"Ping wrote its file\\nTO PONG\"\n      tool_calls:\n        - { name: write_file, args: { path: ping.txt, content: ping } }\n  Pong:\n    - tool_calls:\n        - { name: shell_run, args: { command: \"touch started && sleep 30\" } }\n",
    )
    .unwrap();
    let work = dir.join("work");
    let mut child = exec(&config, &replay, &work, &["--task", "play"]);
    let started = work.join("started");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !started.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let log = std::fs::read_dir(work.join(".fuseraft/sessions"))
        .unwrap()
        .filter_map(|entry| entry.ok())
        .find(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .ends_with(".messages.jsonl")
        })
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap());
    let _ = child.kill();
    let _ = child.wait();
    assert!(started.exists(), "Pong's turn started");
    let log = log.expect("a session log");
    assert!(
        log.contains("Ping wrote its file"),
        "Ping's turn is not in the log while Pong's runs:\n{log}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
