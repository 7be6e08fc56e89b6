//! A request body as a provider builds it: a JSON document serialised when sent (Anthropic,
//! Ollama), or bytes already written on from the agent's last body (OpenAI, `openai_body.rs`).
//! Either can be asked for as sent and, for the fallback to not streaming, without
//! streaming.

use std::ops::Range;

use bytes::Bytes;
use serde_json::Value as Json;

/// The body of a model request.
#[derive(Debug)]
pub(crate) enum Body {
    /// A JSON document, serialised when it is first sent.
    Json(Json),
    /// Already serialised. `stream` is the byte range of `"stream":true` and the
    /// `"stream_options"` after it, when the request asks for streaming.
    Written {
        bytes: Bytes,
        stream: Option<Range<usize>>,
    },
}

/// What replaces a written body's `stream` range when it is sent without streaming.
const UNSTREAMED: &[u8] = b"\"stream\":false";

impl Body {
    /// Whether the request asks for a streamed reply.
    pub(crate) fn streams(&self) -> bool {
        match self {
            Body::Json(json) => json.get("stream") == Some(&Json::Bool(true)),
            Body::Written { stream, .. } => stream.is_some(),
        }
    }

    /// The bytes to send: as built, or (`unstreamed`, for a body that streams) with
    /// `"stream": false` and without `stream_options`. A written body is shared, not
    /// copied: each attempt sends the same buffer.
    pub(crate) fn bytes(&self, unstreamed: bool) -> Result<Bytes, String> {
        let unstreamed = unstreamed && self.streams();
        match self {
            Body::Json(json) if unstreamed => {
                let mut json = json.clone();
                json["stream"] = Json::Bool(false);
                if let Some(object) = json.as_object_mut() {
                    object.shift_remove("stream_options");
                }
                serde_json::to_vec(&json).map(Bytes::from)
            }
            Body::Json(json) => serde_json::to_vec(json).map(Bytes::from),
            Body::Written {
                bytes,
                stream: Some(range),
            } if unstreamed => {
                let mut out = Vec::with_capacity(bytes.len());
                out.extend_from_slice(&bytes[..range.start]);
                out.extend_from_slice(UNSTREAMED);
                out.extend_from_slice(&bytes[range.end..]);
                return Ok(Bytes::from(out));
            }
            Body::Written { bytes, .. } => return Ok(bytes.clone()),
        }
        .map_err(|error| error.to_string())
    }

    /// The body as a JSON document (tests read fields of the requests they build).
    #[cfg(test)]
    pub(crate) fn json(&self) -> Json {
        match self {
            Body::Json(json) => json.clone(),
            Body::Written { bytes, .. } => {
                serde_json::from_slice(bytes).expect("a written body is JSON")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_kinds_drop_streaming_alike() {
        let document = json!({ "model": "m", "stream": true, "stream_options": { "include_usage": true }, "temperature": 0.5 });
        let text = serde_json::to_string(&document).unwrap();
        let start = text.find("\"stream\"").unwrap();
        let end = text.find(",\"temperature\"").unwrap();
        let written = Body::Written {
            bytes: Bytes::from(text.clone()),
            stream: Some(start..end),
        };
        let json = Body::Json(document);
        let expected = br#"{"model":"m","stream":false,"temperature":0.5}"#;
        for body in [&written, &json] {
            assert!(body.streams());
            assert_eq!(&*body.bytes(true).unwrap(), expected);
            assert_eq!(&*body.bytes(false).unwrap(), text.as_bytes());
        }
        let unstreamed = Body::Written {
            bytes: Bytes::from_static(b"{}"),
            stream: None,
        };
        assert!(!unstreamed.streams());
        assert_eq!(&*unstreamed.bytes(true).unwrap(), b"{}");
    }
}
