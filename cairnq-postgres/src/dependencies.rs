//! Task dependencies on Postgres (extension ext_0008): the shared flows
//! of `cairnq_sql::after`, a submit (and a handler's fan-out) in a
//! transaction of its own
//! (the dependencies share-locked, the insert, the edges), reads on a
//! pooled connection. The release is the migration's trigger, so nothing
//! here runs when a dependency settles.

use async_trait::async_trait;
use cairnq_core::store::{
    DependenciesParams, DependencyStore, FanOut, FanOutParams, SubmitAfterParams, TaskRow, TaskWaitsParams,
};
use cairnq_core::{Result, Task, TaskWait};
use cairnq_sql::{after, fan_out};

use crate::flows::PgExec;
use crate::store::PostgresStore;
use crate::write::{check_json, check_jsonb};

#[async_trait]
impl DependencyStore for PostgresStore {
    async fn submit_after(&self, params: &SubmitAfterParams) -> Result<Task> {
        check_json(&params.task)?;
        let mut client = self.client().await?;
        let tx = client.begin().await?;
        let task = after::submit_after(&PgExec(&tx), params).await?;
        tx.commit().await?;
        Ok(task)
    }

    async fn complete_with_fan_out(&self, params: &FanOutParams) -> Result<FanOut> {
        // Everything jsonb cannot hold is refused before the transaction.
        check_jsonb("result", &params.settle.result)?;
        params.children.iter().chain(std::iter::once(&params.join.task)).try_for_each(check_json)?;
        let mut client = self.client().await?;
        let tx = client.begin().await?;
        let written = fan_out::complete_with_fan_out(&PgExec(&tx), params).await?;
        tx.commit().await?;
        Ok(written)
    }

    async fn dependencies(&self, params: &DependenciesParams) -> Result<Vec<TaskRow>> {
        after::dependencies(&PgExec(&self.client().await?), params).await
    }

    async fn task_waits(&self, params: &TaskWaitsParams) -> Result<Vec<TaskWait>> {
        after::task_waits(&PgExec(&self.client().await?), params).await
    }
}
