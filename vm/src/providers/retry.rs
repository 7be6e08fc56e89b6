//! Sending a model request until it succeeds or cannot: retries with exponential backoff
//! and jitter (or the server's `Retry-After`), the overall timeout of each attempt, a
//! `model_retry` event before each retry, and the fallback to not streaming for a server that
//! refuses streamed requests (remembered for the run). Every message leaving this file has
//! the request's key scrubbed out of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::body::Form;
use super::http::{seconds, Decoder, Failure, Http, Post, MAX_RETRY_AFTER};
use super::{redact, Timeouts};
use crate::effect::ModelReply;
use crate::event::{EventKind, Resend};

/// The longest computed backoff between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How one call is sent: whether its client already fell back to not streaming, and where
/// its retries are reported.
pub(crate) struct How<'a> {
    /// Set once a server refused a streamed request and answered an unstreamed one.
    pub unstreamed: &'a AtomicBool,
    /// Set once a server refused a request's reply format.
    pub unformatted: &'a AtomicBool,
    /// Receives a `model_retry` event before each retry (key already scrubbed).
    pub notice: &'a (dyn Fn(EventKind) + Sync),
    /// The model's timeouts.
    pub timeouts: Timeouts,
}

impl How<'_> {
    fn retry(
        &self,
        resend: Resend,
        attempt: u32,
        max_retries: u32,
        wait: Duration,
        reason: String,
    ) {
        (self.notice)(EventKind::ModelRetry {
            resend,
            attempt,
            max_retries,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            reason,
        })
    }
}

/// Whether a failure may be a server refusing to stream: llama.cpp's server answers a
/// streamed request with tools by a 500, or by an empty stream when its chat format fails
/// the request, others by a 501, or by a 400 or 422 whose message speaks of streaming.
fn rejects_streaming(failure: &Failure) -> bool {
    if failure.empty_stream {
        return true;
    }
    match failure.status {
        Some(500 | 501) => true,
        Some(400 | 422) => failure.message.to_ascii_lowercase().contains("stream"),
        _ => false,
    }
}

/// Whether a failure is a server refusing the reply format it was asked for: a 400 or 422
/// whose message speaks of a format or schema (LM Studio takes only `json_schema`, some
/// servers no `response_format` at all).
fn rejects_format(failure: &Failure) -> bool {
    let message = failure.message.to_ascii_lowercase();
    matches!(failure.status, Some(400 | 422))
        && (message.contains("format") || message.contains("schema"))
}

impl Http {
    /// Sends `post`, decoding the body with a fresh decoder per attempt, retrying what may
    /// succeed on another attempt. A streamed request the server refuses (an error status,
    /// or an empty stream) is sent without streaming from then on, and if that succeeds,
    /// `how.unstreamed` remembers it for the run. A request forcing a tool call that the
    /// server failed both ways is not retried, and its error names the forced choice. Each
    /// retry is announced through `how.notice` first. The error names the endpoint and
    /// never the key.
    pub(super) async fn send<D: Decoder>(
        &self,
        post: &Post,
        decoder: impl Fn() -> D,
        how: &How<'_>,
    ) -> Result<ModelReply, String> {
        let secret = post.auth.as_ref().map(|(_, secret)| secret);
        let scrub = |text: String| match secret {
            Some(secret) => redact(&text, secret),
            None => text,
        };
        let can_stream = post.body.streams();
        let mut streaming = can_stream && !how.unstreamed.load(Ordering::Relaxed);
        // The body in each form it is sent in, serialised when first sent (most calls only
        // ever need the one as written).
        let mut bodies: [Option<bytes::Bytes>; 4] = [None, None, None, None];
        let mut fell_back = false;
        let mut attempt: u32 = 0;
        let max_retries = self.settings.max_retries;
        loop {
            let form = Form {
                unstreamed: can_stream && !streaming,
                unformatted: how.unformatted.load(Ordering::Relaxed),
            };
            let slot = &mut bodies[form.index()];
            if slot.is_none() {
                *slot = Some(post.body.bytes(form)?);
            }
            let body = slot.clone().unwrap_or_default();
            let overall = how.timeouts.overall;
            let outcome = match tokio::time::timeout(
                overall,
                self.attempt(post, body, decoder(), how.timeouts),
            )
            .await
            {
                Ok(outcome) => outcome,
                Err(_) => Err(Failure::transient(format!(
                    "timed out after {}",
                    seconds(overall)
                ))),
            };
            let failure = match outcome {
                Ok(reply) => {
                    if fell_back && !streaming {
                        how.unstreamed.store(true, Ordering::Relaxed);
                    }
                    return Ok(reply);
                }
                Err(failure) => failure,
            };
            if post.body.formats() && !form.unformatted && rejects_format(&failure) {
                how.unformatted.store(true, Ordering::Relaxed);
                let reason = scrub(format!("{}: {}", post.label, failure.message));
                how.retry(
                    Resend::Unformatted,
                    attempt,
                    max_retries,
                    Duration::ZERO,
                    reason,
                );
                continue;
            }
            if streaming && !fell_back && rejects_streaming(&failure) {
                fell_back = true;
                streaming = false;
                let reason = scrub(format!("{}: {}", post.label, failure.message));
                how.retry(
                    Resend::Unstreamed,
                    attempt,
                    max_retries,
                    Duration::ZERO,
                    reason,
                );
                continue;
            }
            // Not streaming did not help either: the usual retries, still unstreamed (the
            // streamed form already failed, and a server that drops the connection after
            // a failed stream resets the next request on it), unless the request forces a
            // tool call and the server answered it with an error both ways: it would again.
            let forced_twice = fell_back && failure.status.is_some() && post.forced.is_some();
            if failure.retry && attempt < max_retries && !forced_twice {
                let wait = match failure.after {
                    Some(after) => after.min(MAX_RETRY_AFTER),
                    None => backoff(self.settings.base_backoff, attempt),
                };
                attempt += 1;
                let reason = scrub(format!("{}: {}", post.label, failure.message));
                how.retry(Resend::Again, attempt, max_retries, wait, reason);
                tokio::time::sleep(wait).await;
                continue;
            }
            let tries = attempt + 1 + u32::from(fell_back);
            let attempts = if tries > 1 {
                format!(" (gave up after {tries} attempts)")
            } else {
                String::new()
            };
            let forced = match &post.forced {
                Some(forced) if fell_back || failure.status.is_some_and(|code| code >= 500) => {
                    format!("; the server may not support {forced}: set the agent's `FunctionChoice: auto`, or give it one tool")
                }
                _ => String::new(),
            };
            return Err(scrub(format!(
                "{}: {}{attempts}{forced}",
                post.label, failure.message
            )));
        }
    }
}

/// `base · 2^attempt`, capped, times a random factor in [0.5, 1).
pub(crate) fn backoff(base: Duration, attempt: u32) -> Duration {
    let exponential = base
        .saturating_mul(1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX))
        .min(MAX_BACKOFF);
    let factor = 0.5 + fastrand::f64() / 2.0;
    exponential.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let base = Duration::from_millis(100);
        for attempt in 0..4 {
            let wait = backoff(base, attempt);
            let full = base * 2u32.pow(attempt);
            assert!(wait >= full / 2 && wait < full, "{attempt}: {wait:?}");
        }
        assert!(backoff(base, 40) <= MAX_BACKOFF);
    }
}
