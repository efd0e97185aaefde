//! [`SqliteStore`]: the [`Store`] seam over the writer and reader threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use async_trait::async_trait;
use cairnq_core::backend::flows;
use cairnq_core::store::{
    CancelParams, ClaimParams, CompleteBatchParams, CountQueuedParams, FailParams, GetParams, HeartbeatBatchParams,
    HeartbeatParams, ListFilter, NewTask, ProbeParams, ProgressParams, PurgeFilter, RepairParams, Repaired,
    RetryParams, SettleParams, StatsParams, SubmitManyParams, TaskRow,
};
use cairnq_core::{Capabilities, ChangeWatch, Clock, Error, HeldLease, Result, Store, Task, TaskCount, TaskRef, Wake};
use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::commit_watcher::{CommitWatch, ShmHeader, run_watcher};
use crate::error::{explain, guarded};
use crate::exec::{SqliteExec, complete_batch};
use crate::group_commit::{Counters, Job, WriteCtx, WriteStats, WriterEnv, job, run_writer};
use crate::local_wakeups::WakeBoard;
use crate::open::{open_reader, open_writer};
use crate::options::SqliteOptions;
use crate::read;
use crate::reader::{ReadJob, run_reader};

/// A cairnq store in one SQLite file, shared with every other process and
/// SDK that opens the same file.
///
/// Writes go through one writer thread with group commit; reads run on
/// their own reader threads. Nothing here blocks the async runtime.
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
    path: PathBuf,
    clock: Arc<dyn Clock>,
    writer: Mutex<Option<mpsc::Sender<Box<dyn Job>>>>,
    readers: Mutex<Option<mpsc::Sender<ReadJob>>>,
    /// One receiver per thread, answered when the thread has ended.
    exits: Mutex<Vec<oneshot::Receiver<()>>>,
    wakes: Arc<WakeBoard>,
    /// The cross-process watcher's sleepers, when it runs.
    watch: Option<Arc<CommitWatch>>,
    counters: Arc<Counters>,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // The watcher thread holds no sender to notice it is unused.
        if let Some(watch) = &self.watch {
            watch.close();
        }
    }
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
    /// Fails with [`Error::ProtocolVersionMismatch`] (writing nothing) when
    /// the file belongs to another protocol version, and with
    /// [`Error::Unusable`] when SQLite cannot use the file: the message
    /// starts with the path and the cause found on the file system (a
    /// directory, a missing or read-only directory where SQLite must create
    /// the `-wal` and `-shm` files, a read-only file, a file that is not a
    /// SQLite database), then SQLite's own words.
    ///
    /// A file this process may read but not write opens (SQLite falls back
    /// to read-only): reads work, and every write fails with
    /// [`Error::Unusable`] naming the read-only file.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`open`](Self::open) with options.
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let watch = options.watch_interval.map(|_| Arc::new(CommitWatch::default()));
        let wakes = Arc::new(WakeBoard::new(watch.clone()));
        let counters = Arc::new(Counters::default());
        let mut exits = Vec::new();
        let writer = spawn_writer(&path, &options, &wakes, &counters, &mut exits).await?;
        let readers = spawn_readers(&path, &options, &mut exits).await?;
        if let (Some(watch), Some(interval)) = (&watch, options.watch_interval) {
            spawn_watcher(&path, &options, watch, interval, &mut exits).await?;
        }
        Ok(Self {
            path,
            clock: options.clock,
            writer: Mutex::new(Some(writer)),
            readers: Mutex::new(Some(readers)),
            exits: Mutex::new(exits),
            wakes,
            watch,
            counters,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many transactions the writer committed for how many writes.
    /// With concurrent writers `commits` stays well below `jobs`: that is
    /// group commit at work.
    pub fn write_stats(&self) -> WriteStats {
        self.counters.snapshot()
    }

    async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(WriteCtx<'_>) -> Result<T> + Send + 'static,
    {
        let (job, reply) = job(work);
        let sent = self.writer.lock().as_ref().map(|w| w.send(job).is_ok());
        if sent != Some(true) {
            return Err(Error::StoreClosed);
        }
        reply.await.map_err(|_| Error::StoreClosed)?
    }

    async fn read<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, i64) -> Result<T> + Send + 'static,
    {
        let (reply, receiver) = oneshot::channel();
        let clock = Arc::clone(&self.clock);
        let job: ReadJob = Box::new(move |conn| {
            let _ = reply.send(guarded(|| work(conn, clock.now_ms())).map_err(|e| explain(conn, e)));
        });
        let sent = self.readers.lock().as_ref().map(|r| r.send(job).is_ok());
        if sent != Some(true) {
            return Err(Error::StoreClosed);
        }
        receiver.await.map_err(|_| Error::StoreClosed)?
    }
}

/// Starts a named thread that opens a connection, reports whether that
/// worked, then serves with it; `exits` hears when the thread has ended.
async fn spawn_connection(
    name: String,
    exits: &mut Vec<oneshot::Receiver<()>>,
    open: impl FnOnce() -> Result<Connection> + Send + 'static,
    serve: impl FnOnce(Connection) + Send + 'static,
) -> Result<()> {
    let (ready, opened) = oneshot::channel();
    let (exited, on_exit) = oneshot::channel();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            match open() {
                Ok(conn) => {
                    let _ = ready.send(Ok(()));
                    serve(conn);
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                }
            }
            let _ = exited.send(());
        })
        .map_err(|e| Error::storage("cannot start a SQLite thread", e))?;
    exits.push(on_exit);
    opened.await.map_err(|_| Error::StoreClosed)?
}

/// Opens and migrates the writer connection on its own thread, then keeps
/// that thread serving writes.
async fn spawn_writer(
    path: &Path,
    options: &SqliteOptions,
    wakes: &Arc<WakeBoard>,
    counters: &Arc<Counters>,
    exits: &mut Vec<oneshot::Receiver<()>>,
) -> Result<mpsc::Sender<Box<dyn Job>>> {
    let (sender, jobs) = mpsc::channel();
    let (path, options) = (path.to_path_buf(), options.clone());
    let env = WriterEnv {
        clock: Arc::clone(&options.clock),
        wakes: Arc::clone(wakes),
        counters: Arc::clone(counters),
        max_batch: options.max_batch,
    };
    let open = move || open_writer(&path, &options);
    spawn_connection("cairnq-sqlite-writer".into(), exits, open, move |conn| run_writer(conn, jobs, env)).await?;
    Ok(sender)
}

/// Opens every reader connection (after the writer migrated the file).
async fn spawn_readers(
    path: &Path,
    options: &SqliteOptions,
    exits: &mut Vec<oneshot::Receiver<()>>,
) -> Result<mpsc::Sender<ReadJob>> {
    let (sender, jobs) = mpsc::channel();
    let jobs = Arc::new(Mutex::new(jobs));
    for index in 0..options.readers.max(1) {
        let (path, options, jobs) = (path.to_path_buf(), options.clone(), Arc::clone(&jobs));
        let open = move || open_reader(&path, &options);
        spawn_connection(format!("cairnq-sqlite-reader-{index}"), exits, open, move |conn| run_reader(conn, jobs))
            .await?;
    }
    Ok(sender)
}

/// Opens the watcher's own connection and starts the cross-process watcher.
async fn spawn_watcher(
    path: &Path,
    options: &SqliteOptions,
    watch: &Arc<CommitWatch>,
    interval: Duration,
    exits: &mut Vec<oneshot::Receiver<()>>,
) -> Result<()> {
    let (path, options, watch) = (path.to_path_buf(), options.clone(), Arc::clone(watch));
    let shm = ShmHeader::of(&path);
    let open = move || open_reader(&path, &options);
    spawn_connection("cairnq-sqlite-watcher".into(), exits, open, move |conn| run_watcher(conn, shm, watch, interval))
        .await
}

/// One write job on the writer thread: a flow of `backend::flows` run on
/// the writer's connection inside its group commit.
macro_rules! write_flow {
    ($store:expr, $flow:ident, $params:expr) => {{
        let params = $params.clone();
        $store
            .write(move |mut ctx| {
                let exec = SqliteExec::writing(&mut ctx);
                exec.run(flows::$flow(&exec, &params))
            })
            .await
    }};
}

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

    async fn cancel(&self, params: &CancelParams) -> Result<Option<Task>> {
        write_flow!(self, cancel, params)
    }

    async fn retry(&self, params: &RetryParams) -> Result<Option<Task>> {
        write_flow!(self, retry, params)
    }

    async fn purge(&self, params: &PurgeFilter) -> Result<Vec<String>> {
        write_flow!(self, purge, params)
    }

    async fn claimable(&self, params: &ProbeParams) -> Result<bool> {
        read_job!(self, read::claimable, params)
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        write_flow!(self, claim, params)
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

    fn watch_for_change(&self, wake: &Wake) -> ChangeWatch {
        self.wakes.watch(wake)
    }

    /// Stops taking new work, lets the threads finish what is queued, and
    /// waits until every connection is closed.
    async fn close(&self) -> Result<()> {
        self.writer.lock().take();
        self.readers.lock().take();
        if let Some(watch) = &self.watch {
            watch.close();
        }
        let exits = std::mem::take(&mut *self.exits.lock());
        for exit in exits {
            let _ = exit.await;
        }
        Ok(())
    }
}
