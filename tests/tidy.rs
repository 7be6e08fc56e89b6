//! Guards on the code's shape, in the spirit of rust-analyzer's `xtask/tidy.rs`: every
//! source file says what it is, the compiler stays pure, the machine never awaits or does IO,
//! and nothing in the repository cites a path of the machine it was written on.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with one of `extensions`, `target/` skipped.
fn files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files(&path, extensions, out);
            }
        } else if extensions.iter().any(|ext| name.ends_with(ext)) {
            out.push(path);
        }
    }
}

fn rust_files(dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        files(&root().join(dir), &[".rs"], &mut out);
    }
    out.sort();
    out
}

/// A file's code before its first `#[cfg(test)]` (unit tests sit at the end of a module).
fn shipped_code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let mut missing = Vec::new();
    for path in rust_files(&["src", "compiler", "vm", "tests", "benches", "fuzz"]) {
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.trim_start().starts_with("//!") {
            missing.push(relative(&path));
        }
    }
    assert!(
        missing.is_empty(),
        "these files do not open with a `//!` line saying what they are: {missing:#?}"
    );
}

/// Words that shipped code of a module must not contain, with why.
fn forbidden_in(dirs: &[&str], words: &[&str], why: &str) {
    let mut found = Vec::new();
    for path in rust_files(dirs) {
        let code = shipped_code(&path);
        for (index, line) in code.lines().enumerate() {
            let code_part = line.split("//").next().unwrap_or_default();
            for word in words {
                if code_part.contains(word) {
                    found.push(format!("{}:{}: `{word}`", relative(&path), index + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{why}:\n{}", found.join("\n"));
}

#[test]
fn the_compiler_does_no_io_and_prints_nothing() {
    forbidden_in(
        &["compiler/src"],
        &[
            "std::fs",
            "std::env",
            "std::process",
            "tokio",
            "println!",
            "eprintln!",
            "print!(",
            "eprint!(",
        ],
        "the compiler is pure (files come through `FileReader`, output through its return values)",
    );
}

#[test]
fn the_machine_never_awaits_or_does_io() {
    forbidden_in(
        &["vm/src/machine"],
        &[
            ".await",
            "async ",
            "std::fs",
            "std::env",
            "std::process",
            "tokio",
            "reqwest",
            "println!",
            "eprintln!",
        ],
        "the machine is a pure step function (the driver performs its requests)",
    );
}

#[test]
fn nothing_cites_a_path_of_the_machine_it_was_written_on() {
    let mut found = Vec::new();
    let mut paths = Vec::new();
    for dir in [
        "src",
        "compiler",
        "vm",
        "tests",
        "benches",
        "fuzz",
        "docs",
        "fixtures",
        "templates",
    ] {
        files(
            &root().join(dir),
            &[".rs", ".md", ".yaml", ".yml", ".json", ".toml"],
            &mut paths,
        );
    }
    paths.push(root().join("README.md"));
    let this_file = root().join("tests/tidy.rs");
    for path in paths.iter().filter(|path| **path != this_file) {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (index, line) in text.lines().enumerate() {
            // An absolute path begins after a quote, a backtick, a space or the line start
            // (test data such as `/abs/work/a.rs` is not a citation).
            let cited = ["/work/", "/root/", "/home/"].iter().any(|prefix| {
                line.match_indices(prefix).any(|(at, _)| {
                    at == 0 || matches!(line.as_bytes()[at - 1], b'"' | b'`' | b' ' | b'(')
                })
            });
            if cited {
                found.push(format!("{}:{}", relative(path), index + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "absolute paths of a development machine (a reader's machine has none of them):\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_sandbox_starts_processes() {
    // Every process fuseraft starts for a config, a model or a repository runs in the run's
    // confinement: `vm/src/sandbox/` builds every `Command`, the rest only takes one from
    // `sandbox::command` (docs/security.md, "The confinement").
    let mut found = Vec::new();
    for path in rust_files(&["src", "vm/src"]) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let test_module = name == "tests.rs" || name.ends_with("_tests.rs");
        if path.starts_with(root().join("vm/src/sandbox")) || test_module {
            continue;
        }
        for (index, line) in shipped_code(&path).lines().enumerate() {
            let code_part = line.split("//").next().unwrap_or_default();
            if code_part.contains("Command::new(") {
                found.push(format!("{}:{}", relative(&path), index + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a process started outside `sandbox::command` runs unconfined:\n{}",
        found.join("\n")
    );
}
