//! One open database and the threads that serve it: the writer (group
//! commit), the reader threads, the cross-process watcher, and the board
//! of in-process sleepers its commits wake.
//!
//! Every [`SqliteStore`](crate::SqliteStore) of this process on the same
//! database holds the same `Database` (see `registry`), so one writer
//! serves them all and its commits wake all their sleepers. The threads
//! end when the last holder lets go: [`Database::shutdown`] when a store's
//! `close` finds it was the last, or `Drop` (the threads then finish on
//! their own).
//!
//! A database in memory gets the writer alone: it serves reads too (a
//! second connection to `:memory:` would be a second, empty database), and
//! no watcher runs (no other process can reach it).

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use cairnq_core::{Clock, Error, Result};
use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::commit_watcher::{CommitWatch, ShmHeader, run_watcher};
use crate::group_commit::{Counters, Job, Work, WriterEnv, run_writer};
use crate::location::Location;
use crate::open::{open_reader, open_writer};
use crate::options::SqliteOptions;
use crate::reader::{ReadJob, run_reader};
use cairnq_core::backend::WakeBoard;

/// A store's way to its database's threads: `None` once the store is
/// closed (other stores on the database keep their own).
pub(crate) type Handle = Arc<Mutex<Option<Arc<Database>>>>;

/// Sends `job` to the writer through `handle` and waits for its outcome.
pub(crate) async fn send<T>(handle: &Handle, job: Box<dyn Job>, reply: oneshot::Receiver<Result<T>>) -> Result<T> {
    // Sent under the lock: a concurrent close sees this handle or the write queued.
    let sent = handle.lock().as_ref().map(|db| db.send_write(job));
    if sent != Some(true) {
        return Err(Error::StoreClosed);
    }
    reply.await.map_err(|_| Error::StoreClosed)?
}

/// The threads of one open database, shared by its stores in this process.
pub(crate) struct Database {
    /// `None` once shut down.
    writer: Option<mpsc::Sender<Work>>,
    /// The reader threads; `None` in memory, where the writer reads.
    readers: Option<mpsc::Sender<ReadJob>>,
    /// Answered when the writer thread has ended.
    writer_exit: Vec<oneshot::Receiver<()>>,
    /// One receiver per reader and watcher thread, answered when it ended.
    exits: Vec<oneshot::Receiver<()>>,
    wakes: Arc<WakeBoard>,
    /// The cross-process watcher's sleepers, when it runs.
    watch: Option<Arc<CommitWatch>>,
    counters: Arc<Counters>,
    /// The first opener's clock: every store on this database reads "now"
    /// from the clock its writes use.
    clock: Arc<dyn Clock>,
}

impl Drop for Database {
    fn drop(&mut self) {
        // The watcher thread holds no sender to notice it is unused.
        if let Some(watch) = &self.watch {
            watch.close();
        }
    }
}

impl Database {
    /// Starts the threads, each with its own connection: the writer first
    /// (it migrates the file), then the readers and the watcher of a file.
    pub(crate) async fn open(location: &Location, options: &SqliteOptions) -> Result<Self> {
        let file = location.file();
        let watch = options.watch_interval.filter(|_| file.is_some()).map(|_| Arc::new(CommitWatch::default()));
        let wakes = Arc::new(match &watch {
            Some(watch) => WakeBoard::with_source(Arc::clone(watch) as _),
            None => WakeBoard::new(),
        });
        let counters = Arc::new(Counters::default());
        let (mut writer_exit, mut exits) = (Vec::new(), Vec::new());
        let writer = spawn_writer(location, options, &wakes, &counters, &mut writer_exit).await?;
        let readers = match file {
            Some(path) => Some(spawn_readers(path, options, &mut exits).await?),
            None => None,
        };
        if let (Some(path), Some(watch), Some(interval)) = (file, &watch, options.watch_interval) {
            spawn_watcher(path, options, watch, interval, &mut exits).await?;
        }
        let clock = Arc::clone(&options.clock);
        Ok(Self { writer: Some(writer), readers, writer_exit, exits, wakes, watch, counters, clock })
    }

    /// Hands a write to the writer; `false` when it has ended.
    pub(crate) fn send_write(&self, job: Box<dyn Job>) -> bool {
        self.writer.as_ref().is_some_and(|w| w.send(Work::Write(job)).is_ok())
    }

    /// Hands a read to a free reader thread (to the writer in memory);
    /// `false` when the threads have ended.
    pub(crate) fn send_read(&self, job: ReadJob) -> bool {
        match (&self.readers, &self.writer) {
            (Some(readers), _) => readers.send(job).is_ok(),
            (None, Some(writer)) => writer.send(Work::Read(job)).is_ok(),
            (None, None) => false,
        }
    }

    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub(crate) fn wakes(&self) -> &Arc<WakeBoard> {
        &self.wakes
    }

    pub(crate) fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Stops taking work, lets every thread finish what it was sent, and
    /// waits until every connection is closed: the readers' and the
    /// watcher's first, the writer's last and alone. SQLite checkpoints
    /// and removes the `-wal` file only when the connection closing is
    /// the file's last; connections closing together can each find
    /// another still open, and the file stays behind until the next open.
    pub(crate) async fn shutdown(mut self) {
        self.readers.take();
        if let Some(watch) = &self.watch {
            watch.close();
        }
        for exit in std::mem::take(&mut self.exits) {
            let _ = exit.await;
        }
        self.writer.take();
        for exit in std::mem::take(&mut self.writer_exit) {
            let _ = exit.await;
        }
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
/// that thread serving writes (and, in memory, reads).
async fn spawn_writer(
    location: &Location,
    options: &SqliteOptions,
    wakes: &Arc<WakeBoard>,
    counters: &Arc<Counters>,
    exits: &mut Vec<oneshot::Receiver<()>>,
) -> Result<mpsc::Sender<Work>> {
    let (sender, work) = mpsc::channel();
    let (location, options) = (location.clone(), options.clone());
    let env = WriterEnv {
        clock: Arc::clone(&options.clock),
        wakes: Arc::clone(wakes),
        counters: Arc::clone(counters),
        max_batch: options.max_batch,
    };
    let waits = Arc::clone(&counters.lock);
    let open = move || open_writer(&location, &options, waits);
    spawn_connection("cairnq-sqlite-writer".into(), exits, open, move |conn| run_writer(conn, work, env)).await?;
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
