//! The SQLite floors: the protocol's statements through rusqlite on one
//! connection opened as the store's writer opens its own
//! (`cairnq_sqlite::floor::writer_connection`: synchronous FULL on the
//! WAL file the migrations made, the same page and statement caches),
//! `BEGIN IMMEDIATE` ... `COMMIT` around each transaction as the writer
//! does. Runs on a blocking thread of its own.

use std::path::Path;
use std::time::Instant;

use cairnq_core::{Error, Result};
use cairnq_protocol::Dialect;
use cairnq_sql::{Arg, Query, Sql};
use cairnq_sqlite::SqliteOptions;
use rusqlite::Connection;
use rusqlite::types::{Null, ValueRef};

use super::{Commits, Inserts, Shape, WORKER, batches, claim_draw, insert_one, rate, recovery};

fn storage(doing: &'static str) -> impl Fn(rusqlite::Error) -> Error {
    move |e| Error::storage(doing, e)
}

fn open(path: &Path) -> Result<Connection> {
    cairnq_sqlite::floor::writer_connection(path, &SqliteOptions::default())
}

/// Runs `q`'s rendering for its flags, its arguments bound by position
/// (`:now_ms` from the clock when the statement wants it, as the store's
/// executor adds it), and hands every row to `each`.
fn run(conn: &Connection, q: &Query, mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<()>) -> Result<()> {
    let statement = Dialect::Sqlite.statement(q.sql);
    let rendering = statement.rendering(&q.flags).map_err(|e| Error::validation("floor", e.to_string()))?;
    let mut stmt = conn.prepare_cached(rendering.sql).map_err(storage("prepare a floor statement"))?;
    let now_ms = cairnq_core::now_ms();
    for (position, name) in rendering.params.iter().enumerate() {
        let bound = match q.get(name) {
            Some(Arg::Int(i)) => stmt.raw_bind_parameter(position + 1, i),
            Some(Arg::Bool(b)) => stmt.raw_bind_parameter(position + 1, i64::from(*b)),
            Some(Arg::Text(text)) => stmt.raw_bind_parameter(position + 1, text.as_str()),
            Some(Arg::Json(json)) => stmt.raw_bind_parameter(position + 1, json.as_str()),
            Some(Arg::Null) => stmt.raw_bind_parameter(position + 1, Null),
            None if *name == "now_ms" => stmt.raw_bind_parameter(position + 1, now_ms),
            other => {
                let what = format!("{}: the floor binds no {other:?} for :{name}", statement.name);
                return Err(Error::validation("floor", what));
            }
        };
        bound.map_err(storage("bind a floor argument"))?;
    }
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(storage("run a floor statement"))? {
        each(row)?;
    }
    Ok(())
}

fn control(conn: &Connection, sql: &'static str) -> Result<()> {
    conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(|_| ()).map_err(storage("begin or commit"))
}

/// `work` in one `BEGIN IMMEDIATE` transaction, as the store's writer runs
/// a batch.
fn transaction<T>(conn: &Connection, work: impl FnOnce() -> Result<T>) -> Result<T> {
    control(conn, "begin immediate")?;
    match work() {
        Ok(out) => control(conn, "commit").map(|()| out),
        Err(e) => {
            let _ = control(conn, "rollback");
            Err(e)
        }
    }
}

/// The engine's claim transaction's statements: is the limits index
/// there, lease recovery, is any limit set, the draw. The claimed ids.
fn claim(conn: &Connection, limit: usize) -> Result<Vec<String>> {
    run(conn, &Query::new(Sql::IndexExists).arg("index", Query::LIMITS_INDEX), |_| Ok(()))?;
    for recover in recovery() {
        run(conn, &recover, |_| Ok(()))?;
    }
    run(conn, &Query::new(Sql::AnyLimits), |_| Ok(()))?;
    let mut ids = Vec::with_capacity(limit);
    run(conn, &claim_draw(limit), |row| {
        // `returning *`: the engine reads every column of the row.
        for column in 1..row.as_ref().column_count() {
            let _: ValueRef<'_> = row.get_ref(column).map_err(storage("read a claimed row"))?;
        }
        ids.push(row.get::<_, String>(0).map_err(storage("read a claimed id"))?);
        Ok(())
    })?;
    Ok(ids)
}

/// `complete_tasks` of `ids` with the no-op handler's `null` result, as
/// the engine's `complete_batch` writes them; how many were settled.
fn complete(conn: &Connection, ids: &[String]) -> Result<usize> {
    let settles: Vec<(&str, serde_json::Value)> = ids.iter().map(|id| (id.as_str(), serde_json::Value::Null)).collect();
    let settles = serde_json::to_string(&settles).map_err(|e| Error::Serialization(e.to_string()))?;
    let q = Query::new(Sql::CompleteTasks).arg("settles", settles).arg("worker_id", WORKER);
    let mut settled = 0;
    run(conn, &q, |_| {
        settled += 1;
        Ok(())
    })?;
    Ok(settled)
}

/// Claims and completes every queued task in `shape`'s batches.
pub(super) fn burn_down(path: &Path, count: usize, shape: Shape, commits: Commits) -> Result<f64> {
    let conn = open(path)?;
    let start = Instant::now();
    let mut settled = 0;
    let mut pending: Vec<String> = Vec::new();
    loop {
        let claimed = match commits {
            Commits::Each => {
                for chunk in pending.chunks(shape.complete) {
                    settled += transaction(&conn, || complete(&conn, chunk))?;
                }
                transaction(&conn, || claim(&conn, shape.claim))?
            }
            Commits::WithNextClaim => transaction(&conn, || {
                for chunk in pending.chunks(shape.complete) {
                    settled += complete(&conn, chunk)?;
                }
                claim(&conn, shape.claim)
            })?,
        };
        if claimed.is_empty() {
            break;
        }
        pending = claimed;
    }
    let elapsed = start.elapsed();
    if settled != count {
        return Err(Error::validation("raw_burn_down", format!("the floor settled {settled} of {count} tasks")));
    }
    Ok(rate(count, elapsed))
}

/// The SQLite shape of `insert_tasks`: one JSON array per task (as the
/// store's executor builds it).
fn insert_many(from: usize, n: usize) -> Query {
    let rows: Vec<serde_json::Value> = (from..from + n)
        .map(|i| {
            let id = cairnq_core::backend::new_task_id();
            let payload = serde_json::json!({ "i": i }).to_string();
            serde_json::json!([id, "noop", "default", payload, "{}", 3, 0, 0, null, id, null])
        })
        .collect();
    Query::new(Sql::InsertTasks).arg("tasks", serde_json::Value::Array(rows).to_string())
}

/// Inserts `count` tasks `how` the floor is told.
pub(super) fn insert(path: &Path, count: usize, how: Inserts) -> Result<f64> {
    let conn = open(path)?;
    let start = Instant::now();
    let mut inserted = 0;
    match how {
        Inserts::OneByOne { group } => {
            for n in batches(count, group) {
                transaction(&conn, || {
                    for i in inserted..inserted + n {
                        run(&conn, &insert_one(i), |_| Ok(()))?;
                    }
                    Ok(())
                })?;
                inserted += n;
            }
        }
        Inserts::MultiRow { chunk, group } => {
            for n in batches(count, group) {
                transaction(&conn, || {
                    let mut done = 0;
                    for rows in batches(n, chunk) {
                        run(&conn, &insert_many(inserted + done, rows), |_| Ok(()))?;
                        done += rows;
                    }
                    Ok(())
                })?;
                inserted += n;
            }
        }
    }
    let elapsed = start.elapsed();
    let stored: i64 = conn
        .query_row("select count(*) from cairnq_tasks", [], |row| row.get(0))
        .map_err(storage("count the floor's rows"))?;
    if stored != i64::try_from(count).unwrap_or(-1) {
        return Err(Error::validation("raw_submit", format!("the floor stored {stored} of {count} tasks")));
    }
    Ok(rate(count, elapsed))
}
