//! A request body as a provider builds it: a JSON document serialised when sent (Anthropic,
//! Ollama), or bytes already written on from the agent's last body (OpenAI, `openai_body.rs`).
//! Either can be asked for as sent and, for the fallbacks, without streaming or without its
//! reply format.

use std::ops::Range;

use bytes::Bytes;
use serde_json::Value as Json;

/// The body of a model request.
#[derive(Debug)]
pub(crate) enum Body {
    /// A JSON document, serialised when it is first sent.
    Json(Json),
    /// Already serialised. `stream` is the byte range of `"stream":true` and the
    /// `"stream_options"` after it, when the request asks for streaming; `format` the range
    /// of `,"response_format":…`, when it asks for one.
    Written {
        bytes: Bytes,
        stream: Option<Range<usize>>,
        format: Option<Range<usize>>,
    },
}

/// The keys of a JSON body that ask for a reply format (OpenAI's, Ollama's).
const FORMAT_KEYS: [&str; 2] = ["response_format", "format"];

/// How a body is sent: as built, or without what a server refused.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Form {
    /// `"stream": false` and no `stream_options`.
    pub unstreamed: bool,
    /// No reply format.
    pub unformatted: bool,
}

impl Form {
    /// The forms' index in a cache of four.
    pub(crate) fn index(self) -> usize {
        usize::from(self.unstreamed) | usize::from(self.unformatted) << 1
    }
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

    /// Whether the request asks for a reply format.
    pub(crate) fn formats(&self) -> bool {
        match self {
            Body::Json(json) => FORMAT_KEYS.iter().any(|key| json.get(key).is_some()),
            Body::Written { format, .. } => format.is_some(),
        }
    }

    /// The bytes to send in `form`: as built, or (`unstreamed`, for a body that streams)
    /// with `"stream": false` and without `stream_options`, or (`unformatted`) without its
    /// reply format. A written body sent as built is shared, not copied: each attempt sends
    /// the same buffer.
    pub(crate) fn bytes(&self, form: Form) -> Result<Bytes, String> {
        let unstreamed = form.unstreamed && self.streams();
        let unformatted = form.unformatted && self.formats();
        match self {
            Body::Json(json) if unstreamed || unformatted => {
                let mut json = json.clone();
                if let Some(object) = json.as_object_mut() {
                    if unstreamed {
                        object.insert("stream".into(), Json::Bool(false));
                        object.shift_remove("stream_options");
                    }
                    if unformatted {
                        for key in FORMAT_KEYS {
                            object.shift_remove(key);
                        }
                    }
                }
                serde_json::to_vec(&json).map(Bytes::from)
            }
            Body::Json(json) => serde_json::to_vec(json).map(Bytes::from),
            Body::Written {
                bytes,
                stream,
                format,
            } if unstreamed || unformatted => {
                // The ranges to replace, in order: `stream` comes before `format`.
                let mut cuts: Vec<(&Range<usize>, &[u8])> = Vec::with_capacity(2);
                if let Some(range) = stream.as_ref().filter(|_| unstreamed) {
                    cuts.push((range, UNSTREAMED));
                }
                if let Some(range) = format.as_ref().filter(|_| unformatted) {
                    cuts.push((range, b""));
                }
                cuts.sort_by_key(|(range, _)| range.start);
                let mut out = Vec::with_capacity(bytes.len());
                let mut at = 0;
                for (range, with) in cuts {
                    out.extend_from_slice(&bytes[at..range.start]);
                    out.extend_from_slice(with);
                    at = range.end;
                }
                out.extend_from_slice(&bytes[at..]);
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
            format: None,
        };
        let json = Body::Json(document);
        let expected = br#"{"model":"m","stream":false,"temperature":0.5}"#;
        let unstreamed = Form {
            unstreamed: true,
            unformatted: false,
        };
        for body in [&written, &json] {
            assert!(body.streams());
            assert_eq!(&*body.bytes(unstreamed).unwrap(), expected);
            assert_eq!(&*body.bytes(Form::default()).unwrap(), text.as_bytes());
        }
        let plain = Body::Written {
            bytes: Bytes::from_static(b"{}"),
            stream: None,
            format: None,
        };
        assert!(!plain.streams());
        assert_eq!(&*plain.bytes(unstreamed).unwrap(), b"{}");
    }

    #[test]
    fn both_kinds_drop_the_reply_format_alike_with_or_without_streaming() {
        let document = json!({ "model": "m", "stream": true, "stream_options": { "include_usage": true }, "temperature": 0.5, "response_format": { "type": "json_object" } });
        let text = serde_json::to_string(&document).unwrap();
        let stream = text.find("\"stream\"").unwrap()..text.find(",\"temperature\"").unwrap();
        let format = text.find(",\"response_format\"").unwrap()..text.len() - 1;
        let written = Body::Written {
            bytes: Bytes::from(text.clone()),
            stream: Some(stream),
            format: Some(format),
        };
        let json = Body::Json(document);
        for body in [&written, &json] {
            assert!(body.formats());
            let sent = |unstreamed, unformatted| {
                let form = Form {
                    unstreamed,
                    unformatted,
                };
                String::from_utf8(body.bytes(form).unwrap().to_vec()).unwrap()
            };
            assert_eq!(
                sent(false, true),
                r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"temperature":0.5}"#
            );
            assert_eq!(
                sent(true, true),
                r#"{"model":"m","stream":false,"temperature":0.5}"#
            );
            assert_eq!(
                sent(true, false),
                r#"{"model":"m","stream":false,"temperature":0.5,"response_format":{"type":"json_object"}}"#
            );
            assert_eq!(sent(false, false), text);
        }
        // Ollama's key is `format`.
        let ollama = Body::Json(json!({ "model": "m", "format": { "type": "object" } }));
        assert!(ollama.formats());
        let form = Form {
            unstreamed: false,
            unformatted: true,
        };
        assert_eq!(&*ollama.bytes(form).unwrap(), br#"{"model":"m"}"#);
    }
}
