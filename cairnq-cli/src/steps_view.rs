//! How `cairnq get` shows a task's durable steps: a table after the task's
//! own fields (each step's name, the attempt that stored it, when, and a
//! short rendering of its value or error), and a `steps` array beside the
//! task's fields in `-o json` / `-o jsonl` when it has any: a task without
//! steps prints exactly the library's (and the other SDKs') task JSON.

use cairnq_core::{Step, Task, now_ms};
use serde::Serialize;

use crate::humanize::relative;
use crate::table::{Cell, Table, Tone, truncated};

/// A step's value or error in a table cell.
const STEP_VALUE: usize = 60;

/// A task's JSON with its steps beside its fields.
#[derive(Serialize)]
pub(crate) struct TaskWithSteps<'a> {
    #[serde(flatten)]
    pub(crate) task: &'a Task,
    #[serde(skip_serializing_if = "<[Step]>::is_empty")]
    pub(crate) steps: &'a [Step],
}

/// One row per step, in the order they were stored.
pub(crate) fn step_table(steps: &[Step]) -> Table {
    let now = now_ms();
    let mut table = Table::new(vec!["STEP", "ATTEMPT", "STORED", "VALUE"]);
    for step in steps {
        let value = match (&step.error, &step.result) {
            (Some(error), _) => {
                Cell::new(truncated(&format!("{}: {}", error.code, error.message), STEP_VALUE), Tone::Bad)
            }
            (None, Some(result)) => truncated(result.as_str(), STEP_VALUE).into(),
            (None, None) => "-".into(),
        };
        let stored = relative(step.created_at_ms, now);
        table.row(vec![step.name.clone().into(), step.attempt.to_string().into(), stored.into(), value]);
    }
    table
}
