//! fuseraft's compiler: pure, synchronous, no IO.
//!
//! ```text
//!  config text ─syntax─▶ syntax::Node tree (spans) ─lower─▶ ir::Program ─check─▶ Vec<Diagnostic>
//!  (.yaml/.json/AGENT.md)                                          ▲
//!  IR text (.fir) ───────────────────────────────ir::parse─────────┘
//! ```
//!
//! The caller provides every byte through a [`source::FileReader`]; this crate never touches
//! the file system, the network, the clock or the environment.

pub mod check;
mod compile;
pub mod condition;
pub mod diagnostic;
pub mod ir;
mod lower;
mod misspelt;
pub mod source;
pub mod syntax;

pub use compile::{compile, compile_program, input_kind, Compiled, InputKind, Syntax};
pub use diagnostic::{Code, Diagnostic, Severity};
pub use source::{FileId, FileReader, MemoryFiles, SourceFile, SourceMap, Span};
