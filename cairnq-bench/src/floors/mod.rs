//! The floors: what the shared schema allows, measured in the same run as
//! the engine. Each floor runs the protocol's own rendered statements
//! (`cairnq_protocol`, with the arguments the engine's flows build as
//! [`Query`]s) on a fresh store's database, created by the real migrations,
//! straight through rusqlite or tokio-postgres on one connection with the
//! store's own settings: no runtime of ours, no worker, no decoding into
//! `Task`s. The engine's workload divided by its floor (`cargo xtask
//! bench` prints the ratios) is then the share of what the schema allows
//! that the engine reaches.
//!
//! - `raw_burn_down`: the claim transaction the engine runs (on SQLite the
//!   limits-index check, lease recovery's three statements, the "any
//!   limit?" probe, `claim_due_tasks` for one queue and one name with its
//!   limit guard; on Postgres the same minus the index check, pipelined
//!   in one round trip as the engine sends them) and `complete_tasks`, at
//!   the batch sizes the engine used in this run (a counted engine
//!   burn-down of the same size runs first). Two ways: each claim and
//!   each completion committed on its own (the naive floor), and every
//!   completion sharing the next claim's commit (the most the protocol
//!   allows: one commit per claim, which the engine's group commit may
//!   reach on SQLite).
//! - `raw_submit`: `insert_task` one task per commit (the floor of
//!   `sequential_submit`), and grouped as the engine groups concurrent
//!   producers' submits (SQLite: the writer's group commit, one statement
//!   per task in one transaction; Postgres: the submit coalescer's one
//!   multi-row `insert_tasks`), one group per producer count.
//! - `raw_multi_row_insert`: `insert_tasks` in the engine's chunks of
//!   1,000 rows, one transaction (the floor of `submit_many`).

mod postgres;
mod sqlite;

use std::time::Duration;

use cairnq_core::{CairnQ, Error, ErrorEnvelope, Json, Result, Store};
use cairnq_sql::{Query, Sql};
use serde_json::json;

use cairnq_testkit::{BackendFactory, StoreLocator};

use super::claims;
use super::workloads::{drain_with_worker, noop_specs};

/// The worker id and lease of the floor's claims.
const WORKER: &str = "floor";
const LEASE_MS: i64 = 30_000;

/// The rows the engine took per claim and settled per completion write,
/// as means over one burn-down (at least 1 each).
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) claim: usize,
    pub(super) complete: usize,
}

/// A floor's way of committing a burn-down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Commits {
    /// Every claim and every completion write commits on its own.
    Each,
    /// The completions of a claim's rows share the next claim's commit.
    WithNextClaim,
}

/// The engine's burn-down of `count` tasks at `concurrency`, counted: its
/// rate, batch shape, and (SQLite) commits. Same steps as `burn_down_c*`.
async fn engine_shape(factory: &dyn BackendFactory, count: usize, concurrency: usize) -> Result<(f64, Shape, String)> {
    let fresh = factory.fresh().await?;
    let client = CairnQ::from_shared(fresh.store.clone());
    for chunk in noop_specs(count, &json!({})).chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    let sqlite = match &fresh.locator {
        Some(StoreLocator::Sqlite { path }) => Some(cairnq_sqlite::SqliteStore::open(path).await?),
        _ => None,
    };
    let commits_before = sqlite.as_ref().map(|s| s.write_stats().commits).unwrap_or(0);
    let (counted, counts) = claims::counted(fresh.store.clone());
    let rate = drain_with_worker(counted, &client, count, concurrency).await?;
    let (claims, claimed, writes, completed) = counts.batches();
    let shape = Shape {
        claim: (claimed as usize).checked_div(claims as usize).unwrap_or(1).max(1),
        complete: (completed as usize).checked_div(writes as usize).unwrap_or(1).max(1),
    };
    let mut seen = format!(
        "the engine's burn-down of {count} in this process: {rate:.0}/s, {claims} claims of {} rows, {writes} \
         completion writes of {} rows",
        shape.claim, shape.complete
    );
    if let Some(sqlite) = sqlite {
        let commits = sqlite.write_stats().commits - commits_before;
        seen.push_str(&format!(", {commits} commits"));
        sqlite.close().await?;
    }
    Ok((rate, shape, seen))
}

/// `count` tasks submitted through the engine on a fresh store, its
/// locator, the store closed (so nothing else touches the database).
async fn submitted_fresh(factory: &dyn BackendFactory, count: usize) -> Result<StoreLocator> {
    let fresh = factory.fresh().await?;
    let locator = super::process::locator_of(&fresh)?.clone();
    let client = CairnQ::from_shared(fresh.store.clone());
    for chunk in noop_specs(count, &json!({})).chunks(10_000) {
        client.submit_many(chunk).await?;
    }
    fresh.store.close().await?;
    Ok(locator)
}

/// A fresh store's locator with nothing submitted, the store closed.
async fn empty_fresh(factory: &dyn BackendFactory) -> Result<StoreLocator> {
    submitted_fresh(factory, 0).await
}

/// Burns down `count` tasks through the floor; tasks per second.
async fn floor_burn_down(locator: StoreLocator, count: usize, shape: Shape, commits: Commits) -> Result<f64> {
    match locator {
        StoreLocator::Sqlite { path } => {
            tokio::task::spawn_blocking(move || sqlite::burn_down(&path, count, shape, commits))
                .await
                .map_err(|e| Error::storage("floor thread", e))?
        }
        StoreLocator::Postgres { dsn, schema } => postgres::burn_down(&dsn, &schema, count, shape, commits).await,
        other => Err(no_floor(&other)),
    }
}

/// `raw_burn_down` at one concurrency: the naive floor, the one-commit
/// floor, and what the engine did in this process beside them.
pub(super) async fn raw_burn_down(
    factory: &dyn BackendFactory,
    count: usize,
    concurrency: usize,
) -> Result<Vec<(String, f64, String)>> {
    let (_, shape, seen) = engine_shape(factory, count, concurrency).await?;
    let naive = floor_burn_down(submitted_fresh(factory, count).await?, count, shape, Commits::Each).await?;
    let joined = floor_burn_down(submitted_fresh(factory, count).await?, count, shape, Commits::WithNextClaim).await?;
    let detail = |how: &str| {
        format!(
            "{count} tasks, claims of {} and completions of {} rows (the engine's means at c{concurrency}), {how}; {seen}",
            shape.claim, shape.complete
        )
    };
    Ok(vec![
        (format!("c{concurrency}_tasks_per_s"), naive, detail("each committed on its own")),
        (
            format!("c{concurrency}_one_commit_tasks_per_s"),
            joined,
            detail("completions sharing the next claim's commit"),
        ),
    ])
}

/// How a floor inserts tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Inserts {
    /// `insert_task`, `group` tasks per transaction (1: one per commit).
    OneByOne { group: usize },
    /// `insert_tasks` of up to `chunk` rows per statement, `group` tasks
    /// per transaction.
    MultiRow { chunk: usize, group: usize },
}

/// Inserts `count` tasks through the floor on a fresh store; tasks per second.
pub(super) async fn raw_insert(factory: &dyn BackendFactory, count: usize, how: Inserts) -> Result<f64> {
    match empty_fresh(factory).await? {
        StoreLocator::Sqlite { path } => tokio::task::spawn_blocking(move || sqlite::insert(&path, count, how))
            .await
            .map_err(|e| Error::storage("floor thread", e))?,
        StoreLocator::Postgres { dsn, schema } => postgres::insert(&dsn, &schema, count, how).await,
        other => Err(no_floor(&other)),
    }
}

fn no_floor(locator: &StoreLocator) -> Error {
    Error::validation("floor", format!("no floor is written for the store at {locator:?}"))
}

/// The engine's multi-row chunk (`backend::flows`' `INSERT_CHUNK`, the
/// Postgres coalescer's too).
pub(super) const INSERT_CHUNK: usize = 1_000;

/// Lease recovery's three statements, as every claim transaction begins.
fn recovery() -> [Query; 3] {
    let expired = ErrorEnvelope::lease_expired().to_json();
    [Sql::RecoverCanceledLeases, Sql::RecoverRequeuedLeases, Sql::RecoverFailedLeases]
        .map(|sql| Query::new(sql).arg("error", &expired))
}

/// The first draw of a worker whose one handler (`noop`) reads one queue,
/// guarded as on a database with the limits extension (a fresh store's).
fn claim_draw(limit: usize) -> Query {
    Query::new(Sql::ClaimDueTasks)
        .arg("worker_id", WORKER)
        .arg("lease_ms", LEASE_MS)
        .arg("limit", i64::try_from(limit).unwrap_or(i64::MAX))
        .scope(&["default".to_string()], Some(&["noop".to_string()]))
        .flag("unlimited_only")
}

/// One no-op task's `insert_task`, with the values a plain submit gives.
fn insert_one(i: usize) -> Query {
    let id = cairnq_core::backend::new_task_id();
    Query::new(Sql::InsertTask)
        .arg("id", &id)
        .arg("name", "noop")
        .arg("queue", "default")
        .arg("payload", Json::from(json!({ "i": i })))
        .arg("metadata", Json::empty_object())
        .arg("max_attempts", 3i64)
        .arg("priority", 0i64)
        .arg("delay_ms", 0i64)
        .arg("parent_id", cairnq_sql::Arg::Null)
        .arg("root_id", id)
        .arg("correlation_id", cairnq_sql::Arg::Null)
}

/// The floor's batches of `count` in `size`s (the last may be short).
fn batches(count: usize, size: usize) -> impl Iterator<Item = usize> {
    let size = size.max(1);
    (0..count.div_ceil(size)).map(move |i| size.min(count - i * size))
}

/// Elapsed time as a rate.
fn rate(count: usize, elapsed: Duration) -> f64 {
    super::per_second(count, elapsed)
}
