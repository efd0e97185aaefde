//! Live updates beyond the browser test: on Postgres, a task another
//! connection puts on a queue the dashboard has never seen is announced at
//! once (LISTEN/NOTIFY, not the 5 s poll); and however many tabs re-read
//! the overview at once, the store is read once for all of them.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cairnq_core::store::StatsParams;
use cairnq_core::{CairnQ, QueueAge, Result, Store};
use cairnq_testkit::StoreLocator;
use cairnq_testkit::forwarding::{Forward, Forwarding};
use cairnq_testkit::postgres::PostgresFactory;
use cairnq_testkit::support::fresh;
use cairnq_web::WebOptions;
use common::{http, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How soon a change must be announced (the 2 s, less the page's
/// own re-read).
const ANNOUNCED_WITHIN: Duration = Duration::from_millis(1_500);

/// An open `/events` stream.
async fn events(addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    let request = format!("GET /events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut head = [0u8; 1024];
    let n = stream.read(&mut head).await.expect("reads the head");
    assert!(String::from_utf8_lossy(&head[..n]).contains("text/event-stream"));
    stream
}

/// Reads until a `change` event arrives; how long that took from `since`.
async fn next_change(stream: &mut TcpStream, since: Instant) -> Duration {
    let mut seen = String::new();
    let mut buffer = [0u8; 1024];
    while !seen.contains("event: change") {
        let read = tokio::time::timeout(ANNOUNCED_WITHIN.saturating_sub(since.elapsed()), stream.read(&mut buffer));
        let n = read.await.unwrap_or_else(|_| panic!("no change event within {ANNOUNCED_WITHIN:?}: {seen}"));
        let n = n.expect("reads events");
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    since.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_another_connection_puts_on_a_new_queue_is_announced_at_once_on_postgres() {
    let factory = PostgresFactory::from_test_server().expect("the Postgres test server");
    let (client, fresh) = fresh(&factory).await;
    client.submit("seed", &serde_json::json!({})).queue("known").await.expect("submits");
    let addr = start(client.clone(), WebOptions::new()).await;
    let mut stream = events(addr).await;
    // Let the hub subscribe and announce its first poll, then go quiet.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let Some(StoreLocator::Postgres { dsn, schema }) = fresh.locator.clone() else { panic!("a Postgres schema") };
    let other = cairnq_testkit::postgres::open(&dsn, &schema).await.expect("a second store on the database");
    let submitted = Instant::now();
    CairnQ::new(other).submit("hello", &serde_json::json!({})).queue("brand-new").await.expect("submits");
    let took = next_change(&mut stream, submitted).await;
    println!("a new queue's task announced after {took:?}");
}

/// Counts the oldest-due reads, which only the overview's snapshot makes.
struct CountingAges {
    inner: Arc<dyn Store>,
    reads: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Forward for CountingAges {
    fn inner(&self) -> &dyn Store {
        self.inner.as_ref()
    }

    async fn oldest_due(&self, params: &StatsParams) -> Result<Vec<QueueAge>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.oldest_due(params).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tabs_reloading_at_once_read_the_store_once() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = cairnq_sqlite::SqliteStore::open(dir.path().join("queue.db")).await.expect("opens the file");
    let reads = Arc::new(AtomicUsize::new(0));
    let counting = Forwarding(CountingAges { inner: Arc::new(store), reads: Arc::clone(&reads) });
    let client = CairnQ::new(counting);
    client.submit("email", &serde_json::json!({})).await.expect("submits");
    let addr = start(client.clone(), WebOptions::new()).await;
    let tabs = (0..12).map(|n| async move {
        let path = if n % 2 == 0 { "/" } else { "/workers" };
        http(addr, "GET", path, &[("X-Cairnq-Partial", "1")], "").await.status
    });
    let answered = futures::future::join_all(tabs).await;
    assert!(answered.iter().all(|status| *status == 200), "{answered:?}");
    let read = reads.load(Ordering::SeqCst);
    assert!((1..=2).contains(&read), "12 page loads at once read the queues {read} times");
}
