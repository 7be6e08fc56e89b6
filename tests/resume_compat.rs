//! The session format across releases, through the real binary: a session written by the
//! release before checkpoints were derived types (`fixtures/resume/v1/`, made by that binary
//! with `fixtures/resume/notes/` stopped after one turn, under the fixture's own session key)
//! resumes; the binary today writes the same bytes for the same run (ids, paths, times, MACs
//! and the keys added since aside, which that release's reader ignores); and a whole record
//! with a malformed field is refused naming the record and the field, while a torn end is
//! still ignored.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The session in `fixtures/resume/v1/`.
const ID: &str = "2f79d9f9";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/resume/v1")
}

/// A scratch dir holding the fixture's key (0600, as fuseraft keeps it) and an empty work dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-compat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("key")).unwrap();
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let key = dir.join("key/session.key");
    std::fs::copy(fixture().join("session.key"), &key).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("key"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    dir
}

/// `dir` with the fixture's session copied into its work dir.
fn with_fixture_session(name: &str) -> PathBuf {
    let dir = scratch(name);
    let sessions = dir.join("work/.fuseraft/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    for entry in std::fs::read_dir(fixture().join("sessions")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), sessions.join(entry.file_name())).unwrap();
    }
    dir
}

fn fuseraft(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env("FUSERAFT_SESSION_KEY", dir.join("key/session.key"))
        .output()
        .expect("the fuseraft binary runs")
}

fn exec(dir: &Path, extra: &[&str]) -> Output {
    let work = dir.join("work");
    let mut args = vec![
        "exec",
        "fixtures/resume/notes/config.yaml",
        "--replay",
        "fixtures/resume/notes/replay.yaml",
        "--work-dir",
        work.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    fuseraft(dir, &args)
}

fn summary(output: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    serde_json::from_slice(&output.stdout).expect("a JSON summary")
}

fn session_file(dir: &Path, id: &str, suffix: &str) -> PathBuf {
    dir.join(format!("work/.fuseraft/sessions/{id}{suffix}"))
}

#[test]
fn a_session_written_by_the_previous_release_resumes() {
    let dir = with_fixture_session("resume");
    let resumed = summary(&exec(&dir, &["--resume", ID]));
    assert_eq!(resumed["outcome"], "completed", "{resumed}");
    assert_eq!(resumed["turns"], 2, "{resumed}");
    let shown = fuseraft(
        &dir,
        &[
            "sessions",
            "show",
            ID,
            "--work-dir",
            dir.join("work").to_str().unwrap(),
        ],
    );
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let state: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    // The second turn read back the notes the previous release stored.
    let reply = state["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|message| message["Role"] == "assistant")
        .unwrap();
    assert_eq!(
        reply["ToolCalls"][0]["Result"],
        "[plan]  tags: release  turn: 0\nthree steps"
    );
    assert_eq!(state["Machine"]["Notes"]["Global"][0]["Key"], "owner");
    let _ = std::fs::remove_dir_all(dir);
}

/// Keys added to the state records since that release, each an object: additions its
/// reader ignores (it reads no key it does not know), so they are left out of the comparison.
const ADDED_SINCE: &[&str] = &["AgentTotals"];

/// `text` without the member `key` (an object value; compact or pretty JSON) wherever it is.
fn without_member(text: &str, key: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&format!("\"{key}\":")) {
        // From the comma before the key to the end of its object.
        let comma = rest[..at].trim_end().len() - 1;
        let open = at + rest[at..].find('{').expect("an object");
        let mut depth = 0;
        let mut end = open;
        for (offset, byte) in rest[open..].bytes().enumerate() {
            match byte {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = open + offset + 1;
                break;
            }
        }
        out.push_str(&rest[..comma]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `text` with the values of `keys` (strings, in compact or pretty JSON) and the session id
/// replaced by placeholders, and the keys added since left out: what differs between two
/// runs of the same session.
fn normalized(text: &str, id: &str) -> String {
    let mut text = text.replace(id, "SESSION");
    for key in ADDED_SINCE {
        text = without_member(&text, key);
    }
    for key in [
        "Mac",
        "StartedAt",
        "LastUpdatedAt",
        "ConfigPath",
        "WorkingDirectory",
    ] {
        for open in [format!("\"{key}\":\""), format!("\"{key}\": \"")] {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find(&open) {
                let value = at + open.len();
                let end = value + rest[value..].find('"').expect("a closing quote");
                out.push_str(&rest[..value]);
                out.push_str(key);
                rest = &rest[end..];
            }
            out.push_str(rest);
            text = out;
        }
    }
    text
}

#[test]
fn the_binary_today_writes_the_bytes_the_previous_release_wrote() {
    let dir = scratch("bytes");
    let first = summary(&exec(&dir, &["--task", "Keep notes.", "--max-turns", "1"]));
    assert_eq!(first["outcome"], "max_turns", "{first}");
    let id = first["session_id"].as_str().unwrap();
    for suffix in [".messages.jsonl", ".json", ".config.fir"] {
        let old =
            std::fs::read_to_string(fixture().join(format!("sessions/{ID}{suffix}"))).unwrap();
        let new = std::fs::read_to_string(session_file(&dir, id, suffix)).unwrap();
        assert_eq!(normalized(&new, id), normalized(&old, ID), "{suffix}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The fixture session with its MACs removed (so that it can be edited; resuming it then
/// needs `--allow-unverified`), the log passed through `edit`.
fn unauthenticated(name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let dir = with_fixture_session(name);
    let log = session_file(&dir, ID, ".messages.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let stripped: String = text
        .lines()
        .map(|line| match line.find(",\"Mac\":\"") {
            Some(at) if line.starts_with("{\"Checkpoint\":") => format!("{}}}\n", &line[..at]),
            _ => format!("{line}\n"),
        })
        .collect();
    std::fs::write(&log, edit(&stripped)).unwrap();
    let snapshot = session_file(&dir, ID, ".json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&snapshot).unwrap()).unwrap();
    state.as_object_mut().unwrap().remove("Mac");
    std::fs::write(&snapshot, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    dir
}

#[test]
fn a_malformed_field_is_refused_naming_the_record_and_the_field() {
    let cases: [(&str, &str, &str, &str); 4] = [
        (
            "\"TurnIndex\":0,",
            "\"TurnIndex\":\"zero\",",
            "the message record at line 1 of",
            "field `TurnIndex`: invalid type: string \"zero\", expected u32",
        ),
        (
            "\"Succeeded\":true",
            "\"Succeeded\":1",
            "the message record at line 3 of",
            "field `ToolCalls[0].Succeeded`: invalid type: integer `1`, expected a boolean",
        ),
        (
            "\"Turn\":1,",
            "\"Turn\":-1,",
            "the state record at line 4 of",
            "field `Machine.Turn`: invalid value: integer `-1`, expected u32",
        ),
        (
            "\"ConfigDigest\":\"",
            "\"ConfigDigest\":7,\"Was\":\"",
            "the state record at line 2 of",
            "field `ConfigDigest`: invalid type: integer `7`, expected a string",
        ),
    ];
    for (from, to, record, field) in cases {
        let dir = unauthenticated("malformed", |log| log.replacen(from, to, 1));
        let output = exec(&dir, &["--resume", ID, "--allow-unverified"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{to}: {stderr}");
        assert!(
            stderr.contains(&format!("session `{ID}` is malformed: {record}"))
                && stderr.contains(field),
            "{to}: {stderr}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
    // Unedited, the same session resumes (so the edit is what was refused).
    let dir = unauthenticated("unedited", str::to_string);
    let resumed = summary(&exec(&dir, &["--resume", ID, "--allow-unverified"]));
    assert_eq!(resumed["outcome"], "completed", "{resumed}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_malformed_message_after_the_last_record_is_a_torn_end() {
    let dir = with_fixture_session("torn");
    let log = session_file(&dir, ID, ".messages.jsonl");
    let mut text = std::fs::read(&log).unwrap();
    let whole = text.len();
    text.extend_from_slice(b"{\"AgentName\":\"Keeper\",\"Role\":\"robot\",\"Content\":\"half\"}\n");
    std::fs::write(&log, &text).unwrap();
    let resumed = summary(&exec(&dir, &["--resume", ID]));
    assert_eq!(resumed["outcome"], "completed", "{resumed}");
    // The resume cut the torn line off before appending.
    let after = std::fs::read(&log).unwrap();
    assert_eq!(&after[..whole], &text[..whole]);
    assert!(!String::from_utf8_lossy(&after).contains("robot"));
    let _ = std::fs::remove_dir_all(dir);
}
