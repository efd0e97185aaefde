//! The child's `settle-in` worker: a handler that writes a row of the
//! application's own (`app_rows`) and settles its task in the same
//! transaction — `TaskContext::succeed_in` in a session of its own on
//! Postgres, `TaskContext::succeed_with` on the writer thread on SQLite —
//! so a test can kill the process between the write and the commit and
//! find neither afterwards.
// Built without either backend feature (the testkit's default), the
// handler can only refuse, and its helpers go unused.
#![cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(unused))]

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{Result, Store};
use cairnq_worker::{TaskContext, TaskError};
use serde_json::{Value, json};

use crate::StoreLocator;

/// The application's table the handler writes to; a test creates it in the
/// queue's database (schema) before starting the child.
pub const APP_TABLE: &str =
    "create table app_rows (task_id text not null, attempt integer not null, worker text not null)";

/// What the handler returns (and settles with).
fn result(ctx: &TaskContext) -> Value {
    json!({ "attempt": ctx.attempt(), "worker": ctx.worker_id() })
}

/// How long attempt 1 holds its open transaction: `payload.hold_first_ms`.
fn hold(ctx: &TaskContext, payload: &Value) -> Option<Duration> {
    let ms = payload["hold_first_ms"].as_u64().filter(|_| ctx.attempt() == 1)?;
    Some(Duration::from_millis(ms))
}

/// The worker's store as its own backend type, which the backend's
/// settle-in-your-transaction takes (the worker itself knows no backend).
#[derive(Clone)]
pub(crate) struct SettleStore {
    /// The same store, for the worker's client.
    pub(crate) shared: Arc<dyn Store>,
    kind: SettleKind,
}

#[derive(Clone)]
enum SettleKind {
    #[cfg(feature = "postgres")]
    Postgres,
    #[cfg(feature = "sqlite")]
    Sqlite(Arc<cairnq_sqlite::SqliteStore>),
}

impl SettleStore {
    /// Opens the store `locator` names, as its backend type.
    pub(crate) async fn open(locator: &StoreLocator) -> Result<Self> {
        match locator {
            #[cfg(feature = "postgres")]
            StoreLocator::Postgres { dsn, schema } => {
                Ok(Self { shared: Arc::new(crate::postgres::open(dsn, schema).await?), kind: SettleKind::Postgres })
            }
            #[cfg(feature = "sqlite")]
            StoreLocator::Sqlite { path } => {
                let store = Arc::new(cairnq_sqlite::SqliteStore::open(path).await?);
                Ok(Self { shared: store.clone(), kind: SettleKind::Sqlite(store) })
            }
            #[allow(unreachable_patterns)]
            _ => Err(cairnq_core::Error::UnsupportedBackend { operation: "settle_in", backend: "cairnq-test-worker" }),
        }
    }
}

/// Runs one task: the row and the settle in one transaction. With a hold,
/// prints `holding <task id>` once both are written (SQLite: once the row
/// is, the settle follows in the same transaction) and waits before the
/// commit: the window a test kills the process in.
pub(crate) async fn settle_in(
    ctx: TaskContext,
    payload: Value,
    store: SettleStore,
    locator: StoreLocator,
) -> std::result::Result<Value, TaskError> {
    match (store.kind, locator) {
        #[cfg(feature = "postgres")]
        (SettleKind::Postgres, StoreLocator::Postgres { dsn, schema }) => {
            Ok(on_postgres(&ctx, &payload, &dsn, &schema).await?)
        }
        #[cfg(feature = "sqlite")]
        (SettleKind::Sqlite(store), _) => Ok(on_sqlite(&ctx, &payload, &store).await?),
        #[allow(unreachable_patterns)]
        _ => Err(TaskError::new("this build has no such backend")),
    }
}

#[cfg(feature = "postgres")]
async fn on_postgres(ctx: &TaskContext, payload: &Value, dsn: &str, schema: &str) -> Result<Value> {
    use cairnq_postgres::SucceedIn;
    let pg = |context: &'static str| move |e: tokio_postgres::Error| cairnq_core::Error::storage(context, e);
    let (mut app, connection) =
        tokio_postgres::connect(dsn, tokio_postgres::NoTls).await.map_err(pg("the application's connection"))?;
    tokio::spawn(connection);
    let path = format!("set search_path to \"{}\"", schema.replace('"', "\"\""));
    app.batch_execute(&path).await.map_err(pg("set search_path"))?;
    let tx = app.transaction().await.map_err(pg("begin"))?;
    let row = "insert into app_rows (task_id, attempt, worker) values ($1, $2, $3)";
    let attempt = i32::try_from(ctx.attempt()).unwrap_or(i32::MAX);
    tx.execute(row, &[&ctx.task_id(), &attempt, &ctx.worker_id()]).await.map_err(pg("insert app row"))?;
    let result = result(ctx);
    ctx.succeed_in(&tx, &result).await?;
    if let Some(hold) = hold(ctx, payload) {
        println!("holding {}", ctx.task_id());
        tokio::time::sleep(hold).await;
    }
    tx.commit().await.map_err(pg("commit"))?;
    Ok(result)
}

#[cfg(feature = "sqlite")]
async fn on_sqlite(ctx: &TaskContext, payload: &Value, store: &cairnq_sqlite::SqliteStore) -> Result<Value> {
    use cairnq_sqlite::SucceedWith;
    let (task_id, attempt, worker) = (ctx.task_id().to_string(), ctx.attempt(), ctx.worker_id().to_string());
    let (hold, result) = (hold(ctx, payload), result(ctx));
    let returned = result.clone();
    ctx.succeed_with(store, move |conn| {
        conn.execute(
            "insert into app_rows (task_id, attempt, worker) values (?1, ?2, ?3)",
            (&task_id, attempt, &worker),
        )?;
        if let Some(hold) = hold {
            println!("holding {task_id}");
            // The writer thread itself waits, inside the transaction.
            std::thread::sleep(hold);
        }
        Ok(result)
    })
    .await?;
    Ok(returned)
}
