//! A model call's result as a journal entry: JSON that gives back the same
//! `Result<ModelReply, String>`, an error being a value like a reply (the machine's own
//! failure handling decides what it means; nothing retries it a second time).

use fuseraft_vm::effect::ModelReply;
use fuseraft_vm::history::{ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

#[derive(Serialize, Deserialize)]
enum Entry {
    #[serde(rename = "reply")]
    Reply {
        text: String,
        tool_calls: Vec<Call>,
        usage: [u64; 4],
        cost: Option<f64>,
    },
    #[serde(rename = "error")]
    Error(String),
}

#[derive(Serialize, Deserialize)]
struct Call {
    id: String,
    name: String,
    args: Json,
}

/// The journal entry of `result`.
pub fn encode(result: &Result<ModelReply, String>) -> String {
    let entry = match result {
        Ok(reply) => Entry::Reply {
            text: reply.text.clone(),
            tool_calls: reply
                .tool_calls
                .iter()
                .map(|call| Call {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.args.clone(),
                })
                .collect(),
            usage: [
                reply.usage.input_tokens,
                reply.usage.output_tokens,
                reply.usage.cache_read_tokens,
                reply.usage.cache_write_tokens,
            ],
            cost: reply.cost,
        },
        Err(reason) => Entry::Error(reason.clone()),
    };
    serde_json::to_string(&entry).unwrap_or_else(|error| {
        serde_json::to_string(&Entry::Error(format!(
            "the reply cannot be journaled: {error}"
        )))
        .unwrap_or_default()
    })
}

/// The result a journal entry stands for.
pub fn decode(text: &str) -> Result<ModelReply, String> {
    match serde_json::from_str::<Entry>(text) {
        Ok(Entry::Reply {
            text,
            tool_calls,
            usage: [input_tokens, output_tokens, cache_read_tokens, cache_write_tokens],
            cost,
        }) => Ok(ModelReply {
            text,
            tool_calls: tool_calls
                .into_iter()
                .map(|call| ToolCall {
                    id: call.id,
                    name: call.name,
                    args: call.args,
                    result: None,
                    ok: false,
                    denied: None,
                })
                .collect(),
            usage: Usage {
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_write_tokens,
            },
            cost,
        }),
        Ok(Entry::Error(reason)) => Err(reason),
        Err(error) => Err(format!(
            "a journaled model reply does not read back: {error}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_and_an_error_read_back_as_they_were() {
        let reply = ModelReply {
            text: "done \"quoted\"\n".into(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "write_file".into(),
                args: serde_json::json!({"path": "a.txt", "content": "é"}),
                result: None,
                ok: false,
                denied: None,
            }],
            usage: Usage {
                input_tokens: 10,
                output_tokens: 3,
                cache_read_tokens: 2,
                cache_write_tokens: 1,
            },
            cost: Some(0.25),
        };
        for result in [Ok(reply), Err("HTTP 429: slow down".to_string())] {
            assert_eq!(decode(&encode(&result)), result);
        }
    }
}
