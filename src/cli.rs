//! The command line, as clap types only.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// fuseraft: compile, check and run workflows of LLM agents.
#[derive(Debug, Parser)]
#[command(name = "fuseraft", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour in diagnostics: auto (when stderr is a terminal), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compile a workflow into the fuseraft IR.
    ///
    /// INPUT is a fuseraft config (YAML or JSON, `Orchestration:` root), a tama `AGENT.md`
    /// of an fsm agent, a tama project directory (its `entrypoint`), or a `.fir` IR file.
    Compile(CompileArgs),
}

#[derive(Debug, clap::Args)]
pub struct CompileArgs {
    /// The workflow to compile.
    pub input: PathBuf,
    /// What to print: the IR text form, JSON, Graphviz DOT or a Mermaid flowchart.
    #[arg(long, value_enum, default_value_t = Emit::Ir)]
    pub emit: Emit,
    /// Write the output to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace agent instructions and prompts with their length (for sharing structure).
    #[arg(long)]
    pub elide_text: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    Ir,
    Json,
    Dot,
    Mermaid,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
