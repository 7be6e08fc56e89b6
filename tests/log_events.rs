//! `fuseraft log events`: an events file in words, one line per event; a line that is not an
//! event is reported with its number and skipped, never a panic; the filters.

use std::process::{Command, Output};

fn fuseraft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const LOG: &str = "fixtures/events/log.jsonl";

#[test]
fn every_event_kind_is_said_in_words() {
    // One line per payload shape of the events contract: none is skipped or left raw.
    let output = fuseraft(&["log", "events", "fixtures/events/payloads.jsonl"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "");
    let shown = text(&output.stdout);
    let lines = std::fs::read_to_string("fixtures/events/payloads.jsonl").unwrap();
    assert_eq!(shown.lines().count(), lines.lines().count());
    assert!(
        !shown.contains("event_type") && !shown.contains("\"payload\""),
        "{shown}"
    );
    insta::assert_snapshot!("log_events_payloads", shown);
}

#[test]
fn bad_lines_are_reported_by_number_and_skipped() {
    let output = fuseraft(&["log", "events", LOG]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a skipped line fails the command"
    );
    let err = text(&output.stderr);
    assert!(
        err.contains(&format!("warning: {LOG}:3: not a JSON object (")),
        "{err}"
    );
    assert!(
        err.contains(&format!("warning: {LOG}:4: not a JSON object (")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "warning: {LOG}:5: a `turn_start` event whose payload does not fit"
        )),
        "{err}"
    );
    // A bad value serde quotes in its reason (an unknown `outcome` carrying escapes) is
    // shown escaped: nothing draws on the terminal.
    assert!(
        err.contains(&format!("warning: {LOG}:10: a `session_end` event")),
        "{err}"
    );
    assert!(!err.contains(['\x1b', '\x07', '\r', '\u{9b}']), "{err:?}");
    assert_eq!(err.lines().count(), 4, "{err}");
    // The task's terminal escape is shown, not sent; the unknown event is named, not dropped.
    insta::assert_snapshot!("log_events_bad_lines", text(&output.stdout));
}

#[test]
fn filters_pick_a_session_event_types_and_the_last_events() {
    let output = fuseraft(&[
        "log",
        "events",
        LOG,
        "--session",
        "1f0c2d3e",
        "--event",
        "session_start",
        "--event",
        "session_end",
    ]);
    let shown = text(&output.stdout);
    assert_eq!(shown.lines().count(), 2, "{shown}");
    assert!(
        shown
            .lines()
            .next()
            .unwrap()
            .contains("dev-team started: Add a flag."),
        "{shown}"
    );
    assert!(shown.contains("completed after 2 turn(s)"), "{shown}");
    assert!(!shown.contains("Another run."), "{shown}");

    let last = text(&fuseraft(&["log", "events", LOG, "--last", "2"]).stdout);
    assert_eq!(last.lines().count(), 2, "{last}");
    assert!(
        last.starts_with("2026-11-23T08:00:00.000Z  turn 0  dev-team started: Another run."),
        "{last}"
    );

    // Standard input, as `tail -f events.jsonl | fuseraft log events -` reads it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["log", "events", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = std::fs::read_to_string(LOG)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), line.as_bytes()).unwrap();
    let piped = child.wait_with_output().unwrap();
    assert_eq!(
        text(&piped.stdout),
        "2026-11-23T07:00:01.000Z  turn 0  Developer: Developer → Tester on `HANDOFF TO TESTER`\n"
    );
}

#[test]
fn a_missing_file_or_a_session_id_is_a_clear_usage_error() {
    let output = fuseraft(&["log", "events", "no-such-events.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("cannot read the events file `no-such-events.jsonl`"));
    let output = fuseraft(&["log", "events", "1a2b3c4d"]);
    assert_eq!(output.status.code(), Some(2));
    let err = text(&output.stderr);
    assert!(
        err.contains("help: a session keeps no events of its own"),
        "{err}"
    );
    let output = fuseraft(&["log", "events", LOG, "--session", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("`nope` is not a session id"));
}
