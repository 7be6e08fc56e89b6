//! `exec --resume ID --from-turn N` (rewind): a 10-turn replayed session forked at turn 4
//! with a changed instruction shares turns 1–4 byte for byte, diverges after, names its
//! origin, prints how the config changed, and leaves the original byte for byte as it was and
//! verifying; `sessions list` shows the family; an edited original forks nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/rewind")
        .join(name)
}

fn fuseraft(work: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .args(["--work-dir", work.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn session_files(work: &Path, id: &str) -> Vec<Vec<u8>> {
    let dir = work.join(".fuseraft/sessions");
    ["json", "messages.jsonl", "config.fir"]
        .iter()
        .map(|suffix| std::fs::read(dir.join(format!("{id}.{suffix}"))).unwrap())
        .collect()
}

/// The message lines of a session log (its state records left out).
fn message_lines(log: &[u8]) -> Vec<&[u8]> {
    log.split_inclusive(|byte| *byte == b'\n')
        .filter(|line| !line.starts_with(b"{\"Checkpoint\":"))
        .collect()
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no summary: {}", String::from_utf8_lossy(&output.stderr)))
}

#[test]
fn a_fork_at_turn_4_shares_four_turns_diverges_after_and_leaves_the_original() {
    let work = std::env::temp_dir().join(format!("fuseraft-rewind-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let config = work.join("config.yaml");
    std::fs::copy(fixture("config.yaml"), &config).unwrap();
    let replay = fixture("replay.yaml");
    let (config_arg, replay_arg) = (config.to_str().unwrap(), replay.to_str().unwrap());
    let original = json(&fuseraft(
        &work,
        &[
            "exec", config_arg, "--task", "Load it.", "--replay", replay_arg, "--json",
        ],
    ));
    assert_eq!(
        (original["turns"].as_u64(), original["outcome"].as_str()),
        (Some(10), Some("completed"))
    );
    let id = original["session_id"].as_str().unwrap().to_string();
    let before = session_files(&work, &id);

    // The Loader's instruction changes; the revised replay answers the turns after the fork.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("Load the batch.", "Load the batch; check it twice."),
    )
    .unwrap();
    let revised = fixture("replay-revised.yaml");
    let forked = fuseraft(
        &work,
        &[
            "exec",
            config_arg,
            "--resume",
            &id,
            "--from-turn",
            "4",
            "--replay",
            revised.to_str().unwrap(),
            "--json",
        ],
    );
    let stderr = String::from_utf8_lossy(&forked.stderr).to_string();
    let summary = json(&forked);
    assert_eq!(summary["outcome"], "completed", "{stderr}");
    assert_eq!(
        summary["turns"], 6,
        "turns 5 and 6 ran after the four shared: {stderr}"
    );
    let fork = summary["session_id"].as_str().unwrap().to_string();
    assert_ne!(fork, id);
    assert!(
        stderr.contains(&format!(
            "session `{fork}` starts from session `{id}` after turn 4"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("first difference, at line"),
        "the config's change is shown: {stderr}"
    );
    assert!(stderr.contains("check it twice"), "{stderr}");

    // Turns 1-4: the same message lines, byte for byte; then the fork's own.
    let old_log = &before[1];
    let new_log =
        std::fs::read(work.join(format!(".fuseraft/sessions/{fork}.messages.jsonl"))).unwrap();
    let (old_lines, new_lines) = (message_lines(old_log), message_lines(&new_log));
    let shared = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let turn_4 = old_lines
        .iter()
        .take_while(|line| !String::from_utf8_lossy(line).contains("\"TurnIndex\":4"))
        .count();
    // Turns 1-4 and the route the fourth took (its marker opens turn 5's lines).
    assert!(
        turn_4 > 4 && (turn_4..=turn_4 + 1).contains(&shared),
        "{shared} lines shared, {turn_4} in turns 1-4"
    );
    assert!(
        String::from_utf8_lossy(new_lines[shared]).contains("Extracted batch 3, checked twice.")
    );
    assert!(String::from_utf8_lossy(old_lines[shared]).contains("Extracted batch 3."));

    // The original is untouched and verifies; the fork verifies and names its origin.
    assert_eq!(session_files(&work, &id), before);
    let shown = fuseraft(&work, &["sessions", "show", &id]);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let shown = fuseraft(&work, &["sessions", "show", &fork]);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let state: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(
        state["ForkedFrom"],
        serde_json::json!({"Session": id, "Turn": 4})
    );

    // `sessions list` shows the family.
    let list = fuseraft(&work, &["sessions", "list", "--all"]);
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    let line_of = |id: &str| {
        list.lines()
            .find(|line| line.starts_with(id))
            .unwrap_or("")
            .to_string()
    };
    assert!(
        line_of(&fork).ends_with(&format!("(from {id} after turn 4)")),
        "{list}"
    );
    assert!(
        line_of(&id).ends_with(&format!("(forked: {fork} at 4)")),
        "{list}"
    );

    // A turn the session never reached is refused, naming the turns it has.
    let refused = fuseraft(
        &work,
        &[
            "exec",
            config_arg,
            "--resume",
            &id,
            "--from-turn",
            "11",
            "--replay",
            replay_arg,
        ],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr)
        .contains("has no saved state after turn 11 (it saved turns up to 10"));

    // A forged original: a message edited in its log is found, and no session is made.
    let log = work.join(format!(".fuseraft/sessions/{id}.messages.jsonl"));
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(
        &log,
        text.replacen("Extracted batch 1.", "Extracted batch 9.", 1),
    )
    .unwrap();
    let sessions = || {
        std::fs::read_dir(work.join(".fuseraft/sessions"))
            .unwrap()
            .count()
    };
    let before = sessions();
    let forged = fuseraft(
        &work,
        &[
            "exec",
            config_arg,
            "--resume",
            &id,
            "--from-turn",
            "2",
            "--replay",
            replay_arg,
        ],
    );
    assert_eq!(forged.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&forged.stderr).contains("was altered"),
        "{}",
        String::from_utf8_lossy(&forged.stderr)
    );
    assert_eq!(sessions(), before, "a forged session forks nothing");
    let _ = std::fs::remove_dir_all(work);
}
