//! [`ScheduleStore`]: the schedules extension as a capability of a store
//! ([`Store::schedule_store`](super::Store::schedule_store)), so a backend
//! without schedules writes nothing for them, and the seam has no methods
//! that only answer "unsupported".

use async_trait::async_trait;

use super::{
    DeleteScheduleParams, FireScheduleParams, PauseScheduleParams, SaveScheduleParams, ScheduleQuery, ScheduleRead,
    ScheduleRow,
};
use crate::error::Result;
use crate::model::Task;

/// The schedule operations of a store that keeps schedules (extension
/// `ext_0001_schedules`). The client and the workers reach it through
/// [`Store::schedule_store`](super::Store::schedule_store).
///
/// ```
/// use cairnq_core::store::{ScheduleQuery, ScheduleStore, Store};
///
/// /// How many schedules a store keeps (none when it keeps no schedules).
/// async fn how_many(store: &dyn Store) -> cairnq_core::Result<usize> {
///     match store.schedule_store() {
///         Some(schedules) => Ok(schedules.schedules(&ScheduleQuery::all()).await?.rows.len()),
///         None => Ok(0),
///     }
/// }
/// ```
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Schedules as [`ScheduleQuery`] asks, with the store's now (SQLite:
    /// its clock; Postgres: the database clock).
    async fn schedules(&self, query: &ScheduleQuery) -> Result<ScheduleRead>;

    /// Creates or updates a schedule (see [`SaveScheduleParams`]); the row
    /// as stored.
    async fn save_schedule(&self, params: &SaveScheduleParams) -> Result<ScheduleRow>;

    /// Pauses or resumes; the row after, or `None` when there is none.
    async fn pause_schedule(&self, params: &PauseScheduleParams) -> Result<Option<ScheduleRow>>;

    /// Deletes a schedule; whether there was one.
    async fn delete_schedule(&self, params: &DeleteScheduleParams) -> Result<bool>;

    /// One fire in one transaction (see [`FireScheduleParams`]): the tasks
    /// submitted, or `None` when the row no longer held the slot read
    /// (another process fired it) and nothing changed.
    async fn fire_schedule(&self, params: &FireScheduleParams) -> Result<Option<Vec<Task>>>;
}
