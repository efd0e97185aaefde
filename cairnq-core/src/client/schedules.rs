//! Schedules through the client: save, read, pause, resume, trigger,
//! delete, declare (a worker's code-owned set) and fire what is due. Every
//! decision is made here, above the seam, from the store's own clock; the
//! store only reads, writes and compare-and-sets.

use std::collections::BTreeSet;

use serde_json::Value;

use super::CairnQ;
use crate::SubmitOptions;
use crate::error::{Error, Result, could_not};
use crate::json::Json;
use crate::keys::Conflict;
use crate::model::Task;
use crate::observe;
use crate::schedule::{FirePlan, Overlap, Schedule, ScheduleInfo, ScheduleOwner, plan_fire, slot_key};
use crate::store::{
    DeleteScheduleParams, FireScheduleParams, NewTask, PauseScheduleParams, SaveScheduleParams, ScheduleQuery,
    ScheduleRow, ScheduleStore,
};

/// What one pass of [`CairnQ::fire_due_schedules`] did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct FireReport {
    /// The tasks this pass submitted.
    pub fired: Vec<Task>,
    /// Due schedules another process fired first (its compare-and-set won).
    pub lost: usize,
    /// Slots passed over by a policy.
    pub missed: u64,
    /// Schedules whose row could not be fired, with why (a spec this
    /// version cannot parse, a store error); the others still fired.
    pub failed: Vec<(String, Error)>,
}

/// What [`CairnQ::declare_schedules`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Declared {
    /// The schedules as stored after the upsert.
    pub saved: Vec<ScheduleInfo>,
    /// Code-owned schedules in the database that this set no longer
    /// declares: left in place (never deleted silently), for the caller to
    /// report.
    pub undeclared: Vec<String>,
}

impl CairnQ {
    /// Creates or updates a schedule (owned by the API). A new schedule, or
    /// a changed spec or zone, fires next at the first slot after the
    /// store's now; otherwise the stored next fire is kept.
    ///
    /// ```
    /// # async fn demo(client: cairnq_core::CairnQ) -> cairnq_core::Result<()> {
    /// use cairnq_core::Schedule;
    /// let saved = client.save_schedule(&Schedule::cron("nightly", "0 3 * * *", "report")?.tz("Europe/Berlin")?).await?;
    /// assert!(!saved.paused);
    /// # Ok(()) }
    /// ```
    pub async fn save_schedule(&self, schedule: &Schedule) -> Result<ScheduleInfo> {
        self.save_owned(schedule, ScheduleOwner::Api).await
    }

    async fn save_owned(&self, schedule: &Schedule, owner: ScheduleOwner) -> Result<ScheduleInfo> {
        schedule.to_row(owner, 0)?;
        let now_ms = self.schedule_store("schedules")?.schedules(&ScheduleQuery::named(&schedule.name)).await?.now_ms;
        let next = schedule.spec.next_after(now_ms)?.unwrap_or(i64::MAX);
        let row = self
            .schedule_store("save_schedule")?
            .save_schedule(&SaveScheduleParams::new(schedule.to_row(owner, next)?))
            .await?;
        ScheduleInfo::from_row(&row)
    }

    /// Upserts the schedules a worker declares in code (owner `code`);
    /// code-owned schedules it no longer declares are reported, not deleted.
    pub async fn declare_schedules(&self, schedules: &[Schedule]) -> Result<Declared> {
        let mut declared = Declared::default();
        for schedule in schedules {
            declared.saved.push(self.save_owned(schedule, ScheduleOwner::Code).await?);
        }
        let names: BTreeSet<&str> = schedules.iter().map(|s| s.name.as_str()).collect();
        let rows = self.schedule_store("schedules")?.schedules(&ScheduleQuery::all()).await?.rows;
        declared.undeclared = rows
            .into_iter()
            .filter(|r| r.owner == ScheduleOwner::Code && !names.contains(r.name.as_str()))
            .map(|r| r.name)
            .collect();
        Ok(declared)
    }

    /// Every schedule, by name. A row this version cannot read (a spec it
    /// cannot parse) is an error naming it.
    pub async fn schedules(&self) -> Result<Vec<ScheduleInfo>> {
        self.schedule_store("schedules")?
            .schedules(&ScheduleQuery::all())
            .await?
            .rows
            .iter()
            .map(ScheduleInfo::from_row)
            .collect()
    }

    /// One schedule, or `None`.
    pub async fn schedule(&self, name: &str) -> Result<Option<ScheduleInfo>> {
        self.named(name).await?.map(|row| ScheduleInfo::from_row(&row)).transpose()
    }

    /// Pauses a schedule (it stops firing); `None` when there is none.
    pub async fn pause_schedule(&self, name: &str) -> Result<Option<ScheduleInfo>> {
        let row = self.schedule_store("pause_schedule")?.pause_schedule(&PauseScheduleParams::pause(name)).await?;
        row.map(|row| ScheduleInfo::from_row(&row)).transpose()
    }

    /// Resumes a schedule; it fires next at the first slot after now (the
    /// slots while paused are not caught up). `None` when there is none.
    pub async fn resume_schedule(&self, name: &str) -> Result<Option<ScheduleInfo>> {
        let read = self.schedule_store("schedules")?.schedules(&ScheduleQuery::named(name)).await?;
        let Some(row) = read.rows.first() else { return Ok(None) };
        let info = ScheduleInfo::from_row(row)?;
        let next = info.schedule.spec.next_after(read.now_ms)?.unwrap_or(i64::MAX);
        let params = PauseScheduleParams::resume(name).next_fire_ms(next);
        self.schedule_store("pause_schedule")?
            .pause_schedule(&params)
            .await?
            .map(|row| ScheduleInfo::from_row(&row))
            .transpose()
    }

    /// Deletes a schedule (its fired tasks stay); whether there was one.
    pub async fn delete_schedule(&self, name: &str) -> Result<bool> {
        self.schedule_store("delete_schedule")?.delete_schedule(&DeleteScheduleParams::new(name)).await
    }

    /// Fires a schedule now, once, paused or not, for the slot "now" (the
    /// store's clock); its regular slots are unchanged. `None` when there
    /// is no such schedule.
    pub async fn trigger_schedule(&self, name: &str) -> Result<Option<Task>> {
        // A regular fire may move the row between the read and the write;
        // the compare-and-set then fails and the trigger reads again.
        for _ in 0..5 {
            let read = self.schedule_store("schedules")?.schedules(&ScheduleQuery::named(name)).await?;
            let Some(row) = read.rows.first() else { return Ok(None) };
            let task = fired_task(row, read.now_ms, 0)?;
            let params = FireScheduleParams::new(name, row.next_fire_ms)
                .last_slot_ms(Some(read.now_ms).max(row.last_slot_ms))
                .even_paused()
                .tasks(vec![task]);
            if let Some(mut fired) = self.fire(params, 0).await? {
                return Ok(fired.pop());
            }
        }
        let message = could_not(&format!("trigger schedule {name}"), "regular fires kept moving it; try again");
        Err(Error::Storage { message, source: None, transient: false })
    }

    /// Fires every due schedule once (what a worker does on its timer):
    /// each in its own transaction that wins its slot or changes nothing.
    /// Applications without a worker may call it on a timer of their own.
    pub async fn fire_due_schedules(&self) -> Result<FireReport> {
        let read = self.schedule_store("schedules")?.schedules(&ScheduleQuery::due()).await?;
        let mut report = FireReport::default();
        for row in &read.rows {
            match self.fire_one(row, read.now_ms).await {
                Ok(Some((tasks, missed))) => {
                    report.fired.extend(tasks);
                    report.missed += missed;
                }
                Ok(None) => report.lost += 1,
                Err(error) => report.failed.push((row.name.clone(), error)),
            }
        }
        Ok(report)
    }

    async fn fire_one(&self, row: &ScheduleRow, now_ms: i64) -> Result<Option<(Vec<Task>, u64)>> {
        let info = ScheduleInfo::from_row(row)?;
        let blocked = match (info.schedule.overlap, row.last_slot_ms) {
            (Overlap::Skip, Some(slot)) => self.is_live(&slot_key(&row.name, slot)).await?,
            _ => false,
        };
        let plan: FirePlan = plan_fire(&info.schedule.spec, info.schedule.catch_up, row.next_fire_ms, now_ms, blocked)?;
        let tasks = plan.slots.iter().map(|slot| fired_task(row, *slot, row.jitter_ms)).collect::<Result<Vec<_>>>()?;
        let params = FireScheduleParams::new(&row.name, row.next_fire_ms)
            .next_fire_ms(plan.next_fire_ms.unwrap_or(i64::MAX))
            .last_slot_ms(plan.slots.last().copied())
            .missed(i64::try_from(plan.missed).unwrap_or(i64::MAX))
            .tasks(tasks);
        Ok(self.fire(params, plan.missed).await?.map(|tasks| (tasks, plan.missed)))
    }

    /// One fire through the store, its tasks submitted as any submit is: a
    /// `send` span each (their `traceparent` in the metadata) and counted
    /// as submitted, with the schedule's fires and misses, when it won.
    async fn fire(&self, mut params: FireScheduleParams, missed: u64) -> Result<Option<Vec<Task>>> {
        let _spans: Vec<_> = params.tasks.iter_mut().map(observe::send_span).collect();
        let fired = self.schedule_store("fire_schedule")?.fire_schedule(&params).await?;
        if let Some(tasks) = &fired {
            observe::schedule_fired(&params.name, tasks, missed);
        }
        Ok(fired)
    }

    async fn is_live(&self, key: &str) -> Result<bool> {
        let found = self.get_status_by_key(key).await?;
        Ok(found.is_some_and(|t| !t.status.is_terminal()))
    }

    /// The row named `name`, if any.
    async fn named(&self, name: &str) -> Result<Option<ScheduleRow>> {
        Ok(self.schedule_store("schedules")?.schedules(&ScheduleQuery::named(name)).await?.rows.into_iter().next())
    }
}

/// The task of `slot`: keyed `schedule:NAME:SLOT_MS`, metadata naming the
/// schedule and slot, delayed by a random jitter up to `jitter_ms`.
fn fired_task(row: &ScheduleRow, slot_ms: i64, jitter_ms: i64) -> Result<NewTask> {
    let mut metadata = row.metadata.to_value()?;
    if let Value::Object(map) = &mut metadata {
        map.insert("schedule".into(), Value::from(row.name.clone()));
        map.insert("schedule_slot_ms".into(), Value::from(slot_ms));
    }
    let delay_ms = if jitter_ms > 0 { fastrand::i64(0..=jitter_ms) } else { 0 };
    let options = SubmitOptions::new()
        .key(slot_key(&row.name, slot_ms))
        .conflict(Conflict::ReuseSucceeded)
        .queue(&row.queue)
        .priority(row.priority)
        .max_attempts(u32::try_from(row.max_attempts).unwrap_or(1).max(1))
        .delay(std::time::Duration::from_millis(u64::try_from(delay_ms).unwrap_or(0)))
        .metadata(Json::from(metadata));
    options.to_new_task(&row.task_name, row.payload.clone())
}

impl CairnQ {
    /// The store's schedules, or [`Error::UnsupportedBackend`] naming
    /// `operation` when the store keeps none.
    fn schedule_store(&self, operation: &'static str) -> Result<&dyn ScheduleStore> {
        let backend = self.store.backend();
        self.store.schedule_store().ok_or(Error::UnsupportedBackend { operation, backend })
    }
}
