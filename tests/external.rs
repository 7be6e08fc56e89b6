//! The tiers that drive other people's programs, one binary: real MCP servers
//! (`mcp-tests`), SARIF Multitool, check-jsonschema, mermaid-cli and Graphviz (`tool-tests`),
//! Arize Phoenix (`otel-tests`) and a Restate server (`restate-tests`).

mod common;

/// The browser tier's WebDriver client, for the web view of a server's sessions.
#[cfg(all(feature = "restate-tests", feature = "browser-tests"))]
#[path = "web_view/webdriver.rs"]
#[allow(dead_code)]
mod webdriver;

mod diagrams;
mod mcp;
mod sarif;
mod schema;
mod serve;
mod telemetry;
