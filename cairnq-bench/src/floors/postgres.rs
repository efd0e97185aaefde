//! The Postgres floors: the protocol's statements through one
//! tokio-postgres connection at the server's default settings (as the
//! store's pool opens them: `synchronous_commit` on, the store's schema
//! first on the search path), each statement prepared once, arguments
//! bound by the store's own binder (`cairnq_postgres::floor::bind`). The
//! claim's statements go out together, pipelined in one round trip, as the
//! engine sends them; a completion alone is one autocommit statement, as
//! the engine's `complete_batch` is.

use std::collections::HashMap;
use std::time::Instant;

use cairnq_core::{Error, Json, Result};
use cairnq_protocol::Dialect;
use cairnq_sql::{Query, Sql};
use futures::future::try_join_all;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient, NoTls, Row, Statement};

use super::{Commits, INSERT_CHUNK, Inserts, Shape, WORKER, batches, claim_draw, insert_one, rate, recovery};

fn storage(doing: &'static str) -> impl Fn(tokio_postgres::Error) -> Error {
    move |e| Error::storage(doing, e)
}

/// One connection and the statements it prepared.
struct Floor {
    client: Client,
    prepared: HashMap<&'static str, Statement>,
}

impl Floor {
    async fn connect(dsn: &str, schema: &str) -> Result<Self> {
        let (client, connection) = tokio_postgres::connect(dsn, NoTls).await.map_err(storage("connect the floor"))?;
        tokio::spawn(connection);
        let path = format!("\"{}\"", schema.replace('"', "\"\""));
        client
            .execute("select set_config('search_path', $1, false)", &[&path])
            .await
            .map_err(storage("set the floor's search path"))?;
        Ok(Self { client, prepared: HashMap::new() })
    }

    /// Prepares every rendering `queries` use, before the clock starts.
    async fn prepare(&mut self, queries: &[Query]) -> Result<()> {
        for q in queries {
            let sql = rendering(q)?;
            if !self.prepared.contains_key(sql) {
                let statement = self.client.prepare(sql).await.map_err(storage("prepare a floor statement"))?;
                self.prepared.insert(sql, statement);
            }
        }
        Ok(())
    }
}

fn rendering(q: &Query) -> Result<&'static str> {
    let statement = Dialect::Postgres.statement(q.sql);
    Ok(statement.rendering(&q.flags).map_err(|e| Error::validation("floor", e.to_string()))?.sql)
}

/// Runs `q` (prepared already) on `on`: a client or a transaction.
async fn run(prepared: &HashMap<&'static str, Statement>, on: &impl GenericClient, q: &Query) -> Result<Vec<Row>> {
    let statement = Dialect::Postgres.statement(q.sql);
    let rendering = statement.rendering(&q.flags).map_err(|e| Error::validation("floor", e.to_string()))?;
    let stmt = prepared.get(rendering.sql).ok_or_else(|| Error::validation("floor", "a statement was not prepared"))?;
    let args = rendering
        .params
        .iter()
        .map(|name| q.get(name).map(cairnq_postgres::floor::bind))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| Error::validation("floor", format!("{}: an argument is missing", statement.name)))?;
    let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
    on.query(stmt, &params).await.map_err(storage("run a floor statement"))
}

/// The claim transaction's statements, in the engine's order.
fn claim_queries(limit: usize) -> Vec<Query> {
    let mut queries: Vec<Query> = recovery().into();
    queries.push(Query::new(Sql::AnyLimits));
    queries.push(claim_draw(limit));
    queries
}

/// `complete_tasks` of `ids` with the no-op handler's `null` result (one
/// jsonb object by id, as the engine's `complete_batch` writes them).
fn complete_query(ids: &[String]) -> Result<Query> {
    let results: HashMap<&str, Json> = ids.iter().map(|id| (id.as_str(), Json::null())).collect();
    Ok(Query::new(Sql::CompleteTasks)
        .arg("ids", ids.to_vec())
        .arg("results", Json::encode(&results)?)
        .arg("worker_id", WORKER))
}

/// Claims and completes every queued task in `shape`'s batches.
pub(super) async fn burn_down(dsn: &str, schema: &str, count: usize, shape: Shape, commits: Commits) -> Result<f64> {
    let mut floor = Floor::connect(dsn, schema).await?;
    let mut warm = claim_queries(shape.claim);
    warm.push(complete_query(&[])?);
    floor.prepare(&warm).await?;
    let start = Instant::now();
    let (mut settled, mut pending) = (0, Vec::<String>::new());
    loop {
        let mut queries = Vec::new();
        if commits == Commits::WithNextClaim {
            for chunk in pending.chunks(shape.complete) {
                queries.push(complete_query(chunk)?);
            }
        } else {
            for chunk in pending.chunks(shape.complete) {
                settled += run(&floor.prepared, &floor.client, &complete_query(chunk)?).await?.len();
            }
        }
        let completes = queries.len();
        queries.extend(claim_queries(shape.claim));
        let tx = floor.client.transaction().await.map_err(storage("begin"))?;
        let prepared = &floor.prepared;
        let answers = try_join_all(queries.iter().map(|q| run(prepared, &tx, q))).await?;
        tx.commit().await.map_err(storage("commit"))?;
        settled += answers[..completes].iter().map(Vec::len).sum::<usize>();
        let claimed =
            answers.last().map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect()).unwrap_or_default();
        pending = claimed;
        if pending.is_empty() {
            break;
        }
    }
    let elapsed = start.elapsed();
    if settled != count {
        return Err(Error::validation("raw_burn_down", format!("the floor settled {settled} of {count} tasks")));
    }
    Ok(rate(count, elapsed))
}

/// The Postgres shape of `insert_tasks`: one array per column (as the
/// store's `insert_unkeyed` builds it).
fn insert_many(from: usize, n: usize) -> Query {
    let ids: Vec<String> = (0..n).map(|_| cairnq_core::backend::new_task_id()).collect();
    let texts = |value: &str| vec![value.to_string(); n];
    let payloads: Vec<Json> = (from..from + n).map(|i| Json::from(serde_json::json!({ "i": i }))).collect();
    Query::new(Sql::InsertTasks)
        .arg("ids", ids.clone())
        .arg("names", texts("noop"))
        .arg("queues", texts("default"))
        .arg("payloads", payloads)
        .arg("metadatas", vec![Json::empty_object(); n])
        .arg("max_attempts", vec![3i64; n])
        .arg("priorities", vec![0i64; n])
        .arg("delays_ms", vec![0i64; n])
        .arg("parent_ids", vec![None::<String>; n])
        .arg("root_ids", ids)
        .arg("correlation_ids", vec![None::<String>; n])
}

/// Inserts `count` tasks `how` the floor is told: a group of one
/// statement is one autocommit statement (as the engine's coalesced
/// submits are), a larger group one transaction.
pub(super) async fn insert(dsn: &str, schema: &str, count: usize, how: Inserts) -> Result<f64> {
    let mut floor = Floor::connect(dsn, schema).await?;
    floor.prepare(&[insert_one(0), insert_many(0, 1)]).await?;
    let (group, chunk, multi) = match how {
        Inserts::OneByOne { group } => (group, 1, false),
        Inserts::MultiRow { chunk, group } => (group, chunk.min(INSERT_CHUNK), true),
    };
    let start = Instant::now();
    let mut inserted = 0;
    for n in batches(count, group) {
        let queries: Vec<Query> = if multi {
            let mut at = inserted;
            batches(n, chunk)
                .map(|rows| {
                    at += rows;
                    insert_many(at - rows, rows)
                })
                .collect()
        } else {
            (inserted..inserted + n).map(insert_one).collect()
        };
        if queries.len() == 1 {
            run(&floor.prepared, &floor.client, &queries[0]).await?;
        } else {
            let tx = floor.client.transaction().await.map_err(storage("begin"))?;
            for q in &queries {
                run(&floor.prepared, &tx, q).await?;
            }
            tx.commit().await.map_err(storage("commit"))?;
        }
        inserted += n;
    }
    let elapsed = start.elapsed();
    let stored: i64 = floor
        .client
        .query_one("select count(*) from cairnq_tasks", &[])
        .await
        .map_err(storage("count the floor's rows"))?
        .get(0);
    if stored != i64::try_from(count).unwrap_or(-1) {
        return Err(Error::validation("raw_submit", format!("the floor stored {stored} of {count} tasks")));
    }
    Ok(rate(count, elapsed))
}
