//! The task filter flags several commands share (`--status`, `--queue`,
//! `--name`), declared once and turned into the library's filters.

use cairnq_core::{ListFilter, PurgeFilter, TaskStatus};

/// A status on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StatusArg {
    Queued,
    Running,
    Succeeded,
    Failed,
    Canceled,
}

impl From<StatusArg> for TaskStatus {
    fn from(arg: StatusArg) -> Self {
        match arg {
            StatusArg::Queued => TaskStatus::Queued,
            StatusArg::Running => TaskStatus::Running,
            StatusArg::Succeeded => TaskStatus::Succeeded,
            StatusArg::Failed => TaskStatus::Failed,
            StatusArg::Canceled => TaskStatus::Canceled,
        }
    }
}

/// `--status`, `--queue`, `--name`.
#[derive(Debug, clap::Args)]
pub(crate) struct FilterArgs {
    /// Only tasks in this status.
    #[arg(long, value_enum)]
    pub(crate) status: Option<StatusArg>,
    /// Only tasks of this queue.
    #[arg(long)]
    pub(crate) queue: Option<String>,
    /// Only tasks of this handler name.
    #[arg(long)]
    pub(crate) name: Option<String>,
}

impl FilterArgs {
    /// Whether any filter flag was given.
    pub(crate) fn any(&self) -> bool {
        self.status.is_some() || self.queue.is_some() || self.name.is_some()
    }

    /// The status given, as the library's.
    pub(crate) fn status(&self) -> Option<TaskStatus> {
        self.status.map(TaskStatus::from)
    }

    /// A list filter of the queue and name, in `status` (the one given, or
    /// another a command picks).
    pub(crate) fn list(&self, status: Option<TaskStatus>) -> ListFilter {
        let mut filter = ListFilter::new();
        filter.status = status;
        filter.queue.clone_from(&self.queue);
        filter.name.clone_from(&self.name);
        filter
    }

    /// `filter` narrowed by every flag.
    pub(crate) fn purge(&self, mut filter: PurgeFilter) -> PurgeFilter {
        filter.status = self.status();
        filter.queue.clone_from(&self.queue);
        filter.name.clone_from(&self.name);
        filter
    }
}
