//! `fuseraft eval run` against the live tier's model: a three-case suite
//! (`fixtures/eval/live/`) run three times a case prints each case's pass rate, and the JUnit
//! it writes is read back by PyPI's junitparser (installed with the tier by
//! `.ci/live-deps.sh`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value as Json;

/// Reads a JUnit file with junitparser and prints, per test case, its name, whether it
/// passed and its `system-out`, as one JSON list.
const READ_JUNIT: &str = "\
import json, sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
cases = []
for suite in xml:
    for case in suite:
        cases.append({'suite': suite.name, 'name': case.name, 'passed': case.is_passed,
                      'results': [type(r).__name__ for r in case.result], 'out': case.system_out})
print(json.dumps(cases))
";

#[test]
fn a_suite_run_three_times_against_the_live_model_reports_pass_rates_and_junit() {
    let server = super::server();
    // The server's turn: no other live run shares it meanwhile.
    let _turn = super::RUNS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = std::env::temp_dir().join(format!("fuseraft-live-eval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("a scratch dir");
    let junit = scratch.join("eval.xml");
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["eval", "run"])
        .arg(root.join("fixtures/eval/live/suite.yaml"))
        .args(["--repeat", "3", "--model", "openai:smollm2"])
        .args([
            "--endpoint",
            &format!("http://127.0.0.1:{}/v1", server.port),
        ])
        .args(["--timeout", "300", "--format", "junit", "-o"])
        .arg(&junit)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("fuseraft starts");
    let report = String::from_utf8_lossy(&output.stderr).to_string();
    // The pass rates, for whoever runs the tier with `--nocapture`.
    eprintln!("live: `eval run` took {:.1?}\n{report}", started.elapsed());
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "every case ran (exit 0 or 1): {report}"
    );
    for id in ["greets", "names-a-colour", "no-refusal"] {
        let row = report
            .lines()
            .find(|line| line.split_whitespace().nth(1) == Some(id))
            .unwrap_or_else(|| panic!("a row for `{id}`: {report}"));
        assert!(row.contains("/3 "), "three runs of `{id}`: {row}");
        assert!(row.contains('%'), "a pass rate for `{id}`: {row}");
    }
    assert!(report.contains("totals: 9 runs"), "{report}");
    let python = super::server::live_dir().join("venv/bin/python");
    let read = Command::new(&python)
        .args(["-c", READ_JUNIT])
        .arg(&junit)
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "`{}` does not run ({error}): run `.ci/live-deps.sh`",
                python.display()
            )
        });
    let said = String::from_utf8_lossy(&read.stderr);
    assert!(
        !said.contains("No module named 'junitparser'"),
        "junitparser is not installed in the live tier's venv: run `.ci/live-deps.sh`"
    );
    assert!(
        read.status.success(),
        "junitparser reads the report: {said}"
    );
    let cases: Json = serde_json::from_slice(&read.stdout).expect("junitparser's cases as JSON");
    let cases = cases.as_array().expect("a list");
    let names: Vec<&str> = cases
        .iter()
        .filter_map(|case| case["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["greets", "names-a-colour", "no-refusal"],
        "{cases:?}"
    );
    for case in cases {
        assert_eq!(case["suite"], "Live smoke");
        let out = case["out"].as_str().unwrap_or_default();
        assert!(
            out.starts_with("passed ") && out.contains(" of 3 runs ("),
            "{case}"
        );
        let passed = case["passed"]
            .as_bool()
            .expect("junitparser says pass or fail");
        assert_eq!(
            passed,
            case["results"].as_array().is_some_and(Vec::is_empty),
            "{case}"
        );
        eprintln!(
            "junitparser: {} {} ({out})",
            case["name"],
            if passed { "passed" } else { "failed" }
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
