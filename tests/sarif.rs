//! `fuseraft check --format sarif` as its consumers take it: every check fixture, a missing
//! input, a file outside the repository and the upstream corpus, validated by Microsoft's
//! SARIF Multitool with its SARIF and GitHub ingestion rules (`.ci/sarif-deps.sh` installs
//! it; those tests are the `tool-tests` tier). The validator's own findings must be none.

#[cfg(feature = "tool-tests")]
use crate::common;

use std::path::Path;
#[cfg(feature = "tool-tests")]
use std::path::PathBuf;
use std::process::Command;

#[cfg(feature = "tool-tests")]
/// The Multitool installed by `.ci/sarif-deps.sh` (or named by `FUSERAFT_SARIF_MULTITOOL`).
fn multitool() -> PathBuf {
    if let Some(path) = std::env::var_os("FUSERAFT_SARIF_MULTITOOL") {
        return PathBuf::from(path);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    let path = cache
        .join("fuseraft-ci/sarif/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool");
    assert!(
        path.exists(),
        "the SARIF Multitool is not installed at `{}`: run `bash .ci/sarif-deps.sh`",
        path.display()
    );
    path
}

#[cfg(feature = "tool-tests")]
/// Runs `fuseraft check --format sarif` on `inputs` (from the repository root), validates
/// the log and returns the validator's findings, one line each.
fn validate(name: &str, inputs: &[&str]) -> Vec<String> {
    let out = std::env::temp_dir().join(format!("fuseraft-sarif-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let checked = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", "--format", "sarif"])
        .args(inputs)
        .output()
        .unwrap();
    assert!(
        matches!(checked.status.code(), Some(0..=2)),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let log = out.join("fuseraft.sarif");
    std::fs::write(&log, &checked.stdout).unwrap();
    let report = out.join("validation.sarif");
    let ran = Command::new(multitool())
        .args(["validate", "--rule-kind", "Gh;Sarif", "-o"])
        .arg(&report)
        .arg(&log)
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .output()
        .unwrap();
    assert!(
        ran.status.success() && report.exists(),
        "the validator failed: {}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    let validation: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let findings = validation["runs"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|result| {
            format!(
                "{} {} {} {}",
                result["ruleId"].as_str().unwrap_or("?"),
                result["level"].as_str().unwrap_or("?"),
                result["message"]["id"].as_str().unwrap_or("?"),
                result["message"]["arguments"]
            )
        })
        .collect();
    let _ = std::fs::remove_dir_all(&out);
    findings
}

#[cfg(feature = "tool-tests")]
#[test]
fn every_check_fixture_gives_a_log_github_accepts() {
    let mut inputs: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/check"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
            .map(|path| {
                format!(
                    "fixtures/check/{}",
                    path.file_name().unwrap().to_string_lossy()
                )
            })
            .collect();
    inputs.sort();
    assert!(inputs.len() > 50, "{inputs:?}");
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let findings = validate("fixtures", &inputs);
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}

#[cfg(feature = "tool-tests")]
#[test]
fn a_missing_input_and_a_file_outside_the_repository_still_have_locations() {
    let outside = std::env::temp_dir().join(format!(
        "fuseraft-sarif-outside-{}.yaml",
        std::process::id()
    ));
    std::fs::write(&outside, "Orchestration:\n  Agents: []\n").unwrap();
    let findings = validate(
        "missing",
        &[
            "fixtures/check/no-such-config.yaml",
            outside.to_str().unwrap(),
        ],
    );
    let _ = std::fs::remove_file(&outside);
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}

#[cfg(feature = "tool-tests")]
#[test]
fn the_upstream_corpus_gives_a_log_github_accepts() {
    // Absent outside the developers' machines and CI: `corpus_root` says so.
    let Some(root) = common::corpus_root() else {
        return;
    };
    let inputs: Vec<String> = common::corpus_inputs(&root)
        .into_iter()
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    assert!(!inputs.is_empty());
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let findings = validate("corpus", &inputs);
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}

/// The log of `fuseraft check --format sarif INPUTS` run in `dir` (relative to the
/// repository root), parsed.
fn log_in(dir: &str, inputs: &[&str]) -> serde_json::Value {
    let checked = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir))
        .args(["check", "--format", "sarif"])
        .args(inputs)
        .output()
        .unwrap();
    serde_json::from_slice(&checked.stdout).expect("the log is JSON")
}

#[test]
fn the_run_names_its_tool_in_full_and_its_analysis_by_the_configs_checked() {
    // Azure DevOps and GitHub Advanced Security flag a run without these two.
    let one = log_in(".", &["fixtures/check/FR004_fail_doc.yaml"]);
    let run = &one["runs"][0];
    assert_eq!(
        run["tool"]["driver"]["fullName"],
        format!("fuseraft workflow linter {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        run["automationDetails"]["id"],
        "fuseraft/check/fixtures/check/FR004_fail_doc.yaml/"
    );
    // The id names the config, not the directory it was checked from: the same config
    // checked from elsewhere is the same analysis.
    let elsewhere = log_in("fixtures", &["check/../check/FR004_fail_doc.yaml"]);
    assert_eq!(
        elsewhere["runs"][0]["automationDetails"],
        run["automationDetails"]
    );
    // Several configs: each, sorted, whatever order they were given in.
    let two = log_in(
        ".",
        &[
            "fixtures/check/FR101_pass_doc.yaml",
            "fixtures/check/FR001_pass_doc.yaml",
        ],
    );
    assert_eq!(
        two["runs"][0]["automationDetails"]["id"],
        "fuseraft/check/fixtures/check/FR001_pass_doc.yaml,fixtures/check/FR101_pass_doc.yaml/"
    );
}
