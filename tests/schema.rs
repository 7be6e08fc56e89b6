//! `fuseraft schema`: a JSON Schema that every bundled config (fixtures, templates) and every
//! upstream corpus config satisfies, read the way the YAML language server reads YAML, but
//! for the keys `check` itself reports as unknown (FR001: upstream ignores them silently);
//! and that rejects unknown keys and wrong types as `check` does. Measured over every config
//! in `fixtures/` and the corpus, with the Rust `jsonschema` crate and with the PyPI
//! `check-jsonschema` CLI (`.ci/schema-deps.sh` installs it): the schema accepts every config
//! `check` accepts and rejects at least 90% of those `check` rejects for a key or value
//! error (`agreement` says which those are).

mod agreement;
use crate::common;

use std::path::{Path, PathBuf};

use fuseraft_compiler::syntax::node::{Budget, Node, NodeKind};
use fuseraft_compiler::FileId;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The schema as the command prints it.
fn validator() -> jsonschema::Validator {
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("schema")
        .output()
        .unwrap();
    assert!(printed.status.success());
    let schema: Value = serde_json::from_slice(&printed.stdout).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("a valid JSON Schema")
}

/// A YAML node as JSON, plain scalars typed by YAML 1.2's core schema (as editors do).
fn json(node: &Node) -> Value {
    match &node.kind {
        NodeKind::Null => Value::Null,
        NodeKind::Scalar { text, quoted: true } => Value::String(text.clone()),
        NodeKind::Scalar {
            text,
            quoted: false,
        } => {
            match text.as_str() {
                "true" | "True" | "TRUE" => return Value::Bool(true),
                "false" | "False" | "FALSE" => return Value::Bool(false),
                "null" | "Null" | "NULL" | "~" => return Value::Null,
                _ => {}
            }
            if let Ok(number) = text.parse::<i64>() {
                return Value::from(number);
            }
            match text.parse::<f64>() {
                Ok(number) if number.is_finite() && !text.contains(char::is_alphabetic) => {
                    serde_json::Number::from_f64(number)
                        .map_or(Value::String(text.clone()), Value::Number)
                }
                _ => Value::String(text.clone()),
            }
        }
        NodeKind::Seq(items) => Value::Array(items.iter().map(json).collect()),
        NodeKind::Map(pairs) => Value::Object(
            pairs
                .iter()
                .map(|(key, value)| (key.as_str().unwrap_or_default().to_string(), json(value)))
                .collect(),
        ),
    }
}

/// A config file as the language server sees it.
fn document(path: &Path) -> Value {
    read_document(path).unwrap_or_else(|| panic!("{}: not YAML or JSON", path.display()))
}

/// A config file as the language server sees it, if it parses.
fn read_document(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    if path.extension().is_some_and(|ext| ext == "json") {
        return serde_json::from_str(&text).ok();
    }
    let node = fuseraft_compiler::syntax::yaml::parse(FileId(0), &text, &Budget::default()).ok()?;
    Some(json(&node))
}

/// Every bundled config with an `Orchestration:` root that compiles cleanly.
fn bundled() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["fixtures/compile/ok", "fixtures/diagram"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "json")
            {
                out.push(path);
            }
        }
    }
    for parent in ["fixtures/run", "templates"] {
        for entry in std::fs::read_dir(root().join(parent)).unwrap() {
            for name in ["config.yaml", "fuseraft.yaml"] {
                let path = entry.as_ref().unwrap().path().join(name);
                if path.exists() {
                    out.push(path);
                }
            }
        }
    }
    for entry in std::fs::read_dir(root().join("fixtures/check")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // A `_pass_` fixture passes its own rule; only those `check` accepts are bundled
        // configs the schema must accept too.
        if name.contains("_pass") && name.ends_with(".yaml") && !has_errors(&path) {
            out.push(path);
        }
    }
    out.sort();
    out.retain(|path| {
        std::fs::read_to_string(path).is_ok_and(|text| text.contains("Orchestration"))
    });
    assert!(out.len() > 60, "{} configs", out.len());
    out
}

/// Whether `check` reports an error-level finding in `path`.
fn has_errors(path: &Path) -> bool {
    let compiled = fuseraft_compiler::compile(path, &fuseraft::disk::Disk);
    fuseraft_compiler::check::check(&compiled).has_errors()
}

fn problems(validator: &jsonschema::Validator, path: &Path) -> Vec<String> {
    let document = document(path);
    validator
        .iter_errors(&document)
        .map(|error| format!("{}: {} at {}", path.display(), error, error.instance_path()))
        .collect()
}

/// The keys `check` reports as unknown in `path` (FR001), suppressed findings included.
fn unknown_keys(path: &Path) -> Vec<String> {
    let compiled = fuseraft_compiler::compile(path, &fuseraft::disk::Disk);
    let findings = fuseraft_compiler::check::check(&compiled);
    findings
        .diagnostics
        .iter()
        .chain(findings.suppressed.iter().map(|s| &s.diagnostic))
        .filter(|diag| diag.code == fuseraft_compiler::Code::UnknownKey)
        .filter_map(|diag| diag.message.split('`').nth(1).map(str::to_string))
        .collect()
}

/// The schema's problems with `path` that `check` does not report too: an unexpected key is
/// agreed when `check` finds the same key unknown (FR001, which upstream ignores silently);
/// any other problem is a disagreement.
fn disagreements(validator: &jsonschema::Validator, path: &Path) -> Vec<String> {
    let found = problems(validator, path);
    if found.is_empty() {
        return found;
    }
    let unknown = unknown_keys(path);
    found
        .into_iter()
        .filter(|problem| {
            // "Additional properties are not allowed ('A', 'B' were unexpected)".
            let keys: Vec<&str> = problem
                .split_once("not allowed (")
                .and_then(|(_, rest)| rest.split(" unexpected)").next())
                .map(|list| {
                    list.trim_end_matches(" was")
                        .trim_end_matches(" were")
                        .split(", ")
                        .map(|key| key.trim_matches('\''))
                        .collect()
                })
                .unwrap_or_default();
            keys.is_empty()
                || !keys
                    .iter()
                    .all(|key| unknown.iter().any(|known| known == key))
        })
        .collect()
}

#[test]
fn every_bundled_config_satisfies_the_schema() {
    let validator = validator();
    let problems: Vec<String> = bundled()
        .iter()
        .flat_map(|path| disagreements(&validator, path))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_corpus_config_satisfies_the_schema() {
    // Absent outside the developers' machines and CI: `corpus_root` says so.
    let Some(corpus) = common::corpus_root() else {
        return;
    };
    let validator = validator();
    let configs: Vec<PathBuf> = common::corpus_inputs(&corpus)
        .into_iter()
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml" || ext == "json")
                && std::fs::read_to_string(path).is_ok_and(|text| text.contains("Orchestration"))
        })
        .collect();
    assert!(!configs.is_empty());
    let problems: Vec<String> = configs
        .iter()
        .flat_map(|path| disagreements(&validator, path))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn unknown_keys_and_wrong_types_are_rejected_as_check_rejects_them() {
    let validator = validator();
    // `Termiantion:` (FR001) and a transition's `Transition:`: unknown keys.
    let typo = problems(
        &validator,
        &root().join("fixtures/check/FR001_fail_doc.yaml"),
    );
    assert!(
        typo.iter().any(|problem| problem.contains("Termiantion")),
        "{typo:?}"
    );
    for (yaml, what) in [
        (
            "Orchestration:\n  Termination: { Type: maxiterations, MaxIterations: ten }\n",
            "MaxIterations",
        ),
        ("Orchestration:\n  Agents: { Name: A }\n", "Agents"),
        (
            "Orchestration:\n  Agents:\n    - Name: A\n      ContextWindow: { TextOnly: maybe }\n",
            "TextOnly",
        ),
        ("Agents: []\n", "Orchestration"),
        (
            "Orchestration:\n  Agents: [{ Name: A }]\n  Selection: { Type: statemachin }\n",
            "Type",
        ),
        (
            "Orchestration:\n  Agents: [{ Name: A }]\n  Security:\n    Permissions: { git_wirte: block }\n",
            "Permissions",
        ),
    ] {
        let path = std::env::temp_dir().join(format!(
            "fuseraft-schema-{}-{what}.yaml",
            std::process::id()
        ));
        std::fs::write(&path, yaml).unwrap();
        let found = problems(&validator, &path);
        let _ = std::fs::remove_file(&path);
        assert!(!found.is_empty(), "`{what}` is accepted: {yaml}");
    }
}
