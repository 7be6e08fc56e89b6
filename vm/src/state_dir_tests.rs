//! `StateDir`: links, foreign modes and hard links below the work dir are refused.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{Access, StateDir};

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("fuseraft-state-dir-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    dir
}

fn refusal(work: &Path, rel: &str) -> String {
    match StateDir::open(work, Path::new(rel)) {
        Ok(dir) => panic!("`{rel}` opened as {dir:?}"),
        Err(error) => {
            assert!(error.refused, "{error}");
            error.message
        }
    }
}

#[test]
fn a_missing_state_dir_is_made_private_and_files_are_private() {
    let dir = scratch("made");
    let work = dir.join("work");
    let state = StateDir::open(&work, Path::new(".fuseraft/sessions")).unwrap();
    for rel in [".fuseraft", ".fuseraft/sessions"] {
        let mode = std::fs::metadata(work.join(rel))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{rel}");
    }
    state.replace("a.json", b"one").unwrap();
    state.replace("a.json", b"two").unwrap();
    assert_eq!(
        std::fs::read_to_string(state.join("a.json")).unwrap(),
        "two"
    );
    let mode = std::fs::metadata(state.join("a.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(state.names().unwrap(), vec!["a.json".to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symlink_at_any_component_is_refused_naming_it() {
    let dir = scratch("links");
    let work = dir.join("work");
    let outside = dir.join("outside");
    symlink(&outside, work.join(".fuseraft")).unwrap();
    let message = refusal(&work, ".fuseraft/sessions");
    assert!(message.contains(".fuseraft` is a symlink"), "{message}");
    assert!(message.contains("remove it"), "{message}");
    std::fs::remove_file(work.join(".fuseraft")).unwrap();
    std::fs::create_dir(work.join(".fuseraft")).unwrap();
    symlink(&outside, work.join(".fuseraft/state")).unwrap();
    let message = refusal(&work, ".fuseraft/state");
    assert!(
        message.contains(".fuseraft/state` is a symlink"),
        "{message}"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_others_can_write_is_refused_saying_how_to_fix_it() {
    let dir = scratch("modes");
    let work = dir.join("work");
    std::fs::create_dir(work.join(".fuseraft")).unwrap();
    std::fs::set_permissions(
        work.join(".fuseraft"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let message = refusal(&work, ".fuseraft/sessions");
    assert!(
        message.contains("writable by other users (mode 0777)"),
        "{message}"
    );
    assert!(message.contains("chmod go-w"), "{message}");
    std::fs::write(work.join("plain"), "").unwrap();
    let unusable = StateDir::open(&work, Path::new("plain/x")).unwrap_err();
    assert!(unusable.message.contains("not a directory"), "{unusable}");
    assert!(!unusable.refused);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_are_never_opened_through_a_link_or_a_second_hard_link() {
    let dir = scratch("files");
    let work = dir.join("work");
    let state = StateDir::open(&work, Path::new(".fuseraft/state")).unwrap();
    let victim = dir.join("outside/.bashrc");
    std::fs::write(&victim, "kept\n").unwrap();
    symlink(&victim, state.join("changes.jsonl")).unwrap();
    let error = state
        .open_file("changes.jsonl", Access::Append)
        .unwrap_err();
    assert!(error.to_string().contains("is a symlink"), "{error}");
    assert!(state
        .check_file("changes.jsonl")
        .unwrap_err()
        .contains("a symlink"));
    std::fs::remove_file(state.join("changes.jsonl")).unwrap();
    std::fs::hard_link(&victim, state.join("changes.jsonl")).unwrap();
    let error = state
        .open_file("changes.jsonl", Access::Append)
        .unwrap_err();
    assert!(error.to_string().contains("2 hard links"), "{error}");
    // A replacement replaces the name, never the file behind it.
    state.replace("changes.jsonl", b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept\n");
    let _ = std::fs::remove_dir_all(&dir);
}
