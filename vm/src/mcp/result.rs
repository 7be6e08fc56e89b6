//! What a call of an MCP tool returns, as the text fed back to the model: text blocks as
//! they are, other content (images, resources) as its JSON, structured content when there
//! is nothing else, capped on a character boundary.

use rmcp::model::{Content, RawContent};
use serde_json::Value as Json;

/// A call's content as text: text blocks as they are, anything else as its JSON.
pub(super) fn text(content: &[Content], structured: Option<&Json>) -> String {
    let mut parts: Vec<String> = content
        .iter()
        .map(|block| match &block.raw {
            RawContent::Text(text) => text.text.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    if parts.is_empty() {
        if let Some(structured) = structured {
            parts.push(structured.to_string());
        }
    }
    parts.join("\n")
}

pub(super) fn cap(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let dropped = text.len() - end;
        text.truncate(end);
        text.push_str(&format!("\n[... {dropped} more bytes not shown]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_read_as_text_with_other_content_as_json_and_capped() {
        let content = vec![Content::text("first"), Content::image("aGk=", "image/png")];
        let read = text(&content, None);
        let (first, image) = read.split_once('\n').unwrap();
        assert_eq!(first, "first");
        let image: Json = serde_json::from_str(image).unwrap();
        assert_eq!(image["data"], "aGk=");
        assert_eq!(image["mimeType"], "image/png");
        // Only structured content: its JSON.
        assert_eq!(text(&[], Some(&json!({"sum": 5}))), r#"{"sum":5}"#);
        // Capped on a character boundary, saying how much was cut.
        assert_eq!(cap("ééé".to_string(), 3), "é\n[... 4 more bytes not shown]");
        assert_eq!(cap("short".to_string(), 64), "short");
    }
}
