//! `cairnq worker --serve`: long-running programs exchanging a JSON line
//! per task, through real `cairnq` processes on real SQLite files. The
//! book's two examples (docs/examples/serve, included in the
//! cross-language chapter as they are) drain tasks; a SIGKILLed worker
//! leaves no program running; a program that dies is restarted and its
//! task retried; a malformed line fails the task retryably and is logged;
//! a cancel reaches the program as a line; SIGTERM drains, then closes the
//! programs' stdin.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairnq_core::{Task, TaskStatus};
use cairnq_testkit::support::finished;
use serde_json::{Value, json};

use crate::marked::{MARK_VAR, Mark};
use crate::support::Fixture;
use crate::worker_death::OUTLIVES_ITS_WORKER_AT_MOST;

/// A serve worker process, SIGKILLed if the test ends early.
struct Serving {
    child: Child,
    mark: Mark,
    log: PathBuf,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serving {
    fn start(fixture: &Fixture, dir: &Path, command: &str, extra: &[&str]) -> Self {
        let mark = Mark::new();
        let log = dir.join(format!("worker-{}.log", mark.value()));
        let mut args = vec!["worker", "--serve", command, "--lease", "3s", "--kill-grace", "2s"];
        args.extend_from_slice(extra);
        let child = fixture
            .cli
            .command(&args)
            .env(MARK_VAR, mark.value())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start the worker");
        Self { child, mark, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then the exit code.
    fn terminate(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the worker") {
                return status.code();
            }
            assert!(start.elapsed() < Duration::from_secs(60), "the worker did not stop after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/serve").join(name);
    path.canonicalize().expect("the book's example").display().to_string()
}

fn error_of(task: &Task) -> Value {
    task.error.as_ref().and_then(|e| e.to_value().ok()).unwrap_or_default()
}

fn result_of(task: &Task) -> Value {
    task.result.as_ref().and_then(|r| r.to_value().ok()).unwrap_or_default()
}

/// Waits (bounded) until `path` holds a line containing `says`.
fn until_file_says(path: &Path, says: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(says) {
            return text;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{} never said {says:?}: {text:?}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (a moment at most) until no process carries `mark`: the worker
/// has exited, and the last SIGKILL it sent lands.
fn until_none_live(mark: &Mark) {
    let start = Instant::now();
    while !mark.live().is_empty() {
        assert!(start.elapsed() < OUTLIVES_ITS_WORKER_AT_MOST, "still running: {:?}", mark.live());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_books_python_example_serves_tasks_and_keeps_state() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ids = Vec::new();
    for i in 0..20 {
        let text = "word ".repeat(i + 1);
        ids.push(fixture.client.submit("words", &json!({ "text": text })).await.expect("submit").id);
    }
    let bad = fixture.client.submit("words", &json!({"no": "text"})).max_attempts(3).await.expect("submit");
    let command = format!("python3 {}", example("words.py"));
    let mut worker = Serving::start(&fixture, dir.path(), &command, &["--name", "words", "--concurrency", "2"]);
    let mut most_served = 0;
    for (i, id) in ids.iter().enumerate() {
        let done = finished(&fixture.client, id).await;
        assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.error);
        let result = result_of(&done);
        assert_eq!(result["words"], json!(i + 1));
        most_served = most_served.max(result["served"].as_u64().unwrap_or_default());
    }
    assert!(most_served > 1, "a process served several tasks, keeping its count: {most_served}");
    let bad = finished(&fixture.client, &bad.id).await;
    assert_eq!((bad.status, bad.attempt), (TaskStatus::Failed, 1), "retryable: false fails for good");
    let error = error_of(&bad);
    assert_eq!(
        (error["type"].as_str(), error["message"].as_str()),
        (Some("BadPayload"), Some("the payload has no text"))
    );
    assert_eq!(worker.terminate(), Some(0));
    let log = worker.log();
    assert!(log.contains("counting 5 characters"), "stderr goes to the worker's log: {log}");
    until_none_live(&worker.mark);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_books_sh_example_echoes_payloads() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let payloads = [json!({"a": [1, 2, {"b": "c \"quoted\" }"}]}), json!([]), json!("text"), json!(null)];
    let mut tasks = Vec::new();
    for (i, payload) in payloads.iter().enumerate() {
        tasks.push(fixture.client.submit(&format!("echo{i}"), payload).await.expect("submit"));
    }
    let command = format!("sh {}", example("echo.sh"));
    let mut worker = Serving::start(&fixture, dir.path(), &command, &["--concurrency", "2"]);
    for (task, payload) in tasks.iter().zip(&payloads) {
        let done = finished(&fixture.client, &task.id).await;
        assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.error);
        assert_eq!(result_of(&done), json!({ "echo": payload }));
    }
    assert_eq!(worker.terminate(), Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sigkilled_worker_leaves_no_serve_program_running() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let started = dir.path().join("started");
    // Each program takes a task, starts a child of its own and never answers.
    let command = format!("while read -r line; do echo \"$$\" >> {}; sleep 600 & sleep 600; done", started.display());
    for _ in 0..2 {
        fixture.client.submit("long", &json!({})).max_attempts(3).await.expect("submit");
    }
    let mut worker = Serving::start(&fixture, dir.path(), &command, &["--concurrency", "2"]);
    let start = Instant::now();
    while std::fs::read_to_string(&started).map_or(0, |t| t.lines().count()) < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "the programs never took their tasks");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(worker.mark.live().len() >= 5, "the worker and its programs run: {:?}", worker.mark.live());
    worker.child.kill().expect("SIGKILL the worker");
    worker.child.wait().expect("reap the worker");
    std::thread::sleep(OUTLIVES_ITS_WORKER_AT_MOST);
    let left = worker.mark.live();
    assert!(left.is_empty(), "programs outlived their SIGKILLed worker by a second: {left:?}");
}

/// Answers each task with its attempt, but exits (with a word on stderr)
/// on a first attempt whose payload says `die`, and writes a line that is
/// no message on a first attempt whose payload says `garble`.
const FLAKY: &str = r#"while IFS= read -r line; do
  id=${line#*'"id":"'}; id=${id%%'"'*}
  case $line in
    *'"attempt":1,'*'"do":"die"'*) echo "dying on purpose" >&2; exit 3 ;;
    *'"attempt":1,'*'"do":"garble"'*|*'"attempt":1,'*'"do":"always-garble"'*) echo "not json at all" ;;
    *'"do":"always-garble"'*) echo '{"id":"'"$id"'","outcome":"?"}' ;;
    *) a=${line#*'"attempt":'}; printf '{"id":"%s","result":{"attempt":%s,"pid":%s}}\n' "$id" "${a%%,*}" "$$" ;;
  esac
done"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_dies_is_restarted_and_its_task_retried() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let before = fixture.client.submit("ok", &json!({})).await.expect("submit");
    let mut worker = Serving::start(&fixture, dir.path(), FLAKY, &[]);
    let before = finished(&fixture.client, &before.id).await;
    let first_pid = result_of(&before)["pid"].clone();
    let dies = fixture.client.submit("x", &json!({"do": "die"})).max_attempts(3).await.expect("submit");
    let dies = finished(&fixture.client, &dies.id).await;
    assert_eq!((dies.status, dies.attempt), (TaskStatus::Succeeded, 2), "{:?}", dies.error);
    let second_pid = result_of(&dies)["pid"].clone();
    assert_ne!(first_pid, second_pid, "a new process served the retry");
    // On its last attempt the failure stays on the row, and says why.
    let last = fixture.client.submit("x", &json!({"do": "die"})).max_attempts(1).await.expect("submit");
    let last = finished(&fixture.client, &last.id).await;
    assert_eq!(last.status, TaskStatus::Failed);
    let error = error_of(&last);
    assert_eq!((error["code"].as_str(), error["retryable"].as_bool()), (Some("serve_exited"), Some(true)));
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("exited with code 3") && message.ends_with("dying on purpose"), "{message}");
    assert_eq!(worker.terminate(), Some(0));
    assert!(worker.log().contains("dying on purpose"), "{}", worker.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_line_fails_the_task_retryably_and_is_logged() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let garbled = fixture.client.submit("x", &json!({"do": "garble"})).max_attempts(3).await.expect("submit");
    let always = fixture.client.submit("x", &json!({"do": "always-garble"})).max_attempts(2).await.expect("submit");
    let mut worker = Serving::start(&fixture, dir.path(), FLAKY, &[]);
    let garbled = finished(&fixture.client, &garbled.id).await;
    assert_eq!((garbled.status, garbled.attempt), (TaskStatus::Succeeded, 2), "{:?}", garbled.error);
    let always = finished(&fixture.client, &always.id).await;
    assert_eq!((always.status, always.attempt), (TaskStatus::Failed, 2));
    let error = error_of(&always);
    assert_eq!((error["code"].as_str(), error["retryable"].as_bool()), (Some("malformed_line"), Some(true)));
    assert!(error["message"].as_str().unwrap_or_default().contains("none of"), "{error}");
    assert!(error["details"]["line"].as_str().unwrap_or_default().contains("\"outcome\":\"?\""), "{error}");
    assert_eq!(worker.terminate(), Some(0));
    let log = worker.log();
    assert!(log.contains("malformed line") && log.contains("not json at all"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_reaches_the_program_as_a_line() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let seen = dir.path().join("seen");
    // Takes a task and waits for its cancel line, which it answers.
    let command = format!(
        r#"while IFS= read -r line; do
  echo "$line" >> {seen}
  case $line in *'"cancel":true'*) id=${{line#*'"id":"'}}; printf '{{"id":"%s","error":"stopped"}}\n' "${{id%%'"'*}}" ;; esac
done"#,
        seen = seen.display()
    );
    let task = fixture.client.submit("slow", &json!({})).await.expect("submit");
    let mut worker = Serving::start(&fixture, dir.path(), &command, &[]);
    until_file_says(&seen, "\"payload\"");
    fixture.client.cancel(&task.id).await.expect("cancel");
    let lines = until_file_says(&seen, "\"cancel\":true");
    assert!(lines.contains(&format!("{{\"id\":\"{}\",\"cancel\":true}}", task.id)), "{lines}");
    let done = finished(&fixture.client, &task.id).await;
    assert_eq!(done.status, TaskStatus::Canceled);
    // It answered in time: the same process serves the next task.
    let next = fixture.client.submit("slow", &json!({})).await.expect("submit");
    until_file_says(&seen, &next.id);
    assert!(!worker.log().contains("killed"), "{}", worker.log());
    assert_eq!(worker.terminate(), Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_then_closes_the_programs_stdin() {
    let fixture = Fixture::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let (took, closed) = (dir.path().join("took"), dir.path().join("closed"));
    // Answers a second after each task; writes `closed` when stdin ends.
    let command = format!(
        r#"while IFS= read -r line; do
  echo took >> {took}; sleep 1
  id=${{line#*'"id":"'}}; printf '{{"id":"%s","result":"done"}}\n' "${{id%%'"'*}}"
done
echo closed > {closed}"#,
        took = took.display(),
        closed = closed.display()
    );
    let task = fixture.client.submit("one", &json!({})).await.expect("submit");
    let mut worker = Serving::start(&fixture, dir.path(), &command, &[]);
    until_file_says(&took, "took");
    assert_eq!(worker.terminate(), Some(0));
    let done = fixture.client.get(&task.id).await.expect("get").expect("the task");
    assert_eq!((done.status, result_of(&done)), (TaskStatus::Succeeded, json!("done")), "the running task finished");
    assert_eq!(std::fs::read_to_string(&closed).unwrap_or_default(), "closed\n", "the program saw its stdin close");
    until_none_live(&worker.mark);
}
