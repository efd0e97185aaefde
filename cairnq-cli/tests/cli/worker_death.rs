//! `cairnq worker --exec` killed outright (SIGKILL: no destructor, no
//! drain): its commands die with it within a moment, pipelines and
//! background children included, so a task's retry on another worker never
//! runs beside the old attempt; and a command started just before the kill
//! still has its whole payload on stdin.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::marked::{MARK_VAR, Mark};
use crate::support::Fixture;

/// How long a command may outlive its worker: "a moment". Generous: the
/// watchdog wakes on an end of file and sends one signal.
pub(crate) const OUTLIVES_ITS_WORKER_AT_MOST: Duration = Duration::from_secs(1);

/// Waits (bounded, for a stuck worker) until `path` holds `lines` lines.
fn until_lines(path: &Path, lines: usize) {
    let start = Instant::now();
    while std::fs::read_to_string(path).map_or(0, |text| text.lines().count()) < lines {
        assert!(start.elapsed() < Duration::from_secs(60), "{} never got {lines} lines", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (bounded, for a stuck worker) until `path` exists.
fn until_exists(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILLs the worker and reaps it.
fn sigkill(mut worker: Child) {
    worker.kill().expect("SIGKILL the worker");
    worker.wait().expect("reap the worker");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sigkilled_worker_leaves_no_command_running() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let started = dir.path().join("started");
    // Two commands at once, each a shell with a background child and a
    // foreground one: the whole of each must go.
    let command = format!("cat > /dev/null; sleep 600 & echo \"$CAIRNQ_TASK_ID\" >> {}; sleep 600", started.display());
    for _ in 0..2 {
        fixture.client.submit("long", &json!({})).max_attempts(3).await.expect("submit");
    }
    let mark = Mark::new();
    let worker = fixture
        .cli
        .command(&["worker", "--exec", &command, "--concurrency", "2"])
        .env(MARK_VAR, mark.value())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the worker");
    until_lines(&started, 2);
    assert!(mark.live().len() >= 5, "the worker and its commands run: {:?}", mark.live());

    sigkill(worker);
    std::thread::sleep(OUTLIVES_ITS_WORKER_AT_MOST);
    let left = mark.live();
    assert!(left.is_empty(), "commands outlived their SIGKILLed worker by a second: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_started_just_before_the_kill_has_its_whole_payload() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (started, go, count) = (dir.path().join("started"), dir.path().join("go"), dir.path().join("count"));
    // Far more than a pipe holds, so a payload fed through a pipe would
    // still be on its way when the worker dies.
    let payload = json!({"pad": "x".repeat(1 << 20)});
    let expected = serde_json::to_string(&payload).expect("payload text").len();
    fixture.client.submit("big", &payload).await.expect("submit");
    // A reader that leaves the command's session (so it outlives the
    // kill by design) reads stdin only once the worker is dead.
    let command = format!(
        "setsid -f sh -c 'while [ ! -e {go} ]; do sleep 0.02; done; wc -c > {count}.part; mv {count}.part {count}'; \
         touch {started}; sleep 600",
        go = go.display(),
        count = count.display(),
        started = started.display()
    );
    let mark = Mark::new();
    let worker = fixture
        .cli
        .command(&["worker", "--exec", &command])
        .env(MARK_VAR, mark.value())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the worker");
    until_exists(&started);
    sigkill(worker);
    std::fs::write(&go, "").expect("let the reader read");
    until_exists(&count);
    let read: usize = std::fs::read_to_string(&count).expect("count").trim().parse().expect("a byte count");
    assert_eq!(read, expected, "the command's stdin held {read} of the payload's {expected} bytes");
}
