//! Upstream's `run` command line, read into fuseraft's: `run -c FILE "task"` (the positional
//! argument is then the task), `run "task"` against `.fuseraft/config/orchestration.yaml`,
//! `-f/--task-file`, `-r/--resume` without an id (the newest resumable session of the work
//! dir, or a choice on a terminal), `--spec` and `--context-file` attached to the task.
//! fuseraft's own spellings (`exec INPUT --task TEXT`) mean what they always meant.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::cli::ExecArgs;
use crate::session::{self, Key};

/// What `-r`/`--resume` without an id stands for: a NUL, which no argument can hold, so an
/// explicit `--resume ""` stays an invalid id.
pub const NEWEST: &str = "\0";

/// Upstream's default config, relative to the current directory.
pub const DEFAULT_CONFIG: &str = ".fuseraft/config/orchestration.yaml";

/// The task upstream gives a run that has only a `--spec`.
const SPEC_TASK: &str = "Implement the specification.";

/// The most bytes an attached file or task file may have.
const MAX_ATTACHED_BYTES: u64 = 1024 * 1024;

/// `args` with upstream's forms read as fuseraft's, or why they cannot be.
pub fn read(mut args: ExecArgs) -> Result<ExecArgs, String> {
    let positional = std::mem::take(&mut args.input);
    let positional = (!positional.as_os_str().is_empty()).then_some(positional);
    let from_file = args.task_file.is_some() || args.task.is_some();
    match (args.config.take(), positional) {
        // `run -c FILE "task"`
        (Some(config), Some(task)) => {
            if from_file {
                return Err(format!(
                    "`{}` is a second task: with `-c FILE` the positional argument is the task, and `--task`/`--task-file` gave one",
                    task.display()
                ));
            }
            args.input = config;
            args.task = Some(task.to_string_lossy().into_owned());
        }
        (Some(config), None) => args.input = config,
        // `exec INPUT ...`: a path that exists, or any argument once the task is given.
        (None, Some(input)) if input.exists() || from_file || args.resume.is_some() => {
            args.input = input
        }
        // `run "task"`: the task, against upstream's default config.
        (None, Some(task)) => {
            args.input = PathBuf::from(DEFAULT_CONFIG);
            args.task = Some(task.to_string_lossy().into_owned());
        }
        (None, None) => args.input = PathBuf::from(DEFAULT_CONFIG),
    }
    if args.input == Path::new(DEFAULT_CONFIG) && !args.input.exists() {
        return Err(format!(
            "no workflow given and no `{DEFAULT_CONFIG}` here: name one (`fuseraft exec CONFIG --task TEXT`, or upstream's `fuseraft run -c CONFIG \"TASK\"`)"
        ));
    }
    if let Some(file) = args.task_file.take() {
        args.task = Some(attached_text(&file, "task file")?.trim_end().to_string());
    }
    if let Some(spec) = args.spec.take() {
        let text = attached_text(&spec, "specification")?;
        let task = args.task.take().unwrap_or_else(|| SPEC_TASK.to_string());
        args.task = Some(format!("{task}\n\n## Specification\n\n{}", text.trim_end()));
    }
    if !args.context_files.is_empty() {
        let mut task = args.task.take().unwrap_or_default();
        task.push_str("\n\n## Attached files\n");
        for file in std::mem::take(&mut args.context_files) {
            let text = attached_text(&file, "context file")?;
            task.push_str(&format!(
                "\n### {}\n\n{}\n",
                file.display(),
                text.trim_end()
            ));
        }
        args.task = Some(task);
    }
    if args.resume.as_deref() == Some(NEWEST) {
        args.resume = Some(newest_resumable(args.work_dir.as_deref())?);
    }
    Ok(args)
}

/// A file's text, or why it cannot be attached: a PDF, DOCX, PPTX or XLSX file's extracted
/// text (`fuseraft_vm::document`), else the file itself, which must be UTF-8 text.
fn attached_text(path: &Path, what: &str) -> Result<String, String> {
    use fuseraft_vm::document::{self, Format};
    let shown = path.display();
    let metadata = std::fs::metadata(path)
        .map_err(|error| format!("cannot read the {what} `{shown}`: {error}"))?;
    let format = Format::of(&path.to_string_lossy());
    let limit = match format {
        Some(_) => document::MAX_BYTES,
        None => MAX_ATTACHED_BYTES,
    };
    if metadata.len() > limit {
        return Err(format!(
            "the {what} `{shown}` is {} bytes; at most {limit} are attached",
            metadata.len()
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|error| format!("cannot read the {what} `{shown}`: {error}"))?;
    if let Some(format) = format {
        let extracted = document::extract(&bytes, format)
            .map_err(|why| format!("cannot attach the {what} `{shown}`: {why}"))?;
        if extracted.text.len() as u64 > MAX_ATTACHED_BYTES {
            return Err(format!(
                "the {what} `{shown}` holds {} bytes of text; at most {MAX_ATTACHED_BYTES} are attached",
                extracted.text.len()
            ));
        }
        return Ok(extracted.text);
    }
    String::from_utf8(bytes).map_err(|_| {
        format!(
            "the {what} `{shown}` is neither UTF-8 text nor a document fuseraft reads ({})",
            document::SUPPORTED
        )
    })
}

/// The id of the newest session of `work_dir` that can be resumed; on a terminal with
/// several, the one the user picks (Enter: the newest).
fn newest_resumable(work_dir: Option<&Path>) -> Result<String, String> {
    let work_dir = work_dir.unwrap_or(Path::new("."));
    let key = Key::load_or_create();
    let resumable: Vec<session::Listed> = session::list(work_dir, key.as_ref().ok())
        .into_iter()
        .filter(|listed| {
            listed.status.contains("resumable") && !listed.status.contains("not resumable")
        })
        .collect();
    let Some(newest) = resumable.first() else {
        return Err(format!(
            "`--resume` without an id: no resumable session in `{}` (`fuseraft sessions list` shows them all)",
            work_dir.join(session::DIR).display()
        ));
    };
    let stdin = std::io::stdin();
    if resumable.len() == 1 || !stdin.is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(newest.id.clone());
    }
    let shown = &resumable[..resumable.len().min(9)];
    let mut stderr = std::io::stderr();
    for (idx, listed) in shown.iter().enumerate() {
        let task: String = listed.task.chars().take(60).collect();
        let _ = writeln!(
            stderr,
            "  {}  {}  {}  {} turns  {task}",
            idx + 1,
            listed.id,
            listed.updated,
            listed.turns
        );
    }
    let _ = write!(
        stderr,
        "resume which session? [1-{}, Enter: 1] ",
        shown.len()
    );
    let _ = stderr.flush();
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|error| format!("cannot read the choice: {error}"))?;
    match line.trim() {
        "" => Ok(newest.id.clone()),
        choice => choice
            .parse::<usize>()
            .ok()
            .and_then(|n| shown.get(n.checked_sub(1)?))
            .map(|listed| listed.id.clone())
            .ok_or_else(|| format!("`{choice}` is none of 1 to {}", shown.len())),
    }
}
