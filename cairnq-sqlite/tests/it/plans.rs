//! EXPLAIN QUERY PLAN of every specialized statement: each filter reaches
//! its index, no statement scans the task table where an index exists, and
//! one-queue claims read a claim index in order (no temp b-tree sort).

use std::path::Path;

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, SubmitOptions, TaskSpec};
use cairnq_protocol::{Statement, sqlite};
use cairnq_testkit::support::ByParams;

use crate::common::{fresh_path, open_client, raw};

/// The plan lines of `statement` rendered with `flags`.
fn plan(path: &Path, statement: &Statement, flags: &[&str]) -> Vec<String> {
    let sql = statement.rendering(flags).expect("known flags").sql;
    let conn = raw(path);
    let mut stmt = conn.prepare(&format!("explain query plan {sql}")).expect("explain");
    // Parameters stay unbound (null): the plan depends on the shape only.
    let mut rows = stmt.raw_query();
    let mut lines = Vec::new();
    while let Some(row) = rows.next().expect("plan row") {
        lines.push(row.get::<_, String>(3).expect("plan detail"));
    }
    lines
}

/// Whether a plan line reads through exactly `index`.
fn uses(line: &str, index: &str) -> bool {
    line.split(' ').collect::<Vec<_>>().windows(2).any(|w| w[0] == "INDEX" && w[1] == index)
}

/// Asserts the plan reads the task table through one of `indexes` and never
/// scans it row by row.
fn check(path: &Path, statement: &Statement, flags: &[&str], indexes: &[&str]) -> Vec<String> {
    let lines = plan(path, statement, flags);
    let shown = format!("{} {flags:?}:\n  {}", statement.name, lines.join("\n  "));
    let reached = lines.iter().any(|l| indexes.iter().any(|index| uses(l, index)));
    assert!(reached, "expected one of {indexes:?}; {shown}");
    assert!(!lines.iter().any(|l| l == "SCAN cairnq_tasks"), "full table scan; {shown}");
    lines
}

/// Either claim index serves a claim or probe; with many names the planner
/// may read the queue prefix and filter names.
const CLAIM_INDEXES: &[&str] = &["cairnq_tasks_claim_idx", "cairnq_tasks_claim_name_idx"];

fn assert_no_sort(lines: &[String], what: &str) {
    assert!(!lines.iter().any(|l| l.contains("TEMP B-TREE")), "{what} sorts: {lines:?}");
}

/// A database with a spread of queues, names, chains and states, with
/// planner statistics.
async fn populated() -> (crate::common::Fresh, CairnQ) {
    let (fresh, client) = populated_without_statistics().await;
    // Plans must hold with planner statistics, as a long-lived store has
    // them once PRAGMA optimize ran over a populated table.
    rusqlite::Connection::open(&fresh.path).and_then(|c| c.execute_batch("analyze")).expect("analyze");
    (fresh, client)
}

/// The same spread, with many rows running, as a store filled after it
/// opened sees it: no planner statistics yet.
async fn populated_without_statistics() -> (crate::common::Fresh, CairnQ) {
    let fresh = fresh_path();
    let client = open_client(&fresh.path).await;
    let specs: Vec<TaskSpec> = (0..300)
        .map(|n| {
            let options = SubmitOptions::new()
                .queue(format!("q{}", n % 3))
                .correlation_id(format!("c{}", n % 50))
                .priority(n % 4);
            TaskSpec::new(format!("job{}", n % 5), &serde_json::json!({ "n": n })).options(options)
        })
        .collect();
    client.submit_many(&specs).await.expect("submit");
    let claim = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["q0".into()]).limit(50));
    for task in client.claim(&claim).await.expect("claim") {
        client.complete(&SettleParams::new(&task.id, "w").result(serde_json::json!(1))).await.expect("complete");
    }
    let running = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["q1".into(), "q2".into()]).limit(150));
    client.claim(&running).await.expect("claim");
    (fresh, client)
}

#[tokio::test]
async fn list_tasks_reaches_the_index_of_each_single_filter() {
    let (fresh, _client) = populated().await;
    let cases = [
        ("status", "cairnq_tasks_status_completed_idx"),
        ("queue", "cairnq_tasks_claim_idx"),
        ("name", "cairnq_tasks_name_idx"),
        ("root_id", "cairnq_tasks_root_idx"),
        ("correlation_id", "cairnq_tasks_correlation_idx"),
    ];
    for (flag, index) in cases {
        // Either claim index leads with the queue.
        let indexes = if flag == "queue" { CLAIM_INDEXES } else { &[index][..] };
        check(&fresh.path, &sqlite::LIST_TASKS, &[flag], indexes);
    }
}

#[tokio::test]
async fn purge_tasks_reaches_the_completion_indexes() {
    let (fresh, _client) = populated().await;
    // A purge's preview (list_purgeable) reads the rows the purge deletes,
    // the same way.
    for statement in [&sqlite::PURGE_TASKS, &sqlite::LIST_PURGEABLE] {
        check(&fresh.path, statement, &["status"], &["cairnq_tasks_status_completed_idx"]);
        check(&fresh.path, statement, &["any_status", "queue"], &["cairnq_tasks_queue_completed_idx"]);
        // Without filters either completion index bounds the read by the cutoff.
        let any = &["cairnq_tasks_completed_idx", "cairnq_tasks_status_completed_idx"];
        check(&fresh.path, statement, &["any_status"], any);
    }
}

/// Deleting a task cascades to its business keys (`on delete cascade`):
/// SQLite looks them up by `task_id`, which only the extension index
/// `ext_0004_task_key_index` serves. Without it every purged row
/// scanned the whole key table (purge at 1,000,000 tasks: 13k rows/s
/// instead of 106k). EXPLAIN QUERY PLAN does not show a foreign key's
/// action, so this plans the lookup it runs.
#[tokio::test]
async fn the_key_cascade_of_a_purge_finds_keys_by_index() {
    let (fresh, _client) = populated().await;
    let conn = raw(&fresh.path);
    let mut stmt = conn.prepare("explain query plan delete from cairnq_task_keys where task_id = ?1").expect("explain");
    let mut rows = stmt.raw_query();
    let mut lines = Vec::new();
    while let Some(row) = rows.next().expect("plan row") {
        lines.push(row.get::<_, String>(3).expect("plan detail"));
    }
    assert!(lines.iter().any(|l| uses(l, "cairnq_ext_task_keys_task_idx")), "{lines:?}");
}

#[tokio::test]
async fn counts_read_the_claim_index() {
    let (fresh, _client) = populated().await;
    check(&fresh.path, &sqlite::COUNT_TASKS_BY_QUEUE_STATUS, &["queue"], &["cairnq_tasks_claim_idx"]);
    check(&fresh.path, &sqlite::COUNT_TASKS_BY_QUEUE_STATUS, &[], &["cairnq_tasks_claim_idx"]);
    check(&fresh.path, &sqlite::COUNT_QUEUED, &[], CLAIM_INDEXES);
}

#[tokio::test]
async fn claim_forms_read_the_claim_indexes_and_one_queue_needs_no_sort() {
    let (fresh, _client) = populated().await;
    let one = check(&fresh.path, &sqlite::CLAIM_DUE_TASKS, &["one_queue"], &["cairnq_tasks_claim_idx"]);
    assert_no_sort(&one, "one queue, any name");
    let one_name =
        check(&fresh.path, &sqlite::CLAIM_DUE_TASKS, &["one_queue", "one_name"], &["cairnq_tasks_claim_name_idx"]);
    assert_no_sort(&one_name, "one queue, one name");
    check(&fresh.path, &sqlite::CLAIM_DUE_TASKS, &["many_queues"], &["cairnq_tasks_claim_idx"]);
    check(&fresh.path, &sqlite::CLAIM_DUE_TASKS, &["one_queue", "many_names"], CLAIM_INDEXES);
    check(&fresh.path, &sqlite::CLAIM_DUE_TASKS, &["many_queues", "one_name"], CLAIM_INDEXES);
    check(&fresh.path, &sqlite::CLAIM_DUE_TASKS, &["many_queues", "many_names"], CLAIM_INDEXES);
}

#[tokio::test]
async fn probe_and_lease_recovery_read_indexes() {
    let (fresh, _client) = populated().await;
    for flags in [&["one_queue"][..], &["one_queue", "one_name"], &["many_queues", "many_names"]] {
        let lines = check(&fresh.path, &sqlite::PROBE_CLAIMABLE, flags, CLAIM_INDEXES);
        assert!(lines.iter().any(|l| uses(l, "cairnq_tasks_lease_idx")), "{lines:?}");
    }
    for recover in [&sqlite::RECOVER_CANCELED_LEASES, &sqlite::RECOVER_REQUEUED_LEASES, &sqlite::RECOVER_FAILED_LEASES]
    {
        check(&fresh.path, recover, &[], &["cairnq_tasks_lease_idx"]);
    }
}

/// The worker's hot statements must not scan every running row, also
/// before the table has planner statistics (a store filled after it opened:
/// PRAGMA optimize runs at most once a minute).
#[tokio::test]
async fn hot_worker_statements_use_their_indexes_without_statistics() {
    let (fresh, _client) = populated_without_statistics().await;
    let by_id = &["sqlite_autoindex_cairnq_tasks_1"];
    let heartbeat = check(&fresh.path, &sqlite::HEARTBEAT_TASKS, &[], by_id);
    assert!(!heartbeat.iter().any(|l| uses(l, "cairnq_tasks_status_completed_idx")), "{heartbeat:?}");
    for recover in [&sqlite::RECOVER_CANCELED_LEASES, &sqlite::RECOVER_REQUEUED_LEASES, &sqlite::RECOVER_FAILED_LEASES]
    {
        check(&fresh.path, recover, &[], &["cairnq_tasks_lease_idx"]);
    }
    let claim =
        check(&fresh.path, &sqlite::CLAIM_DUE_TASKS, &["one_queue", "one_name"], &["cairnq_tasks_claim_name_idx"]);
    assert_no_sort(&claim, "one queue, one name");
    for settle in [&sqlite::COMPLETE_TASK, &sqlite::HEARTBEAT_TASK, &sqlite::FAIL_TASK] {
        check(&fresh.path, settle, &[], by_id);
    }
}

/// The dashboard's reads: a list in order walks the list-order index with
/// no sort (its filters written so no other index competes); a list
/// through its filters reads their index even with a cursor (never the
/// list-order index past every row); the bounded count reads the filters'
/// indexes; the oldest due task of each queue only seeks the claim index; a
/// task's key and children read theirs.
#[tokio::test]
async fn dashboard_reads_walk_in_order_or_seek_through_their_filters() {
    let (fresh, _client) = populated().await;
    let ordered = "cairnq_ext_tasks_created_idx";
    let walks = [&[][..], &["status"], &["queue", "status"], &["name", "after"], &["root_id"], &["correlation_id"]];
    // A created range bounds the walk (a range of the same index).
    for flags in walks.into_iter().chain([&["created"][..], &["status", "created", "after"]]) {
        let lines = check(&fresh.path, &sqlite::LIST_TASKS_IN_ORDER, flags, &[ordered]);
        assert_no_sort(&lines, "a list in order");
    }
    let cases = [
        ("status", "cairnq_tasks_status_completed_idx"),
        ("name", "cairnq_tasks_name_idx"),
        ("root_id", "cairnq_tasks_root_idx"),
        ("correlation_id", "cairnq_tasks_correlation_idx"),
    ];
    for (flag, index) in cases {
        let lines = check(&fresh.path, &sqlite::LIST_TASKS, &[flag, "after"], &[index]);
        assert!(!lines.iter().any(|l| uses(l, ordered)), "{flag} with a cursor: {lines:?}");
        let counted = check(&fresh.path, &sqlite::COUNT_TASKS, &[flag, "after", "created"], &[index]);
        assert!(!counted.iter().any(|l| uses(l, ordered)), "count by {flag}: {counted:?}");
    }
    for flags in [&["all_queues"][..], &["queue"]] {
        let lines = plan(&fresh.path, &sqlite::OLDEST_DUE_BY_QUEUE, flags);
        let reads: Vec<&String> = lines.iter().filter(|l| l.contains("SEARCH") || l.contains("SCAN c")).collect();
        assert!(!reads.is_empty() && reads.iter().all(|l| uses(l, "cairnq_tasks_claim_idx")), "{lines:?}");
    }
    check(&fresh.path, &sqlite::SELECT_TASK_KEY, &[], &["cairnq_ext_task_keys_task_idx"]);
    check(&fresh.path, &sqlite::LIST_CHILDREN, &[], &["cairnq_tasks_root_idx"]);
}

/// The limit-aware claim walks the queued index of ext_0007 group by
/// group (every step a seek, never a scan of a group's rows), reads one
/// group's due rows as a range of it in order (several groups', a range
/// each), and counts running rows without reading queued ones: so a key
/// holding a huge throttled backlog costs a seek, not a walk over its rows.
#[tokio::test]
async fn the_limit_walk_seeks_through_the_queued_index() {
    let (fresh, _client) = populated().await;
    let groups = check(&fresh.path, &sqlite::SELECT_LIMIT_GROUPS, &[], &["cairnq_ext_tasks_limit_queued_idx"]);
    for line in groups.iter().filter(|l| l.contains("cairnq_tasks")) {
        assert!(line.starts_with("SEARCH cairnq_tasks USING") && line.contains("INDEX"), "not a seek: {groups:?}");
    }
    for flags in [&[][..], &["one_name"], &["many_names"]] {
        let rows = check(&fresh.path, &sqlite::SELECT_LIMIT_GROUP_ROWS, flags, &["cairnq_ext_tasks_limit_queued_idx"]);
        assert_no_sort(&rows, "a group's rows");
    }
    // Several groups' rows claimed at once (the Postgres way, which SQLite
    // could take too): per group, a range of the queued index by key, and
    // the rows found by id; what is sorted (each group trimmed to its
    // limit, then the turns) is only the rows read.
    for flags in [&[][..], &["one_name"], &["many_names"]] {
        let rows = check(&fresh.path, &sqlite::CLAIM_LIMIT_GROUPS, flags, &["cairnq_ext_tasks_limit_queued_idx"]);
        let range =
            "SEARCH cairnq_tasks USING INDEX cairnq_ext_tasks_limit_queued_idx (queue=? AND priority=? AND <expr>=?";
        assert!(rows.iter().any(|l| l.starts_with(range)), "{flags:?}: {rows:?}");
        assert!(
            rows.iter().any(|l| l.starts_with("SEARCH t USING INDEX sqlite_autoindex_cairnq_tasks_1 (id=?)")),
            "{rows:?}"
        );
        assert!(!rows.iter().any(|l| l.starts_with("SCAN t")), "{flags:?}: {rows:?}");
    }
    check(&fresh.path, &sqlite::COUNT_RUNNING_OF_KEYS, &[], &["cairnq_ext_tasks_running_key_idx"]);
    let every_key = plan(&fresh.path, &sqlite::COUNT_RUNNING_BY_LIMIT_KEY, &[]);
    assert!(!every_key.iter().any(|l| l == "SCAN cairnq_tasks"), "running rows by an index: {every_key:?}");
}
