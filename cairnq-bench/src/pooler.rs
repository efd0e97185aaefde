//! What pooler mode costs (issue 29): `burn_down_c64`,
//! `concurrent_producers`, `call_in_process` and `wakeup_latency` through
//! a real PgBouncer in transaction mode (`PostgresOptions::pooler`, LISTEN
//! on a direct connection: `listen_dsn`) beside the same workloads straight
//! to the same Postgres, each pair reported with its pooler / direct ratio.
//! A deployment chooses between the two modes with these numbers (the
//! book's chapter on running behind a pooler says when to use which).
//!
//! Postgres only; skipped, saying so, where `pgbouncer` is not installed.
//! The pooler is one of its own (`TestPooler::private`), in front of the
//! bench's server, with as many server connections as a store's default
//! pool (10), so both modes have the same connection budget per store.

use cairnq_core::Result;
use cairnq_postgres::PostgresOptions;
use cairnq_testkit::postgres::{PostgresFactory, TestPooler};
use cairnq_testkit::{BackendFactory, StoreLocator};

use crate::Sizes;
use crate::workloads::{burn_down, call_in_process, concurrent_producers, wakeup_latency};

/// The pooler's server connections (PgBouncer's `default_pool_size`): a
/// store's default pool.
const SERVER_POOL: u16 = 10;

/// One pair of runs: what was measured (`name`, `unit`), direct and
/// through the pooler.
struct Pair {
    name: &'static str,
    unit: &'static str,
    direct: f64,
    pooler: f64,
    detail: String,
}

/// The pooler-mode workload's measurements as (metric, value, detail):
/// per pair `<metric>_direct`, `<metric>_pooler` and
/// `<metric>_pooler_over_direct`. Empty off Postgres and without PgBouncer.
pub(super) async fn pooler_mode(factory: &dyn BackendFactory, sizes: Sizes) -> Result<Vec<(String, f64, String)>> {
    if factory.name() != "postgres" {
        return Ok(Vec::new());
    }
    // The bench server's DSN, as a fresh store names it for another process.
    let Some(StoreLocator::Postgres { dsn, .. }) = factory.fresh().await?.locator else {
        eprintln!("pooler_mode: skipped, the Postgres factory names no DSN");
        return Ok(Vec::new());
    };
    let Some(pooler) = TestPooler::private("bench", &dsn, SERVER_POOL)? else {
        eprintln!("pooler_mode: skipped, pgbouncer is not installed (Debian: apt-get install pgbouncer)");
        return Ok(Vec::new());
    };
    let direct = PostgresFactory::new(dsn.clone()).options(PostgresOptions::new());
    let pooled =
        PostgresFactory::new(pooler.dsn()).options(PostgresOptions::new().pooler(true).listen_dsn(dsn.clone()));

    let mut pairs = Vec::new();
    let burn = |f: &PostgresFactory| {
        let f = f.clone();
        async move { burn_down(&f, sizes.burn, 64, || Ok(())).await }
    };
    pairs.push(Pair {
        name: "burn_down_c64",
        unit: "tasks_per_s",
        direct: burn(&direct).await?,
        pooler: burn(&pooled).await?,
        detail: format!("{} no-op tasks, one worker of concurrency 64", sizes.burn),
    });
    let (producers, each) = (sizes.producers, sizes.per_producer);
    pairs.push(Pair {
        name: "concurrent_producers",
        unit: "tasks_per_s",
        direct: concurrent_producers(&direct, producers, each).await?,
        pooler: concurrent_producers(&pooled, producers, each).await?,
        detail: format!("{producers} producers x {each}"),
    });
    pairs.extend(latency_pairs(
        "call",
        call_in_process(&direct, sizes.calls).await?,
        call_in_process(&pooled, sizes.calls).await?,
        format!("{} calls, worker in this process", sizes.calls),
    ));
    let submits = sizes.calls.min(50);
    pairs.extend(latency_pairs(
        "wakeup",
        wakeup_latency(&direct, submits).await?,
        wakeup_latency(&pooled, submits).await?,
        format!("{submits} submits to an idle worker polling every 5 s; submit to handler start"),
    ));
    drop(pooler);
    Ok(pairs.into_iter().flat_map(rows).collect())
}

/// The (p50, p95) milliseconds of a latency, direct and through the
/// pooler, as two pairs.
fn latency_pairs(name: &'static str, direct: (f64, f64), pooler: (f64, f64), detail: String) -> [Pair; 2] {
    [
        Pair { name, unit: "p50_ms", direct: direct.0, pooler: pooler.0, detail: detail.clone() },
        Pair { name, unit: "p95_ms", direct: direct.1, pooler: pooler.1, detail },
    ]
}

/// A pair as three rows: direct, through the pooler, and their ratio
/// (above 1: the pooler's number is the larger).
fn rows(pair: Pair) -> [(String, f64, String); 3] {
    let Pair { name, unit, direct, pooler, detail } = pair;
    let through =
        format!("{detail}; PgBouncer transaction mode, {SERVER_POOL} server connections, pooler(true), LISTEN direct");
    [
        (format!("{name}_direct_{unit}"), direct, format!("{detail}; straight to Postgres")),
        (format!("{name}_pooler_{unit}"), pooler, through),
        (format!("{name}_{unit}_pooler_over_direct"), pooler / direct.max(1e-9), "ratio".to_string()),
    ]
}
