//! Run snapshots: every case under `fixtures/run/<case>/` (a config, a replay, a `case.yaml`)
//! runs through the real driver with the replay provider in a fresh work dir; the event
//! trace, the outcome and the files the run left are snapshotted.
//!
//! `case.yaml` keys: `task` (required), `input` (default `config.yaml`, relative to the case),
//! `replay` (default `replay.yaml`), `approve` (`all` | `none`, default `all`), `max_turns`.

mod common;

use std::path::Path;

use common::case_settings;
use fuseraft::disk::Disk;
use fuseraft_vm::driver::{self, Approvals, Env};
use fuseraft_vm::machine::Options;
use fuseraft_vm::replay::Replay;

/// The files under `root`, relative, with their sizes.
fn files_under(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    common::walk(root, &mut paths);
    paths
        .iter()
        .map(|path| {
            let relative = path
                .strip_prefix(root)
                .unwrap_or(path)
                .to_string_lossy()
                .replace('\\', "/");
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            format!("{relative} ({size} bytes)")
        })
        .collect()
}

fn run_case(dir: &Path) -> String {
    let settings = case_settings(dir);
    let task = settings["task"]
        .as_str()
        .expect("case.yaml has a task")
        .to_string();
    let input = dir.join(settings["input"].as_str().unwrap_or("config.yaml"));
    let replay_path = dir.join(settings["replay"].as_str().unwrap_or("replay.yaml"));
    let compiled = fuseraft_compiler::compile(&input, &Disk);
    let program = compiled.program.unwrap_or_else(|| {
        panic!(
            "{} does not compile: {:?}",
            input.display(),
            compiled.diagnostics
        )
    });
    let script = fuseraft::replay_file::load(&replay_path)
        .unwrap_or_else(|error| panic!("bad replay: {}", error.1.message));

    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let sandbox = std::env::temp_dir().join(format!("fuseraft-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&sandbox);
    let work_dir = sandbox.join("work");
    std::fs::create_dir_all(&work_dir).unwrap();
    let work_dir = std::fs::canonicalize(&work_dir).unwrap();

    let approvals = match settings["approve"].as_str() {
        Some("none") => Approvals::None,
        _ => Approvals::All,
    };
    let options = Options {
        session_id: "0000test".to_string(),
        task,
        max_turns: settings["max_turns"].as_u64().map(|n| n as u32),
        skip_prompts: false,
    };
    let env = Env {
        work_dir: work_dir.clone(),
        approvals,
    };
    let replay = Replay::new(script);
    let mut trace = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let summary = runtime.block_on(driver::run(
        &program,
        options,
        &replay,
        &env,
        &mut |event, _| {
            trace.push(event.trace_line());
        },
    ));

    let mut out = trace.join("\n");
    out.push_str(&format!(
        "\n----- outcome: {} after {} turns ({} history messages)\n",
        summary.outcome.as_str(),
        summary.turns,
        summary.history.len()
    ));
    if let Some(reason) = &summary.reason {
        out.push_str(&format!("reason: {reason}\n"));
    }
    out.push_str("----- files\n");
    for file in files_under(&sandbox) {
        out.push_str(&file);
        out.push('\n');
    }
    let _ = std::fs::remove_dir_all(&sandbox);
    out.replace(&work_dir.to_string_lossy().to_string(), "<work>")
        .replace(&sandbox.to_string_lossy().to_string(), "<sandbox>")
}

#[test]
fn run_fixtures() {
    insta::glob!("../fixtures", "run/*/case.yaml", |path| {
        let dir = path.parent().expect("a case directory");
        insta::assert_snapshot!(run_case(dir));
    });
}
