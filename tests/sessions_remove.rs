//! `fuseraft sessions list [--all]`, `prune` and `cleanup --older-than` on real sessions: what
//! each lists or removes, that `--dry-run` removes nothing, and that a session a run holds
//! (its lock taken) is never removed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

const KEYWORD: &str = "fixtures/run/keyword/config.yaml";
const KEYWORD_REPLAY: &str = "fixtures/run/keyword/replay.yaml";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-rm-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The binary, run from the repository with the session key kept under `dir`.
fn fuseraft(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env("FUSERAFT_SESSION_KEY", dir.join("key/session.key"))
        .output()
        .expect("the fuseraft binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A run of the keyword team in `dir/work`, `extra` appended; returns the new session's id.
fn run(dir: &Path, extra: &[&str]) -> String {
    let before = ids(&dir.join("work"));
    let work = dir.join("work");
    let mut args = vec![
        "exec",
        KEYWORD,
        "--replay",
        KEYWORD_REPLAY,
        "--work-dir",
        work.to_str().unwrap(),
        "--task",
        "Add a flag.",
    ];
    args.extend_from_slice(extra);
    let output = fuseraft(dir, &args);
    let after = ids(&work);
    let new: Vec<&String> = after.iter().filter(|id| !before.contains(id)).collect();
    assert_eq!(new.len(), 1, "{}", text(&output.stderr));
    new[0].clone()
}

/// The ids of the sessions whose snapshot exists in `work`.
fn ids(work: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(work.join(".fuseraft/sessions")) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().to_string();
            Some(name.strip_suffix(".json")?.to_string())
        })
        .collect();
    ids.sort();
    ids
}

/// `fuseraft sessions ARGS --work-dir dir/work`.
fn sessions(dir: &Path, args: &[&str]) -> Output {
    let work = dir.join("work");
    let mut all = vec!["sessions"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--work-dir", work.to_str().unwrap()]);
    fuseraft(dir, &all)
}

/// Dates the snapshot and log of session `id` back by `age`.
fn age(dir: &Path, id: &str, age: Duration) {
    let then = SystemTime::now() - age;
    for name in [format!("{id}.json"), format!("{id}.messages.jsonl")] {
        let path = dir.join("work/.fuseraft/sessions").join(name);
        let file = std::fs::File::options().append(true).open(&path).unwrap();
        file.set_modified(then).unwrap();
    }
}

#[test]
fn list_hides_completed_sessions_unless_all_and_prune_removes_only_them() {
    let dir = scratch("prune");
    let done = run(&dir, &[]);
    let paused = run(&dir, &["--max-turns", "1"]);

    let listed = sessions(&dir, &["list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    let shown = text(&listed.stdout);
    assert!(shown.contains(&paused) && !shown.contains(&done), "{shown}");
    assert!(
        text(&listed.stderr).contains("1 completed session not shown; `sessions list --all`"),
        "{}",
        text(&listed.stderr)
    );
    let all = text(&sessions(&dir, &["list", "--all"]).stdout);
    assert!(all.contains(&paused) && all.contains(&done), "{all}");

    // A dry run names the completed session and removes nothing.
    let dry = sessions(&dir, &["prune", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stderr));
    assert!(
        text(&dry.stdout).starts_with(&format!("would remove {done}  ")),
        "{}",
        text(&dry.stdout)
    );
    assert!(text(&dry.stderr).contains("nothing was removed"));
    assert_eq!(ids(&dir.join("work")).len(), 2);

    let pruned = sessions(&dir, &["prune"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned.stderr));
    let out = text(&pruned.stdout);
    assert!(out.starts_with(&format!("removed {done}  ")), "{out}");
    assert!(out.contains("completed"), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert_eq!(ids(&dir.join("work")), vec![paused.clone()]);
    let files: Vec<String> = std::fs::read_dir(dir.join("work/.fuseraft/sessions"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().to_string())
        .filter(|name| name.starts_with(&done))
        .collect();
    assert!(
        files.is_empty(),
        "every file of the pruned session goes: {files:?}"
    );

    // The paused session can still be resumed, so a second prune finds nothing.
    let again = sessions(&dir, &["prune"]);
    assert_eq!(text(&again.stdout), "");
    assert!(text(&again.stderr).contains("no session completed to remove"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cleanup_removes_idle_sessions_of_any_status_but_never_a_running_one() {
    let dir = scratch("cleanup");
    let old_paused = run(&dir, &["--max-turns", "1"]);
    let old_held = run(&dir, &["--max-turns", "1"]);
    let fresh = run(&dir, &["--max-turns", "1"]);
    age(&dir, &old_paused, Duration::from_secs(10 * 86_400));
    age(&dir, &old_held, Duration::from_secs(10 * 86_400));
    // A run holds `old_held`: its lock is taken, as `exec --resume` takes it.
    let work = dir.join("work");
    let held = fuseraft::session::lock::acquire(&work, &old_held).expect("the lock");

    let dry = sessions(&dir, &["cleanup", "--older-than", "7d", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stderr));
    assert!(
        text(&dry.stdout).starts_with(&format!("would remove {old_paused}  ")),
        "{}",
        text(&dry.stdout)
    );
    assert_eq!(ids(&work).len(), 3, "a dry run removes nothing");

    let cleaned = sessions(&dir, &["cleanup", "--older-than", "7d"]);
    assert_eq!(cleaned.status.code(), Some(0), "{}", text(&cleaned.stderr));
    let out = text(&cleaned.stdout);
    assert!(out.starts_with(&format!("removed {old_paused}  ")), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    let err = text(&cleaned.stderr);
    assert!(
        err.contains(&format!(
            "kept `{old_held}`: a fuseraft run is using it (pid {})",
            std::process::id()
        )),
        "{err}"
    );
    assert!(
        err.contains("removed 1 session idle for more than 7days"),
        "{err}"
    );
    let mut left = vec![old_held.clone(), fresh.clone()];
    left.sort();
    assert_eq!(ids(&work), left);

    // Released, the idle session goes too; the fresh one stays.
    drop(held);
    let cleaned = sessions(&dir, &["cleanup", "--older-than", "7d"]);
    assert!(text(&cleaned.stdout).starts_with(&format!("removed {old_held}  ")));
    assert_eq!(ids(&work), vec![fresh]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_duration_without_a_unit_is_refused_with_an_example() {
    let dir = scratch("duration");
    let refused = sessions(&dir, &["cleanup", "--older-than", "7"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = text(&refused.stderr);
    assert!(
        err.contains("invalid value '7' for '--older-than <DURATION>'"),
        "{err}"
    );
    assert!(err.contains("e.g. `30m`, `12h`, `7d` or `2w`"), "{err}");
    let missing = sessions(&dir, &["cleanup"]);
    assert_eq!(missing.status.code(), Some(2), "--older-than is required");
    let _ = std::fs::remove_dir_all(&dir);
}
