//! The row store behind [`MemoryStore`](super::MemoryStore): every task by
//! id, the business keys, and the indexes the protocol's operations read
//! in order (due rows per queue in claim order, running rows by lease end,
//! terminal rows by completion time, every row by creation time, counts
//! per queue and status). Rows change only through [`Txn`], which keeps
//! every index in step and undoes a failed operation as a whole, the way a
//! SQL backend's transaction rolls back.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use cairnq_core::backend::Changes;
use cairnq_core::{Error, Result, Step, Task, TaskSelector, TaskStatus};

/// A queued row's place in claim order within its queue: priority desc,
/// run_at_ms asc, id asc.
pub(super) type DueKey = (Reverse<i32>, i64, String);

/// Every row and index of one store.
#[derive(Debug, Default)]
pub(super) struct Tables {
    tasks: HashMap<String, Task>,
    /// `cairnq_task_keys`: key -> the task it points at.
    keys: HashMap<String, String>,
    /// The reverse of `keys`, so purging a task frees its key (the
    /// protocol's `on delete cascade`).
    key_of: HashMap<String, String>,
    /// Queued rows per queue, in claim order.
    queued: HashMap<String, BTreeSet<DueKey>>,
    /// Running rows by lease end; `None` (a row without a lease) sorts first.
    running: BTreeSet<(Option<i64>, String)>,
    /// Terminal rows by completion time (rows without one are never purged).
    terminal: BTreeSet<(i64, String)>,
    /// Every row by creation time, for `list`.
    created: BTreeSet<(i64, String)>,
    /// Row counts per queue, indexed like [`TaskStatus::ALL`]; a queue
    /// whose counts all reach zero is dropped.
    counts: BTreeMap<String, [u64; 5]>,
    /// `cairnq_ext_steps`: each task's stored steps, in the order stored;
    /// deleted with their task (the foreign key's `on delete cascade`).
    steps: HashMap<String, Vec<Step>>,
}

/// Where `status` counts in a queue's `[u64; 5]` (the order stats report).
fn slot(status: TaskStatus) -> usize {
    TaskStatus::ALL.iter().position(|s| *s == status).unwrap_or(0)
}

impl Tables {
    /// The task with this id.
    pub(super) fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.get(id)
    }

    /// The task a key points at; `None` when the key is free.
    pub(super) fn key_task(&self, key: &str) -> Option<&Task> {
        self.keys.get(key).and_then(|id| self.tasks.get(id))
    }

    /// The key pointing at the task, if any.
    pub(super) fn key_of(&self, task_id: &str) -> Option<&str> {
        self.key_of.get(task_id).map(String::as_str)
    }

    /// The task picked by id or key.
    pub(super) fn select(&self, selector: &TaskSelector) -> Option<&Task> {
        match selector {
            TaskSelector::Id(id) => self.task(id),
            TaskSelector::Key(key) => self.key_task(key),
            // A selector this build does not know picks nothing.
            _ => None,
        }
    }

    /// Queued rows of one queue, best first (due or not).
    pub(super) fn queued_on(&self, queue: &str) -> impl Iterator<Item = &DueKey> {
        self.queued.get(queue).into_iter().flatten()
    }

    /// Running rows whose lease ended at or before `now_ms`.
    pub(super) fn expired_leases(&self, now_ms: i64) -> impl Iterator<Item = &str> {
        self.running
            .range((Some(i64::MIN), String::new())..)
            .take_while(move |(lease, _)| lease.is_some_and(|end| end <= now_ms))
            .map(|(_, id)| id.as_str())
    }

    /// Every queued row (due or not), queue by queue.
    pub(super) fn queued_tasks(&self) -> impl Iterator<Item = &Task> {
        self.queued.values().flatten().filter_map(|(_, _, id)| self.tasks.get(id))
    }

    /// Every running row.
    pub(super) fn running_tasks(&self) -> impl Iterator<Item = &Task> {
        self.running.iter().filter_map(|(_, id)| self.tasks.get(id))
    }

    /// Running rows without a lease (only a foreign or broken writer could
    /// leave one; see [`repair`](super::worker_ops::repair)).
    pub(super) fn unleased(&self) -> impl Iterator<Item = &Task> {
        self.running.iter().take_while(|(lease, _)| lease.is_none()).filter_map(|(_, id)| self.tasks.get(id))
    }

    /// Terminal rows, oldest completion first.
    pub(super) fn terminal_oldest_first(&self) -> impl Iterator<Item = (i64, &Task)> {
        self.terminal.iter().filter_map(|(at, id)| self.tasks.get(id).map(|task| (*at, task)))
    }

    /// Every row, newest first (`created_at_ms desc, id desc`).
    pub(super) fn newest_first(&self) -> impl Iterator<Item = &Task> {
        self.created.iter().rev().filter_map(|(_, id)| self.tasks.get(id))
    }

    /// The task's stored steps, in the order stored.
    pub(super) fn steps(&self, task_id: &str) -> &[Step] {
        self.steps.get(task_id).map_or(&[], Vec::as_slice)
    }

    /// Non-zero counts per queue and status.
    pub(super) fn counts(&self) -> impl Iterator<Item = (&str, TaskStatus, u64)> {
        self.counts.iter().flat_map(|(queue, counts)| {
            TaskStatus::ALL.into_iter().zip(counts).filter(|(_, n)| **n > 0).map(|(s, n)| (queue.as_str(), s, *n))
        })
    }

    /// How many rows of `queue` have `status`.
    pub(super) fn count(&self, queue: &str, status: TaskStatus) -> u64 {
        self.counts.get(queue).map_or(0, |counts| counts[slot(status)])
    }

    /// Stores `task` (replacing no row: the caller removed any old one)
    /// and indexes it.
    fn put(&mut self, task: Task) {
        let id = task.id.clone();
        match task.status {
            TaskStatus::Queued => {
                let due = (Reverse(task.priority), task.run_at_ms, id.clone());
                self.queued.entry(task.queue.clone()).or_default().insert(due);
            }
            TaskStatus::Running => {
                self.running.insert((task.lease_until_ms, id.clone()));
            }
            _ => {
                if let Some(at) = task.completed_at_ms {
                    self.terminal.insert((at, id.clone()));
                }
            }
        }
        self.created.insert((task.created_at_ms, id.clone()));
        self.counts.entry(task.queue.clone()).or_default()[slot(task.status)] += 1;
        self.tasks.insert(id, task);
    }

    /// Removes a row and its index entries.
    fn take(&mut self, id: &str) -> Option<Task> {
        let task = self.tasks.remove(id)?;
        match task.status {
            TaskStatus::Queued => {
                if let Some(due) = self.queued.get_mut(&task.queue) {
                    due.remove(&(Reverse(task.priority), task.run_at_ms, task.id.clone()));
                    if due.is_empty() {
                        self.queued.remove(&task.queue);
                    }
                }
            }
            TaskStatus::Running => {
                self.running.remove(&(task.lease_until_ms, task.id.clone()));
            }
            _ => {
                if let Some(at) = task.completed_at_ms {
                    self.terminal.remove(&(at, task.id.clone()));
                }
            }
        }
        self.created.remove(&(task.created_at_ms, task.id.clone()));
        if let Some(counts) = self.counts.get_mut(&task.queue) {
            counts[slot(task.status)] = counts[slot(task.status)].saturating_sub(1);
            if counts.iter().all(|n| *n == 0) {
                self.counts.remove(&task.queue);
            }
        }
        Some(task)
    }

    /// Points `key` at `task_id` (`None`: frees it); the task it pointed at before.
    fn set_key(&mut self, key: &str, task_id: Option<&str>) -> Option<String> {
        let before = match task_id {
            Some(id) => self.keys.insert(key.to_string(), id.to_string()),
            None => self.keys.remove(key),
        };
        if let Some(old) = &before {
            self.key_of.remove(old);
        }
        if let Some(id) = task_id {
            self.key_of.insert(id.to_string(), key.to_string());
        }
        before
    }
}

/// Notes in `changes` what a write of one row changed for sleepers: a
/// row that became queued, or became terminal (a row that stayed so is no
/// news).
fn saw(changes: &mut Changes, before: Option<TaskStatus>, after: &Task) {
    if after.status == TaskStatus::Queued && before != Some(TaskStatus::Queued) {
        changes.queued_on(&after.queue);
    } else if after.status.is_terminal() && !before.is_some_and(TaskStatus::is_terminal) {
        changes.finished(after.id.clone(), Some(after.queue.clone()));
    }
}

/// How to put back one thing an operation changed.
#[derive(Debug)]
enum Undo {
    /// The row with this id was this before (`None`: it did not exist).
    Task(String, Option<Box<Task>>),
    /// The key pointed at this task before (`None`: it was free).
    Key(String, Option<String>),
    /// The task's steps were these before (`None`: it had none).
    Steps(String, Option<Vec<Step>>),
}

/// One operation's view of the tables: every write is recorded so a
/// failed operation leaves nothing behind ([`rollback`](Self::rollback)),
/// and every write that matters to a sleeper is noted in `changes`.
pub(super) struct Txn<'a> {
    tables: &'a mut Tables,
    /// "Now" for the whole operation, from the store's clock.
    pub(super) now_ms: i64,
    undo: Vec<Undo>,
    pub(super) changes: Changes,
}

impl<'a> Txn<'a> {
    pub(super) fn new(tables: &'a mut Tables, now_ms: i64) -> Self {
        Self { tables, now_ms, undo: Vec::new(), changes: Changes::default() }
    }

    /// The tables as this operation has left them so far.
    pub(super) fn tables(&self) -> &Tables {
        self.tables
    }

    /// Inserts a new row; a row with the same id already there is an
    /// error (the primary key), never overwritten.
    pub(super) fn insert(&mut self, task: Task) -> Result<()> {
        if self.tables.tasks.contains_key(&task.id) {
            let why = format!("a task with id {} already exists", task.id);
            return Err(Error::storage("cannot insert the task", why));
        }
        saw(&mut self.changes, None, &task);
        self.undo.push(Undo::Task(task.id.clone(), None));
        self.tables.put(task);
        Ok(())
    }

    /// Applies `write` to the row `id` (stamping `updated_at_ms`), keeps
    /// the indexes in step, and answers with the row after the write;
    /// `None` when there is no such row.
    pub(super) fn update(&mut self, id: &str, write: impl FnOnce(&mut Task)) -> Option<Task> {
        let before = self.tables.take(id)?;
        let mut after = before.clone();
        write(&mut after);
        after.updated_at_ms = self.now_ms;
        saw(&mut self.changes, Some(before.status), &after);
        self.undo.push(Undo::Task(before.id.clone(), Some(Box::new(before))));
        self.tables.put(after.clone());
        Some(after)
    }

    /// Deletes the row `id`, freeing the key that points at it.
    pub(super) fn delete(&mut self, id: &str) -> Option<Task> {
        if let Some(key) = self.tables.key_of.get(id).cloned() {
            let before = self.tables.set_key(&key, None);
            self.undo.push(Undo::Key(key, before));
        }
        let task = self.tables.take(id)?;
        self.undo.push(Undo::Task(task.id.clone(), Some(Box::new(task.clone()))));
        if let Some(steps) = self.tables.steps.remove(id) {
            self.undo.push(Undo::Steps(id.to_string(), Some(steps)));
        }
        Some(task)
    }

    /// Stores a step of its task, replacing one of the same name.
    pub(super) fn save_step(&mut self, step: Step) {
        let before = self.tables.steps.get(&step.task_id).cloned();
        self.undo.push(Undo::Steps(step.task_id.clone(), before));
        let steps = self.tables.steps.entry(step.task_id.clone()).or_default();
        steps.retain(|s| s.name != step.name);
        steps.push(step);
    }

    /// Points `key` at `task_id` (inserting the key the first time).
    pub(super) fn point_key(&mut self, key: &str, task_id: &str) {
        let before = self.tables.set_key(key, Some(task_id));
        self.undo.push(Undo::Key(key.to_string(), before));
    }

    /// Puts back everything this operation wrote, newest first.
    pub(super) fn rollback(self) {
        for undo in self.undo.into_iter().rev() {
            match undo {
                Undo::Task(id, before) => {
                    self.tables.take(&id);
                    if let Some(task) = before {
                        self.tables.put(*task);
                    }
                }
                Undo::Key(key, before) => {
                    self.tables.set_key(&key, before.as_deref());
                }
                Undo::Steps(task_id, before) => match before {
                    Some(steps) => drop(self.tables.steps.insert(task_id, steps)),
                    None => drop(self.tables.steps.remove(&task_id)),
                },
            }
        }
    }
}
