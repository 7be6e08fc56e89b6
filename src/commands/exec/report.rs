//! How a run that reached its end is reported: its exit code (a shortfall fails it, `--ci`
//! reads the test report), the transcript (and `-o`'s copy), the session log closed, the
//! terminal's last line, the output, and the `--json` summary (and `--snapshot`'s copy).

use std::io::Write;
use std::path::PathBuf;

use fuseraft_vm::driver::{self, Summary};
use fuseraft_vm::event::Outcome;

use super::provider::{cost_json, cost_text, provider_options_summary, resume_hint, tokens_text};
use super::running::Running;
use super::summary::{RunSummary, Tokens};
use super::{absolute, ci, exit, snapshot, transcript, warn_unsaved};
use crate::terminal::{json_line, neutralise};

/// Reports a run that ended (not cancelled) and returns its exit code.
pub(super) fn finished(running: &mut Running<'_>, mut summary: Summary) -> u8 {
    // The log is synced and its snapshot written while the transcript is.
    running.log.finish_soon();
    let args = running.args;
    // A turn cap the program sets no reason for: the one the command line gave, else the
    // config's (the session keeps `null`, as it always has).
    if summary.outcome == Outcome::MaxTurns && summary.reason.is_none() {
        summary.reason = Some(match args.max_turns {
            Some(max) if summary.turns >= max => format!("`--max-turns {max}` was reached"),
            _ => "the config's turn cap (`MaxIterations`) was reached".to_string(),
        });
    }
    let (code, ci) = exit_code(running, &summary);
    let transcript = transcripts(running, &summary);
    if let Err(error) = running.log.finish() {
        warn_unsaved(&error, &mut running.log);
    }
    // A session that could not be saved at all keeps no audit chain either.
    let (work_dir, session) = (&running.work_dir, &running.session);
    if running.audit.is_some() && !crate::session::path(work_dir, session).exists() {
        crate::audit::remove(work_dir, session);
    }
    let elapsed = running.started.elapsed().as_secs_f64();
    // Any run that did not complete can go on from its last checkpoint.
    let resume = (summary.outcome != Outcome::Completed)
        .then(|| resume_hint(args, &running.provider, session, work_dir))
        .filter(|hint| !hint.is_empty())
        .map(|hint| hint.trim_start_matches(" · resume with: ").to_string());
    last_line(running, &summary, elapsed, resume.as_deref());
    if !args.json {
        if let Some(output) = &summary.output {
            println!("{}", neutralise(output));
        }
    }
    if args.json || args.snapshot {
        let finished = RunSummary {
            session_id: Some(running.session.clone()),
            task: Some(running.task.clone()),
            config: Some(absolute(&args.input)),
            succeeded: code == exit::OK,
            outcome: summary.outcome.as_str().to_string(),
            error_message: summary.reason.clone().or(summary.shortfall.clone()),
            shortfall: summary.shortfall.clone(),
            output: summary.output.clone(),
            transcript_path: transcript.as_ref().map(|path| path.display().to_string()),
            exit_code: code,
            turns: summary.turns,
            elapsed_seconds: elapsed,
            tokens: Tokens::of(summary.usage, summary.usage_unreported),
            usage: driver::usage_json(summary.usage, summary.usage_unreported),
            cost: cost_json(&summary.cost),
            provider: provider_options_summary(args, &running.provider),
            resume,
            ci,
            agents: running.agents.borrow().json(),
        };
        summaries(running, &summary, &finished);
    }
    code
}

/// The exit code of a run that ended: its outcome's, a failure when it did not do the work
/// (issue 13), and, with `--ci`, a test report with a FAIL row.
fn exit_code(running: &Running<'_>, summary: &Summary) -> (u8, Option<ci::CiResult>) {
    let mut code = match summary.shortfall {
        Some(_) => exit::FINDINGS,
        None => summary.outcome.exit_code(),
    };
    // `--ci`: the test report of a run that ended well decides.
    let ci = (running.args.ci && code == exit::OK)
        .then(|| {
            ci::read(
                &running.program.validation,
                &running.work_dir,
                &running.session,
            )
        })
        .and_then(|read| match read {
            Ok(found) => found,
            Err(message) => {
                eprintln!("error: {message}");
                code = exit::USAGE;
                None
            }
        });
    if let Some(found) = ci.as_ref().filter(|found| found.failed()) {
        eprintln!(
            "ci: the test report has {} FAIL row(s): {}",
            found.failed_criteria.len(),
            found.failed_criteria.join("; ")
        );
        code = exit::USAGE;
    }
    (code, ci)
}

/// The session's Markdown transcript (none for an ephemeral run), and `-o FILE`'s copy.
fn transcripts(running: &Running<'_>, summary: &Summary) -> Option<PathBuf> {
    let (args, session, task) = (running.args, &running.session, &running.task);
    let transcript = match args.ephemeral {
        true => None,
        false => match transcript::write(&running.work_dir, session, task, summary) {
            Ok(path) => Some(path),
            Err(error) => {
                eprintln!("warning: cannot write the transcript: {error}");
                None
            }
        },
    };
    // `-o FILE`: the same Markdown where the user asked for it.
    if let Some(output) = &args.output {
        let written = std::fs::File::create(output).and_then(|file| {
            let mut out = std::io::BufWriter::new(file);
            transcript::render_to(&mut out, session, task, summary)?;
            out.flush()
        });
        if let Err(error) = written {
            eprintln!(
                "warning: cannot write the transcript to `{}`: {error}",
                output.display()
            );
        }
    }
    transcript
}

/// The terminal's last line: the outcome, turns, tokens, cost and time, why, the per-agent
/// totals and how to resume.
fn last_line(running: &Running<'_>, summary: &Summary, elapsed: f64, resume: Option<&str>) {
    let why: String = summary
        .reason
        .iter()
        .map(|reason| format!("\n   {}", neutralise(reason)))
        .chain(
            summary
                .shortfall
                .iter()
                .map(|why| format!("\n   not done: {}", neutralise(why))),
        )
        .collect();
    let _ = writeln!(
        std::io::stderr().lock(),
        "── {} after {} turn(s) · session {} · {}{} · {:.2}s{why}{}{}",
        summary.outcome.as_str(),
        summary.turns,
        running.session,
        tokens_text(summary.usage, summary.usage_unreported),
        cost_text(&summary.cost),
        elapsed,
        running.agents.borrow().lines(),
        resume
            .map(|command| format!("\n   resume with: {command}"))
            .unwrap_or_default(),
    );
}

/// `--snapshot`'s copy of the turns and the summary, and `--json`'s summary line.
fn summaries(running: &Running<'_>, summary: &Summary, finished: &RunSummary) {
    // `--snapshot`: the run's turns and its summary where upstream keeps them.
    if running.args.snapshot {
        let written = snapshot::write(
            &running.work_dir,
            &running.session,
            &summary.history,
            &finished.json(),
        );
        match written {
            Ok(dir) => eprintln!("snapshot: {}", dir.display()),
            Err(message) => eprintln!("warning: cannot write the snapshot: {message}"),
        }
    }
    if running.args.json {
        println!("{}", json_line(&finished.json()));
    }
}
