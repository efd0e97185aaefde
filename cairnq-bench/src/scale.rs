//! `scale`: what each operation costs as the database grows, which is what
//! a user meets after a month in production. One database grows through
//! the sizes asked (10,000 / 100,000 / 1,000,000 tasks with `--scale`);
//! at each size the same operations are timed, so the curve (and the ratio
//! of the largest size to the smallest) shows which costs grow with the
//! table and which stay flat.
//!
//! The mix is what a month of traffic leaves: 85% succeeded history, 5%
//! failed, 10% queued backlog, one keyed task per thousand. It is seeded
//! through the public API in bulk (submit_many, claims of 1,000 settled by
//! complete_batch), never one submit at a time, so every row is one the
//! SDK wrote, and the counter triggers see every change.

use std::time::{Duration, Instant};

use cairnq_core::store::ClaimDraw;
use cairnq_core::{
    CairnQ, Error, ErrorEnvelope, ListCursor, ListFilter, PurgeFilter, Result, SubmitOptions, TaskSpec, TaskStatus,
    WorkerSession, codes,
};
use serde_json::{Value, json};

use cairnq_testkit::{BackendFactory, StoreLocator};

use super::timing::median_ms;

/// Share of each size that is succeeded history, failed, queued (percent).
const HISTORY_PERCENT: usize = 85;
const FAILED_PERCENT: usize = 5;
/// Rows one purge call deletes at each size.
const PURGE_ROWS: usize = 2_000;

/// One point of a curve: `metric@size` and its value.
pub(super) type Point = (String, f64);

/// What the growing database keeps for the measurements.
#[derive(Default)]
struct Seeded {
    size: usize,
    ids: Vec<String>,
    keys: Vec<String>,
    /// The middle row of the last growth's history: a keyset page after it
    /// is deep (hundreds of thousands of rows at 1,000,000).
    deep: Option<ListCursor>,
}

/// Grows one database through `sizes` and times every operation at each.
pub(super) async fn scale(factory: &dyn BackendFactory, sizes: &[usize]) -> Result<Vec<Point>> {
    let fresh = factory.fresh().await?;
    let client = CairnQ::from_shared(fresh.store.clone());
    let mut seeded = Seeded::default();
    let mut points = Vec::new();
    for &size in sizes {
        let start = Instant::now();
        grow(&client, &mut seeded, size).await?;
        eprintln!("scale: {} tasks seeded in {:.1?}", size, start.elapsed());
        for (metric, value) in measure(&client, &seeded, fresh.locator.as_ref()).await? {
            points.push((format!("{metric}@{size}"), value));
        }
    }
    Ok(points)
}

async fn grow(client: &CairnQ, seeded: &mut Seeded, size: usize) -> Result<()> {
    let add = size.saturating_sub(seeded.size);
    let (history, failed) = (add * HISTORY_PERCENT / 100, add * FAILED_PERCENT / 100);
    let keyed = size / 1_000 - seeded.size / 1_000;
    let backlog = add - history - failed - keyed;
    let middle = submit_bulk(client, "hist", history).await?;
    seeded.deep = middle.or(seeded.deep.take());
    settle_all(client, "hist", true).await?;
    submit_bulk(client, "hist_fail", failed).await?;
    settle_all(client, "hist_fail", false).await?;
    submit_bulk(client, "noop", backlog).await?;
    for i in seeded.size / 1_000..size / 1_000 {
        let key = format!("scale-key-{i}");
        let task = client.submit("keyed", &json!({ "i": i })).options(SubmitOptions::new().key(&key)).await?;
        seeded.ids.push(task.id);
        seeded.keys.push(key);
    }
    seeded.size = size;
    Ok(())
}

/// Submits `count` tasks of `name` in calls of 5,000; returns the place of
/// the one in the middle.
async fn submit_bulk(client: &CairnQ, name: &str, count: usize) -> Result<Option<ListCursor>> {
    let mut middle = None;
    let mut done = 0;
    while done < count {
        let n = (count - done).min(5_000);
        let specs: Vec<TaskSpec> =
            (0..n).map(|i| TaskSpec::new(name, &json!({ "i": i, "pad": "x".repeat(64) }))).collect();
        let tasks = client.submit_many(&specs).await?;
        if (done..done + n).contains(&(count / 2)) {
            middle = tasks.get(count / 2 - done).map(ListCursor::of);
        }
        done += n;
    }
    Ok(middle)
}

/// Claims every queued task of `name` 1,000 at a time and settles them:
/// succeeded in one complete_batch, or failed for good one by one.
async fn settle_all(client: &CairnQ, name: &str, succeed: bool) -> Result<()> {
    let worker = scale_session(client)?;
    let envelope = ErrorEnvelope::new(codes::TASK_ERROR, "the attempt failed").to_json();
    loop {
        let claimed = claim(&worker, name, 1_000).await?;
        if claimed.is_empty() {
            return Ok(());
        }
        if succeed {
            let done = claimed.into_iter().map(|id| (id, json!({ "ok": true }).into())).collect();
            worker.complete_batch(done).await?;
        } else {
            let fails = claimed.iter().map(|id| worker.fail(id, envelope.clone(), None));
            for outcome in futures::future::join_all(fails).await {
                outcome?;
            }
        }
    }
}

/// The lease holder the scale workload claims and settles as.
fn scale_session(client: &CairnQ) -> Result<WorkerSession> {
    client.worker_session("scale", Duration::from_secs(30))
}

async fn claim(worker: &WorkerSession, name: &str, limit: u32) -> Result<Vec<String>> {
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec![name.into()]).limit(limit);
    let claimed = worker.claim(vec![draw], Vec::new()).await?;
    Ok(claimed.into_iter().map(|t| t.id).collect())
}

async fn measure(client: &CairnQ, seeded: &Seeded, locator: Option<&StoreLocator>) -> Result<Vec<(&'static str, f64)>> {
    let mut out = Vec::new();
    out.push(("submit_ms", median_ms(|i| client.submit("noop", &json!({ "probe": i })).into_future()).await?));
    let claimed = std::sync::Mutex::new(Vec::new());
    let worker = scale_session(client)?;
    let claim_ms = median_ms(|_| async {
        let ids = claim(&worker, "noop", 1).await?;
        if ids.len() != 1 {
            return Err(Error::validation("scale", "a claim found nothing in a non-empty backlog"));
        }
        claimed.lock().map_err(|_| Error::validation("scale", "poisoned"))?.extend(ids);
        Ok(())
    })
    .await?;
    out.push(("claim_one_ms", claim_ms));
    let claimed = claimed.into_inner().map_err(|_| Error::validation("scale", "poisoned"))?;
    let done = claimed.into_iter().map(|id| (id, Value::Null.into())).collect();
    worker.complete_batch(done).await?;
    out.push(("stats_ms", median_ms(|_| client.stats(None)).await?));
    out.push(("stats_queue_ms", median_ms(|_| client.stats(Some("default"))).await?));
    out.push(("queue_depth_ms", median_ms(|_| client.queue_depth("default", 1_000)).await?));
    let first_page = ListFilter::new().limit(100);
    out.push(("list_first_page_ms", median_ms(|_| client.list(&first_page)).await?));
    let deep = seeded.deep.clone().ok_or_else(|| Error::validation("scale", "nothing seeded"))?;
    let deep_page = ListFilter::new().limit(100).after(deep.clone());
    out.push(("list_deep_page_ms", median_ms(|_| client.list(&deep_page)).await?));
    let pick = |i: usize, all: &[String]| all[(i * 7_919) % all.len()].clone();
    out.push(("get_id_ms", median_ms(|i| async move { client.get(&pick(i, &seeded.ids)).await }).await?));
    out.push(("get_key_ms", median_ms(|i| async move { client.get_by_key(&pick(i, &seeded.keys)).await }).await?));
    let (task_id, key) = (pick(0, &seeded.ids), pick(0, &seeded.keys));
    let probe = super::web::Probe { task_id: &task_id, key: &key, deep: &deep };
    out.extend(super::web::web_latencies(client, &probe).await?);
    out.push(("purge_rows_per_s", purge_rate(client, seeded.size).await?));
    if let Some(bytes) = database_bytes(locator).await? {
        out.push(("bytes_per_task", bytes as f64 / seeded.size as f64));
    }
    Ok(out)
}

/// Rows per second of one purge of the oldest succeeded history (at most
/// 2% of the size, so the database stays its size).
async fn purge_rate(client: &CairnQ, size: usize) -> Result<f64> {
    let limit = PURGE_ROWS.min(size / 50).max(1);
    let filter = PurgeFilter::new().status(TaskStatus::Succeeded).limit(limit as u32);
    let start = Instant::now();
    let purged = client.purge(&filter).await?;
    Ok(purged.len() as f64 / start.elapsed().as_secs_f64().max(1e-9))
}

/// The database's size on disk: the SQLite file and its WAL, or the
/// Postgres schema's cairnq tables with their indexes.
async fn database_bytes(locator: Option<&StoreLocator>) -> Result<Option<u64>> {
    match locator {
        Some(StoreLocator::Sqlite { path }) => {
            let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            let wal = path.with_extension(format!("{}-wal", path.extension().and_then(|e| e.to_str()).unwrap_or("")));
            Ok(Some(size(path) + size(&wal)))
        }
        Some(StoreLocator::Postgres { dsn, schema }) => {
            let raw = cairnq_testkit::postgres::raw(dsn).await;
            let sql = "select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint from pg_class c
                       join pg_namespace n on n.oid = c.relnamespace
                       where n.nspname = $1 and c.relkind = 'r' and c.relname like 'cairnq%'";
            let row = raw.query_one(sql, &[schema]).await.map_err(|e| Error::storage("database size", e))?;
            Ok(Some(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
        }
        _ => Ok(None),
    }
}
