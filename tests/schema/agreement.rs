//! How far `fuseraft schema` agrees with `fuseraft check`, over every config in `fixtures/`
//! and the upstream corpus: it must accept every config `check` accepts, and reject at least
//! 90% of the configs `check` rejects for a key or value error; measured with the Rust
//! `jsonschema` crate and with the PyPI `check-jsonschema` CLI (`.ci/schema-deps.sh`).
//!
//! A key or value error is one the reader finds looking at one key or one value on its own
//! against the format's tables, which a JSON Schema can say: an unknown key (FR001), a
//! missing required key (FR002), a value outside its set or range (FR004), a missing
//! `Orchestration` root (FR012), an unknown validator (FR603) or predicate type (FR604).
//! Errors in a language embedded in a value (regexes FR305, conditions FR310), between values
//! (duplicate names FR003, references FR1xx, graph shape FR2xx, routing FR3xx, ...) and in
//! files (syntax FR010, limits FR011, missing files FR013) are not: a schema cannot see them.
//! A config `check` accepts has no error and no unknown key (FR001 warns of one: upstream
//! ignores it silently, the schema names it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
#[cfg(feature = "tool-tests")]
use std::process::Command;

use fuseraft_compiler::{Code, Severity};

use super::common;

const KEY_OR_VALUE: &[Code] = &[
    Code::UnknownKey,
    Code::MissingRequiredKey,
    Code::InvalidValue,
    Code::MissingRoot,
    Code::UnknownValidator,
    Code::UnknownPredicate,
];

/// The least share of key and value errors the schema must reject.
const REJECTED_AT_LEAST: f64 = 0.9;

/// How `check` judges a config.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Verdict {
    Accepted,
    KeyOrValueError,
    /// Rejected for another reason, or warned of an unknown key: not measured.
    Other,
}

fn verdict(path: &Path) -> Verdict {
    let compiled = fuseraft_compiler::compile(path, &fuseraft::disk::Disk);
    let findings = fuseraft_compiler::check::check(&compiled);
    let errors: Vec<Code> = findings
        .diagnostics
        .iter()
        .filter(|diag| diag.severity == Severity::Error)
        .map(|diag| diag.code)
        .collect();
    if errors.is_empty() && !compiled.unreadable {
        if super::unknown_keys(path).is_empty() {
            Verdict::Accepted
        } else {
            Verdict::Other
        }
    } else if errors.iter().any(|code| KEY_OR_VALUE.contains(code)) {
        Verdict::KeyOrValueError
    } else {
        Verdict::Other
    }
}

/// Whether `text` is a fuseraft config: an `Orchestration` root in YAML or JSON.
fn is_config(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let yaml = path
        .extension()
        .is_some_and(|ext| ext == "yaml" || ext == "yml");
    let json = path.extension().is_some_and(|ext| ext == "json");
    (yaml && (text.starts_with("Orchestration:") || text.contains("\nOrchestration:")))
        || (json && text.contains("\"Orchestration\""))
}

/// The measured configs: every config under `fixtures/`, and the corpus's when present,
/// each with `check`'s verdict (the unmeasured left out).
fn measured() -> Vec<(PathBuf, Verdict)> {
    let mut files = Vec::new();
    common::walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut files,
    );
    if let Some(corpus) = common::corpus_root() {
        files.extend(common::corpus_inputs(&corpus));
    }
    let out: Vec<(PathBuf, Verdict)> = files
        .into_iter()
        .filter(|path| is_config(path))
        .map(|path| {
            let verdict = verdict(&path);
            (path, verdict)
        })
        .filter(|(_, verdict)| *verdict != Verdict::Other)
        .collect();
    assert!(out.len() > 200, "{} configs measured", out.len());
    out
}

/// The measurement, given the configs a validator rejects; fails naming each disagreement.
fn judge(tool: &str, measured: &[(PathBuf, Verdict)], rejected: &BTreeSet<PathBuf>) {
    let count = |verdict: Verdict| measured.iter().filter(|(_, v)| *v == verdict).count();
    let refused: Vec<String> = measured
        .iter()
        .filter(|(path, verdict)| *verdict == Verdict::Accepted && rejected.contains(path))
        .map(|(path, _)| path.display().to_string())
        .collect();
    let missed: Vec<String> = measured
        .iter()
        .filter(|(path, verdict)| *verdict == Verdict::KeyOrValueError && !rejected.contains(path))
        .map(|(path, _)| path.display().to_string())
        .collect();
    let errors = count(Verdict::KeyOrValueError);
    let share = (errors - missed.len()) as f64 / errors as f64;
    eprintln!(
        "{tool}: accepts {} of the {} configs check accepts; rejects {} of the {errors} with a key or value error ({:.1}%); lets through: {missed:?}",
        count(Verdict::Accepted) - refused.len(),
        count(Verdict::Accepted),
        errors - missed.len(),
        share * 100.0,
    );
    assert!(
        refused.is_empty(),
        "{tool} rejects configs `check` accepts:\n{}",
        refused.join("\n")
    );
    assert!(errors >= 40, "only {errors} key or value errors measured");
    assert!(
        share >= REJECTED_AT_LEAST,
        "{tool} rejects only {:.1}% of the configs with a key or value error; it lets through:\n{}",
        share * 100.0,
        missed.join("\n")
    );
}

#[test]
fn the_schema_accepts_what_check_accepts_and_rejects_its_key_and_value_errors() {
    let validator = super::validator();
    let measured = measured();
    let rejected: BTreeSet<PathBuf> = measured
        .iter()
        .filter(|(path, _)| {
            super::read_document(path).is_none_or(|document| !validator.is_valid(&document))
        })
        .map(|(path, _)| path.clone())
        .collect();
    judge("the jsonschema crate", &measured, &rejected);
}

#[cfg(feature = "tool-tests")]
/// The `check-jsonschema` installed by `.ci/schema-deps.sh` (or named by
/// `FUSERAFT_CHECK_JSONSCHEMA`).
fn check_jsonschema() -> PathBuf {
    let path = std::env::var_os("FUSERAFT_CHECK_JSONSCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
                });
            cache.join("fuseraft-ci/check-jsonschema/venv/bin/check-jsonschema")
        });
    assert!(
        path.exists(),
        "check-jsonschema is not installed at `{}`: run `bash .ci/deps.sh`",
        path.display()
    );
    path
}

#[cfg(feature = "tool-tests")]
#[test]
fn check_jsonschema_accepts_what_check_accepts_and_rejects_its_key_and_value_errors() {
    let tool = check_jsonschema();
    let schema =
        std::env::temp_dir().join(format!("fuseraft-schema-{}-cli.json", std::process::id()));
    let printed = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("schema")
        .output()
        .unwrap();
    std::fs::write(&schema, &printed.stdout).unwrap();
    let measured = measured();
    let ran = Command::new(&tool)
        .args(["--output-format", "json", "--schemafile"])
        .arg(&schema)
        .args(measured.iter().map(|(path, _)| path))
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&schema);
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap_or_else(|_| {
        panic!(
            "check-jsonschema printed no report: {}",
            String::from_utf8_lossy(&ran.stderr)
        )
    });
    let rejected: BTreeSet<PathBuf> = ["errors", "parse_errors"]
        .iter()
        .flat_map(|kind| report[kind].as_array().cloned().unwrap_or_default())
        .filter_map(|error| error["filename"].as_str().map(PathBuf::from))
        .collect();
    judge("check-jsonschema", &measured, &rejected);
}
