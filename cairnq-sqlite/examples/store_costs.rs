//! Per-operation costs of the SQLite store for the worker's hot path
//! (claim, complete, heartbeat_batch) at default durability, measured on
//! the store directly so worker overhead is not in the numbers.
//!
//! ```text
//! cargo run --release -p cairnq-sqlite --example store_costs -- [TASKS] [normal]
//! ```
//!
//! `normal` switches to `synchronous = NORMAL` (no fsync per commit), which
//! leaves mostly the CPU cost of each operation.

use std::sync::Arc;
use std::time::Instant;

use cairnq_core::store::{ClaimDraw, ClaimParams, HeartbeatBatchParams, SettleParams};
use cairnq_core::{CairnQ, Store, TaskSpec};
use cairnq_sqlite::{SqliteOptions, SqliteStore, Synchronous};

#[tokio::main]
async fn main() -> cairnq_core::Result<()> {
    let tasks: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let dir = tempfile::tempdir().map_err(|e| cairnq_core::Error::storage("temp dir", e))?;
    let options = match std::env::args().nth(2).as_deref() {
        Some("normal") => SqliteOptions::new().synchronous(Synchronous::Normal),
        _ => SqliteOptions::new(),
    };
    println!("{options:?}");
    let store = Arc::new(SqliteStore::open_with(dir.path().join("costs.db"), options).await?);
    let client = CairnQ::from_shared(Arc::clone(&store) as Arc<dyn Store>);
    let specs: Vec<TaskSpec> = (0..tasks).map(|_| TaskSpec::new("noop", &serde_json::json!({}))).collect();
    let start = Instant::now();
    client.submit_many(&specs).await?;
    report("submit_many (one call)", tasks, start);
    let start = Instant::now();
    for _ in 0..50 {
        client.stats(Some("default")).await?;
    }
    report(&format!("stats of one queue ({tasks} rows)"), 50, start);

    for batch in [1u32, 64] {
        let rounds = 200;
        let params = ClaimParams::new("w", 60_000)
            .draw(ClaimDraw::new(vec!["default".into()]).names(vec!["noop".into()]).limit(batch));
        let start = Instant::now();
        let mut claimed = Vec::new();
        for _ in 0..rounds {
            claimed.extend(store.claim(&params).await?);
        }
        report(&format!("claim limit {batch}, per claim call"), rounds, start);
        report(&format!("claim limit {batch}, per task"), claimed.len(), start);
        let ids: Vec<String> = claimed.iter().take(64).map(|t| t.id.clone()).collect();
        let start = Instant::now();
        for _ in 0..rounds {
            store.heartbeat_batch(&HeartbeatBatchParams::new("w", ids.clone()).lease_ms(60_000)).await?;
        }
        report(&format!("heartbeat_batch of {}", ids.len()), rounds, start);
        let settle = |t: &cairnq_core::Task| SettleParams::new(&t.id, "w").result(serde_json::Value::Null);
        let (one_by_one, concurrent) = claimed.split_at(claimed.len() / 2);
        let start = Instant::now();
        for task in one_by_one.iter().take(500) {
            store.complete(&settle(task)).await?;
        }
        report("complete, one at a time", one_by_one.len().min(500), start);
        let start = Instant::now();
        for chunk in concurrent.chunks(64) {
            let settles: Vec<SettleParams> = chunk.iter().map(settle).collect();
            futures::future::try_join_all(settles.iter().map(|p| store.complete(p))).await?;
        }
        report("complete, 64 concurrent", concurrent.len(), start);
    }
    println!("write stats: {:?}", store.write_stats());
    store.close().await
}

fn report(what: &str, count: usize, start: Instant) {
    let per_op = start.elapsed().as_secs_f64() * 1e6 / count.max(1) as f64;
    println!("{what:<40} {count:>7} ops  {per_op:>9.1} us/op  {:>9.0} ops/s", 1e6 / per_op);
}
