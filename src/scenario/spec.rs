//! The scenario file (`NAME.scenario.yaml`): what to run, with which scripted replies.
//!
//! ```yaml
//! description: The reviewer sends the work back once.   # optional, for people
//! config: ../run/keyword/config.yaml   # relative to this file: a config, a tama project
//!                                      # directory or AGENT.md, or a .fir file
//! task: Add a --verbose flag.
//! replay: ../run/keyword/replay.yaml   # or inline `replies:` (+ `on_exhausted:`)
//! work_dir:                            # optional: files created before the run
//!   src/main.rs: "fn main() {}\n"
//! approve: all                         # human approvals: all (default) | none
//! max_turns: 20                        # optional turn cap on top of the config's
//! ```
//!
//! Keys are exact; an unknown key is an error with a did-you-mean. Every error carries the
//! file, and the line and column of the offending key or value. `config`, `replay` and the
//! snapshots must stay in the scenario's project (`within.rs`).

use std::path::{Component, Path, PathBuf};

use fuseraft_compiler::diagnostic::did_you_mean;
use fuseraft_compiler::syntax::{parse_yaml, Budget, Node, NodeKind};
use fuseraft_compiler::{Code, Diagnostic, SourceFile, SourceMap, Span};
use fuseraft_vm::replay::{OnExhausted, Script};
use serde_json::{json, Value as Json};

use super::discover::normalize;
use super::within::{outside_project, Project};

/// The keys a scenario file may have.
pub const KEYS: &[&str] = &[
    "description",
    "config",
    "task",
    "replay",
    "replies",
    "on_exhausted",
    "work_dir",
    "approve",
    "max_turns",
];

/// A loaded scenario, its paths resolved against the scenario's directory.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    /// The workflow to run (lexically normalised, relative when written relative).
    pub config: PathBuf,
    pub task: String,
    pub script: Script,
    /// Files to create in the work dir before the run: relative path → content.
    pub work_dir: Vec<(String, String)>,
    /// Answer every human approval with yes (`approve: all`) or no (`approve: none`).
    pub approve: bool,
    pub max_turns: Option<u32>,
}

/// Why a scenario file could not be loaded: a diagnostic and the sources it points into.
#[derive(Debug)]
pub struct LoadError {
    pub sources: SourceMap,
    pub diag: Diagnostic,
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, Box<LoadError>> {
    let mut sources = SourceMap::new();
    let text = match crate::disk::read(path) {
        Ok(text) => text,
        Err(error) => {
            return Err(Box::new(LoadError {
                sources,
                diag: Diagnostic::error(
                    Code::MissingFile,
                    format!("cannot read scenario `{}`: {error}", path.display()),
                ),
            }))
        }
    };
    let file = sources.add(SourceFile::new(path.display().to_string(), path, text));
    let parsed = parse_yaml(file, &sources.get(file).text, &Budget::default());
    let root = match parsed {
        Ok(root) => root,
        Err(diag) => return Err(Box::new(LoadError { sources, diag })),
    };
    let Some(project) = Project::of(path) else {
        let message = format!(
            "cannot resolve the directory of scenario `{}`",
            path.display()
        );
        let diag = Diagnostic::error(Code::MissingFile, message);
        return Err(Box::new(LoadError { sources, diag }));
    };
    if let Some(diag) = snapshot_outside(path, &project, root.span) {
        return Err(Box::new(LoadError { sources, diag }));
    }
    let (mut scenario, replay_file) = match read(path, &root, &project) {
        Ok(read) => read,
        Err(diag) => return Err(Box::new(LoadError { sources, diag })),
    };
    if let Some(file) = replay_file {
        // The replay file's diagnostics point into that file.
        scenario.script = crate::replay_file::load(&file).map_err(|failure| {
            let (sources, diag) = *failure;
            Box::new(LoadError {
                sources,
                diag: diag.with_help(format!("the replay file of scenario `{}`", path.display())),
            })
        })?;
    }
    Ok(scenario)
}

fn invalid(span: Span, message: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::error(Code::InvalidValue, message).with_label(span, label.to_string())
}

fn string_value(key: &str, value: &Node) -> Result<String, Diagnostic> {
    value.as_str().map(str::to_string).ok_or_else(|| {
        invalid(
            value.span,
            format!("`{key}` must be text, found {}", value.kind_name()),
            "expected text",
        )
    })
}

/// A relative path that stays inside the work dir.
fn confined(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
}

/// The error for the snapshot of the scenario at `path` that is a symlink out of the
/// project: `fuseraft test` reads it into a diff. (A `.snap.new` is only ever written, as
/// a fresh file that replaces whatever link is there: `snapshot.rs`.)
fn snapshot_outside(path: &Path, project: &Project, span: Span) -> Option<Diagnostic> {
    let snap = super::snapshot::snap_path(path);
    let name = snap.file_name()?.to_string_lossy().to_string();
    let place = project.leaves(Path::new(&name))?;
    Some(outside_project("snapshot", &name, &place, project, span))
}

fn read(
    path: &Path,
    root: &Node,
    project: &Project,
) -> Result<(Scenario, Option<PathBuf>), Diagnostic> {
    let NodeKind::Map(entries) = &root.kind else {
        return Err(invalid(
            root.span,
            format!(
                "a scenario is a mapping with `config`, `task` and `replay` or `replies`; found {}",
                root.kind_name()
            ),
            "expected a mapping",
        ));
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut seen: Vec<(&str, &Node, &Node)> = Vec::new();
    for (key, value) in entries {
        let name = key.as_str().unwrap_or_default();
        if !KEYS.contains(&name) {
            let help = did_you_mean(name, KEYS.iter().copied())
                .unwrap_or_else(|| format!("scenario keys are: {}", KEYS.join(", ")));
            return Err(Diagnostic::error(
                Code::UnknownKey,
                format!("unknown key `{name}` in a scenario"),
            )
            .with_label(key.span, "not a scenario key")
            .with_help(help));
        }
        if let Some((_, first, _)) = seen.iter().find(|(seen, _, _)| *seen == name) {
            return Err(
                Diagnostic::error(Code::DuplicateName, format!("`{name}` is given twice"))
                    .with_label(key.span, "given again here")
                    .with_label(first.span, "first given here"),
            );
        }
        seen.push((name, key, value));
    }
    let get = |name: &str| {
        seen.iter()
            .find(|(key, _, _)| *key == name)
            .map(|(_, key, value)| (*key, *value))
    };
    let required = |name: &str| {
        get(name).map(|(_, value)| value).ok_or_else(|| {
            Diagnostic::error(
                Code::MissingRequiredKey,
                format!("the scenario has no `{name}`"),
            )
            .with_label(root.span, format!("`{name}` is required"))
        })
    };

    let config_node = required("config")?;
    let config_text = string_value("config", config_node)?;
    if let Some(place) = project.leaves(Path::new(&config_text)) {
        let span = config_node.span;
        return Err(outside_project(
            "config",
            &config_text,
            &place,
            project,
            span,
        ));
    }
    let config = normalize(&dir.join(&config_text));
    if !config.exists() {
        return Err(Diagnostic::error(
            Code::MissingFile,
            format!("the config `{}` does not exist", config.display()),
        )
        .with_label(config_node.span, "relative to the scenario's directory"));
    }
    let task = string_value("task", required("task")?)?;

    let (script, replay_file) = match (get("replay"), get("replies")) {
        (Some((key, _)), Some((other, _))) => {
            return Err(Diagnostic::error(
                Code::InvalidValue,
                "a scenario has either `replay` (a file) or `replies` (inline), not both",
            )
            .with_label(key.span, "a replay file")
            .with_label(other.span, "inline replies"))
        }
        (None, None) => {
            return Err(Diagnostic::error(
                Code::MissingRequiredKey,
                "the scenario has no replies: give `replay: FILE` or inline `replies:`",
            )
            .with_label(root.span, "needs `replay` or `replies`"))
        }
        (Some((_, value)), None) => {
            if let Some((key, _)) = get("on_exhausted") {
                return Err(invalid(
                    key.span,
                    "`on_exhausted` goes in the replay file when the replies come from `replay:`",
                    "move this into the replay file",
                ));
            }
            let written = string_value("replay", value)?;
            if let Some(place) = project.leaves(Path::new(&written)) {
                return Err(outside_project(
                    "replay file",
                    &written,
                    &place,
                    project,
                    value.span,
                ));
            }
            let file = normalize(&dir.join(&written));
            if !file.is_file() {
                return Err(Diagnostic::error(
                    Code::MissingFile,
                    format!("the replay file `{}` does not exist", file.display()),
                )
                .with_label(value.span, "relative to the scenario's directory"));
            }
            (
                Script {
                    queues: Vec::new(),
                    on_exhausted: OnExhausted::Error,
                },
                Some(file),
            )
        }
        (None, Some((_, replies))) => {
            let mut object = serde_json::Map::new();
            object.insert("replies".into(), crate::replay_file::to_json(replies));
            if let Some((_, value)) = get("on_exhausted") {
                object.insert(
                    "on_exhausted".into(),
                    json!(string_value("on_exhausted", value)?),
                );
            }
            let script = Script::from_json(Json::Object(object)).map_err(|message| {
                invalid(
                    replies.span,
                    format!("invalid replies: {message}"),
                    "in these replies",
                )
            })?;
            (script, None)
        }
    };

    let mut work_dir = Vec::new();
    if let Some((_, seeds)) = get("work_dir") {
        let NodeKind::Map(files) = &seeds.kind else {
            return Err(invalid(
                seeds.span,
                format!(
                    "`work_dir` maps relative paths to file contents; found {}",
                    seeds.kind_name()
                ),
                "expected a mapping",
            ));
        };
        for (file, content) in files {
            let name = file.as_str().unwrap_or_default();
            if !confined(name) {
                return Err(invalid(
                    file.span,
                    format!("`{name}` must be a relative path inside the work dir"),
                    "no absolute paths and no `..`",
                ));
            }
            let content = match &content.kind {
                NodeKind::Null => String::new(),
                _ => string_value(name, content)?,
            };
            work_dir.push((name.to_string(), content));
        }
    }

    let approve = match get("approve") {
        None => true,
        Some((_, value)) => match value.as_str() {
            Some("all") => true,
            Some("none") => false,
            _ => {
                return Err(invalid(
                    value.span,
                    "`approve` is `all` or `none`",
                    "expected `all` or `none`",
                ))
            }
        },
    };
    let max_turns = match get("max_turns") {
        None => None,
        Some((_, value)) => match value
            .as_str()
            .and_then(|text| text.trim().parse::<u32>().ok())
        {
            Some(turns) if turns > 0 => Some(turns),
            _ => {
                return Err(invalid(
                    value.span,
                    "`max_turns` is a positive whole number",
                    "expected a number of turns",
                ))
            }
        },
    };
    if let Some((_, value)) = get("description") {
        string_value("description", value)?;
    }
    let scenario = Scenario {
        path: path.to_path_buf(),
        config,
        task,
        script,
        work_dir,
        approve,
        max_turns,
    };
    Ok((scenario, replay_file))
}
