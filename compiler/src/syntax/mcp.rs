//! The typed syntax of `McpServers` (upstream's `McpServerConfig` list): each entry's keys
//! read with their spans; what they mean is checked by the lowering (`lower/mcp.rs`).

use super::fields::{wrong_type, Fields, Spanned};
use super::node::{Node, NodeKind};
use crate::diagnostic::Diagnostic;
use crate::source::Span;

pub const MCP_SERVER_KEYS: &[&str] = &[
    "Name",
    "Transport",
    "Command",
    "Args",
    "Env",
    "WorkingDirectory",
    "Url",
    "Headers",
    "TransportMode",
    "OAuth",
    // fuseraft's own: the longest the server may take to start, and each call.
    "TimeoutSeconds",
];

/// The `Transport` values (compared trimmed and case-insensitively; `stdio` when absent).
pub const TRANSPORTS: &[&str] = &["stdio", "http"];

/// `TransportMode` values meaning streamable HTTP (upstream also has `sse`, which the SDK
/// fuseraft uses does not speak).
pub const HTTP_MODES: &[&str] = &[
    "auto",
    "autodetect",
    "streamable-http",
    "streamablehttp",
    "streamable",
];

/// One `McpServers` entry as written.
#[derive(Clone, Debug, Default)]
pub struct McpServerDecl {
    pub span: Span,
    pub name: Option<Spanned<String>>,
    pub transport: Option<Spanned<String>>,
    pub command: Option<Spanned<String>>,
    pub args: Vec<Spanned<String>>,
    pub env: Vec<(Spanned<String>, Spanned<String>)>,
    pub working_directory: Option<Spanned<String>>,
    pub url: Option<Spanned<String>>,
    pub headers: Vec<(Spanned<String>, Spanned<String>)>,
    pub transport_mode: Option<Spanned<String>>,
    /// Where `OAuth` is written, if it is (fuseraft does not run the OAuth login).
    pub oauth: Option<Span>,
    pub timeout_seconds: Option<Spanned<u64>>,
}

/// Every entry of `McpServers`.
pub fn read_mcp_servers(items: &[Node], diags: &mut Vec<Diagnostic>) -> Vec<McpServerDecl> {
    items.iter().map(|item| read_server(item, diags)).collect()
}

fn read_server(node: &Node, diags: &mut Vec<Diagnostic>) -> McpServerDecl {
    let fields = Fields::new(node, "an MCP server", MCP_SERVER_KEYS, diags);
    McpServerDecl {
        span: node.span,
        name: fields.non_empty_str("Name", diags),
        transport: fields.non_empty_str("Transport", diags),
        command: fields.non_empty_str("Command", diags),
        args: fields.strings("Args", diags),
        env: string_map(fields.get("Env"), "Env", diags),
        working_directory: fields.non_empty_str("WorkingDirectory", diags),
        url: fields.non_empty_str("Url", diags),
        headers: string_map(fields.get("Headers"), "Headers", diags),
        transport_mode: fields.non_empty_str("TransportMode", diags),
        oauth: fields.get("OAuth").map(|node| node.span),
        timeout_seconds: fields.uint("TimeoutSeconds", diags),
    }
}

/// A mapping of names to scalar values (`Env`, `Headers`), in source order.
fn string_map(
    node: Option<&Node>,
    key: &str,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Spanned<String>, Spanned<String>)> {
    let Some(node) = node else {
        return Vec::new();
    };
    match &node.kind {
        NodeKind::Null => Vec::new(),
        NodeKind::Map(pairs) => pairs
            .iter()
            .filter_map(|(name, value)| match &value.kind {
                NodeKind::Scalar { text, .. } => Some((
                    Spanned::new(name.as_str().unwrap_or_default().to_string(), name.span),
                    Spanned::new(text.clone(), value.span),
                )),
                NodeKind::Null => Some((
                    Spanned::new(name.as_str().unwrap_or_default().to_string(), name.span),
                    Spanned::new(String::new(), value.span),
                )),
                _ => {
                    diags.push(wrong_type(value, "a string", key));
                    None
                }
            })
            .collect(),
        _ => {
            diags.push(wrong_type(node, "a mapping of names to values", key));
            Vec::new()
        }
    }
}
