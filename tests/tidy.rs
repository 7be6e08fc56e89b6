//! Guards on the code's shape, in the spirit of rust-analyzer's `xtask/tidy.rs`: every
//! source file says what it is, the compiler stays pure, the machine never awaits or does IO,
//! the VM sees only the compiler's `ir`, only the providers and the Http tools speak HTTP,
//! test files are only tests, no shipped file grows past a size without being listed, and
//! nothing in the repository cites a path of the machine it was written on. Each rule is a
//! function over files' text, and fails on a violation planted in its own test.

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

/// A file's shipped code: its text with every `#[cfg(test)]` item blanked out (a `mod …;`
/// line, or an item up to its matching closing brace), lines kept so numbers stay true.
fn shipped_code(path: &Path) -> String {
    strip_test_items(&std::fs::read_to_string(path).unwrap())
}

/// Whether an attribute line compiles what follows for tests only: `#[cfg(test)]`, or
/// `#[cfg(all(test, …))]`.
fn test_only(attribute: &str) -> bool {
    let attribute = attribute.trim();
    attribute == "#[cfg(test)]" || attribute.starts_with("#[cfg(all(test,")
}

/// Whether a file is a test module by its name (`tests.rs`, `*_tests.rs`).
fn is_test_file(name: &str) -> bool {
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// `text` with each `#[cfg(test)]` item replaced by blank lines.
fn strip_test_items(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut at = 0;
    while at < lines.len() {
        if !test_only(lines[at]) {
            out.push(lines[at]);
            at += 1;
            continue;
        }
        // The item: up to a line ending in `;` at depth 0, or the `}` closing its first `{`.
        let mut depth = 0i32;
        let mut opened = false;
        let mut end = at;
        for (index, line) in lines.iter().enumerate().skip(at + 1) {
            end = index;
            let code = line.split("//").next().unwrap_or_default();
            for ch in code.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
                break;
            }
        }
        out.extend(std::iter::repeat_n("", end + 1 - at));
        at = end + 1;
    }
    out.join("\n")
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

/// The shipped code of every Rust file under `dirs` but test modules, by path relative to
/// the root.
fn shipped(dirs: &[&str]) -> Vec<(String, String)> {
    rust_files(dirs)
        .iter()
        .filter(|path| !is_test_file(&path.file_name().unwrap_or_default().to_string_lossy()))
        .map(|path| (relative(path), shipped_code(path)))
        .collect()
}

/// Where `files`' code (comments aside) contains one of `words`: `path:line: `word``.
fn words_in(files: &[(String, String)], words: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, code) in files {
        for (index, line) in code.lines().enumerate() {
            let code_part = line.split("//").next().unwrap_or_default();
            for word in words {
                if code_part.contains(word) {
                    found.push(format!("{path}:{}: `{word}`", index + 1));
                }
            }
        }
    }
    found
}

/// Words that shipped code of a module must not contain, with why.
fn forbidden_in(dirs: &[&str], words: &[&str], why: &str) {
    let found = words_in(&shipped(dirs), words);
    assert!(found.is_empty(), "{why}:\n{}", found.join("\n"));
}

#[test]
fn a_test_module_in_the_middle_of_a_file_hides_nothing_after_it() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() { std::fs::read(\"x\"); }\n}\n\n#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod x;\nfn b() { std::fs::write(\"y\", \"\"); }\n";
    let stripped = strip_test_items(text);
    assert_eq!(stripped.lines().count(), text.lines().count());
    let found = words_in(&[("planted.rs".to_string(), stripped)], &["std::fs"]);
    assert_eq!(found, ["planted.rs:10: `std::fs`"]);
}

/// Where the VM's shipped code uses the compiler beyond its `ir` (the one contract between
/// the two: the VM knows nothing of YAML, pest or diagnostics).
fn compiler_uses_beyond_ir(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, code) in files {
        for (index, line) in code.lines().enumerate() {
            let code_part = line.split("//").next().unwrap_or_default();
            for (at, _) in code_part.match_indices("fuseraft_compiler::") {
                let rest = &code_part[at + "fuseraft_compiler::".len()..];
                let ir = rest.strip_prefix("ir").is_some_and(|after| {
                    !after.starts_with(|ch: char| ch.is_alphanumeric() || ch == '_')
                });
                if !ir {
                    found.push(format!("{path}:{}: {}", index + 1, code_part.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_vm_sees_only_the_compilers_ir() {
    let found = compiler_uses_beyond_ir(&shipped(&["vm/src"]));
    assert!(
        found.is_empty(),
        "the VM uses only `fuseraft_compiler::ir` (docs/ARCHITECTURE.md):\n{}",
        found.join("\n")
    );
    let planted = [(
        "vm/src/planted.rs".to_string(),
        "use fuseraft_compiler::ir::Program;\nuse fuseraft_compiler::syntax::json::short_escape;\nuse fuseraft_compiler::irish::X;\n".to_string(),
    )];
    assert_eq!(compiler_uses_beyond_ir(&planted).len(), 2);
}

/// Where code outside the model providers, the Http tools and the Restate client names
/// reqwest.
fn http_outside_its_places(files: &[(String, String)]) -> Vec<String> {
    let allowed = |path: &str| {
        path.starts_with("vm/src/providers/")
            || (path.starts_with("vm/src/tools/http") && path.ends_with(".rs"))
            || path == "src/serve/client.rs"
    };
    let outside: Vec<(String, String)> = files
        .iter()
        .filter(|(path, _)| !allowed(path))
        .cloned()
        .collect();
    words_in(&outside, &["reqwest"])
}

#[test]
fn only_the_providers_and_the_http_tools_speak_http() {
    let found = http_outside_its_places(&shipped(&["src", "vm/src", "compiler/src"]));
    assert!(
        found.is_empty(),
        "HTTP goes through `vm/src/providers/` (models), the Http tools (`vm/src/tools/http*.rs`) or the Restate client (`src/serve/client.rs`):\n{}",
        found.join("\n")
    );
    let planted = [
        (
            "vm/src/tools/fs.rs".to_string(),
            "let client = reqwest::Client::new();\n".to_string(),
        ),
        (
            "vm/src/tools/http.rs".to_string(),
            "let client = reqwest::Client::new();\n".to_string(),
        ),
    ];
    assert_eq!(
        http_outside_its_places(&planted),
        ["vm/src/tools/fs.rs:1: `reqwest`"]
    );
}

/// Test files (`tests.rs`, `*_tests.rs`) that a module declares without `#[cfg(test)]`, and
/// test files no module declares under it: such a name is for tests only (the rules above
/// skip test code, so a shipped file must not hide behind it).
fn test_files_not_under_cfg_test(files: &[(String, String)]) -> Vec<String> {
    let mut declared_under_test = std::collections::BTreeSet::new();
    let mut found = Vec::new();
    for (path, text) in files {
        let dir = Path::new(path).parent().unwrap_or(Path::new(""));
        let stem = Path::new(path)
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let line = line.trim();
            let Some(module) = line
                .strip_prefix("pub(crate) mod ")
                .or_else(|| line.strip_prefix("pub(super) mod "))
                .or_else(|| line.strip_prefix("pub mod "))
                .or_else(|| line.strip_prefix("mod "))
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            // The attributes right above the declaration.
            let attributes: Vec<&str> = lines[..index]
                .iter()
                .rev()
                .map(|line| line.trim())
                .take_while(|line| line.starts_with("#["))
                .collect();
            let file = attributes
                .iter()
                .find_map(|attribute| {
                    attribute
                        .strip_prefix("#[path = \"")
                        .and_then(|rest| rest.strip_suffix("\"]"))
                        .map(str::to_string)
                })
                .unwrap_or_else(|| format!("{module}.rs"));
            let base = if stem == "mod" || stem == "lib" || stem == "main" {
                dir.to_path_buf()
            } else {
                dir.join(&stem)
            };
            let named = Path::new(&file)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let target = if attributes.iter().any(|a| a.starts_with("#[path")) {
                dir.join(&file)
            } else {
                base.join(&file)
            };
            if is_test_file(&named) {
                if attributes.iter().any(|attribute| test_only(attribute)) {
                    declared_under_test.insert(target.display().to_string());
                } else {
                    found.push(format!(
                        "{path}:{}: `{line}` is not under `#[cfg(test)]`",
                        index + 1
                    ));
                }
            }
        }
    }
    for (path, _) in files {
        let name = Path::new(path)
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if is_test_file(&name) && !declared_under_test.contains(path) {
            found.push(format!(
                "{path}: a test file no module declares under `#[cfg(test)]`"
            ));
        }
    }
    found
}

#[test]
fn test_file_names_are_for_tests_only() {
    let mut files = Vec::new();
    for path in rust_files(&["src", "vm/src", "compiler/src"]) {
        files.push((relative(&path), std::fs::read_to_string(&path).unwrap()));
    }
    let found = test_files_not_under_cfg_test(&files);
    assert!(
        found.is_empty(),
        "`tests.rs` and `*_tests.rs` are test modules only (tidy rules skip them):\n{}",
        found.join("\n")
    );
    let planted = [
        (
            "vm/src/validate/mod.rs".to_string(),
            "mod related_tests;\n#[cfg(test)]\nmod tests;\n".to_string(),
        ),
        (
            "vm/src/validate/related_tests.rs".to_string(),
            "//! Runs commands.\n".to_string(),
        ),
        (
            "vm/src/validate/tests.rs".to_string(),
            "//! Tests.\n".to_string(),
        ),
        (
            "vm/src/tools/loose_tests.rs".to_string(),
            "//! Orphan.\n".to_string(),
        ),
    ];
    let found = test_files_not_under_cfg_test(&planted);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with("vm/src/validate/mod.rs:1:"),
        "{found:#?}"
    );
}

/// The most lines of shipped code a module has before it must be listed in
/// [`LARGE_MODULES`]: a module of one idea stays well under it.
const MAX_SHIPPED_LINES: usize = 800;

/// Modules over [`MAX_SHIPPED_LINES`], each waiting to be split along its ideas.
const LARGE_MODULES: &[&str] = &[
    "compiler/src/ir/parse.rs",
    "compiler/src/ir/print.rs",
    "compiler/src/syntax/fuseraft.rs",
    "vm/src/machine/mod.rs",
];

/// Modules over the cap and not listed, and listed modules that are no longer over it.
fn oversized(files: &[(String, String)], listed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, code) in files {
        let lines = code.lines().filter(|line| !line.trim().is_empty()).count();
        let over = lines > MAX_SHIPPED_LINES;
        let on_list = listed.contains(&path.as_str());
        if over && !on_list {
            found.push(format!(
                "{path}: {lines} lines of shipped code (cap {MAX_SHIPPED_LINES})"
            ));
        } else if on_list && !over {
            found.push(format!(
                "{path}: {lines} lines, under the cap: take it off `LARGE_MODULES`"
            ));
        }
    }
    found
}

#[test]
fn no_module_grows_past_the_cap_unlisted() {
    let found = oversized(&shipped(&["src", "vm/src", "compiler/src"]), LARGE_MODULES);
    assert!(found.is_empty(), "module sizes:\n{}", found.join("\n"));
    let big = "fn f() {}\n".repeat(MAX_SHIPPED_LINES + 1);
    let planted = [
        ("vm/src/big.rs".to_string(), big.clone()),
        ("vm/src/listed.rs".to_string(), big),
        ("vm/src/small.rs".to_string(), "fn f() {}\n".to_string()),
    ];
    let found = oversized(&planted, &["vm/src/listed.rs", "vm/src/small.rs"]);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].starts_with("vm/src/big.rs") && found[1].starts_with("vm/src/small.rs"));
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
        if path.starts_with(root().join("vm/src/sandbox")) || is_test_file(&name) {
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

/// The VM's core modules, which must import each other in one direction only.
const CORE: &[&str] = &["machine", "checkpoint", "effect", "driver", "providers"];

/// The core module a VM file belongs to (`vm/src/machine/turn.rs` → `machine`).
fn core_module(path: &str) -> Option<&'static str> {
    let rest = path.strip_prefix("vm/src/")?;
    let first = rest.split(['/', '.']).next()?;
    CORE.iter().copied().find(|module| *module == first)
}

/// The core modules `text` names by path: `crate::X::…`, `crate::X;` and the members of
/// a `crate::{…}` group.
fn core_named(text: &str) -> Vec<&'static str> {
    let mut named = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let heads: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group
                .split('}')
                .next()
                .unwrap_or_default()
                .split(',')
                .map(|item| item.trim())
                .collect(),
            None => vec![rest],
        };
        for head in heads {
            let name: String = head
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let Some(module) = CORE.iter().copied().find(|module| *module == name) {
                if !named.contains(&module) {
                    named.push(module);
                }
            }
        }
    }
    named
}

/// A circle among the core modules' imports, as `a -> b -> a`, if any.
fn core_circle(files: &[(String, String)]) -> Option<String> {
    let mut edges: std::collections::BTreeSet<(&str, &str)> = Default::default();
    for (path, text) in files {
        let Some(from) = core_module(path) else {
            continue;
        };
        for to in core_named(text) {
            if to != from {
                edges.insert((from, to));
            }
        }
    }
    fn walk<'a>(
        at: &'a str,
        edges: &std::collections::BTreeSet<(&'a str, &'a str)>,
        path: &mut Vec<&'a str>,
    ) -> Option<String> {
        if let Some(start) = path.iter().position(|seen| *seen == at) {
            let mut circle = path[start..].to_vec();
            circle.push(at);
            return Some(circle.join(" -> "));
        }
        path.push(at);
        for (_, to) in edges.iter().filter(|(from, _)| *from == at) {
            if let Some(circle) = walk(to, edges, path) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    CORE.iter()
        .find_map(|start| walk(start, &edges, &mut Vec::new()))
}

#[test]
fn the_vm_core_imports_in_one_direction() {
    let found = core_circle(&shipped(&["vm/src"]));
    assert_eq!(
        found, None,
        "machine, checkpoint, effect, driver and providers import each other in a circle"
    );
    let planted = [
        (
            "vm/src/effect.rs".to_string(),
            "use crate::{history::Message, machine::Branch};\n".to_string(),
        ),
        (
            "vm/src/machine/turn.rs".to_string(),
            "use crate::effect::ModelCall;\n".to_string(),
        ),
    ];
    assert_eq!(
        core_circle(&planted).as_deref(),
        Some("machine -> effect -> machine")
    );
}

/// The most lines a function of `exec` spans (its signature to its closing brace).
const MAX_EXEC_FN_LINES: usize = 80;

/// Functions of `files` longer than [`MAX_EXEC_FN_LINES`]: each `fn` line to the first line
/// after it that closes a brace at the `fn`'s own indentation.
fn long_functions(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, code) in files {
        let lines: Vec<&str> = code.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let body = line.trim_start();
            let indent = line.len() - body.len();
            let is_fn = body.starts_with("fn ")
                || (body.starts_with("pub") && body.contains(" fn "))
                || body.starts_with("async fn ");
            if !is_fn || body.ends_with(';') {
                continue;
            }
            let close = format!("{}}}", " ".repeat(indent));
            let end = lines[at + 1..]
                .iter()
                .position(|later| later.starts_with(&close) && later.trim() == "}")
                .map_or(lines.len(), |offset| at + 1 + offset);
            let span = end - at + 1;
            if span > MAX_EXEC_FN_LINES {
                found.push(format!(
                    "{path}:{}: {span} lines: {}",
                    at + 1,
                    body.trim_end()
                ));
            }
        }
    }
    found
}

#[test]
fn exec_reads_top_to_bottom() {
    let files: Vec<(String, String)> = shipped(&["src/commands"])
        .into_iter()
        .filter(|(path, _)| {
            path == "src/commands/exec.rs"
                || path == "src/commands/exec_provider.rs"
                || path.starts_with("src/commands/exec/")
        })
        .collect();
    assert!(files.len() > 5, "the exec modules are read");
    let found = long_functions(&files);
    assert!(
        found.is_empty(),
        "every function of `exec` fits in {MAX_EXEC_FN_LINES} lines:\n{}",
        found.join("\n")
    );
    let planted = format!("fn long() {{\n{}}}\n", "    step();\n".repeat(90));
    assert_eq!(
        long_functions(&[("src/commands/exec.rs".to_string(), planted)]).len(),
        1
    );
}

/// The most integration-test binaries the workspace builds (each one links the crate).
const MAX_TEST_BINARIES: usize = 5;

/// What is wrong with the integration tests' layout, given each manifest's text and each
/// test directory's files (`(path, text)`, paths relative to the workspace): a manifest
/// that lets cargo make a binary of every file, more than [`MAX_TEST_BINARIES`] roots, or a
/// file under `tests/` that no root declares (it would never be compiled, so never fail).
fn test_layout_faults(manifests: &[(&str, String)], files: &[(String, String)]) -> Vec<String> {
    let mut faults = Vec::new();
    let mut roots = Vec::new();
    for (dir, manifest) in manifests {
        if !manifest.contains("autotests = false") {
            faults.push(format!("{dir}Cargo.toml: no `autotests = false`"));
        }
        for line in manifest.lines() {
            if let Some(path) = line.strip_prefix("path = \"tests/") {
                roots.push(format!("{dir}tests/{}", path.trim_end_matches('"')));
            }
        }
    }
    if roots.len() > MAX_TEST_BINARIES {
        faults.push(format!(
            "{} test binaries, at most {MAX_TEST_BINARIES}: {}",
            roots.len(),
            roots.join(", ")
        ));
    }
    let declared = |dir: &str, name: &str| {
        let line = format!("mod {name};");
        files.iter().any(|(path, text)| {
            roots.contains(path) && path.starts_with(dir) && text.lines().any(|l| l.trim() == line)
        })
    };
    for (path, _) in files {
        let Some((dir, rest)) = path.split_once("tests/") else {
            continue;
        };
        let dir = format!("{dir}tests/");
        let name = match rest.split_once('/') {
            None => rest.trim_end_matches(".rs"),
            Some((name, "mod.rs")) => name,
            Some(_) => continue,
        };
        if !roots.contains(path) && !declared(&dir, name) {
            faults.push(format!("{path}: no tier's root declares `mod {name};`"));
        }
    }
    faults
}

#[test]
fn the_integration_tests_are_five_binaries() {
    let read = |path: &str| std::fs::read_to_string(root().join(path)).unwrap_or_default();
    let manifests = [("", read("Cargo.toml")), ("vm/", read("vm/Cargo.toml"))];
    let mut paths = Vec::new();
    for dir in ["tests", "vm/tests"] {
        files(&root().join(dir), &[".rs"], &mut paths);
    }
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|path| {
            (
                relative(path),
                std::fs::read_to_string(path).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(test_layout_faults(&manifests, &files), Vec::<String>::new());

    let planted_manifest = [("", "[[test]]\npath = \"tests/suite.rs\"\n".to_string())];
    let planted = [
        ("tests/suite.rs".to_string(), "mod run;\n".to_string()),
        ("tests/run.rs".to_string(), String::new()),
        ("tests/forgotten.rs".to_string(), String::new()),
    ];
    assert_eq!(
        test_layout_faults(&planted_manifest, &planted),
        [
            "Cargo.toml: no `autotests = false`",
            "tests/forgotten.rs: no tier's root declares `mod forgotten;`",
        ]
    );
    let six = "[[test]]\npath = \"tests/a.rs\"\n".repeat(6);
    let faults = test_layout_faults(&[("", format!("autotests = false\n{six}"))], &[]);
    assert!(
        faults[0].starts_with("6 test binaries, at most 5"),
        "{faults:?}"
    );
}

/// Where `files` read a `settings` field: the written settings are the compiler's to type
/// (`ir::Program::settle_settings`); the VM reads the typed sections. The providers' own
/// `Settings` (timeouts, retries) is theirs, under `vm/src/providers/`.
fn settings_reads(files: &[(String, String)]) -> Vec<String> {
    let field = regex::Regex::new(r"\.settings\b").expect("a valid pattern");
    let mut found = Vec::new();
    for (path, code) in files {
        if path.starts_with("vm/src/providers/") {
            continue;
        }
        for (index, line) in code.lines().enumerate() {
            let code_part = line.split("//").next().unwrap_or_default();
            if field.is_match(code_part) {
                found.push(format!("{path}:{}: {}", index + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_vm_reads_typed_settings_only() {
    let found = settings_reads(&shipped(&["vm/src"]));
    assert!(
        found.is_empty(),
        "the VM reads written settings:\n{}",
        found.join("\n")
    );
    let planted = [
        (
            "vm/src/driver/planted.rs".to_string(),
            "let mode = program\n    .settings\n    .iter();\n".to_string(),
        ),
        (
            "vm/src/providers/http.rs".to_string(),
            "let budget = Budget::new(&self.settings);\n".to_string(),
        ),
    ];
    assert_eq!(
        settings_reads(&planted),
        ["vm/src/driver/planted.rs:2: .settings"]
    );
}
