//! The web view of a Restate server's sessions (`fuseraft ui --on URL`): the sessions the
//! server runs, each with the question it waits on; one session read back from the server
//! (its turns, graph and state, shaped as a local session is for the page); and an answer
//! to its question given from the page, as `fuseraft approve` gives it (a question takes
//! one answer: a second is refused, naming the first).

use fuseraft_compiler::ir;
use serde_json::{json, Value as Json};

use crate::serve::client::{self, Refused};
use crate::serve::job::{Answer, Answered, Waiting};

/// A waiting question as the page's approval box takes it.
fn question(waiting: &Waiting) -> Json {
    json!({
        "id": waiting.id, "from": waiting.from, "to": waiting.to,
        "kind": if waiting.kind.is_empty() { "route" } else { &waiting.kind },
        "signal": waiting.question, "redirectable": waiting.takes_text,
    })
}

fn failed(refused: Refused) -> String {
    refused.message
}

/// `[{id, updated, status, turns, task, waiting}]`: the sessions the server runs (not ended).
pub async fn list(on: &str) -> Result<Json, String> {
    let mut listed = Vec::new();
    for (id, status) in client::running(on).await.map_err(failed)? {
        let state = match (&status.outcome, &status.waiting) {
            (Some(outcome), _) => outcome.clone(),
            (None, Some(waiting)) => format!("waits on {}", waiting.id),
            (None, None) => "running".to_string(),
        };
        listed.push(json!({
            "id": id, "updated": "", "status": state, "turns": status.turn, "task": "",
            "waiting": status.waiting.as_ref().map(question),
        }));
    }
    Ok(Json::Array(listed))
}

/// Session `id` of the server as the page shows a local one, with the question it waits on.
pub async fn show(on: &str, id: &str) -> Result<Json, String> {
    if !crate::session::valid_id(id) {
        return Err(crate::session::invalid_id(id));
    }
    let exported = client::export(on, id).await.map_err(failed)?;
    let graph = ir::parse(&exported.job.ir).map_or(Json::Null, |program| ir::to_json(&program));
    let state = exported.checkpoint.unwrap_or(Json::Null);
    let status = &exported.status;
    // Before its first turn is kept a session has no machine state: where it stands is
    // its status.
    let machine = match state.get("Machine") {
        Some(machine) => machine.clone(),
        None => json!({"Turn": status.turn, "Outcome": status.outcome, "Reason": status.reason}),
    };
    Ok(json!({
        "id": id,
        "task": exported.job.task,
        "served": true,
        "unverified": false,
        "cancelled": false,
        "notes": [],
        "machine": machine,
        "messages": exported.messages,
        "graph": graph,
        "waiting": status.waiting.as_ref().map(question),
        "answers": status.answers,
    }))
}

/// Why an answer was not taken, for the page: the status and the words.
pub struct NotTaken {
    pub status: u16,
    pub message: String,
}

/// Answers question `question` (`SESSION.N`): `approved`, or a redirect with `text`.
pub async fn answer(
    on: &str,
    question: &str,
    decision: &str,
    text: Option<String>,
) -> Result<Json, NotTaken> {
    let valid = question
        .split_once('.')
        .is_some_and(|(session, n)| crate::session::valid_id(session) && n.parse::<u32>().is_ok());
    if !valid {
        return Err(NotTaken {
            status: 400,
            message: format!("`{question}` is no question id (`SESSION.N`)\n"),
        });
    }
    let answer = Answer {
        decision: decision.to_string(),
        text,
        by: std::env::var("USER")
            .map(|user| format!("{user} (web view)"))
            .unwrap_or_else(|_| "web view".to_string()),
        at: crate::events::timestamp(),
    };
    match client::answer(on, question, &answer).await {
        Ok(Answered { id, answer, .. }) => Ok(json!({
            "id": id, "approved": answer.decision == "yes", "redirect": answer.text,
            "by": answer.by,
        })),
        // The question object refuses a second answer, naming the first.
        Err(refused) => Err(NotTaken {
            status: match refused.status {
                Some(_) => 409,
                None => 502,
            },
            message: format!("{}\n", refused.message),
        }),
    }
}
