//! The writer's connection, for the benchmark that measures the floor
//! beneath the store (`cairnq-bench`'s `raw_burn_down`, `raw_submit`): the
//! protocol's statements run straight through rusqlite on a connection
//! opened exactly as the store's writer opens its own (durability, page
//! cache, statement cache, busy timeout), so the gap it reports is the
//! store's and the worker's, not a difference in settings. Hidden from the
//! docs: not an API for applications.

use std::path::Path;

use cairnq_core::Result;
use rusqlite::Connection;

use crate::SqliteOptions;
use crate::open::connect_file;

/// A connection to the database at `path` with the settings `options`
/// give the store's writer. Opens an installed file only: it migrates
/// nothing and does not switch the journal mode (WAL stays on a file a
/// store opened once).
#[doc(hidden)]
pub fn writer_connection(path: &Path, options: &SqliteOptions) -> Result<Connection> {
    connect_file(path, options)
}
