//! What a served session keeps in the Restate server: the submitted run ([`Job`]), where it
//! stands ([`Status`]), the question it waits on and the answers it got. These are the
//! wire format between `exec --on`, `fuseraft approve` and the workers: JSON, keys stable.

use serde::{Deserialize, Serialize};

/// The virtual object of one session, keyed by its id.
pub const SESSION: &str = "FuseraftSession";
/// The virtual object of one question, keyed `SESSION.N`.
pub const QUESTION: &str = "FuseraftQuestion";

/// A run as `exec --on` submits it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// The program, as `fuseraft compile --emit ir` prints it (compiled and checked by the
    /// client).
    pub ir: String,
    pub task: String,
    /// The work dir, an absolute path every worker sees (under its `--work-root`).
    pub work_dir: String,
    pub max_turns: Option<u32>,
    /// `all` or `none` answers every question at once; absent, each waits for an answer.
    pub approve: Option<String>,
    /// A replay file's name and text, answering every model call.
    pub replay: Option<Replayed>,
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub api_key_env: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Replayed {
    pub name: String,
    pub text: String,
}

/// Where a session stands, as `watch` reports it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Status {
    /// Turns taken so far.
    pub turn: u32,
    /// Set once the run ended: `completed`, `stuck`, `error`, ...
    pub outcome: Option<String>,
    pub reason: Option<String>,
    /// The first event line of each stored chunk (one chunk per invocation), and how many
    /// lines there are in all.
    pub chunk_starts: Vec<u32>,
    pub events: u32,
    /// How many message chunks the checkpoint's history is stored in.
    pub message_chunks: u32,
    /// The question the run waits on.
    pub waiting: Option<Waiting>,
    /// How many questions the run asked (a question's id is `SESSION.N`).
    pub asked: u32,
    /// Every answer the run got, oldest first.
    pub answers: Vec<Answered>,
}

/// A question a run waits on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Waiting {
    /// `SESSION.N`.
    pub id: String,
    /// What is asked, as the events spell it (a route's signal, `tool`, `escalation: …`).
    pub question: String,
    pub from: String,
    pub to: String,
    /// Whether the answer may be text (`--redirect`), not only yes or no.
    pub takes_text: bool,
    /// What kind of question (`fuseraft_vm::effect::Question::kind`); empty in a status
    /// kept before it was recorded, read as a route's.
    #[serde(default)]
    pub kind: String,
}

/// An answer as `fuseraft approve` gives it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Answer {
    /// `yes`, `no` or `redirect`.
    pub decision: String,
    /// The direction given with `redirect`.
    pub text: Option<String>,
    pub by: String,
    /// When it was given (RFC 3339, the answerer's clock).
    pub at: String,
}

/// An answer as the session records it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Answered {
    pub id: String,
    pub question: String,
    #[serde(flatten)]
    pub answer: Answer,
}

/// What a question object holds: the awakeable its run waits on, and its answer once given.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Asked {
    pub awakeable: String,
    pub waiting: Waiting,
}

/// `watch`'s reply: the status and the event lines after the one asked for.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Watch {
    pub status: Status,
    pub events: Vec<String>,
}

/// `export`'s reply: all a local session needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Exported {
    pub job: Job,
    pub status: Status,
    /// The checkpoint's state, without its messages; `None` before the first turn ended.
    pub checkpoint: Option<serde_json::Value>,
    /// Every message of the history, as session log lines (`MessageCount` of them).
    pub messages: Vec<serde_json::Value>,
}

/// The state keys of a session object.
pub mod keys {
    pub const JOB: &str = "job";
    pub const STATUS: &str = "status";
    pub const CHECKPOINT: &str = "checkpoint";

    /// The `n`th chunk of event lines.
    pub fn events(n: usize) -> String {
        format!("events:{n}")
    }

    /// The `n`th chunk of history messages.
    pub fn messages(n: u32) -> String {
        format!("messages:{n}")
    }

    /// A question object's keys.
    pub const ASKED: &str = "asked";
    pub const ANSWER: &str = "answer";
}
