//! `fuseraft init`: every template under `templates/` is offered, passes `fuseraft check`
//! with no finding, runs to a successful end with its replay file and passes `fuseraft test`
//! with the scenario it ships; nothing existing is overwritten.

use clap::ValueEnum;
use fuseraft::cli::Template;
use serde_json::Value as Json;

use super::{fuseraft, run, scratch, stderr, stdout, text};

/// The templates' names, as the command line spells them.
fn names() -> Vec<String> {
    Template::value_variants()
        .iter()
        .filter_map(|t| t.to_possible_value())
        .map(|value| value.get_name().to_string())
        .collect()
}

#[test]
fn every_template_directory_is_offered() {
    let mut on_disk: Vec<String> = std::fs::read_dir("templates")
        .expect("templates/")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut offered = names();
    offered.sort();
    assert_eq!(on_disk, offered);
    for template in Template::value_variants() {
        let files = fuseraft::commands::init::files(*template);
        let mut listed: Vec<&str> = files.files.iter().map(|(path, _)| *path).collect();
        listed.sort();
        let name = template.to_possible_value().unwrap().get_name().to_string();
        let mut present: Vec<String> = walk(&std::path::Path::new("templates").join(&name));
        present.sort();
        assert_eq!(
            listed, present,
            "{name}: every file of the template is written"
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out
}

#[test]
fn every_template_checks_clean_and_runs_with_its_replay() {
    for name in names() {
        let dir = scratch(&format!("init-{name}"));
        let target = dir.join("team");
        let init = run(&["init", "--template", &name, text(&target)]);
        assert_eq!(init.status.code(), Some(0), "{name}: {}", stderr(&init));
        let steps = stderr(&init);

        let check = fuseraft()
            .current_dir(&target)
            .arg("check")
            .output()
            .unwrap();
        assert_eq!(
            (check.status.code(), stdout(&check)),
            (Some(0), "no problems found in 1 file\n".to_string()),
            "{name}: {}",
            stderr(&check)
        );

        // Run as the printed next step says, from the new directory.
        let exec_line = steps
            .lines()
            .map(str::trim)
            .find(|line| line.starts_with("fuseraft exec") && line.contains("--replay"))
            .unwrap_or_else(|| panic!("{name}: the next steps name the run: {steps}"));
        let input = exec_line.split_whitespace().nth(2).unwrap();
        let task = exec_line.split('"').nth(1).unwrap();
        let ran = fuseraft()
            .current_dir(&target)
            .args([
                "exec",
                input,
                "--task",
                task,
                "--replay",
                "replay.yaml",
                "--json",
            ])
            .output()
            .unwrap();
        let summary: Json = serde_json::from_str(stdout(&ran).trim())
            .unwrap_or_else(|_| panic!("{name}: {}", stderr(&ran)));
        assert_eq!(ran.status.code(), Some(0), "{name}: {}", stderr(&ran));
        assert_eq!(summary["outcome"], "completed", "{name}: {summary}");

        // The routing is snapshot-tested as shipped: `fuseraft test` passes at once.
        assert!(
            steps
                .lines()
                .any(|line| line.trim().starts_with("fuseraft test")),
            "{name}: the next steps name `fuseraft test`: {steps}"
        );
        let tested = fuseraft()
            .current_dir(&target)
            .arg("test")
            .output()
            .unwrap();
        assert_eq!(
            tested.status.code(),
            Some(0),
            "{name}: {}{}",
            stdout(&tested),
            stderr(&tested)
        );
        assert!(
            stdout(&tested).contains("1 passed"),
            "{name}: {}",
            stdout(&tested)
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn init_overwrites_nothing() {
    let dir = scratch("init-existing");
    std::fs::write(dir.join("replay.yaml"), "mine").unwrap();
    let output = run(&["init", "--template", "minimal", text(&dir)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("replay.yaml` already exists; `fuseraft init` overwrites nothing"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("replay.yaml")).unwrap(),
        "mine"
    );
    assert!(
        !dir.join("fuseraft.yaml").exists(),
        "nothing is written when any file exists"
    );
    // The default template, into the current directory.
    let fresh = scratch("init-default");
    let output = fuseraft().current_dir(&fresh).arg("init").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(fresh.join("fuseraft.yaml").is_file() && fresh.join("replay.yaml").is_file());
    let again = fuseraft().current_dir(&fresh).arg("init").output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(fresh);
}
