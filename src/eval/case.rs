//! A suite's cases: upstream's keys (`id`, `task` or `task_file`, `config`, `must_succeed`,
//! `expect_keywords`, `expect_regex`, `forbidden_keywords`, `max_turns`, `tags`) and
//! fuseraft's (`path` and `trace`, the routing a run must take as `fuseraft test` renders
//! it; `judge`, a rubric for an LLM judge; `min_pass_rate`; `approve`, as in a scenario).

use std::path::PathBuf;

use fuseraft_compiler::syntax::{Node, NodeKind};
use fuseraft_compiler::{Code, Diagnostic, Span};
use regex::Regex;

use super::suite::{model_fields, JudgeModel, Place};
use super::values::{self, invalid};

/// The keys of a case.
pub const KEYS: &[&str] = &[
    "id",
    "task",
    "task_file",
    "config",
    "must_succeed",
    "expect_keywords",
    "expect_regex",
    "forbidden_keywords",
    "max_turns",
    "tags",
    "path",
    "trace",
    "judge",
    "min_pass_rate",
    "approve",
];

/// One case: a task and what every run of it must show.
#[derive(Clone, Debug)]
pub struct Case {
    pub id: String,
    pub task: String,
    /// The case's own workflow (else `--config`, the suite's, the project's).
    pub config: Option<PathBuf>,
    /// The run must end well (exit code 0 as `exec` gives it). Default true.
    pub must_succeed: bool,
    pub expect_keywords: Vec<String>,
    pub expect_regex: Vec<Regex>,
    pub forbidden_keywords: Vec<String>,
    /// The most turns a run may take; 0 for no limit.
    pub max_turns: u32,
    pub tags: Vec<String>,
    /// The states the run goes through, its entry first and `end` last when it routes there.
    pub path: Option<Vec<String>>,
    /// The routing trace the run must render to, as `fuseraft test` prints it.
    pub trace: Option<String>,
    pub judge: Option<Judge>,
    /// The share of runs that must pass for the case to pass. Default 1.
    pub min_pass_rate: f64,
    /// Answer human approvals with yes (`approve: all`) or no (`none`, the default).
    pub approve: bool,
}

/// An LLM judge: a rubric and the model that applies it to the run's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judge {
    pub rubric: String,
    pub model: JudgeModel,
}

/// Reads every case: the problems of all of them, or the cases.
pub fn read_all(items: &[Node], place: &Place) -> Result<Vec<Case>, Vec<Diagnostic>> {
    let mut cases: Vec<(Case, Span)> = Vec::new();
    let mut problems = Vec::new();
    for item in items {
        match read(item, place) {
            Ok((case, span)) => {
                if let Some((_, first)) = cases.iter().find(|(known, _)| known.id == case.id) {
                    problems.push(
                        Diagnostic::error(
                            Code::DuplicateName,
                            format!("two cases have the id `{}`", case.id),
                        )
                        .with_label(span, "given again here")
                        .with_label(*first, "first given here"),
                    );
                }
                cases.push((case, span));
            }
            Err(diag) => problems.push(diag),
        }
    }
    if problems.is_empty() {
        Ok(cases.into_iter().map(|(case, _)| case).collect())
    } else {
        Err(problems)
    }
}

/// One case and the span of its id.
fn read(item: &Node, place: &Place) -> Result<(Case, Span), Diagnostic> {
    let entries = values::entries(item, KEYS, "a case")?;
    let get = |name: &str| values::get(&entries, name);
    let Some(id_node) = get("id") else {
        return Err(
            Diagnostic::error(Code::MissingRequiredKey, "a case has no `id`")
                .with_label(item.span, "`id` is required: it names the case in reports"),
        );
    };
    let id = values::words("id", id_node)?;
    if let Some(bad) = id
        .chars()
        .find(|ch| matches!(ch, ':' | '#') || ch.is_whitespace())
    {
        return Err(invalid(
            id_node.span,
            format!("the id `{id}` holds `{bad}`: a case id has no blanks, `:` or `#` (replay queues name cases as `ID:AGENT`)"),
            "rename the case",
        ));
    }
    let text_list = |name: &str| -> Result<Vec<String>, Diagnostic> {
        Ok(match get(name) {
            Some(value) => values::list(name, value)?
                .into_iter()
                .map(|(text, _)| text)
                .collect(),
            None => Vec::new(),
        })
    };
    let case = Case {
        task: task(&entries, item.span, place)?,
        config: match get("config") {
            Some(value) => {
                Some(place.file("config", &values::words("config", value)?, value.span)?)
            }
            None => None,
        },
        must_succeed: get("must_succeed")
            .map(|value| values::boolean("must_succeed", value))
            .transpose()?
            .unwrap_or(true),
        expect_keywords: text_list("expect_keywords")?,
        expect_regex: regexes(get("expect_regex"))?,
        forbidden_keywords: text_list("forbidden_keywords")?,
        max_turns: get("max_turns")
            .map(|value| values::count("max_turns", value))
            .transpose()?
            .unwrap_or(0),
        tags: text_list("tags")?,
        path: get("path").map(path).transpose()?,
        trace: get("trace").map(trace).transpose()?,
        judge: get("judge").map(judge).transpose()?,
        min_pass_rate: get("min_pass_rate")
            .map(|value| values::fraction("min_pass_rate", value))
            .transpose()?
            .unwrap_or(1.0),
        approve: get("approve").map(approve).transpose()?.unwrap_or(false),
        id,
    };
    Ok((case, id_node.span))
}

/// `task`, or the text of `task_file`: exactly one of them.
fn task(entries: &[(&str, &Node, &Node)], span: Span, place: &Place) -> Result<String, Diagnostic> {
    match (
        values::get(entries, "task"),
        values::get(entries, "task_file"),
    ) {
        (Some(task), None) => values::words("task", task).map(|task| task.trim().to_string()),
        (None, Some(file)) => {
            let path = place.file("task file", &values::words("task_file", file)?, file.span)?;
            let text = crate::disk::read(&path).map_err(|error| {
                invalid(
                    file.span,
                    format!("cannot read `{}`: {error}", path.display()),
                    "this file",
                )
            })?;
            if text.trim().is_empty() {
                return Err(invalid(
                    file.span,
                    format!("the task file `{}` is empty", path.display()),
                    "an empty task",
                ));
            }
            Ok(text.trim().to_string())
        }
        (Some(task), Some(file)) => Err(Diagnostic::error(
            Code::InvalidValue,
            "a case has either `task` or `task_file`, not both",
        )
        .with_label(task.span, "a task")
        .with_label(file.span, "a task file")),
        (None, None) => Err(Diagnostic::error(
            Code::MissingRequiredKey,
            "a case has no task: give `task: TEXT` or `task_file: FILE`",
        )
        .with_label(span, "needs `task` or `task_file`")),
    }
}

/// `expect_regex`: each pattern compiled (matched ignoring case, as upstream does).
fn regexes(value: Option<&Node>) -> Result<Vec<Regex>, Diagnostic> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    values::list("expect_regex", value)?
        .into_iter()
        .map(|(pattern, span)| {
            regex::RegexBuilder::new(&pattern)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build()
                .map_err(|error| {
                    let first = error.to_string();
                    let first = first.lines().last().unwrap_or_default().trim().to_string();
                    invalid(
                        span,
                        format!("`{pattern}` is not a regex: {first}"),
                        "this pattern",
                    )
                })
        })
        .collect()
}

/// `path`: a list of state names, or one line `A → B → end` (`->` too).
fn path(value: &Node) -> Result<Vec<String>, Diagnostic> {
    let states: Vec<String> = match &value.kind {
        NodeKind::Scalar { text, .. } => text
            .split(['→'])
            .flat_map(|part| part.split("->"))
            .map(|state| state.trim().to_string())
            .collect(),
        _ => values::list("path", value)?
            .into_iter()
            .map(|(state, _)| state.trim().to_string())
            .collect(),
    };
    if states.is_empty() || states.iter().any(String::is_empty) {
        return Err(invalid(
            value.span,
            "`path` names the states a run goes through, e.g. [Planner, Developer, end]",
            "expected state names",
        ));
    }
    Ok(states)
}

/// `trace`: the routing trace as `fuseraft test` renders it (a `.scenario.snap`'s text).
fn trace(value: &Node) -> Result<String, Diagnostic> {
    let text = values::words("trace", value)?;
    Ok(format!("{}\n", text.trim_end()))
}

/// `judge`: a rubric (text), or a mapping with `rubric` and the judge's model.
fn judge(value: &Node) -> Result<Judge, Diagnostic> {
    if let NodeKind::Scalar { .. } = value.kind {
        return Ok(Judge {
            rubric: values::words("judge", value)?,
            model: JudgeModel::default(),
        });
    }
    let keys = ["rubric", "model", "endpoint", "api_key_env"];
    let entries = values::entries(value, &keys, "`judge`")?;
    let Some(rubric) = values::get(&entries, "rubric") else {
        return Err(
            Diagnostic::error(Code::MissingRequiredKey, "the judge has no `rubric`")
                .with_label(value.span, "`rubric` says what the judge checks"),
        );
    };
    Ok(Judge {
        rubric: values::words("rubric", rubric)?,
        model: model_fields(&entries)?,
    })
}

fn approve(value: &Node) -> Result<bool, Diagnostic> {
    match value.as_str() {
        Some("all") => Ok(true),
        Some("none") => Ok(false),
        _ => Err(invalid(
            value.span,
            "`approve` is `all` or `none`",
            "expected `all` or `none`",
        )),
    }
}
