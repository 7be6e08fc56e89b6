//! `fuseraft config show`: a config printed as YAML in canonical key spelling, which compiles
//! to the same program as the config it came from; a config with errors gets `check`'s
//! diagnostics (file:line:col) instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fuseraft(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A program's IR text without its file line and source positions (`@3:5`).
fn structure(ir: &str) -> String {
    ir.lines()
        .filter(|line| !line.starts_with("file "))
        .map(|line| match line.rfind(" @") {
            Some(at)
                if line[at + 2..]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ':') =>
            {
                &line[..at]
            }
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_json_config_in_any_key_case_is_shown_as_canonical_yaml_that_compiles_the_same() {
    let dir = std::env::temp_dir().join(format!("fuseraft-config-show-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = root().join("fixtures/config_show/team.json");
    let shown = fuseraft(&root(), &["config", "show", config.to_str().unwrap()]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let yaml = text(&shown.stdout);
    insta::assert_snapshot!("config_show_team", yaml);

    // Read back, it is the same program.
    let copy = dir.join("team.yaml");
    std::fs::write(&copy, &yaml).unwrap();
    let before = fuseraft(&root(), &["compile", config.to_str().unwrap()]);
    let after = fuseraft(&root(), &["compile", copy.to_str().unwrap()]);
    assert_eq!(after.status.code(), Some(0), "{}", text(&after.stderr));
    assert_eq!(
        structure(&text(&after.stdout)),
        structure(&text(&before.stdout))
    );

    // Without an argument: upstream's `.fuseraft/config/orchestration.yaml`.
    let upstream = dir.join(".fuseraft/config");
    std::fs::create_dir_all(&upstream).unwrap();
    std::fs::write(upstream.join("orchestration.yaml"), &yaml).unwrap();
    let default = fuseraft(&dir, &["config", "show"]);
    assert_eq!(default.status.code(), Some(0), "{}", text(&default.stderr));
    assert_eq!(text(&default.stdout), yaml);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_config_with_errors_gets_checks_diagnostics_and_no_yaml() {
    let shown = fuseraft(
        &root(),
        &["config", "show", "fixtures/check/FR102_fail_doc.yaml"],
    );
    assert_eq!(shown.status.code(), Some(1));
    assert_eq!(text(&shown.stdout), "");
    let err = text(&shown.stderr);
    assert!(
        err.contains("fixtures/check/FR102_fail_doc.yaml:13:21"),
        "{err}"
    );
    assert!(
        err.contains("transition target `Dnoe` is not a defined state"),
        "{err}"
    );

    let missing = fuseraft(&root(), &["config", "show", "no-such-config.yaml"]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing.stderr));
}
