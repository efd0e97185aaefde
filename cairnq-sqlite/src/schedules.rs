//! Schedules on SQLite ([`ScheduleStore`]): the shared flows of
//! `cairnq_sql::schedules`, every one on the writer.

use async_trait::async_trait;
use cairnq_core::store::{
    DeleteScheduleParams, FireScheduleParams, PauseScheduleParams, SaveScheduleParams, ScheduleQuery, ScheduleRead,
    ScheduleRow, ScheduleStore,
};
use cairnq_core::{Result, Task};
use cairnq_sql::schedules;

use crate::exec::SqliteExec;
use crate::store::{SqliteStore, write_flow};

#[async_trait]
impl ScheduleStore for SqliteStore {
    // Schedules run on the writer: a due check is one indexed read, and a
    // fire's compare-and-set and submits must be one write transaction.
    async fn schedules(&self, params: &ScheduleQuery) -> Result<ScheduleRead> {
        write_flow!(self, schedules::schedules, params)
    }

    async fn save_schedule(&self, params: &SaveScheduleParams) -> Result<ScheduleRow> {
        write_flow!(self, schedules::save_schedule, params)
    }

    async fn pause_schedule(&self, params: &PauseScheduleParams) -> Result<Option<ScheduleRow>> {
        write_flow!(self, schedules::pause_schedule, params)
    }

    async fn delete_schedule(&self, params: &DeleteScheduleParams) -> Result<bool> {
        write_flow!(self, schedules::delete_schedule, params)
    }

    async fn fire_schedule(&self, params: &FireScheduleParams) -> Result<Option<Vec<Task>>> {
        write_flow!(self, schedules::fire_schedule, params)
    }
}
