//! Reader threads: get/list/stats/probe/count run on their own connections,
//! so a read never queues behind a write (WAL lets readers see the last
//! commit while the writer works). A database in memory has none: another
//! connection would be another database, so its writer reads.

use std::sync::Arc;
use std::sync::mpsc;

use parking_lot::Mutex;
use rusqlite::Connection;

/// A read, run on whichever reader thread is free.
pub(crate) type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

/// Serves reads from a shared queue until every sender is gone.
pub(crate) fn run_reader(conn: Connection, jobs: Arc<Mutex<mpsc::Receiver<ReadJob>>>) {
    loop {
        // The lock is held only while waiting for the next job.
        let next = jobs.lock().recv();
        match next {
            Ok(job) => job(&conn),
            Err(_) => return,
        }
    }
}
