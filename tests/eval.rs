//! `fuseraft eval`: the suite `fixtures/eval/team/` run offline from its replay file (pass
//! rates over repeated runs, the judge's verdicts, JUnit, a baseline that names the cases
//! that regressed), the invalid suites of `fixtures/eval/invalid/` (each a diagnostic with
//! file, line and column), and `eval init`'s starter suite.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

const SUITE: &str = "fixtures/eval/team/suite.yaml";
const REPLAY: &str = "fixtures/eval/team/replay.yaml";
const BASELINE: &str = "fixtures/eval/team/baseline.json";

fn fuseraft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-eval-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch dir");
    dir
}

/// The JSON report of the team suite, three runs a case, with `extra` flags.
fn team_report(extra: &[&str]) -> (Output, Json) {
    let mut args = vec![
        "eval", "run", SUITE, "--replay", REPLAY, "--repeat", "3", "--format", "json",
    ];
    args.extend_from_slice(extra);
    let output = fuseraft(&args);
    let report = serde_json::from_str(&stdout(&output)).unwrap_or_else(|error| {
        panic!(
            "a JSON report ({error}): {}{}",
            stdout(&output),
            stderr(&output)
        )
    });
    (output, report)
}

fn case<'a>(report: &'a Json, id: &str) -> &'a Json {
    let cases = report["cases"].as_array().expect("cases");
    cases
        .iter()
        .find(|case| case["id"] == id)
        .expect("the case")
}

/// Times differ from run to run: `0.0s` stands for every one.
fn without_times(text: &str) -> String {
    let times = regex::Regex::new(r"\d+\.\d+s\b").expect("a regex");
    times.replace_all(text, "0.0s").into_owned()
}

#[test]
fn a_replayed_suite_reports_each_cases_pass_rate() {
    let (output, report) = team_report(&[]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a case failed: {}",
        stderr(&output)
    );
    assert_eq!(report["format"], "fuseraft-eval/1");
    let rates: Vec<(String, u64, u64, String)> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let count = |key: &str| case[key].as_u64().expect("a count");
            (
                case["id"].as_str().unwrap().to_string(),
                count("passed"),
                count("runs"),
                case["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("greets", 3, 3, "passed"),
        ("counts", 2, 3, "passed"),
        ("judged", 2, 3, "failed"),
    ];
    let expected: Vec<(String, u64, u64, String)> = expected
        .iter()
        .map(|(id, passed, runs, status)| (id.to_string(), *passed, *runs, status.to_string()))
        .collect();
    assert_eq!(
        rates, expected,
        "`counts` needs 60% of its runs, `judged` all of them"
    );
    let counts = case(&report, "counts");
    assert_eq!(
        counts["ci95"],
        serde_json::json!([0.2077, 0.9385]),
        "Wilson's 95% interval of 2 of 3"
    );
    assert_eq!(
        counts["results"][2]["failures"][0],
        "regex not matched: \\b3 files\\b"
    );
    let greets = case(&report, "greets");
    assert_eq!(
        greets["results"][0]["path"],
        serde_json::json!(["Writer", "Reviewer", "end"])
    );
    let judged = case(&report, "judged");
    assert_eq!(judged["results"][0]["judge"]["verdict"], "pass");
    assert_eq!(
        judged["results"][2]["judge"]["reason"],
        "it is not a haiku."
    );
    assert_eq!(
        judged["input_tokens"], 990,
        "the judge's tokens count: 3 × (120 + 150) + 2 × 90"
    );
    assert_eq!(report["totals"]["runs"], 9);
    assert_eq!(report["totals"]["passed"], 7);
    assert!(report["regressions"].as_array().expect("a list").is_empty());
}

#[test]
fn parallel_runs_and_tags_change_nothing_but_the_selection() {
    let (_, one) = team_report(&[]);
    let (_, four) = team_report(&["--jobs", "4"]);
    let rates = |report: &Json| -> Vec<(Json, Json)> {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].clone(), c["passed"].clone()))
            .collect()
    };
    assert_eq!(rates(&one), rates(&four));
    let (output, smoke) = team_report(&["--tag", "smoke"]);
    let ids: Vec<&Json> = smoke["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    assert_eq!(ids, ["greets", "judged"], "{}", stderr(&output));
    let (output, counts) = team_report(&["--filter", "COUN"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(counts["cases"].as_array().unwrap().len(), 1);
}

#[test]
fn junit_names_the_failed_runs_and_the_pass_rates() {
    let dir = scratch("junit");
    let file = dir.join("eval.xml");
    let output = fuseraft(&[
        "eval",
        "run",
        SUITE,
        "--replay",
        REPLAY,
        "--repeat",
        "3",
        "--format",
        "junit",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let xml = std::fs::read_to_string(&file).expect("the JUnit file");
    assert!(
        xml.contains("<testsuite name=\"Team smoke\" tests=\"3\" failures=\"1\" errors=\"0\""),
        "{xml}"
    );
    assert!(
        xml.contains("<property name=\"runs_passed\" value=\"7\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<system-out>passed 2 of 3 runs (67%, 95% CI 21%–94%); needs 60%</system-out>"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("<failure type=\"pass-rate\" message=\"passed 2 of 3 runs (67%, 95% CI 21%–94%); needs 100%\">run 3: the judge says FAIL: it is not a haiku.\n</failure>"),
        "{xml}"
    );
    assert!(
        stderr(&output).contains("eval result: FAILED"),
        "the verdict stays on the terminal"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_baseline_names_the_cases_whose_pass_rate_dropped() {
    let output = fuseraft(&[
        "eval",
        "run",
        SUITE,
        "--replay",
        REPLAY,
        "--repeat",
        "3",
        "--baseline",
        BASELINE,
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let human = stdout(&output);
    assert!(human.contains("regressions against fixtures/eval/team/baseline.json:\n   counts: 100% (3/3) → 67% (2/3), within chance at 95%\n"), "{human}");
    insta::assert_snapshot!("team_against_baseline", without_times(&human));
    let (_, report) = team_report(&["--baseline", BASELINE]);
    let regressed: Vec<&Json> = report["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    assert_eq!(regressed, ["counts", "judged"]);
    // `counts` still reaches its own pass rate: the regression alone fails the suite.
    assert_eq!(case(&report, "counts")["status"], "passed");
    assert_eq!(report["passed"], false);
}

#[test]
fn invalid_suites_are_diagnosed_at_their_line_and_column() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eval/invalid");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures/eval/invalid")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name != "fuseraft.yaml")
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        let path = format!("fixtures/eval/invalid/{name}");
        let output = fuseraft(&["eval", "run", &path, "--replay", REPLAY]);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        assert!(stdout(&output).is_empty(), "{name}: no report");
        let text = stderr(&output);
        assert!(
            text.contains(&format!("[{path}:")),
            "{name} names its place: {text}"
        );
        if name == "outside.yaml" {
            // The help names this checkout, so only its words are compared.
            assert!(
                text.contains("leaves the suite's") && text.contains("/etc/hostname"),
                "{text}"
            );
            continue;
        }
        insta::assert_snapshot!(format!("invalid_{}", name.trim_end_matches(".yaml")), text);
    }
}

#[test]
fn a_case_whose_workflow_has_errors_cannot_run_and_the_others_do() {
    let dir = scratch("broken");
    std::fs::write(dir.join("broken.yaml"), "Orchestration:\n  Agents: []\n").unwrap();
    std::fs::copy(
        "fixtures/eval/team/fuseraft.yaml",
        dir.join("fuseraft.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.join("suite.yaml"),
        "cases:\n  - { id: fine, task: Say hello. }\n  - { id: broken, task: Say hello., config: broken.yaml }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("replay.yaml"),
        "replies:\n  \"*\": [\"hi\\nREADY FOR REVIEW\", \"APPROVED\"]\n",
    )
    .unwrap();
    let output = fuseraft(&[
        "eval",
        "run",
        dir.join("suite.yaml").to_str().unwrap(),
        "--replay",
        dir.join("replay.yaml").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let human = stdout(&output);
    assert!(human.contains("ok     fine"), "{human}");
    assert!(
        human.contains("ERROR  broken               cannot run"),
        "{human}"
    );
    assert!(human.contains("case `broken`: the workflow"), "{human}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn eval_init_writes_a_suite_that_runs_at_once() {
    let dir = scratch("init");
    let project = dir.join("team");
    let init = fuseraft(&["init", "--template", "minimal", project.to_str().unwrap()]);
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let output = fuseraft(&[
        "eval",
        "init",
        project.to_str().unwrap(),
        "--name",
        "Team: smoke",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let suite = project.join(".fuseraft/evals/suite.yaml");
    let text = std::fs::read_to_string(&suite).expect("the suite");
    assert!(
        text.contains("name: \"Team: smoke\"\nconfig: \"fuseraft.yaml\""),
        "{text}"
    );
    let again = fuseraft(&["eval", "init", project.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2), "nothing is overwritten");
    let replay = project.join("replay.yaml");
    let (_, report) = {
        let output = fuseraft(&[
            "eval",
            "run",
            suite.to_str().unwrap(),
            "--replay",
            replay.to_str().unwrap(),
            "--format",
            "json",
        ]);
        let report: Json = serde_json::from_str(&stdout(&output)).expect("a report");
        (output, report)
    };
    let statuses: Vec<(&Json, &Json)> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (&c["id"], &c["status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            (&Json::from("smoke"), &Json::from("passed")),
            (&Json::from("writes-a-function"), &Json::from("failed")),
            (&Json::from("no-refusal"), &Json::from("passed")),
        ],
        "the template's reply says hello and writes no function"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A scratch project of the team's config and `suite` as its `suite.json`.
fn judged_project(name: &str, suite: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::copy(
        "fixtures/eval/team/fuseraft.yaml",
        dir.join("fuseraft.yaml"),
    )
    .unwrap();
    std::fs::write(dir.join("suite.json"), suite).unwrap();
    dir
}

#[test]
fn a_judge_without_a_model_cannot_run_against_a_live_model_and_nothing_is_sent() {
    let dir = judged_project(
        "judge",
        r#"{"cases": [{"id": "judged", "task": "Say hello.", "judge": "It greets."}]}"#,
    );
    // Port 9 on loopback: the case is refused before any run, so nothing is sent there.
    let output = fuseraft(&[
        "eval",
        "run",
        dir.join("suite.json").to_str().unwrap(),
        "--model",
        "openai:any",
        "--endpoint",
        "http://127.0.0.1:9/v1",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let report: Json = serde_json::from_str(&stdout(&output)).expect("a report");
    let judged = case(&report, "judged");
    assert_eq!(judged["status"], "error");
    assert_eq!(judged["runs"], 0);
    assert!(
        judged["error"].as_str().unwrap().contains("no judge model"),
        "{judged}"
    );
    assert!(
        stderr(&output).contains("no judge model"),
        "the reason is on the terminal too"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_suites_judge_cannot_aim_a_well_known_key_at_a_host_of_its_choosing() {
    // A cloned project's suite: its judge names the user's OpenAI key and a plain-http
    // host of its own.
    let dir = judged_project(
        "judge-key",
        r#"{"judge": {"model": "openai:gpt-4o-mini", "endpoint": "http://127.0.0.1:9/v1", "api_key_env": "OPENAI_API_KEY"},
            "cases": [{"id": "judged", "task": "Say hello.", "judge": "It greets."}]}"#,
    );
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["eval", "run"])
        .arg(dir.join("suite.json"))
        .args([
            "--model",
            "openai:any",
            "--endpoint",
            "http://127.0.0.1:9/v1",
        ])
        .args(["--format", "json"])
        .env("OPENAI_API_KEY", "sk-canary-judge-key")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let report: Json = serde_json::from_str(&stdout(&output)).expect("a report");
    let judged = case(&report, "judged");
    assert_eq!(judged["runs"], 0, "{judged}");
    let error = judged["error"].as_str().unwrap();
    assert!(
        error.contains("refusing to send OPENAI_API_KEY to http://127.0.0.1:9/v1"),
        "{error}"
    );
    assert!(!stdout(&output).contains("sk-canary") && !stderr(&output).contains("sk-canary"));
    let _ = std::fs::remove_dir_all(dir);
}
