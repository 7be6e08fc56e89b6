//! The tiers that drive other people's programs, one binary: real MCP servers
//! (`mcp-tests`), SARIF Multitool, check-jsonschema, mermaid-cli and Graphviz (`tool-tests`),
//! Arize Phoenix (`otel-tests`) and a Restate server (`restate-tests`).

mod common;

mod diagrams;
mod mcp;
mod sarif;
mod schema;
mod serve;
mod telemetry;
