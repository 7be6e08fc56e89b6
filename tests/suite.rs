//! The Rust-only tier, one binary: every test that needs nothing beyond the toolchain
//! (and python3 for a few sandbox probes). A plain `cargo test` runs it.

mod common;

mod audit;
mod change_log_runs;
mod check;
mod cli;
mod compile;
mod config_show;
mod conventions;
mod eval;
mod exec;
mod fork_runs;
mod hitl;
mod hostile_run;
mod ir_fixtures;
mod kill;
mod log_events;
mod magentic_exec;
mod mcp_trust;
mod memory;
mod notes_resume;
mod paths;
mod properties;
mod provider_costs;
mod provider_retries;
mod provider_runs;
mod provider_sessions;
mod regressions;
mod resume_compat;
mod rewind;
mod run;
mod sandbox;
mod scenarios;
mod secrets;
mod session_attacks;
mod session_store;
mod sessions_remove;
mod sub_agent_runs;
mod terminal_view;
mod tidy;
mod upstream_events;
mod web_view_approvals;
