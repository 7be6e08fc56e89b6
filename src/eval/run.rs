//! One run of a case: a fresh copy of the project, the workflow driven in process by the
//! VM's driver (the machinery `exec` and `fuseraft test` use) against the model under test
//! or the suite's replay, its events kept to render the routing, then scored and judged.

use std::time::{Duration, Instant};

use fuseraft_vm::driver::{self, Approvals, Cost, Env, Models, Summary};
use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::history::Usage;
use fuseraft_vm::machine::{Options, Run};
use fuseraft_vm::providers::{Overrides, Providers, Settings};
use fuseraft_vm::replay::{Replay, Script};
use serde::{Deserialize, Serialize};

use super::prepare::Ready;
use super::{copy, judge, scoped, score};
use crate::scenario::route;
use crate::scenario::run::{Ran, Record};

/// How model calls are answered.
pub enum Source {
    /// `--replay FILE`: the suite's script, and the case ids its queue names may scope to.
    Replay { script: Script, ids: Vec<String> },
    /// The model under test: `--model`, `--endpoint`, `--api-key-env`.
    Live { overrides: Overrides },
}

/// What every run shares.
pub struct Shared<'a> {
    pub source: &'a Source,
    /// The project each run copies.
    pub root: &'a std::path::Path,
    /// `--timeout`.
    pub timeout: Option<Duration>,
}

/// The most characters of a run's output the report keeps.
const MAX_OUTPUT: usize = 2000;

/// How one run went.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    /// Which run of its case (from 1).
    pub run: u32,
    pub passed: bool,
    /// `completed`, `max_turns`, `stuck`, `budget`, `error`, or `timed_out`.
    pub outcome: String,
    pub reason: Option<String>,
    pub turns: u32,
    /// The states the run went through.
    pub path: Vec<String>,
    /// Why it failed: one line per failed check.
    pub failures: Vec<String>,
    pub judge: Option<judge::Verdict>,
    /// The run's output, its first 2000 characters.
    pub output: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model calls whose server reported no usage (their tokens are not counted).
    pub calls_without_usage: u32,
    /// What the priced calls cost, in US dollars; `unpriced_calls` had no known price.
    pub cost_usd: f64,
    pub unpriced_calls: u32,
    pub seconds: f64,
}

/// Runs `ready`'s case once (run `number`, from 1). `Err` when the run cannot start.
pub fn run(ready: &Ready<'_>, number: u32, shared: &Shared<'_>) -> Result<RunResult, String> {
    let started = Instant::now();
    let work = copy::copy(shared.root)?;
    driver::sandbox_root(&ready.program, &work.path)
        .map_err(|message| format!("{message} (in `{}`)", ready.config.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))?;
    let env = Env {
        work_dir: work.path.clone(),
        deny_read: crate::session::key::deny_read(&[]),
        approvals: if ready.case.approve {
            Approvals::All
        } else {
            Approvals::None
        },
        pause: None,
    };
    let mut result = match shared.source {
        Source::Replay { script, ids } => {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let replay = Replay::new(scoped::for_run(script, &ids, &ready.case.id, number));
            runtime.block_on(drive(ready, number, &replay, &replay, &env, shared))
        }
        Source::Live { overrides } => {
            let key = |name: &str| std::env::var(name).ok();
            let providers =
                Providers::new(&ready.program, overrides, Settings::default(), &key, None)?;
            match &ready.judge {
                Some(model) => {
                    let judge = judge::provider(model, &ready.program)?;
                    runtime.block_on(drive(ready, number, &providers, &judge, &env, shared))
                }
                None => {
                    runtime.block_on(drive(ready, number, &providers, &providers, &env, shared))
                }
            }
        }
    };
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// Drives the run, then scores it (asking `judges` when the case has a judge).
async fn drive<M: Models, J: Models>(
    ready: &Ready<'_>,
    number: u32,
    models: &M,
    judges: &J,
    env: &Env,
    shared: &Shared<'_>,
) -> RunResult {
    let case = ready.case;
    let options = Options {
        session_id: crate::session::new_id(),
        task: case.task.clone(),
        // One turn past the case's limit shows that it was exceeded, and stops paying.
        max_turns: (case.max_turns > 0).then(|| case.max_turns.saturating_add(1)),
        skip_prompts: false,
    };
    let mut records: Vec<Record> = Vec::new();
    let mut seen = (0u32, Usage::default());
    let mut after_not_found = false;
    let mut on_event = |event: &Event, run: &Run| {
        seen = (run.turn, run.usage);
        let route = route::infer(&ready.program, event, after_not_found, run);
        after_not_found = matches!(event.kind, EventKind::KeywordNotFound { .. });
        records.push(Record {
            event: event.clone(),
            route,
        });
    };
    let running = driver::run(&ready.program, options, models, env, &mut on_event);
    let summary = match shared.timeout {
        Some(limit) => tokio::time::timeout(limit, running).await.ok(),
        None => Some(running.await),
    };
    let path = path_of(ready, &records);
    let Some(summary) = summary else {
        let limit = shared.timeout.unwrap_or_default().as_secs_f64();
        return timed_out(number, limit, seen, path, models.cost());
    };
    let (mut result, output) = scored(ready, number, summary, records, path, env);
    if let Some(judge) = &case.judge {
        let call = judge::call(judge, &case.task, &output);
        let (verdict, reply) = judge::ask(judges, &call).await;
        result.input_tokens += reply.usage.input_tokens;
        result.output_tokens += reply.usage.output_tokens;
        if !judges.replayed() {
            add_cost(&mut result, reply.cost);
        }
        if !verdict.passed() {
            result.failures.push(format!(
                "the judge says {}: {}",
                verdict.verdict.to_uppercase(),
                verdict.reason
            ));
        }
        result.passed = result.failures.is_empty();
        result.judge = Some(verdict);
    }
    result
}

/// The entry state, then the target of every route the run took (`end` for the end).
fn path_of(ready: &Ready<'_>, records: &[Record]) -> Vec<String> {
    let program = &ready.program;
    let mut path = vec![program.state(program.entry).name.clone()];
    for record in records {
        match &record.event.kind {
            EventKind::SessionStart {
                start_state: Some(start),
                ..
            } => path = vec![start.clone()],
            EventKind::AgentRouted { to, .. } => path.push(to.clone()),
            _ => {}
        }
    }
    path
}

fn add_cost(result: &mut RunResult, cost: Option<f64>) {
    match cost {
        Some(usd) => result.cost_usd += usd,
        None => result.unpriced_calls += 1,
    }
}

fn timed_out(
    number: u32,
    limit: f64,
    seen: (u32, Usage),
    path: Vec<String>,
    cost: Cost,
) -> RunResult {
    let reason = format!("timed out after {limit}s");
    RunResult {
        run: number,
        passed: false,
        outcome: "timed_out".to_string(),
        reason: Some(reason.clone()),
        turns: seen.0,
        path,
        failures: vec![reason],
        judge: None,
        output: None,
        input_tokens: seen.1.input_tokens,
        output_tokens: seen.1.output_tokens,
        calls_without_usage: 0,
        cost_usd: cost.usd,
        unpriced_calls: cost.unpriced,
        seconds: 0.0,
    }
}

/// The finished run scored against its case, and its whole output.
fn scored(
    ready: &Ready<'_>,
    number: u32,
    summary: Summary,
    records: Vec<Record>,
    path: Vec<String>,
    env: &Env,
) -> (RunResult, String) {
    let succeeded = summary.outcome.exit_code() == 0 && summary.shortfall.is_none();
    let reason = summary.reason.clone().or(summary.shortfall.clone());
    let ending = match &reason {
        Some(reason) => format!("{}: {reason}", summary.outcome.as_str()),
        None => summary.outcome.as_str().to_string(),
    };
    let output = summary.output.clone().unwrap_or_default();
    let (usage, unreported, cost) = (summary.usage, summary.usage_unreported, summary.cost);
    let outcome = summary.outcome.as_str().to_string();
    let turns = summary.turns;
    let trace = ready.case.trace.as_ref().map(|_| {
        let scrub = vec![(env.work_dir.display().to_string(), "<work>")];
        crate::scenario::trace::render(&Ran {
            program: ready.program.clone(),
            records,
            summary,
            scrub,
        })
    });
    let seen = score::Seen {
        succeeded,
        ending: &ending,
        output: &output,
        turns,
        path: &path,
        trace: trace.as_deref(),
    };
    let failures = score::reasons(ready.case, &seen);
    let result = RunResult {
        run: number,
        passed: failures.is_empty(),
        outcome,
        reason,
        turns,
        path,
        failures,
        judge: None,
        output: (!output.is_empty()).then(|| output.chars().take(MAX_OUTPUT).collect()),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        calls_without_usage: unreported,
        cost_usd: cost.usd,
        unpriced_calls: cost.unpriced,
        seconds: 0.0,
    };
    (result, output)
}
