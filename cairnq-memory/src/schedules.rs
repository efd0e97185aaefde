//! The schedule operations of [`MemoryStore`](super::MemoryStore): the rows
//! in a map of their own, behind a lock held across a whole fire, so the
//! compare-and-set and the submits happen together (the task write runs as
//! one tables transaction; the schedule moves only once it committed).

use std::collections::BTreeMap;

use cairnq_core::Result;
use cairnq_core::store::{
    DeleteScheduleParams, FireScheduleParams, PauseScheduleParams, SaveScheduleParams, ScheduleQuery, ScheduleRead,
    ScheduleRow,
};

use super::{MemoryStore, task_ops};

pub(super) type Schedules = BTreeMap<String, ScheduleRow>;

impl MemoryStore {
    fn now(&self) -> Result<i64> {
        self.read(|_, now_ms| Ok(now_ms))
    }

    fn schedule_rows(&self) -> std::sync::MutexGuard<'_, Schedules> {
        self.schedules.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn read_schedules(&self, query: &ScheduleQuery) -> Result<ScheduleRead> {
        let now_ms = self.now()?;
        let rows = self
            .schedule_rows()
            .values()
            .filter(|r| query.name.as_ref().is_none_or(|n| *n == r.name))
            .filter(|r| !query.due || (!r.paused && r.next_fire_ms <= now_ms))
            .cloned()
            .collect();
        Ok(ScheduleRead::new(now_ms, rows))
    }

    pub(super) fn upsert_schedule(&self, params: &SaveScheduleParams) -> Result<ScheduleRow> {
        let now_ms = self.now()?;
        let mut rows = self.schedule_rows();
        let mut row = params.row.clone();
        row.updated_at_ms = now_ms;
        row.created_at_ms = now_ms;
        if let Some(old) = rows.get(&row.name) {
            if old.spec == row.spec && old.tz == row.tz {
                row.next_fire_ms = old.next_fire_ms;
            }
            row.created_at_ms = old.created_at_ms;
            row.paused = old.paused;
            row.last_slot_ms = old.last_slot_ms;
            row.missed = old.missed;
        }
        rows.insert(row.name.clone(), row.clone());
        Ok(row)
    }

    pub(super) fn set_schedule_paused(&self, params: &PauseScheduleParams) -> Result<Option<ScheduleRow>> {
        let now_ms = self.now()?;
        let mut rows = self.schedule_rows();
        let Some(row) = rows.get_mut(&params.name) else { return Ok(None) };
        row.paused = params.paused;
        row.next_fire_ms = params.next_fire_ms.unwrap_or(row.next_fire_ms);
        row.updated_at_ms = now_ms;
        Ok(Some(row.clone()))
    }

    pub(super) fn remove_schedule(&self, params: &DeleteScheduleParams) -> Result<bool> {
        self.now()?;
        Ok(self.schedule_rows().remove(&params.name).is_some())
    }

    pub(super) fn fire(&self, params: &FireScheduleParams) -> Result<Option<Vec<cairnq_core::Task>>> {
        let mut rows = self.schedule_rows();
        let Some(row) = rows.get_mut(&params.name) else { return Ok(None) };
        if row.next_fire_ms != params.expected_ms || (params.unpaused_only && row.paused) {
            return Ok(None);
        }
        let fired = self.write(|txn| params.tasks.iter().map(|task| task_ops::submit(txn, task)).collect())?;
        row.next_fire_ms = params.next_fire_ms;
        row.last_slot_ms = params.last_slot_ms.or(row.last_slot_ms);
        row.missed += params.missed;
        row.updated_at_ms = self.now()?;
        Ok(Some(fired))
    }
}
