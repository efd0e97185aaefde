//! [`SqliteStore`]: the [`Store`] seam over the threads of a `Database`,
//! which the stores of this process on one database share.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::store::{
    CancelParams, ChildrenParams, ClaimParams, CompleteBatchParams, CountQueuedParams, CountTasksParams, FailParams,
    GetParams, HeartbeatBatchParams, HeartbeatParams, LimitRow, LimitUsage, LimitUsageParams, LimitWaitParams,
    LimitsQuery, ListFilter, NewTask, Notifications, ProbeParams, ProgressParams, PurgeFilter, RemoveLimitParams,
    RepairParams, Repaired, RetryParams, ScheduleStore, SetLimitParams, SettleParams, StatsParams, StepStore,
    SubmitManyParams, TaskKeyParams, TaskRow,
};
use cairnq_core::{Capabilities, Error, HeldLease, Json, QueueAge, Result, Store, Task, TaskCount, TaskRef};
use cairnq_sql::{flows, limits};
use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::app_writes::{self, AppWrites};
use crate::database::{self, Handle};
use crate::error::{explain, guarded};
use crate::exec::{SqliteExec, complete_batch};
use crate::group_commit::{Counters, Job, WriteCtx, WriteStats, isolated_job, job};
use crate::limited;
use crate::location::{Location, MEMORY};
use crate::options::SqliteOptions;
use crate::read;
use crate::registry;
use crate::submits::submit_queue;
use cairnq_core::backend::{Coalescer, WakeBoard};

/// A cairnq store in one SQLite file, shared with every other process and
/// SDK that opens the same file (or, for tests and short-lived tools, in
/// memory: [`in_memory`](Self::in_memory)).
///
/// Writes go through one writer thread with group commit; reads run on
/// their own reader threads. Nothing here blocks the async runtime. The
/// stores of one process on one database share those threads.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> cairnq_core::Result<()> {
/// use cairnq_core::CairnQ;
/// use cairnq_sqlite::SqliteStore;
///
/// let dir = tempfile::tempdir().expect("temp dir");
/// let store = SqliteStore::open(dir.path().join("queue.db")).await?;
/// let client = CairnQ::new(store);
/// let task = client.submit("send_email", &serde_json::json!({"to": "a@example.com"})).await?;
/// let read = client.get(&task.id).await?.expect("the task exists");
/// assert_eq!(read.status, cairnq_core::TaskStatus::Queued);
/// client.close().await?;
/// # Ok(()) }
/// ```
pub struct SqliteStore {
    /// The path (or URI) as given.
    path: PathBuf,
    /// `None` once this store is closed; other stores on the database
    /// keep their own handle.
    database: Handle,
    /// Plain submits, coalesced into shared inserts.
    submits: Arc<Coalescer<NewTask, Task>>,
    wakes: Arc<WakeBoard>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` with default
    /// options, migrating it to the newest schema.
    ///
    /// `path` is a file, or a database in memory: `:memory:` (a private
    /// one, as [`in_memory`](Self::in_memory) opens) or a shared-cache URI
    /// `file:NAME?mode=memory&cache=shared`, which every open of `NAME` in
    /// this process shares (see the [crate docs](crate#in-memory) for what
    /// a database in memory cannot do).
    ///
    /// A second open of a database this process already has open (the same
    /// file by its canonical path, or the same shared-cache name) returns a
    /// store on the first one's threads: one writer and its group commit,
    /// one set of readers, wakeups that reach the sleepers of both. See
    /// [`open_with`](Self::open_with) for whose options hold, and
    /// [`close`](Store::close) for how the stores close.
    ///
    /// Fails with [`Error::ProtocolVersionMismatch`] (writing nothing) when
    /// the file belongs to another protocol version, and with
    /// [`Error::Unusable`] when SQLite cannot use the file: the message
    /// starts with the path and the cause found on the file system (a
    /// directory, a missing or read-only directory where SQLite must create
    /// the `-wal` and `-shm` files, a read-only file, a file that is not a
    /// SQLite database), then SQLite's own words. An empty path and a
    /// `file:` URI that names a file (not `mode=memory`) fail with
    /// [`Error::Validation`] before anything is opened: give a file's path.
    ///
    /// A file this process may read but not write opens (SQLite falls back
    /// to read-only): reads work, and every write fails with
    /// [`Error::Unusable`] naming the read-only file.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`open`](Self::open) with options.
    ///
    /// The options of the store that opened the database hold for as long
    /// as any store of this process has it open: a second open of the same
    /// file (or shared-cache name) shares the first one's threads, so its
    /// own `options` are not used at all (not the clock, the busy timeout,
    /// the readers, the durability level, the batch cap or the watch
    /// interval). Open every store of one database with the same options,
    /// or open it once and share the store.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use cairnq_core::{CairnQ, Store};
    /// use cairnq_sqlite::{SqliteOptions, SqliteStore};
    ///
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let path = dir.path().join("queue.db");
    /// let api = SqliteStore::open_with(&path, SqliteOptions::new().readers(4)).await?;
    /// // The same file again: the worker's store shares the API's writer.
    /// let worker = SqliteStore::open(&path).await?;
    /// CairnQ::new(api).submit("resize", &serde_json::json!({})).await?;
    /// assert_eq!(worker.write_stats().jobs, 1, "one writer served both stores");
    /// worker.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let location = Location::parse(&path)?;
        let database = registry::database(&location, &options).await?;
        let (wakes, counters) = (Arc::clone(database.wakes()), Arc::clone(database.counters()));
        let database: Handle = Arc::new(Mutex::new(Some(database)));
        Ok(Self { path, submits: submit_queue(Arc::clone(&database)), database, wakes, counters })
    }

    /// A new, private database in memory with default options: `:memory:`.
    ///
    /// For tests and short-lived tools. Everything a file store does works
    /// the same (the whole conformance suite runs on it), within these
    /// limits:
    /// - **not durable**: the database ends with the last store on it
    ///   (closed or dropped); a crash loses every task;
    /// - **one process**: no other process or SDK can open it, so workers
    ///   in other processes cannot serve it;
    /// - **one connection**: reads queue behind writes on the writer thread
    ///   (a file store reads on reader threads meanwhile);
    /// - each call makes a database of its own; to reach one database from
    ///   several stores, open a shared-cache URI instead
    ///   (`SqliteStore::open("file:jobs?mode=memory&cache=shared")`) or
    ///   share the store (`CairnQ` clones share it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use cairnq_core::{CairnQ, TaskStatus};
    /// use cairnq_sqlite::SqliteStore;
    ///
    /// let client = CairnQ::new(SqliteStore::in_memory().await?);
    /// let task = client.submit("send_email", &serde_json::json!({"to": "a@example.com"})).await?;
    /// assert_eq!(client.get(&task.id).await?.map(|t| t.status), Some(TaskStatus::Queued));
    /// client.close().await?; // the database is gone
    /// # Ok(()) }
    /// ```
    pub async fn in_memory() -> Result<Self> {
        Self::open(MEMORY).await
    }

    /// The path (or in-memory URI) this store was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many transactions the writer committed for how many writes
    /// (`commits` well below `jobs` is group commit at work), counting
    /// every write of the stores sharing the writer (see [`open`](Self::open)).
    pub fn write_stats(&self) -> WriteStats {
        self.counters.snapshot()
    }

    /// [`Store::complete`] together with the application's own writes in
    /// this file: `work` runs on the writer thread, inside the transaction
    /// that settles the task, and what it returns becomes the task's
    /// result. Both commit together or not at all: when the lease is no
    /// longer `worker_id`'s (the task was reclaimed, canceled away or
    /// settled elsewhere) the call fails with [`Error::LostLease`] and
    /// `work`'s writes are rolled back with the settle; an error from
    /// `work` rolls them back too and settles nothing, and so does a panic
    /// in it, which the writer thread survives: the call answers with an
    /// error whose source is [`ClosurePanicked`](crate::ClosurePanicked).
    ///
    /// `work` runs once, synchronously, on the thread every write of this
    /// database waits for: keep it short (a few statements), and never
    /// `BEGIN`, `COMMIT` or open a savepoint of its own on the connection
    /// (it is inside a savepoint of the writer's transaction). A pending
    /// cancel wins as in `complete`: the task ends canceled, and `work`'s
    /// writes still commit.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> cairnq_core::Result<()> {
    /// use cairnq_core::store::ClaimDraw;
    /// use cairnq_core::{CairnQ, TaskStatus};
    /// use cairnq_sqlite::SqliteStore;
    ///
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let path = dir.path().join("app.db");
    /// let store = SqliteStore::open(&path).await?;
    /// let client = CairnQ::new(SqliteStore::open(&path).await?); // shares the writer
    /// let task = client.submit("bill", &serde_json::json!({"cents": 250})).await?;
    /// let w1 = client.worker_session("w1", std::time::Duration::from_secs(30))?;
    /// w1.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(1)], vec![]).await?;
    ///
    /// let id = task.id.clone();
    /// let done = store
    ///     .complete_with(&task.id, "w1", move |conn| {
    ///         conn.execute("create table if not exists invoices (task_id text primary key, cents int)", [])?;
    ///         conn.execute("insert into invoices values (?1, 250)", [&id])?;
    ///         Ok(serde_json::json!({"invoiced": 250}))
    ///     })
    ///     .await?;
    /// assert_eq!(done.status, TaskStatus::Succeeded);
    /// # Ok(()) }
    /// ```
    pub async fn complete_with<R, F>(&self, task_id: &str, worker_id: &str, work: F) -> Result<Task>
    where
        R: serde::Serialize,
        F: AppWrites<R>,
    {
        let params = SettleParams::new(task_id, worker_id);
        let (job, reply) = isolated_job(move |mut ctx: WriteCtx<'_>| {
            let result = app_writes::run(work, ctx.conn)?;
            let params = params.result(Json::encode(&result)?);
            let exec = SqliteExec::writing(&mut ctx);
            exec.run(flows::complete(&exec, &params))
        });
        self.send(job, reply).await
    }

    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        let (job, reply) = job(work);
        self.send(job, reply).await
    }

    async fn send<T>(&self, job: Box<dyn Job>, reply: oneshot::Receiver<Result<T>>) -> Result<T> {
        database::send(&self.database, job, reply).await
    }

    pub(crate) async fn read<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, i64) -> Result<T> + Send + 'static,
    {
        let (reply, receiver) = oneshot::channel();
        let sent = self.database.lock().as_ref().map(|db| {
            let clock = Arc::clone(db.clock());
            db.send_read(Box::new(move |conn| {
                let _ = reply.send(guarded(|| work(conn, clock.now_ms())).map_err(|e| explain(conn, e)));
            }))
        });
        if sent != Some(true) {
            return Err(Error::StoreClosed);
        }
        receiver.await.map_err(|_| Error::StoreClosed)?
    }
}

/// One write job on the writer thread: a flow of `cairnq_sql::flows` run on
/// the writer's connection inside its group commit.
macro_rules! write_flow {
    ($store:expr, $flow:ident, $params:expr) => {
        write_flow!($store, flows::$flow, $params)
    };
    ($store:expr, $module:ident :: $flow:ident, $params:expr) => {{
        let params = $params.clone();
        $store
            .write(move |mut ctx| {
                let exec = SqliteExec::writing(&mut ctx);
                exec.run($module::$flow(&exec, &params))
            })
            .await
    }};
}
pub(crate) use write_flow;

/// One read job on a reader thread.
macro_rules! read_job {
    ($store:expr, $read:path, $params:expr) => {{
        let params = $params.clone();
        $store.read(move |conn, now_ms| $read(conn, now_ms, &params)).await
    }};
}

#[async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none().with_push_wakeups(true)
    }

    async fn submit(&self, task: &NewTask) -> Result<Task> {
        if task.key.is_none() {
            return self.submits.call(task.clone()).await;
        }
        write_flow!(self, submit, task)
    }

    async fn submit_many(&self, params: &SubmitManyParams) -> Result<Vec<Task>> {
        write_flow!(self, submit_many, params)
    }

    async fn get(&self, params: &GetParams) -> Result<Option<Task>> {
        read_job!(self, read::get, params)
    }

    async fn get_status(&self, params: &GetParams) -> Result<Option<TaskRef>> {
        read_job!(self, read::get_status, params)
    }

    async fn list(&self, params: &ListFilter) -> Result<Vec<TaskRow>> {
        read_job!(self, read::list, params)
    }

    async fn stats(&self, params: &StatsParams) -> Result<Vec<TaskCount>> {
        read_job!(self, read::stats, params)
    }

    async fn count_queued(&self, params: &CountQueuedParams) -> Result<u64> {
        read_job!(self, read::count_queued, params)
    }

    async fn oldest_due(&self, params: &StatsParams) -> Result<Vec<QueueAge>> {
        read_job!(self, read::oldest_due, params)
    }

    async fn count_tasks(&self, params: &CountTasksParams) -> Result<u64> {
        read_job!(self, read::count_tasks, params)
    }

    async fn children(&self, params: &ChildrenParams) -> Result<Vec<TaskRow>> {
        read_job!(self, read::children, params)
    }

    async fn task_key(&self, params: &TaskKeyParams) -> Result<Option<String>> {
        read_job!(self, read::task_key, params)
    }

    async fn cancel(&self, params: &CancelParams) -> Result<Option<Task>> {
        write_flow!(self, cancel, params)
    }

    async fn retry(&self, params: &RetryParams) -> Result<Option<Task>> {
        write_flow!(self, retry, params)
    }

    async fn purge(&self, params: &PurgeFilter) -> Result<Vec<String>> {
        write_flow!(self, purge, params)
    }

    async fn purgeable(&self, params: &PurgeFilter) -> Result<Vec<TaskRow>> {
        read_job!(self, read::purgeable, params)
    }

    async fn claimable(&self, params: &ProbeParams) -> Result<bool> {
        read_job!(self, read::claimable, params)
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        let params = params.clone();
        self.write(move |mut ctx| limited::claim(&mut ctx, &params)).await
    }

    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task> {
        write_flow!(self, heartbeat, params)
    }

    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        write_flow!(self, heartbeat_batch, params)
    }

    async fn progress(&self, params: &ProgressParams) -> Result<Task> {
        write_flow!(self, progress, params)
    }

    async fn succeed(&self, params: &SettleParams) -> Result<Task> {
        write_flow!(self, succeed, params)
    }

    async fn complete(&self, params: &SettleParams) -> Result<Task> {
        write_flow!(self, complete, params)
    }

    async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        let params = params.clone();
        self.write(move |mut ctx| complete_batch(&mut ctx, &params)).await
    }

    async fn fail(&self, params: &FailParams) -> Result<Task> {
        write_flow!(self, fail, params)
    }

    async fn repair(&self, params: &RepairParams) -> Result<Repaired> {
        write_flow!(self, repair, params)
    }

    fn notifications(&self) -> Notifications {
        self.wakes.notifications()
    }

    fn schedule_store(&self) -> Option<&dyn ScheduleStore> {
        Some(self)
    }

    fn step_store(&self) -> Option<&dyn StepStore> {
        Some(self)
    }

    fn dependency_store(&self) -> Option<&dyn cairnq_core::store::DependencyStore> {
        Some(self)
    }

    async fn limits(&self, query: &LimitsQuery) -> Result<Vec<LimitRow>> {
        write_flow!(self, limits::limits, query)
    }

    async fn set_limit(&self, params: &SetLimitParams) -> Result<LimitRow> {
        write_flow!(self, limits::set_limit, params)
    }

    async fn remove_limit(&self, params: &RemoveLimitParams) -> Result<bool> {
        write_flow!(self, limits::remove_limit, params)
    }

    async fn limit_usage(&self, params: &LimitUsageParams) -> Result<LimitUsage> {
        write_flow!(self, limits::limit_usage, params)
    }

    async fn limit_wait(&self, params: &LimitWaitParams) -> Result<Option<i64>> {
        let params = params.clone();
        self.write(move |mut ctx| limited::limit_wait(&mut ctx, &params)).await
    }

    /// Closes this store: it takes no new work (calls fail with [`Error::StoreClosed`]);
    /// what it already sent still runs. Other stores on the same database (see
    /// [`SqliteStore::open`]) keep working. The last store to close stops the threads:
    /// it lets them finish what is queued and waits until every connection is closed
    /// (then a database in memory is gone). Dropping a store lets go the same way, without the wait.
    async fn close(&self) -> Result<()> {
        let database = self.database.lock().take();
        if let Some(last) = database.and_then(Arc::into_inner) {
            last.shutdown().await;
        }
        Ok(())
    }
}
