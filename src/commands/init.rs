//! `fuseraft init [--template NAME] [DIR]`: writes a ready-to-run workflow from a template
//! (a config and a replay file, so that `fuseraft exec` runs it offline at once, and a
//! scenario with its accepted snapshot, so that `fuseraft test` passes at once). The
//! templates are the files under `templates/<name>/`, built into the binary. Nothing is
//! overwritten: when any file of the template exists, nothing is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::exit;
use crate::cli::{InitArgs, Template};

/// One template: its files (path relative to the target directory, text), the input to
/// run and a task for it.
pub struct Files {
    pub files: &'static [(&'static str, &'static str)],
    /// What `fuseraft exec` runs: the config, or `.` for a tama project.
    pub input: &'static str,
    pub task: &'static str,
}

macro_rules! template {
    ($dir:literal, [$($file:literal),+ $(,)?]) => {
        &[$(($file, include_str!(concat!("../../templates/", $dir, "/", $file)))),+]
    };
}

/// The files of `template`.
pub fn files(template: Template) -> Files {
    match template {
        Template::DevTeam => Files {
            files: template!(
                "dev-team",
                [
                    "fuseraft.yaml",
                    "replay.yaml",
                    "workflow.scenario.yaml",
                    "workflow.scenario.snap"
                ]
            ),
            input: "fuseraft.yaml",
            task: "Write hello.py.",
        },
        Template::Minimal => Files {
            files: template!(
                "minimal",
                [
                    "fuseraft.yaml",
                    "replay.yaml",
                    "workflow.scenario.yaml",
                    "workflow.scenario.snap"
                ]
            ),
            input: "fuseraft.yaml",
            task: "Say hello.",
        },
        Template::Graph => Files {
            files: template!(
                "graph",
                [
                    "fuseraft.yaml",
                    "replay.yaml",
                    "workflow.scenario.yaml",
                    "workflow.scenario.snap"
                ]
            ),
            input: "fuseraft.yaml",
            task: "Write a release note.",
        },
        Template::Statemachine => Files {
            files: template!(
                "statemachine",
                [
                    "fuseraft.yaml",
                    "replay.yaml",
                    "workflow.scenario.yaml",
                    "workflow.scenario.snap"
                ]
            ),
            input: "fuseraft.yaml",
            task: "Add a --verbose flag.",
        },
        Template::Adversarial => Files {
            files: template!(
                "adversarial",
                [
                    "fuseraft.yaml",
                    "replay.yaml",
                    "workflow.scenario.yaml",
                    "workflow.scenario.snap"
                ]
            ),
            input: "fuseraft.yaml",
            task: "Specify a rate limiter.",
        },
        Template::TamaFsm => Files {
            files: template!(
                "tama-fsm",
                [
                    "tama.toml",
                    "agents/support/AGENT.md",
                    "agents/triage/AGENT.md",
                    "agents/answer/AGENT.md",
                    "agents/escalate/AGENT.md",
                    "replay.yaml",
                    "workflow.scenario.yaml",
                    "workflow.scenario.snap",
                ]
            ),
            input: ".",
            task: "My invoice is wrong.",
        },
    }
}

pub fn run(args: &InitArgs) -> u8 {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let template = files(args.template);
    let targets: Vec<(PathBuf, &str)> = template
        .files
        .iter()
        .map(|(name, text)| (dir.join(name), *text))
        .collect();
    let existing: Vec<String> = targets
        .iter()
        .filter(|(path, _)| path.symlink_metadata().is_ok())
        .map(|(path, _)| format!("`{}`", path.display()))
        .collect();
    if !existing.is_empty() {
        return fail(&format!(
            "{} already exist{}; `fuseraft init` overwrites nothing (choose another DIR, or move {} away)",
            existing.join(", "),
            if existing.len() == 1 { "s" } else { "" },
            if existing.len() == 1 { "it" } else { "them" },
        ));
    }
    let mut written = Vec::new();
    for (path, text) in &targets {
        if let Err(error) = write_new(path, text) {
            return fail(&format!("cannot write `{}`: {error}", path.display()));
        }
        written.push(path.display().to_string());
    }
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "wrote {}", written.join(", "));
    let _ = writeln!(stderr, "{}", next_steps(&dir, &template));
    exit::OK
}

/// The commands that check and run the new workflow.
fn next_steps(dir: &Path, template: &Files) -> String {
    let cd = if dir == Path::new(".") {
        String::new()
    } else {
        format!("  cd {}\n", dir.display())
    };
    let input = template.input;
    let task = template.task;
    format!(
        "next:\n{cd}  fuseraft check {input}\n  fuseraft exec {input} --task \"{task}\" --replay replay.yaml\n  \
         fuseraft exec {input} --task \"{task}\" --model openai:gpt-4o-mini   # a real model\n  \
         fuseraft test   # the routing, snapshot-tested: workflow.scenario.yaml against its .snap"
    )
}

/// Creates `path` (and its directories) with `text`; an existing file is an error, even
/// one created since the check above.
pub fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(text.as_bytes())
}

fn fail(message: &str) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}
