//! A response of the Http plugin as the model reads it: for `http_head` the status line and
//! headers, else the body (a failure status line before it), capped at the tools' output
//! limit, every profile secret replaced by `[REDACTED]`, a secret straddling the cap
//! included.

use super::http_policy::HttpPolicy;
use super::{Outcome, ToolContext};

/// The response as the model sees it: for HEAD the status line and headers; else the body
/// (a failure status before it), capped at the output cap.
pub(super) async fn read(
    mut response: reqwest::Response,
    head: bool,
    ctx: &ToolContext,
    policy: &HttpPolicy,
) -> Outcome {
    let status = response.status();
    let status_line = format!(
        "[HTTP {} {}]",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .replace(" ]", "]");
    if head {
        let mut text = format!("{:?} {}", response.version(), status);
        for (name, value) in response.headers() {
            text.push_str(&format!(
                "\n{name}: {}",
                String::from_utf8_lossy(value.as_bytes())
            ));
        }
        return Outcome {
            text,
            ok: status.is_success(),
            denied: None,
        };
    }
    let cap = ctx.limits.output_cap;
    // Read past the cap by the longest secret, so one straddling the cap is redacted whole.
    let slack = policy.secrets().first().map_or(0, |secret| secret.len());
    let mut bytes: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                total += chunk.len() as u64;
                let room = (cap + slack).saturating_sub(bytes.len());
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if bytes.len() >= cap + slack && total > cap as u64 {
                    cut = true;
                    break;
                }
            }
            Ok(None) => break,
            Err(error) => {
                return Outcome::error(format!(
                    "reading the response body failed: {}",
                    super::http::reqwest_reason(&error)
                ))
            }
        }
    }
    let text = redact(&String::from_utf8_lossy(&bytes), &policy.secrets());
    let mut text: String = if text.len() > cap {
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        cut = true;
        text[..end].to_string()
    } else {
        text
    };
    if cut {
        text.push_str(&format!(
            "\n[TRUNCATED: the response body is longer than {cap} bytes]"
        ));
    }
    let text = if status.is_success() {
        if text.trim().is_empty() {
            status_line
        } else {
            text
        }
    } else if text.is_empty() {
        status_line
    } else {
        format!("{status_line}\n{text}")
    };
    Outcome {
        text,
        ok: status.is_success(),
        denied: None,
    }
}

/// `text` with every secret replaced by `[REDACTED]`.
pub(super) fn redact(text: &str, secrets: &[&str]) -> String {
    let mut text = text.to_string();
    for secret in secrets {
        if text.contains(secret) {
            text = text.replace(secret, "[REDACTED]");
        }
    }
    text
}
