//! The `lossless` compaction summary (`Compaction.Mode: lossless`, and the first part of
//! `hybrid`): built with no model call from what the run holds for certain: the state
//! about to run, the counters, the turns and compactions so far, the route markers and
//! `handoff` keywords of the compacted messages, the files their tool calls changed, the
//! commands they ran, each tool's outcomes, and the newest change-log entries the driver
//! read. The same run state gives the same text, so a replayed run compacts the same way.

use std::collections::BTreeMap;

use fuseraft_compiler::ir::{Category, Tool};

use super::Machine;
use crate::history::{Message, Role};

/// Change-log entries the reconstruction asks the driver for (`changes_recent:N`).
pub(super) const CHANGE_LOG_ENTRIES: usize = 20;
/// Route markers and routing keywords listed, newest last.
const ROUTES_LISTED: usize = 12;
/// Paths and commands listed in each list, newest last.
const ITEMS_LISTED: usize = 40;

/// The context source the reconstruction reads the change log through.
pub(super) fn change_log_source() -> fuseraft_compiler::ir::ContextSource {
    fuseraft_compiler::ir::ContextSource {
        source: format!("changes_recent:{CHANGE_LOG_ENTRIES}"),
        max_chars: 6000,
        label: Some(format!(
            "CHANGE LOG (the session's newest {CHANGE_LOG_ENTRIES} entries)"
        )),
    }
}

impl Machine<'_> {
    /// The reconstruction standing in for `history[1..through]`, with the change-log
    /// block(s) the driver read.
    pub(super) fn reconstruction(&self, through: usize, change_log: &[String]) -> String {
        let history = &self.run.history[..through.min(self.run.history.len())];
        let compacted = history.get(1..).unwrap_or_default();
        let last_turn = compacted.last().map_or(0, |message| message.turn);
        let mut text = format!(
            "[context reconstruction through turn {last_turn}: built from the run's state and change log, not written by a model]\n"
        );
        let state = self.program.state(self.run.state);
        text.push_str(&format!("\nSTATE MACHINE POSITION: {}\n", state.name));
        text.push_str(&format!(
            "TURNS COMPLETED: {}; MESSAGES REPLACED BY THIS RECONSTRUCTION: {}\n",
            self.run.turn,
            compacted.len()
        ));
        let counters: Vec<String> = self
            .program
            .counters
            .iter()
            .zip(&self.run.counters)
            .map(|(counter, value)| format!("{} = {value}", counter.name))
            .collect();
        if !counters.is_empty() {
            text.push_str(&format!("COUNTERS: {}\n", counters.join(", ")));
        }
        let routes = routes(compacted);
        if !routes.is_empty() {
            text.push_str("\nROUTING (newest last):\n");
            for route in routes {
                text.push_str(&format!("  {route}\n"));
            }
        }
        let work = Work::of(compacted);
        for (title, items) in [
            ("FILES CHANGED", &work.files),
            ("COMMANDS RUN", &work.commands),
        ] {
            if items.is_empty() {
                continue;
            }
            text.push_str(&format!("\n{title} (newest last):\n"));
            let skip = items.len().saturating_sub(ITEMS_LISTED);
            if skip > 0 {
                text.push_str(&format!("  ({skip} older left out)\n"));
            }
            for item in &items[skip..] {
                text.push_str(&format!("  {item}\n"));
            }
        }
        if !work.outcomes.is_empty() {
            text.push_str("\nTOOL OUTCOMES:\n");
            for (tool, (ok, failed)) in &work.outcomes {
                text.push_str(&format!("  {tool}: {ok} ok, {failed} failed\n"));
            }
        }
        for block in change_log {
            text.push('\n');
            text.push_str(block.trim_end());
            text.push('\n');
        }
        text.push_str(&format!(
            "\nRESUMPTION NOTE: the messages before this were compacted. The lists above are taken from the run's records, not remembered; the change log is the ground truth of what was written and run. Continue from state `{}`.",
            state.name
        ));
        text
    }
}

impl Machine<'_> {
    /// The `intent` summary of `history[1..through]`: every tool call in order, applied
    /// (✓) or failed (✗), with the turn and agent, and a note not to redo the applied ones.
    pub(super) fn operations(&self, through: usize) -> String {
        let compacted = self.run.history[..through.min(self.run.history.len())]
            .get(1..)
            .unwrap_or_default();
        let first = compacted.first().map_or(0, |message| message.turn);
        let last = compacted.last().map_or(0, |message| message.turn);
        let mut lines = Vec::new();
        for message in compacted {
            for call in &message.tool_calls {
                let name = Tool::resolve(&call.name)
                    .map_or_else(|| call.name.clone(), |tool| tool.name().to_string());
                let target = ["path", "source", "command"]
                    .iter()
                    .find_map(|key| call.arg(key))
                    .map(|target| format!(" → \"{}\"", first_line(target)))
                    .unwrap_or_default();
                let mark = if call.ok { "✓" } else { "✗" };
                lines.push(format!(
                    "  {mark} {name}{target} (turn {}, {})",
                    message.turn, message.agent
                ));
            }
        }
        let skip = lines.len().saturating_sub(ITEMS_LISTED * 5);
        let mut text = format!(
            "[operations of turns {first}–{last}, listed from the run's tool calls, not written by a model]\n\nOPERATIONS (chronological):\n"
        );
        if lines.is_empty() {
            text.push_str("  (no tool calls in these turns)\n");
        } else if skip > 0 {
            text.push_str(&format!("  ({skip} older left out)\n"));
        }
        for line in &lines[skip..] {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str("\nRESUMPTION NOTE: do not repeat the operations marked ✓ (applied); retry those marked ✗ (failed) if the task still needs them.");
        text
    }
}

/// The orchestrator's route markers and the `handoff` keywords of the messages, newest last.
fn routes(messages: &[Message]) -> Vec<String> {
    let mut routes: Vec<String> = messages
        .iter()
        .filter_map(|message| match message.role {
            Role::User
                if message.agent == "orchestrator"
                    && message.content.starts_with("[fuseraft: ") =>
            {
                Some(format!(
                    "turn {}: {}",
                    message.turn,
                    first_line(&message.content)
                ))
            }
            Role::Assistant => message.handoff().map(|keyword| {
                format!(
                    "turn {}: {} called handoff `{keyword}`",
                    message.turn, message.agent
                )
            }),
            _ => None,
        })
        .collect();
    let skip = routes.len().saturating_sub(ROUTES_LISTED);
    routes.drain(..skip);
    routes
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// What the tool calls of the compacted messages did.
#[derive(Default)]
struct Work {
    /// `wrote a.rs (turn 3, Developer)`, one per call that changed a path.
    files: Vec<String>,
    /// ``cargo test` → ok (turn 4, Tester)`.
    commands: Vec<String>,
    /// Per tool: calls that succeeded and calls that failed.
    outcomes: BTreeMap<String, (u32, u32)>,
}

impl Work {
    fn of(messages: &[Message]) -> Work {
        let mut work = Work::default();
        for message in messages {
            for call in &message.tool_calls {
                let tool = Tool::resolve(&call.name);
                let name = tool.map_or_else(|| call.name.clone(), |tool| tool.name().to_string());
                let tally = work.outcomes.entry(name.clone()).or_default();
                if call.ok {
                    tally.0 += 1;
                } else {
                    tally.1 += 1;
                }
                let by = format!("(turn {}, {})", message.turn, message.agent);
                let status = if call.ok { "" } else { " [failed]" };
                match tool.and_then(Tool::category) {
                    Some(Category::FileWriteDelete) => {
                        let paths: Vec<&str> = ["path", "source", "destination"]
                            .iter()
                            .filter_map(|key| call.arg(key))
                            .collect();
                        if !paths.is_empty() {
                            work.files
                                .push(format!("{name} {}{status} {by}", paths.join(" → ")));
                        }
                    }
                    Some(Category::CommandExecution) => {
                        if let Some(command) = call.arg("command").or_else(|| call.arg("script")) {
                            let command = first_line(command);
                            work.commands.push(format!("`{command}`{status} {by}"));
                        }
                    }
                    _ => {}
                }
            }
        }
        work
    }
}
