//! Fan-out under SIGKILL: worker processes (the child's `fan-out` mode)
//! killed at random moments of a handler's fan-out and of its children's
//! runs. The fan-out is one transaction, so at every look the store holds
//! all of a fan-out (the handler succeeded, its 1,000 children, its join)
//! or none of it; and the join, released by the store when the last child
//! ends, runs once (a run cut by a kill aside), after every child.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cairnq_core::store::CountTasksParams;
use cairnq_core::{CairnQ, ListFilter, Task, TaskStatus, WaitOptions};
use serde_json::{Value, json};

use super::support::fresh;
use crate::child::fan_out::{JOIN, KILLS_TO_SPARE, PART, SPLIT};
use crate::child::{ChildArgs, ChildMode, ChildProcess, RecordLine};
use crate::{BackendFactory, StoreLocator};

/// Children per fan-out (the acceptance size).
const PARTS: u64 = 1_000;
/// Handlers that fan out.
const SPLITS: usize = 2;
/// How long anything the test waits for may take.
const PATIENCE: Duration = Duration::from_secs(120);

/// Two handlers each fan out 1,000 children and a join while worker
/// processes are SIGKILLed: up to four times 0-300 ms (drawn at
/// random) after a handler announced its fan-out, then twice at random
/// points of the children's runs; a last process finishes the work.
/// After every kill the store holds each fan-out whole or not at all
/// (the handler succeeded with 1,000 children and one join, or none of
/// them); at the end every handler succeeded with exactly its children and
/// one join, every join succeeded having seen 1,000 succeeded dependencies,
/// and each join ran once: every other run was of an earlier attempt, on a
/// process the test killed. The seed is printed (`CAIRNQ_CHAOS_SEED`
/// replays it). Skipped when the factory gives no locator.
pub async fn sigkills_leave_no_half_written_fan_out(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let seed =
        std::env::var("CAIRNQ_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    let logs = tempfile::tempdir().expect("a temp dir for the run logs");
    let mut splits = Vec::new();
    for _ in 0..SPLITS {
        let payload = json!({"n": PARTS, "part_ms": 1});
        splits.push(client.submit(SPLIT, &payload).max_attempts(KILLS_TO_SPARE).await.expect("submit a split").id);
    }
    let mut fleet = Fleet { locator, dir: logs.path().to_path_buf(), logs: Vec::new(), killed: Vec::new() };

    // Kills during the fan-out: a few ms after a handler says it splits.
    let mut cut_before_commit = 0;
    for _ in 0..4 {
        if all_fanned_out(&client, &splits).await {
            break;
        }
        let mut worker = fleet.spawn().await;
        if worker.process.line_starting("splitting ", Duration::from_secs(30)).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(rng.u64(0..300))).await;
        }
        fleet.kill(worker);
        cut_before_commit += assert_whole_or_nothing(&client, &splits).await;
    }
    // Kills during the children's runs, at random counts of parts done.
    let total = PARTS * SPLITS as u64;
    for _ in 0..2 {
        let mut worker = fleet.spawn().await;
        let at = rng.u64(total / 10..total * 8 / 10);
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while parts_done(&client).await < at && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(worker.process.try_wait().expect("poll the worker").is_none(), "a worker exited by itself");
        fleet.kill(worker);
        assert_whole_or_nothing(&client, &splits).await;
    }
    // A last worker finishes the work.
    let mut last = fleet.spawn().await;
    let wait = WaitOptions::new().timeout(PATIENCE).polling(Duration::from_millis(20), Duration::from_millis(200));
    let mut joins = Vec::new();
    for split in &splits {
        assert_eq!(client.wait(split, &wait).await.expect("the split ends").status, TaskStatus::Succeeded);
        let join = children_of(&client, split).await.into_iter().find(|t| t.name == JOIN).expect("a join");
        joins.push(client.wait(&join.id, &wait).await.expect("the join ends"));
    }
    let (status, _) = last.process.stop(Duration::from_secs(30)).await.expect("the last worker stops");
    assert!(status.success(), "the last worker exited with {status}");

    println!(
        "fan-out chaos on {}: {} SIGKILLs, {cut_before_commit} fan-outs found unwritten after a kill, {} join runs, \
         seed {seed}",
        factory.name(),
        fleet.killed.len(),
        join_runs(&fleet.logs).len()
    );
    assert_whole_or_nothing(&client, &splits).await;
    let runs = join_runs(&fleet.logs);
    for join in &joins {
        assert_eq!(join.status, TaskStatus::Succeeded, "join {}: {:?} (seed {seed})", join.id, join.error);
        let result: Value = join.result.as_ref().expect("a result").decode().expect("JSON");
        assert_eq!(result["seen"], json!(PARTS), "the join saw every child succeeded (seed {seed})");
        let worker = result["worker"].as_str().expect("the worker that ran it");
        let own: Vec<&(String, u32, String)> = runs.iter().filter(|(task, _, _)| *task == join.id).collect();
        let last_runs = own.iter().filter(|(_, attempt, _)| *attempt == join.attempt).count();
        assert_eq!(last_runs, 1, "the join's last attempt ran once: {own:?} (seed {seed})");
        assert!(own.iter().any(|(_, a, w)| *a == join.attempt && w == worker), "{own:?}");
        for (_, attempt, by) in &own {
            assert!(
                *attempt == join.attempt || fleet.killed.contains(by),
                "join {} ran again (attempt {attempt} on {by}) without a kill explaining it (seed {seed})",
                join.id
            );
        }
    }
}

/// The worker processes: their run logs, and the worker ids killed.
struct Fleet {
    locator: StoreLocator,
    dir: PathBuf,
    logs: Vec<PathBuf>,
    killed: Vec<String>,
}

struct Member {
    process: ChildProcess,
    worker_id: String,
}

impl Fleet {
    /// A worker process in `fan-out` mode, once it serves.
    async fn spawn(&mut self) -> Member {
        let log = self.dir.join(format!("child-{}.log", self.logs.len()));
        let mut args = ChildArgs::new(self.locator.clone(), ChildMode::FanOut);
        (args.concurrency, args.lease_ms, args.drain_ms) = (8, 1_000, 2_000);
        args.log = Some(log.clone());
        self.logs.push(log);
        let mut process = ChildProcess::spawn(&args).expect("start a worker process");
        let ready = process.line_starting("ready ", Duration::from_secs(30)).await.expect("the worker serves");
        let worker_id = ready.split(' ').nth(2).expect("ready <pid> <worker id>").to_string();
        Member { process, worker_id }
    }

    fn kill(&mut self, mut member: Member) {
        member.process.kill().expect("SIGKILL and reap a worker process");
        self.killed.push(member.worker_id);
    }
}

async fn children_of(client: &CairnQ, task_id: &str) -> Vec<Task> {
    let page = client.children(task_id, 10_000).await.expect("children");
    assert!(page.undecodable.is_empty(), "{:?}", page.undecodable);
    page.tasks
}

async fn all_fanned_out(client: &CairnQ, splits: &[String]) -> bool {
    for split in splits {
        if client.get(split).await.expect("get").is_none_or(|t| t.status != TaskStatus::Succeeded) {
            return false;
        }
    }
    true
}

async fn parts_done(client: &CairnQ) -> u64 {
    let filter = ListFilter::new().name(PART).status(TaskStatus::Succeeded);
    client.count_tasks(&CountTasksParams::new(filter, u64::MAX)).await.expect("count")
}

/// Each split holds all of its fan-out (succeeded, `PARTS` children, one
/// join) or none of it (not succeeded, no child); answers how many held
/// none.
async fn assert_whole_or_nothing(client: &CairnQ, splits: &[String]) -> usize {
    let mut nothing = 0;
    for split in splits {
        let row = client.get(split).await.expect("get").expect("the split's row");
        let children = children_of(client, split).await;
        let parts = children.iter().filter(|t| t.name == PART).count() as u64;
        let joins = children.iter().filter(|t| t.name == JOIN).count();
        let whole = (row.status == TaskStatus::Succeeded, parts, joins);
        assert!(
            whole == (true, PARTS, 1) || whole == (false, 0, 0),
            "split {split} is half-written: (succeeded, parts, joins) = {whole:?}"
        );
        nothing += usize::from(!whole.0);
    }
    nothing
}

/// Every join run the logs record: (task, attempt, worker id).
fn join_runs(logs: &[PathBuf]) -> Vec<(String, u32, String)> {
    logs.iter().flat_map(|log| read_log(log)).collect()
}

fn read_log(path: &Path) -> Vec<(String, u32, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| match RecordLine::parse(line) {
            Ok(RecordLine::Start { task, attempt, worker, .. }) => Some((task, attempt, worker)),
            _ => None,
        })
        .collect()
}
