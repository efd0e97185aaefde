//! What a worker process of the multi-process workloads did to get its
//! work, for the evidence behind a share: its claims (how many, how many
//! rows, the largest, the failed ones, the time they took, probes that
//! found nothing) and its completion writes (the floors run at the
//! engine's batch sizes), counted by a store wrapper around the real one,
//! and, on SQLite, the writer's waits for the file's write lock
//! ([`cairnq_sqlite::WriteStats`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use cairnq_core::store::{ClaimParams, CompleteBatchParams, ProbeParams};
use cairnq_core::{Result, Store, Task, TaskRef};
use serde_json::{Value, json};

use cairnq_testkit::forwarding::{Forward, Forwarding};

/// The counts, shared between the wrapper and the report.
#[derive(Debug, Default)]
pub(super) struct ClaimCounts {
    claims: AtomicU64,
    rows: AtomicU64,
    largest: AtomicU64,
    failed: AtomicU64,
    claim_us: AtomicU64,
    empty_probes: AtomicU64,
    completion_writes: AtomicU64,
    completed_rows: AtomicU64,
}

impl ClaimCounts {
    /// Claims, rows claimed, completion writes, rows they settled: the
    /// engine's batch sizes, which the floors run at.
    pub(super) fn batches(&self) -> (u64, u64, u64, u64) {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        (get(&self.claims), get(&self.rows), get(&self.completion_writes), get(&self.completed_rows))
    }

    /// The counts as JSON fields, with the SQLite writer's lock waits when
    /// the store is `sqlite`.
    pub(super) fn report(&self, sqlite: Option<&cairnq_sqlite::SqliteStore>) -> Value {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let mut out = json!({
            "claims": get(&self.claims),
            "claimed_rows": get(&self.rows),
            "largest_claim": get(&self.largest),
            "failed_claims": get(&self.failed),
            "claim_ms": get(&self.claim_us) as f64 / 1000.0,
            "empty_probes": get(&self.empty_probes),
        });
        if let Some(sqlite) = sqlite {
            let stats = sqlite.write_stats();
            out["commits"] = json!(stats.commits);
            out["lock_waits"] = json!(stats.lock_waits);
            out["lock_wait_ms"] = json!(stats.lock_wait.as_secs_f64() * 1000.0);
            out["lock_tries"] = json!(stats.lock_tries);
        }
        out
    }
}

/// `store`, counting its claims into the returned counts.
pub(super) fn counted(store: Arc<dyn Store>) -> (Arc<dyn Store>, Arc<ClaimCounts>) {
    let counts = Arc::new(ClaimCounts::default());
    (Arc::new(Forwarding(Counting { inner: store, counts: counts.clone() })), counts)
}

struct Counting {
    inner: Arc<dyn Store>,
    counts: Arc<ClaimCounts>,
}

#[async_trait]
impl Forward for Counting {
    fn inner(&self) -> &dyn Store {
        self.inner.as_ref()
    }

    async fn claimable(&self, params: &ProbeParams) -> Result<bool> {
        let found = self.inner.claimable(params).await;
        if let Ok(false) = found {
            self.counts.empty_probes.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        let started = Instant::now();
        let claimed = self.inner.claim(params).await;
        let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let c = &self.counts;
        c.claims.fetch_add(1, Ordering::Relaxed);
        c.claim_us.fetch_add(us, Ordering::Relaxed);
        match &claimed {
            Ok(rows) => {
                c.rows.fetch_add(rows.len() as u64, Ordering::Relaxed);
                c.largest.fetch_max(rows.len() as u64, Ordering::Relaxed);
            }
            Err(_) => {
                c.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        claimed
    }

    async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        let c = &self.counts;
        c.completion_writes.fetch_add(1, Ordering::Relaxed);
        c.completed_rows.fetch_add(params.completions.len() as u64, Ordering::Relaxed);
        self.inner.complete_batch(params).await
    }
}
