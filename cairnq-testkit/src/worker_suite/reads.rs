//! The bounded reads an operator's view (the dashboard) makes, checked
//! against the rows they read: counts of a filter's matches, a task's
//! children and key, each queue's oldest due task, and list pages, which a
//! store may read by more than one plan and must return the same rows
//! whichever it picks.

use std::collections::BTreeSet;
use std::time::Duration;

use cairnq_core::store::{ClaimDraw, CountTasksParams};
use cairnq_core::{CairnQ, Conflict, ListFilter, SubmitOptions, Task, TaskSpec, TaskStatus};
use cairnq_sql::LIST_SORT_AT_MOST;
use serde_json::json;

use super::support::{fresh, list_all, session};
use crate::BackendFactory;

/// A task's children are the rows naming it as parent (not its
/// grandchildren, not its siblings), newest first and bounded; its key is
/// the one pointing at it now (none once a replace moved the key on).
pub async fn a_task_knows_its_children_and_its_key(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let parent = client.submit("parent", &json!({})).key("reads-parent").await.expect("submit");
    let child = |n: u32, of: &str| {
        let options = SubmitOptions::new().parent_id(of).root_id(&parent.id);
        TaskSpec::new("child", &json!({ "n": n })).options(options)
    };
    let children = client.submit_many(&[child(1, &parent.id), child(2, &parent.id)]).await.expect("submit");
    client.submit_many(&[child(3, &children[0].id)]).await.expect("a grandchild");
    // A later millisecond: rows of one millisecond are ordered by their random ids.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let last = client.submit_many(&[child(4, &parent.id)]).await.expect("submit").remove(0);
    client.submit("unrelated", &json!({})).await.expect("submit");

    let found = client.children(&parent.id, 10).await.expect("children");
    let ids: Vec<&str> = found.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "the three children, not the grandchild: {ids:?}");
    assert_eq!(ids[0], last.id, "newest first");
    let expected: BTreeSet<&str> = [children[0].id.as_str(), children[1].id.as_str(), last.id.as_str()].into();
    assert_eq!(ids.iter().copied().collect::<BTreeSet<_>>(), expected);
    assert_eq!(client.children(&parent.id, 1).await.expect("children").tasks.len(), 1, "bounded");
    assert!(client.children(&children[1].id, 10).await.expect("children").tasks.is_empty());
    assert!(client.children("task_missing", 10).await.expect("children").tasks.is_empty());

    assert_eq!(client.task_key(&parent.id).await.expect("key").as_deref(), Some("reads-parent"));
    assert_eq!(client.task_key(&children[0].id).await.expect("key"), None, "an unkeyed task");
    client.cancel(&parent.id).await.expect("cancel");
    let replaced = SubmitOptions::new().key("reads-parent").conflict(Conflict::Replace);
    let successor = client.submit("parent", &json!({})).options(replaced).await.expect("submit");
    assert_eq!(client.task_key(&successor.id).await.expect("key").as_deref(), Some("reads-parent"));
    assert_eq!(client.task_key(&parent.id).await.expect("key"), None, "the key moved on");
}

/// A count agrees with the rows: each filter, the cursor, `since`, and the
/// bound (a count at the bound means "at least").
pub async fn counts_agree_with_the_rows_and_stop_at_their_bound(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let specs: Vec<TaskSpec> = (0..12)
        .map(|n| {
            let options = SubmitOptions::new().queue(if n % 3 == 0 { "c-a" } else { "c-b" }).correlation_id("corr");
            TaskSpec::new(if n % 2 == 0 { "even" } else { "odd" }, &json!({ "n": n })).options(options)
        })
        .collect();
    let tasks = client.submit_many(&specs).await.expect("submit");
    fail_one(&client, "c-a").await;
    let count = |filter: ListFilter, at_most: u64| {
        let client = client.clone();
        async move { client.count_tasks(&CountTasksParams::new(filter, at_most)).await.expect("count") }
    };
    assert_eq!(count(ListFilter::new(), 100).await, 12);
    assert_eq!(count(ListFilter::new(), 5).await, 5, "bounded");
    assert_eq!(count(ListFilter::new().queue("c-a"), 100).await, 4);
    assert_eq!(count(ListFilter::new().queue("c-a").status(TaskStatus::Failed), 100).await, 1);
    assert_eq!(count(ListFilter::new().status(TaskStatus::Queued).queue("c-b"), 100).await, 8);
    assert_eq!(count(ListFilter::new().name("even"), 100).await, 6);
    assert_eq!(count(ListFilter::new().correlation_id("corr").name("odd"), 100).await, 6);
    assert_eq!(count(ListFilter::new().root_id(&tasks[3].id), 100).await, 1);
    assert_eq!(count(ListFilter::new().status(TaskStatus::Canceled), 100).await, 0);
    let page = client.list(&ListFilter::new().limit(4)).await.expect("list");
    let after = page.next.expect("a full page has a cursor");
    assert_eq!(count(ListFilter::new().after(after.clone()), 100).await, 8, "the rows past the cursor");
    let since = CountTasksParams::new(ListFilter::new(), 100).since_ms(after.created_at_ms + 1);
    let newer = client.list(&ListFilter::new().limit(100)).await.expect("list");
    let expected = newer.tasks.iter().filter(|t| t.created_at_ms > after.created_at_ms).count() as u64;
    assert_eq!(client.count_tasks(&since).await.expect("count"), expected, "only rows created since");
    let bad = ListFilter::new().queue("nul\0");
    assert!(client.count_tasks(&CountTasksParams::new(bad, 1)).await.is_err(), "a NUL is refused");
}

/// A created range lists and counts exactly the rows created within it
/// (both ends included), alone or beside another filter, page by page.
pub async fn a_created_range_lists_and_counts_only_its_rows(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let mut batches = Vec::new();
    for batch in 0..3 {
        let specs: Vec<TaskSpec> = (0..4)
            .map(|n| TaskSpec::new(if n % 2 == 0 { "even" } else { "odd" }, &json!({ "batch": batch })))
            .collect();
        batches.push(client.submit_many(&specs).await.expect("submit"));
        // A later millisecond for the next batch, by the store's clock too.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at = |ms: i64| std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).expect("after 1970"));
    let ids = |tasks: &[&Vec<Task>]| tasks.iter().flat_map(|b| b.iter().map(|t| t.id.clone())).collect::<BTreeSet<_>>();
    let first = batches[1].iter().map(|t| t.created_at_ms).min().expect("rows");
    let last = batches[1].iter().map(|t| t.created_at_ms).max().expect("rows");
    let middle = ListFilter::new().created_since(at(first)).created_until(at(last));
    let listed = |filter: ListFilter| {
        let client = client.clone();
        async move { list_all(&client, filter).await.into_iter().map(|t| t.id).collect::<BTreeSet<_>>() }
    };
    assert_eq!(listed(middle.clone().limit(3)).await, ids(&[&batches[1]]), "the range, both ends included");
    assert_eq!(listed(ListFilter::new().created_since(at(first))).await, ids(&[&batches[1], &batches[2]]));
    assert_eq!(listed(ListFilter::new().created_until(at(last))).await, ids(&[&batches[0], &batches[1]]));
    let evens: BTreeSet<String> = batches[1].iter().filter(|t| t.name == "even").map(|t| t.id.clone()).collect();
    assert_eq!(listed(middle.clone().name("even")).await, evens, "beside another filter");
    let count = client.count_tasks(&CountTasksParams::new(middle.clone(), 100)).await.expect("count");
    assert_eq!(count, 4, "a count reads the same range");
    let backwards = ListFilter::new().created_since(at(last + 1)).created_until(at(first));
    assert!(client.list(&backwards).await.is_err(), "a range that ends before it starts is refused");
}

/// Claims one queued task of `queue` and fails it for good.
async fn fail_one(client: &CairnQ, queue: &str) {
    let reader = session(client, "reads", Duration::from_secs(60));
    let claimed = reader.claim(vec![ClaimDraw::new(vec![queue.into()]).limit(1)], vec![]).await.expect("claim");
    let task = claimed.first().expect("a task to fail");
    let envelope = cairnq_core::ErrorEnvelope::new(cairnq_core::codes::TASK_ERROR, "the attempt failed").to_json();
    reader.fail(&task.id, envelope, None).await.expect("fail");
}

/// Per queue, the oldest due queued task and its wait, whatever the priorities:
/// a queue whose only task is delayed reports none, a queue with nothing
/// queued none either.
pub async fn oldest_due_reads_each_queue_across_priorities(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let old = client.submit("old", &json!({})).queue("age-a").priority(-5).await.expect("submit");
    tokio::time::sleep(Duration::from_millis(60)).await;
    client.submit("new", &json!({})).queue("age-a").priority(9).await.expect("submit");
    client.submit("new", &json!({})).queue("age-b").await.expect("submit");
    client.submit("later", &json!({})).queue("age-c").delay(Duration::from_secs(3_600)).await.expect("submit");
    let ages = client.oldest_due(None).await.expect("oldest due");
    if ages.is_empty() {
        return eprintln!("skipped: {} stores report no queue age", factory.name());
    }
    let age = |queue: &str| ages.iter().find(|a| a.queue == queue).map(|a| a.age.as_millis());
    let (a, b) = (age("age-a").expect("age-a waits"), age("age-b").expect("age-b waits"));
    assert!(a >= 60 && a >= b + 50, "the low-priority task is the oldest: a {a} ms, b {b} ms");
    assert_eq!(age("age-c"), None, "a delayed task is not due: {ages:?}");
    let one = client.oldest_due(Some("age-a")).await.expect("oldest due");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].task_id, old.id, "the task that waited longest is named");
    assert!(one[0].age.as_millis() >= a, "asked alone, the same task a moment later");
}

/// Lists return the same rows in the same order whichever way the store
/// reads them: a filter at least [`LIST_SORT_AT_MOST`] rows match (a store
/// may walk its list order) and a rare one (it may sort the matches), by
/// status, queue and name, from the top and from a cursor.
pub async fn lists_read_the_same_rows_whatever_their_plan(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let common = LIST_SORT_AT_MOST as usize + 100;
    for chunk in 0..common.div_ceil(1_000) {
        let specs: Vec<TaskSpec> = (chunk * 1_000..((chunk + 1) * 1_000).min(common))
            .map(|n| {
                let (name, queue) = if n % 250 == 0 { ("rare", "plan-rare") } else { ("common", "plan") };
                TaskSpec::new(name, &json!({ "n": n })).options(SubmitOptions::new().queue(queue))
            })
            .collect();
        client.submit_many(&specs).await.expect("submit");
    }
    for _ in 0..3 {
        fail_one(&client, "plan").await;
    }
    for filter in [
        ListFilter::new().name("common"),
        ListFilter::new().name("rare"),
        ListFilter::new().queue("plan").status(TaskStatus::Queued),
        ListFilter::new().queue("plan-rare"),
        ListFilter::new().status(TaskStatus::Failed),
    ] {
        let expected = expected_rows(&client, &filter).await;
        let listed = listed_rows(&client, filter.clone().limit(700)).await;
        assert_eq!(listed.len(), expected.len(), "{filter:?}");
        assert!(listed == expected, "{filter:?}: the rows differ from the rows it matches");
    }
    let rare = common.div_ceil(250);
    assert_eq!(listed_rows(&client, ListFilter::new().name("rare").limit(7)).await.len(), rare, "small pages");
}

/// Every row `filter` matches, newest first, read as unfiltered pages and
/// filtered here: the truth a filtered list must agree with.
async fn expected_rows(client: &CairnQ, filter: &ListFilter) -> Vec<String> {
    let wanted = |t: &Task| {
        filter.status.is_none_or(|s| s == t.status)
            && filter.queue.as_deref().is_none_or(|q| q == t.queue)
            && filter.name.as_deref().is_none_or(|n| n == t.name)
    };
    let everything = list_all(client, ListFilter::new().limit(1_000)).await;
    everything.into_iter().filter(wanted).map(|t| t.id).collect()
}

/// Every id `filter` lists, page by page through cursors.
async fn listed_rows(client: &CairnQ, filter: ListFilter) -> Vec<String> {
    list_all(client, filter).await.into_iter().map(|t| t.id).collect()
}
