//! The audit chain: every decision about what a run may do (a tool call allowed or refused,
//! by the policy, the sandbox or the operator; an approval asked and answered; a redirect;
//! an operator's message) appended to `.fuseraft/sessions/<id>.audit.jsonl`. Each record
//! carries its sequence number, the SHA-256 of the record line before it (`Prev`) and an
//! HMAC under the session key (`Mac`), so an edited, dropped, reordered or forged record
//! breaks the chain at that record, which [`verify`] names.
//!
//! A record line is `{"Seq":N,"Ts":..,"Session":..,"Turn":..,"Agent":..,"Decision":..,
//! "Detail":{..},"Prev":"<hex>","Mac":"<hex>"}`; the MAC covers the line up to `,"Mac"`.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use fuseraft_vm::driver::Approval;
use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::machine::Run;
use fuseraft_vm::state_dir::Access;
use serde_json::{json, Map, Value as Json};
use sha2::{Digest, Sha256};

use crate::session::key::{self, Key};

/// What the MAC of a record covers besides its bytes (domain separation).
const DOMAIN: &[u8] = b"fuseraft audit record v1";

/// `,"Mac":"` + 64 hex digits + `"}`.
const MAC_OPEN: &str = ",\"Mac\":\"";

/// The file name of session `id`'s audit log.
pub fn file_name(id: &str) -> String {
    format!("{id}.audit.jsonl")
}

/// Removes session `id`'s audit log (a session that was never saved).
pub fn remove(work_dir: &Path, id: &str) {
    if let Ok(Some(dir)) = crate::session::existing_dir(work_dir) {
        let _ = dir.remove(&file_name(id));
    }
}

/// The SHA-256 of a record line (with its newline), in hex; zeros before the first.
fn hash(line: &[u8]) -> String {
    key::to_hex(&Sha256::digest(line))
}

const NO_PREVIOUS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The open audit log of a running session: where the chain goes on.
pub struct AuditLog {
    session: String,
    key: Arc<Key>,
    dir: fuseraft_vm::state_dir::StateDir,
    /// Opened with the first record: a run that records nothing leaves no file.
    file: Option<std::fs::File>,
    /// The log held records before this run.
    existed: bool,
    seq: u64,
    prev: String,
    failed: bool,
    /// The turn of the newest event seen: when the operator's answers come.
    turn: u32,
}

/// An audit log shared by the run's event handler and its approval questions.
pub type Shared = Arc<Mutex<AuditLog>>;

impl AuditLog {
    /// Opens session `id`'s audit log in `work_dir`, going on after its last record. A log
    /// that fails verification is kept as it is (the break stays visible) and appended to.
    pub fn open(work_dir: &Path, id: &str, key: Arc<Key>) -> Result<AuditLog, String> {
        let dir = crate::session::dir(work_dir).map_err(|error| error.message)?;
        let name = file_name(id);
        let mut bytes = Vec::new();
        if let Ok(mut file) = dir.open_file(&name, Access::Read) {
            file.read_to_end(&mut bytes)
                .map_err(|error| format!("cannot read the audit log `{name}`: {error}"))?;
        }
        if let Err(broken) = verify_bytes(&bytes, id, &key) {
            eprintln!(
                "warning: the audit log of session `{id}` {broken}; new records go on after it"
            );
        }
        let last = bytes
            .split_inclusive(|byte| *byte == b'\n')
            .rfind(|line| line.ends_with(b"\n"));
        let seq = last
            .and_then(|line| serde_json::from_slice::<Json>(line).ok())
            .and_then(|record| record["Seq"].as_u64())
            .unwrap_or(0);
        let prev = last.map_or(NO_PREVIOUS.to_string(), hash);
        Ok(AuditLog {
            session: id.to_string(),
            key,
            dir,
            file: None,
            existed: !bytes.is_empty(),
            seq,
            prev,
            failed: false,
            turn: 0,
        })
    }

    /// Appends one decision. A write that fails is reported once; the run goes on.
    pub fn record(&mut self, turn: u32, agent: Option<&str>, decision: &str, detail: Json) {
        if self.failed {
            return;
        }
        self.seq += 1;
        let mut record = Map::new();
        record.insert("Seq".into(), json!(self.seq));
        record.insert("Ts".into(), json!(crate::events::timestamp()));
        record.insert("Session".into(), json!(self.session));
        record.insert("Turn".into(), json!(turn));
        if let Some(agent) = agent {
            record.insert("Agent".into(), json!(agent));
        }
        record.insert("Decision".into(), json!(decision));
        record.insert("Detail".into(), detail);
        record.insert("Prev".into(), json!(self.prev));
        let mut line = serde_json::to_vec(&record).unwrap_or_default();
        line.pop();
        let tag = self.key.mac(&[DOMAIN, self.session.as_bytes(), &line]);
        line.extend_from_slice(MAC_OPEN.as_bytes());
        line.extend_from_slice(key::to_hex(&tag).as_bytes());
        line.extend_from_slice(b"\"}\n");
        self.prev = hash(&line);
        if let Err(error) = self.append(&line) {
            eprintln!("warning: cannot write the audit log ({error}); the run goes on without it");
            self.failed = true;
            // A log this run began and could not write: nothing of it is left.
            if !self.existed && self.seq == 1 {
                let _ = self.dir.remove(&file_name(&self.session));
            }
        }
    }

    /// Appends `line` and syncs it, opening the file first when this is the run's first.
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.file.is_none() {
            let file = self
                .dir
                .open_file(&file_name(&self.session), Access::Append)?;
            self.file = Some(file);
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        file.write_all(line)?;
        file.sync_data()
    }

    /// The decisions `event` records: refusals, approvals and their answers, the operator's
    /// messages, and each tool call a turn made (allowed) when the turn ends.
    pub fn on_event(&mut self, event: &Event, run: &Run) {
        self.turn = event.turn;
        let agent = event.agent.as_deref();
        let (decision, detail) = match &event.kind {
            EventKind::ToolBlocked { tool, result } => {
                ("tool_refused", json!({ "tool": tool, "reason": result }))
            }
            EventKind::HitlRequested { from, to, signal } => (
                "approval_asked",
                json!({ "from": from, "to": to, "signal": signal }),
            ),
            EventKind::HitlAnswered {
                approved,
                redirect_chars,
            } => {
                let answer = match (approved, redirect_chars) {
                    (_, Some(_)) => "redirected",
                    (true, None) => "approved",
                    (false, None) => "refused",
                };
                ("approval_answered", json!({ "answer": answer }))
            }
            EventKind::OperatorMessage { chars } => ("operator_message", json!({ "chars": chars })),
            EventKind::TurnEnd { .. } => {
                for call in crate::events::upstream::turn_calls(event, run)
                    .filter(|call| call.denied.is_none())
                {
                    self.record(
                        event.turn,
                        agent,
                        "tool_allowed",
                        json!({ "tool": call.name }),
                    );
                }
                return;
            }
            _ => return,
        };
        self.record(event.turn, agent, decision, detail);
    }
}

impl AuditLog {
    /// The operator's answer to an approval question: a tool call (`signal` `tool`: `from`
    /// is the agent, `to` the call) or a route, an escalation or a plan review.
    pub fn operator_answered(
        &mut self,
        from: &str,
        to: &str,
        asked: &fuseraft_vm::effect::Question,
        answer: &Approval,
    ) {
        let (answer, redirect_chars) = match answer {
            Approval::Granted => ("granted", None),
            Approval::Refused => ("refused", None),
            Approval::Redirected(text) => ("redirected", Some(text.chars().count())),
        };
        let (agent, question) = match asked {
            fuseraft_vm::effect::Question::ToolCall => (Some(from), json!({ "tool_call": to })),
            _ => (
                None,
                json!({ "from": from, "to": to, "signal": asked.signal() }),
            ),
        };
        let mut detail = json!({ "question": question, "answer": answer });
        if let Some(chars) = redirect_chars {
            detail["redirect_chars"] = json!(chars);
        }
        self.record(self.turn, agent, "operator_answered", detail);
    }
}

/// The records of an audit log, each checked: `Err` names the first record that breaks the
/// chain (its line and why).
pub fn verify_bytes(bytes: &[u8], session: &str, key: &Key) -> Result<Vec<Json>, String> {
    let mut prev = NO_PREVIOUS.to_string();
    let mut records = Vec::new();
    for (index, line) in bytes.split_inclusive(|byte| *byte == b'\n').enumerate() {
        let number = index + 1;
        let broken = |why: &str| format!("breaks at record {number} (line {number}): {why}");
        let Some(body) = line.strip_suffix(b"\"}\n") else {
            return Err(broken("it is cut off or not a record fuseraft wrote"));
        };
        let open = MAC_OPEN.as_bytes();
        let Some(at) = body.len().checked_sub(open.len() + 2 * key::MAC_LEN) else {
            return Err(broken("it has no MAC"));
        };
        let (covered, mac) = body.split_at(at);
        let tag = mac
            .strip_prefix(open)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(key::tag_from_hex)
            .ok_or_else(|| broken("it has no MAC"))?;
        if !key.verify(&[DOMAIN, session.as_bytes(), covered], &tag) {
            return Err(broken(
                "it fails authentication (it was edited, or copied from another session)",
            ));
        }
        let record: Json = serde_json::from_slice(line).map_err(|_| broken("it is not JSON"))?;
        if record["Prev"].as_str() != Some(prev.as_str()) {
            return Err(broken(
                "it does not follow the record before it (a record was dropped, moved or inserted)",
            ));
        }
        if record["Seq"].as_u64() != Some(number as u64) {
            return Err(broken("its sequence number is out of place"));
        }
        prev = hash(line);
        records.push(record);
    }
    Ok(records)
}

/// One record as a line for people: `SEQ  TS  turn N  AGENT: decision  detail`.
pub fn render(record: &Json) -> String {
    let field = |key: &str| record[key].as_str().unwrap_or_default();
    let agent = match field("Agent") {
        "" => String::new(),
        agent => format!("{agent}: "),
    };
    let detail = match &record["Detail"] {
        Json::Object(map) => map
            .iter()
            .map(|(key, value)| match value {
                Json::String(text) => format!("{key}: {text}"),
                other => format!("{key}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(" · "),
        _ => String::new(),
    };
    let line = format!(
        "{:>4}  {}  turn {}  {agent}{}  {detail}",
        record["Seq"].as_u64().unwrap_or(0),
        field("Ts"),
        record["Turn"],
        field("Decision")
    );
    crate::terminal::neutralise(&line.replace('\n', " ⏎ ")).into_owned()
}
