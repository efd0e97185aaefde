//! Decoding rows into core models. A value that does not decode (a
//! corrupted or foreign row) is an [`Error::Storage`], never a panic.

use cairnq_core::{Error, HeldLease, Result, Task, TaskCount, TaskRef, TaskStatus};
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

/// One column by name.
pub(crate) fn col<'a, T: FromSql<'a>>(row: &'a Row, name: &str) -> Result<T> {
    row.try_get(name).map_err(|e| Error::corrupt_row(format!("column {name}: {e}")))
}

fn status(row: &Row) -> Result<TaskStatus> {
    let text: &str = col(row, "status")?;
    text.parse().map_err(|_| Error::corrupt_row(format!("column status holds {text:?}")))
}

/// A whole `cairnq_tasks` row.
pub(crate) fn task(row: &Row) -> Result<Task> {
    Ok(Task {
        id: col(row, "id")?,
        name: col(row, "name")?,
        queue: col(row, "queue")?,
        status: status(row)?,
        payload: col(row, "payload")?,
        result: col(row, "result")?,
        error: col(row, "error")?,
        metadata: col(row, "metadata")?,
        progress: col(row, "progress")?,
        message: col(row, "message")?,
        attempt: col::<i32>(row, "attempt")?.into(),
        max_attempts: col::<i32>(row, "max_attempts")?.into(),
        priority: col::<i32>(row, "priority")?.into(),
        worker_id: col(row, "worker_id")?,
        lease_until_ms: col(row, "lease_until_ms")?,
        run_at_ms: col(row, "run_at_ms")?,
        cancel_requested_at_ms: col(row, "cancel_requested_at_ms")?,
        parent_id: col(row, "parent_id")?,
        root_id: col(row, "root_id")?,
        correlation_id: col(row, "correlation_id")?,
        created_at_ms: col(row, "created_at_ms")?,
        updated_at_ms: col(row, "updated_at_ms")?,
        completed_at_ms: col(row, "completed_at_ms")?,
    })
}

/// Every row as a task.
pub(crate) fn tasks(rows: &[Row]) -> Result<Vec<Task>> {
    rows.iter().map(task).collect()
}

/// An `id, status` row.
pub(crate) fn task_ref(row: &Row) -> Result<TaskRef> {
    Ok(TaskRef { id: col(row, "id")?, status: status(row)? })
}

/// A `queue, status, count` row.
pub(crate) fn task_count(row: &Row) -> Result<TaskCount> {
    let count: i64 = col(row, "count")?;
    Ok(TaskCount {
        queue: col(row, "queue")?,
        status: status(row)?,
        count: u64::try_from(count).map_err(|_| Error::corrupt_row(format!("negative count {count}")))?,
    })
}

/// An `id, cancel_requested_at_ms` row.
pub(crate) fn held_lease(row: &Row) -> Result<HeldLease> {
    Ok(HeldLease { id: col(row, "id")?, cancel_requested_at_ms: col(row, "cancel_requested_at_ms")? })
}
