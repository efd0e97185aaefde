//! Settling inside the application's own transaction, end to end on real
//! databases: `TaskContext::succeed_in` on Postgres (the worker's store on
//! the application's own deadpool pool, the handler's transaction from
//! that pool) and `TaskContext::succeed_with` on a SQLite file.
//!
//! Each backend runs the same four cases: the handler's row and the
//! task's success commit together (and the worker writes nothing after);
//! a lease another worker took over rolls both back and is reported once;
//! and a worker PROCESS killed between the handler's write and the commit
//! (the testkit's child, mode `settle-in`) leaves neither, the task is
//! recovered and run again, and only the rerun's row exists.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, ErrorKind, Task, TaskStatus};
use cairnq_postgres::deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use cairnq_postgres::{PostgresOptions, PostgresStore, SucceedIn};
use cairnq_sqlite::rusqlite::Connection;
use cairnq_sqlite::{SqliteStore, SucceedWith};
use cairnq_testkit::StoreLocator;
use cairnq_testkit::child::{APP_TABLE, ChildArgs, ChildMode, ChildProcess};
use cairnq_testkit::postgres::{fresh_schema_name, test_dsn};
use cairnq_testkit::support::finished;
use cairnq_worker::{TaskContext, TaskError, Worker, WorkerIssue, WorkerOptions};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// Far longer than a child takes to start or a task to run.
const PATIENCE: Duration = Duration::from_secs(60);

/// Where the application's rows live, beside the queue.
#[derive(Clone)]
enum Db {
    /// The queue's file, and the worker's store on it (which a handler's
    /// `succeed_with` takes).
    Sqlite { path: PathBuf, store: Arc<SqliteStore> },
    /// The application's pool; its search_path reaches the queue's schema.
    Postgres { dsn: String, schema: String, pool: Pool },
}

/// A queue with the application's table beside it, and a client on the
/// store the workers use.
struct App {
    db: Db,
    client: CairnQ,
    _dir: Option<tempfile::TempDir>,
}

async fn sqlite_app() -> App {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("app.db");
    let store = Arc::new(SqliteStore::open(&path).await.expect("open"));
    Connection::open(&path).and_then(|c| c.execute(APP_TABLE, [])).expect("app table");
    App { client: CairnQ::from_shared(store.clone()), db: Db::Sqlite { path, store }, _dir: Some(dir) }
}

/// The store runs on the application's own pool (`from_pool`).
async fn postgres_app() -> App {
    let dsn = test_dsn().expect("a test Postgres server (set CAIRNQ_TEST_PG_DSN or install Postgres)");
    let schema = fresh_schema_name();
    let separator = if dsn.contains('?') { '&' } else { '?' };
    let config = format!("{dsn}{separator}options=-csearch_path%3D{schema}").parse().expect("dsn");
    let manager = Manager::from_config(
        config,
        cairnq_postgres::tokio_postgres::NoTls,
        ManagerConfig { recycling_method: RecyclingMethod::Fast },
    );
    let pool = Pool::builder(manager).max_size(4).runtime(Runtime::Tokio1).build().expect("pool");
    let store =
        PostgresStore::from_pool(pool.clone(), PostgresOptions::new().schema(&schema)).await.expect("from_pool");
    pool.get().await.expect("checkout").batch_execute(APP_TABLE).await.expect("app table");
    App { db: Db::Postgres { dsn, schema, pool }, client: CairnQ::new(store), _dir: None }
}

impl App {
    fn locator(&self) -> StoreLocator {
        match &self.db {
            Db::Sqlite { path, .. } => StoreLocator::Sqlite { path: path.clone() },
            Db::Postgres { dsn, schema, .. } => StoreLocator::Postgres { dsn: dsn.clone(), schema: schema.clone() },
        }
    }

    /// `(task id, attempt, worker)` of every application row.
    async fn app_rows(&self) -> Vec<(String, i64, String)> {
        let sql = "select task_id, attempt, worker from app_rows order by attempt";
        match &self.db {
            Db::Sqlite { path, .. } => {
                let conn = Connection::open(path).expect("read connection");
                let mut stmt = conn.prepare(sql).expect("prepare");
                let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("query");
                rows.collect::<Result<_, _>>().expect("rows")
            }
            Db::Postgres { pool, .. } => {
                let rows = pool.get().await.expect("checkout").query(sql, &[]).await.expect("query");
                rows.iter().map(|r| (r.get(0), i64::from(r.get::<_, i32>(1)), r.get(2))).collect()
            }
        }
    }

    /// Makes the task's lease look expired, as if this worker's heartbeats
    /// had stopped reaching the store.
    async fn expire_lease(&self, task_id: &str) {
        let sql = "update cairnq_tasks set lease_until_ms = 1 where id = ";
        match &self.db {
            Db::Sqlite { path, .. } => {
                Connection::open(path).and_then(|c| c.execute(&format!("{sql}?1"), [task_id])).expect("expire");
            }
            Db::Postgres { pool, .. } => {
                let conn = pool.get().await.expect("checkout");
                conn.execute(&format!("{sql}$1"), &[&task_id]).await.expect("expire");
            }
        }
    }
}

/// The handler's write: its row in `app_rows` and the task's success with
/// `result`, in one transaction.
async fn write_and_settle(ctx: &TaskContext, db: &Db, result: &Value) -> cairnq_core::Result<Option<Task>> {
    match db {
        Db::Sqlite { store, .. } => {
            let (task_id, attempt, worker) = (ctx.task_id().to_string(), ctx.attempt(), ctx.worker_id().to_string());
            let result = result.clone();
            ctx.succeed_with(store, move |conn| {
                let insert = "insert into app_rows (task_id, attempt, worker) values (?1, ?2, ?3)";
                conn.execute(insert, (&task_id, attempt, &worker))?;
                Ok(result)
            })
            .await
        }
        Db::Postgres { pool, .. } => {
            let mut conn = app_step(pool.get().await);
            let tx = app_step(conn.transaction().await);
            let settled = bill_in(ctx, &tx, result).await?;
            app_step(tx.commit().await);
            Ok(settled)
        }
    }
}

/// On Postgres, the handler's row in `app_rows` and the task's success with
/// `result` in the application's transaction `tx` (from any pool), left
/// for the caller to commit or roll back.
async fn bill_in(
    ctx: &TaskContext,
    tx: &cairnq_postgres::tokio_postgres::Transaction<'_>,
    result: &Value,
) -> cairnq_core::Result<Option<Task>> {
    let attempt = i32::try_from(ctx.attempt()).expect("attempt");
    let insert = "insert into app_rows (task_id, attempt, worker) values ($1, $2, $3)";
    app_step(tx.execute(insert, &[&ctx.task_id(), &attempt, &ctx.worker_id()]).await);
    ctx.succeed_in(tx, result).await
}

/// A statement of the application's own: the tests' setup makes it work.
fn app_step<T, E: std::fmt::Display>(done: Result<T, E>) -> T {
    done.unwrap_or_else(|e| panic!("the application's own statement failed: {e}"))
}

/// A worker on the app's store whose issues are collected.
fn worker(app: &App, lease: Duration) -> (Worker, Arc<Mutex<Vec<WorkerIssue>>>) {
    let issues = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&issues);
    // One slot: while the handler holds it, the worker's own claim loop
    // cannot take back a task whose lease a test expired (it would race the
    // test's second worker for it).
    let options = WorkerOptions::new()
        .lease(lease)
        .concurrency(1)
        .poll_interval(Duration::from_millis(20))
        .on_error(move |issue| seen.lock().push(issue));
    (Worker::new(app.client.clone(), options).expect("worker"), issues)
}

async fn commits_rows_and_success_together(app: App) {
    let (mut worker, issues) = worker(&app, Duration::from_secs(30));
    let db = app.db.clone();
    worker
        .task("bill", move |ctx: TaskContext, _: Value| {
            let db = db.clone();
            async move {
                let settled = write_and_settle(&ctx, &db, &json!({"billed": true})).await?;
                assert_eq!(settled.map(|t| t.status), Some(TaskStatus::Succeeded), "settled inside the transaction");
                assert!(ctx.settled());
                // What the handler returns now is not written again.
                Ok::<_, TaskError>(json!({"ignored": true}))
            }
        })
        .expect("register");
    let handle = worker.spawn();
    let task = app.client.submit("bill", &json!({})).await.expect("submit");
    let done = finished(&app.client, &task.id).await;
    handle.stop_and_join().await.expect("stop");

    assert_eq!((done.status, done.result), (TaskStatus::Succeeded, Some(json!({"billed": true}).into())));
    let rows = app.app_rows().await;
    assert_eq!(rows.iter().map(|r| (r.0.as_str(), r.1)).collect::<Vec<_>>(), [(task.id.as_str(), 1)]);
    assert!(issues.lock().is_empty(), "no second settle, no lost lease: {:?}", issues.lock());
}

async fn a_lost_lease_rolls_both_back(app: App) {
    let (mut worker, issues) = worker(&app, Duration::from_secs(30));
    let (started_tx, mut started) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
    let (outcome_tx, mut outcome) = mpsc::unbounded_channel::<(ErrorKind, bool)>();
    let db = app.db.clone();
    worker
        .task("bill", move |ctx: TaskContext, _: Value| {
            let (db, started_tx, outcome_tx) = (db.clone(), started_tx.clone(), outcome_tx.clone());
            async move {
                let (go_tx, go) = oneshot::channel();
                started_tx.send(go_tx).expect("the test listens");
                go.await.expect("the test says go");
                let err = write_and_settle(&ctx, &db, &json!({"billed": true})).await.expect_err("the lease is gone");
                outcome_tx.send((err.kind(), ctx.lost_lease())).expect("the test listens");
                Err::<Value, _>(TaskError::from(err))
            }
        })
        .expect("register");
    let handle = worker.spawn();
    let task = app.client.submit("bill", &json!({})).await.expect("submit");
    let go = tokio::time::timeout(PATIENCE, started.recv()).await.expect("the handler started").expect("go");

    // Another worker takes the task over once its lease has expired.
    app.expire_lease(&task.id).await;
    let draw = ClaimDraw::new(vec!["default".into()]).limit(1);
    let w2 = app.client.worker_session("w2", Duration::from_secs(30)).expect("a session");
    let taken = w2.claim(vec![draw], vec![]).await.expect("claim");
    assert_eq!(taken.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [task.id.as_str()], "w2 recovered it");
    go.send(()).expect("the handler waits");
    let (kind, lost) =
        tokio::time::timeout(PATIENCE, outcome.recv()).await.expect("the handler ended").expect("outcome");
    handle.stop_and_join().await.expect("stop");

    assert_eq!((kind, lost), (ErrorKind::LostLease, true));
    assert!(app.app_rows().await.is_empty(), "the handler's row rolled back with the settle");
    let row = app.client.get(&task.id).await.expect("get").expect("row");
    assert_eq!((row.status, row.worker_id.as_deref(), row.attempt), (TaskStatus::Running, Some("w2"), 2));
    assert!(row.error.is_none(), "the handler's error was not written over w2's attempt");
    let reports = issues.lock();
    let lost: Vec<_> = reports
        .iter()
        .filter_map(|issue| match issue {
            WorkerIssue::LostLeases { task_ids } => Some(task_ids.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(lost, [vec![task.id.clone()]], "reported once: {reports:?}");
}

async fn a_killed_worker_leaves_neither(app: App) {
    let task = app.client.submit("settle_in", &json!({"hold_first_ms": 600_000})).await.expect("submit");
    let mut args = ChildArgs::new(app.locator(), ChildMode::SettleIn);
    args.lease_ms = 1_000;
    let mut first = ChildProcess::spawn(&args).expect("start the first worker");
    let holding = first.line_starting("holding ", PATIENCE).await.expect("the first attempt holds its transaction");
    assert_eq!(holding, format!("holding {}", task.id));
    first.kill().expect("SIGKILL");

    assert!(app.app_rows().await.is_empty(), "the killed attempt's row never committed");
    let row = app.client.get(&task.id).await.expect("get").expect("row");
    assert_eq!(row.status, TaskStatus::Running, "nor did its settle");

    let mut second = ChildProcess::spawn(&args).expect("start the second worker");
    let ready = second.line_starting("ready ", PATIENCE).await.expect("ready");
    let rerun_worker = ready.split(' ').nth(2).expect("worker id").to_string();
    let done = finished(&app.client, &task.id).await;
    second.stop(PATIENCE).await.expect("stop the second worker");

    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"attempt": 2, "worker": rerun_worker}).into()), "the rerun settled it");
    assert_eq!(app.app_rows().await, [(task.id.clone(), 2, rerun_worker)], "only the rerun's row exists");
}

/// Each case as a test on each backend: `sqlite::CASE`, `postgres::CASE`.
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::sqlite_app().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::postgres_app().await).await;
                }
            )*
        }
    };
}

on_both_backends!(commits_rows_and_success_together, a_lost_lease_rolls_both_back, a_killed_worker_leaves_neither);

/// The application rolls back after `succeed_in` (or its commit fails):
/// neither persists, the worker writes nothing more for that attempt, and
/// the task is claimed again once its lease expires (at-least-once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_rolled_back_transaction_leaves_the_task_to_be_run_again() {
    let app = postgres_app().await;
    let (mut worker, issues) = worker(&app, Duration::from_secs(1));
    let Db::Postgres { pool, .. } = app.db.clone() else { unreachable!("a Postgres app") };
    worker
        .task("bill", move |ctx: TaskContext, _: Value| {
            let pool = pool.clone();
            async move {
                let mut conn = app_step(pool.get().await);
                let tx = app_step(conn.transaction().await);
                let attempt = ctx.attempt();
                bill_in(&ctx, &tx, &json!({ "attempt": attempt })).await?;
                if attempt == 1 {
                    app_step(tx.rollback().await); // as a failed commit would
                } else {
                    app_step(tx.commit().await);
                }
                Ok::<_, TaskError>(json!("ignored"))
            }
        })
        .expect("register");
    let handle = worker.spawn();
    let task = app.client.submit("bill", &json!({})).await.expect("submit");
    let done = finished(&app.client, &task.id).await;
    handle.stop_and_join().await.expect("stop");

    assert_eq!((done.status, done.attempt), (TaskStatus::Succeeded, 2), "run again after the lease expired");
    assert_eq!(done.result, Some(json!({"attempt": 2}).into()));
    let rows = app.app_rows().await;
    assert_eq!(rows.iter().map(|r| r.1).collect::<Vec<_>>(), [2], "attempt 1's row rolled back");
    assert!(issues.lock().is_empty(), "the settled attempt was not reported lost: {:?}", issues.lock());
}

/// A closure that fails wrote nothing: the settle claim goes back to the
/// handler, whose return settles the task the usual way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_failing_closure_leaves_the_settle_to_the_handlers_return() {
    let app = sqlite_app().await;
    let (mut worker, issues) = worker(&app, Duration::from_secs(30));
    let Db::Sqlite { store, .. } = app.db.clone() else { unreachable!("a SQLite app") };
    worker
        .task("bill", move |ctx: TaskContext, _: Value| {
            let store = store.clone();
            async move {
                let err = ctx
                    .succeed_with(&store, |conn| {
                        conn.execute("insert into app_rows values ('x', 1, 'w')", [])?;
                        conn.execute("insert into no_such_table values (1)", [])
                    })
                    .await
                    .expect_err("the closure fails");
                assert!(!ctx.settled(), "nothing settled: {err}");
                Err::<Value, _>(TaskError::new("no invoice table").code("setup"))
            }
        })
        .expect("register");
    let handle = worker.spawn();
    let task = app.client.submit("bill", &json!({})).await.expect("submit");
    let done = finished(&app.client, &task.id).await;
    handle.stop_and_join().await.expect("stop");

    assert_eq!(done.status, TaskStatus::Failed);
    let error = done.error.expect("the handler's error was written").to_string();
    assert!(error.contains("no invoice table"), "{error}");
    assert!(app.app_rows().await.is_empty(), "the closure's first insert rolled back");
    assert!(issues.lock().is_empty(), "{:?}", issues.lock());
}

/// A backend's settle refuses an attempt whose lease lives elsewhere,
/// writing nothing: `succeed_with` given a store other than the worker's
/// (a validation error), `succeed_in` on a worker of another backend
/// (`UnsupportedBackend`). The handler's return still settles the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settle_outside_the_workers_own_store_is_refused() {
    let client = CairnQ::new(cairnq_testkit::memory::MemoryStore::new());
    let other = Arc::new(sqlite_app().await);
    let mut worker =
        Worker::new(client.clone(), WorkerOptions::new().poll_interval(Duration::from_millis(20))).expect("worker");
    let pg = postgres_app().await;
    let Db::Postgres { pool, .. } = pg.db.clone() else { unreachable!("a Postgres app") };
    worker
        .task("bill", move |ctx: TaskContext, _: Value| {
            let (other, pool) = (other.clone(), pool.clone());
            async move {
                let Db::Sqlite { store, .. } = &other.db else { unreachable!("a SQLite app") };
                let err = ctx.succeed_with(store, |_| Ok(1)).await.expect_err("not the worker's store");
                assert_eq!(err.kind(), ErrorKind::ValidationError, "{err}");
                let mut conn = app_step(pool.get().await);
                let tx = app_step(conn.transaction().await);
                let err = ctx.succeed_in(&tx, &1).await.expect_err("not a Postgres worker");
                assert_eq!(err.kind(), ErrorKind::UnsupportedBackend, "{err}");
                assert!(!ctx.settled());
                Ok::<_, TaskError>(json!("returned"))
            }
        })
        .expect("register");
    let handle = worker.spawn();
    let task = client.submit("bill", &json!({})).await.expect("submit");
    let done = finished(&client, &task.id).await;
    handle.stop_and_join().await.expect("stop");
    assert_eq!((done.status, done.result), (TaskStatus::Succeeded, Some(json!("returned").into())));
}

/// `succeed_in` takes a plain tokio-postgres transaction too (what a pool
/// of another kind, bb8-postgres say, hands out): a handler on a session of
/// its own, not from the store's pool, commits its row and the success
/// together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_tokio_postgres_transaction_of_another_pool_settles_too() {
    let app = postgres_app().await;
    let (mut worker, issues) = worker(&app, Duration::from_secs(30));
    let Db::Postgres { dsn, schema, .. } = app.db.clone() else { unreachable!("a Postgres app") };
    let separator = if dsn.contains('?') { '&' } else { '?' };
    let own_dsn = format!("{dsn}{separator}options=-csearch_path%3D{schema}");
    worker
        .task("bill", move |ctx: TaskContext, _: Value| {
            let own_dsn = own_dsn.clone();
            async move {
                let (mut session, connection) = app_step(
                    cairnq_postgres::tokio_postgres::connect(&own_dsn, cairnq_postgres::tokio_postgres::NoTls).await,
                );
                tokio::spawn(connection);
                let tx = app_step(session.transaction().await);
                bill_in(&ctx, &tx, &json!("billed on another pool")).await?;
                app_step(tx.commit().await);
                Ok::<_, TaskError>(json!("ignored"))
            }
        })
        .expect("register");
    let handle = worker.spawn();
    let task = app.client.submit("bill", &json!({})).await.expect("submit");
    let done = finished(&app.client, &task.id).await;
    handle.stop_and_join().await.expect("stop");

    assert_eq!((done.status, done.result), (TaskStatus::Succeeded, Some(json!("billed on another pool").into())));
    assert_eq!(app.app_rows().await.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), [task.id.as_str()]);
    assert!(issues.lock().is_empty(), "{:?}", issues.lock());
}
