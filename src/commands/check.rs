//! `fuseraft check [INPUT...] [--format human|json|sarif|github] [--deny-warnings]
//! [--paths | --diagram] [--stdin-filename NAME]` and `fuseraft check --explain CODE`
//! (`validate` is an alias, as the VS Code extension spells it).
//!
//! Exit codes: 0 nothing at or above the deny level, 1 findings (errors, or warnings with
//! `--deny-warnings`), 2 an input could not be read or the command line is wrong.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use fuseraft_compiler::check::{self, Findings};
use fuseraft_compiler::{Code, Compiled, Severity};

use super::exit;
use super::inputs::{self, Input, StdinReader};
use crate::cli::{CheckArgs, CheckFormat};
use crate::disk::Project;
use crate::render::{self, Style};
use crate::report::{self, Checked};

pub fn run(args: &CheckArgs, style: Style) -> u8 {
    if let Some(code) = &args.explain {
        return explain(code);
    }
    // The report goes to standard output; `--color auto` decided for standard error. When
    // standard error is a terminal but the report is redirected (`> report.txt`), the
    // colour came from `auto` and would only litter the file: keep it plain.
    let style =
        if style.color && std::io::stderr().is_terminal() && !std::io::stdout().is_terminal() {
            Style::plain()
        } else {
            style
        };
    let resolved = inputs::resolve(&args.inputs, args.stdin_filename.as_deref(), &mut || {
        let mut text = String::new();
        std::io::stdin()
            .take(crate::disk::MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)?;
        if text.len() as u64 > crate::disk::MAX_FILE_BYTES {
            return Err(std::io::Error::other("larger than the 16 MiB limit"));
        }
        Ok(text)
    });
    let resolved = match resolved {
        Ok(resolved) => resolved,
        Err(message) => {
            let _ = writeln!(std::io::stderr().lock(), "error: {message}");
            return exit::USAGE;
        }
    };
    let names: Vec<PathBuf> = resolved.iter().map(|i| i.name().to_path_buf()).collect();
    let mut compiled: Vec<Compiled> = Vec::new();
    let mut findings: Vec<Findings> = Vec::new();
    for input in &resolved {
        let one = match input {
            Input::Path(path) => fuseraft_compiler::compile(path, &Project::new()),
            Input::Stdin { name, text } => {
                fuseraft_compiler::compile(name, &StdinReader::new(name, text))
            }
        };
        findings.push(check::check(&one));
        compiled.push(one);
    }
    let unreadable = compiled.iter().any(|c| c.unreadable);
    let checked: Vec<Checked<'_>> = compiled
        .iter()
        .zip(&findings)
        .zip(&names)
        .map(|((c, f), name)| Checked {
            input: name,
            findings: f,
            sources: &c.sources,
        })
        .collect();

    let format = args
        .format
        .unwrap_or_else(|| default_format(std::env::var("GITHUB_ACTIONS").ok().as_deref()));
    let text = if args.paths {
        paths(&names, &compiled)
    } else if args.diagram {
        diagrams(&names, &compiled)
    } else {
        match format {
            CheckFormat::Human => human(&checked, style),
            CheckFormat::Json => report::json::render(&checked),
            CheckFormat::Sarif => {
                let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                report::sarif::render(&checked, &report::sarif::Root::discover(&cwd))
            }
            CheckFormat::Github => {
                write_step_summary(&checked);
                report::github::render(&checked)
            }
        }
    };
    if let Some(code) = super::print_or_fail(&text) {
        return code;
    }
    if args.paths || args.diagram {
        // The findings still decide the exit code; show them on stderr.
        let _ = write!(std::io::stderr().lock(), "{}", human(&checked, style));
    }

    let errors = findings.iter().any(Findings::has_errors);
    let warnings = findings.iter().any(Findings::has_warnings);
    if unreadable {
        exit::USAGE
    } else if errors || (args.deny_warnings && warnings) {
        exit::FINDINGS
    } else {
        exit::OK
    }
}

/// Every finding drawn by miette, then a one-line summary.
pub fn human(checked: &[Checked<'_>], style: Style) -> String {
    let mut out = String::new();
    let (mut errors, mut warnings, mut advice, mut suppressed) = (0, 0, 0, 0);
    for input in checked {
        for diag in &input.findings.diagnostics {
            out.push_str(&render::human(diag, input.sources, style));
            out.push('\n');
            match diag.severity {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
                Severity::Advice => advice += 1,
            }
        }
        suppressed += input.findings.suppressed.len();
    }
    let files = checked.len();
    let mut parts = Vec::new();
    for (count, what) in [(errors, "error"), (warnings, "warning"), (advice, "advice")] {
        if count > 0 {
            let plural = if count == 1 || what == "advice" {
                ""
            } else {
                "s"
            };
            parts.push(format!("{count} {what}{plural}"));
        }
    }
    let checked_files = format!("{files} file{}", if files == 1 { "" } else { "s" });
    let mut summary = if parts.is_empty() {
        format!("no problems found in {checked_files}")
    } else {
        format!("{} in {checked_files}", parts.join(", "))
    };
    if suppressed > 0 {
        summary.push_str(&format!(" ({suppressed} suppressed)"));
    }
    out.push_str(&summary);
    out.push('\n');
    out
}

/// In a GitHub Actions job, every finding also goes to the job summary, since GitHub shows
/// only the first annotations of each kind.
fn write_step_summary(checked: &[Checked<'_>]) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(report::github::summary(checked).as_bytes());
    }
}

/// The format without `--format`: GitHub annotations in a GitHub Actions job, where the
/// runner sets `GITHUB_ACTIONS=true`; miette's report otherwise.
pub fn default_format(github_actions: Option<&str>) -> CheckFormat {
    if github_actions == Some("true") {
        CheckFormat::Github
    } else {
        CheckFormat::Human
    }
}

/// `--diagram`: the Mermaid flowchart of every input that compiles.
fn diagrams(names: &[PathBuf], compiled: &[Compiled]) -> String {
    let mut out = String::new();
    for (input, one) in names.iter().zip(compiled) {
        if compiled.len() > 1 {
            out.push_str(&format!("%% {}\n", input.display()));
        }
        match &one.program {
            Some(program) => out.push_str(&fuseraft_compiler::ir::to_mermaid(program)),
            None => out.push_str("%% no diagram: fix the errors first\n"),
        }
    }
    out
}

fn paths(names: &[PathBuf], compiled: &[Compiled]) -> String {
    let mut out = String::new();
    for (input, one) in names.iter().zip(compiled) {
        if compiled.len() > 1 {
            out.push_str(&format!("# {}\n", input.display()));
        }
        match one.any_program() {
            Some(program) => {
                for line in check::paths(program) {
                    out.push_str(&line);
                    out.push('\n');
                }
            }
            None => out.push_str("# no program: fix the errors below first\n"),
        }
    }
    out
}

fn explain(text: &str) -> u8 {
    let Some(code) = Code::parse(text.trim()) else {
        let known = fuseraft_compiler::diagnostic::did_you_mean(
            text,
            Code::ALL.iter().map(|code| code.as_str()),
        )
        .unwrap_or_else(|| "codes look like `FR201`; docs/diagnostics.md lists them all".into());
        let _ = writeln!(
            std::io::stderr().lock(),
            "error: `{text}` is not a diagnostic code\nhelp: {known}"
        );
        return exit::USAGE;
    };
    match check::explain(code) {
        Some(docs) => super::print_or_fail(&docs).unwrap_or(exit::OK),
        None => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "error: `{}` has no documentation yet",
                code.as_str()
            );
            exit::USAGE
        }
    }
}
