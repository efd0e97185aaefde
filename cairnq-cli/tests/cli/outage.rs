//! A Postgres outage under a running `cairnq worker`: the real server is
//! stopped mid-drain and started again, and the worker's log says so in
//! two lines (unreachable, naming host and port; reconnected after how
//! long), not a line a second per part of the worker; every task finishes.

use std::process::{Command, Stdio};
use std::time::Duration;

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_postgres::PostgresStore;
use cairnq_testkit::postgres::TestServer;
use cairnq_testkit::support::eventually_within;

use crate::support::binary;

const TASKS: u64 = 40;
/// How long the server stays down: long enough for every loop of the
/// worker to fail many times over (the claim backoff starts at the poll
/// interval, the schedule loop ticks every second), well short of the
/// 60 s reminder.
const OUTAGE: Duration = Duration::from_secs(8);
/// Far longer than anything here takes on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(120);

async fn succeeded(dsn: &str) -> u64 {
    let Ok(store) = PostgresStore::connect(dsn).await else { return 0 };
    let client = CairnQ::new(store);
    let done = client.stats(None).await.map_or(0, |s| s.values().map(|c| c.get(TaskStatus::Succeeded)).sum());
    let _ = client.close().await;
    done
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_outage_is_two_lines_in_the_worker_log_and_loses_no_task() {
    let server = TestServer::private("outage").expect("a private Postgres server");
    let dsn = server.dsn().to_string();
    let endpoint = dsn.split('@').nth(1).and_then(|rest| rest.split('/').next()).expect("host:port").to_string();
    let client = CairnQ::new(PostgresStore::connect(&dsn).await.expect("connect"));
    for n in 0..TASKS {
        client.submit("job", &n).await.expect("submit");
    }
    client.close().await.expect("close");

    let log_dir = tempfile::tempdir().expect("temp dir");
    let log_path = log_dir.path().join("worker.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut worker = Command::new(binary())
        .args(["--db", &dsn, "worker", "--exec", "sleep 0.2; echo 1", "--concurrency", "2", "--lease", "3s"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start cairnq worker");

    eventually_within("the drain is under way", PATIENCE, || async { succeeded(&dsn).await >= 3 }).await;
    server.stop().expect("stop the server");
    tokio::time::sleep(OUTAGE).await;
    server.start_again().expect("start the server again");
    eventually_within("every task succeeded", PATIENCE, || async { succeeded(&dsn).await == TASKS }).await;

    let pid = worker.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    let status = worker.wait().expect("the worker exits");
    let log = std::fs::read_to_string(&log_path).expect("read the log");
    eprintln!("{log}");
    assert!(status.success(), "{status:?}");

    let lines: Vec<&str> = log.lines().collect();
    let unreachable: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains("unreachable")).collect();
    assert_eq!(unreachable.len(), 1, "one line when the outage starts, none per failed call");
    let first = lines[unreachable[0]];
    assert!(first.contains(&format!("the database at {endpoint} is unreachable")), "{first}");
    let reconnected: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains("reconnected after")).collect();
    assert_eq!(reconnected.len(), 1, "one line when it ends");
    assert!(reconnected[0] > unreachable[0], "the end comes after the start");
    let failed: Vec<&&str> = lines.iter().filter(|l| l.contains(" failed")).collect();
    assert!(failed.is_empty(), "no failed call is reported on its own during the outage: {failed:?}");
}
