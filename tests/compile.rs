//! Compiler snapshots: every fixture under `fixtures/compile/` and every config of the
//! shared upstream corpus, compiled to IR text (or to rendered diagnostics), with the
//! IR text round trip checked for each program.
//!
//! Tests are data: a new case is a new file under `fixtures/compile/ok/` or `.../err/`.

use crate::common;

use common::{corpus_inputs, corpus_root};

use std::path::{Path, PathBuf};

use fuseraft::disk::Disk;
use fuseraft::render::{self, Style};
use fuseraft_compiler::ir::{self, PrintOptions};
use fuseraft_compiler::{compile, Compiled, Severity};

/// `print(parse(print(p))) == print(p)`, and the parsed program equals the original.
fn assert_round_trip(program: &ir::Program, what: &Path) {
    let text = ir::print(program, &PrintOptions::default());
    let parsed = ir::parse(&text).unwrap_or_else(|error| {
        panic!(
            "{}: printed IR does not parse: {error:?}\n{text}",
            what.display()
        )
    });
    let again = ir::print(&parsed, &PrintOptions::default());
    assert_eq!(
        text,
        again,
        "{}: IR text round trip changed the text",
        what.display()
    );
    assert_eq!(
        &parsed,
        program,
        "{}: IR text round trip changed the program",
        what.display()
    );
}

/// Relative paths keep snapshots identical on every machine.
fn relative(path: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match path.strip_prefix(root) {
        Ok(rest) => rest.to_path_buf(),
        Err(_) => path.to_path_buf(),
    }
}

fn diagnostics(compiled: &Compiled) -> String {
    compiled
        .diagnostics
        .iter()
        .map(|diag| render::human(diag, &compiled.sources, Style::plain()))
        .collect::<Vec<_>>()
        .join("")
}

/// The input a fixture file stands for: a tama project's directory for its `tama.toml`.
fn input_of(path: &Path) -> PathBuf {
    let relative = relative(path);
    if relative.file_name().is_some_and(|name| name == "tama.toml") {
        relative.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        relative
    }
}

#[test]
fn compile_ok_fixtures() {
    insta::glob!(
        "../fixtures",
        "compile/ok/**/*.{yaml,yml,json,fir,toml}",
        |path| {
            // Files inside a tama project or included by a config are not inputs of their own.
            let relative = relative(path);
            let text = relative.to_string_lossy().replace('\\', "/");
            if text.contains("/agents/") || text.contains("/include/") {
                return;
            }
            let input = input_of(path);
            let compiled = compile(&input, &Disk);
            let program = compiled.program.as_ref().unwrap_or_else(|| {
                panic!(
                    "{} does not compile:\n{}",
                    input.display(),
                    diagnostics(&compiled)
                )
            });
            assert_round_trip(program, &input);
            let mut out = ir::print(program, &PrintOptions::default());
            let notes = diagnostics(&compiled);
            if !notes.is_empty() {
                out.push_str("\n----- DIAGNOSTICS\n");
                out.push_str(&notes);
            }
            insta::assert_snapshot!(out);
        }
    );
}

#[test]
fn compile_err_fixtures() {
    insta::glob!(
        "../fixtures",
        "compile/err/**/*.{yaml,yml,json,fir,toml,md}",
        |path| {
            let relative = relative(path);
            let text = relative.to_string_lossy().replace('\\', "/");
            if text.contains("/include/")
                || (text.contains("/agents/") && !text.ends_with("AGENT.md"))
            {
                return;
            }
            // In a tama project only the entry agent's AGENT.md (`main`) is an input.
            if text.contains("/agents/") && !text.contains("/agents/main/") {
                return;
            }
            let input = input_of(path);
            let compiled = compile(&input, &Disk);
            let errors = compiled
                .diagnostics
                .iter()
                .filter(|diag| diag.severity == Severity::Error)
                .count();
            assert!(
                errors > 0 || compiled.unreadable,
                "{} should fail to compile but produced a program",
                input.display()
            );
            // The file name starts with the code it must trigger (`FR010_...`).
            let stem = relative
                .components()
                .find_map(|part| {
                    let part = part.as_os_str().to_string_lossy();
                    part.starts_with("FR").then(|| part[..5].to_string())
                })
                .unwrap_or_default();
            assert!(
                compiled
                    .diagnostics
                    .iter()
                    .any(|diag| diag.code.as_str() == stem),
                "{} should report {stem}, got:\n{}",
                input.display(),
                diagnostics(&compiled)
            );
            insta::assert_snapshot!(diagnostics(&compiled));
        }
    );
}

// ---- The shared corpus (present on developer machines and in CI, not in a user's clone).

#[test]
fn corpus_compiles_with_snapshots_and_round_trips() {
    let Some(root) = corpus_root() else { return };
    let inputs = corpus_inputs(&root);
    assert!(
        inputs.len() >= 30,
        "expected the whole corpus, found {} inputs",
        inputs.len()
    );
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/corpus");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for path in &inputs {
            let shown = path
                .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| path.clone());
            let shown = PathBuf::from(shown.to_string_lossy().replace("/./", "/"));
            let compiled = compile(&shown, &common::VariantOverlay);
            let program = compiled.program.as_ref().unwrap_or_else(|| {
                panic!(
                    "corpus input {} does not compile:\n{}",
                    shown.display(),
                    diagnostics(&compiled)
                )
            });
            assert_round_trip(program, &shown);
            // Third-party prose (instructions, descriptions, prompts) stays out of snapshots.
            let mut out = ir::print(program, &PrintOptions { elide_text: true });
            for diag in &compiled.diagnostics {
                out.push_str(&format!("# {}\n", render::short(diag, &compiled.sources)));
            }
            let rel = path.strip_prefix(&root).unwrap_or(path);
            let name = rel
                .to_string_lossy()
                .replace(['/', '\\'], "__")
                .replace('.', "_");
            insta::assert_snapshot!(name, out);
        }
    });
}
