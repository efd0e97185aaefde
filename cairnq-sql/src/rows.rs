//! Typed rows: what a flow reads back, decoded once here over any driver.
//!
//! A backend says how its driver reads one cell as each model type
//! ([`SqlRow`]: text, integer, real, JSON, boolean, each as tolerant as its
//! dialect must be of rows other SDKs wrote); every row shape is written
//! once over that ([`FromRow`]), so [`Executor::rows`](crate::Executor::rows)
//! is one generic method instead of one per shape, and a whole task row is
//! decoded the same way on SQLite and Postgres.
//!
//! Columns are found by name once per statement run (a [`FromRow::Layout`]
//! built from its first row by a [`Decoder`]), then read by position on
//! every row: no per-row name lookups on the hot paths (claim, settle).

use cairnq_core::store::{LimitRow, ScheduleRow, TaskRow};
use cairnq_core::{CatchUp, Error, HeldLease, Json, Overlap, Result, ScheduleOwner, Task, TaskRef, Undecodable};

/// Why one cell did not decode, in words ("expected text, found Real").
pub type CellError = String;

/// One result row as a backend's driver reads it: cells by position, each
/// as the model type asked, `None` for SQL NULL.
pub trait SqlRow {
    /// Where the column named `name` sits (ASCII case-insensitive; the
    /// first of that name), if the statement returned one.
    fn position(&self, name: &str) -> Option<usize>;
    /// [`position`](Self::position) of each of `names`; a driver whose
    /// name lookups cost more than a comparison overrides it to walk the
    /// columns once.
    fn positions<const N: usize>(&self, names: [&str; N]) -> [Option<usize>; N] {
        names.map(|name| self.position(name))
    }
    /// A text cell.
    fn text(&self, at: usize) -> Result<Option<String>, CellError>;
    /// An integer cell (a dialect may accept an integral float a foreign
    /// writer stored).
    fn int(&self, at: usize) -> Result<Option<i64>, CellError>;
    /// A floating-point cell (an integer is its float).
    fn real(&self, at: usize) -> Result<Option<f64>, CellError>;
    /// A JSON document, kept as the exact text stored.
    fn json(&self, at: usize) -> Result<Option<Json>, CellError>;
    /// A boolean cell (SQLite stores 0 or 1).
    fn boolean(&self, at: usize) -> Result<Option<bool>, CellError>;
}

/// A row shape a statement returns, read by name (see the module docs).
pub trait FromRow: Sized {
    /// Where this shape's columns sit in one statement's rows.
    type Layout;

    /// The layout of the statement `row` came from.
    fn layout(row: &impl SqlRow) -> Self::Layout;

    /// One row. The error fails the whole statement; a shape whose rows a
    /// caller isolates one by one ([`TaskRow`]) reports them inside `Self`.
    fn from_row(row: &impl SqlRow, layout: &Self::Layout) -> Result<Self>;
}

/// Decodes the rows of one statement run as `T`, finding the columns once.
///
/// ```
/// # use cairnq_sql::{Decoder, FromRow, SqlRow};
/// # fn demo(rows: &[impl SqlRow]) -> cairnq_core::Result<Vec<String>> {
/// let mut decoder = Decoder::<String>::new();
/// rows.iter().map(|row| decoder.decode(row)).collect()
/// # }
/// ```
pub struct Decoder<T: FromRow> {
    layout: Option<T::Layout>,
}

impl<T: FromRow> Default for Decoder<T> {
    fn default() -> Self {
        Self { layout: None }
    }
}

impl<T: FromRow> Decoder<T> {
    /// A decoder that has seen no row yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One row of the statement.
    pub fn decode(&mut self, row: &impl SqlRow) -> Result<T> {
        let layout = self.layout.get_or_insert_with(|| T::layout(row));
        T::from_row(row, layout)
    }
}

/// A cell of a fixed-shape row: one that does not decode is an
/// [`Error::Undecodable`] naming its column (and the row's task, if known).
fn cell<T>(
    at: Option<usize>,
    column: &str,
    task_id: Option<&str>,
    read: impl FnOnce(usize) -> Result<Option<T>, CellError>,
) -> Result<Option<T>> {
    let undecodable = |reason: String| Undecodable::new(task_id.map(str::to_string), column, reason).into_error();
    let at = at.ok_or_else(|| undecodable("missing from the result".to_string()))?;
    read(at).map_err(undecodable)
}

/// [`cell`] that must not be NULL.
fn required<T>(
    at: Option<usize>,
    column: &str,
    task_id: Option<&str>,
    read: impl FnOnce(usize) -> Result<Option<T>, CellError>,
) -> Result<T> {
    cell(at, column, task_id, read)?
        .ok_or_else(|| Undecodable::new(task_id.map(str::to_string), column, "is null".to_string()).into_error())
}

/// The first column as text: the ids a statement returned, a name.
impl FromRow for String {
    type Layout = Option<usize>;

    fn layout(row: &impl SqlRow) -> Self::Layout {
        row.position("id").or(Some(0))
    }

    fn from_row(row: &impl SqlRow, at: &Self::Layout) -> Result<Self> {
        required(*at, "id", None, |i| row.text(i))
    }
}

/// The first column as an integer: the store's clock, a count.
impl FromRow for i64 {
    type Layout = ();

    fn layout(_: &impl SqlRow) -> Self::Layout {}

    fn from_row(row: &impl SqlRow, (): &Self::Layout) -> Result<Self> {
        required(Some(0), "value", None, |i| row.int(i))
    }
}

/// Nothing read: statements run for what they write.
impl FromRow for () {
    type Layout = ();

    fn layout(_: &impl SqlRow) -> Self::Layout {}

    fn from_row(_: &impl SqlRow, (): &Self::Layout) -> Result<Self> {
        Ok(())
    }
}

/// An `id, status` row.
impl FromRow for TaskRef {
    type Layout = [Option<usize>; 2];

    fn layout(row: &impl SqlRow) -> Self::Layout {
        row.positions(["id", "status"])
    }

    fn from_row(row: &impl SqlRow, [id, status]: &Self::Layout) -> Result<Self> {
        let id: String = required(*id, "id", None, |i| row.text(i))?;
        let status = required(*status, "status", Some(&id), |i| row.text(i))?;
        let status = status.parse().map_err(|_| {
            Undecodable::new(Some(id.clone()), "status", format!("{status:?} is not a task status")).into_error()
        })?;
        Ok(TaskRef { id, status })
    }
}

/// An `id, cancel_requested_at_ms` row.
impl FromRow for HeldLease {
    type Layout = [Option<usize>; 2];

    fn layout(row: &impl SqlRow) -> Self::Layout {
        row.positions(["id", "cancel_requested_at_ms"])
    }

    fn from_row(row: &impl SqlRow, [id, cancel]: &Self::Layout) -> Result<Self> {
        let id: String = required(*id, "id", None, |i| row.text(i))?;
        let cancel_requested_at_ms = cell(*cancel, "cancel_requested_at_ms", Some(&id), |i| row.int(i))?;
        Ok(HeldLease { id, cancel_requested_at_ms })
    }
}

/// A task a lease recovery moved: its id and queue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Moved {
    /// The task.
    pub id: String,
    /// Its queue.
    pub queue: String,
}

impl FromRow for Moved {
    type Layout = [Option<usize>; 2];

    fn layout(row: &impl SqlRow) -> Self::Layout {
        row.positions(["id", "queue"])
    }

    fn from_row(row: &impl SqlRow, [id, queue]: &Self::Layout) -> Result<Self> {
        let id: String = required(*id, "id", None, |i| row.text(i))?;
        let queue = required(*queue, "queue", Some(&id), |i| row.text(i))?;
        Ok(Self { id, queue })
    }
}

/// The columns of a `cairnq_ext_limits` row, in the order read.
const LIMIT_COLUMNS: [&str; 6] = ["key", "concurrency", "rate_count", "rate_period_ms", "burst", "updated_at_ms"];

impl FromRow for LimitRow {
    type Layout = [Option<usize>; 6];

    fn layout(row: &impl SqlRow) -> Self::Layout {
        row.positions(LIMIT_COLUMNS)
    }

    fn from_row(row: &impl SqlRow, at: &Self::Layout) -> Result<Self> {
        let int = |n: usize| cell(at[n], LIMIT_COLUMNS[n], None, |i| row.int(i));
        let mut limit = LimitRow::new(required(at[0], "key", None, |i| row.text(i))?);
        (limit.concurrency, limit.rate_count, limit.rate_period_ms, limit.burst) = (int(1)?, int(2)?, int(3)?, int(4)?);
        limit.updated_at_ms = required(at[5], LIMIT_COLUMNS[5], None, |i| row.int(i))?;
        Ok(limit)
    }
}

/// The columns of a `cairnq_ext_schedules` row, in the order read.
const SCHEDULE_COLUMNS: [&str; 21] = [
    "name",
    "task_name",
    "queue",
    "payload",
    "priority",
    "max_attempts",
    "metadata",
    "spec",
    "tz",
    "next_fire_ms",
    "last_slot_ms",
    "missed",
    "catch_up",
    "catch_up_window_ms",
    "catch_up_max",
    "overlap",
    "jitter_ms",
    "paused",
    "owner",
    "created_at_ms",
    "updated_at_ms",
];

impl FromRow for ScheduleRow {
    type Layout = [Option<usize>; 21];

    fn layout(row: &impl SqlRow) -> Self::Layout {
        row.positions(SCHEDULE_COLUMNS)
    }

    fn from_row(row: &impl SqlRow, at: &Self::Layout) -> Result<Self> {
        let bad = |why: String| Error::corrupt_row(format!("a schedule row: {why}"));
        let name = |n: usize| SCHEDULE_COLUMNS[n];
        let text = |n: usize| required(at[n], name(n), None, |i| row.text(i));
        let int = |n: usize| required(at[n], name(n), None, |i| row.int(i));
        let json = |n: usize| required(at[n], name(n), None, |i| row.json(i));
        let narrow =
            |n: usize| int(n).and_then(|v| i32::try_from(v).map_err(|_| bad(format!("{} is out of range", name(n)))));
        let mut s = ScheduleRow::new(text(0)?);
        s.task_name = text(1)?;
        s.queue = text(2)?;
        s.payload = json(3)?;
        s.priority = narrow(4)?;
        s.max_attempts = narrow(5)?;
        s.metadata = json(6)?;
        s.spec = text(7)?;
        s.tz = text(8)?;
        s.next_fire_ms = int(9)?;
        s.last_slot_ms = cell(at[10], name(10), None, |i| row.int(i))?;
        s.missed = int(11)?;
        s.catch_up = CatchUp::from_stored(&text(12)?, int(13)?, int(14)?).map_err(|e| bad(e.to_string()))?;
        s.overlap = Overlap::parse(&text(15)?).map_err(|e| bad(e.to_string()))?;
        s.jitter_ms = int(16)?;
        s.paused = required(at[17], name(17), None, |i| row.boolean(i))?;
        s.owner = ScheduleOwner::from_stored(&text(18)?);
        s.created_at_ms = int(19)?;
        s.updated_at_ms = int(20)?;
        Ok(s)
    }
}

/// The `cairnq_tasks` columns a [`Task`] is decoded from, in field order.
const TASK_COLUMNS: [&str; 23] = [
    "id",
    "name",
    "queue",
    "status",
    "payload",
    "result",
    "error",
    "metadata",
    "progress",
    "message",
    "attempt",
    "max_attempts",
    "priority",
    "worker_id",
    "lease_until_ms",
    "run_at_ms",
    "cancel_requested_at_ms",
    "parent_id",
    "root_id",
    "correlation_id",
    "created_at_ms",
    "updated_at_ms",
    "completed_at_ms",
];

/// Why one column of a task row did not decode: its name and the reason.
type Bad = (&'static str, String);

/// A whole `cairnq_tasks` row (`select *` / `returning *`), or the report
/// of why it does not decode, for the caller to isolate (a list reports
/// it, a claim fails just that task). Tolerant where a value has one
/// sensible meaning: a NULL payload is `null`, NULL metadata `{}`, NULL
/// counters their column defaults.
impl FromRow for TaskRow {
    type Layout = [Option<usize>; 23];

    fn layout(row: &impl SqlRow) -> Self::Layout {
        row.positions(TASK_COLUMNS)
    }

    fn from_row(row: &impl SqlRow, at: &Self::Layout) -> Result<Self> {
        let cells = Cells { row, at };
        Ok(task_at(&cells).map_err(|(column, reason)| {
            let id = cells.get(0, |r, i| r.text(i)).ok().flatten();
            Undecodable::new(id, column, reason)
        }))
    }
}

/// A whole task row, for statements that touch one task: an undecodable
/// row is the caller's [`Error::Undecodable`].
impl FromRow for Task {
    type Layout = [Option<usize>; 23];

    fn layout(row: &impl SqlRow) -> Self::Layout {
        TaskRow::layout(row)
    }

    fn from_row(row: &impl SqlRow, at: &Self::Layout) -> Result<Self> {
        TaskRow::from_row(row, at)?.map_err(Undecodable::into_error)
    }
}

/// One task row's cells, read by field number, each failure naming its column.
struct Cells<'a, R> {
    row: &'a R,
    at: &'a [Option<usize>; 23],
}

impl<R: SqlRow> Cells<'_, R> {
    fn get<T>(
        &self,
        field: usize,
        read: impl FnOnce(&R, usize) -> Result<Option<T>, CellError>,
    ) -> Result<Option<T>, Bad> {
        let name = TASK_COLUMNS.get(field).copied().unwrap_or("?");
        let at = self.at.get(field).copied().flatten().ok_or((name, "missing from the result".to_string()))?;
        read(self.row, at).map_err(|reason| (name, reason))
    }

    fn text(&self, field: usize) -> Result<Option<String>, Bad> {
        self.get(field, |r, i| r.text(i))
    }

    fn int(&self, field: usize) -> Result<Option<i64>, Bad> {
        self.get(field, |r, i| r.int(i))
    }

    fn json(&self, field: usize) -> Result<Option<Json>, Bad> {
        self.get(field, |r, i| r.json(i))
    }

    fn required<T>(&self, field: usize, value: Option<T>) -> Result<T, Bad> {
        value.ok_or((TASK_COLUMNS.get(field).copied().unwrap_or("?"), "is null".to_string()))
    }

    /// [`int`](Self::int) narrowed to the model's type ([`narrow`](cairnq_core::backend::narrow)).
    fn narrow<T: TryFrom<i64>>(&self, field: usize) -> Result<Option<T>, Bad> {
        let name = TASK_COLUMNS.get(field).copied().unwrap_or("?");
        self.int(field)?.map(cairnq_core::backend::narrow).transpose().map_err(|reason| (name, reason))
    }
}

fn task_at<R: SqlRow>(c: &Cells<'_, R>) -> Result<Task, Bad> {
    let (id, name, queue) = (c.required(0, c.text(0)?)?, c.required(1, c.text(1)?)?, c.required(2, c.text(2)?)?);
    let status = c.required(3, c.text(3)?)?;
    let status = status.parse().map_err(|_| ("status", format!("{status:?} is not a task status")))?;
    Ok(Task {
        id,
        name,
        queue,
        status,
        payload: c.json(4)?.unwrap_or_else(Json::null),
        result: c.json(5)?,
        error: c.json(6)?,
        metadata: c.json(7)?.unwrap_or_else(Json::empty_object),
        progress: c.get(8, |r, i| r.real(i))?,
        message: c.text(9)?,
        attempt: c.narrow(10)?.unwrap_or(0),
        max_attempts: c.narrow(11)?.unwrap_or(3),
        priority: c.narrow(12)?.unwrap_or(0),
        worker_id: c.text(13)?,
        lease_until_ms: c.int(14)?,
        run_at_ms: c.required(15, c.int(15)?)?,
        cancel_requested_at_ms: c.int(16)?,
        parent_id: c.text(17)?,
        root_id: c.text(18)?,
        correlation_id: c.text(19)?,
        created_at_ms: c.required(20, c.int(20)?)?,
        updated_at_ms: c.required(21, c.int(21)?)?,
        completed_at_ms: c.int(22)?,
    })
}
