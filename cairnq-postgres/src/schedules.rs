//! Schedules on Postgres ([`ScheduleStore`]): the shared flows of
//! `cairnq_sql::schedules`, each on a pooled connection but a fire, whose
//! compare-and-set and submits commit together or not at all.

use async_trait::async_trait;
use cairnq_core::store::{
    DeleteScheduleParams, FireScheduleParams, PauseScheduleParams, SaveScheduleParams, ScheduleQuery, ScheduleRead,
    ScheduleRow, ScheduleStore,
};
use cairnq_core::{Result, Task};
use cairnq_sql::schedules;

use crate::flows::PgExec;
use crate::store::{PostgresStore, in_transaction, on_connection};

#[async_trait]
impl ScheduleStore for PostgresStore {
    async fn schedules(&self, params: &ScheduleQuery) -> Result<ScheduleRead> {
        on_connection!(self, schedules::schedules, params)
    }

    async fn save_schedule(&self, params: &SaveScheduleParams) -> Result<ScheduleRow> {
        on_connection!(self, schedules::save_schedule, params)
    }

    async fn pause_schedule(&self, params: &PauseScheduleParams) -> Result<Option<ScheduleRow>> {
        on_connection!(self, schedules::pause_schedule, params)
    }

    async fn delete_schedule(&self, params: &DeleteScheduleParams) -> Result<bool> {
        on_connection!(self, schedules::delete_schedule, params)
    }

    // The compare-and-set and the submits commit together or not at all.
    async fn fire_schedule(&self, params: &FireScheduleParams) -> Result<Option<Vec<Task>>> {
        in_transaction!(self, schedules::fire_schedule, params)
    }
}
