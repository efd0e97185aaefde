//! Durable steps on SQLite ([`StepStore`]): the shared flows of
//! `cairnq_sql::steps`, reads on a reader thread and the
//! ownership-checked write on the writer. A file another SDK installed and
//! opened with `Install::Existing` may lack the steps table (extension
//! `ext_0009_steps`): there both operations answer `UnsupportedBackend`
//! (the client then shows no steps, and a handler's step fails before it
//! runs), as a Postgres store without the table offers no step store.

use async_trait::async_trait;
use cairnq_core::store::{SaveStepParams, StepStore, StepsParams};
use cairnq_core::{Error, Result, Step};
use cairnq_sql::steps::{self, STEPS_TABLE};
use cairnq_sql::{Query, Sql};
use rusqlite::Connection;

use crate::exec::SqliteExec;
use crate::sql::query_int;
use crate::store::SqliteStore;

/// Whether the file has the steps table (a lookup in the in-memory schema,
/// asked on every call, so a file migrated meanwhile is seen at once).
fn has_steps(conn: &Connection) -> Result<bool> {
    Ok(query_int(conn, &Query::new(Sql::TableExists).arg("table", STEPS_TABLE))? != 0)
}

#[async_trait]
impl StepStore for SqliteStore {
    async fn steps(&self, params: &StepsParams) -> Result<Vec<Step>> {
        let params = params.clone();
        self.read(move |conn, now_ms| {
            if !has_steps(conn)? {
                return Err(Error::UnsupportedBackend { operation: "steps", backend: "sqlite" });
            }
            let exec = SqliteExec::reading(conn, now_ms);
            exec.run(steps::steps(&exec, &params))
        })
        .await
    }

    async fn save_step(&self, params: &SaveStepParams) -> Result<Step> {
        let params = params.clone();
        self.write(move |mut ctx| {
            if !has_steps(ctx.conn)? {
                return Err(Error::UnsupportedBackend { operation: "save_step", backend: "sqlite" });
            }
            let exec = SqliteExec::writing(&mut ctx);
            exec.run(steps::save_step(&exec, &params))
        })
        .await
    }
}
