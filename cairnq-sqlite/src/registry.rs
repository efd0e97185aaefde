//! The process-wide registry of open databases: a second
//! [`SqliteStore::open`](crate::SqliteStore::open) of a database this
//! process already has open gets the first one's [`Database`] (its writer
//! thread, group commit, readers and wakeups) instead of a writer of its
//! own that would contend with the first for SQLite's one write lock.
//!
//! A file is known by its canonical path (symbolic links and `.`/`..`
//! resolved; hard links and bind mounts are not, and get writers of their
//! own, which is only slower), a shared-cache database in memory by its
//! name. A private database in memory (`:memory:`) is never shared: each
//! open is a database of its own.
//!
//! Entries hold the database weakly: the registry never keeps a database
//! open. Opens of one key go through that key's gate one at a time, so two
//! stores opening a new file together still end up on one writer.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};

use cairnq_core::{Error, Result};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::database::Database;
use crate::location::{Key, Location, canonical_file};
use crate::options::SqliteOptions;

/// One key's gate: held while its database is looked up or opened.
type Gate = tokio::sync::Mutex<Weak<Database>>;

static OPEN: LazyLock<Mutex<HashMap<Key, Arc<Gate>>>> = LazyLock::new(Mutex::default);

/// The database at `location`: the one this process already has open, or
/// a new one opened with `options` (whose settings then hold for every
/// store that shares it).
pub(crate) async fn database(location: &Location, options: &SqliteOptions) -> Result<Arc<Database>> {
    let Some(key) = key(location).await? else {
        return Database::open(location, options).await.map(Arc::new);
    };
    let gate = {
        let mut open = OPEN.lock();
        // Forget keys nobody holds open and nobody is opening.
        open.retain(|_, gate| Arc::strong_count(gate) > 1 || gate.try_lock().is_ok_and(|db| db.strong_count() > 0));
        Arc::clone(open.entry(key).or_default())
    };
    let mut shared = gate.lock().await;
    if let Some(database) = shared.upgrade() {
        return Ok(database);
    }
    let database = Arc::new(Database::open(location, options).await?);
    *shared = Arc::downgrade(&database);
    Ok(database)
}

/// The registry key, `None` for a database nothing else may share (a
/// private one in memory, or a file whose directory cannot be resolved:
/// opening it fails and names the cause).
async fn key(location: &Location) -> Result<Option<Key>> {
    match location {
        Location::Memory { shared, .. } => Ok(shared.clone().map(Key::Memory)),
        Location::File(path) => {
            // Resolving a path makes blocking file-system calls: not on
            // the async runtime.
            let (path, (reply, resolved)) = (path.clone(), oneshot::channel());
            std::thread::Builder::new()
                .name("cairnq-sqlite-open".into())
                .spawn(move || {
                    let _ = reply.send(canonical_file(&path));
                })
                .map_err(|e| Error::storage("cannot start a SQLite thread", e))?;
            Ok(resolved.await.map_err(|_| Error::StoreClosed)?.map(Key::File))
        }
    }
}
