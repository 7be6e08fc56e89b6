//! The run events' contract: every `EventKind` round-trips through its JSON line form
//! unchanged (`fixtures/events/payloads.jsonl`, one line per payload shape), and every
//! variant has its entry in `docs/events.md`.

use std::collections::BTreeSet;
use std::path::Path;

use fuseraft_vm::event::{Event, EventKind};

fn repo_file(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn every_event_kind_round_trips_byte_for_byte() {
    let fixture = repo_file("fixtures/events/payloads.jsonl");
    let mut seen = BTreeSet::new();
    for (number, line) in fixture.lines().enumerate() {
        let at = format!("payloads.jsonl:{}", number + 1);
        let kind: EventKind =
            serde_json::from_str(line).unwrap_or_else(|error| panic!("{at}: {error}"));
        let written = serde_json::to_string(&kind).unwrap();
        assert_eq!(written, line, "{at}: written back differently");
        let again: EventKind = serde_json::from_str(&written).unwrap();
        assert_eq!(again, kind, "{at}: read back differently");
        // The events-file line carries the same `event_type` and `payload`.
        let event = Event::new(2, Some("Dev"), kind);
        let full = event.to_json_line("2026-11-23T00:00:00.000Z", "cafe");
        let expected = format!(
            "{{\"ts\":\"2026-11-23T00:00:00.000Z\",\"session\":\"cafe\",\"turn\":2,\"agent\":\"Dev\",{}",
            &line[1..]
        );
        assert_eq!(full, expected, "{at}");
        assert!(event.trace_line().ends_with(&event.payload_json()), "{at}");
        seen.insert(event.name());
    }
    let all: BTreeSet<&str> = EventKind::ALL.iter().copied().collect();
    let missing: Vec<&&str> = all.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "no payload in the fixture for {missing:?}"
    );
}

#[test]
fn a_payload_with_a_wrong_field_is_refused() {
    for line in [
        r#"{"event_type":"turn_start","payload":{"state":7}}"#,
        r#"{"event_type":"turn_start","payload":{}}"#,
        r#"{"event_type":"no_such_event","payload":{}}"#,
        r#"{"event_type":"signal_detected","payload":{"signal":"GO","via":"telepathy"}}"#,
    ] {
        assert!(serde_json::from_str::<EventKind>(line).is_err(), "{line}");
    }
}

#[test]
fn every_event_kind_is_documented() {
    let doc = repo_file("docs/events.md");
    // An event's entry is a heading of its own: "### `event_type`".
    let documented: BTreeSet<&str> = doc
        .lines()
        .filter_map(|line| line.strip_prefix("### `"))
        .filter_map(|rest| rest.strip_suffix('`'))
        .collect();
    let all: BTreeSet<&str> = EventKind::ALL.iter().copied().collect();
    let undocumented: Vec<&&str> = all.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "docs/events.md has no `### \\`name\\`` entry for {undocumented:?}"
    );
    let unknown: Vec<&&str> = documented.difference(&all).collect();
    assert!(
        unknown.is_empty(),
        "docs/events.md documents events that do not exist: {unknown:?}"
    );
    let version = format!("Schema version: **{}**", fuseraft_vm::event::SCHEMA_VERSION);
    assert!(
        doc.contains(&version),
        "docs/events.md must say `{version}`"
    );
}
