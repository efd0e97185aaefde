//! `cairnq_worker::exec`: shell command lines as handlers, run as real
//! `sh -c` processes by real worker loops on real SQLite files (and the test
//! Postgres server where the store matters: the drain of many tasks). Each
//! test pins one line of the contract in the module docs: results are what
//! the script printed, exit 65 fails for good with the stderr tail, exit 75
//! retries, stdout that is not JSON fails for good, progress lines report
//! progress, a cancel stops the process group (SIGTERM, then SIGKILL for a
//! script that traps TERM), a stop drains running commands, and a chatty
//! script cannot deadlock on its pipes.

use std::path::Path;
use std::time::Duration;

use cairnq_core::{CairnQ, ErrorEnvelope, Task, TaskSpec, TaskStatus, codes};
use cairnq_testkit::postgres::PostgresFactory;
use cairnq_testkit::sqlite::SqliteFactory;
use cairnq_testkit::support::{eventually, finished, fresh};
use cairnq_testkit::{BackendFactory, FreshStore};
use cairnq_worker::exec::{ExecHandler, ExecOptions};
use cairnq_worker::{TaskContext, TaskError, TaskOptions, Worker, WorkerHandle, WorkerOptions};
use serde_json::{Value, json};

/// Options that make retries immediate and cancels seen within a fraction
/// of a second (the heartbeat reads the cancel flag every lease / 3).
fn quick() -> WorkerOptions {
    WorkerOptions::new()
        .concurrency(4)
        .lease(Duration::from_millis(900))
        .poll_interval(Duration::from_millis(50))
        .backoff(Duration::ZERO, Duration::ZERO)
}

/// A worker running `command` for every name.
fn exec_worker(client: &CairnQ, options: WorkerOptions, command: &str, exec: ExecOptions) -> WorkerHandle {
    let mut worker = Worker::new(client.clone(), options).expect("worker");
    worker.exec_all(&ExecHandler::with_options(command, exec).expect("command")).expect("register");
    worker.spawn()
}

fn sqlite() -> SqliteFactory {
    SqliteFactory::new().expect("a SQLite factory")
}

/// A fresh SQLite store, and a temp dir for the files scripts write.
struct Scene {
    client: CairnQ,
    dir: tempfile::TempDir,
    _store: FreshStore,
    _factory: SqliteFactory,
}

async fn scene() -> Scene {
    let factory = sqlite();
    let (client, store) = fresh(&factory).await;
    let dir = tempfile::tempdir().expect("temp dir");
    Scene { client, dir, _store: store, _factory: factory }
}

fn error_of(task: &Task) -> Value {
    task.error.as_ref().and_then(|e| e.to_value().ok()).unwrap_or_default()
}

fn result_of(task: &Task) -> Value {
    task.result.as_ref().and_then(|r| r.to_value().ok()).unwrap_or_default()
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn process_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}

async fn read_when_written(path: &Path) -> String {
    eventually(&format!("{} is written", path.display()), || async { path.exists() }).await;
    let mut text = String::new();
    eventually(&format!("{} is complete", path.display()), || {
        text = std::fs::read_to_string(path).unwrap_or_default();
        let done = text.ends_with('\n');
        async move { done }
    })
    .await;
    text.trim().to_string()
}

const ECHO_SCRIPT: &str = r#"payload=$(cat)
printf '{"echo": %s, "id": "%s", "name": "%s", "attempt": %s, "queue": "%s"}\n' \
    "$payload" "$CAIRNQ_TASK_ID" "$CAIRNQ_TASK_NAME" "$CAIRNQ_ATTEMPT" "$CAIRNQ_QUEUE""#;

/// A script that echoes its stdin and environment drains tasks of any name
/// (those of a name with its own command run that one); every result is
/// exactly what the script printed.
async fn drains_with_results_as_printed(factory: &dyn BackendFactory, tasks: usize) {
    let (client, _fresh) = fresh(factory).await;
    let specs: Vec<TaskSpec> = (0..tasks)
        .map(|i| {
            let name = ["resize", "email", "special"][i % 3];
            TaskSpec::new(name, &json!({"n": i, "text": "it's \"quoted\"\n"}))
        })
        .collect();
    let submitted = client.submit_many(&specs).await.expect("submit");
    let mut worker = Worker::new(client.clone(), quick()).expect("worker");
    worker.exec(["special"], &ExecHandler::new("cat >/dev/null; echo '\"special\"'").expect("command")).expect("exec");
    worker.exec_all(&ExecHandler::new(ECHO_SCRIPT).expect("command")).expect("exec_all");
    let running = worker.spawn();
    for task in &submitted {
        let done = finished(&client, &task.id).await;
        assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.error);
        let result = result_of(&done);
        if done.name == "special" {
            assert_eq!(result, json!("special"));
            continue;
        }
        let payload = task.payload.to_value().expect("payload");
        let expected = json!({"echo": payload, "id": task.id, "name": task.name, "attempt": 1, "queue": "default"});
        assert_eq!(result, expected);
    }
    running.stop_and_join().await.expect("stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_drains_tasks_of_every_name_on_sqlite() {
    drains_with_results_as_printed(&sqlite(), 60).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_drains_tasks_of_every_name_on_postgres() {
    let factory = PostgresFactory::from_test_server().expect("a test Postgres server");
    drains_with_results_as_printed(&factory, 60).await;
}

/// Exit 65 fails the task after one attempt, whatever attempts are left,
/// with the stderr tail (progress lines left out) in its envelope.
/// Payloads around the 64 KiB pipe and well past it (a file) reach the
/// command whole, byte for byte (`cat` echoes stdin as the result).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_of_every_size_reach_the_command_whole() {
    let scene = scene().await;
    let sizes = [0, 100, (64 << 10) - 20, 64 << 10, (64 << 10) + 1, 1 << 20];
    let specs: Vec<TaskSpec> = sizes.iter().map(|&n| TaskSpec::new("echo", &json!({"blob": "x".repeat(n)}))).collect();
    let submitted = scene.client.submit_many(&specs).await.expect("submit");
    let running = exec_worker(&scene.client, quick(), "cat", ExecOptions::new());
    for task in &submitted {
        let done = finished(&scene.client, &task.id).await;
        assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.error);
        let (payload, bytes) = (task.payload.to_value().expect("payload"), task.payload.as_str().len());
        assert_eq!(result_of(&done), payload, "{bytes} bytes");
    }
    running.stop_and_join().await.expect("stop");
}

/// A command line that is one plain program is that program from the start
/// (the shell execs it, so the program leads the task's group); one the
/// shell must read runs as the shell's child, in the same group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_plain_program_replaces_its_shell() {
    let scene = scene().await;
    let script = scene.dir.path().join("leader.sh");
    std::fs::write(&script, "printf '{\"pid\": %s, \"group\": %s}\\n' $$ \"$(cut -d' ' -f5 /proc/$$/stat)\"\n")
        .expect("write the script");
    let plain = format!("sh {}", script.display());
    for (command, leads) in [(plain.clone(), true), (format!("{plain}; exit"), false)] {
        let task = scene.client.submit("leader", &json!(null)).await.expect("submit");
        let worker = exec_worker(&scene.client, quick(), &command, ExecOptions::new());
        let done = finished(&scene.client, &task.id).await;
        worker.stop_and_join().await.expect("stop");
        assert_eq!(done.status, TaskStatus::Succeeded, "{command}: {:?}", done.error);
        let result = result_of(&done);
        assert_eq!(result["pid"] == result["group"], leads, "{command}: {result}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_65_fails_for_good_with_the_stderr_tail() {
    let Scene { client, .. } = &scene().await;
    let task = client.submit("import", &json!({"row": 7})).max_attempts(5).await.expect("submit");
    let script = "echo 'reading row 7' >&2; echo 'progress 0.5' >&2; echo 'row 7: no such customer' >&2; exit 65";
    let worker = exec_worker(client, quick(), script, ExecOptions::new());
    let done = finished(client, &task.id).await;
    worker.stop_and_join().await.expect("stop");

    assert_eq!(done.status, TaskStatus::Failed);
    assert_eq!(done.attempt, 1);
    let error = error_of(&done);
    assert_eq!(error["retryable"], json!(false));
    assert_eq!(error["type"], json!("ExecError"));
    assert_eq!(error["code"], json!("exit_status"));
    assert_eq!(error["details"]["exit_code"], json!(65));
    assert_eq!(error["details"]["stderr"], json!("reading row 7\nrow 7: no such customer\n"));
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("code 65") && message.ends_with("row 7: no such customer"), "{message}");
}

/// Exit 75 (and any other non-zero code) is retried: a script that fails
/// its first attempt succeeds on its second; one that always fails uses up
/// its attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_75_and_other_codes_are_retried() {
    let Scene { client, .. } = &scene().await;
    let flaky = client.submit("flaky", &json!({})).max_attempts(3).await.expect("submit");
    let broken = client.submit("broken", &json!({})).max_attempts(2).await.expect("submit");
    let script = r#"case "$CAIRNQ_TASK_NAME" in
        flaky) if [ "$CAIRNQ_ATTEMPT" -lt 2 ]; then echo 'busy, later' >&2; exit 75; fi; echo '"ok"' ;;
        *) echo "attempt $CAIRNQ_ATTEMPT failed" >&2; exit 3 ;;
    esac"#;
    let worker = exec_worker(client, quick(), script, ExecOptions::new());
    let flaky = finished(client, &flaky.id).await;
    let broken = finished(client, &broken.id).await;
    worker.stop_and_join().await.expect("stop");

    assert_eq!((flaky.status, flaky.attempt), (TaskStatus::Succeeded, 2));
    assert_eq!(result_of(&flaky), json!("ok"));
    assert_eq!((broken.status, broken.attempt), (TaskStatus::Failed, 2));
    let error = error_of(&broken);
    assert_eq!(error["retryable"], json!(true));
    assert_eq!(error["details"]["exit_code"], json!(3));
    assert_eq!(error["details"]["stderr"], json!("attempt 2 failed\n"));
}

/// Exit 0 with stdout that is not one JSON document fails for good and
/// says why; empty stdout is a `null` result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_that_is_not_json_fails_for_good_and_empty_stdout_is_null() {
    let Scene { client, .. } = &scene().await;
    let chatty = client.submit("chatty", &json!({})).max_attempts(3).await.expect("submit");
    let quiet = client.submit("quiet", &json!({})).await.expect("submit");
    let script = r#"[ "$CAIRNQ_TASK_NAME" = chatty ] && echo 'processed 3 rows' || true"#;
    let worker = exec_worker(client, quick(), script, ExecOptions::new());
    let chatty = finished(client, &chatty.id).await;
    let quiet = finished(client, &quiet.id).await;
    worker.stop_and_join().await.expect("stop");

    assert_eq!((chatty.status, chatty.attempt), (TaskStatus::Failed, 1));
    let error = error_of(&chatty);
    assert_eq!(error["code"], json!("invalid_result"));
    assert_eq!(error["retryable"], json!(false));
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("stdout is not valid JSON: expected value"), "{message}");
    assert_eq!(error["details"]["stdout"], json!("processed 3 rows"));
    assert_eq!(quiet.status, TaskStatus::Succeeded);
    assert!(quiet.result.as_ref().is_some_and(|r| r.is_null()));
}

/// `progress VALUE MESSAGE` lines on stderr update the task's progress
/// while the script runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_lines_update_progress() {
    let Scene { client, dir, .. } = &scene().await;
    let go = dir.path().join("go");
    let task = client.submit("report", &json!({})).await.expect("submit");
    let script = format!(
        "echo 'progress 0.25' >&2; echo 'progress 0.5 half way there' >&2; \
         while [ ! -e '{go}' ]; do sleep 0.05; done; echo 'progress 1 done' >&2",
        go = go.display()
    );
    let worker = exec_worker(client, quick(), &script, ExecOptions::new());
    eventually("the progress line is recorded", || async {
        let row = client.get(&task.id).await.expect("get").expect("the task");
        row.progress == Some(0.5) && row.message.as_deref() == Some("half way there")
    })
    .await;
    std::fs::write(&go, "").expect("let the script end");
    let done = finished(client, &task.id).await;
    worker.stop_and_join().await.expect("stop");
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!((done.progress, done.message.as_deref()), (Some(1.0), Some("done")));
}

/// A cancel stops a sleeping script's whole process group with SIGTERM:
/// the task ends canceled and the `sleep` the shell started is gone too.
/// The lease is long (the heartbeat would see the cancel only after 20 s,
/// past the test's patience): the runner asks every second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_terminates_the_sleeping_process_group() {
    let Scene { client, dir, .. } = &scene().await;
    let pid_file = dir.path().join("pid");
    let task = client.submit("sleepy", &json!({})).await.expect("submit");
    let script = format!("sleep 600 & echo $! > '{}'; wait; echo survived", pid_file.display());
    let worker = exec_worker(
        client,
        quick().lease(Duration::from_secs(60)),
        &script,
        ExecOptions::new().kill_grace(Duration::from_secs(60)),
    );
    let sleep_pid = read_when_written(&pid_file).await;
    assert!(!process_gone(&sleep_pid));
    client.cancel(&task.id).await.expect("cancel");
    let done = finished(client, &task.id).await;
    assert_eq!(done.status, TaskStatus::Canceled);
    assert_eq!(error_of(&done)["code"], json!("canceled"));
    eventually("the sleep is gone", || async { process_gone(&sleep_pid) }).await;
    worker.stop_and_join().await.expect("stop");
}

/// A script that traps SIGTERM gets it, keeps running, and is killed with
/// SIGKILL once the grace period is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_traps_term_is_killed_after_the_grace_period() {
    let Scene { client, dir, .. } = &scene().await;
    let (pid_file, term_file) = (dir.path().join("pid"), dir.path().join("term"));
    let task = client.submit("stubborn", &json!({})).await.expect("submit");
    let script = format!(
        "trap 'echo got TERM > \"{term}\"' TERM; echo $$ > '{pid}'; while :; do sleep 0.05; done",
        term = term_file.display(),
        pid = pid_file.display()
    );
    let exec = ExecOptions::new().kill_grace(Duration::from_secs(2));
    let worker = exec_worker(client, quick(), &script, exec);
    let shell_pid = read_when_written(&pid_file).await;
    client.cancel(&task.id).await.expect("cancel");
    assert_eq!(read_when_written(&term_file).await, "got TERM");
    // The trap kept it alive past the TERM; only the KILL ends it.
    assert!(!process_gone(&shell_pid), "the shell ended at SIGTERM although it trapped it");
    let done = finished(client, &task.id).await;
    assert_eq!(done.status, TaskStatus::Canceled);
    eventually("the shell is killed", || async { process_gone(&shell_pid) }).await;
    worker.stop_and_join().await.expect("stop");
}

/// A stop drains: the running command finishes and its result is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_lets_running_commands_finish() {
    let Scene { client, dir, .. } = &scene().await;
    let started = dir.path().join("started");
    let task = client.submit("slow", &json!({})).await.expect("submit");
    let script = format!("echo yes > '{}'; sleep 0.5; echo '\"finished\"'", started.display());
    let worker = exec_worker(client, quick(), &script, ExecOptions::new());
    read_when_written(&started).await;
    worker.stop_and_join().await.expect("stop");
    let done = client.get(&task.id).await.expect("get").expect("the task");
    assert_eq!((done.status, result_of(&done)), (TaskStatus::Succeeded, json!("finished")));
}

/// A script writing megabytes to both pipes is never blocked on a full
/// pipe: its large result arrives whole and the stderr tail holds its
/// last 4 KB. One writing past `max_stdout_bytes` is stopped and fails
/// for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_outputs_neither_deadlock_nor_exceed_the_stdout_limit() {
    let Scene { client, .. } = &scene().await;
    let big = client.submit("big", &json!({})).await.expect("submit");
    let noisy = client.submit("noisy", &json!({})).max_attempts(1).await.expect("submit");
    let endless = client.submit("endless", &json!({})).max_attempts(3).await.expect("submit");
    let script = r#"case "$CAIRNQ_TASK_NAME" in
        big) head -c 2000000 /dev/zero | tr '\0' e >&2
             printf '"'; head -c 300000 /dev/zero | tr '\0' o; printf '"' ;;
        noisy) head -c 2000000 /dev/zero | tr '\0' e >&2; exit 3 ;;
        *) yes ;;
    esac"#;
    let exec = ExecOptions::new().max_stdout_bytes(400_000).kill_grace(Duration::from_secs(5));
    let worker = exec_worker(client, quick(), script, exec);
    let big = finished(client, &big.id).await;
    let noisy = finished(client, &noisy.id).await;
    let endless = finished(client, &endless.id).await;
    worker.stop_and_join().await.expect("stop");

    assert_eq!(big.status, TaskStatus::Succeeded);
    assert!(result_of(&big).as_str().is_some_and(|s| s.len() == 300_000 && s.bytes().all(|b| b == b'o')));
    assert_eq!(noisy.status, TaskStatus::Failed);
    let error = error_of(&noisy);
    let tail = error["details"]["stderr"].as_str().unwrap_or_default();
    assert!(tail.len() == 4096 && tail.bytes().all(|b| b == b'e'), "a tail of {} bytes", tail.len());
    assert_eq!((endless.status, endless.attempt), (TaskStatus::Failed, 1));
    assert_eq!(error_of(&endless)["code"], json!("result_too_large"));
}

/// The fallback handler of a plain async handler: every name is claimed,
/// and a fallback cannot be combined with names of their own draw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_claims_every_name_but_not_beside_own_draws() {
    let Scene { client, .. } = &scene().await;
    let task = client.submit("anything", &json!(5)).await.expect("submit");
    let mut worker = Worker::new(client.clone(), quick()).expect("worker");
    worker
        .fallback_task(|ctx: TaskContext, n: Value| async move { Ok::<_, TaskError>(json!([ctx.name(), n])) })
        .expect("fallback");
    assert!(worker.fallback_task(|_: TaskContext, _: Value| async { Ok::<_, TaskError>(()) }).is_err());
    let running = worker.spawn();
    let done = finished(client, &task.id).await;
    running.stop_and_join().await.expect("stop");
    assert_eq!(result_of(&done), json!(["anything", 5]));

    let mut capped = Worker::new(client.clone(), quick()).expect("worker");
    capped.exec_all(&ExecHandler::new("true").expect("command")).expect("exec_all");
    let own_draw = TaskOptions::new().concurrency(1);
    capped.task_with("capped", own_draw, |_: TaskContext, _: Value| async { Ok::<_, TaskError>(()) }).expect("task");
    let refused = capped.run().await.expect_err("every name and an own draw cannot be claimed together");
    assert!(refused.to_string().contains("fallback"), "{refused}");
    assert!(
        Worker::new(client.clone(), quick())
            .expect("worker")
            .exec(Vec::<String>::new(), &ExecHandler::new("true").expect("command"))
            .is_err()
    );
}

/// A command still running when the drain timeout ends is abandoned with
/// its whole process group: nothing it started outlives the worker's run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_abandoned_at_the_drain_timeout_is_killed() {
    let Scene { client, dir, .. } = &scene().await;
    let pid_file = dir.path().join("pid");
    client.submit("forever", &json!({})).await.expect("submit");
    let script = format!("sleep 600 & echo $! > '{}'; wait", pid_file.display());
    let options = quick().drain_timeout(Duration::from_millis(300));
    let worker = exec_worker(client, options, &script, ExecOptions::new());
    let sleep_pid = read_when_written(&pid_file).await;
    worker.stop_and_join().await.expect("stop");
    eventually("the abandoned sleep is gone", || async { process_gone(&sleep_pid) }).await;
}

/// A lost lease stops the command with SIGTERM: here another party settles
/// the attempt under the worker's id (as lease recovery does after an
/// expiry) and requeues it for later; the worker's next heartbeat finds the
/// lease gone and the sleeping script dies, though it got a long grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_terminates_the_command() {
    let Scene { client, dir, .. } = &scene().await;
    let pid_file = dir.path().join("pid");
    let task = client.submit("stolen", &json!({})).max_attempts(3).await.expect("submit");
    let script = format!("sleep 600 & echo $! > '{}'; wait", pid_file.display());
    let options = quick().worker_id("exec-worker");
    let worker = exec_worker(client, options, &script, ExecOptions::new().kill_grace(Duration::from_secs(60)));
    let sleep_pid = read_when_written(&pid_file).await;
    let thief = client.worker_session("exec-worker", Duration::from_secs(30)).expect("a session");
    let envelope = ErrorEnvelope::new(codes::TASK_ERROR, "the attempt failed").to_json();
    thief.fail(&task.id, envelope, Some(Duration::from_secs(3_600))).await.expect("requeue the running attempt");
    eventually("the sleep is gone", || async { process_gone(&sleep_pid) }).await;
    worker.stop_and_join().await.expect("stop");
    let row = client.get(&task.id).await.expect("get").expect("the task");
    assert_eq!((row.status, row.attempt), (TaskStatus::Queued, 1));
    assert_eq!(error_of(&row)["code"], json!("task_error"), "the discarded attempt wrote nothing");
}

/// A process that left the command's group (setsid) and holds its stdout
/// cannot hang the attempt: after the shell exits, the pipes get the grace
/// period, then the attempt fails (retryable) and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipes_held_open_by_an_escaped_process_do_not_hang_the_attempt() {
    let Scene { client, dir, .. } = &scene().await;
    let pid_file = dir.path().join("pid");
    let task = client.submit("escape", &json!({})).max_attempts(1).await.expect("submit");
    // The escaped process writes its pid once it is in a session of its
    // own; the script ends only then.
    let script = format!(
        "setsid sh -c 'echo $$ > \"{pid}\"; exec sleep 30' & while [ ! -s '{pid}' ]; do sleep 0.01; done; echo '\"done\"'",
        pid = pid_file.display()
    );
    let exec = ExecOptions::new().kill_grace(Duration::from_millis(300));
    let worker = exec_worker(client, quick(), &script, exec);
    let escaped_pid = read_when_written(&pid_file).await;
    let done = finished(client, &task.id).await;
    worker.stop_and_join().await.expect("stop");
    let _ = std::process::Command::new("kill").arg(&escaped_pid).status();
    assert_eq!(done.status, TaskStatus::Failed);
    let error = error_of(&done);
    assert_eq!((error["code"].clone(), error["retryable"].clone()), (json!("exec_pipes_open"), json!(true)));
}

/// Near the worker's `max_run` the command gets SIGTERM, so its trap can
/// clean up, and the task a retryable `handler_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_nearing_max_run_gets_sigterm_to_clean_up() {
    let Scene { client, dir, .. } = &scene().await;
    let term_file = dir.path().join("term");
    let task = client.submit("long", &json!({})).max_attempts(1).await.expect("submit");
    let script = format!("trap 'echo cleaned up > \"{}\"; exit 1' TERM; sleep 600 & wait", term_file.display());
    let options = quick().max_run(Duration::from_secs(2));
    let worker = exec_worker(client, options, &script, ExecOptions::new().kill_grace(Duration::from_millis(800)));
    let done = finished(client, &task.id).await;
    worker.stop_and_join().await.expect("stop");
    assert_eq!(read_when_written(&term_file).await, "cleaned up");
    assert_eq!(done.status, TaskStatus::Failed);
    let error = error_of(&done);
    assert_eq!((error["code"].clone(), error["retryable"].clone()), (json!("handler_timeout"), json!(true)));
}
