//! Durable steps on Postgres ([`StepStore`]): the shared flows of
//! `cairnq_sql::steps`, each one statement on a pooled
//! connection (the write share-locks the task row it checks, so the check
//! holds until it commits). Offered only where the database has the steps
//! table (extension `ext_0009_steps`, looked for at connect): an
//! installation another SDK made, opened with `Install::Existing`, may
//! lack it.

use async_trait::async_trait;
use cairnq_core::store::{SaveStepParams, StepStore, StepsParams};
use cairnq_core::{Result, Step};
use cairnq_sql::steps;

use crate::flows::PgExec;
use crate::store::PostgresStore;
use crate::write::check_jsonb;

#[async_trait]
impl StepStore for PostgresStore {
    async fn steps(&self, params: &StepsParams) -> Result<Vec<Step>> {
        steps::steps(&PgExec(&self.client().await?), params).await
    }

    async fn save_step(&self, params: &SaveStepParams) -> Result<Step> {
        if let Some(result) = &params.result {
            check_jsonb("result", result)?;
        }
        if let Some(error) = &params.error {
            check_jsonb("error", error)?;
        }
        steps::save_step(&PgExec(&self.client().await?), params).await
    }
}
