//! `cairnq worker --exec ... --metrics-addr`: the Prometheus page of a real
//! worker process after it drained real tasks.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use cairnq_core::TaskStatus;

use crate::support::{Fixture, announced_addr, http_get};

const TASKS: u64 = 50;

/// Kills the worker process if the test ends early.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_serves_its_metrics_on_sqlite() {
    drains_and_counts(Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_serves_its_metrics_on_postgres() {
    drains_and_counts(Fixture::postgres().await).await;
}

async fn drains_and_counts(fixture: Fixture) {
    for n in 0..TASKS {
        fixture.client.submit("echo", &n).await.expect("submit");
    }
    let args = ["worker", "--exec", "cat", "--concurrency", "4", "--metrics-addr", "127.0.0.1:0"];
    let mut child = fixture.cli.command(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let addr = announced_addr(&mut stderr);
    // Keep reading: a closed pipe would fail the worker's next report.
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|line| eprintln!("worker: {line}")));
    let _worker = Worker(child);

    let start = Instant::now();
    let page = loop {
        let page = http_get(&addr, "/metrics");
        let succeeded =
            fixture.client.stats(Some("default")).await.expect("stats")["default"].get(TaskStatus::Succeeded);
        if succeeded == TASKS && sum(&page, "cairnq_tasks_settled_total", "outcome=\"succeeded\"") == TASKS as f64 {
            break page;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "not drained ({succeeded} succeeded):\n{page}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for status in ["queued", "running", "succeeded", "failed", "canceled"] {
        let series = format!("status=\"{status}\"");
        assert!(samples(&page, "cairnq_queue_depth").any(|(labels, _)| labels.contains(&series)), "{status}:\n{page}");
    }
    assert_eq!(sum(&page, "cairnq_tasks_claimed_total", "queue=\"default\""), TASKS as f64, "{page}");
    assert_eq!(samples(&page, "cairnq_queue_oldest_age_seconds").count(), 1, "{page}");
    assert!(!page.contains("=\"task_"), "no task id is a label:\n{page}");
}

/// `(labels, value)` of every sample of `metric` on a Prometheus text page.
fn samples<'a>(page: &'a str, metric: &'a str) -> impl Iterator<Item = (&'a str, f64)> + 'a {
    page.lines().filter_map(move |line| {
        let rest = line.strip_prefix(metric)?.strip_prefix('{')?;
        let (labels, value) = rest.rsplit_once("} ")?;
        Some((labels, value.trim().parse().ok()?))
    })
}

/// The sum of `metric`'s samples whose labels hold `label`.
fn sum(page: &str, metric: &str, label: &str) -> f64 {
    samples(page, metric).filter(|(labels, _)| labels.contains(label)).map(|(_, value)| value).sum()
}
