//! The peers' agent-turn workload (`../shared/bench/common.py`), ported byte for byte:
//! the agents, the keyword routes, the script of who speaks when, and the ~1.95 KB replies.
//! Shared by the `exec` and `provider` benches.

pub const AGENTS: [&str; 4] = ["Planner", "Developer", "Tester", "Reviewer"];

/// keyword -> next agent (`None` ends the run).
pub const KEYWORD_TARGET: [(&str, Option<&str>); 6] = [
    ("HANDOFF TO DEVELOPER", Some("Developer")),
    ("HANDOFF TO TESTER", Some("Tester")),
    ("HANDOFF TO REVIEWER", Some("Reviewer")),
    ("BUGS FOUND", Some("Developer")),
    ("REVISION REQUIRED", Some("Developer")),
    ("APPROVED", None),
];

pub const UNIT: [(&str, &str); 10] = [
    ("Developer", "HANDOFF TO TESTER"),
    ("Tester", "BUGS FOUND"),
    ("Developer", "HANDOFF TO TESTER"),
    ("Tester", "BUGS FOUND"),
    ("Developer", "HANDOFF TO TESTER"),
    ("Tester", "HANDOFF TO REVIEWER"),
    ("Reviewer", "REVISION REQUIRED"),
    ("Developer", "HANDOFF TO TESTER"),
    ("Tester", "HANDOFF TO REVIEWER"),
    ("Reviewer", "REVISION REQUIRED"), // APPROVED on the last turn of the run
];

pub const FILLER_LINES: [&str; 42] = [
    "## Summary",
    "",
    "I reviewed the current state of the task and the previous messages in the thread.",
    "The plan below is intentionally verbose so that each message is roughly two kilobytes,",
    "which is a realistic size for a single agent reply in a coding workflow.",
    "",
    "- Step 1: read the specification and list the acceptance criteria.",
    "- Step 2: implement the parser changes and keep the public API stable.",
    "- Step 3: extend the unit tests; note that bugs found earlier must stay fixed.",
    "- Step 4: run the whole suite and collect coverage for the changed modules.",
    "- Step 5: prepare a short changelog entry for the reviewer.",
    "",
    "Note: do not write approved until all tests pass; a handoff to tester is expected next",
    "only if the build is green. Revision required comments from the reviewer are addressed.",
    "",
    "```python",
    "def parse(line: str) -> Token:",
    "    head, _, tail = line.partition(':')",
    "    return Token(kind=head.strip(), value=tail.strip())",
    "```",
    "",
    "| file | change | risk |",
    "| --- | --- | --- |",
    "| parser.rs | new token kinds | low |",
    "| vm.rs | routing table | medium |",
    "| tests/routing.rs | 12 new cases | low |",
    "",
    "Open questions: none blocking. Residual risk is low and documented above.",
    "The next agent should start from the checklist and report back with evidence.",
    "*Confidence*: high. _Estimated effort_: small.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip.",
    "Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu.",
    "Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt.",
    "",
    "### Evidence",
    "",
    "- `cargo test --workspace`: 412 passed, 0 failed, 3 ignored (2.31 s).",
    "- `cargo clippy -- -D warnings`: clean.",
    "- Benchmarks unchanged within noise; no new allocations on the hot path.",
    "- Manual check of the three example workflows in `examples/`: all route as documented.",
    "",
];

/// `"\n".join(_FILLER_LINES) + "\n"`.
pub fn filler() -> String {
    FILLER_LINES.join("\n") + "\n"
}

/// `(agent, keyword)` for 0-based turn `turn` of a `total`-turn run (`expected_step`).
pub fn expected_step(turn: usize, total: usize) -> (&'static str, &'static str) {
    if turn == 0 {
        return ("Planner", "HANDOFF TO DEVELOPER");
    }
    let (agent, keyword) = UNIT[(turn - 1) % 10];
    if turn == total - 1 {
        assert_eq!(agent, "Reviewer");
        return (agent, "APPROVED");
    }
    (agent, keyword)
}

/// Python's `str.title()` for these ASCII keywords: capitalise each word.
fn title(keyword: &str) -> String {
    let mut out = String::with_capacity(keyword.len());
    let mut start = true;
    for ch in keyword.chars() {
        if ch.is_ascii_alphabetic() {
            out.push(if start {
                ch.to_ascii_uppercase()
            } else {
                ch.to_ascii_lowercase()
            });
            start = false;
        } else {
            out.push(ch);
            start = true;
        }
    }
    out
}

/// The keyword line in one of four styles chosen by turn (`_styled`).
pub fn styled(keyword: &str, turn: usize) -> String {
    match turn % 4 {
        0 => keyword.to_string(),
        1 => format!("**{keyword}**"),
        2 => format!("_{}_", title(keyword)),
        _ => format!("  __{}__  ", keyword.to_lowercase()),
    }
}

/// The scripted reply of turn `turn` (`fake_model`).
pub fn reply(filler: &str, turn: usize, total: usize) -> String {
    let (agent, keyword) = expected_step(turn, total);
    format!(
        "### {agent} (turn {turn})\n\n{filler}{}\n",
        styled(keyword, turn)
    )
}

pub fn target(keyword: &str) -> Option<&'static str> {
    KEYWORD_TARGET
        .iter()
        .find(|(known, _)| *known == keyword)
        .expect("a known keyword")
        .1
}
