//! Scale-out benchmark (issue 28): sessions run by `fuseraft serve` workers on a real Restate
//! server (`.ci/restate-deps.sh` installs it and HAProxy; without them the bench says so and
//! stops), beside the same sessions run by local `fuseraft exec`.
//!
//! Run with `cargo bench --bench scale_out [-- --sessions N --runs R]`. The workload is the
//! replayed five-turn `fixtures/run/keyword` workflow, `--sessions` of them (default 100)
//! submitted at once. Each case is measured `--runs` times (default 3) on a fresh server and
//! the medians reported, one JSON line per case:
//!
//! - `local`: `fuseraft exec --replay --ephemeral`, two processes at a time (the cores);
//! - `served-1`, `served-2`: one worker, and two behind an HTTP/2 balancer (HAProxy): the
//!   wall time from the first submission to the last session's end, sessions and turns per
//!   second, and the CPU time the server and the workers spent per turn (each turn is one
//!   invocation: its state read, one journaled `run`, four state writes and one call);
//! - `parked`: `--sessions` sessions each waiting on a question, past `--suspend-after`:
//!   how many the server holds suspended, and the worker's threads and resident memory
//!   before and after (a parked session holds no thread; freed memory the allocator keeps
//!   shows in the resident size).
//!
//! Honesty checks: every session must end `completed` after 5 turns, and every parked one
//! must list its question.

#[path = "../tests/serve/cluster.rs"]
#[allow(dead_code)]
mod cluster;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use cluster::{free_port, Balancer, Restate, Worker};
use serde_json::{json, Value as Json};

const TURNS: u64 = 5;

/// Session ids, one per submission of the whole bench.
static NEXT_ID: AtomicU32 = AtomicU32::new(0x1000_0000);

fn main() {
    let mut sessions = 100usize;
    let mut runs = 3usize;
    let args: Vec<String> = std::env::args().collect();
    for pair in args.windows(2) {
        match pair[0].as_str() {
            "--sessions" => sessions = pair[1].parse().expect("--sessions N"),
            "--runs" => runs = pair[1].parse().expect("--runs N"),
            _ => {}
        }
    }
    if std::panic::catch_unwind(|| drop(Restate::start())).is_err() {
        eprintln!("scale_out: the Restate server is not installed; run `.ci/restate-deps.sh`");
        return;
    }
    let root = tempfile::tempdir().expect("a scratch dir");
    let keyword = job(root.path(), "run/keyword", None);
    let approval = job(root.path(), "serve/approval", None);
    let local: Vec<f64> = (0..runs)
        .map(|_| local_run(root.path(), sessions))
        .collect();
    report("local", sessions, &local, None);
    for workers in [1, 2] {
        let measured: Vec<(f64, f64, f64)> = (0..runs)
            .map(|run| served_run(root.path(), &keyword, sessions, workers, run))
            .collect();
        let walls: Vec<f64> = measured.iter().map(|m| m.0).collect();
        let engine = median(measured.iter().map(|m| m.1).collect());
        let worker = median(measured.iter().map(|m| m.2).collect());
        report(
            &format!("served-{workers}"),
            sessions,
            &walls,
            Some((engine, worker)),
        );
    }
    parked(root.path(), &approval, sessions);
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

fn fuseraft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
}

/// The job `exec --on` would submit for the fixture `case` (its work dir set per session).
fn job(root: &Path, case: &str, approve: Option<&str>) -> Json {
    let config = fixture(&format!("{case}/config.yaml"));
    let ir = fuseraft()
        .args(["compile", config.to_str().unwrap(), "--emit", "ir"])
        .output()
        .expect("fuseraft compiles");
    assert!(ir.status.success());
    let replay = fixture(&format!("{case}/replay.yaml"));
    json!({
        "ir": String::from_utf8(ir.stdout).unwrap(),
        "task": "Add a --verbose flag.",
        "work_dir": root.display().to_string(),
        "max_turns": null,
        "approve": approve,
        "replay": {"name": replay.display().to_string(), "text": std::fs::read_to_string(&replay).unwrap()},
        "model": null, "endpoint": null, "api_key_env": null,
    })
}

fn local_run(root: &Path, sessions: usize) -> f64 {
    let config = fixture("run/keyword/config.yaml");
    let replay = fixture("run/keyword/replay.yaml");
    let started = Instant::now();
    for pair in (0..sessions).collect::<Vec<_>>().chunks(2) {
        let children: Vec<_> = pair
            .iter()
            .map(|n| {
                let work = root.join(format!("local-{n}"));
                std::fs::create_dir_all(&work).unwrap();
                fuseraft()
                    .args([
                        "exec",
                        config.to_str().unwrap(),
                        "--task",
                        "Add a --verbose flag.",
                    ])
                    .args([
                        "--replay",
                        replay.to_str().unwrap(),
                        "--ephemeral",
                        "--work-dir",
                    ])
                    .arg(&work)
                    .output()
            })
            .collect();
        for child in children {
            assert!(child.expect("exec runs").status.success());
        }
    }
    started.elapsed().as_secs_f64()
}

fn status(restate: &Restate, session: &str) -> Json {
    restate.call(&format!("FuseraftSession/{session}/watch"), "4294967295")["status"].clone()
}

/// Submits `sessions` copies of `job`, each in its own work dir; their ids.
fn submit(restate: &Restate, root: &Path, job: &Json, sessions: usize, tag: &str) -> Vec<String> {
    (0..sessions)
        .map(|n| {
            let id = format!("{:08x}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
            let work = root.join(format!("{tag}-{n}"));
            std::fs::create_dir_all(&work).unwrap();
            let mut job = job.clone();
            job["work_dir"] = json!(work.display().to_string());
            restate.call(
                &format!("FuseraftSession/{id}/start/send"),
                &job.to_string(),
            );
            id
        })
        .collect()
}

/// User + system CPU seconds of process `pid` so far.
fn cpu_seconds(pid: Option<u32>) -> f64 {
    let Some(stat) = pid.and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
    else {
        return 0.0;
    };
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn rss_kib(pid: Option<u32>) -> u64 {
    proc_status(pid, "VmRSS:")
}

/// A number field of `/proc/PID/status`.
fn proc_status(pid: Option<u32>, field: &str) -> u64 {
    pid.and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(field))
                .and_then(|value| value.trim().trim_end_matches(" kB").parse().ok())
        })
        .unwrap_or(0)
}

/// One served run: the wall seconds, and the server's and the workers' CPU seconds per turn.
fn served_run(
    root: &Path,
    job: &Json,
    sessions: usize,
    workers: usize,
    run: usize,
) -> (f64, f64, f64) {
    let restate = Restate::start();
    let dir = root.join(format!("served-{workers}-{run}"));
    std::fs::create_dir_all(&dir).unwrap();
    let (front, first, second) = (free_port(), free_port(), free_port());
    let (_balancer, fleet) = if workers == 1 {
        (None, vec![Worker::on_port(first, &restate, &dir, &[], &[])])
    } else {
        let balancer = Balancer::start(front, &[first, second]);
        let b = Worker::on_port(second, &restate, &dir, &[], &["--no-register".into()]);
        let advertise = [
            "--advertise".to_string(),
            format!("http://127.0.0.1:{front}"),
        ];
        let a = Worker::on_port(first, &restate, &dir, &[], &advertise);
        (Some(balancer), vec![a, b])
    };
    let cpu = |fleet: &[Worker]| fleet.iter().map(|w| cpu_seconds(w.pid())).sum::<f64>();
    let (engine_before, workers_before) = (cpu_seconds(restate.pid()), cpu(&fleet));
    let started = Instant::now();
    let ids = submit(&restate, &dir, job, sessions, &format!("s{workers}"));
    for id in &ids {
        loop {
            let status = status(&restate, id);
            if let Some(outcome) = status["outcome"].as_str() {
                assert_eq!(outcome, "completed", "{status}");
                assert_eq!(status["turn"], TURNS, "{status}");
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(600),
                "session {id} did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let turns = (sessions as u64 * TURNS) as f64;
    let engine = (cpu_seconds(restate.pid()) - engine_before) / turns;
    let worker = (cpu(&fleet) - workers_before) / turns;
    (wall, engine, worker)
}

fn parked(root: &Path, job: &Json, sessions: usize) {
    let restate = Restate::start();
    let dir = root.join("parked");
    std::fs::create_dir_all(&dir).unwrap();
    let suspend = ["--suspend-after".to_string(), "1".to_string()];
    let worker = Worker::on_port(free_port(), &restate, &dir, &[], &suspend);
    // Warm: one session through its question first, so the worker's pools are grown.
    let warm = submit(&restate, &dir, job, 1, "warm");
    wait_waiting(&restate, &warm);
    std::thread::sleep(Duration::from_secs(3));
    let before = (rss_kib(worker.pid()), threads(worker.pid()));
    let ids = submit(&restate, &dir, job, sessions, "parked");
    wait_waiting(&restate, &ids);
    // Past `--suspend-after` the invocations are suspended, not held.
    std::thread::sleep(Duration::from_secs(3));
    let after = (rss_kib(worker.pid()), threads(worker.pid()));
    let suspended = suspended(&restate);
    assert_eq!(suspended, sessions + 1, "every parked session is suspended");
    println!(
        "{}",
        json!({"case": "parked", "sessions": sessions, "suspended": suspended,
               "worker_threads_before": before.1, "worker_threads_after": after.1,
               "worker_rss_kib_before": before.0, "worker_rss_kib_after": after.0})
    );
}

/// How many session invocations the server holds suspended.
fn suspended(restate: &Restate) -> usize {
    let rows = restate.query(
        "SELECT count(*) AS n FROM sys_invocation WHERE target_service_name = 'FuseraftSession' AND status = 'suspended'",
    );
    rows.first().and_then(|row| row["n"].as_u64()).unwrap_or(0) as usize
}

fn threads(pid: Option<u32>) -> u64 {
    proc_status(pid, "Threads:")
}

fn wait_waiting(restate: &Restate, ids: &[String]) {
    let started = Instant::now();
    for id in ids {
        while status(restate, id)["waiting"].is_null() {
            assert!(
                started.elapsed() < Duration::from_secs(600),
                "session {id} asked nothing"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn report(case: &str, sessions: usize, walls: &[f64], cpu: Option<(f64, f64)>) {
    let wall = median(walls.to_vec());
    let mut line = json!({
        "case": case,
        "sessions": sessions,
        "wall_s": (wall * 1000.0).round() / 1000.0,
        "walls_s": walls.iter().map(|w| (w * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
        "sessions_per_s": (sessions as f64 / wall * 10.0).round() / 10.0,
        "turns_per_s": (sessions as f64 * TURNS as f64 / wall).round(),
    });
    if let Some((engine, worker)) = cpu {
        line["engine_cpu_ms_per_turn"] = json!((engine * 1e5).round() / 100.0);
        line["worker_cpu_ms_per_turn"] = json!((worker * 1e5).round() / 100.0);
    }
    println!("{line}");
}
