//! Test fixtures for the validators: a temp work dir with real files, turn messages with
//! tool calls, and change logs in the shared on-disk format.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value as Json};

use crate::effect::{Check, CheckContext, CheckKind, CheckResult};
use crate::history::{Message, Role, ToolCall, Usage};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A unique work dir under the system temp dir, removed on drop.
pub(super) struct Fixture {
    dir: PathBuf,
    pub written: Vec<(String, String)>,
    pub session_id: String,
}

impl Fixture {
    pub(super) fn new(name: &str) -> Fixture {
        let dir = std::env::temp_dir().join(format!(
            "fuseraft-validate-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create fixture dir");
        Fixture {
            dir,
            written: Vec::new(),
            session_id: "s1".to_string(),
        }
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(super) fn with_setting(mut self, key: &str, value: &str) -> Fixture {
        self.written.push((key.to_string(), value.to_string()));
        self
    }

    pub(super) fn with_session(mut self, session: &str) -> Fixture {
        self.session_id = session.to_string();
        self
    }

    /// Writes a file under the work dir, creating parent dirs.
    pub(super) fn write(&self, rel: &str, text: &str) {
        let path = self.dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(path, text).expect("write fixture file");
    }

    /// Writes `value` as JSON at `rel`.
    pub(super) fn write_json(&self, rel: &str, value: &Json) {
        self.write(
            rel,
            &serde_json::to_string_pretty(value).expect("serialise"),
        );
    }

    /// Writes the change log at the default path, session `s1` active.
    pub(super) fn change_log(&self, entries: &[Json]) {
        self.write(crate::changes::DEFAULT_PATH, &change_log_json(entries));
    }

    /// The context of a check, its settings typed as a program's are: `setting` lines of
    /// a `.fir` program, parsed.
    pub(super) fn context(&self, messages: Vec<Message>) -> CheckContext {
        let mut text = String::from("fuseraft-ir 1\nprogram p origin tama\nentry s\n");
        for (key, value) in &self.written {
            text.push_str(&format!(
                "setting {} {}\n",
                Json::from(key.as_str()),
                Json::from(value.as_str())
            ));
        }
        text.push_str("state s layer 0\n  terminal end_now\n");
        let program = fuseraft_compiler::ir::parse(&text).expect("the fixture's settings parse");
        CheckContext {
            turn_messages: messages,
            validation: program.validation,
            sandbox: program.security.sandbox,
            permissions: Default::default(),
            session_id: self.session_id.clone(),
            turn: 7,
        }
    }

    pub(super) fn run(
        &self,
        kind: CheckKind,
        name: &str,
        params: &[(&str, &str)],
        messages: Vec<Message>,
    ) -> CheckResult {
        let params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let check = Check::new(kind, name, params);
        let confinement = crate::sandbox::Confinement::new(&self.dir, &[], &[]);
        super::run(&check, &self.context(messages), &self.dir, &confinement)
    }

    pub(super) fn validator(
        &self,
        name: &str,
        params: &[(&str, &str)],
        messages: Vec<Message>,
    ) -> CheckResult {
        self.run(CheckKind::Validator, name, params, messages)
    }

    pub(super) fn predicate(&self, name: &str, params: &[(&str, &str)]) -> CheckResult {
        self.run(CheckKind::Predicate, name, params, Vec::new())
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A change-log entry of session `s1`: files written and `(command, succeeded, output)`.
pub(super) fn entry(
    agent: &str,
    turn: u32,
    files: &[&str],
    commands: &[(&str, bool, &str)],
) -> Json {
    entry_with(agent, turn, files, commands, &[])
}

pub(super) fn entry_with(
    agent: &str,
    turn: u32,
    files: &[&str],
    commands: &[(&str, bool, &str)],
    commits: &[&str],
) -> Json {
    json!({
        "agent": agent,
        "turnIndex": turn,
        "timestamp": "2025-01-01T00:00:00Z",
        "sessionId": "s1",
        "filesWritten": files,
        "filesDeleted": [],
        "commandsRun": commands.iter().map(|(command, succeeded, output)| json!({
            "command": command, "succeeded": succeeded, "output": output,
        })).collect::<Vec<_>>(),
        "gitCommits": commits,
    })
}

pub(super) fn change_log_json(entries: &[Json]) -> String {
    serde_json::to_string_pretty(&json!({"activeSessionId": "s1", "entries": entries}))
        .expect("serialise")
}

pub(super) fn assistant(calls: Vec<ToolCall>) -> Message {
    assistant_text("", calls)
}

pub(super) fn assistant_text(text: &str, calls: Vec<ToolCall>) -> Message {
    Message {
        role: Role::Assistant,
        agent: "Agent".to_string(),
        content: text.into(),
        tool_calls: calls,
        turn: 7,
        usage: Usage::default(),
    }
}

pub(super) fn tool(name: &str, args: Json, result: &str, ok: bool) -> ToolCall {
    ToolCall {
        id: format!("call_{}", NEXT.fetch_add(1, Ordering::Relaxed)),
        name: name.to_string(),
        args,
        result: Some(result.to_string()),
        ok,
        denied: None,
    }
}

pub(super) fn shell(command: &str, output: &str) -> ToolCall {
    shell_with(command, output, true)
}

pub(super) fn shell_with(command: &str, output: &str, ok: bool) -> ToolCall {
    tool("shell_run", json!({"command": command}), output, ok)
}

pub(super) fn write_file(path: &str) -> ToolCall {
    tool(
        "write_file",
        json!({"path": path, "content": "x"}),
        "Wrote 1 bytes",
        true,
    )
}

#[track_caller]
pub(super) fn assert_pass(result: &CheckResult) {
    assert!(result.ok, "expected a pass, got: {}", result.error);
    assert!(result.error.is_empty());
}

#[track_caller]
pub(super) fn assert_fail(result: &CheckResult, needles: &[&str]) {
    assert!(!result.ok, "expected a failure, got a pass");
    for needle in needles {
        assert!(
            result.error.contains(needle),
            "error does not contain {needle:?}:\n{}",
            result.error
        );
    }
}
