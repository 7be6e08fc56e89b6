//! fuseraft's VM: executes an `ir::Program` through a closed set of effects.
//!
//! ```text
//!  Machine::step() ─▶ Request (model call, tools, checks, approval) ─▶ driver performs it
//!        ▲                                                                  │
//!        └──────────────── Machine::resume(Response) ◀────────────────────┘
//! ```
//!
//! The [`machine`] is pure: it never awaits, reads files or calls the network, so routing
//! is deterministic and every run can be replayed from its effect results. The [`driver`]
//! performs effects with tokio: models through a [`driver::Models`] provider (the
//! [`replay`] provider answers from a script), tools in a sandbox, validators on disk.
//! This crate knows `fuseraft_compiler::ir` only: no YAML, no pest.

// An item is `pub` only when another crate may use it: the rest says `pub(crate)`.
#![warn(unreachable_pub)]

pub mod changes;
pub mod checkpoint;
#[cfg(unix)]
pub mod confine;
pub mod context_block;
pub mod document;
pub mod driver;
pub mod effect;
pub mod event;
pub mod history;
pub mod journal;
mod json_string;
pub mod machine;
pub mod mcp;
pub mod memory;
pub mod model_windows;
pub mod models;
pub mod notices;
pub mod providers;
pub mod replay;
pub mod sandbox;
#[cfg(unix)]
pub mod state_dir;
pub mod tools;
pub mod validate;
mod words;
