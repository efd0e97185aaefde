//! Fan-out from a handler (`TaskContext::fan_out`): a thousand children and
//! one join written with the handler's success in one transaction, the
//! join running once after the last child and reading every result, and a
//! fan-out of an attempt that lost its lease (or whose task a cancel won)
//! writing nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{Error, ListFilter, SubmitOptions, TaskDef, TaskSpec, TaskStatus};
use cairnq_worker::{TaskContext, TaskError};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::support::{finished, fresh, list_all, quick_options, session, start};
use crate::BackendFactory;

const SPLIT: TaskDef<u32, ()> = TaskDef::new("fan_split");
const CHUNK: TaskDef<u32, u64> = TaskDef::new("fan_chunk");
const MERGE: TaskDef<(), Value> = TaskDef::new("fan_merge");

/// One handler fans out 1,000 children and a join: every child and the
/// join are the handler's children (parent, root, correlation), the join
/// runs once, after every child ended, and sees 1,000 succeeded rows with
/// their results, in the order the fan-out gave them.
pub async fn a_fan_out_of_a_thousand_children_joins_once(factory: &dyn BackendFactory) {
    const N: u32 = 1_000;
    let (client, _fresh) = fresh(factory).await;
    let children_done = Arc::new(AtomicU32::new(0));
    let joins = Arc::new(AtomicU32::new(0));
    let (done, seen_joins) = (children_done.clone(), joins.clone());
    let _worker = start(&client, quick_options().concurrency(16), move |w| {
        w.task(SPLIT, |ctx: TaskContext, n: u32| async move {
            let chunks = (0..n).map(|i| CHUNK.spec(&i, SubmitOptions::new()));
            let written = ctx.fan_out(chunks, MERGE.spec(&(), SubmitOptions::new())).result(&"split").await?;
            let written = written.expect("the fan-out settled the task");
            assert_eq!(written.children.len(), n as usize);
            // Settled already: the return value is ignored.
            Ok::<_, TaskError>(())
        })
        .expect("register split");
        w.task(CHUNK, move |_ctx: TaskContext, i: u32| {
            let done = done.clone();
            async move {
                done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, TaskError>(u64::from(i) * 2)
            }
        })
        .expect("register chunk");
        w.task(MERGE, move |ctx: TaskContext, _: ()| {
            let (done, joins) = (children_done.clone(), seen_joins.clone());
            async move {
                joins.fetch_add(1, Ordering::SeqCst);
                let children_ended = done.load(Ordering::SeqCst);
                let rows = ctx.dependencies().await?;
                let succeeded = rows.iter().filter(|t| t.status == TaskStatus::Succeeded).count();
                let results = ctx.dependency_results(CHUNK).await?;
                let ordered = results.iter().enumerate().all(|(i, r)| *r == i as u64 * 2);
                Ok::<_, TaskError>(json!({
                    "children_ended": children_ended, "rows": rows.len(), "succeeded": succeeded,
                    "sum": results.iter().sum::<u64>(), "ordered": ordered,
                }))
            }
        })
        .expect("register merge");
    });
    let split = SPLIT.submit(&client, &N).correlation_id("corr-fan").await.expect("submit split");
    let settled = finished(&client, &split.id).await;
    assert_eq!(settled.status, TaskStatus::Succeeded, "{:?}", settled.error);
    assert_eq!(settled.result.map(|r| r.decode::<String>().expect("text")), Some("split".to_string()));

    let merges = list_all(&client, ListFilter::new().name(MERGE.name())).await;
    assert_eq!(merges.len(), 1, "one join");
    let merge = finished(&client, &merges[0].id).await;
    assert_eq!(merge.status, TaskStatus::Succeeded, "{:?}", merge.error);
    let expected_sum: u64 = (0..u64::from(N)).map(|i| i * 2).sum();
    assert_eq!(
        MERGE.result_of(merge.clone()).expect("merge result"),
        json!({"children_ended": N, "rows": N, "succeeded": N, "sum": expected_sum, "ordered": true}),
        "the join ran after the last child and saw every result"
    );
    let chunks = list_all(&client, ListFilter::new().name(CHUNK.name())).await;
    assert_eq!(chunks.len(), N as usize);
    for task in chunks.iter().chain([&merge]) {
        assert_eq!(task.parent_id.as_deref(), Some(split.id.as_str()), "{} is the handler's child", task.id);
        assert_eq!(task.root_id.as_deref(), Some(split.id.as_str()));
        assert_eq!(task.correlation_id.as_deref(), Some("corr-fan"));
    }
    // Give a second run of the join (there must be none) time to show.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(joins.load(Ordering::SeqCst), 1, "the join ran once");
}

/// A fan-out whose lease is gone is refused with `LostLease` and writes
/// nothing, whether the worker knows it lost the lease (an attempt
/// abandoned at `max_run`) or only the store does (a session whose lease
/// ran out); a fan-out of a task whose cancel is pending ends it canceled
/// and writes no child and no join.
pub async fn a_fan_out_of_a_lost_lease_writes_nothing(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let specs = || (0..3).map(|i| TaskSpec::new("fan_lost_child", &i)).collect::<Vec<_>>();
    let join = || TaskSpec::new("fan_lost_join", &());
    let no_children = |client: cairnq_core::CairnQ| async move {
        for name in ["fan_lost_child", "fan_lost_join"] {
            let rows = list_all(&client, ListFilter::new().name(name)).await;
            assert!(rows.is_empty(), "nothing of the fan-out was written: {rows:?}");
        }
    };

    // The store's check: the session's lease ran out.
    let task = client.submit("fan_lost", &json!({})).max_attempts(5).await.expect("submit");
    let short = session(&client, "w-short", Duration::from_millis(150));
    let draw = || vec![ClaimDraw::new(vec!["default".into()]).limit(1)];
    let claimed = short.claim(draw(), vec![]).await.expect("claim");
    assert_eq!(claimed.len(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = short.complete_with_fan_out(&claimed[0], json!(1), &specs(), &join()).await;
    assert!(matches!(&refused, Err(Error::LostLease { task_id, .. }) if *task_id == task.id), "{refused:?}");
    no_children(client.clone()).await;
    assert_eq!(client.get(&task.id).await.expect("get").expect("row").status, TaskStatus::Running);

    // A pending cancel wins: canceled, and nothing else written.
    let held = session(&client, "w-held", Duration::from_secs(30));
    let claimed = held.claim(draw(), vec![]).await.expect("reclaim after the lease ran out");
    assert_eq!(claimed.first().map(|t| t.id.as_str()), Some(task.id.as_str()));
    client.cancel(&task.id).await.expect("cancel requested");
    let written = held.complete_with_fan_out(&claimed[0], json!(1), &specs(), &join()).await.expect("fan-out");
    assert_eq!((written.task.status, written.children.len(), written.join.is_none()), (TaskStatus::Canceled, 0, true));
    no_children(client.clone()).await;

    // The worker's check: an attempt abandoned at max_run.
    let (contexts, mut started) = mpsc::unbounded_channel();
    let _worker = start(&client, quick_options().max_run(Duration::from_millis(300)), move |w| {
        w.task("fan_hang", move |ctx: TaskContext, _: Value| {
            let _ = contexts.send(ctx);
            std::future::pending::<Result<(), TaskError>>()
        })
        .expect("register");
    });
    let hung = client.submit("fan_hang", &json!({})).max_attempts(1).await.expect("submit");
    let ctx = tokio::time::timeout(Duration::from_secs(30), started.recv()).await.expect("started").expect("a ctx");
    assert_eq!(finished(&client, &hung.id).await.status, TaskStatus::Failed, "abandoned at max_run");
    let refused = ctx.fan_out(specs(), join()).await;
    assert!(matches!(&refused, Err(Error::LostLease { .. })), "{refused:?}");
    no_children(client.clone()).await;
}
