//! `fuseraft compile INPUT --emit ir|json|dot|mermaid [-o FILE]`.

use std::io::Write;

use fuseraft_compiler::ir::{self, PrintOptions};

use super::exit;
use crate::cli::{CompileArgs, Emit};
use crate::disk::Project;
use crate::render::{self, Style};

pub fn run(args: &CompileArgs, style: Style) -> u8 {
    // No checks follow, so the parsed tree need not outlive the lowering.
    let compiled = fuseraft_compiler::compile_program(&args.input, &Project::new());
    let mut stderr = std::io::stderr().lock();
    let _ = write!(
        stderr,
        "{}",
        render::all(&compiled.diagnostics, &compiled.sources, style)
    );
    if compiled.unreadable {
        return exit::USAGE;
    }
    let Some(program) = compiled.program else {
        return exit::FINDINGS;
    };
    let text = match args.emit {
        Emit::Ir => ir::print(
            &program,
            &PrintOptions {
                elide_text: args.elide_text,
            },
        ),
        Emit::Json => {
            let mut json = serde_json::to_string_pretty(&ir::to_json(&program)).unwrap_or_default();
            json.push('\n');
            json
        }
        Emit::Dot => ir::to_dot(&program),
        Emit::Mermaid => ir::to_mermaid(&program),
    };
    match &args.output {
        None => {
            if let Some(code) = super::print_or_fail(&text) {
                return code;
            }
        }
        Some(path) => {
            if let Err(error) = std::fs::write(path, text) {
                let _ = writeln!(stderr, "error: cannot write `{}`: {error}", path.display());
                return exit::USAGE;
            }
        }
    }
    exit::OK
}
