//! Criterion micro-benchmarks of the hot statements, measured through the
//! storage seam (`CairnQ` over a `Store`), so every backend is measured by the
//! same code (on SQLite, the embedded default).

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, Store};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

async fn sqlite_store(dir: &std::path::Path) -> Arc<dyn Store> {
    Arc::new(cairnq_sqlite::SqliteStore::open(dir.join("bench.db")).await.expect("open sqlite"))
}

fn hot_statements(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let client = CairnQ::from_shared(rt.block_on(sqlite_store(dir.path())));
    let seed = rt.block_on(async { client.submit("noop", &json!({"seed": true})).await }).expect("seed");
    let mut group = c.benchmark_group("sqlite");
    group.bench_function("submit", |b| {
        b.to_async(&rt).iter(|| async { client.submit("noop", &json!({"n": 1})).await.expect("submit") })
    });
    group.bench_function("get", |b| b.to_async(&rt).iter(|| async { client.get(&seed.id).await.expect("get") }));
    group.bench_function("get_status", |b| {
        b.to_async(&rt).iter(|| async { client.get_status(&seed.id).await.expect("get_status") })
    });
    let worker = client.worker_session("bench", Duration::from_secs(30)).expect("a session");
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["noop".into()]).limit(1);
    group.bench_function("submit_claim_complete", |b| {
        b.to_async(&rt).iter(|| async {
            client.submit("noop", &json!({})).await.expect("submit");
            for task in worker.claim(vec![draw.clone()], Vec::new()).await.expect("claim") {
                worker.complete(&task.id, json!(null)).await.expect("complete");
            }
        })
    });
    group.finish();
}

criterion_group!(benches, hot_statements);
criterion_main!(benches);
