//! What the any-language worker costs (issue 27 item 5): `cairnq worker
//! --exec` on a no-op command against the bare cost of spawning that
//! command as often at the same parallelism, and the long-running mode
//! (`--serve`, one process exchanging a JSON line per task) against the
//! per-process one.
//!
//! The worker side runs the very handlers `cairnq worker --exec` and
//! `--serve` register ([`ExecHandler`], [`ServeHandler`]) on a real SQLite
//! file, in this process; the bare side is a loop of tokio tasks spawning
//! `sh -c CMD` the way the worker does (payload on stdin, stdout read to
//! its end, the exit awaited), with no store, watchdog or group. The two
//! alternate (bare, worker, bare, worker) and each number is the better of
//! its two runs, so a burst of load from elsewhere on the machine falls on
//! both sides alike.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cairnq_core::{CairnQ, Error, Result, TaskStatus};
use cairnq_testkit::BackendFactory;
use cairnq_worker::exec::{self, ExecHandler, ServeHandler};
use cairnq_worker::{Worker, WorkerOptions};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::workloads::noop_specs;
use super::{per_second, wait_for_count};

/// Commands (or slots) at once: two per core of the 2-core machines the
/// bench is recorded on, so one process can start while another ends.
pub(super) const CONCURRENCY: usize = 4;

/// The no-op serve program: a shell loop answering every task line with a
/// `null` result. `read` and `printf` are builtins, so no process starts
/// per task; the id is the line's first string (the worker writes `id`
/// first), cut out with parameter expansion.
pub(super) const SERVE_NOOP: &str =
    r#"while IFS= read -r line; do id=${line#*\"id\":\"}; printf '{"id":"%s","result":null}\n' "${id%%\"*}"; done"#;

/// `tasks` spawns of `sh -c command` by [`CONCURRENCY`] tokio tasks, each
/// given the payload `{}` on stdin, its stdout read to the end and its exit
/// awaited; spawns per second.
pub(super) async fn bare_spawns(command: &str, tasks: usize) -> Result<f64> {
    let left = Arc::new(AtomicUsize::new(tasks));
    let start = Instant::now();
    let mut joins = Vec::new();
    for _ in 0..CONCURRENCY {
        let (left, command) = (left.clone(), command.to_string());
        joins.push(tokio::spawn(async move {
            while left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok() {
                spawn_once(&command).await?;
            }
            Ok::<_, std::io::Error>(())
        }));
    }
    for join in joins {
        join.await.map_err(|e| Error::storage("a spawn loop panicked", e))?.map_err(spawn_error)?;
    }
    Ok(per_second(tasks, start.elapsed()))
}

async fn spawn_once(command: &str) -> std::io::Result<()> {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that reads nothing may close its end first.
        let _ = stdin.write_all(b"{}").await;
    }
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let mut sink = Vec::new();
    if let Some(out) = stdout.as_mut() {
        out.read_to_end(&mut sink).await?;
    }
    if let Some(err) = stderr.as_mut() {
        err.read_to_end(&mut sink).await?;
    }
    let status = child.wait().await?;
    if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("sh -c {command}: {status}"))) }
}

fn spawn_error(e: std::io::Error) -> Error {
    Error::storage("bare spawn benchmark", e)
}

/// How a drain's worker runs each task.
pub(super) enum Runner<'a> {
    /// `cairnq worker --exec CMD`.
    Exec(&'a str),
    /// `cairnq worker --serve CMD`.
    Serve(&'a str),
}

/// Drains `tasks` tasks (payload `{}`) from a fresh store with a worker of
/// [`CONCURRENCY`] running `runner` for every name; tasks per second from
/// the worker's start to the last success in the store.
pub(super) async fn drain(factory: &dyn BackendFactory, runner: Runner<'_>, tasks: usize) -> Result<f64> {
    let store = factory.fresh().await?.store;
    let client = CairnQ::from_shared(store.clone());
    for chunk in noop_specs(tasks, &json!({})).chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    // As `cairnq worker --exec` and `--serve` run.
    let options = WorkerOptions::new().concurrency(CONCURRENCY).completion_linger(exec::COMPLETION_LINGER);
    let mut worker = Worker::new(CairnQ::from_shared(store), options)?;
    match runner {
        Runner::Exec(command) => worker.exec_all(&ExecHandler::new(command)?)?,
        Runner::Serve(command) => worker.serve_lines_all(&ServeHandler::new(command)?)?,
    };
    let start = Instant::now();
    let handle = worker.spawn();
    let drained = wait_for_count(&client, TaskStatus::Succeeded, tasks, std::time::Duration::from_secs(600)).await;
    let rate = per_second(tasks, start.elapsed());
    handle.stop_and_join().await?;
    drained.map(|()| rate)
}

/// The better (higher) of two rates.
fn best(a: f64, b: f64) -> f64 {
    a.max(b)
}

/// `exec_spawn`: for `true` and `cat`, the bare spawn rate, the exec
/// worker's rate and their ratio, as (metric, value) pairs.
pub(super) async fn exec_spawn(factory: &dyn BackendFactory, tasks: usize) -> Result<Vec<(String, f64)>> {
    let mut out = Vec::new();
    for command in ["true", "cat"] {
        let mut bare = 0.0f64;
        let mut exec = 0.0f64;
        for _ in 0..2 {
            bare = best(bare, bare_spawns(command, tasks).await?);
            exec = best(exec, drain(factory, Runner::Exec(command), tasks).await?);
        }
        out.push((format!("bare_{command}_per_s"), bare));
        out.push((format!("exec_{command}_per_s"), exec));
        out.push((format!("exec_{command}_over_bare"), exec / bare.max(1e-9)));
    }
    Ok(out)
}

/// `serve_noop`: the serve worker's rate on a no-op program, the exec
/// worker's on `true`, and their ratio.
pub(super) async fn serve_noop(factory: &dyn BackendFactory, tasks: usize) -> Result<Vec<(String, f64)>> {
    let mut exec = 0.0f64;
    let mut serve = 0.0f64;
    for _ in 0..2 {
        exec = best(exec, drain(factory, Runner::Exec("true"), tasks).await?);
        // The long-running mode drains far faster: give it ten times the
        // tasks, so its run is not over before the worker is warm.
        serve = best(serve, drain(factory, Runner::Serve(SERVE_NOOP), tasks * 10).await?);
    }
    Ok(vec![
        ("exec_true_per_s".into(), exec),
        ("serve_noop_per_s".into(), serve),
        ("serve_over_exec".into(), serve / exec.max(1e-9)),
    ])
}
