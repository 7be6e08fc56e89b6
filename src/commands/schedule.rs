//! `fuseraft schedule add|list|remove|run --on URL`: runs a Restate server starts on a cron
//! schedule (`crate::serve::schedule`). `add` takes what each tick runs as `fuseraft exec`
//! takes it, after `--`, compiled and checked here once. Exit codes: 0 done, 1 the server
//! refused (a name in use, no such schedule), 2 a usage error or a server out of reach.

use super::{exit, usage};
use crate::cli::{Command, ScheduleAction, ScheduleAddArgs, ScheduleArgs};
use crate::render::Style;
use crate::serve::client::{self, Refused};
use crate::serve::schedule::{self, Added};
use crate::terminal::neutralise;

pub fn run(args: &ScheduleArgs, style: Style) -> u8 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage(&format!("cannot start a runtime: {error}")),
    };
    match &args.action {
        ScheduleAction::Add(add) => match added(add, style) {
            Ok(added) => runtime.block_on(async {
                match client::schedule_add(&add.on, &add.name, &added).await {
                    Ok(kept) => {
                        eprintln!(
                            "schedule `{}` added; next tick {}",
                            add.name,
                            when(kept.next)
                        );
                        exit::OK
                    }
                    Err(refused) => failed(&refused),
                }
            }),
            Err(code) => code,
        },
        ScheduleAction::List(list) => runtime.block_on(async {
            let names = match client::schedule_names(&list.on).await {
                Ok(names) => names,
                Err(refused) => return failed(&refused),
            };
            for name in names {
                match client::schedule_show(&list.on, &name).await {
                    Ok(Some(kept)) if list.json => println!(
                        "{}",
                        serde_json::json!({"name": name, "cron": kept.cron, "next": when(kept.next),
                                           "task": kept.job.task, "work_dir": kept.job.work_dir,
                                           "fired": kept.fired})
                    ),
                    Ok(Some(kept)) => println!(
                        "{name}  {}  next {}  last {}  {}",
                        neutralise(&kept.cron),
                        when(kept.next),
                        kept.fired.last().map_or("-".to_string(), |fired| format!(
                            "{} (session {})",
                            when(fired.tick),
                            fired.session
                        )),
                        neutralise(&kept.job.task)
                    ),
                    Ok(None) => {}
                    Err(refused) => return failed(&refused),
                }
            }
            exit::OK
        }),
        ScheduleAction::Remove(named) => runtime.block_on(async {
            match client::schedule_remove(&named.on, &named.name).await {
                Ok(()) => {
                    eprintln!("schedule `{}` removed", named.name);
                    exit::OK
                }
                Err(refused) => failed(&refused),
            }
        }),
        ScheduleAction::Run(named) => runtime.block_on(async {
            match client::schedule_run(&named.on, &named.name).await {
                Ok(session) => {
                    println!("{session}");
                    exit::OK
                }
                Err(refused) => failed(&refused),
            }
        }),
    }
}

fn failed(refused: &Refused) -> u8 {
    eprintln!("error: {}", neutralise(&refused.message));
    if refused.status.is_some() {
        exit::FINDINGS
    } else {
        exit::USAGE
    }
}

/// A tick as an RFC 3339 time.
fn when(tick: i64) -> String {
    let time =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(tick).unwrap_or(0));
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The schedule `add` keeps: its cron checked, and the run after `--` read as `exec` reads
/// it, compiled and checked.
fn added(args: &ScheduleAddArgs, style: Style) -> Result<Added, u8> {
    let valid_name = !args.name.is_empty()
        && args.name.len() <= 64
        && args
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if !valid_name {
        return Err(usage(&format!(
            "`{}` is no schedule name: letters, digits, `-`, `_` and `.`, at most 64",
            args.name
        )));
    }
    schedule::parse(&args.cron).map_err(|message| usage(&message))?;
    let line = ["fuseraft", "exec"]
        .into_iter()
        .map(String::from)
        .chain(args.exec.iter().cloned());
    let exec = match <crate::cli::Cli as clap::Parser>::try_parse_from(line) {
        Ok(crate::cli::Cli {
            command: Command::Exec(exec),
            ..
        }) => *exec,
        Ok(_) => return Err(usage("the arguments after `--` are not `fuseraft exec`'s")),
        Err(error) => return Err(usage(&format!("the run after `--`: {error}"))),
    };
    let mut exec = super::run_line::read(exec).map_err(|message| usage(&message))?;
    exec.input = super::inputs::workflow_in(&exec.input);
    let job = super::remote::submission(&exec, style)?;
    Ok(Added {
        cron: args.cron.clone(),
        job,
    })
}
