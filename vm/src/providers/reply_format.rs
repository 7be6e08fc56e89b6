//! The reply format a structured state asks for: a JSON Schema of an object that holds the
//! fields its routes read, and how each wire format asks for it (OpenAI's `json_schema`, the
//! `json_object` with a `schema` of llama.cpp's servers, Ollama's `format`). A server that
//! refuses it is asked again without it (`retry.rs`); the routes still read whatever JSON
//! the reply holds.

use serde_json::{json, Map, Value as Json};

/// The schema of a reply holding `fields` (dot paths: `review.verdict` is a `verdict` inside
/// a `review` object). Every field is required; a leaf may be any JSON value, `null` being
/// how a reply says a field is absent (which is what `Exists: false` routes on).
pub(crate) fn schema(fields: &[String]) -> Json {
    let mut root = Map::new();
    for field in fields {
        let mut level = &mut root;
        let mut steps = field.split('.').peekable();
        while let Some(step) = steps.next() {
            let entry = level
                .entry(step.to_string())
                .or_insert_with(|| Json::Object(Map::new()));
            if steps.peek().is_none() {
                break;
            }
            if !entry.is_object() {
                *entry = Json::Object(Map::new());
            }
            let Json::Object(next) = entry else { break };
            level = next;
        }
    }
    object(root)
}

/// An object schema whose properties are `tree`'s keys, each an object of its own when it
/// has keys below it, else any value.
fn object(tree: Map<String, Json>) -> Json {
    let required: Vec<Json> = tree.keys().map(|key| json!(key)).collect();
    let properties: Map<String, Json> = tree
        .into_iter()
        .map(|(key, below)| match below {
            Json::Object(below) if !below.is_empty() => (key, object(below)),
            _ => (key, json!({})),
        })
        .collect();
    json!({ "type": "object", "properties": properties, "required": required })
}

/// OpenAI's `response_format` for `fields`: a named JSON Schema for OpenAI's and Azure's own
/// services, a JSON object with its schema for other compatible servers (llama.cpp's and
/// vLLM's read `schema`; none of them refuses `json_object`).
pub(crate) fn openai(fields: &[String], official: bool) -> Json {
    if official {
        json!({ "type": "json_schema", "json_schema": { "name": "routing", "schema": schema(fields) } })
    } else {
        json!({ "type": "json_object", "schema": schema(fields) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_paths_become_nested_required_objects() {
        let fields = [
            "verdict".to_string(),
            "review.score".to_string(),
            "review.notes".to_string(),
        ];
        assert_eq!(
            schema(&fields),
            json!({
                "type": "object",
                "properties": {
                    "review": {
                        "type": "object",
                        "properties": { "score": {}, "notes": {} },
                        "required": ["score", "notes"],
                    },
                    "verdict": {},
                },
                "required": ["verdict", "review"],
            })
        );
    }

    #[test]
    fn a_field_that_is_also_a_parent_is_an_object() {
        let fields = ["a".to_string(), "a.b".to_string()];
        assert_eq!(schema(&fields)["properties"]["a"]["required"], json!(["b"]));
    }
}
