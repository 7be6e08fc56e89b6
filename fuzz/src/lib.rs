//! Helpers shared by the fuzz targets: an in-memory file reader, the programs the VM target
//! runs, and a driver that answers every request of a `Machine` from fuzz bytes.
//!
//! Every target asserts "no panic" (libFuzzer reports a panic as a crash) plus the invariant
//! named in its file. See docs/reliability.md for the commands and the results.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fuseraft_compiler::ir::{self, Program, Target, Trigger};
use fuseraft_compiler::FileReader;
use fuseraft_vm::effect::{CheckResult, ModelReply, Request, Response};
use fuseraft_vm::history::{Message, ToolCall, Usage};
use fuseraft_vm::machine::{Machine, Options};
use libfuzzer_sys::arbitrary::{Result as ArbResult, Unstructured};
use serde_json::{json, Value as Json};

/// Files in memory: the compiler's own reader.
pub use fuseraft_compiler::MemoryFiles as Memory;

/// Serves `main` at its path and `include` at every other path (so `AgentFile:` includes,
/// whatever they name, read fuzz bytes too).
pub struct WithIncludes {
    pub main: (PathBuf, String),
    pub include: Option<String>,
}

impl FileReader for WithIncludes {
    fn read(&self, path: &Path) -> io::Result<String> {
        if path == self.main.0 {
            return Ok(self.main.1.clone());
        }
        self.include
            .clone()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not in memory"))
    }

    fn is_dir(&self, _path: &Path) -> bool {
        false
    }

    fn exists(&self, path: &Path) -> bool {
        path == self.main.0 || self.include.is_some()
    }
}

/// Splits fuzz bytes at the first `\0\0` (a separator libFuzzer's mutations find quickly).
pub fn split2(data: &[u8]) -> (&[u8], Option<&[u8]>) {
    match data.windows(2).position(|pair| pair == b"\0\0") {
        Some(at) => (&data[..at], Some(&data[at + 2..])),
        None => (data, None),
    }
}

/// What every compiled program must satisfy: its text form round-trips and its views and
/// analysis do not panic.
pub fn check_program(program: &Program) {
    let text = ir::print(program, &ir::PrintOptions::default());
    let back = ir::parse(&text)
        .unwrap_or_else(|error| panic!("printed IR does not parse: {error}\n{text}"));
    assert!(
        back == *program,
        "IR round trip changed the program:\n{text}"
    );
    let _ = ir::print(program, &ir::PrintOptions { elide_text: true });
    let _ = ir::to_json(program);
    let _ = ir::to_dot(program);
    let _ = ir::to_mermaid(program);
    let mut analysed = program.clone();
    analysed.analyse();
}

/// Every program under `fixtures/compile/ok/` and `fixtures/run/*/config.yaml` that
/// compiles, loaded once.
pub fn programs() -> &'static [Program] {
    static PROGRAMS: OnceLock<Vec<Program>> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
        let mut paths = Vec::new();
        for dir in ["compile/ok", "run"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() && path.join("config.yaml").exists() {
                    paths.push(path.join("config.yaml"));
                } else if path.is_file() || path.join("tama.toml").exists() {
                    paths.push(path);
                }
            }
        }
        paths.sort();
        paths
            .iter()
            .filter_map(|path| fuseraft_compiler::compile(path, &fuseraft::disk::Disk).program)
            .collect()
    })
}

/// Texts a reply may contain so that routing makes progress: every signal, finish key and
/// condition literal of the program.
pub fn words(program: &Program) -> Vec<String> {
    let mut words = vec![
        "{\"verdict\": \"approved\"}".to_string(),
        "{\"verdict\": \"revise\", \"review\": {\"blockers\": []}}".to_string(),
        "```json\n{\"status\": \"done\"}\n```".to_string(),
        "PASS".to_string(),
        "APPROVED".to_string(),
    ];
    for state in &program.states {
        for exit in &state.exits {
            match &exit.trigger {
                Trigger::Signal { text, .. } => words.push(text.clone()),
                Trigger::FinishKey(key) => words.push(key.clone()),
                Trigger::Cond { cond, .. } => words.push(cond.to_string()),
                _ => {}
            }
            if let Target::State(id) = exit.target {
                words.push(program.state(id).name.clone());
            }
        }
    }
    for agent in &program.agents {
        words.push(agent.name.clone());
    }
    words
}

const TOOL_NAMES: &[&str] = &[
    "handoff",
    "finish",
    "write_file",
    "read_file",
    "list_directory",
    "delete_file",
    "run_command",
    "shell",
    "FileSystem-write_file",
    "Shell-run",
    "",
];

/// Size caps for generated replies (the fuzz loop must stay fast).
pub struct Caps {
    /// The most bytes of one generated text (a reply, a tool result, a context block).
    pub text_bytes: usize,
    /// The most bytes of all the generated texts of one run together. Prompt assembly,
    /// checkpoints and the history check are linear in the history, so a run costs about
    /// steps × history: this total, not `text_bytes`, decides the speed of a target. Once a
    /// run has spent it, a repetition of words is cut down to one word (routing still makes
    /// progress); short texts are not cut.
    pub run_text_bytes: usize,
    pub tool_calls: usize,
    pub steps: usize,
}

/// Caps of the `vm` target. One reply can still be long (5000 lines of a signal, or more
/// than the 32,000 characters a prompt carries of one message, `MAX_MESSAGE_CHARS`), but a
/// run holds about two such replies, so that a run stays cheap (about steps × history).
/// Megabytes of reply are covered by
/// `tests/regressions.rs: a_reply_of_megabytes_is_kept_and_routed`.
pub const FUZZ_CAPS: Caps = Caps {
    text_bytes: 48 * 1024,
    run_text_bytes: 96 * 1024,
    tool_calls: 64,
    steps: 120,
};

fn small_string(u: &mut Unstructured<'_>) -> ArbResult<String> {
    let len = u.int_in_range(0..=24)?;
    let mut text = String::new();
    for _ in 0..len {
        text.push(u.arbitrary::<char>()?);
    }
    Ok(text)
}

/// A word of the program, an arbitrary string, or a repetition of words; `budget` is what is
/// left of the run's `run_text_bytes`.
fn text(
    u: &mut Unstructured<'_>,
    words: &[String],
    caps: &Caps,
    budget: &mut usize,
) -> ArbResult<String> {
    let cap = caps.text_bytes.min(*budget);
    let text = match u.int_in_range(0..=6)? {
        0 => String::new(),
        1 => small_string(u)?,
        2 | 3 => u.choose(words)?.clone(),
        4 => {
            // Several words on their own lines, possibly decorated.
            let count = u.int_in_range(1..=6)?;
            let mut out = String::new();
            for _ in 0..count {
                let word = u.choose(words)?;
                match u.int_in_range(0..=3)? {
                    0 => out.push_str(&format!("**{word}**")),
                    1 => out.push_str(&format!("  {word}.")),
                    2 => out.push_str(&format!("_{word}_ and more")),
                    _ => out.push_str(word),
                }
                out.push('\n');
            }
            out
        }
        5 => {
            // Thousands of signals, or a long text, up to the cap.
            let word = u.choose(words)?.clone();
            let count: usize = u.int_in_range(1..=5000)?;
            let mut out = String::new();
            for _ in 0..count {
                if !out.is_empty() && out.len() + word.len() + 1 > cap {
                    break;
                }
                out.push_str(&word);
                out.push('\n');
            }
            out
        }
        _ => {
            let len = u.int_in_range(0..=256)?;
            String::from_utf8_lossy(u.bytes(len)?).into_owned()
        }
    };
    *budget = budget.saturating_sub(text.len());
    Ok(text)
}

/// Arbitrary JSON, shallow: strings, numbers, booleans, null, arrays, objects.
fn json_value(u: &mut Unstructured<'_>, words: &[String], depth: u32) -> ArbResult<Json> {
    let leaf = depth == 0;
    Ok(match u.int_in_range(0..=if leaf { 4 } else { 6 })? {
        0 => Json::Null,
        1 => Json::Bool(u.arbitrary()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => Json::String(small_string(u)?),
        4 => Json::String(u.choose(words)?.clone()),
        5 => {
            let len = u.int_in_range(0..=3)?;
            Json::Array(
                (0..len)
                    .map(|_| json_value(u, words, depth - 1))
                    .collect::<ArbResult<_>>()?,
            )
        }
        _ => Json::Object(json_args(u, words, depth - 1)?),
    })
}

const ARG_KEYS: &[&str] = &[
    "route_keyword",
    "key",
    "value",
    "path",
    "content",
    "command",
    "pattern",
    "reason",
];

fn json_args(
    u: &mut Unstructured<'_>,
    words: &[String],
    depth: u32,
) -> ArbResult<serde_json::Map<String, Json>> {
    let len = u.int_in_range(0..=4)?;
    let mut map = serde_json::Map::new();
    for _ in 0..len {
        let key = if u.ratio(3, 4)? {
            (*u.choose(ARG_KEYS)?).to_string()
        } else {
            small_string(u)?
        };
        map.insert(key, json_value(u, words, depth)?);
    }
    Ok(map)
}

fn tool_call(u: &mut Unstructured<'_>, words: &[String], id: usize) -> ArbResult<ToolCall> {
    let name = if u.ratio(7, 8)? {
        (*u.choose(TOOL_NAMES)?).to_string()
    } else {
        small_string(u)?
    };
    let args = match u.int_in_range(0..=5)? {
        0 => json_value(u, words, 2)?,
        1 => json!({"route_keyword": u.choose(words)?}),
        2 => json!({"key": u.choose(words)?, "value": small_string(u)?}),
        _ => Json::Object(json_args(u, words, 2)?),
    };
    Ok(ToolCall {
        id: if u.ratio(1, 16)? {
            small_string(u)?
        } else {
            format!("call_{id}")
        },
        name,
        args,
        result: None,
        ok: false,
    })
}

/// True unless `FUZZ_KNOWN_FINDINGS` is set: a target may then steer clear of a finding that is
/// reported and pinned by a failing regression test but not fixed yet (docs/reliability.md,
/// "Findings"), so that fuzzing keeps looking for new ones. No target needs it today.
pub fn avoid_known_findings() -> bool {
    static AVOID: OnceLock<bool> = OnceLock::new();
    *AVOID.get_or_init(|| std::env::var_os("FUZZ_KNOWN_FINDINGS").is_none())
}

fn usage(u: &mut Unstructured<'_>) -> ArbResult<Usage> {
    Ok(match u.int_in_range(0..=3)? {
        0 => Usage::default(),
        1 => Usage {
            input_tokens: u.int_in_range(0..=5000)?,
            output_tokens: u.int_in_range(0..=5000)?,
        },
        _ => Usage {
            input_tokens: u.arbitrary()?,
            output_tokens: u.arbitrary()?,
        },
    })
}

fn model_reply(
    u: &mut Unstructured<'_>,
    words: &[String],
    caps: &Caps,
    next_id: &mut usize,
    budget: &mut usize,
) -> ArbResult<Result<ModelReply, String>> {
    if u.ratio(1, 24)? {
        return Ok(Err(small_string(u)?));
    }
    let text = text(u, words, caps, budget)?;
    let count = if u.ratio(1, 32)? {
        u.int_in_range(0..=caps.tool_calls)?
    } else {
        u.int_in_range(0..=3)?
    };
    let mut tool_calls = Vec::new();
    for _ in 0..count {
        *next_id += 1;
        tool_calls.push(tool_call(u, words, *next_id)?);
    }
    Ok(Ok(ModelReply {
        text,
        tool_calls,
        usage: usage(u)?,
    }))
}

/// The answer to `request`, from fuzz bytes; sometimes deliberately the wrong kind or count.
pub fn respond(
    u: &mut Unstructured<'_>,
    request: &Request,
    words: &[String],
    caps: &Caps,
    next_id: &mut usize,
    budget: &mut usize,
) -> ArbResult<Response> {
    if u.ratio(1, 64)? {
        // A driver bug: an answer of another kind.
        return Ok(match u.int_in_range(0..=4)? {
            0 => Response::Approve(u.arbitrary()?),
            1 => Response::Context(vec![small_string(u)?]),
            2 => Response::Validate(vec![CheckResult::pass()]),
            3 => Response::Tools(Vec::new()),
            _ => Response::Branch(Box::default()),
        });
    }
    Ok(match request {
        Request::Model(_) => Response::Model(model_reply(u, words, caps, next_id, budget)?),
        // A fork's branches are answered request by request (`drive`).
        Request::Fork(_) => Response::Model(model_reply(u, words, caps, next_id, budget)?),
        Request::Tools { calls, .. } => {
            let mut results = Vec::new();
            for call in calls {
                if u.ratio(1, 32)? {
                    continue; // a result goes missing
                }
                let mut done = call.clone();
                done.ok = u.arbitrary()?;
                done.result = match u.int_in_range(0..=4)? {
                    0 => None,
                    1 => Some(format!("[DENIED] {}", small_string(u)?)),
                    _ => Some(text(u, words, caps, budget)?),
                };
                if u.ratio(1, 32)? {
                    done.id = small_string(u)?;
                }
                results.push(done);
            }
            if u.ratio(1, 32)? {
                *next_id += 1;
                results.push(tool_call(u, words, *next_id)?); // one nobody asked for
            }
            Response::Tools(results)
        }
        Request::Validate { checks, .. } => {
            let mut results = Vec::new();
            let count = if u.ratio(1, 16)? {
                u.int_in_range(0..=checks.len() + 2)?
            } else {
                checks.len()
            };
            for _ in 0..count {
                results.push(if u.ratio(2, 3)? {
                    CheckResult::pass()
                } else {
                    CheckResult::fail(small_string(u)?)
                });
            }
            Response::Validate(results)
        }
        Request::Approve { .. } => Response::Approve(u.arbitrary()?),
        Request::Context { sources, .. } => {
            let count = if u.ratio(1, 16)? {
                u.int_in_range(0..=sources.len() + 2)?
            } else {
                sources.len()
            };
            let mut blocks = Vec::new();
            for _ in 0..count {
                blocks.push(text(u, words, caps, budget)?);
            }
            Response::Context(blocks)
        }
        Request::Done => Response::Approve(true),
    })
}

/// `before` is still the start of `after`: the machine never drops or rewrites a message.
pub fn assert_history_grows(before: &[Message], after: &[Message]) {
    assert!(
        after.len() >= before.len(),
        "history shrank from {} to {} messages",
        before.len(),
        after.len()
    );
    for (idx, (old, new)) in before.iter().zip(after).enumerate() {
        assert!(
            old == new,
            "history message {idx} changed:\n{old:?}\n{new:?}"
        );
    }
}

/// Checks that `seen` (the history as it was last checked) is still the start of `history`,
/// then brings it up to date with the messages added since: the "history only grows" check
/// without copying the whole history at every step (allocation is what AddressSanitizer
/// makes slow).
fn check_growth(seen: &mut Vec<Message>, history: &[Message]) {
    assert_history_grows(seen, history);
    seen.extend_from_slice(&history[seen.len()..]);
}

/// Runs `program` with every request answered from `u`, checking after every step and resume
/// that the history only grew; now and then checkpoints and restores the machine mid-run.
/// The run stops when the fuzz bytes are used up: past their end `Unstructured` answers
/// with defaults (an error reply, a restore at every boundary), which only repeats itself.
pub fn drive(program: &Program, u: &mut Unstructured<'_>, caps: &Caps) {
    let words = words(program);
    let options = Options {
        session_id: "fuzz0000".to_string(),
        task: "fuzz".to_string(),
        max_turns: Some(u.int_in_range(1..=60).unwrap_or(30)),
        skip_prompts: u.arbitrary().unwrap_or(false),
    };
    let mut machine = Machine::new(program, options.clone());
    let mut next_id = 0;
    let mut budget = caps.run_text_bytes;
    let mut seen = Vec::new();
    for _ in 0..caps.steps {
        if u.is_empty() {
            break;
        }
        if machine.at_boundary() && u.ratio(1, 8).unwrap_or(false) {
            // A killed process resumed from its last checkpoint.
            if let Some(checkpoint) = machine.checkpoint() {
                if let Ok(restored) = Machine::restore(program, options.clone(), &checkpoint) {
                    let (before, after) = (&machine.run().history, &restored.run().history);
                    assert_history_grows(before, after);
                    assert_eq!(before.len(), after.len());
                    machine = restored;
                }
            }
        }
        let request = machine.step();
        let _ = machine.drain_events();
        check_growth(&mut seen, &machine.run().history);
        if request == Request::Done {
            break;
        }
        if let Request::Fork(branches) = &request {
            // Each branch stepped to its end; a fuzz input that runs out ends a branch's loop.
            for branch in branches.clone() {
                let done = branch.run_with(|request| {
                    respond(u, request, &words, caps, &mut next_id, &mut budget)
                        .unwrap_or(Response::Tools(Vec::new()))
                });
                machine.resume(Response::Branch(Box::new(done)));
            }
            check_growth(&mut seen, &machine.run().history);
            continue;
        }
        let Ok(response) = respond(u, &request, &words, caps, &mut next_id, &mut budget) else {
            break;
        };
        machine.resume(response);
        check_growth(&mut seen, &machine.run().history);
    }
    let _ = machine.checkpoint();
}
