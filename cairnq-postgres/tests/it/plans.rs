//! The plan of every specialized statement on Postgres, as SQLite's
//! `plans.rs` checks it there: each filter reaches its index, the worker's
//! hot statements find rows by primary key or through the lease and claim
//! indexes, and nothing scans the task table where an index exists.
//!
//! Plans are the generic plans a pooled connection ends up running
//! (`plan_cache_mode = force_generic_plan`), over a populated, analyzed
//! table, with sequential scans priced out (`enable_seqscan = off`): at test
//! size a scan of the whole table is as cheap as any index, so only that
//! setting shows whether an index CAN serve each statement. (Whether the
//! planner picks it at a million rows is measured by `cargo xtask bench
//! --scale`.)

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, Store, SubmitOptions, TaskSpec};
use cairnq_postgres::PostgresStore;
use cairnq_protocol::postgres;
use cairnq_sql::Sql;

use crate::support::{dsn, fresh_client, raw};

/// Either claim index serves a claim or probe.
const CLAIM_INDEXES: &[&str] = &["cairnq_tasks_claim_idx", "cairnq_tasks_claim_name_idx"];

/// What may read the queued rows of some queues: a claim index, or the
/// queued rows by status (few, wherever the history is long); which one is
/// the planner's call at a given size.
const QUEUED_INDEXES: &[&str] =
    &["cairnq_tasks_claim_idx", "cairnq_tasks_claim_name_idx", "cairnq_tasks_status_completed_idx"];

/// What may read terminal rows by completion time.
const COMPLETED_INDEXES: &[&str] = &["cairnq_tasks_completed_idx", "cairnq_tasks_status_completed_idx"];

/// A schema holding 6,000 tasks over three queues, five names and 2,000
/// correlations (three tasks each, as real correlation ids are nearly
/// unique: with few, many-row values the generic plan may rightly walk the
/// list-order index instead), some succeeded and some running, analyzed;
/// and a raw session on it.
async fn populated() -> (tokio_postgres::Client, String) {
    let (client, store, schema) = fresh_client().await;
    fill(&client, &store).await;
    let session = raw(&dsn()).await;
    session.batch_execute(&format!("set search_path = {schema}; analyze cairnq_tasks")).await.expect("analyze");
    (session, schema)
}

async fn fill(client: &CairnQ, store: &PostgresStore) {
    let specs: Vec<TaskSpec> = (0..6_000)
        .map(|n| {
            let options = SubmitOptions::new()
                .queue(format!("q{}", n % 3))
                .correlation_id(format!("c{}", n % 2_000))
                .priority(n % 4);
            TaskSpec::new(format!("job{}", n % 5), &serde_json::json!({ "n": n })).options(options)
        })
        .collect();
    client.submit_many(&specs).await.expect("submit");
    let claim = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["q0".into()]).limit(1_000));
    for task in store.claim(&claim).await.expect("claim") {
        store.complete(&SettleParams::new(&task.id, "w").result(serde_json::json!(1))).await.expect("complete");
    }
    let running = ClaimParams::new("w", 60_000).draw(ClaimDraw::new(vec!["q1".into(), "q2".into()]).limit(200));
    store.claim(&running).await.expect("claim");
}

/// The plan lines of `sql` rendered with `flags`, as a generic plan.
async fn plan(session: &tokio_postgres::Client, sql: Sql, flags: &[&str]) -> Vec<String> {
    let rendering = postgres::statement(sql).rendering(flags).expect("known flags");
    let prepared = session.prepare(rendering.sql).await.expect("prepare");
    let nulls = vec!["null"; prepared.params().len()].join(", ");
    let setup = format!(
        "set plan_cache_mode = force_generic_plan; set enable_seqscan = off; deallocate all; prepare planned as {}",
        rendering.sql
    );
    session.batch_execute(&setup).await.expect("prepare the statement");
    let explain = if prepared.params().is_empty() {
        "explain execute planned".to_string()
    } else {
        format!("explain execute planned({nulls})")
    };
    let rows = session.query(&explain, &[]).await.expect("explain");
    rows.iter().map(|row| row.get::<_, String>(0)).collect()
}

/// Asserts the plan reads the task table through one of `indexes` and
/// never scans it row by row; returns the plan.
async fn check(session: &tokio_postgres::Client, sql: Sql, flags: &[&str], indexes: &[&str]) -> Vec<String> {
    let lines = plan(session, sql, flags).await;
    let shown = format!("{} {flags:?}:\n  {}", sql.name(), lines.join("\n  "));
    let reached = lines.iter().any(|l| indexes.iter().any(|index| l.contains(&format!(" {index} "))));
    assert!(reached, "expected one of {indexes:?}; {shown}");
    assert!(!lines.iter().any(|l| l.contains("Seq Scan on cairnq_tasks")), "full table scan; {shown}");
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_reach_the_index_of_each_filter() {
    let (session, _schema) = populated().await;
    let cases = [
        ("status", "cairnq_tasks_status_completed_idx"),
        ("queue", "cairnq_tasks_claim_idx"),
        ("name", "cairnq_tasks_name_idx"),
        ("root_id", "cairnq_tasks_root_idx"),
        ("correlation_id", "cairnq_tasks_correlation_idx"),
    ];
    for (flag, index) in cases {
        // Either claim index leads with the queue. Where a filter has few
        // values (status, queue, name in this data), the generic plan may
        // rather walk the list-order index (ext_0003) backwards and filter:
        // the better plan for a common value (no sort of most of the
        // table), the worse for a rare one. Either way an index, never a
        // scan of the table.
        let ordered = "cairnq_ext_tasks_created_idx";
        let mut allowed: Vec<&str> = if flag == "queue" { CLAIM_INDEXES.to_vec() } else { vec![index] };
        if matches!(flag, "status" | "queue" | "name") {
            allowed.push(ordered);
        }
        let indexes: &[&str] = &allowed;
        check(&session, Sql::ListTasks, &[flag], indexes).await;
    }
    check(&session, Sql::SelectTask, &["by_id"], &["cairnq_tasks_pkey"]).await;
    check(&session, Sql::CountQueued, &[], QUEUED_INDEXES).await;
    check(&session, Sql::CountTasksByQueueStatus, &["queue"], CLAIM_INDEXES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purges_reach_the_completion_indexes() {
    let (session, _schema) = populated().await;
    // A purge's preview (list_purgeable) reads the rows the purge deletes,
    // the same way.
    for sql in [Sql::PurgeTasks, Sql::ListPurgeable] {
        check(&session, sql, &["status"], COMPLETED_INDEXES).await;
        let by_queue = &["cairnq_tasks_queue_completed_idx", "cairnq_tasks_completed_idx"];
        check(&session, sql, &["any_status", "queue"], by_queue).await;
        check(&session, sql, &["any_status"], COMPLETED_INDEXES).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_probes_and_lease_recovery_read_their_indexes() {
    let (session, _schema) = populated().await;
    // One queue: a claim index hands the rows over in claim order, so the
    // draw stops after `limit` rows instead of sorting every due row.
    for flags in [&["one_queue"][..], &["one_queue", "one_name"]] {
        let claim = check(&session, Sql::ClaimDueTasks, flags, CLAIM_INDEXES).await;
        assert!(!claim.iter().any(|l| l.trim_start().starts_with("->  Sort")), "{flags:?} sorts: {claim:?}");
    }
    for flags in [&["one_queue"][..], &["one_queue", "one_name"], &["many_queues"], &["many_queues", "many_names"]] {
        check(&session, Sql::ClaimDueTasks, flags, QUEUED_INDEXES).await;
        let probe = check(&session, Sql::ProbeClaimable, flags, QUEUED_INDEXES).await;
        assert!(probe.iter().any(|l| l.contains("cairnq_tasks_lease_idx")), "{probe:?}");
    }
    for recover in [Sql::RecoverCanceledLeases, Sql::RecoverRequeuedLeases, Sql::RecoverFailedLeases] {
        check(&session, recover, &[], &["cairnq_tasks_lease_idx"]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settles_and_heartbeats_find_rows_by_primary_key() {
    let (session, _schema) = populated().await;
    let by_ids = [
        Sql::HeartbeatTask,
        Sql::HeartbeatTasks,
        Sql::UpdateProgress,
        Sql::SucceedTask,
        Sql::CompleteTask,
        Sql::CompleteTasks,
        Sql::FailTask,
        Sql::FailUndecodableTask,
    ];
    for by_id in by_ids {
        let lines = check(&session, by_id, &[], &["cairnq_tasks_pkey"]).await;
        let stray = ["cairnq_tasks_status_completed_idx", "cairnq_tasks_lease_idx"];
        assert!(!lines.iter().any(|l| stray.iter().any(|s| l.contains(s))), "{}: {lines:?}", by_id.name());
    }
    // A worker heartbeats and completes the same rows at once: both lock
    // them in id order, so the two cannot deadlock. The rows are locked as
    // they leave a sort by id, or, as here, the primary key's range scan
    // (in id order already); never as a bitmap scan reads them (heap order).
    for batch in [Sql::HeartbeatTasks, Sql::CompleteTasks] {
        let lines = plan(&session, batch, &[]).await;
        let lock = lines.iter().position(|l| l.contains("LockRows")).expect("the rows are locked first");
        let feed = lines[lock + 1..].iter().find(|l| l.contains("->  ") && !l.contains("CTE Scan on clock"));
        let in_id_order = feed.is_some_and(|l| {
            l.contains("->  Sort") || l.contains("->  Index Scan using cairnq_tasks_pkey on cairnq_tasks ")
        });
        assert!(in_id_order, "{}: {lines:?}", batch.name());
    }
}

/// The dashboard's reads, as on SQLite: a list in order walks the
/// list-order index with no sort, whatever its filters (written so no
/// other index serves them); a list through its filters reads their index
/// even with a cursor; the bounded count reads the filters' indexes; the
/// oldest due task of each queue is a few reads of the claim index; a
/// task's key and children read theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_reads_walk_in_order_or_seek_through_their_filters() {
    let (session, _schema) = populated().await;
    let ordered = "cairnq_ext_tasks_created_idx";
    let walks = [&[][..], &["status"], &["queue", "status"], &["name", "after"], &["root_id"], &["correlation_id"]];
    // A created range bounds the walk (a range of the same index).
    for flags in walks.into_iter().chain([&["created"][..], &["status", "created", "after"]]) {
        let lines = check(&session, Sql::ListTasksInOrder, flags, &[ordered]).await;
        assert!(!lines.iter().any(|l| l.trim_start().starts_with("->  Sort")), "{flags:?} sorts: {lines:?}");
    }
    let cases = [
        ("status", "cairnq_tasks_status_completed_idx"),
        ("name", "cairnq_tasks_name_idx"),
        ("root_id", "cairnq_tasks_root_idx"),
        ("correlation_id", "cairnq_tasks_correlation_idx"),
    ];
    for (flag, index) in cases {
        let lines = check(&session, Sql::ListTasks, &[flag, "after"], &[index]).await;
        assert!(!lines.iter().any(|l| l.contains(ordered)), "{flag} with a cursor: {lines:?}");
        check(&session, Sql::CountTasks, &[flag, "after", "created"], &[index]).await;
    }
    for flags in [&["all_queues"][..], &["queue"]] {
        let lines = check(&session, Sql::OldestDueByQueue, flags, CLAIM_INDEXES).await;
        // A bitmap heap scan (the rows up to a level's bound) names no
        // index; the bitmap index scan under it does, and is checked.
        let mut reads = lines.iter().filter(|l| l.contains(" on cairnq_tasks") && !l.contains("Bitmap Heap Scan"));
        assert!(reads.all(|l| CLAIM_INDEXES.iter().any(|index| l.contains(index))), "{lines:?}");
    }
    check(&session, Sql::SelectTaskKey, &[], &["cairnq_ext_task_keys_task_idx"]).await;
    check(&session, Sql::ListChildren, &[], &["cairnq_tasks_root_idx"]).await;
}

/// The limit-aware claim's walk seeks through the queued index of ext_0007
/// (a key holding a huge throttled backlog costs a step, never a walk over
/// its rows), and reads one group's due rows as a range of it (backwards:
/// ext_0013 keeps each group newest first); the shared claim never reads
/// that index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_walk_seeks_through_the_queued_index() {
    let (session, _schema) = populated().await;
    let queued = "cairnq_ext_tasks_limit_queued_idx";
    // The walk's steps are subplans of its recursive term, which only a
    // plan that ran shows: explained as run, with values.
    let groups = postgres::statement(Sql::SelectLimitGroups).base().sql;
    let prepare = format!("set enable_seqscan = off; deallocate all; prepare walk as {groups}");
    session.batch_execute(&prepare).await.expect("prepare the walk");
    let explain = "explain (analyze, costs off, timing off) execute walk(2147483648, '', 'q0', 10)";
    let rows = session.query(explain, &[]).await.expect("explain");
    let walk: Vec<String> = rows.iter().map(|row| row.get::<_, String>(0)).collect();
    let seeks = walk.iter().filter(|l| l.contains(" on cairnq_tasks")).collect::<Vec<_>>();
    assert!(!seeks.is_empty(), "{walk:?}");
    // Every step a seek in the queued index (the claimed rows' entries at
    // its groups' old ends, ext_0013, are never where a step lands; another
    // index's queued range starts with them), and only the walk's own
    // output sorted, never what a step reads.
    assert!(seeks.iter().all(|l| l.contains("Index Scan using") && l.contains(queued)), "{walk:?}");
    let sorts = walk.iter().filter(|l| l.contains("Sort Key")).collect::<Vec<_>>();
    assert!(sorts.iter().all(|l| l.trim() == "Sort Key: groups.n"), "{walk:?}");
    // A group's rows, and several groups' claimed at once: a range each,
    // sorted only once read (for their turns).
    for sql in [Sql::SelectLimitGroupRows, Sql::ClaimLimitGroups] {
        for flags in [&[][..], &["one_name"], &["many_names"]] {
            let rows = check(&session, sql, flags, &[queued]).await;
            let range = rows.iter().position(|l| l.contains(queued)).expect("the range");
            assert!(!rows[range..].iter().any(|l| l.contains("Sort")), "{flags:?} sorts a range: {rows:?}");
        }
    }
    // A claim counts each key's running rows by an index scan, which marks
    // the entries of rows that ran since dead (a bitmap scan never does).
    let count = check(&session, Sql::CountRunningOfKeys, &[], &["cairnq_ext_tasks_limit_running_idx"]).await;
    assert!(!count.iter().any(|l| l.contains("Bitmap")), "{count:?}");
    for flags in [&["one_queue"][..], &["many_queues", "many_names"]] {
        let claim = plan(&session, Sql::ClaimDueTasks, flags).await;
        assert!(!claim.iter().any(|l| l.contains(queued)), "{flags:?}: {claim:?}");
    }
}
