//! Task dependencies on SQLite (extension ext_0008): the shared flows of
//! `cairnq_sql::after`, a submit (and a handler's fan-out) on the writer
//! (one transaction with the insert), reads on reader threads. The release is the
//! migration's trigger, so nothing here runs when a dependency settles.

use async_trait::async_trait;
use cairnq_core::store::{
    DependenciesParams, DependencyStore, FanOut, FanOutParams, SubmitAfterParams, TaskRow, TaskWaitsParams,
};
use cairnq_core::{Result, Task, TaskWait};
use cairnq_sql::{after, fan_out};

use crate::exec::SqliteExec;
use crate::store::SqliteStore;

#[async_trait]
impl DependencyStore for SqliteStore {
    async fn submit_after(&self, params: &SubmitAfterParams) -> Result<Task> {
        let params = params.clone();
        self.write(move |mut ctx| {
            let exec = SqliteExec::writing(&mut ctx);
            exec.run(after::submit_after(&exec, &params))
        })
        .await
    }

    async fn complete_with_fan_out(&self, params: &FanOutParams) -> Result<FanOut> {
        // One writer job: the settle, the children and the join commit
        // together, or (a failed job is rolled back) not at all.
        let params = params.clone();
        self.write(move |mut ctx| {
            let exec = SqliteExec::writing(&mut ctx);
            exec.run(fan_out::complete_with_fan_out(&exec, &params))
        })
        .await
    }

    async fn dependencies(&self, params: &DependenciesParams) -> Result<Vec<TaskRow>> {
        let params = params.clone();
        self.read(move |conn, now_ms| {
            let exec = SqliteExec::reading(conn, now_ms);
            exec.run(after::dependencies(&exec, &params))
        })
        .await
    }

    async fn task_waits(&self, params: &TaskWaitsParams) -> Result<Vec<TaskWait>> {
        let params = params.clone();
        self.read(move |conn, now_ms| {
            let exec = SqliteExec::reading(conn, now_ms);
            exec.run(after::task_waits(&exec, &params))
        })
        .await
    }
}
