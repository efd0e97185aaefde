//! Arguments bound as the store binds them, for the benchmark that
//! measures the floor beneath the store (`cairnq-bench`'s
//! `raw_burn_down`, `raw_submit`): it runs the protocol's statements
//! straight through tokio-postgres, and binding through the store's own
//! `PgArg` (the store's own binder) keeps the wire encoding (integer widths, jsonb) the same as
//! the engine's. Hidden from the docs: not an API for applications.

use cairnq_sql::Arg;
use tokio_postgres::types::ToSql;

use crate::sql::PgArg;

/// `arg` as a statement parameter of whatever type it was prepared with.
#[doc(hidden)]
pub fn bind(arg: &Arg) -> impl ToSql + Sync + '_ {
    PgArg(arg)
}
