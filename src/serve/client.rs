//! The calls fuseraft makes to a Restate server: registering a worker (admin API), and
//! submitting, watching and answering sessions (ingress). Each failure names the server
//! and what it said.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::job::{Answer, Answered, Exported, Job, Watch, QUESTION, SESSION};
use super::schedule::{Added, Schedule, SCHEDULE};

fn http() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|error| format!("cannot make an HTTP client: {error}"))
}

fn trimmed(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// Registers the worker at `uri` with the server's admin API at `admin`, retrying for a
/// while when the server is not up yet.
pub async fn register(admin: &str, uri: &str) -> Result<(), String> {
    let http = http()?;
    let url = format!("{}/deployments", trimmed(admin));
    let body = serde_json::json!({ "uri": uri, "force": true });
    let mut last = String::new();
    for _ in 0..40 {
        match http.post(&url).json(&body).send().await {
            Ok(response) if response.status().is_success() => return Ok(()),
            Ok(response) => {
                let status = response.status();
                let text = response.text().await.unwrap_or_default();
                return Err(format!(
                    "the Restate server at {admin} refused to register {uri} ({status}): {}",
                    message_of(&text)
                ));
            }
            Err(error) => last = error.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(format!(
        "cannot reach the Restate admin API at {admin}: {last}"
    ))
}

/// Why the server refused a call: its `message`, or the body as it came.
fn message_of(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            value
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| body.trim().to_string())
}

/// A refused call: the HTTP status and the server's message.
#[derive(Debug)]
pub struct Refused {
    pub status: Option<u16>,
    pub message: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

async fn call<B: Serialize, R: DeserializeOwned>(
    on: &str,
    path: &str,
    body: &B,
    idempotency: Option<&str>,
) -> Result<R, Refused> {
    let http = http().map_err(|message| Refused {
        status: None,
        message,
    })?;
    let url = format!("{}/{path}", trimmed(on));
    // A handler that takes nothing wants no body at all (`()` serializes as `null`).
    let json = serde_json::to_string(body).map_err(|error| Refused {
        status: None,
        message: format!("cannot send `{path}`: {error}"),
    })?;
    let mut request = http.post(&url);
    // A front (`serve --front`) takes the worker's token.
    if let Ok(token) = std::env::var("FUSERAFT_SERVE_TOKEN") {
        request = request.bearer_auth(token);
    }
    if json != "null" {
        request = request
            .header("content-type", "application/json")
            .body(json);
    }
    if let Some(key) = idempotency {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.map_err(|error| Refused {
        status: None,
        message: format!("cannot reach the Restate server at {on}: {error}"),
    })?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(Refused {
            status: Some(status.as_u16()),
            message: message_of(&text),
        });
    }
    serde_json::from_str(if text.trim().is_empty() {
        "null"
    } else {
        &text
    })
    .map_err(|error| Refused {
        status: Some(status.as_u16()),
        message: format!("the server's answer to `{path}` does not read: {error}"),
    })
}

/// Submits `job` as session `id` (a retry with the same id submits nothing new).
pub async fn submit(on: &str, id: &str, job: &Job) -> Result<(), Refused> {
    call::<_, serde_json::Value>(on, &format!("{SESSION}/{id}/start"), job, Some(id))
        .await
        .map(|_| ())
}

/// The session's status and its event lines after the first `after`.
pub async fn watch(on: &str, id: &str, after: u32) -> Result<Watch, Refused> {
    call(on, &format!("{SESSION}/{id}/watch"), &after, None).await
}

/// The session's model text streaming now, after `from` (see [`super::stream`]).
pub async fn text(
    on: &str,
    id: &str,
    from: &super::stream::Cursor,
) -> Result<Option<super::stream::Streamed>, Refused> {
    call(on, &format!("{SESSION}/{id}/text"), from, None).await
}

/// Answers question `question` (`SESSION.N`).
pub async fn answer(on: &str, question: &str, answer: &Answer) -> Result<Answered, Refused> {
    call(on, &format!("{QUESTION}/{question}/answer"), answer, None).await
}

/// Adds schedule `name`.
pub async fn schedule_add(on: &str, name: &str, added: &Added) -> Result<Schedule, Refused> {
    call(on, &format!("{SCHEDULE}/{name}/add"), added, None).await
}

/// Schedule `name`, if there is one.
pub async fn schedule_show(on: &str, name: &str) -> Result<Option<Schedule>, Refused> {
    call(on, &format!("{SCHEDULE}/{name}/show"), &(), None).await
}

/// The names of every schedule.
pub async fn schedule_names(on: &str) -> Result<Vec<String>, Refused> {
    call(on, "FuseraftNames/schedules/names", &(), None).await
}

/// Removes schedule `name`.
pub async fn schedule_remove(on: &str, name: &str) -> Result<(), Refused> {
    call::<_, serde_json::Value>(on, &format!("{SCHEDULE}/{name}/remove"), &(), None)
        .await
        .map(|_| ())
}

/// Starts schedule `name`'s run now; the session's id.
pub async fn schedule_run(on: &str, name: &str) -> Result<String, Refused> {
    call(on, &format!("{SCHEDULE}/{name}/run"), &(), None).await
}

/// The sessions not ended yet.
pub async fn session_names(on: &str) -> Result<Vec<String>, Refused> {
    call(on, "FuseraftNames/sessions/names", &(), None).await
}

/// The sessions not ended yet, each with its status (past every event: only the status
/// comes back).
pub async fn running(on: &str) -> Result<Vec<(String, super::job::Status)>, Refused> {
    let mut running = Vec::new();
    for id in session_names(on).await? {
        let status = watch(on, &id, u32::MAX).await?.status;
        running.push((id, status));
    }
    Ok(running)
}

/// Session `id` whole, for a local copy.
pub async fn export(on: &str, id: &str) -> Result<Exported, Refused> {
    call(on, &format!("{SESSION}/{id}/export"), &(), None).await
}

/// Forwards a front's request to the ingress at `ingress` (`path`, the `headers` given,
/// `body`); the answer's status, content type and body.
pub async fn forward(
    ingress: &str,
    path: &str,
    headers: &[(&str, Option<Vec<u8>>)],
    body: Vec<u8>,
) -> Result<(u16, String, Vec<u8>), String> {
    let http = http()?;
    let mut request = http.post(format!("{ingress}{path}")).body(body);
    for (name, value) in headers {
        if let Some(value) = value {
            request = request.header(*name, value.as_slice());
        }
    }
    let answer = request
        .send()
        .await
        .map_err(|error| format!("the server's ingress does not answer: {error}"))?;
    let status = answer.status().as_u16();
    let kind = answer
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let bytes = answer.bytes().await.unwrap_or_default();
    Ok((status, kind, bytes.to_vec()))
}
