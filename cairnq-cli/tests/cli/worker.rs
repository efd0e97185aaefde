//! `cairnq worker --exec`: a shell script as the worker of tasks the
//! Python SDK submitted, end to end through real processes; SIGTERM to the
//! worker drains a running command; a command deaf to SIGTERM is killed
//! after `--kill-grace`; a command whose program is not there is refused at
//! the start, and every failed attempt is on the worker's log.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairnq_core::{ErrorEnvelope, TaskStatus};
use cairnq_testkit::support::eventually_within;
use serde_json::{Value, json};

use crate::support::{Fixture, Ran, peer};

/// The worker script: doubles `n`; `bad` fails for good (exit 65) after
/// writing to stderr; `flaky` asks for a retry (exit 75) on its first
/// attempt and succeeds on the next.
const SCRIPT: &str = r#"#!/bin/sh
payload=$(cat)
case "$CAIRNQ_TASK_NAME" in
  bad) echo "line one of the complaint" >&2; echo "bad input: $payload" >&2; exit 65 ;;
  flaky) if [ "$CAIRNQ_ATTEMPT" = 1 ]; then echo "try again later" >&2; exit 75; fi ;;
esac
n=$(printf '%s' "$payload" | sed 's/.*"n": *\([0-9]*\).*/\1/')
echo "progress 0.5 halfway" >&2
printf '{"doubled": %s, "by": "%s"}\n' "$((n * 2))" "$CAIRNQ_TASK_NAME"
"#;

/// Kills the worker process if the test ends early.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shell_script_drains_what_python_submitted_on_sqlite() {
    let fixture = Fixture::sqlite().await;
    let peer_db = fixture.cli.db.clone();
    drains(fixture, &peer_db, 1000).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shell_script_drains_what_python_submitted_on_postgres() {
    let fixture = Fixture::postgres().await;
    let peer_db = format!("{}#schema={}", fixture.cli.db, fixture.cli.schema.clone().unwrap_or_default());
    drains(fixture, &peer_db, 200).await;
}

async fn drains(fixture: Fixture, peer_db: &str, count: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("double.sh");
    std::fs::write(&script, SCRIPT).expect("write the script");
    let ids: Vec<String> =
        serde_json::from_value(peer(&["submit-many", peer_db, "double", &count.to_string()])).expect("ids");
    assert_eq!(ids.len(), count);
    let bad = fixture.client.submit("bad", &json!({"n": 1})).max_attempts(3).await.expect("submit");
    let flaky = fixture.client.submit("flaky", &json!({"n": 21})).max_attempts(3).await.expect("submit");

    let command = format!("sh {}", script.display());
    let child = fixture
        .cli
        .command(&["worker", "--exec", &command, "--concurrency", "8", "--lease", "30s"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the worker");
    let mut worker = Worker(child);

    let start = Instant::now();
    loop {
        let stats = fixture.client.stats(Some("default")).await.expect("stats")["default"];
        if stats.succeeded == count as u64 + 1 && stats.failed == 1 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(240), "not drained: {stats:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // SIGTERM drains and exits 0.
    let pid = worker.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    let status = worker.0.wait().expect("wait for the worker");
    assert_eq!(status.code(), Some(0), "the worker exits 0 after a drain");

    // Python reads back exactly what the script printed.
    let ids_file = dir.path().join("ids.txt");
    std::fs::write(&ids_file, ids.join("\n")).expect("write ids");
    let rows = peer(&["read-docs", peer_db, &ids_file.to_string_lossy()]);
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), count);
    for (i, row) in rows.iter().enumerate() {
        let result: Value = serde_json::from_str(row[2].as_str().expect("a result")).expect("result JSON");
        assert_eq!(result, json!({"doubled": 2 * i, "by": "double"}), "task {}", ids[i]);
    }

    // Exit 65: failed after one attempt, stderr's tail in the envelope.
    let bad = fixture.client.get(&bad.id).await.expect("get").expect("bad");
    assert_eq!((bad.status, bad.attempt), (TaskStatus::Failed, 1));
    let envelope = ErrorEnvelope::from_json(bad.error.as_ref().expect("an envelope")).expect("an envelope");
    let details = envelope.details.to_string();
    assert!(details.contains("line one of the complaint") && details.contains("bad input"), "{details}");
    assert!(!envelope.retryable);

    // Exit 75: retried, then succeeded.
    let flaky = fixture.client.get(&flaky.id).await.expect("get").expect("flaky");
    assert_eq!((flaky.status, flaky.attempt), (TaskStatus::Succeeded, 2));
    assert_eq!(flaky.result.expect("result").to_value().expect("json"), json!({"doubled": 42, "by": "flaky"}));
}

/// Reads the worker's stderr until a line holds `says`.
fn until_stderr_says(stderr: &mut impl BufRead, says: &str) {
    let mut line = String::new();
    while !line.contains(says) {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("read stderr") > 0, "the worker ended before saying {says:?}");
    }
}

/// Waits (bounded, for a stuck worker) until `path` exists.
fn until_exists(path: &std::path::Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_while_a_command_runs_lets_it_finish_and_claims_nothing_more() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (started, go) = (dir.path().join("started"), dir.path().join("go"));
    // Says it started, then runs until the test lets it finish.
    let command = format!(
        "cat > /dev/null; echo \"$CAIRNQ_TASK_ID\" > {started}; while [ ! -f {go} ]; do sleep 0.05; done; echo '{{\"drained\": true}}'",
        started = started.display(),
        go = go.display()
    );
    let first = fixture.client.submit("slow", &json!({})).priority(1).await.expect("submit");
    let second = fixture.client.submit("slow", &json!({})).await.expect("submit");
    let child = fixture
        .cli
        .command(&["worker", "--exec", &command, "--concurrency", "1", "--kill-grace", "10s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the worker");
    let mut worker = Worker(child);
    let mut stderr = BufReader::new(worker.0.stderr.take().expect("stderr"));
    until_exists(&started);

    let pid = worker.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    // Only once the worker has stopped claiming does the command finish.
    until_stderr_says(&mut stderr, "claiming nothing more");
    std::fs::write(&go, "").expect("let the command finish");
    let status = worker.0.wait().expect("wait for the worker");
    assert_eq!(status.code(), Some(0), "the worker exits 0 after a drain");

    let ran = fixture.client.get(&first.id).await.expect("get").expect("first");
    assert_eq!(std::fs::read_to_string(&started).expect("started").trim(), first.id);
    assert_eq!(ran.status, TaskStatus::Succeeded, "the running command finished its task");
    assert_eq!(ran.result.expect("result").to_value().expect("json"), json!({"drained": true}));
    let left = fixture.client.get(&second.id).await.expect("get").expect("second");
    assert_eq!((left.status, left.attempt), (TaskStatus::Queued, 0), "nothing else was claimed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_that_ignores_sigterm_is_killed_after_the_kill_grace() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (started, termed) = (dir.path().join("started"), dir.path().join("termed"));
    let command = format!(
        "trap 'touch {termed}' TERM; touch {started}; while true; do sleep 0.05; done",
        started = started.display(),
        termed = termed.display()
    );
    fixture.cli.run(&["worker", "--exec", &command, "--kill-grace", "soon"]).refused(2, "is not a duration");
    let task = fixture.client.submit("stubborn", &json!({})).await.expect("submit");
    let child = fixture
        .cli
        .command(&["worker", "--exec", &command, "--kill-grace", "200ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the worker");
    let _worker = Worker(child);
    until_exists(&started);
    fixture.client.cancel(&task.id).await.expect("cancel");
    eventually_within("the task canceled", Duration::from_secs(60), || async {
        fixture.client.get(&task.id).await.expect("get").is_some_and(|now| now.status == TaskStatus::Canceled)
    })
    .await;
    assert!(termed.exists(), "the command got SIGTERM first, ignored it, and was killed");
}

/// What `cairnq worker --exec command` did, once it exited; a worker that
/// runs instead of refusing is stopped (bounded) and the test fails.
fn refusal(fixture: &Fixture, command: &str) -> Ran {
    let mut worker = fixture
        .cli
        .command(&["worker", "--exec", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the worker");
    let start = Instant::now();
    while worker.try_wait().expect("poll the worker").is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = worker.kill();
            let _ = worker.wait();
            panic!("the worker runs {command:?} instead of refusing it");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ran::from(worker.wait_with_output().expect("the worker's output"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_whose_program_is_not_there_is_refused_before_anything_is_claimed() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let task = fixture.client.submit("resize", &json!({})).await.expect("submit");
    let not_executable = dir.path().join("resize.sh");
    std::fs::write(&not_executable, "#!/bin/sh\necho '{}'\n").expect("write the script");
    let missing = dir.path().join("no").join("resize.sh");
    let refusals = [
        (missing.display().to_string(), format!("{} does not exist", missing.display())),
        (format!("{} --quality 80 | tee log", not_executable.display()), "is not executable".to_string()),
        (dir.path().display().to_string(), "is a directory".to_string()),
        ("resize-no-such-program --fast".to_string(), "is not a command sh can find".to_string()),
        (
            "python3 no-such-resize.py".to_string(),
            "no-such-resize.py, the script python3 is to run, does not exist".into(),
        ),
    ];
    for (command, says) in &refusals {
        refusal(&fixture, command).refused(2, says);
    }
    let untouched = fixture.client.get(&task.id).await.expect("get").expect("the task");
    assert_eq!((untouched.status, untouched.attempt), (TaskStatus::Queued, 0), "nothing was claimed");
}

/// Starts a worker running `command` with `args` and `env`, waits until
/// `task` failed, SIGTERMs the worker and returns everything it wrote on
/// stderr.
async fn worker_log(fixture: &Fixture, command: &str, args: &[&str], env: &[(&str, &str)], task: &str) -> String {
    let mut worker = fixture.cli.command(&[&["worker", "--exec", command], args].concat());
    worker.envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut worker = Worker(worker.spawn().expect("start the worker"));
    let stderr = worker.0.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    eventually_within("the task settled", Duration::from_secs(60), || async {
        fixture.client.get(task).await.expect("get").is_some_and(|now| now.status == TaskStatus::Failed)
    })
    .await;
    let pid = worker.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    assert_eq!(worker.0.wait().expect("wait").code(), Some(0));
    reader.join().expect("the stderr reader")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_failed_attempt_is_on_the_worker_log_unless_turned_down() {
    let fixture = Fixture::sqlite().await;
    let failing = "echo 'reading row 7' >&2; echo 'row 7: no such customer' >&2; \
                   if [ \"$CAIRNQ_ATTEMPT\" = 1 ]; then exit 1; else kill -KILL $$; fi";
    let task = fixture.client.submit("import", &json!({})).max_attempts(2).await.expect("submit");
    let log = worker_log(&fixture, failing, &[], &[], &task.id).await;
    let lines: Vec<&str> = log.lines().filter(|line| line.contains(&format!("task_id={}", task.id))).collect();
    assert_eq!(lines.len(), 2, "one line per failed attempt: {log}");
    for (line, says) in lines.iter().zip([
        "attempt 1 of 2: the command exited with code 1: row 7: no such customer; retried",
        "attempt 2 of 2: the command was killed by signal 9: row 7: no such customer; no attempts left, failed",
    ]) {
        assert!(line.contains(" WARN ") && line.contains(says) && line.contains("name=import"), "{line}");
    }
    assert!(lines[0].contains("exit_code=1") && lines[1].contains("signal=9"), "{log}");

    // Exit 65 fails for good; at --log-level warn only the failure is told.
    let task = fixture.client.submit("import", &json!({})).max_attempts(3).await.expect("submit");
    let bad = "echo 'bad input' >&2; exit 65";
    let log = worker_log(&fixture, bad, &["--log-level", "warn"], &[], &task.id).await;
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.contains("attempt 1 of 3: the command exited with code 65") && log.contains("failed for good"));

    // Off, through the environment: nothing at all.
    let task = fixture.client.submit("import", &json!({})).max_attempts(1).await.expect("submit");
    let log = worker_log(&fixture, "exit 1", &[], &[("CAIRNQ_LOG_LEVEL", "off")], &task.id).await;
    assert_eq!(log, "", "CAIRNQ_LOG_LEVEL=off");
}
