//! What each protocol statement does, in words, for error messages.
//!
//! A statement's `-- name:` (`list_tasks_in_order`) is an internal name:
//! when its driver fails, the person reading the error is told what the
//! operation was ("could not list the tasks: ..."), and the name stays in
//! the error's source chain ([`StepError`](cairnq_core::StepError)). The match is
//! exhaustive, so a new statement does not build until it has its words.

use cairnq_protocol::Sql;

/// What `sql` does, as the object of "could not ...": `cancel the task`.
///
/// ```
/// use cairnq_sql::{Sql, purpose};
/// assert_eq!(purpose(Sql::CancelTask), "cancel the task");
/// assert_eq!(purpose(Sql::ListTasksInOrder), purpose(Sql::ListTasks));
/// ```
pub const fn purpose(sql: Sql) -> &'static str {
    match sql {
        Sql::CreateMigrationLedger => "create the migration ledger",
        Sql::MigrationApplied | Sql::ReadMigrationLedger => "read the migration ledger",
        Sql::RecordMigration | Sql::RecordMigrationInScript => "record the migration",
        Sql::TableExists => "look for the cairnq tables",
        Sql::IndexExists => "look for the cairnq indexes",
        Sql::ReadMeta | Sql::ReadAllMeta => "read the installation's versions",
        Sql::TasksAnalyzed => "check the query planner's statistics",
        Sql::AnalyzeTasks | Sql::OptimizePlanner => "update the query planner's statistics",
        Sql::FailUndecodableTask => "fail a task whose row cannot be read",
        Sql::ExpireUnleasedTasks | Sql::ScheduleUnscheduledTasks => "repair tasks left without a lease or a due time",
        Sql::SelectClock => "read the clock",
        Sql::SelectSchedules => "read the schedules",
        Sql::UpsertSchedule => "save the schedule",
        Sql::DeleteSchedule => "remove the schedule",
        Sql::PauseSchedule => "pause or resume the schedule",
        Sql::AdvanceSchedule => "move the schedule to its next time",
        Sql::InsertTask | Sql::InsertTasks => "submit",
        Sql::SelectTask | Sql::SelectTaskStatus => "read the task",
        Sql::SelectKeyTask => "look up the task by its key",
        Sql::UpsertTaskKey => "record the task's key",
        Sql::SelectTaskKey => "read the task's key",
        Sql::ListTasks | Sql::ListTasksInOrder => "list the tasks",
        Sql::CountTasks | Sql::ReadMatchingCount => "count the matching tasks",
        Sql::ListChildren => "list the task's children",
        Sql::CountTasksByQueueStatus | Sql::ReadTaskCounts => "count the tasks per queue",
        Sql::OldestDueByQueue => "find the oldest waiting task of each queue",
        Sql::CountQueued | Sql::ReadQueuedCount => "count the queued tasks",
        Sql::CancelTask => "cancel the task",
        Sql::RetryTask => "retry the task",
        Sql::PurgeTasks => "purge finished tasks",
        Sql::ListPurgeable => "list the tasks a purge would delete",
        Sql::ProbeClaimable => "look for tasks to claim",
        Sql::RecoverCanceledLeases | Sql::RecoverRequeuedLeases | Sql::RecoverFailedLeases => {
            "recover tasks whose lease expired"
        }
        Sql::ClaimDueTasks => "claim tasks",
        Sql::HeartbeatTask | Sql::HeartbeatTasks => "renew the lease",
        Sql::UpdateProgress => "record the task's progress",
        Sql::SucceedTask | Sql::CompleteTask | Sql::CompleteTasks => "record the task's result",
        Sql::FailTask => "record the task's failure",
        Sql::SelectLimits | Sql::AnyLimits => "read the limits",
        Sql::UpsertLimit => "save the limit",
        Sql::DeleteLimit => "remove the limit",
        Sql::CountRunningByLimitKey | Sql::CountRunningOfKeys | Sql::CountQueuedByLimitKey => {
            "count the tasks under a limit"
        }
        Sql::SelectLimitState | Sql::UpsertLimitState => "keep a rate limit's pace",
        Sql::SelectLimitCandidates | Sql::SelectLimitGroups | Sql::SelectLimitGroupRows => {
            "find the tasks the limits let start"
        }
        Sql::ClaimTasksById | Sql::ClaimLimitGroups => "claim tasks",
        Sql::SelectSteps => "read the task's steps",
        Sql::SaveStep => "store the step's outcome",
        Sql::DependenciesInstalled => "look for the dependency tables",
        Sql::LockDependencies => "read the task's dependencies",
        Sql::InsertDependencies | Sql::InsertTaskWait => "record the task's dependencies",
        Sql::HoldTask => "hold the task until its dependencies end",
        Sql::CancelForDependency => "cancel the task for its failed dependency",
        Sql::SelectDependencies => "read the task's dependencies",
        Sql::SelectTaskWaits => "read what the tasks wait for",
    }
}
