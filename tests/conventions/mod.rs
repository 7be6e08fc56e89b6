//! The command line's conventions, end to end through the binary: a closed standard output,
//! `check`'s inputs (directories, globs, standard input), `exec --json` on early failures,
//! `init`'s templates, shell completions, manual pages, examples in `--help` and upstream's spellings.

mod check_inputs;
mod completions;
mod exec_json;
mod init;
mod man;
#[cfg(unix)]
mod pipes;
mod readme;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary, run from the repository root with a plain, non-GitHub environment.
pub fn fuseraft() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null());
    command
}

pub fn run(args: &[&str]) -> Output {
    fuseraft()
        .args(args)
        .output()
        .expect("the fuseraft binary runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A fresh, empty directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fuseraft-conventions-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

pub fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}
